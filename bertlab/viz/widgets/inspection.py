"""Widgets for looking inside (notebook 11): the neuron computation of a head, saliency beside attention, exBERT's search.

    w = NeuronExplorer("The cat sat on the mat because it was warm.", layer=0, head=2)
    w.query.value = 3                  # "sat" is now the query: w.figure shows its q × k, q·k and softmax
    s = SaliencyExplorer("The river [MASK] was muddy after the storm.")
    s.method.value = "gradient"        # s.result.scores and s.figure follow
    c = ContextSearch("He sat on the bank of the river.", "bank")
    c.layer.value = 0                  # c.result.hits: at the embedding output the ranking is noise

They share the `Widget` base of base.py (a model menu, a message line, state a test can set and read). The figures are bertlab.viz.figures.inspection's; the numbers come from the
probes in bertlab.probe.neurons, .saliency and .nearest.
"""

from __future__ import annotations

from ...probe import has_mlm_head
from ...probe.nearest import nearest_contexts
from ...probe.neurons import attention_neurons
from ...probe.saliency import METHODS, IntegratedGradients, saliency
from ..figures.inspection import nearest_contexts_html, neuron_figure, saliency_figure
from ..neuron_view import NEURON_VIEW_MAX_TOKENS, neuron_view_html
from ..views import controls as W
from .base import WIDE, WITH_HEADS, Widget, controls_row, show_figure, show_html, text_arg, whole_arg

__all__ = ["NeuronExplorer", "SaliencyExplorer", "ContextSearch"]


# ---- one head's computation ----------------------------------------------------------------------------

class NeuronExplorer(Widget):
    """Text → one head's q, k, q × k, q·k / √Dh and softmax for the query token chosen with `query`.

    The head's numbers (`neurons`, an `AttentionNeurons`) are computed once per (text, layer, head);
    clicking another query token only re-reads them, and the figure is updated in place (`figure` is then
    the same object with new data).
    """

    module = "view"

    def __init__(self, text: str = "The cat sat on the mat because it was warm.", model="minilm",
                 layer: int = 0, head: int = 0, query: int = 1):
        text, query = text_arg("text", text), whole_arg("query", query, 0, what=" (a token position)")
        if head is None:
            raise ValueError("head must be a whole number (negative counts from the end), got None")
        super().__init__(model)
        self.text = W.Text(value=text, description="text", continuous_update=False, layout=WIDE)
        self.query = W.ToggleButtons(options=[], description="query", style=dict(button_width="auto"))
        self.show_view = W.ToggleButton(value=False, description="neuron view (bertviz)", icon="eye",
                                        layout=W.Layout(width="auto"))
        self.view_out = W.Output()
        self.neurons = None
        self.view_html: str | None = None
        self._key = self._view_key = None
        self._shape = None                      # (tokens, Dh) of the figure on show: same → patch in place
        self._wanted_query = query
        self._layer_sliders(layer, head)
        self._start([controls_row(self.model_select), self.text, controls_row(self.layer, self.head), self.query,
                    self.message, self.out, self.show_view, self.view_out],       # the toggle above what it shows
                    watch=[self.text, self.layer, self.head, self.query, self.show_view])

    def _forget(self) -> None:
        super()._forget()
        self._key = self._view_key = self._shape = None

    def _fail(self, text: str) -> None:
        super()._fail(text)
        self.neurons, self.view_html = None, None
        self._key = self._view_key = self._shape = None
        show_html(self.view_out, None)

    def _update(self) -> None:
        enc = self._encode(self.text.value)
        key = (id(self.model), tuple(enc.input_ids), self.layer.value, self.head.value)
        if key != self._key:
            self.neurons = attention_neurons(self.model, self.tokenizer, self.text.value, self.layer.value, self.head.value)
            self._key = key
        tokens = self.neurons.tokens
        options = [(f"{t} ({i})", i) for i, t in enumerate(tokens)]
        if list(self.query.options) != options:
            with self._hold():
                wanted = self.query.value if self.query.value is not None else self._wanted_query
                self.query.options = options
                self.query.value = min(max(int(wanted), 0), len(tokens) - 1)
        i = self.query.value
        shape = (tuple(tokens), self.neurons.queries.shape[-1])
        if self.figure is not None and shape == self._shape:
            self._patch(i)
        else:
            self.figure = neuron_figure(self.neurons, i)
            self._shape = shape
        show_figure(self.out, self.figure)

        if self.show_view.value:
            view_key = (id(self.model), tuple(enc.input_ids), self.layer.value, self.head.value)
            if view_key != self._view_key:
                self.view_html = neuron_view_html(self.model, self.tokenizer, self.text.value, self.layer.value,
                                                  self.head.value, max_tokens=NEURON_VIEW_MAX_TOKENS)
                self._view_key = view_key
                show_html(self.view_out, self.view_html, "bertviz neuron view")
        elif not self.view_out.empty:
            show_html(self.view_out, None)
            self.view_html, self._view_key = None, None

    def _patch(self, i: int) -> None:
        """Turn the figure on show into what `neuron_figure(self.neurons, i)` builds, without building it
        (a new three-panel figure costs tens of ms of plotly validation; new data costs a few)."""
        n = self.neurons
        products = n.products(i).float()
        big = max(float(products.abs().max()), 1e-6)
        fig = self.figure
        with fig.batch_update():
            fig.data[0].z = products.tolist()
            fig.data[0].zmin, fig.data[0].zmax = -big, big
            fig.data[1].x = n.scores[i].float().tolist()
            fig.data[2].x = n.weights[i].float().tolist()
            fig.layout.title.text = (f"layer {n.layer}, head {n.head}: how {n.tokens[i]!r} ({i}) picks where to look")


# ---- saliency beside attention ---------------------------------------------------------------------

class SaliencyExplorer(Widget):
    """Text with a [MASK] + target word + method + steps → attribution beside attention for that prediction.

    `target` empty means the model's own top guess. `result` is the saliency result on show; the
    attention rows come from one forward pass of the same text, kept while only the method, target or
    steps change.
    """

    default_model = WITH_HEADS
    module = "view"

    def __init__(self, text: str = "The river [MASK] was muddy after the storm.", target: str = "",
                 model=WITH_HEADS, method: str = "integrated_gradients", steps: int = 16):
        text, target = text_arg("text", text), text_arg("target", target)
        steps = whole_arg("steps", steps, 1, 500, " (integrated-gradients steps)")
        super().__init__(model)
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        self.text = W.Text(value=text, description="text", continuous_update=False, layout=WIDE)
        self.target = W.Text(value=target, description="target", placeholder="the top guess",
                             continuous_update=False)
        self.method = W.Dropdown(options=METHODS, value=method, description="method")
        self.steps = W.BoundedIntText(value=steps, min=1, max=500, description="IG steps")
        self.explain = W.Button(description="explain", button_style="primary", icon="search")
        self.explain.on_click(lambda _: self._run(self._update_checked))
        self.result = None
        self._ig = self._ig_key = None                 # IntegratedGradients of the current text, kept
        self._start([controls_row(self.model_select, self.switch), self.text,
                    controls_row(self.target, self.method, self.steps, self.explain),
                    self.message, self.out],
                    watch=[self.text, self.target, self.method, self.steps])

    def _fail(self, text: str) -> None:
        super()._fail(text)
        self.result = None

    def _forget(self) -> None:
        super()._forget()
        self._ig = self._ig_key = None

    def _update(self) -> None:
        enc = self._encode(self.text.value)
        if not has_mlm_head(self.model):
            self._offer_switch(True)
            raise ValueError(f"{self.display_name} has no masked-LM head, so there is no prediction to explain "
                             f"— switch to {WITH_HEADS}, which was pre-trained with one")
        self._offer_switch(False)
        if self.tokenizer.mask_id not in enc.input_ids:
            raise ValueError("put [MASK] where the model should guess a word, e.g. 'The river [MASK] was muddy.'")
        target = self.target.value.strip() or None
        if self.method.value == "integrated_gradients":
            # the forward pass along the path is the same for every target: keep it while only the target
            # changes, so typing another word costs one backward pass
            key = (id(self.model), self.text.value, self.steps.value)
            if self._ig_key != key:
                self._ig, self._ig_key = IntegratedGradients(self.model, self.tokenizer, self.text.value,
                                                             steps=self.steps.value), key
            self.result = self._ig(target)
        else:
            self.result = saliency(self.model, self.tokenizer, self.text.value, target=target,
                                   method=self.method.value, steps=self.steps.value)
        out = self._forward(enc, output_attentions=True)
        self.figure = saliency_figure(self.result, out.attentions)
        if self.method.value == "integrated_gradients":
            self.say(f"completeness gap δ = {float(self.result.delta):.2g} with {self.steps.value} steps "
                     "(raise the steps to shrink it)")
        show_figure(self.out, self.figure)


# ---- exBERT's corpus search -------------------------------------------------------------------------

class ContextSearch(Widget):
    """Text + word + layer → the `k` corpus sentences whose use of the word is nearest, word highlighted.

    `result` is the `NearestContexts` on show and `html` its table (`nearest_contexts_html`); `corpus` is
    passed to `nearest_contexts` (None: the demo corpus).
    """

    module = "view"

    def __init__(self, text: str = "He sat on the bank of the river and watched the water.", word: str = "bank",
                 model="minilm", layer: int = -1, k: int = 8, corpus=None):
        text, word = text_arg("text", text), text_arg("word", word)
        k = whole_arg("k", k, 1, 25, " (contexts shown)")
        super().__init__(model)
        self.corpus = corpus
        self.text = W.Text(value=text, description="text", continuous_update=False, layout=WIDE)
        self.word = W.Text(value=word, description="word", continuous_update=False)
        self._layer_sliders(layer)
        self.k = W.IntSlider(value=k, min=1, max=25, description="top k")
        self.result = None
        self.html: str | None = None
        self._start([controls_row(self.model_select, self.word), self.text,
                    controls_row(self.layer, self.k), self.message, self.out],
                    watch=[self.text, self.word, self.layer, self.k])

    def _fail(self, text: str) -> None:
        super()._fail(text)
        self.result, self.html = None, None
        show_html(self.out, None)

    def _update(self) -> None:
        word = self.word.value.strip()
        if not word:
            raise ValueError("the word is empty: type the word to look up, e.g. bank")
        self._encode(self.text.value)                           # checks the length, says so if too long
        self.result = nearest_contexts(self.model, self.tokenizer, self.text.value, word, corpus=self.corpus,
                                       layer=self.layer.value, k=self.k.value)
        self.html = nearest_contexts_html(self.result)
        if not self.result.cached:
            self.say(f"indexed the {self.result.searched} uses of {word!r} in {self.result.corpus} "
                     f"in {self.result.index_seconds:.1f} s; later searches for it are instant")
        show_html(self.out, self.html, str(self.result))
