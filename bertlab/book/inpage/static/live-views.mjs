// The live views on typed text: each `[data-bertlab-view]` element of a lesson page becomes a small view
// whose data come from the in-page model (bertlab-live.mjs). They draw with plain DOM (tables, bars, a grid
// of canvases), so they need no plotting library; the numbers they show (probabilities, norms, cosines)
// are computed here from the model's outputs.
//
// A minimal, self-contained set: the shared view modules of the views work (issue 28) can take their place
// when they accept a data source other than a kernel.

import bertlab from "./bertlab-live.mjs";

const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children.flat()) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
};
const pct = (p) => `${(100 * p).toFixed(1)} %`;
const bar = (value, max = 1) => el("span", { class: "live-bar", style: `width:${Math.max(0, Math.min(1, value / max)) * 100}%` });

/** Run `compute` on every edit, one at a time: an edit made while the model runs is computed next. */
function live(view, inputs, compute) {
  const status = view.querySelector(".live-status");
  const output = el("div", { class: "live-output" });
  view.append(output, status);                   // inputs, then what they give, then how long it took
  let running = false, again = false;
  async function update() {
    if (running) { again = true; return; }
    running = true;
    do {
      again = false;
      const t0 = performance.now();
      try {
        const drawn = await compute();
        output.replaceChildren(...[drawn].flat());
        status.textContent = `computed in your browser in ${Math.round(performance.now() - t0)} ms`;
        status.classList.remove("live-error");
      } catch (err) {
        status.textContent = err.message || String(err);
        status.classList.add("live-error");
      }
    } while (again);
    running = false;
    view.dataset.updates = String(Number(view.dataset.updates || 0) + 1);
  }
  for (const input of inputs) input.addEventListener("input", update);
  view.bertlabUpdate = update;
  return update();
}

function textInput(label, value) {
  const input = el("input", { type: "text", value, "aria-label": label, class: "live-text", spellcheck: "false" });
  return [el("label", { class: "live-label" }, label, input), input];
}

function guessList(guesses) {
  return el("table", { class: "live-guesses" }, guesses.map((g) =>
    el("tr", {}, el("td", { class: "tok" }, g.token), el("td", { class: "bar" }, bar(g.prob)), el("td", {}, pct(g.prob)))));
}

// ---- views ------------------------------------------------------------------------------------------------

const VIEWS = {
  async fill(view, d) {
    const [label, input] = textInput("Sentence with one [MASK]", d.text);
    view.append(label);
    return live(view, [input], async () => {
      const enc = await bertlab.encode(input.value);
      const masks = enc.tokens.flatMap((t, i) => (t === "[MASK]" ? [i] : []));
      if (masks.length !== 1) throw new Error(`type exactly one [MASK] (found ${masks.length})`);
      // the lens alone: its last layer is the model's own guess, so the decoder runs once for all layers
      const r = await bertlab.forward(input.value, null, [], { lens: masks });
      const lens = await bertlab.lens(r, 3);
      const last = (await bertlab.lens(r, 5))[r.layers - 1][0];
      const table = el("table", { class: "live-lens" },
        el("tr", {}, el("th", {}, "layer"), el("th", { colspan: 3 }, "top 3 guesses read off that layer (the logit lens)")),
        lens.map((row, l) => el("tr", {}, el("td", {}, l + 1), row[0].map((g) => el("td", {}, `${g.token} ${pct(g.prob)}`)))));
      return [el("p", {}, "The last layer's guesses:"), guessList(last), table];
    });
  },

  async attention(view, d) {
    const [label, input] = textInput("Sentence", d.text);
    const layer = el("select", { "aria-label": "layer" });
    const head = el("select", { "aria-label": "head" });
    view.append(label, el("label", { class: "live-label" }, "layer ", layer), el("label", { class: "live-label" }, "head ", head));
    let last = null;
    const draw = () => {
      const r = last, L = r.layers, H = r.heads, T = r.T;
      if (layer.options.length !== L) layer.replaceChildren(...Array.from({ length: L }, (_, i) => el("option", { value: i }, i + 1)));
      if (head.options.length !== H) head.replaceChildren(...Array.from({ length: H }, (_, i) => el("option", { value: i }, i + 1)));
      const l = Number(layer.value || 0), h = Number(head.value || 0);
      const a = r.attentions, base = (l * H + h) * T * T;
      const headView = el("table", { class: "live-heat", "aria-label": `attention of layer ${l + 1}, head ${h + 1}` },
        el("tr", {}, el("th", {}, "query ↓ key →"), r.tokens.map((t) => el("th", { class: "key" }, t))),
        r.tokens.map((t, q) => el("tr", {}, el("th", {}, t), r.tokens.map((_, k) => {
          const w = a[base + q * T + k];
          return el("td", { style: `background:rgba(31,119,180,${w.toFixed(3)})`, title: `${t} → ${r.tokens[k]}: ${w.toFixed(3)}` });
        }))));
      const grid = el("div", { class: "live-grid", style: `grid-template-columns:repeat(${H}, auto)` });
      for (let gl = 0; gl < L; gl++) for (let gh = 0; gh < H; gh++) {
        const c = el("canvas", { width: T, height: T, title: `layer ${gl + 1}, head ${gh + 1}`,
          class: gl === l && gh === h ? "on" : "" });
        const ctx = c.getContext("2d"), img = ctx.createImageData(T, T), o = (gl * H + gh) * T * T;
        for (let i = 0; i < T * T; i++) {
          const w = a[o + i];
          img.data.set([255 - 224 * w, 255 - 136 * w, 255 - 75 * w, 255], 4 * i);
        }
        ctx.putImageData(img, 0, 0);
        c.addEventListener("click", () => { layer.value = gl; head.value = gh; view.bertlabUpdate(); });
        grid.append(c);
      }
      return [el("h4", {}, `Head view: layer ${l + 1}, head ${h + 1}`), headView,
        el("h4", {}, "Model view: every layer (rows) and head (columns); click one to see it above"), grid];
    };
    for (const s of [layer, head]) s.addEventListener("change", () => view.bertlabUpdate());
    return live(view, [input], async () => {
      if (!last || last.text !== input.value) last = Object.assign(await bertlab.forward(input.value, null, []), { text: input.value });
      return draw();
    });
  },

  async embeddings(view, d) {
    const [label, input] = textInput("Sentence", d.text);
    view.append(label);
    return live(view, [input], async () => {
      const r = await bertlab.forward(input.value, null, []);
      const D = r.hidden, norm = (arr, t) => Math.hypot(...arr.subarray(t * D, (t + 1) * D));
      const rows = r.tokens.map((tok, t) => {
        const sum = new Float32Array(D);
        for (let i = 0; i < D; i++) sum[i] = r.token[t * D + i] + r.segment[t * D + i] + r.position[t * D + i];
        return [tok, norm(r.token, t), norm(r.segment, t), norm(r.position, t), Math.hypot(...sum)];
      });
      const max = Math.max(...rows.flatMap((x) => x.slice(1)));
      return el("table", { class: "live-embed" },
        el("tr", {}, ["token", "|token|", "|segment|", "|position|", "|sum|"].map((h) => el("th", {}, h))),
        rows.map((row) => el("tr", {}, el("td", { class: "tok" }, row[0]),
          row.slice(1).map((v) => el("td", { class: "bar" }, bar(v, max), ` ${v.toFixed(2)}`)))));
    });
  },

  async nsp(view, d) {
    const [la, a] = textInput("Sentence A", d.a);
    const [lb, b] = textInput("Sentence B", d.b);
    view.append(la, lb);
    return live(view, [a, b], async () => {
      const p = await bertlab.nextSentence(a.value, b.value);
      return el("p", { class: "live-nsp" }, "P(IsNext) = ", el("b", {}, pct(p)), " ", el("span", { class: "live-meter" }, bar(p)));
    });
  },

  async context(view, d) {
    const [la, a] = textInput("Sentence 1", d.a);
    const [lb, b] = textInput("Sentence 2", d.b);
    const [lw, w] = textInput("Word in both", d.word);
    view.append(la, lb, lw);
    const vectors = async (text, word) => {
      const pieces = (await bertlab.encode(word)).tokens.slice(1, -1);
      const r = await bertlab.forward(text, null, []);
      // whole words only, as bertlab.word_vectors matches: "bank" is not the start of "bank ##er"
      const at = r.tokens.findIndex((_, i) => pieces.every((p, j) => r.tokens[i + j] === p) &&
        !(r.tokens[i + pieces.length] || "").startsWith("##"));
      if (!pieces.length || at < 0) throw new Error(`"${word}" (${pieces.join(" ") || "no tokens"}) is not in "${text}"`);
      const D = r.hidden, T = r.T;
      return Array.from({ length: r.layers + 1 }, (_, l) => {
        const v = new Float64Array(D);
        for (let j = 0; j < pieces.length; j++) for (let i = 0; i < D; i++) v[i] += r.hidden_states[(l * T + at + j) * D + i] / pieces.length;
        return v;
      });
    };
    const cos = (x, y) => { let s = 0, a = 0, b = 0; for (let i = 0; i < x.length; i++) { s += x[i] * y[i]; a += x[i] * x[i]; b += y[i] * y[i]; } return s / Math.sqrt(a * b); };
    return live(view, [a, b, w], async () => {
      const [va, vb] = [await vectors(a.value, w.value), await vectors(b.value, w.value)];
      return el("table", { class: "live-cos" }, el("tr", {}, el("th", {}, "layer"), el("th", { colspan: 2 }, "cosine of the two vectors")),
        va.map((v, l) => { const c = cos(v, vb[l]); return el("tr", {}, el("td", {}, l === 0 ? "embeddings" : l), el("td", { class: "bar" }, bar(c)), el("td", {}, c.toFixed(3))); }));
    });
  },

  async masking(view, d) {
    const [label, input] = textInput("Sentence (click its words to hide them behind [MASK])", d.text);
    view.append(label);
    const masked = new Set();
    let lastText = null;
    return live(view, [input], async () => {
      if (input.value !== lastText) { masked.clear(); lastText = input.value; }
      const enc = await bertlab.encode(input.value);
      const chosen = [...masked].filter((i) => i > 0 && i < enc.ids.length - 1).sort((x, y) => x - y);
      const r = await bertlab.forward(input.value, null, chosen, { maskAt: chosen });
      const guesses = await bertlab.guesses(r, 3);
      const tokens = el("p", { class: "live-tokens" }, enc.tokens.map((t, i) => {
        const special = i === 0 || i === enc.ids.length - 1;
        return el("button", { type: "button", class: masked.has(i) ? "on" : "", disabled: special ? "" : null,
          onclick: () => { masked.has(i) ? masked.delete(i) : masked.add(i); view.bertlabUpdate(); } }, masked.has(i) ? `[MASK] (${t})` : t);
      }));
      const rows = chosen.map((i, n) => el("tr", {}, el("td", { class: "tok" }, enc.tokens[i]),
        el("td", {}, guesses[n].map((g) => `${g.token} ${pct(g.prob)}`).join(" · "))));
      return [tokens, chosen.length ? el("table", { class: "live-guesses" }, el("tr", {}, el("th", {}, "hidden"), el("th", {}, "the model's top 3")), rows)
        : el("p", {}, "Click a word to hide it.")];
    });
  },
};

async function start() {
  const views = [...document.querySelectorAll("[data-bertlab-view]")];
  try {
    await bertlab.load();
  } catch (err) {
    for (const v of views) {
      const s = v.querySelector(".live-status");
      s.textContent = `The live model could not start: ${err.message || err}`;
      s.classList.add("live-error");
    }
    return;
  }
  await Promise.all(views.map((v) => {
    const make = VIEWS[v.dataset.bertlabView];
    return make ? make(v, JSON.parse(v.dataset.defaults || "{}")) : null;
  }));
  document.documentElement.dataset.bertlabLive = "ready";
}

start();
