"""MaskingLab (notebook 04): re-draw BERT's 15 % / 80-10-10 masking of a sentence and count what happens.

    w = MaskingLab("The river was low after a long dry summer.")
    w.draw(100)                        # 100 more corruptions of the same text
    w.rates                            # {"chosen": 0.15..., "mask": 0.80..., "random": 0.10..., "kept": 0.09...}
"""

from __future__ import annotations

import html
import numbers

import torch

from ...pretraining.masking import mask_tokens
from ...probe.masking import masking_fate
from .. import figures as F
from ..views import controls as W
from .base import WIDE, Widget, controls_row, show_figure, text_arg, whole_arg

__all__ = ["MaskingLab"]


class MaskingLab(Widget):
    """Re-draw BERT's masked-LM corruption of a sentence and watch the running counts settle on the rates.

    `draw(n)` (the "re-draw" and "draw 100" buttons) corrupts the text n more times with `mask_tokens`
    and one persistent generator; `counts` and `rates` are the running totals since the text (or a
    setting) last changed: chosen / candidate tokens → 15 %, and [MASK] / random / kept among the chosen →
    80 / 10 / 10. A random draw that happens to equal the original counts as kept, as in the figure.
    """

    default_model = "bertlab-tiny"
    TARGETS = {"chosen": 0.15, "mask": 0.8, "random": 0.1, "kept": 0.1}
    MAX_DRAWS = 10_000       # per call: the n draws are corrupted at once, as one (n, T) tensor

    module = "view"

    def __init__(self, text: str = "The river was low after a long dry summer, and brown leaves floated past "
                                   "the ducks near the far shore.",
                 model="bertlab-tiny", seed: int = 0):
        text, seed = text_arg("text", text), whole_arg("seed", seed, 0, 2**63 - 1)
        super().__init__(model)
        self.text = W.Text(value=text, description="text", layout=WIDE)
        self.mode = W.ToggleButtons(options=[("dynamic (each token 15 %)", "dynamic"),
                                             ("bert (exactly 15 % per text)", "bert")], value="dynamic",
                                    description="choose", style=dict(button_width="auto"))
        self.whole_word = W.Checkbox(value=False, description="whole-word masking", indent=False, layout=W.Layout(width="auto"))
        self.redraw = W.Button(description="re-draw", icon="refresh", button_style="primary")
        self.draw100 = W.Button(description="draw 100", icon="forward")
        self.reset_button = W.Button(description="reset counts")
        self.stats = W.HTML()
        self.generator = torch.Generator().manual_seed(seed)
        self.inputs = self.labels = None
        self._enc = None
        self.reset()
        self.redraw.on_click(lambda _: self._run(self.draw, 1))
        self.draw100.on_click(lambda _: self._run(self.draw, 100))
        self.reset_button.on_click(lambda _: self._run(self._reset_and_draw))
        self._start([controls_row(self.model_select), self.text,
                    controls_row(self.mode, self.whole_word),
                    controls_row(self.redraw, self.draw100, self.reset_button),
                    self.message, self.stats, self.out],
                    watch=[self.text, self.mode, self.whole_word])

    def reset(self) -> None:
        self.counts = dict(draws=0, candidates=0, chosen=0, mask=0, random=0, kept=0)
        self._show_stats()

    @property
    def rates(self) -> dict[str, float]:
        c = self.counts
        per = lambda a, b: a / b if b else float("nan")  # noqa: E731
        return dict(chosen=per(c["chosen"], c["candidates"]), mask=per(c["mask"], c["chosen"]),
                    random=per(c["random"], c["chosen"]), kept=per(c["kept"], c["chosen"]))

    def _reset_and_draw(self) -> None:
        self.reset()
        self.draw(1)

    def _update(self) -> None:
        self._enc = None
        self.reset()
        self._enc = self._encode(self.text.value)
        self.draw(1)

    def draw(self, n: int = 1) -> None:
        """Corrupt the text `n` more times (1 … MAX_DRAWS), add to the counts, and show the last draw."""
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 1 <= n <= self.MAX_DRAWS:
            raise ValueError(f"draw takes a whole number of draws from 1 to {self.MAX_DRAWS:,}, got {n!r}: "
                             "e.g. draw(100); call it again for more")
        n = int(n)
        if self._enc is None:
            self._update_checked()                        # raises the message of a bad text
            if n == 1:
                return
            n -= 1
        enc, tok = self._enc, self.tokenizer
        ids = torch.tensor(enc.input_ids).expand(n, len(enc))                  # (n, T)
        inputs, labels = mask_tokens(ids, tok, generator=self.generator, mode=self.mode.value,
                                     whole_word=self.whole_word.value)
        fate = masking_fate(inputs, labels, tok)                  # (n, T): probe's rule, the figure's too
        never = torch.tensor([tok.cls_id, tok.sep_id, tok.pad_id, tok.mask_id])
        c = self.counts
        c["draws"] += n
        c["candidates"] += n * int((~torch.isin(ids[0], never)).sum())
        c["chosen"] += int((fate > 0).sum())
        c["mask"] += int((fate == 1).sum())
        c["random"] += int((fate == 2).sum())
        c["kept"] += int((fate == 3).sum())
        self.inputs, self.labels = inputs[-1], labels[-1]
        self.figure = F.masking_figure(enc.tokens, self.inputs, self.labels, tok)
        show_figure(self.out, self.figure)
        self._show_stats()

    def _show_stats(self) -> None:
        c, r = self.counts, self.rates
        if not c["draws"]:
            self.stats.value = ""
            return
        pct = lambda x: "–" if x != x else f"{100 * x:.1f} %"  # noqa: E731
        rows = [("chosen", f"{c['chosen']} of {c['candidates']} candidate tokens", r["chosen"], 0.15),
                ("→ [MASK]", f"{c['mask']} of {c['chosen']} chosen", r["mask"], 0.8),
                ("→ random token", f"{c['random']} of {c['chosen']} chosen", r["random"], 0.1),
                ("→ kept", f"{c['kept']} of {c['chosen']} chosen", r["kept"], 0.1)]
        cells = "".join(f"<tr><td>{html.escape(a)}</td><td>{b}</td><td><b>{pct(x)}</b></td><td>{pct(t)}</td></tr>"
                        for a, b, x, t in rows)
        self.stats.value = (f"<table style='border-collapse:collapse'><tr><th align=left>after {c['draws']} "
                            "draws</th><th align=left>count</th><th>rate</th><th>target</th></tr>"
                            f"{cells}</table>")
