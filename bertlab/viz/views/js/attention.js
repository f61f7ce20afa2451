// AttentionExplorer's view: one head's (or a combination's) attention heatmap, its all-heads grid, the
// bertviz head view in a sandboxed frame, and the [MASK] guesses beside the heatmap.
//
// The heatmap's weights arrive as a binary float32 buffer (T × T) inside the figure; the grid's too. Python
// computes every number through bertlab.probe.attention_map; this module only draws. For the book and the
// in-page model (issue 29), `drawFigure(el, figure)` draws a figure a JS data source built, and `render` runs
// over any object with model's get / set / save_changes / on / off (js/page.js).

export { drawFigure, renderView };

export default {
  render(ctx) {
    // layer, head, combine, words, [CLS]/[SEP] and threshold are answered here from the attention buffer
    // Python sent with the text (`data`), the same function as in the book: no trip to the kernel
    return renderView(ctx, {}, { local: offline });
  },
};

// ---- the book, no kernel: recompute the heatmap from the saved attention ---------------------------------
// The same rules as bertlab.probe.attention_map (a browser test holds them equal): heads and layers combined by
// mean or sum; pieces merged into words (keys summed, queries averaged); [CLS]/[SEP]/[PAD] dropped without
// renormalising; weights below the threshold blanked. Returns the new {nodes, content}, or null for a change
// that needs the model (a new text, another model).

const SPECIAL = new Set(["[CLS]", "[SEP]", "[PAD]"]);

function describe(chosen, n, what) {
  if (chosen.length === 1) return `${what} ${chosen[0]}`;
  return chosen.length === n ? `all ${n} ${what}s` : `${what}s ${chosen.join(", ")}`;
}

function fmtG(x) {
  return String(+x.toPrecision(6));
}

export function attentionMap(att, shape, tokens, { layer, head, reduce, words, hideSpecial, threshold }) {
  const [L, H, T] = shape;
  const layers = layer === "all" ? [...Array(L).keys()] : [layer];
  const heads = head === "all" ? [...Array(H).keys()] : [head];
  let w = Array.from({ length: T }, () => new Float64Array(T));
  for (const l of layers) for (const h of heads) {
    const base = (l * H + h) * T * T;
    for (let i = 0; i < T; i++) for (let j = 0; j < T; j++) w[i][j] += att[base + i * T + j];
  }
  const count = layers.length * heads.length;
  if (reduce === "mean") for (const row of w) for (let j = 0; j < T; j++) row[j] /= count;
  let title = `${describe(layers, L, "layer")}, ${describe(heads, H, "head")}` + (count > 1 ? ` (${reduce})` : "");
  let toks = tokens.slice();
  if (words) {
    const groups = [];
    toks.forEach((t, i) => {
      if (t.startsWith("##") && groups.length && !SPECIAL.has(toks[groups[groups.length - 1].slice(-1)[0]])) groups[groups.length - 1].push(i);
      else groups.push([i]);
    });
    const merged = groups.map((gq) => groups.map((gk) => {
      let s = 0;
      for (const q of gq) for (const k of gk) s += w[q][k];
      return s / gq.length;
    }));
    toks = groups.map((g) => toks[g[0]] + g.slice(1).map((i) => toks[i].slice(2)).join(""));
    w = merged;
    title += ", per word";
  }
  if (hideSpecial) {
    const keep = toks.map((t, i) => (SPECIAL.has(t) ? -1 : i)).filter((i) => i >= 0);
    if (!keep.length) return null;
    toks = keep.map((i) => toks[i]);
    w = keep.map((i) => keep.map((j) => w[i][j]));
    title += ", [CLS]/[SEP] hidden";
  }
  if (threshold > 0) {
    w = w.map((row) => Array.from(row, (x) => (x >= threshold ? x : 0)));
    title += `, weights ≥ ${fmtG(threshold)}`;
  }
  return { tokens: toks, weights: w.map((row) => Array.from(row)), title };
}

const FLOATS = new WeakMap();              // a buffer → its float32 view, made once per text

function floats(buf) {
  const key = buf;
  let f = FLOATS.get(key);
  if (!f) {
    f = buf instanceof ArrayBuffer ? new Float32Array(buf) : buf.byteOffset % 4 === 0 ? new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4)
      : new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
    FLOATS.set(key, f);
  }
  return f;
}

export function offline(state, ev) {
  const d = state.data || {};
  if (!d.attentions || !d.controls) return null;
  const ids = d.controls;
  const name = Object.keys(ids).find((k) => ids[k] === ev.id);
  if (!name) return null;
  const nodes = { ...state.nodes };
  const spec = { ...nodes[ev.id] };
  if ("labels" in spec) spec.index = ev.value; else spec.value = spec.kind.endsWith("slider") ? +ev.value : ev.value;
  if (spec.kind === "intslider") spec.value = Math.max(spec.min, Math.min(spec.max, Math.round(spec.value)));
  nodes[ev.id] = spec;
  const get = (k) => nodes[ids[k]];
  const [layerMode, headMode, reduce] = d.combine[get("combine").index];
  const att = floats(d.attentions.bdata);
  const shape = d.attentions.shape.split(",").map(Number);
  const amap = attentionMap(att, shape, d.tokens, {
    layer: layerMode === "this" ? get("layer").value : "all", head: headMode === "this" ? get("head").value : "all",
    reduce, words: !!get("words").value, hideSpecial: !!get("hide_special").value, threshold: +get("threshold").value,
  });
  if (!amap) return null;
  nodes[ids.head] = { ...get("head"), disabled: layerMode !== "this" || headMode !== "this" };
  nodes[ids.layer] = { ...get("layer"), disabled: layerMode !== "this" };
  const content = { ...state.content };
  const pane = content[d.figure];
  if (!pane || !pane.figure) return null;
  const fig = JSON.parse(JSON.stringify({ data: pane.figure.data.map((t) => ({ ...t, z: null })), layout: pane.figure.layout }));
  const T = amap.tokens.length;
  const labels = amap.tokens.map((t, i) => `${t} (${i})`);
  let zmax = 0;
  for (const row of amap.weights) for (const x of row) zmax = Math.max(zmax, x);
  Object.assign(fig.data[0], { z: amap.weights, x: labels, y: labels, zmax });
  fig.layout.title = { ...(fig.layout.title || {}), text: `${amap.title}: where each token looks` };
  const step = Math.ceil(T / 64);                  // figures.sparse_ticks: at most 64 token labels an axis
  const ticks = step > 1 ? labels.filter((_, i) => i % step === 0) : null;
  fig.layout.xaxis = { ...(fig.layout.xaxis || {}), tickvals: ticks };
  fig.layout.yaxis = { ...(fig.layout.yaxis || {}), tickvals: ticks };
  fig.layout.width = Math.min(1000, Math.max(420, 28 * T + 160));
  fig.layout.height = Math.min(1000, Math.max(380, 24 * T + 140));
  content[d.figure] = { ...pane, rev: (pane.rev || 0) + 1000, figure: fig };
  return { nodes, content };
}
