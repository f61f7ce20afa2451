"""MaskPlayground (notebook 04): click a token to hide it behind [MASK] → the model's guesses, layer by layer.

    w = MaskPlayground("She deposited her money in the bank.", mask="bank")
    w.predictions                      # [Guess("bank", 0.6...), ...]: the top-k for the hidden token
    w.mask("money")                    # hide another one (a position or a token)
"""

from __future__ import annotations

import plotly.graph_objects as go

from ... import probe
from .. import figures as F
from ..views import controls as W
from .base import WIDE, Widget, controls_row, show_figure, text_arg, whole_arg

__all__ = ["MaskPlayground"]


class MaskPlayground(Widget):
    """Click a token to hide it behind [MASK] → the model's top-k guesses, and what each layer would guess.

    The click replaces that token's id with [MASK] (no re-tokenizing), runs the model once and reads every
    layer's hidden state at that position through the MLM head. `mask(i)` does the same from Python
    (i = token position, as in `tokens_list`, or a token such as "bank"); `mask=` picks the first one.
    `result` is a `probe.FillMask`, `predictions` its top-k as `Guess`es (token, probability).
    """

    default_model = "bertlab-mini"

    module = "view"

    def __init__(self, text: str = "Grace walked along the muddy bank of the river with her old dog.",
                 model="bertlab-mini", top_k: int = 5, mask: int | str | None = "bank"):
        text, top_k = text_arg("text", text), whole_arg("top_k", top_k, 1, 20, " (guesses shown)")
        if mask is not None and not isinstance(mask, str):
            mask = whole_arg("mask", mask, 1, what=" (a token position), a token such as 'bank', or None")
        super().__init__(model)
        self.text = W.Text(value=text, description="text", layout=WIDE)
        self.tokens = W.ToggleButtons(options=[], value=None, description="mask:",
                                      style=dict(button_width="auto"))
        self.top_k = W.IntSlider(value=top_k, min=1, max=20, description="top k")
        self.layers_out = W.Output()
        self.result: probe.FillMask | None = None
        self.layers_figure: go.Figure | None = None
        self.tokens_list: list[str] = []
        self._enc = None
        self._initial_mask = mask
        self.view = self._make_view([controls_row(self.model_select, self.switch), self.text, self.tokens,
                            self.top_k, self.message,
                            # side by side where there is room, the per-layer figure below where there is not
                            W.HBox([self.out, self.layers_out], layout=W.Layout(flex_flow="row wrap"))])
        self._watch(self.text, handler=self._new_text)
        self._watch(self.tokens, self.top_k)
        self._run(self._new_text)

    @property
    def predictions(self) -> list[probe.Guess] | None:
        """The top-k guesses for the masked token (`Guess`: token, probability), most probable first."""
        if self.result is None:
            return None
        return list(self.result.guesses[0])

    @property
    def masked(self) -> int | None:
        return self.tokens.value

    def mask(self, i: int | str | None) -> None:
        """Mask token position `i` (positions count from [CLS] = 0), or the first token equal to `i` if a
        str; None unmasks."""
        if isinstance(i, str):
            word, i = i, self._position_of(i)
            if i is None:
                tokens = ", ".join(t for t, _ in self.tokens.options)
                self._fail(f"{word!r} is not one of the text's tokens ({tokens})")
                return
        if i is not None and i not in {v for _, v in self.tokens.options}:
            self._fail(f"position {i} cannot be masked: choose one of the word pieces, positions 1 … "
                       f"{len(self.tokens_list) - 2} ([CLS] and [SEP] are never masked)")
            return
        if i == self.tokens.value:
            self._run(self._update_checked)
        else:
            self.tokens.value = i

    def _fail(self, text: str) -> None:
        super()._fail(text)
        self.result = self.layers_figure = None
        show_figure(self.layers_out, None)

    def _position_of(self, token: str) -> int | None:
        return next((v for t, v in self.tokens.options if t in (token, token.lower())), None)

    def _model_changed(self) -> None:
        self._set_tokens()

    def _new_text(self) -> None:
        self._set_tokens()
        self._update_checked()

    def _set_tokens(self) -> None:
        """Turn the text into one button per maskable token (the text's own [MASK] pre-selected)."""
        with self._hold():
            self._set_tokens_held()

    def _set_tokens_held(self) -> None:
        keep = self.tokens.value
        self._enc = None
        self.tokens_list = []
        self.tokens.options = []
        self.tokens.value = None
        if self.tokenizer is None or not self.text.value.strip():
            return
        enc = self.tokenizer(self.text.value)
        self.tokens_list = enc.tokens
        if len(enc) > self._limit():
            return                                          # _update says what is wrong
        self._enc = enc
        self.tokens.options = [(t, i) for i, t in enumerate(enc.tokens) if 0 < i < len(enc) - 1]
        special = {self.tokenizer.cls_id, self.tokenizer.sep_id, self.tokenizer.pad_id}
        # the position asked for, else the text's own [MASK], else the position masked before
        if isinstance(self._initial_mask, str):
            self._initial_mask = next((i for i, t in enumerate(enc.tokens) if t in (self._initial_mask,
                                       self._initial_mask.lower())), None)
        in_text = next((i for i, t in enumerate(enc.input_ids) if t == self.tokenizer.mask_id), None)
        choice = next((c for c in (self._initial_mask, in_text, keep)
                       if c is not None and 0 < c < len(enc) - 1), None)
        self._initial_mask = None
        if choice is not None and enc.input_ids[choice] not in special:
            self.tokens.value = choice

    def _update(self) -> None:
        self._encode(self.text.value)
        if not probe.has_mlm_head(self.model):
            raise self._no_head("masked-LM", "guess a hidden word")
        self._offer_switch(False)
        if self._enc is None:
            self._set_tokens()
        i = self.tokens.value
        if i is None:
            self.result = self.layers_figure = self.figure = None
            show_figure(self.out, None)
            show_figure(self.layers_out, None)
            self.say("click a token to hide it behind [MASK]")
            return
        self.result = probe.fill_mask(self.model, self.tokenizer, self.text.value, top_k=self.top_k.value,
                                      by_layer=True, positions=[i])
        self.figure = F.fill_mask_figure(self.result)
        self.layers_figure = F.fill_mask_layers_figure(self.result)
        show_figure(self.out, self.figure)
        show_figure(self.layers_out, self.layers_figure)
