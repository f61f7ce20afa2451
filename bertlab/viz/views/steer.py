"""SteeringView (notebook 13): clamp one sparse-autoencoder feature while the model fills a [MASK].

    v = SteeringView("The river [MASK] was muddy after the rain.", feature=1370, value=5.7)
    v.guesses                     # the top-k with the feature clamped (bertlab.steer's answer, exactly)
    v.baseline                    # the same positions of the model as it is
    v.value.value = 0.0           # what moving the slider does; the bars follow
    v.feature.value = 2405        # any feature by id; the drop-down lists those largest at the [MASK]

Why a view: one `steer` call answers one question; steering is read by moving the value and watching which
guesses rise and fall against where they started. The bars pair each token's probability clamped with its
probability as the model is (grey), both from `bertlab.inside.steered_probabilities`, so what the figure
shows is the library's number. The feature is described by the words it fires on most in a corpus (its top
contexts in `Features`) and the words its direction promotes through the MLM head (`promoted_words`).
Everything needs the model, so in the book the view shows what the notebook computed and says so.
"""

from __future__ import annotations

import html
import numbers

from ... import inside
from ...probe.fill_mask import Guess
from ..widgets.base import WIDE, Widget, controls_row, show_figure, text_arg, whole_arg
from . import controls as W

__all__ = ["SteeringView"]

RIVER = "The river [MASK] was muddy after the rain."
SUGGESTED = 12                      # features offered in the drop-down: the largest at the [MASK]
WHERE = [("the [MASK]", "mask"), ("every token", "all")]

_SHIPPED: dict[str, object] = {}


def shipped_sae():
    """The autoencoder notebook 13 reads (layer 3 of bertlab-mini), loaded once per process."""
    if "sae" not in _SHIPPED:
        _SHIPPED["sae"] = inside.SparseAutoencoder.load(inside.assets()["sae"])
    return _SHIPPED["sae"]


class SteeringView(Widget):
    """Clamp one autoencoder feature at a sentence's [MASK] and see its guesses move against the model's own.

    Controls: the sentence (one [MASK]), the feature (by id, or from the features largest at the [MASK]), its
    value, and where it is clamped.

    `sae`: a SparseAutoencoder of `model` (None: the shipped one, which reads bertlab-mini). `features`: a
    `bertlab.inside.Features` to describe features with (None: built on 100 held-out sentences when first
    needed). `value`: None starts at twice the feature's largest value in training. `where`: "mask" clamps
    at the [MASK] only, "all" at every token (bertlab.steer's `positions`).
    """

    default_model = "bertlab-mini"

    def __init__(self, text: str = RIVER, model="bertlab-mini", sae=None, feature: int | None = None,
                 value: float | None = None, top_k: int = 8, features=None, where: str = "mask"):
        text, top_k = text_arg("text", text), whole_arg("top_k", top_k, 1, 30, " (guesses shown)")
        if where not in ("mask", "all"):
            raise ValueError(f"where must be 'mask' (clamp at the [MASK]) or 'all' (every token), got {where!r}")
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)
                                  or value != value or abs(value) == float("inf")):
            raise ValueError(f"value must be a finite number (the activation to clamp the feature to), or None for "
                             f"twice its largest value in training; got {value!r}")
        if features is not None and not isinstance(features, inside.Features):
            raise ValueError(f"features must be a bertlab.inside.Features (to describe features with) or None, got "
                             f"{type(features).__name__}")
        super().__init__(model)
        if self.model is None:
            raise ValueError(self._model_error or "no model")
        self.sae = inside.sae.check_sae(self.model, shipped_sae() if sae is None else sae)
        if feature is not None:
            feature = self.sae.check_feature(feature)
        if features is not None and features.sae is not self.sae:
            raise ValueError("features were computed for another autoencoder: pass Features(model, tokenizer, sae, "
                             "texts) of the same sae, or None")
        self.top_k = top_k
        self._features = features
        self._words: dict[int, str] = {}
        self._baseline_key = None
        self._baseline_probs = None
        self._own_key = None
        self.guesses = self.baseline = None          # list[Guess] each, once drawn
        self.own_value: float | None = None          # the feature's value at the [MASK] as the model is

        self.text = W.Text(value=text, description="text", layout=WIDE)
        self.feature = W.BoundedIntText(value=0 if feature is None else feature, min=0, max=self.sae.width - 1,
                                        description="feature", layout=W.Layout(width="190px"))
        self.pick = W.Dropdown(options=[("…", -1)], value=-1, description="largest at [MASK]",
                               layout=W.Layout(width="auto"))
        self.value = W.FloatSlider(value=0.0, min=0.0, max=1.0, step=0.01, description="value",
                                   readout_format=".2f", layout=W.Layout(width="360px"))
        self.where = W.ToggleButtons(options=WHERE, value=where, description="clamp at")
        self.about = W.HTML("")
        with self._hold():
            self._suggest()
            if feature is None:
                suggested = [v for v in self.pick.values if v >= 0]
                feature = suggested[0] if suggested else 0
            self._set_feature(feature, value)
        self.view = self._make_view([self.text, controls_row(self.feature, self.pick), self.about,
                                     controls_row(self.value, self.where), self.message, self.out])
        self._watch(self.text, handler=self._new_text)
        self._watch(self.feature, handler=self._new_feature)
        self._watch(self.pick, handler=self._picked)
        self._watch(self.value, self.where)
        self._run(self._update_checked)

    # -- what Python reads back
    @property
    def probabilities(self) -> dict[str, tuple[float, float]]:
        """{token: (probability as it is, probability clamped)} for every token in the figure."""
        if self.figure is None:
            return {}
        before, after = self.figure.data
        return {t: (float(b), float(a)) for t, b, a in zip(before.y, before.x, after.x)}

    # -- describing a feature
    def _describe(self, f: int) -> str:
        """'fires on …, promotes …' for feature f, computed once."""
        if f not in self._words:
            feats = self._feats()
            fired = [c.tokens[c.position] for c in feats.top_contexts(f, n=10)]
            common = sorted(dict.fromkeys(fired), key=lambda t: -fired.count(t))[:5]
            promoted = [w for w, _ in inside.promoted_words(self.model, self.tokenizer, self.sae, f, k=4)]
            self._words[f] = ((f"fires most on {', '.join(common)}" if common else
                               f"never fires on the {len(feats.texts)} sentences read")
                              + f"; promotes {', '.join(promoted)}")
        return self._words[f]

    def _feats(self):
        if self._features is None:
            self._features = inside.Features(self.model, self.tokenizer, self.sae, inside.heldout_sentences(100))
        return self._features

    def _suggest(self) -> None:
        """The drop-down: the features largest at the text's [MASK] (as the model is), each with its words."""
        opts = []
        text = self.text.value
        if isinstance(text, str) and text.count("[MASK]") == 1 and len(self.tokenizer(text)) <= self._limit():
            tokens, z = inside.trace(self.model, self.tokenizer, self.sae, text)          # (T, width)
            if "[MASK]" in tokens:
                at = z[tokens.index("[MASK]")]
                for f in at.argsort(descending=True)[:SUGGESTED].tolist():
                    if float(at[f]) > 0:
                        opts.append((f"{f} ({float(at[f]):.2f}) · {self._describe(f).split(';')[0]}", f))
        self.pick.options = [("pick one of the features largest at the [MASK]", -1)] + opts
        self.pick.value = -1

    def _set_feature(self, f: int, value: float | None = None) -> None:
        """Feature f chosen: the slider spans 0 … 3 × its largest value in training, starting at `value`."""
        top = float(self.sae.max_activation[f]) or 1.0
        self.feature.value = f
        self.value.max = round(3 * top, 2)
        self.value.step = round(max(top / 50, 0.01), 2)
        start = 2 * top if value is None else float(value)
        if start > self.value.max:
            self.value.max = round(start, 2) + self.value.step
        if start < self.value.min:
            self.value.min = round(start, 2) - self.value.step
        self.value.value = start
        self.about.value = (f"<span style='color:#33475b'>feature {f}: {html.escape(self._describe(f))}; largest "
                            f"value in training {top:.2f}</span>")

    # -- the controls' handlers
    def _new_text(self) -> None:
        with self._hold():
            self._suggest()
        self._update_checked()

    def _new_feature(self) -> None:
        with self._hold():
            self._set_feature(self.feature.value)
            self.pick.value = self.feature.value if self.feature.value in self.pick.values else -1
        self._update_checked()

    def _picked(self) -> None:
        if self.pick.value is None or self.pick.value < 0:
            return
        if self.pick.value != self.feature.value:
            self.feature.value = self.pick.value        # runs _new_feature

    def _update(self) -> None:
        text, f, v, where = self.text.value, self.feature.value, self.value.value, self.where.value
        key = (id(self.model), text)
        if key != self._baseline_key:
            self._baseline_key = self._baseline_probs = None      # a failure below leaves nothing stale
            self._baseline_probs = inside.steered_probabilities(self.model, self.tokenizer, self.sae, text, f, None)
            self._baseline_key = key
        before = self._baseline_probs
        after = inside.steered_probabilities(self.model, self.tokenizer, self.sae, text, f, v, positions=where)
        top_after, top_before = after.topk(self.top_k).indices.tolist(), before.topk(self.top_k).indices.tolist()
        ids = list(dict.fromkeys(top_after + top_before))
        ids.sort(key=lambda i: -float(after[i]))
        tok = self.tokenizer.id_to_token
        self.guesses = [Guess(tok(i), float(after[i])) for i in top_after]
        self.baseline = [Guess(tok(i), float(before[i])) for i in top_before]
        own_key = (id(self.model), text, f)
        if own_key != self._own_key:                  # a slider move reuses it: one forward pass less a change
            tokens, z = inside.trace(self.model, self.tokenizer, self.sae, text, f)
            self.own_value, self._own_key = float(z[tokens.index("[MASK]")]), own_key
        where_said = "at the [MASK]" if where == "mask" else "at every token"
        from ...inside.figures import steering_bars_figure  # here: inside.figures imports bertlab.viz

        self.figure = steering_bars_figure([tok(i) for i in ids], [float(before[i]) for i in ids],
                                           [float(after[i]) for i in ids],
                                           f"feature {f} clamped to {v:.2f} {where_said} (as it is there: "
                                           f"{self.own_value:.2f})")
        show_figure(self.out, self.figure)
