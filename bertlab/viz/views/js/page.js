// The book's in-page runtime: every view on a lesson page, live without a kernel.
//
// Each `.bl-embed` holds the state an executed notebook saved for one view (its ES module `_esm` included,
// binary buffers as base64). This script gives each a small model object with the part of anywidget's model
// that `render({model, el})` uses (get, set, save_changes, on, off), imports the view's own module from that
// state (a blob: URL, nothing fetched) and renders it. A person's change arrives as `event`, as it would in a
// kernel; here the view module's `offline(state, event)` (when it has one) answers it from the saved data
// (the attention view: layer, head, combine, words, [CLS]/[SEP], threshold all recomputed in the page); a
// change that needs the model (a new text) is refused with a note saying how to run the lesson live.
//
// Another data source (issue 29's in-page ONNX model) plugs in the same way: call
// `globalThis.__bertlab.mountView(el, state, answer)` with an `answer(state, event)` of its own.
(function () {
  const G = (globalThis.__bertlab = globalThis.__bertlab || {});
  if (G.pageRuntime) return;
  G.pageRuntime = true;

  function b64(data) {
    const bin = atob(data);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new DataView(bytes.buffer);
  }

  function restoreBuffers(state, buffers) {
    for (const b of buffers || []) {
      let o = state;
      for (const k of b.path.slice(0, -1)) o = o[k];
      o[b.path[b.path.length - 1]] = b64(b.data);
    }
    return state;
  }

  function makeModel(state, answer, onRefused) {
    const handlers = {};
    const fire = (name) => (handlers["change:" + name] || []).slice().forEach((fn) => fn());
    const changed = new Set();
    return {
      get: (k) => state[k],
      set: (k, v) => { state[k] = v; changed.add(k); },
      save_changes() {
        const keys = [...changed];
        changed.clear();
        if (!keys.includes("event")) return;
        const ev = state.event;
        const update = answer(state, ev);
        if (update) {
          Object.assign(state, update, { done: ev.n });
          for (const k of Object.keys(update)) fire(k);
        } else {
          state.done = ev.n;
          onRefused(ev);
          fire("nodes");                       // the control goes back to the value the page can show
        }
        fire("done");
      },
      on: (name, fn) => { (handlers[name] = handlers[name] || []).push(fn); },
      off: (name, fn) => { handlers[name] = (handlers[name] || []).filter((f) => f !== fn); },
      send() {},
    };
  }

  async function mountView(el, state, answer) {
    // a saved state's panes are its `content` (which the book sanitised); a `patch` (what a person's last
    // change in a live notebook altered) is not shown here
    state.patch = {};
    const url = URL.createObjectURL(new Blob([state._esm], { type: "text/javascript" }));
    const mod = await import(url);
    URL.revokeObjectURL(url);
    const note = document.createElement("p");
    note.className = "bl-needs-model";
    note.hidden = true;
    const refused = () => {
      note.hidden = false;
      note.textContent = "That change needs the model, which runs only in a live notebook: this page shows " +
        "what the notebook computed, and every setting it could compute ahead. Run the lesson live to type " +
        "your own text (see below).";
    };
    const own = mod.offline ? (s, ev) => mod.offline(s, ev) : () => null;
    const model = makeModel(state, answer || own, refused);
    mod.default.render({ model, el });
    el.appendChild(note);
    return model;
  }
  G.mountView = mountView;

  function mountAll() {
    document.querySelectorAll(".bl-embed:not([data-mounted])").forEach((el) => {
      el.dataset.mounted = "1";
      const data = el.querySelector("script.bl-embed-state");
      if (!data) return;
      const saved = JSON.parse(data.textContent);
      const host = document.createElement("div");
      el.appendChild(host);
      mountView(host, restoreBuffers(saved.state, saved.buffers)).catch((err) => {
        el.dataset.error = String(err);
        console.error("bertlab view", err);
      });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
  else mountAll();
})();
