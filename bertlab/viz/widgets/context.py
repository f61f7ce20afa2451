"""ContextExplorer (notebook 07): one word in several sentences, and how far apart its vectors are, layer by layer.

    w = ContextExplorer("bank", ["We sat on the river bank. | river", "The bank pays interest. | money"])
    w.layer.value = 0                  # at the embedding output every "bank" is the same vector
    w.show.value = "projection 2-D"    # a PCA of the vectors, coloured by sense
"""

from __future__ import annotations

from collections.abc import Sequence

from ... import probe
from .. import figures as F
from ..views import controls as W
from .base import Widget, controls_row, show_figure, text_arg

__all__ = ["ContextExplorer", "BANK"]


BANK = ["Grace walked along the muddy bank of the river. | river",
        "The ducks rested on the grassy bank near the water. | river",
        "Tom went to the bank to open a savings account. | money",
        "The bank pays a small amount of interest each year. | money"]


class ContextExplorer(Widget):
    """One word in several sentences: how far apart its vectors are, layer by layer.

    `sentences` go one per line; end a line with `| sense` (e.g. `... river bank. | river`) to colour the
    projection by sense. The word's vectors at every layer are computed once per (word, sentences); the
    layer slider only picks one (`vectors` is (n, L + 1, H), `distances` (L + 1, n, n)). `show` picks the
    figure: the cosine matrix at the layer, the drift of every context across layers, or a 2-D PCA.
    """

    VIEWS = ("cosine matrix", "drift by layer", "projection 2-D")

    module = "view"

    def __init__(self, word: str = "bank", sentences: Sequence[str] | str | None = None,
                 senses: Sequence[str] | None = None, model="minilm", layer: int = -1):
        word = text_arg("word", word)
        if sentences is not None and not isinstance(sentences, str) and (
                not isinstance(sentences, Sequence) or not all(isinstance(s, str) for s in sentences)):
            raise ValueError(f"sentences must be a list of str (or one str, a sentence per line), got {sentences!r}")
        super().__init__(model)
        lines = BANK if sentences is None else sentences.splitlines() if isinstance(sentences, str) else sentences
        if senses is not None:
            if isinstance(senses, str) or not isinstance(senses, Sequence):
                raise ValueError(f"senses must be a list of labels, one per sentence, got {type(senses).__name__}")
            lines = [line for line in lines if str(line).strip()]   # blank lines are not sentences: none gets a sense
            if len(senses) != len(lines):
                raise ValueError(f"got {len(lines)} sentences but {len(senses)} senses: pass one sense per "
                                 "sentence ('' for one without), or end each sentence line with '| sense'")
            lines = [f"{s} | {k}" for s, k in zip(lines, senses)]
        self.word = W.Text(value=word, description="word", continuous_update=False)
        self.sentences = W.Textarea(value="\n".join(lines), description="sentences",
                                    placeholder="one sentence per line; optionally end with | sense",
                                    continuous_update=False, layout=W.Layout(width="95%", height="8em"))
        self.show = W.ToggleButtons(options=self.VIEWS, value=self.VIEWS[0], style=dict(button_width="auto"))
        self.vectors = self.distances = None
        self.contexts: list[str] = []
        self.senses: list[str] | None = None
        self._keys = {}
        self._layer_sliders(layer)
        self._start([controls_row(self.model_select, self.word), self.sentences,
                    controls_row(self.show, self.layer), self.message, self.out],
                    watch=[self.word, self.sentences, self.layer, self.show])

    def _fail(self, text: str) -> None:
        super()._fail(text)
        self._keys = {}
        self.vectors = self.distances = None

    def _forget(self) -> None:
        super()._forget()
        self._keys = {}

    def _parse(self) -> tuple[list[str], list[str] | None]:
        texts, senses = [], []
        for line in self.sentences.value.splitlines():
            if not line.strip():
                continue
            text, _, sense = line.partition("|")
            texts.append(text.strip())
            senses.append(sense.strip())
        if not texts:
            raise ValueError("no sentences: write one sentence per line, each using the word")
        return texts, senses if any(senses) else None

    def _update(self) -> None:
        word = self.word.value.strip()
        if not word:
            raise ValueError("the word is empty: type the word to follow, e.g. bank")
        texts, senses = self._parse()
        for i, t in enumerate(texts):
            n = len(self.tokenizer(t))
            if n > self._limit():
                raise ValueError(f"sentence {i + 1} is {n} tokens; {self.display_name} takes at most "
                                 f"{self._limit()} — shorten it")
        key = (id(self.model), word, tuple(texts))
        if self._keys.get("vectors") != key:
            try:
                self.vectors = probe.word_vectors(self.model, self.tokenizer, texts, word, layer="all")   # (n, L+1, H)
            except ValueError as e:
                raise ValueError(_missing_word(str(e), word, texts)) from None
            self.distances = probe.cosine_distances(self.vectors)                              # (L+1, n, n)
            self._keys = {"vectors": key}
        self.contexts, self.senses = texts, (senses and [s or "?" for s in senses])
        layer, view = self.layer.value, self.show.value
        if view == self.VIEWS[0]:
            fig_key = ("matrix", key)
            if self.figure is not None and self._keys.get("figure") == fig_key:
                self._patch_matrix(layer)
            else:
                self.figure = F.cosine_matrix(self.distances, texts, word=word, layer=layer)
        elif view == self.VIEWS[1]:
            if len(texts) < 2:
                raise ValueError("drift needs at least two sentences to compare")
            fig_key = ("drift", key)
            if self._keys.get("figure") != fig_key or self.figure is None:
                self.figure = F.drift_by_layer(self.vectors, texts, word=word)
        else:
            if len(texts) < 2:
                raise ValueError("a projection needs at least two sentences")
            fig_key = ("projection", key, layer, tuple(self.senses or ()))
            self.figure = F.projection_2d(self.vectors, texts, self.senses, word=word, layer=layer)
        self._keys["figure"] = fig_key
        show_figure(self.out, self.figure)

    def _patch_matrix(self, layer: int) -> None:
        # what figures.cosine_matrix builds for another layer: only z and the colour range move
        d = self.distances[layer]
        with self.figure.batch_update():
            self.figure.data[0].z = d.numpy()
            self.figure.data[0].zmax = max(float(d.max()), 1e-6)


def _missing_word(error: str, word: str, texts: list[str]) -> str:
    """word_vectors' message is thorough (it lists every token); the widget names the sentence briefly."""
    for i, t in enumerate(texts):
        if f"sentence {i} (" in error and "is not a word of" in error:
            return (f"'{word}' is not a word of sentence {i + 1} ('{t}'): use the word as written in every "
                    "sentence (whole words: 'bank' does not match 'banks'), or drop that sentence")
    return error
