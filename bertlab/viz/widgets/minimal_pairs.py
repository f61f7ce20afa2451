"""MinimalPairs (notebook 12): two sentences one word apart, what that word does to the [MASK], and where in
the model the difference travels.

    w = MinimalPairs("Tom went to the [MASK] to open a savings account.",
                     "Tom went to the [MASK] to open a birthday present.")
    w.comparison.shifts                # probe.compare_fill: the words that moved most, P in each text
    w.patch_button.click()             # probe.patch on the pair: w.patching.effect, w.patch_figure

Editing either sentence redraws the shift chart at once (two forward passes). The patching sweep (~100 patched
runs in one batch, a third of a second on bertlab-mini) runs on a click; once a heatmap is on screen, each edit
(and each change of site or direction) redraws it for the new pair, or says why the new pair cannot be
patched. Sentence a is the clean run, b the
corrupt one.
"""

from __future__ import annotations

import html

import plotly.graph_objects as go

from ... import probe
from ...probe.minimal_pairs import FillComparison, compare_fill
from ...probe.patching import DIRECTIONS, SITES, Patching, patch
from .. import figures as F
from ..views import controls as W
from .base import WIDE, Widget, controls_row, show_figure

__all__ = ["MinimalPairs"]


class MinimalPairs(Widget):
    """Two editable sentences with one [MASK] each → the shift chart; "patch" → a layer × position heatmap.

    `comparison` (a `FillComparison`) and `figure` follow the sentences; `patching` (a `Patching`) and
    `patch_figure` follow the patch button, with `site` ("resid", "attn", "mlp", "head") and `direction`
    ("denoise": clean activations into the corrupt run; "noise": the reverse).
    """

    default_model = "bertlab-mini"
    module = "view"

    def __init__(self, text_a: str = "Tom went to the [MASK] to open a savings account.",
                 text_b: str = "Tom went to the [MASK] to open a birthday present.", model="bertlab-mini",
                 site: str = "resid", direction: str = "denoise", top_k: int = 8):
        for name, value in (("text_a", text_a), ("text_b", text_b)):
            if not isinstance(value, str):
                raise ValueError(f"{name} must be a str (a sentence with one [MASK]), got {type(value).__name__}")
        if site not in SITES:
            raise ValueError(f"site must be one of {', '.join(SITES)}, got {site!r}")
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be 'denoise' or 'noise', got {direction!r}")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 50:
            raise ValueError(f"top_k must be an int from 1 to 50, got {top_k!r}")
        super().__init__(model)
        self.top_k = top_k
        self.text_a = W.Text(value=text_a, description="a (clean)", layout=WIDE)
        self.text_b = W.Text(value=text_b, description="b (corrupt)", layout=WIDE)
        self.site = W.Dropdown(options=[("residual stream", "resid"), ("attention output", "attn"),
                                        ("feed-forward output", "mlp"), ("attention heads", "head")],
                               value=site, description="patch")
        self.direction = W.ToggleButtons(options=list(DIRECTIONS), value=direction,
                                         tooltips=["clean activations into the corrupt run",
                                                   "corrupt activations into the clean run"])
        self.patch_button = W.Button(description="patch", icon="exchange", button_style="primary",
                                     tooltip="patch every cell from one run into the other (one batched pass)")
        self.patch_button.on_click(lambda _: self._run(self._click_patch))
        self.summary = W.HTML()
        self.patch_out = W.Output()
        self.comparison: FillComparison | None = None
        self.patching: Patching | None = None
        self.patch_figure: go.Figure | None = None
        self._live = False          # after the first patch, every edit (sentences, site, direction) redraws it
        self._start([controls_row(self.model_select, self.switch), self.text_a, self.text_b, self.summary,
                     self.message, self.out, controls_row(self.site, self.direction, self.patch_button),
                     self.patch_out],
                    watch=[self.text_a, self.text_b])
        self._watch(self.site, self.direction, handler=self._repatch)

    def _repatch(self) -> None:
        """A new site or direction: redraw the heatmap if one was asked for, else just drop the stale one."""
        self._forget_patching()
        if self._live and self.comparison is not None:
            self._click_patch(after_edit=True)

    def _forget_patching(self) -> None:
        """Drop the heatmap: it belonged to the previous sentences, site or direction."""
        self.patching = self.patch_figure = None
        show_figure(self.patch_out, None)

    def _fail(self, text: str) -> None:
        super()._fail(text)
        self.comparison = None
        self.summary.value = ""

    def _update(self) -> None:
        self._forget_patching()
        if not probe.has_mlm_head(self.model):
            raise self._no_head("masked-LM", "fill in a [MASK]")
        self._offer_switch(False)
        a, b = self.text_a.value, self.text_b.value
        self._encode(a, what="sentence a")
        self._encode(b, what="sentence b")
        self.comparison = compare_fill(self.model, self.tokenizer, a, b, top_k=self.top_k)
        ta, tb = self.comparison.top_a, self.comparison.top_b
        self.summary.value = (f"top guess in a: <b>{html.escape(ta.token)}</b> ({ta.p_a:.2f}) · "
                              f"in b: <b>{html.escape(tb.token)}</b> ({tb.p_b:.2f})")
        self.figure = F.fill_shift_figure(self.comparison)
        show_figure(self.out, self.figure)
        if self._live:              # a heatmap was asked for: redraw it for the edited pair (or say why not)
            self._click_patch(after_edit=True)

    def _click_patch(self, after_edit: bool = False) -> None:
        """The button: a pair that cannot be patched (say, different lengths) is a message under the chart,
        which stays, since the comparison itself was fine. After an edit, the heatmap's place says why instead
        of going blank, and the message is a note, not an error: the edit itself was fine."""
        try:
            self.run_patching()
        except ValueError as e:
            self._forget_patching()
            if after_edit:
                self.patch_figure = F.note_figure("No heatmap for this pair: " + _wrap(str(e).split(";")[0])
                                                  + ".<br>Edit the sentences to the same number of tokens.")
                show_figure(self.patch_out, self.patch_figure)
                self.say(str(e))
            else:
                self.error = str(e)
                self.say(str(e), error=True)

    def run_patching(self) -> None:
        """Patch every cell of the chosen site between the two sentences; the heatmap shows the effects."""
        if self.comparison is None:
            raise ValueError(self.error or "fix the sentences first")
        self.patching = patch(self.model, self.tokenizer, self.text_a.value, self.text_b.value,
                              site=self.site.value, direction=self.direction.value)
        self.patch_figure = F.patching_figure(self.patching)
        self._live = True
        show_figure(self.patch_out, self.patch_figure)
        row, col, effect = self.patching.top(1)[0]
        self.say(f"largest effect: {effect:.2f} at {row}, {col}")


def _wrap(text: str, width: int = 90) -> str:
    """Break a long message into <br>-separated lines for a plotly annotation."""
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    return "<br>".join(lines + [line])

