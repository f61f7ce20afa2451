// HeadAtlasView's module: the runtime's drawing, plus a click on the map that picks a head, and (in the book,
// with no kernel) the answer to a click or a menu change computed from the atlas's saved example patterns.
//
// A click on a point sends the same event as choosing that head in the menu: {id: the menu, value: the flat
// index layer · heads + head, which is the menu's option index}. Python (or `offline` below) answers it. The
// rules here are bertlab/inside/figures.py's atlas_head_figure and atlas_map_figure: the same title, sizes and
// numbers (a browser test holds them equal).

export { drawFigure, renderView };

function floats(spec) {
  const b = spec.bdata;
  if (b instanceof ArrayBuffer) return new Float32Array(b);
  if (ArrayBuffer.isView(b)) return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
  const bin = atob(b);                                   // plotly's own base64 form
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Float32Array(bytes.buffer);
}

function sendPick(model, d, index) {
  const n = Date.now() * 1000 + Math.floor(Math.random() * 1000);
  model.set("event", { id: d.controls.head, value: index, n });
  model.save_changes();
}

// hook plotly_click on the map pane each time plotly (re)initialises it
function hookClicks(model, el) {
  const d = model.get("data") || {};
  if (!d.panes) return;
  const root = el.getRootNode ? el.getRootNode() : document;
  const panes = (el.querySelectorAll ? el : root).querySelectorAll(`[data-id="${d.panes.map}"]`);
  panes.forEach((pane) => {
    if (typeof pane.on !== "function" || pane._blHooked === pane.on) return;
    pane._blHooked = pane.on;
    pane.on("plotly_click", (ev) => {
      const pt = ev && ev.points && ev.points[0];
      if (!pt) return;
      let index = typeof pt.customdata === "number" ? pt.customdata : NaN;
      if (Number.isNaN(index) && typeof pt.text === "string" && /^\d+\.\d+$/.test(pt.text)) {
        const [l, h] = pt.text.split(".").map(Number);
        index = l * d.shape[1] + h;
      }
      if (Number.isInteger(index)) sendPick(model, d, index);
    });
  });
}

export default {
  render(ctx) {
    const dispose = renderView(ctx);
    const hook = () => hookClicks(ctx.model, ctx.el);
    const watch = new MutationObserver(hook);
    watch.observe(ctx.el, { childList: true, subtree: true });
    ctx.model.on("change:content", hook);
    hook();
    return () => {
      watch.disconnect();
      ctx.model.off("change:content", hook);
      if (dispose) dispose();
    };
  },
};

// ---- the book, no kernel ------------------------------------------------------------------------------------

export function headPane(d, index, example, pane) {
  const [L, H] = d.shape;
  const ex = d.examples[example];
  const T = ex.labels.length;
  const att = floats(ex.attention);                      // (L, H, T, T)
  const base = index * T * T;
  const z = [];
  for (let i = 0; i < T; i++) z.push(Array.from(att.subarray(base + i * T, base + (i + 1) * T)));
  const layer = Math.floor(index / H), head = index % H;
  const fig = JSON.parse(JSON.stringify({ data: pane.figure.data.map((t) => ({ ...t, z: null })),
                                          layout: pane.figure.layout }));
  Object.assign(fig.data[0], { z, x: ex.labels.slice(), y: ex.labels.slice() });
  fig.layout.title = { ...(fig.layout.title || {}),
    text: `layer ${layer}, head ${head} (${d.labels[index]}) on sentence ${example + 1}` };
  fig.layout.height = Math.min(720, Math.max(380, 22 * T + 160));
  fig.layout.width = Math.min(760, Math.max(440, 22 * T + 220));
  return fig;
}

export function mapPane(d, index, pane) {
  const xy = floats(d.coords);
  const fig = { data: pane.figure.data.slice(), layout: pane.figure.layout };
  const last = fig.data.length - 1;
  fig.data[last] = { ...fig.data[last], x: [xy[2 * index]], y: [xy[2 * index + 1]] };
  return fig;
}

export function offline(state, ev) {
  const d = state.data || {};
  if (!d.controls || !d.examples) return null;
  const nodes = { ...state.nodes };
  const menu = { ...nodes[d.controls.head] }, ex = { ...nodes[d.controls.example] };
  const [L, H] = d.shape;
  if (ev.id === d.controls.head) {
    if (!Number.isInteger(ev.value) || ev.value < 0 || ev.value >= L * H) return null;
    menu.index = ev.value;
  } else if (ev.id === d.controls.example) {
    if (!Number.isInteger(ev.value) || ev.value < 0 || ev.value >= d.examples.length) return null;
    ex.index = ev.value;
  } else {
    return null;
  }
  nodes[d.controls.head] = menu;
  nodes[d.controls.example] = ex;
  nodes[d.panes.info] = { ...nodes[d.panes.info], value: d.infos[menu.index] };
  const content = { ...state.content };
  const att = content[d.panes.attention], map = content[d.panes.map];
  if (!att || !att.figure || !map || !map.figure) return null;
  content[d.panes.attention] = { ...att, rev: (att.rev || 0) + 1000, figure: headPane(d, menu.index, ex.index, att) };
  content[d.panes.map] = { ...map, rev: (map.rev || 0) + 1000, figure: mapPane(d, menu.index, map) };
  return { nodes, content };
}
