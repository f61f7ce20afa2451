// The live views on typed text: each `[data-bertlab-view]` element of a lesson page becomes the notebook's own
// view, drawn by the same view module (bertlab/viz/views/js, copied to views/<module>.mjs at build time), with
// the in-page model (bertlab-live.mjs) as its data source instead of a kernel.
//
// What is here is only the glue, model → state:
// - views/<kind>.json is the view's state as the notebook's widget made it on bertlab-mini at build time
//   (bertlab/book/inpage: view_state): its controls, panes and figures. Its figures are the templates: their
//   traces, colours and layout are bertlab.viz's; the glue only puts the in-page model's numbers into them
//   (the same z, x, y, text, title and size the Python figure function gives; a browser test holds them equal).
// - The module renders over a small model object (get / set / save_changes / on / off, as anywidget's): a
//   person's change arrives as its `event`; the glue answers it asynchronously with the in-page model and sets
//   `nodes` and `content` as Python would, then `done`.
// - The attention view's heatmap is the module's own code: js/attention.js's `offline` recomputes it from the
//   attention this page's model returned, exactly as it does from a notebook's saved attention.

import bertlab from "./bertlab-live.mjs";

const HERE = new URL(".", import.meta.url);
const G = (globalThis.__bertlab = globalThis.__bertlab || {});
G.liveTimings = G.liveTimings || [];       // [{kind, compute_ms, draw_ms, total_ms}] per answered change (bench)

// ---- plotly.js, the view modules, the saved states -----------------------------------------------------------

let plotly = null;
function loadPlotly() {
  // the book's own copy (_static/plotly.min.js); a page that has it already (figures in the lesson) reuses it
  if (globalThis.Plotly) return Promise.resolve(globalThis.Plotly);
  if (!plotly) {
    plotly = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = new URL("../plotly.min.js", HERE).href;
      s.onload = () => resolve(globalThis.Plotly);
      s.onerror = () => reject(new Error("could not read plotly.min.js, which draws the views: serve the whole site"));
      document.head.appendChild(s);
    });
  }
  return plotly;
}

const modules = {};
function viewModule(name) {
  modules[name] = modules[name] || import(new URL(`views/${name}.mjs`, HERE).href);
  return modules[name];
}

function restore(state, buffers) {
  for (const b of buffers || []) {
    const bin = atob(b.data);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    let o = state;
    for (const k of b.path.slice(0, -1)) o = o[k];
    o[b.path[b.path.length - 1]] = new DataView(bytes.buffer);
  }
  return state;
}

// ---- small helpers, as bertlab.viz spells them ---------------------------------------------------------------

const labelsOf = (tokens) => tokens.map((t, i) => `${t} (${i})`);                       // look.token_labels
const shorten = (text, n = 40) => { const t = String(text).split(/\s+/).filter(Boolean).join(" ");
  return t.length <= n ? t : t.slice(0, n - 1) + "…"; };                                   // look.shorten
const escapeHtml = (s) => String(s).replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]);
// a template figure to fill: its traces and layout copied one level deep. The glue sets or replaces their keys,
// never changes what they point to, so the rest (the template, colour scales, axes) stays the same objects
// from one edit to the next, which plotly.react passes over instead of comparing key by key.
const clone = (fig) => ({ data: fig.data.map((t) => ({ ...t })), layout: { ...fig.layout } });
const rows = (flat, offset, n, stride, width = n) => Array.from({ length: n }, (_, i) =>
  Array.from(flat.subarray(offset + i * stride, offset + i * stride + width)));
const maxOf = (nested) => nested.reduce((m, r) => Math.max(m, ...r), -Infinity);

/** Word pieces back to text as bertlab's `tokenizer.decode` gives it (probe.fill_mask's `text`, [MASK] in place):
 * the tokenizers library's WordPiece decoder, which cleans up each piece on its own (the JS port's decode
 * cleans the whole string, so "don't" would differ). */
function decode(tokens) {
  const clean = [[" .", "."], [" ?", "?"], [" !", "!"], [" ,", ","], [" ' ", "'"], [" n't", "n't"], [" 'm", "'m"],
    [" do not", " don't"], [" 's", "'s"], [" 've", "'ve"], [" 're", "'re"]];
  return tokens.map((t, i) => clean.reduce((s, [a, b]) => s.replace(a, b),
    t.startsWith("##") ? t.slice(2) : i ? " " + t : t)).join("");
}

function say(text, error = false) {
  // Widget.say's markup
  if (!text) return "";
  const [color, bg] = error ? ["#9f1c1c", "#fdecea"] : ["#33475b", "#eef3f8"];
  return `<div style="color:${color};background:${bg};padding:4px 8px;border-radius:4px">${escapeHtml(text)}</div>`;
}

/** What a control holds: its value, or the index of its option. */
function valueOf(nodes, id) {
  const spec = nodes[id];
  return "labels" in spec ? spec.index : spec.value;
}

/** A person's change applied to the control's spec, as `control.value = value` does in Python. */
function applyEvent(nodes, ev) {
  if (!ev || ev.click || !nodes[ev.id]) return nodes;
  const spec = { ...nodes[ev.id] };
  if ("labels" in spec) spec.index = ev.value === null ? null : Math.max(0, Math.min(spec.labels.length - 1, +ev.value));
  else if (spec.kind === "intslider") spec.value = Math.max(spec.min, Math.min(spec.max, Math.round(+ev.value)));
  else if (spec.kind === "floatslider") spec.value = Math.max(spec.min, Math.min(spec.max, +ev.value));
  else spec.value = ev.value;
  return { ...nodes, [ev.id]: spec };
}

// one forward pass per (text, pair, what is read): a slider or a second view on the same text reuses it
const forwards = new Map();
function forward(text, pair = null, positions = [], opts = {}) {
  const key = JSON.stringify([text, pair, positions, opts.maskAt || [], opts.lens || []]);
  if (!forwards.has(key)) {
    const p = bertlab.forward(text, pair, positions, opts);
    p.catch(() => forwards.delete(key));
    forwards.set(key, p);
    if (forwards.size > 24) forwards.delete(forwards.keys().next().value);
  }
  return forwards.get(key);
}

// ---- each view: the in-page model's numbers put into the notebook's figures -----------------------------------
// compute(view) → {nodes: changed specs, content: pane id → figure (null: empty)}; throws a message for the reader

const COMPUTE = {
  // AttentionExplorer: js/attention.js recomputes the heatmap (layer, head, combine, words, [CLS]/[SEP],
  // threshold) from the attention given to it, as the book does from a notebook's; the grid is
  // figures.attention_grid's; the guesses at [MASK] are the widget's own markup.
  async attention(v) {
    const { ids, nodes } = v;
    const text = valueOf(nodes, ids.text), pair = String(valueOf(nodes, ids.text_pair) || "").trim() || null;
    const r = await forward(text, pair, null);
    const { layers: L, heads: H, T } = r;
    const data = { ...v.state.data, tokens: r.tokens,
      attentions: { dtype: "f4", shape: `${L},${H},${T},${T}`, bdata: r.attentions } };
    const drawn = v.module.offline({ ...v.state, nodes, data, content: { [ids.out]: { rev: 0, figure: v.templates[ids.out] } } },
      { id: ids.layer, value: nodes[ids.layer].value });
    if (!drawn) throw new Error("nothing is left to show: every token is [CLS] or [SEP]; uncheck hide [CLS]/[SEP]");
    const heat = drawn.content[ids.out].figure;
    // offline() copies the figure through JSON; its plotly template is the saved one, value for value: the
    // saved object itself is given back, so plotly.react passes over it (see clone)
    heat.layout.template = v.templates[ids.out].layout.template;
    const content = { [ids.out]: heat, [ids.grid_out]: null };
    if (valueOf(nodes, ids.show_grid)) {
      const fig = clone(v.templates[ids.grid_out]);
      const n = Math.min(T, 128), labels = labelsOf(r.tokens.slice(0, n));
      let max = 0;
      for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) {
        const z = rows(r.attentions, (l * H + h) * T * T, n, T);
        max = Math.max(max, maxOf(z));
        Object.assign(fig.data[l * H + h], { z, x: labels, y: labels });
      }
      fig.layout.coloraxis = { ...fig.layout.coloraxis, cmax: max };
      const shown = n < T ? ` (first ${n} of ${T} tokens)` : "";
      fig.layout.title = { ...fig.layout.title, text: `all ${L} layers × ${H} heads${shown}: look for diagonals ` +
        "(next/previous token), columns ([CLS], [SEP]) and broad rows" };
      content[ids.grid_out] = fig;
    }
    let guesses = "";
    if (r.positions.length) {
      const top = await bertlab.guesses(r, 5);
      guesses = '<div style="padding:8px;min-width:220px"><div style="color:#33475b">bertlab-mini guesses</div>' +
        r.positions.map((pos, n) => `<div>[MASK] ${n + 1} (token ${pos}): ` +
          top[n].map((g) => `<b>${escapeHtml(g.token)}</b> ${g.prob.toFixed(2)}`).join(", ") + "</div>").join("") + "</div>";
    }
    return { nodes: { ...drawn.nodes, [ids.guesses_out]: { ...nodes[ids.guesses_out], value: guesses } }, content };
  },

  // MaskPlayground: the text's pieces as buttons; the chosen one hidden behind [MASK]; figures.fill_mask_figure
  // and figures.fill_mask_layers_figure (the logit lens: every layer read through the MLM head)
  async fill(v) {
    const { ids, ev } = v;
    let nodes = v.nodes;
    const text = valueOf(nodes, ids.text);
    const enc = await bertlab.encode(text);
    const tokensSpec = nodes[ids.tokens];
    if (!ev || ev.id === ids.text) {
      // a new text: one button per word piece; its own [MASK] chosen, else the position chosen before
      const keep = tokensSpec.index === null ? null : tokensSpec.index + 1;
      const own = enc.tokens.findIndex((t, i) => t === "[MASK]" && i > 0 && i < enc.tokens.length - 1);
      const choice = [own >= 0 ? own : null, keep].find((c) => c !== null && c > 0 && c < enc.tokens.length - 1);
      nodes = { ...nodes, [ids.tokens]: { ...tokensSpec, labels: enc.tokens.slice(1, -1), index: choice ? choice - 1 : null } };
    }
    const index = nodes[ids.tokens].index;
    if (index === null || index === undefined) {
      return { nodes, content: { [ids.out]: null, [ids.layers_out]: null }, message: "click a token to hide it behind [MASK]" };
    }
    const i = index + 1, k = valueOf(nodes, ids.top_k);
    const r = await forward(text, null, [], { maskAt: [i], lens: [i] });
    const lens = (await bertlab.lens(r, k)).map((layer) => layer[0]);            // [layer][k]
    const top = lens[lens.length - 1];                                          // the last layer: the model's guesses
    const sup = `<br><sup>${shorten(decode(r.tokens.slice(1, -1)), 80)}</sup>`;
    const probs = top.map((g) => g.prob);
    const fig = clone(v.templates[ids.out]);
    Object.assign(fig.data[0], { x: probs, y: labelsOf(top.map((g) => g.token)), text: probs.map((p) => p.toFixed(3)),
      customdata: top.map((g) => g.token) });
    fig.layout.title = { ...fig.layout.title, text: `what the model puts in [MASK]: top ${k}${sup}` };
    fig.layout.xaxis = { ...fig.layout.xaxis, range: [0, Math.min(1, Math.max(...probs) * 1.2 + 0.02)] };
    fig.layout.height = 140 + 34 * k;
    const layersFig = clone(v.templates[ids.layers_out]);
    const z = lens.map((row) => row.map((g) => g.prob));
    Object.assign(layersFig.data[0], { z, text: lens.map((row) => row.map((g) => g.token)),
      x: Array.from({ length: k }, (_, j) => `#${j + 1}`), y: lens.map((_, l) => `layer ${l + 1}`), zmax: maxOf(z) });
    layersFig.layout.title = { ...layersFig.layout.title,
      text: `what each layer would put in the [MASK]: read upward as the guess forms${sup}` };
    layersFig.layout.width = Math.max(460, 90 * k + 200);
    layersFig.layout.height = 140 + 40 * lens.length;
    return { nodes, content: { [ids.out]: fig, [ids.layers_out]: layersFig } };
  },

  // EmbeddingSumExplorer: figures.embedding_sum (each part's norm per token; its first 32 dimensions)
  async embeddings(v) {
    const { ids, nodes } = v;
    const pair = String(valueOf(nodes, ids.text_pair) || "").trim() || null;
    const r = await forward(valueOf(nodes, ids.text), pair, []);
    const { T, hidden: D } = r, k = Math.min(32, D);
    const sum = new Float32Array(T * D);
    for (let i = 0; i < T * D; i++) sum[i] = r.token[i] + r.segment[i] + r.position[i];
    // LayerNorm(sum) is the embeddings' output: the first of the hidden states
    const parts = { token: r.token, segment: r.segment, position: r.position, sum, normed: r.hidden_states.subarray(0, T * D) };
    const labels = labelsOf(r.tokens);
    const fig = clone(v.templates[ids.out]);
    const names = Object.keys(parts);
    let raw = 0, normed = 0;
    names.forEach((name, c) => {
      const p = parts[name];
      const norms = Array.from({ length: T }, (_, t) => Math.hypot(...p.subarray(t * D, (t + 1) * D)));
      const z = rows(p, 0, T, D, k);
      const big = Math.max(...z.map((row) => Math.max(...row.map(Math.abs))));
      if (name === "normed") normed = big; else raw = Math.max(raw, big);
      Object.assign(fig.data[c], { x: labels, y: norms });
      Object.assign(fig.data[names.length + c], { z, y: labels });
    });
    fig.layout.coloraxis = { ...fig.layout.coloraxis, cmin: -raw, cmax: raw };
    fig.layout.coloraxis2 = { ...fig.layout.coloraxis2, cmin: -normed, cmax: normed };
    fig.layout.width = Math.min(1000, Math.max(640, 30 * T + 260));
    fig.layout.height = 360 + Math.max(260, 16 * T);
    return { nodes, content: { [ids.out]: fig } };
  },

  // NSPExplorer: figures.nsp_figure (P(IsNext) and P(NotNext) as one split bar); "swap A and B"
  async nsp(v) {
    const { ids, ev } = v;
    let nodes = v.nodes;
    if (ev && ev.click && ev.id === ids.swap) {
      nodes = { ...nodes, [ids.a]: { ...nodes[ids.a], value: nodes[ids.b].value },
        [ids.b]: { ...nodes[ids.b], value: nodes[ids.a].value } };
    }
    const a = valueOf(nodes, ids.a), b = valueOf(nodes, ids.b);
    for (const [s, what] of [[a, "sentence A"], [b, "sentence B"]]) {
      if (typeof s !== "string" || !s.trim()) throw new Error(`the ${what} is empty: type a sentence`);
    }
    const p = await bertlab.nextSentence(a, b);
    const fig = clone(v.templates[ids.out]);
    [["IsNext", p], ["NotNext", 1 - p]].forEach(([name, value], c) => Object.assign(fig.data[c],
      { x: [value], text: [`${name} ${value.toFixed(3)}`], customdata: [[a, b]] }));
    const verdict = p >= 0.5 ? "thinks B follows A" : "thinks B comes from elsewhere";
    fig.layout.title = { ...fig.layout.title, text: `P(IsNext) = ${p.toFixed(3)}: the model ${verdict}` +
      `<br><sup>A: ${shorten(a, 60)} | B: ${shorten(b, 60)}</sup>` };
    return { nodes, content: { [ids.out]: fig } };
  },

  // ContextExplorer: the word's vector in each sentence at every layer (its pieces averaged, whole words only,
  // as probe.word_vectors) and context_figures.cosine_matrix at the chosen layer
  async context(v) {
    const { ids, nodes } = v;
    const word = String(valueOf(nodes, ids.word)).trim();
    if (!word) throw new Error("the word is empty: type the word to follow, e.g. bank");
    const texts = [];
    for (const line of String(valueOf(nodes, ids.sentences)).split("\n")) {
      if (line.trim()) texts.push(line.split("|")[0].trim());
    }
    if (!texts.length) throw new Error("no sentences: write one sentence per line, each using the word");
    const show = valueOf(nodes, ids.show);
    const pieces = (await bertlab.encode(word)).tokens.slice(1, -1);
    const vectors = [];                                              // [sentence][layer] → Float64Array(H)
    for (const [n, text] of texts.entries()) {
      const r = await forward(text, null, []);
      const at = r.tokens.findIndex((_, i) => pieces.every((p, j) => r.tokens[i + j] === p) &&
        !(r.tokens[i - 1] || "").match(/^##/) && !(r.tokens[i] || "").startsWith("##") &&
        !(r.tokens[i + pieces.length] || "").startsWith("##"));
      if (at < 0) {
        throw new Error(`'${word}' is not a word of sentence ${n + 1} ('${text}'): use the word as written in every ` +
          "sentence (whole words: 'bank' does not match 'banks'), or drop that sentence");
      }
      const { hidden: D, T } = r;
      vectors.push(Array.from({ length: r.layers + 1 }, (_, l) => {
        const x = new Float64Array(D);
        for (let j = 0; j < pieces.length; j++) for (let i = 0; i < D; i++) x[i] += r.hidden_states[(l * T + at + j) * D + i] / pieces.length;
        return x;
      }));
    }
    if (show === 2) {
      throw new Error("the 2-D projection (a PCA) is drawn in the lesson's notebook: run it live; here, the " +
        "cosine matrix and the drift by layer");
    }
    if (show === 1 && texts.length < 2) throw new Error("drift needs at least two sentences to compare");
    const layer = valueOf(nodes, ids.layer);
    const cos = (x, y) => { let s = 0, a = 0, b = 0; for (let i = 0; i < x.length; i++) { s += x[i] * y[i]; a += x[i] * x[i]; b += y[i] * y[i]; }
      return s / Math.sqrt(a * b); };
    if (show === 1) {
      // context_figures.drift_by_layer: each context's distance from the first, layer by layer
      const { drift, colors } = v.state.templates;
      const fig = clone(drift);
      const L1 = vectors[0].length, layers = Array.from({ length: L1 }, (_, l) => l);
      fig.data = texts.slice(1).map((text, c) => ({ ...drift.data[0], x: layers, name: `${c + 2}: ${shorten(text, 36)}`,
        y: layers.map((l) => 1 - cos(vectors[0][l], vectors[c + 1][l])), line: { ...drift.data[0].line, color: colors[c % colors.length] },
        customdata: layers.map(() => [texts[0], text]) }));
      fig.layout.title = { ...fig.layout.title, text: `'${word}' layer by layer: nearly the same vector at the ` +
        "embeddings, pulled apart by context" };
      return { nodes, content: { [ids.out]: fig } };
    }
    const z = vectors.map((x, i) => vectors.map((y, j) => (i === j ? 0 : 1 - cos(x[layer], y[layer]))));
    const n = texts.length, short = texts.map((s, i) => `${i + 1}: ${shorten(s, 32)}`);
    const fig = clone(v.templates[ids.out]);
    Object.assign(fig.data[0], { z, x: short, y: short, zmax: Math.max(maxOf(z), 1e-6),
      customdata: texts.map((a) => texts.map((b) => [a, b])) });
    fig.layout.title = { ...fig.layout.title, text: `cosine distance of '${word}' between contexts: 0 = the same ` +
      "vector, same senses sit close" };
    fig.layout.width = Math.min(1000, Math.max(520, 70 * n + 320));
    fig.layout.height = Math.max(420, 60 * n + 240);
    return { nodes, content: { [ids.out]: fig } };
  },
};

// ---- a view on the page ---------------------------------------------------------------------------------------

function drawnOnce(root, n) {
  // the module marks its root with the `done` it has drawn (runtime.js: after every pane's figure is drawn)
  // (or has failed to: it then marks data-error, and the next change must not wait behind this one)
  return new Promise((resolve) => {
    if (root.dataset.done === String(n)) return resolve();
    const error = root.dataset.error;
    const obs = new MutationObserver(() => {
      if (root.dataset.done === String(n) || root.dataset.error !== error) { obs.disconnect(); resolve(); }
    });
    obs.observe(root, { attributes: true, attributeFilter: ["data-done", "data-error"] });
  });
}

async function mount(el) {
  const kind = el.dataset.bertlabView;
  const status = el.querySelector(".live-status");
  const response = await fetch(new URL(`views/${kind}.json`, HERE));
  if (!response.ok) throw new Error(`could not read this view's state (views/${kind}.json): the server said ${response.status}`);
  const entry = await response.json();
  const [module] = await Promise.all([viewModule(entry.module), loadPlotly()]);
  const state = restore(entry.state, entry.buffers);
  const ids = entry.controls;
  const templates = {};
  for (const [id, pane] of Object.entries(state.content)) if (pane.figure) templates[id] = pane.figure;
  state.content = {};                        // nothing drawn until this page's model has answered
  const handlers = {};
  const fire = (name) => (handlers["change:" + name] || []).slice().forEach((fn) => fn());
  const changed = new Set();
  let rev = 1e6, latest = 0, queue = Promise.resolve(), root = null;

  const model = {
    get: (k) => state[k],
    set: (k, value) => { state[k] = value; changed.add(k); },
    save_changes() {
      const keys = [...changed];
      changed.clear();
      if (keys.includes("event")) answer(state.event);
    },
    on: (name, fn) => { (handlers[name] = handlers[name] || []).push(fn); },
    off: (name, fn) => { handlers[name] = (handlers[name] || []).filter((f) => f !== fn); },
    send() {},
  };

  function answer(ev) {
    const mine = ++latest;
    const next = queue.then(() => run(ev, mine));
    queue = next.catch(() => {});
    return next;
  }

  async function run(ev, mine) {
    const n = ev ? ev.n : 1;               // 1: the first answer (a saved state's done is 0)
    let nodes = applyEvent(state.nodes, ev);
    if (mine !== latest) {                   // a newer change is waiting: it computes with this one applied
      state.nodes = nodes;
      return;
    }
    const t0 = performance.now();
    bertlab.lastForward = null;
    let update, error = null;
    try {
      update = await COMPUTE[kind]({ ids, ev, nodes, state, module, templates });
    } catch (err) {
      error = err.message || String(err);
      const empty = {};
      for (const id of Object.keys(templates)) empty[id] = null;
      update = { nodes, content: empty };
    }
    const t1 = performance.now();
    nodes = { ...update.nodes };
    nodes[ids.message] = { ...nodes[ids.message], value: say(error || update.message || "", !!error) };
    const content = { ...state.content };
    for (const [id, fig] of Object.entries(update.content)) {
      if (fig) content[id] = { rev: ++rev, figure: fig };
      else delete content[id];
    }
    Object.assign(state, { nodes, content, done: n });
    const drawn = drawnOnce(root, n);
    fire("nodes");
    fire("content");
    fire("done");
    await drawn;
    const t2 = performance.now();
    // compute: tokenizing, the forward pass and the figures' numbers; forward: the last pass's own split
    // (none when every pass came from the cache, e.g. a slider)
    G.liveTimings.push({ kind, compute_ms: t1 - t0, draw_ms: t2 - t1, total_ms: t2 - t0, forward: bertlab.lastForward });
    status.textContent = error ? "" : `computed in your browser: the model and the figures' numbers in ` +
      `${Math.round(t1 - t0)} ms, drawn in ${Math.round(t2 - t1)} ms`;
    status.classList.remove("live-error");
    el.dataset.updates = String(Number(el.dataset.updates || 0) + 1);
  }

  const host = document.createElement("div");
  host.className = "live-host";
  el.insertBefore(host, status);
  module.default.render({ model, el: host });
  root = host.querySelector(".bl-view");
  /** Set a control by name as a person would, and wait until its figure is drawn (tests and bench/live.py). */
  el.bertlabSet = async (name, value, click = false) => {
    const id = ids[name];
    if (!id) throw new Error(`no control ${name}: this view's are ${Object.keys(ids).join(", ")}`);
    const ev = click ? { id, click: true, n: Date.now() * 1000 + latest } : { id, value, n: Date.now() * 1000 + latest };
    state.event = ev;
    return answer(ev);
  };
  el.bertlabControls = ids;
  return answer(null);                       // the first answer: the default text through this page's model
}

async function start() {
  const views = [...document.querySelectorAll("[data-bertlab-view]")];
  const fail = (v, err) => {
    const s = v.querySelector(".live-status");
    s.textContent = `The live model could not start: ${err.message || err}`;
    s.classList.add("live-error");
  };
  // the model first, then the views: loading plotly.js (4.8 MB of script) and the view modules while the model
  // loads was measured slower (bench/live.py, the same machine and load, two runs each: the first view drawn
  // 6.4 and 3.9 s in this order, 12.1 and 7.9 s with both at once: the script's evaluation held back the
  // runtime's start)
  try {
    await bertlab.load();
  } catch (err) {
    views.forEach((v) => fail(v, err));
    return;
  }
  await Promise.all(views.map((v) => mount(v).catch((err) => fail(v, err))));
  document.documentElement.dataset.bertlabLive = "ready";
}

start();
