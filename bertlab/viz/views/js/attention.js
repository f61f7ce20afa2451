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
    return renderView(ctx);
  },
};
