// interact's view (bertlab/viz/views/interact.py): a notebook function's controls, then what it returned (a
// plotly figure, HTML or text) and a message line. runtime.js draws all of it; this module adds only the
// book's answer to a change without a kernel.
//
// The book, no kernel: the view saved `data.answers`, the function's answer to every combination of its
// controls' values (computed when it was built, when there were few), keyed by `data.controls`' parts in
// order: a menu's index, a checkbox's true/false, a slider's step number, a text box's text (the same rule as
// interact.py's `_key_part`). A change whose key was saved is looked up; any other (a new text) returns null,
// and the page says that it needs a live notebook.

export { drawFigure, renderView };

export default {
  render(ctx) {
    return renderView(ctx);
  },
};

const SLIDERS = new Set(["intslider", "floatslider", "inttext", "play"]);

function part(spec) {
  if ("labels" in spec) return spec.index ?? null;
  if (spec.kind === "checkbox" || spec.kind === "toggle") return !!spec.value;
  if (SLIDERS.has(spec.kind)) return Math.round((spec.value - spec.min) / (spec.step || 1));
  return spec.value;
}

// A person's change applied to a control's spec, as Python's control would take it.
function changed(spec, value) {
  const s = { ...spec };
  if ("labels" in s) {
    if (!Number.isInteger(value) || value < 0 || value >= s.labels.length) return null;
    s.index = value;
  } else if (s.kind === "checkbox" || s.kind === "toggle") {
    s.value = !!value;
  } else if (SLIDERS.has(s.kind)) {
    const v = Math.max(s.min, Math.min(s.max, +value));
    if (!Number.isFinite(v)) return null;
    s.value = s.kind === "floatslider" ? v : Math.round(v);
  } else {
    if (typeof value !== "string") return null;
    s.value = value;
  }
  return s;
}

export function offline(state, ev) {
  const d = state.data || {};
  if (!d.answers || !Array.isArray(d.controls) || !d.controls.includes(ev.id) || ev.click) return null;
  const spec = changed(state.nodes[ev.id], ev.value);
  if (!spec) return null;
  const nodes = { ...state.nodes, [ev.id]: spec };
  const answer = d.answers[JSON.stringify(d.controls.map((id) => part(nodes[id])))];
  if (!answer) return null;
  const content = { ...state.content };
  for (const [id, pane] of Object.entries(answer.content || {})) {
    const rev = ((state.content[id] || {}).rev || 0) + 1;       // a new rev: the runtime redraws the pane
    if (pane) content[id] = { ...pane, rev };
    else delete content[id];
  }
  for (const [id, patch] of Object.entries(answer.nodes || {})) if (nodes[id]) nodes[id] = { ...nodes[id], ...patch };
  return { nodes, content };
}
