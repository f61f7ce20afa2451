// The book's in-page model: bertlab-mini, exported by `bertlab export --onnx` (bertlab/export.py), run by
// ONNX Runtime Web's WebAssembly backend and tokenized from the model's own tokenizer.json by the tokenizers
// library's JavaScript port. Everything is a file of the site: nothing is fetched from anywhere else, and
// nothing the reader types leaves the page.
//
// The page API (tests and curious readers use it from the console):
//   await bertlab.fillMask(text, k)        → [{token, prob}]   top k at the single [MASK], full-softmax probabilities
//   await bertlab.attentions(text)         → [layer][head][query][key]
//   await bertlab.nextSentence(a, b)       → P(IsNext)
//   await bertlab.encode(text, pair)       → {ids, tokens, token_type_ids}
//   await bertlab.forward(text, pair, positions)   what the live views draw (typed arrays and their shapes)

import * as ort from "./vendor/onnxruntime-web/ort.wasm.min.mjs";
import { Tokenizer } from "./vendor/tokenizers/tokenizers.min.mjs";

const HERE = new URL(".", import.meta.url);
const MODEL = new URL("model/", HERE);

ort.env.wasm.wasmPaths = new URL("vendor/onnxruntime-web/", HERE).href;
// threads need a cross-origin-isolated page (SharedArrayBuffer); a plain static host gives one thread
ort.env.wasm.numThreads = globalThis.crossOriginIsolated ? Math.min(4, navigator.hardwareConcurrency || 1) : 1;
ort.env.wasm.proxy = false;

class LiveModelError extends Error {}

let loading = null;
const WARM_UP = "CAgSB2JlcnRsYWI6OgoQCgF4EgF5IghJZGVudGl0eRIEd2FybVoPCgF4EgoKCAgBEgQKAggBYg8KAXkSCgoICAESBAoCCAFCBAoAEBE=";

/** float16 bits → float32 values (the export stores the weights as float16: half the download). */
function widen(bits) {
  const table = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
    table[h] = exp === 0 ? sign * 2 ** -14 * (frac / 1024)
      : exp === 31 ? (frac ? NaN : sign * Infinity)
      : sign * 2 ** (exp - 15) * (1 + frac / 1024);
  }
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = table[bits[i]];
  return out;
}

async function fetchOk(url, what) {
  let response;
  try {
    response = await fetch(url);
  } catch (err) {
    throw new LiveModelError(`could not read ${what} (${url}): open the book from a web server, e.g. ` +
      "`python -m http.server` in the site's folder; a page opened as a file cannot load the model");
  }
  if (!response.ok) throw new LiveModelError(`could not read ${what} (${url}): the server said ${response.status}`);
  return response;
}

/** Load the manifest, tokenizer and model once; every call after the first reuses them. */
export function load() {
  if (!loading) {
    loading = (async () => {
      const t0 = performance.now();
      // compile and start the runtime while the model's files arrive: the first session does that, so a
      // one-node graph (y = x, 77 bytes, made with onnx.helper) is opened now and the real one after
      const warm = ort.InferenceSession.create(Uint8Array.from(atob(WARM_UP), (c) => c.charCodeAt(0)),
        { executionProviders: ["wasm"] });
      const manifest = await (await fetchOk(new URL("bertlab-model.json", MODEL), "the model's manifest")).json();
      const w = manifest.weights;
      const [tokenizerJson, bytes, half] = await Promise.all([
        fetchOk(new URL(manifest.tokenizer.file, MODEL), "the tokenizer").then((r) => r.json()),
        fetchOk(new URL(manifest.model_file, MODEL), "the model").then((r) => r.arrayBuffer()),
        w ? fetchOk(new URL(w.file, MODEL), "the model's weights").then((r) => r.arrayBuffer()) : null,
      ]);
      const tokenizer = new Tokenizer(tokenizerJson, {
        tokenizer_class: "BertTokenizer", do_lower_case: manifest.tokenizer.lowercase,
        unk_token: "[UNK]", sep_token: "[SEP]", pad_token: "[PAD]", cls_token: "[CLS]", mask_token: "[MASK]",
      });
      await warm;
      const t1 = performance.now();
      // the export is folded already (torch folds its constants, the decoder reads the embedding table as it
      // is); ONNX Runtime's own graph passes took seconds in WebAssembly here and made no run faster
      const options = { executionProviders: ["wasm"], graphOptimizationLevel: "disabled" };
      if (w) options.externalData = [{ path: w.as, data: new Uint8Array(widen(new Uint16Array(half)).buffer) }];
      const session = await ort.InferenceSession.create(new Uint8Array(bytes), options);
      api.timings = { files_and_runtime_ms: t1 - t0, session_ms: performance.now() - t1, threads: ort.env.wasm.numThreads };
      return { manifest, tokenizer, session };
    })();
    loading.catch(() => { loading = null; });      // a failed load may be retried
  }
  return loading;
}

function checkText(value, name) {
  if (typeof value !== "string" || !value.trim()) {
    throw new LiveModelError(`${name} must be a non-empty sentence, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** Token ids as bertlab's tokenizer gives them: [CLS] text [SEP] (pair: … B [SEP]), segment ids 0 / 1. */
export async function encode(text, pair = null) {
  const { tokenizer, manifest } = await load();
  checkText(text, "text");
  if (pair !== null && pair !== undefined && pair !== "") checkText(pair, "the second sentence");
  const enc = tokenizer.encode(text, { text_pair: pair || null, return_token_type_ids: true });
  const max = manifest.config.max_position_embeddings;
  if (enc.ids.length > max) {
    throw new LiveModelError(`the text is ${enc.ids.length} tokens long; the model reads at most ${max}: shorten it`);
  }
  return { ids: enc.ids, tokens: enc.tokens, token_type_ids: enc.token_type_ids };
}

// ONNX Runtime runs one call at a time on a session: the views and the page API share one queue
let queue = Promise.resolve();
function serial(fn) {
  const next = queue.then(fn, fn);
  queue = next.catch(() => {});
  return next;
}

/** One forward pass. `positions`: the token positions to guess (the MLM head runs only there; default: every
 * [MASK]); `lens`: the positions to read through every layer (the logit lens; default none);
 * `maskAt`: word pieces to hide behind [MASK] first (the masking lab). */
export async function forward(text, pair = null, positions = null, { maskAt = [], lens = [] } = {}) {
  const { session, manifest } = await load();
  const t0 = performance.now();
  const enc = await encode(text, pair);
  const t1 = performance.now();
  const ids = enc.ids.slice();
  const tokens = enc.tokens.slice();
  const maskId = manifest.tokenizer.special_ids.mask;
  for (const i of maskAt) {                          // hide chosen word pieces behind [MASK] (the masking lab)
    if (!Number.isInteger(i) || i <= 0 || i >= ids.length - 1) {
      throw new LiveModelError(`position ${i} cannot be masked: choose a word piece, 1 … ${ids.length - 2}`);
    }
    ids[i] = maskId;
    tokens[i] = "[MASK]";
  }
  if (positions === null) positions = ids.flatMap((id, i) => (id === maskId ? [i] : []));
  const T = ids.length;
  for (const [name, list] of [["positions", positions], ["lens", lens]]) {
    if (!Array.isArray(list) || !list.every((i) => Number.isInteger(i) && i >= 0 && i < T)) {
      throw new LiveModelError(`${name} must be a list of token positions 0 … ${T - 1}, got ${JSON.stringify(list)}`);
    }
  }
  const feeds = {
    input_ids: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, T]),
    token_type_ids: new ort.Tensor("int64", BigInt64Array.from(enc.token_type_ids, BigInt), [1, T]),
    positions: new ort.Tensor("int64", BigInt64Array.from(positions, BigInt), [positions.length]),
    lens_positions: new ort.Tensor("int64", BigInt64Array.from(lens, BigInt), [lens.length]),
  };
  let t2 = 0;
  const out = await serial(() => { t2 = performance.now(); return session.run(feeds); });
  // where an edit's time goes (bench/live.py): tokenizing, and ONNX Runtime's run (waiting for the queue apart)
  api.lastForward = { tokenize_ms: t1 - t0, run_ms: performance.now() - t2, T: ids.length };
  const c = manifest.config;
  return {
    tokens, ids, token_type_ids: enc.token_type_ids, positions, lens_positions: lens, T,
    layers: c.num_hidden_layers, heads: c.num_attention_heads, hidden: c.hidden_size, vocab: c.vocab_size,
    attentions: out.attentions.data,         // (1, L, heads, T, T)
    hidden_states: out.hidden_states.data,   // (1, L + 1, T, H)
    lens_logits: out.lens_logits.data,       // (L·M, V): layer by layer, position by position
    mlm_logits: out.mlm_logits.data,         // (N, V)
    nsp_logits: out.nsp_logits ? out.nsp_logits.data : null,
    token: out.token.data, segment: out.segment.data, position: out.position.data,   // (1, T, H)
  };
}

/** Top k of a full softmax over one row of logits; ids past the tokenizer's vocabulary are never guesses. */
export function topK(logits, offset, V, k, tokenizer, vocabSize) {
  let max = -Infinity;
  for (let i = 0; i < V; i++) max = Math.max(max, logits[offset + i]);
  let sum = 0;
  for (let i = 0; i < V; i++) sum += Math.exp(logits[offset + i] - max);
  const best = [];                                    // (value, id) kept sorted, at most k long
  for (let i = 0; i < vocabSize; i++) {
    const v = logits[offset + i];
    if (best.length < k || v > best[best.length - 1][0]) {
      best.push([v, i]);
      best.sort((a, b) => b[0] - a[0] || a[1] - b[1]);
      if (best.length > k) best.pop();
    }
  }
  return best.map(([v, id]) => ({ token: tokenizer.id_to_token(id), id, prob: Math.exp(v - max) / sum }));
}

function checkK(k) {
  if (!Number.isInteger(k) || k < 1) throw new LiveModelError(`k must be a whole number of at least 1, got ${k}`);
  return k;
}

export async function fillMask(text, k = 5) {
  checkK(k);
  const { tokenizer, manifest } = await load();
  const r = await forward(text);
  if (r.positions.length !== 1) {
    throw new LiveModelError(`fillMask needs exactly one [MASK] in the text, found ${r.positions.length}`);
  }
  return topK(r.mlm_logits, 0, r.vocab, k, tokenizer, manifest.tokenizer.vocab_size)
    .map(({ token, prob }) => ({ token, prob }));
}

/** Top k at each of `r.positions` from the last layer: [position][k]. */
export async function guesses(r, k = 5) {
  const { tokenizer, manifest } = await load();
  return r.positions.map((_, n) => topK(r.mlm_logits, n * r.vocab, r.vocab, k, tokenizer, manifest.tokenizer.vocab_size));
}

/** Guesses at each of `r.lens_positions`, read off every layer (the logit lens): [layer][position][k]. */
export async function lens(r, k = 3) {
  const { tokenizer, manifest } = await load();
  const N = r.lens_positions.length;
  const out = [];
  for (let l = 0; l < r.layers; l++) {
    const row = [];
    for (let n = 0; n < N; n++) {
      row.push(topK(r.lens_logits, (l * N + n) * r.vocab, r.vocab, k, tokenizer, manifest.tokenizer.vocab_size));
    }
    out.push(row);
  }
  return out;
}

export function attentionArray(r) {
  const { layers: L, heads: Hh, T } = r;
  const a = r.attentions;
  const out = [];
  for (let l = 0; l < L; l++) {
    const layer = [];
    for (let h = 0; h < Hh; h++) {
      const head = [];
      for (let q = 0; q < T; q++) {
        const o = ((l * Hh + h) * T + q) * T;
        head.push(Array.from(a.subarray(o, o + T)));
      }
      layer.push(head);
    }
    out.push(layer);
  }
  return out;
}

export async function attentions(text) {
  return attentionArray(await forward(text, null, []));
}

export async function nextSentence(a, b) {
  checkText(a, "sentence a");
  checkText(b, "sentence b");
  const r = await forward(a, b, []);
  if (!r.nsp_logits) throw new LiveModelError("this model has no next-sentence head");
  const [x, y] = r.nsp_logits;
  const m = Math.max(x, y);
  return Math.exp(x - m) / (Math.exp(x - m) + Math.exp(y - m));   // label 0 = IsNext
}

const api = { load, encode, forward, fillMask, attentions, nextSentence, lens, guesses, topK, attentionArray, LiveModelError };
globalThis.bertlab = api;
globalThis.dispatchEvent?.(new Event("bertlab-live"));
export default api;
