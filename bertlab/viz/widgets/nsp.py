"""NSPExplorer (notebook 05): sentence A, sentence B → P(IsNext), the NSP head's verdict on the pair.

    w = NSPExplorer("It rained all day.", "The river rose.")
    w.probability                      # probe.next_sentence(model, tokenizer, a, b)
    w.swap.click()                     # B before A: usually less likely
"""

from __future__ import annotations

from ... import probe
from .. import figures as F
from ..views import controls as W
from .base import WIDE, Widget, controls_row, show_figure, text_arg

__all__ = ["NSPExplorer"]


class NSPExplorer(Widget):
    """Sentence A, sentence B → P(IsNext), the NSP head's belief that B followed A in the original text."""

    default_model = "bertlab-mini"

    module = "view"

    def __init__(self, a: str = "Grace walked along the muddy bank with her brother.",
                 b: str = "Brown leaves floated past them on the slow current.", model="bertlab-mini"):
        a, b = text_arg("a", a), text_arg("b", b)
        super().__init__(model)
        self.a = W.Text(value=a, description="A", layout=WIDE)
        self.b = W.Text(value=b, description="B", layout=WIDE)
        self.swap = W.Button(description="swap A and B", icon="exchange")
        self.swap.on_click(lambda _: self._run(self._swap))
        self.probability: float | None = None
        self._start([controls_row(self.model_select, self.switch, self.swap), self.a, self.b,
                    self.message, self.out],
                    watch=[self.a, self.b])

    def _swap(self) -> None:
        with self._hold():
            self.a.value, self.b.value = self.b.value, self.a.value
        self._update_checked()

    def _fail(self, text: str) -> None:
        super()._fail(text)
        self.probability = None

    def _update(self) -> None:
        a, b = self.a.value, self.b.value
        if not probe.has_nsp_head(self.model):
            raise self._no_head("next-sentence", "judge whether B follows A")
        self._offer_switch(False)
        self._encode(a, what="sentence A")
        self._encode(b, what="sentence B")
        self._encode(a, b, what="pair A + B")
        self.probability = probe.next_sentence(self.model, self.tokenizer, a, b)
        self.figure = F.nsp_figure(self.probability, a, b)
        show_figure(self.out, self.figure)
