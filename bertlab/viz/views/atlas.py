"""HeadAtlasView (notebook 13): every head on one map, placed by behaviour; pick one to see its attention.

    v = HeadAtlasView(bertlab.head_atlas(model, tok, texts))
    v.select(4, 9)                  # what clicking the point "4.9" does (or choosing it in the menu)
    v.selected, v.figure            # (4, 9), its attention on the example sentence as a go.Figure
    v.example.value = 1             # the second example sentence

Why this shape: the atlas's numbers (bertlab.inside.atlas) place heads by how alike their attention is over
a whole corpus, and a map is only worth reading if any point opens on what that head does. The map colours
each head by its label (its strongest measure, or broad / mixed); the menu and a click on a point choose a
head; its pattern on the atlas's example sentences shows beside it.

Live in the book without a kernel: every head's pattern on the example sentences is small (layers × heads ×
T × T floats, a few hundred KB for bertlab-mini), so the view keeps them in its `data`, and js/atlas.js
answers a click or a menu change in the page from them (`offline`), drawing exactly what Python draws.
"""

from __future__ import annotations

import html
import logging
import numbers

from ...inside.atlas import HeadAtlas
from . import controls as W
from .base import View, show_figure, typed_array

logger = logging.getLogger(__name__)

__all__ = ["HeadAtlasView"]


def _whole(name: str, value, n: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not -n <= value < n:
        raise ValueError(f"{name} must be a whole number in 0 … {n - 1} ({what}), got {value!r}")
    return int(value) % n


class HeadAtlasView:
    """The atlas's map of heads (coloured by label) beside one head's attention on an example sentence.

    `atlas`: a HeadAtlas (bertlab.head_atlas). `layer`, `head`: the head shown first; `example`: which of the
    atlas's example sentences (0 … len(atlas.examples) − 1). `head_menu.value` is the flat index
    layer · heads + head, as a click on the map sends it.
    """

    module = "atlas"

    def __init__(self, atlas: HeadAtlas, layer: int = 0, head: int = 0, example: int = 0):
        if not isinstance(atlas, HeadAtlas):
            raise ValueError(f"HeadAtlasView takes a HeadAtlas (bertlab.head_atlas(model, tokenizer, texts)), got "
                             f"{type(atlas).__name__}")
        L, H = atlas.shape
        if not atlas.examples:
            raise ValueError("this atlas kept no example sentences to draw a head's attention on: make it with "
                             "bertlab.head_atlas on at least one text")
        layer = _whole("layer", layer, L, f"this model has {L} layers")
        head = _whole("head", head, H, f"{H} heads in each layer")
        example = _whole("example", example, len(atlas.examples),
                         f"the atlas kept {len(atlas.examples)} example sentences")
        self.atlas = atlas
        self.error: str | None = None
        self.figure = self.map_figure = None
        self._ringed: tuple[int, int] | None = None
        self.message = W.HTML("")
        options = [(f"layer {l}, head {h} · {atlas.labels[l][h]}", l * H + h) for l in range(L) for h in range(H)]
        self.head_menu = W.Dropdown(options=options, value=layer * H + head, description="head")
        self.example = W.ToggleButtons(options=[(f"sentence {i + 1}", i) for i in range(len(atlas.examples))],
                                       value=example, description="example")
        self.info = W.HTML("")
        self.map_out, self.out = W.Output(), W.Output()
        self._infos = [self._info(l, h) for l in range(L) for h in range(H)]
        self.view = View(W.VBox([W.HBox([self.head_menu, self.example],
                                        layout=W.Layout(flex_flow="row wrap", align_items="center")),
                                 self.info, self.message,
                                 W.HBox([self.map_out, self.out], layout=W.Layout(flex_flow="row wrap"))]),
                         module=self.module)
        self.view.data = self._data()
        self.head_menu.observe(lambda _: self._run(), names="value")
        self.example.observe(lambda _: self._run(), names="value")
        self._run()

    # -- display: the view itself
    def _repr_mimebundle_(self, **kwargs):
        return self.view._repr_mimebundle_(**kwargs)

    def _ipython_display_(self):
        from IPython.display import display
        display(self.view)

    def __repr__(self) -> str:
        return f"HeadAtlasView(selected={self.selected}, example={self.example.value})"

    # -- what Python drives and reads
    @property
    def selected(self) -> tuple[int, int]:
        H = self.atlas.shape[1]
        return divmod(self.head_menu.value, H)

    def select(self, layer: int, head: int) -> None:
        """Show head (layer, head), as a click on its point does; negative indexes count from the end."""
        L, H = self.atlas.shape
        layer = _whole("layer", layer, L, f"this model has {L} layers")
        head = _whole("head", head, H, f"{H} heads in each layer")
        self.head_menu.value = layer * H + head

    # -- drawing
    def _info(self, l: int, h: int) -> str:
        a = self.atlas
        shares = sorted(((m, float(a.share[m][l, h])) for m in a.share), key=lambda kv: -kv[1])[:3]
        near = ", ".join(f"{nl}.{nh}" for nl, nh, _ in a.nearest(l, h, 3))
        return (f"<span style='color:#33475b'><b>layer {l}, head {h}</b>: {html.escape(a.labels[l][h])}; sharpness "
                f"{float(a.sharpness[l, h]):.2f}; " + ", ".join(f"{html.escape(m)} {s:.2f}" for m, s in shares)
                + f"; behaves most like {near}</span>")

    def _data(self) -> dict:
        """What js/atlas.js needs to answer a click or a menu change without a kernel (the book)."""
        from ..figures.look import token_labels
        L, H = self.atlas.shape
        return {"controls": {"head": self.head_menu.id, "example": self.example.id},
                "panes": {"map": self.map_out.id, "attention": self.out.id, "info": self.info.id},
                "shape": [L, H], "labels": [lab for row in self.atlas.labels for lab in row],
                "coords": typed_array(self.atlas.coords), "infos": self._infos,
                "examples": [{"labels": token_labels(tokens), "attention": typed_array(att)}
                             for tokens, att in self.atlas.examples]}

    def _run(self) -> bool:
        """Redraw for the current head and sentence; an error becomes the message line, never a traceback."""
        try:
            self._update()
            self.error = None
            self.message.value = ""
            return True
        except Exception as e:
            logger.debug("HeadAtlasView failed", exc_info=True)
            self.error = str(e) if isinstance(e, ValueError) else f"something went wrong: {type(e).__name__}: {e}"
            self.message.value = (f'<div style="color:#9f1c1c;background:#fdecea;padding:4px 8px;border-radius:4px">'
                                  f"{html.escape(self.error, quote=False)}</div>")
            return False

    def _update(self) -> None:
        from ...inside.figures import atlas_head_figure, atlas_map_figure  # inside.figures imports bertlab.viz
        layer, head = self.selected
        self.info.value = self._infos[self.head_menu.value]
        self.figure = atlas_head_figure(self.atlas, layer, head, self.example.value)
        with self.view.hold_sync():
            if self.map_figure is None:
                self.map_figure = atlas_map_figure(self.atlas, layer, head)
                show_figure(self.map_out, self.map_figure)
            elif self._ringed != (layer, head):
                # only the ring moves: the points stay as they were built (atlas_map_figure rings the same place)
                at = self.atlas.coords[layer * self.atlas.shape[1] + head]
                self.map_figure.data[-1].update(x=[float(at[0])], y=[float(at[1])])
                show_figure(self.map_out, self.map_figure)
            self._ringed = (layer, head)
            show_figure(self.out, self.figure)
