// bertlab view runtime: what every view module shares. Concatenated in front of each view's own module
// (bertlab/viz/views/base.py: esm), so a view is one self-contained ES module: no import, no URL, no CDN.
//
// It draws the view's controls and panes from the model's state (`nodes`, `root`, `content`), sends a
// person's change back as one `event` ({id, value} or {id, click}), and draws figures with plotly.js, which
// it gets once per page (see getPlotly). It uses only model.get / set / save_changes / on / off, so a JS
// data source (the book's in-page model, page.js) can stand in for a kernel.

const PLOTLY_VERSION = "__PLOTLY_VERSION__";
const G = (globalThis.__bertlab = globalThis.__bertlab || {});
G.latencies = G.latencies || [];          // [{view, ms}] from a person's change to its figure drawn (bench)

// ---- plotly.js, once per page ------------------------------------------------------------------------

function plotlyReady() {
  if (G.Plotly) return G.Plotly;
  const P = globalThis.Plotly;
  if (P && P.version === PLOTLY_VERSION) return (G.Plotly = P);
  return null;
}

function evaluatePlotly(bytes) {
  // plotly.min.js is a UMD bundle that ends with `window.Plotly = Plotly`: run it as a script, keep the page's
  // own Plotly (if another version was there) where it was.
  const before = globalThis.Plotly;
  const code = new TextDecoder().decode(bytes);
  (0, eval)(code);
  const P = globalThis.Plotly;
  if (before && before !== P) globalThis.Plotly = before;
  return P;
}

function getPlotly(model) {
  const ready = plotlyReady();
  if (ready) return Promise.resolve(ready);
  if (!G.plotlyPromise) {
    G.plotlyPromise = new Promise((resolve) => { G.resolvePlotly = resolve; });
  }
  const take = () => {
    const dv = model.get("plotly_js");
    if (!dv || !dv.byteLength || G.Plotly) return false;
    const bytes = new Uint8Array(dv.buffer, dv.byteOffset, dv.byteLength);
    G.Plotly = evaluatePlotly(bytes);
    G.resolvePlotly(G.Plotly);
    return true;
  };
  const onBytes = () => {
    if (take() || G.Plotly) {
      model.off("change:plotly_js", onBytes);
      if (model.get("plotly_wanted")) { model.set("plotly_wanted", false); model.save_changes(); }
    }
  };
  if (!take()) {
    model.on("change:plotly_js", onBytes);
    // ask on this view unless another view on the page asked in the last few seconds
    const now = Date.now();
    if (!G.plotlyAsked || now - G.plotlyAsked > 4000) {
      G.plotlyAsked = now;
      model.set("plotly_wanted", true);
      model.save_changes();
    }
    setTimeout(() => { if (!G.Plotly) { G.plotlyAsked = 0; model.set("plotly_wanted", false); model.save_changes();
      model.set("plotly_wanted", true); model.save_changes(); } }, 5000);
  }
  return G.plotlyPromise;
}

// ---- figures ------------------------------------------------------------------------------------------

function toBuffer(b) {
  // a binary buffer arrives as a DataView (anywidget), an ArrayBuffer or a typed array; plotly.js wants an
  // ArrayBuffer of its own, aligned for its dtype
  if (b instanceof ArrayBuffer) return b;
  if (ArrayBuffer.isView(b)) return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  return b;
}

function unpack(obj) {
  if (Array.isArray(obj)) return obj.map(unpack);
  if (obj && typeof obj === "object" && !ArrayBuffer.isView(obj) && !(obj instanceof ArrayBuffer)) {
    if ("bdata" in obj && "dtype" in obj) return { dtype: obj.dtype, shape: obj.shape, bdata: toBuffer(obj.bdata) };
    const out = {};
    for (const k of Object.keys(obj)) out[k] = unpack(obj[k]);
    return out;
  }
  return obj;
}

const PLOT_CONFIG = { displaylogo: false, responsive: false, modeBarButtonsToRemove: ["sendDataToCloud"] };

// Draw a plotly figure ({data, layout}, typed arrays allowed) into `el`, with no model: the same drawing the
// views use, for a page or a JS data source that computed a figure itself.
async function drawFigure(el, figure, Plotly) {
  Plotly = Plotly || plotlyReady() || (await G.plotlyPromise);
  const fig = unpack(figure);
  await Plotly.react(el, fig.data || [], fig.layout || {}, { ...PLOT_CONFIG, ...(fig.config || {}) });
  return el;
}

// ---- controls -------------------------------------------------------------------------------------------

const STYLE_ID = "bertlab-view-style";
const CSS = `
.bl-view{font:13px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2933;max-width:100%}
.bl-row{display:flex;flex-flow:row wrap;align-items:center;gap:4px 10px;margin:2px 0}
.bl-col{display:flex;flex-direction:column;gap:4px}
.bl-ctl{display:inline-flex;align-items:center;gap:6px}
.bl-ctl>label.bl-desc{min-width:60px;text-align:right;color:#33475b}
.bl-ctl input[type=text],.bl-ctl textarea{flex:1;min-width:160px;padding:3px 6px;border:1px solid #bbb;border-radius:3px;font:inherit}
.bl-ctl.bl-wide{display:flex}
.bl-btn{padding:3px 10px;border:1px solid #bbb;border-radius:3px;background:#eee;cursor:pointer;font:inherit}
.bl-btn[aria-pressed=true]{background:#cfdcec;border-color:#4C78A8}
.bl-btn.primary,.bl-btn.info{background:#4C78A8;color:#fff;border-color:#4C78A8}
.bl-btn.success{background:#54A24B;color:#fff}.bl-btn.warning{background:#F2CF5B}
.bl-btn.danger{background:#E45756;color:#fff;border-color:#E45756}
.bl-btn:disabled{opacity:.5;cursor:default}
.bl-group{display:inline-flex;flex-wrap:wrap;gap:2px}
.bl-out{max-width:100%;overflow-x:auto}
.bl-out iframe{border:0;width:100%;min-height:420px}
`;

function ensureStyle(el) {
  // once per document, or once per shadow root (marimo draws each widget inside one, where the page's
  // styles do not reach)
  const node = el.getRootNode ? el.getRootNode() : document;
  const shadow = typeof ShadowRoot !== "undefined" && node instanceof ShadowRoot;
  const holder = shadow ? node : (el.ownerDocument || document).head;
  if (holder.querySelector("#" + STYLE_ID)) return;
  const s = document.createElement("style");
  s.id = STYLE_ID;
  s.textContent = CSS;
  holder.appendChild(s);
}

function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids) if (kid) e.appendChild(kid);
  return e;
}

function applyStyle(e, spec) {
  const style = spec.css || {};
  e.style.display = style.display === "none" ? "none" : "";
  for (const [k, v] of Object.entries(style)) if (k !== "display") e.style.setProperty(k, v);
}

function description(spec) {
  return spec.description ? h("label", { class: "bl-desc", text: spec.description }) : null;
}

function fmt(v, f) {
  if (typeof v !== "number") return String(v);
  const m = /\.(\d+)f/.exec(f || "");
  return m ? v.toFixed(+m[1]) : String(v);
}

// Each control kind: build(spec, send) → element with .update(spec). `send(value)` reports a person's change.
const CONTROLS = {
  text(spec, send, kind) {
    const input = kind === "textarea" ? h("textarea", { rows: spec.rows || 3 }) : h("input", { type: "text" });
    let timer = null;
    const fire = () => { clearTimeout(timer); timer = null; send(input.value); };
    input.addEventListener("input", () => {
      if (spec.continuous_update === false) return;
      clearTimeout(timer);
      timer = setTimeout(fire, 120);          // typing: one event per pause, not one per key
    });
    input.addEventListener("change", fire);
    input.addEventListener("keydown", (ev) => { if (ev.key === "Enter" && kind !== "textarea") fire(); });
    let lastSent = spec.value;
    const send0 = send;
    send = (v) => { if (v !== lastSent) { lastSent = v; send0(v); } };
    const e = h("span", { class: "bl-ctl bl-wide" }, description(spec), input);
    e.update = (s) => {
      spec = s;
      lastSent = s.value;
      if (input.value !== s.value && (document.activeElement !== input || timer === null)) input.value = s.value;
      input.placeholder = s.placeholder || "";
      input.disabled = !!s.disabled;
    };
    e.input = input;
    return e;
  },
  html(spec) {
    const e = h("div", { class: "bl-html" });
    e.update = (s) => { if (e._v !== s.value) { e.innerHTML = s.value || ""; e._v = s.value; } };
    return e;
  },
  label(spec) {
    const e = h("span", { class: "bl-label" });
    e.update = (s) => { e.textContent = s.value || ""; };
    return e;
  },
  button(spec, send) {
    const b = h("button", { class: "bl-btn", type: "button", onclick: () => send(null, true) });
    b.update = (s) => {
      b.textContent = s.description || "";
      b.className = "bl-btn " + (s.button_style || "");
      b.disabled = !!s.disabled;
      b.title = s.tooltip || "";
    };
    return b;
  },
  toggle(spec, send) {
    let value = spec.value;
    const b = h("button", { class: "bl-btn", type: "button", onclick: () => send(!value) });
    b.update = (s) => {
      value = s.value;
      b.textContent = s.description || "";
      b.className = "bl-btn " + (s.button_style || "");
      b.setAttribute("aria-pressed", String(!!s.value));
      b.disabled = !!s.disabled;
      b.title = s.tooltip || "";
    };
    return b;
  },
  checkbox(spec, send) {
    const box = h("input", { type: "checkbox", onchange: () => send(box.checked) });
    const lab = h("label", { class: "bl-ctl" }, box, h("span"));
    lab.update = (s) => { box.checked = !!s.value; box.disabled = !!s.disabled; lab.lastChild.textContent = s.description || ""; };
    lab.input = box;
    return lab;
  },
  dropdown(spec, send) {
    const sel = h("select", { onchange: () => send(+sel.value) });
    const e = h("span", { class: "bl-ctl" }, description(spec), sel);
    e.update = (s) => {
      const labels = s.labels.join("\u0000");
      if (e._labels !== labels) {
        sel.replaceChildren(...s.labels.map((l, i) => h("option", { value: String(i), text: l })));
        e._labels = labels;
      }
      sel.value = s.index === null ? "" : String(s.index);
      sel.disabled = !!s.disabled;
    };
    e.input = sel;
    return e;
  },
  togglebuttons(spec, send, kind) {
    const group = h("span", { class: "bl-group", role: kind === "radio" ? "radiogroup" : "group" });
    const e = h("span", { class: "bl-ctl" }, description(spec), group);
    e.update = (s) => {
      const labels = s.labels.join("\u0000");
      if (e._labels !== labels) {
        group.replaceChildren(...s.labels.map((l, i) =>
          h("button", { class: "bl-btn", type: "button", "data-index": String(i), text: l, onclick: () => send(i) })));
        e._labels = labels;
      }
      group.querySelectorAll("button").forEach((b, i) => {
        b.setAttribute("aria-pressed", String(i === s.index));
        b.disabled = !!s.disabled;
        if (s.tooltips && s.tooltips[i]) b.title = s.tooltips[i];
      });
    };
    return e;
  },
  intslider(spec, send) {
    const input = h("input", { type: "range" });
    const readout = h("span", { class: "bl-readout" });
    let frame = null;
    let sent = spec.value;
    const fire = () => { frame = null; if (+input.value !== sent) { sent = +input.value; send(sent); } };
    input.addEventListener("input", () => {
      readout.textContent = fmt(+input.value, spec.readout_format);
      if (spec.continuous_update === false) return;
      if (frame) cancelAnimationFrame(frame);
      frame = requestAnimationFrame(fire);      // dragging: at most one event a frame
    });
    input.addEventListener("change", () => { if (frame) cancelAnimationFrame(frame); fire(); });
    const e = h("span", { class: "bl-ctl" }, description(spec), input, readout);
    e.update = (s) => {
      spec = s;
      input.min = s.min; input.max = s.max; input.step = s.step || 1;
      if (+input.value !== s.value) input.value = s.value;
      sent = s.value;
      input.disabled = !!s.disabled;
      readout.textContent = fmt(s.value, s.readout_format);
    };
    e.input = input;
    return e;
  },
  selectionslider(spec, send) {
    const input = h("input", { type: "range", min: 0, step: 1 });
    const readout = h("span", { class: "bl-readout" });
    input.addEventListener("input", () => { readout.textContent = spec.labels[+input.value]; send(+input.value); });
    const e = h("span", { class: "bl-ctl" }, description(spec), input, readout);
    e.update = (s) => {
      spec = s;
      input.max = s.labels.length - 1;
      input.value = s.index ?? 0;
      input.disabled = !!s.disabled;
      readout.textContent = s.labels[s.index] ?? "";
    };
    e.input = input;
    return e;
  },
  inttext(spec, send) {
    const input = h("input", { type: "number", onchange: () => send(+input.value) });
    const e = h("span", { class: "bl-ctl" }, description(spec), input);
    e.update = (s) => { input.min = s.min; input.max = s.max; input.step = s.step || 1; input.value = s.value; input.disabled = !!s.disabled; };
    e.input = input;
    return e;
  },
};
// ▶ / ⏸: while playing, one step every `interval` ms, each sent as a person's change; the next step waits for
// Python's answer to the last (the view's `done`), so a slow figure slows the replay instead of queueing steps.
CONTROLS.play = function (spec, send, kind, model) {
  let timer = null;
  let value = spec.value;
  const b = h("button", { class: "bl-btn", type: "button", "aria-label": "play" });
  const stop = () => { clearInterval(timer); timer = null; b.textContent = "\u25B6"; b.setAttribute("aria-pressed", "false"); };
  const tick = () => {
    if (!b.isConnected) return stop();
    if (model && model.get("done") < b._sent) return;            // the last step is not drawn yet
    if (value >= spec.max) return stop();
    b._sent = Date.now() * 1000;
    send(value + 1);
  };
  b.addEventListener("click", () => {
    if (timer) return stop();
    if (value >= spec.max) send(spec.min);                       // at the end: start again from the first
    b._sent = 0;
    b.textContent = "\u23F8";
    b.setAttribute("aria-pressed", "true");
    timer = setInterval(tick, Math.max(50, spec.interval || 100));
  });
  const e = h("span", { class: "bl-ctl" }, description(spec), b);
  e.update = (s) => { spec = s; value = s.value; b.disabled = !!s.disabled; if (!timer) stop(); };
  e.button = b;
  return e;
};
CONTROLS.textarea = CONTROLS.text;
CONTROLS.radio = function (spec, send) {
  const group = h("div", { class: "bl-radio", role: "radiogroup" });
  const name = "bl-radio-" + Math.random().toString(36).slice(2);
  const e = h("div", { class: "bl-ctl" }, description(spec), group);
  e.update = (s) => {
    const labels = s.labels.join("\u0000");
    if (e._labels !== labels) {
      group.replaceChildren(...s.labels.map((l, i) => {
        const r = h("input", { type: "radio", name, value: String(i), onchange: () => send(i) });
        return h("label", { style: "display:block" }, r, document.createTextNode(" " + l));
      }));
      e._labels = labels;
    }
    group.querySelectorAll("input").forEach((r, i) => { r.checked = i === s.index; r.disabled = !!s.disabled; });
  };
  return e;
};
CONTROLS.floatslider = CONTROLS.intslider;

// ---- the panes' content: the last whole `content`, with the patches since --------------------------------
// Python sends the whole `content` when a change comes from Python (and in every saved state), and only the
// panes a person's change altered as `patch` ({n, panes: {id: {rev, ...} | {rev, gone}}}). The page keeps one
// store a view (by `uid`, shared by every place the view is shown) and merges by revision, so a patch seen
// twice, or a whole content older than a patch, changes nothing.

function newer(have, entry) {
  return !have || (entry && entry.rev > have.rev);
}

function paneStore(model) {
  const uid = String(model.get("uid") || "");
  const stores = (G.stores = G.stores instanceof Map ? G.stores : new Map());
  const st = (uid && stores.get(uid)) || { content: {}, full: undefined, patch: undefined };
  if (uid) stores.set(uid, st);
  return st;
}

function currentContent(model, st, trust) {
  const full = model.get("content") || {};
  if (full !== st.full) {
    // a whole content that arrived while the view is shown (`trust`) is the newest there is: it replaces
    // everything; one a new render of the view finds may be older than the patches merged since: by revision
    const next = {};
    if (trust || st.full === undefined) Object.assign(next, full);
    else {
      for (const [id, entry] of Object.entries(full)) next[id] = newer(st.content[id], entry) ? entry : st.content[id];
      for (const [id, entry] of Object.entries(st.content)) if (!(id in next) && entry.rev > maxRev(full)) next[id] = entry;
    }
    st.content = next;
    st.full = full;
  }
  const patch = model.get("patch");
  if (patch && patch !== st.patch) {
    for (const [id, entry] of Object.entries(patch.panes || {})) if (newer(st.content[id], entry)) st.content[id] = entry;
    st.patch = patch;
  }
  const shown = {};
  for (const [id, entry] of Object.entries(st.content)) if (entry && !entry.gone) shown[id] = entry;
  return shown;
}

function maxRev(content) {
  let m = 0;
  for (const entry of Object.values(content)) if (entry && entry.rev > m) m = entry.rev;
  return m;
}

// ---- the view ---------------------------------------------------------------------------------------------

// Render a view over `model` into `el`. `panes` (optional): pane kind → async draw(el, content, ctx), for a
// view module that draws something besides plotly figures and HTML. `opts.local` (optional): a function
// (state, event) → {nodes, content} | null that answers a person's change in the browser from what the view
// already has (the attention view: layer, head, combine, words, [CLS]/[SEP] and threshold from the attention
// buffer in `data`, the same function the book's page uses). Its answer is drawn at once; the change still
// goes to Python, which computes the same answer for Python's readers (`w.figure`), so nothing about reading
// a view from Python changes. Python's answer is not drawn over a newer local one (see `stale`).
function renderView({ model, el }, panes = {}, opts = {}) {
  ensureStyle(el);
  const root = h("div", { class: "bl-view" });
  // keys typed into a control are the control's, not a notebook's shortcuts (arrows, "a", "b", space...).
  // JupyterLab and Notebook 7 read keys on the document, in the capture phase in Notebook 7: a listener on
  // the window, which sees a key first, stops it there; the browser still types it into the control.
  root.setAttribute("data-lm-suppress-shortcuts", "true");
  if (!G.keyGuard) {
    G.keyGuard = (e) => {
      const t = e.target;
      if (t && t.closest && t.closest(".bl-view") && /^(INPUT|SELECT|TEXTAREA|BUTTON)$/.test(t.tagName)
          && e.key !== "Escape" && !(e.key === "Enter" && e.shiftKey)) e.stopPropagation();
    };
    window.addEventListener("keydown", G.keyGuard, true);
  }
  el.appendChild(root);
  const built = {};                          // id → element
  const drawnRev = {};                       // pane id → content rev drawn
  const pending = new Map();                 // event n → {t0: sent, recv: Python's answer arrived, local}
  let alive = true;
  const viewName = model.get("module") || "view";
  // the browser's own answers (opts.local): the state they were computed on, and how many changes that it
  // could not answer are still waiting for Python (then the data may be stale: no local answer until done)
  let shadow = null;
  let remoteBusy = 0;
  let lastSent = 0;
  const store = paneStore(model);

  const record = (n, drawnAt) => {
    // a person's change has its answer drawn: how long it took, and where (bench/widgets.py reads these)
    const p = pending.get(n);
    if (!p || p.logged) return;
    p.logged = true;
    const ms = drawnAt - p.t0;
    const recv = p.local ? 0 : (p.recv ?? ms) - p.t0;
    G.latencies.push({ view: viewName, ms, recv, draw: ms - recv, local: !!p.local, compute: p.compute || 0 });
  };

  const send = (id, value, click) => {
    const n = Date.now() * 1000 + Math.floor(Math.random() * 1000);
    const ev = click ? { id, click: true, n } : { id, value, n };
    const p = { t0: performance.now() };
    pending.set(n, p);
    lastSent = n;
    let answer = null, base = null;
    if (opts.local && G.local !== false && !click && remoteBusy === 0) {   // a page may turn them off
      try {
        base = shadow || { nodes: model.get("nodes"), content: currentContent(model, store, true), data: model.get("data") };
        answer = opts.local(base, ev);
        p.compute = performance.now() - p.t0;
        if (answer) shadow = { ...base, ...answer };
      } catch (err) { answer = null; console.error("bertlab view (local)", err); }
    }
    if (answer) {
      p.local = true;
      drawLocal(answer, n, base.nodes);
    } else {
      remoteBusy += 1;
      p.remote = true;
    }
    model.set("event", ev);
    model.save_changes();
  };

  function build(id) {
    const nodes = model.get("nodes");
    const spec = nodes[id];
    if (!spec) return h("span");
    let e;
    if (spec.kind === "row" || spec.kind === "col") {
      e = h("div", { class: spec.kind === "row" ? "bl-row" : "bl-col" });
      e.update = (s) => {
        // only a changed list of children is laid out again: moving a figure or a frame out of the page and
        // back costs a reflow (and reloads a frame) on every change otherwise
        const key = s.children.join(" ");
        if (e._children === key) return;
        e._children = key;
        e.replaceChildren(...s.children.map((c) => built[c] || build(c)));
      };
    } else if (spec.kind === "output") {
      e = h("div", { class: "bl-out" });
      e.update = () => {};
    } else {
      const make = CONTROLS[spec.kind];
      e = make ? make(spec, (v, click) => send(id, v, click), spec.kind, model) : h("span", { text: `(${spec.kind})` });
      if (!e.update) e.update = () => {};
    }
    e.dataset.id = id;
    e.dataset.kind = spec.kind;
    if (spec.description) e.dataset.description = spec.description;
    built[id] = e;
    e.update(spec);
    applyStyle(e, spec);
    return e;
  }

  function syncNodes() {
    const nodes = model.get("nodes");
    for (const [id, spec] of Object.entries(nodes)) {
      const e = built[id];
      if (e) { e.update(spec); applyStyle(e, spec); }
    }
    const rootId = model.get("root");
    const top = built[rootId] || build(rootId);
    if (root.firstChild !== top) root.replaceChildren(top);
  }

  async function drawPane(id, c) {
    const e = built[id];
    if (!e) return;
    if (!c) { if (e._plot && G.Plotly) G.Plotly.purge(e); e._plot = false; e.replaceChildren(); e.dataset.empty = "1"; return; }
    delete e.dataset.empty;
    if (c.figure) {
      const Plotly = await getPlotly(model);
      if (!alive) return;
      if (!e._plot) { e.replaceChildren(); e._plot = true; }
      await drawFigure(e, c.figure, Plotly);
    } else if (c.html !== undefined && c.html !== null) {
      if (e._plot && G.Plotly) G.Plotly.purge(e);
      e._plot = false;
      if (c.frame) {
        const f = h("iframe", { sandbox: "allow-scripts", title: c.plain || "view" });
        f.srcdoc = c.html;
        e.replaceChildren(f);
      } else {
        e.innerHTML = c.html;
      }
    } else if (c.kind && panes[c.kind]) {
      await panes[c.kind](e, c, { model, Plotly: await getPlotly(model) });
    }
    e.dataset.rev = String(c.rev);
  }

  let drawing = Promise.resolve();
  function drawLocal(answer, n, before) {
    // the browser's own answer: controls and panes drawn from it now, without waiting for the kernel
    for (const [id, spec] of Object.entries(answer.nodes || {})) {
      const e = built[id];
      if (e && spec !== (before || {})[id]) { e.update(spec); applyStyle(e, spec); }
    }
    const jobs = [];
    for (const [id, c] of Object.entries(answer.content || {})) {
      if (!built[id] || drawnRev[id] === (c ? c.rev : 0)) continue;
      drawnRev[id] = -1;                     // not Python's revision: Python's answer is drawn over it later
      jobs.push(drawPane(id, c));
    }
    drawing = drawing.then(() => Promise.all(jobs)).then(() => record(n, performance.now()))
      .catch((err) => { root.dataset.error = String(err); console.error("bertlab view", err); });
  }

  let shown = false;                         // false until the first draw: then `content` may be an old copy
  function syncContent() {
    const content = currentContent(model, store, shown);
    shown = true;
    const done = model.get("done");
    const p = pending.get(done);
    if (p && p.recv === undefined) p.recv = performance.now();
    // Python's answer to an older change, while the browser already drew a newer one of its own: keep the
    // newer one on screen (Python's catches up with the last change, and that one is drawn)
    const stale = done !== lastSent && pending.has(lastSent) && pending.get(lastSent).local;
    // Python's answer to the change the browser answered last: the same figure (the same rules, a browser
    // test holds them equal), already on screen, so it is not drawn twice; an emptied pane (an error) is
    const same = done === lastSent && p && p.local;
    const jobs = [];
    for (const id of Object.keys(built)) {
      if (built[id].dataset.kind !== "output") continue;
      const c = content[id];
      const rev = c ? c.rev : 0;
      if (drawnRev[id] === rev || (stale && drawnRev[id] === -1)) continue;
      if (same && drawnRev[id] === -1 && c && c.figure) {
        drawnRev[id] = rev;
        built[id].dataset.rev = String(rev);
        continue;
      }
      drawnRev[id] = rev;
      jobs.push(drawPane(id, c));
    }
    drawing = drawing.then(() => Promise.all(jobs)).then(() => {
      if (pending.has(done)) {
        record(done, performance.now());
        for (const [n, q] of pending) {
          if (n > done) continue;
          if (q.remote) remoteBusy = Math.max(0, remoteBusy - 1);
          pending.delete(n);
        }
      }
      if (done === lastSent) shadow = null;  // Python has caught up: its state is the browser's again
      root.dataset.done = String(done);
      root.dataset.drawn = String((+root.dataset.drawn || 0) + 1);
    }).catch((err) => { root.dataset.error = String(err); console.error("bertlab view", err); });
  }

  const onNodes = () => { if (!shadow) syncNodes(); else if (model.get("done") === lastSent) syncNodes(); syncContent(); };
  const onContent = () => syncContent();
  model.on("change:nodes", onNodes);
  model.on("change:root", onNodes);
  model.on("change:content", onContent);
  model.on("change:patch", onContent);
  model.on("change:done", onContent);
  onNodes();
  return () => {
    alive = false;
    model.off("change:nodes", onNodes);
    model.off("change:root", onNodes);
    model.off("change:content", onContent);
    model.off("change:patch", onContent);
    model.off("change:done", onContent);
    for (const e of Object.values(built)) if (e._plot && G.Plotly) G.Plotly.purge(e);
  };
}
