// The generic view: controls, HTML and plotly figures, as Python (or a page's data source) computed them.
// Used by every view that needs nothing beyond what runtime.js draws.

export { drawFigure, renderView };

export default {
  render(ctx) {
    return renderView(ctx);
  },
};
