"""The widgets, driven from Python as a person drives them: set a value, press a button, read the result.

Every check compares a widget's state after an interaction with the same thing computed by hand from the
model (a probe or a figure function), so a widget that shows stale or wrong numbers fails.
"""

from __future__ import annotations

import json
import sys

import pytest
import torch

ipywidgets = pytest.importorskip("ipywidgets", reason="the widgets need the notebooks extra (ipywidgets)")
pytest.importorskip("plotly", reason="the widgets draw with plotly")

import plotly.io as pio  # noqa: E402

from bertlab import probe  # noqa: E402
from bertlab.probe import AttentionMap  # noqa: E402
from bertlab.viz import figures as F  # noqa: E402
from bertlab.viz import widgets as W  # noqa: E402
from bertlab.viz.views import same_figure  # noqa: E402
from testkit import bundled, no_hooks_anywhere, one_thread  # noqa: E402, F401  (one_thread: a fixture)

LONG = ("The river was low after a long dry summer, and brown leaves floated past the ducks near the far "
        "shore while the old dog barked at them from the muddy bank and the children laughed.")


@pytest.fixture(scope="session")
def tiny():
    """bertlab-tiny, the bundled pre-trained model (package data: its absence is a failure, not a skip)."""
    return bundled("bertlab-tiny")


@pytest.fixture(scope="session")
def mini():
    """bertlab-mini, the lab's MLM + NSP model on real English (package data too)."""
    return bundled("bertlab-mini")


@pytest.fixture(autouse=True)
def models(request, monkeypatch):
    """Widgets load models by name through W.LOADED: give them the session's models (loaded once)."""
    names = request.fixturenames
    if "tiny" in names:
        monkeypatch.setitem(W.LOADED, "bertlab-tiny", request.getfixturevalue("tiny"))
    if "mini" in names:
        monkeypatch.setitem(W.LOADED, "bertlab-mini", request.getfixturevalue("mini"))
    if "minilm" in names:
        monkeypatch.setitem(W.LOADED, "minilm", request.getfixturevalue("minilm"))


def as_json(fig) -> dict:
    return json.loads(pio.to_json(fig, validate=False))


def shown(out) -> dict:
    """The plotly figure a pane holds, as the browser receives it (a view's: arrays as binary float32)."""
    assert out.content is not None and "figure" in out.content
    return out.content["figure"]


def draws(out, fig) -> bool:
    """Whether the pane `out` sends the browser exactly `fig` (arrays to float32 precision)."""
    return same_figure(shown(out), fig)


def empty(out) -> bool:
    return out.empty


def assert_message(w, *parts):
    text = w.message.value
    for part in parts:
        assert part in text, (part, text)


# ---- every widget is a displayable ipywidget -------------------------------------------------------------

ALL = [W.AttentionExplorer, W.MaskPlayground, W.MaskingLab, W.EmbeddingSumExplorer, W.NSPExplorer,
       W.ContextExplorer, W.HeadAblation, W.NeuronExplorer, W.SaliencyExplorer, W.MinimalPairs]


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_view_is_a_displayable_widget(cls, tiny):
    w = cls(model="bertlab-tiny")
    assert isinstance(w.view, ipywidgets.DOMWidget)     # an anywidget is one
    bundle = w._repr_mimebundle_()
    bundle = bundle[0] if isinstance(bundle, tuple) else bundle   # anywidget's: (bundle, metadata)
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == w.view.model_id
    assert w.error is None                               # a note (say, IG's completeness gap) at most
    assert w.figure is not None
    assert draws(w.out, w.figure)                        # what the page gets is the figure


def test_embeds_into_a_standalone_page(tmp_path, minilm):
    from ipywidgets.embed import embed_minimal_html
    w = W.AttentionExplorer("The cat sat on the mat.", model="minilm", layer=1, head=2)
    path = tmp_path / "attention.html"
    embed_minimal_html(path, views=[w.view], title="attention")
    page = path.read_text()
    # a view embeds as its anywidget state: the ES module and the figure, drawn by the same module in the page
    assert "AnyModel" in page and "layer 1, head 2" in page and "export default" in page


def test_a_model_that_cannot_load_is_a_message():
    w = W.NSPExplorer(model="/no/such/checkpoint")
    assert_message(w, "could not load", "/no/such/checkpoint")
    assert w.figure is None and w.probability is None


# ---- AttentionExplorer -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["minilm", "bertlab-tiny"])
def test_attention_explorer_sliders_show_the_chosen_head(name, tiny, minilm):
    model, tok = W.LOADED[name]
    text = "The river bank was muddy after the rain."
    w = W.AttentionExplorer(text, model=name)
    enc = tok(text)
    out = model.bert(**enc, output_attentions=True) if hasattr(model, "bert") else model(**enc, output_attentions=True)
    assert torch.allclose(torch.tensor(w.figure.data[0].z), out.attentions[0][0, 0], atol=1e-6)
    forward = w._fwd
    L, A = model.config.num_hidden_layers, model.config.num_attention_heads
    assert (w.layer.max, w.head.max) == (L - 1, A - 1)
    for layer, head in [(L - 1, A - 1), (L // 2, 1), (0, A - 1)]:
        w.layer.value, w.head.value = layer, head
        assert torch.allclose(torch.tensor(w.figure.data[0].z), out.attentions[layer][0, head], atol=1e-6)
        # the in-place update gives exactly the figure attention_heatmap builds from scratch
        assert as_json(w.figure) == as_json(F.attention_heatmap(w._fwd, enc.tokens, layer, head))
        assert draws(w.out, w.figure)
    assert w._fwd is forward                     # moving sliders never re-ran the model


def test_attention_explorer_text_pair_grid_and_head_view(minilm):
    model, tok = minilm
    w = W.AttentionExplorer("The cat sat on the mat.", model="minilm", layer=2, head=3)
    before = as_json(w.figure)
    w.text_pair.value = "It was warm."
    assert as_json(w.figure) != before, "adding sentence B must redraw the heatmap"
    enc = tok("The cat sat on the mat.", "It was warm.")
    assert list(w.figure.data[0].x) == [f"{t} ({i})" for i, t in enumerate(enc.tokens)]
    assert as_json(w.figure) == as_json(F.attention_heatmap(w._fwd, enc.tokens, 2, 3))
    out = model(**enc, output_attentions=True)
    assert torch.allclose(torch.tensor(w.figure.data[0].z), out.attentions[2][0, 3], atol=1e-6)

    # texts of a length seen before update the figure in place: it must equal a fresh one
    fig = w.figure
    # the same tokens in another order: the same length whatever the vocabulary
    for a, b in [("The mat sat on the cat.", "It was warm."), ("The cat sat on the mat.", "Warm it was.")]:
        w.text.value, w.text_pair.value = a, b
        assert w.figure is fig
        enc2 = tok(a, b)
        assert as_json(w.figure) == as_json(F.attention_heatmap(w._fwd, enc2.tokens, 2, 3))
    w.text_pair.value = "It was warm."                   # back to the text `out` was computed for
    w.show_grid.value = True
    L, A = model.config.num_hidden_layers, model.config.num_attention_heads
    assert len(w.grid_figure.data) == L * A
    assert torch.allclose(torch.tensor(w.grid_figure.data[L * A - 1].z), out.attentions[-1][0, -1], atol=1e-6)
    w.show_grid.value = False
    assert empty(w.grid_out)

    pytest.importorskip("bertviz", reason="the head view is bertviz's")
    w.show_head_view.value = True
    html = w.head_view_html
    assert html and "<script" in html and "cdnjs" not in html and "require.min.js" not in html
    assert w.head_view_out.html == html and w.head_view_out.content["frame"]   # drawn in a sandboxed frame
    assert w.message.value == ""


def test_attention_explorer_combines_heads_merges_words_and_hides_specials(minilm):
    model, tok = minilm
    text = "The playwright quietly rewrote the unfinished manuscript."
    w = W.AttentionExplorer(text, model="minilm", layer=2, head=3)
    enc, forward = tok(text), w._fwd
    steps = [dict(combine="layer-mean"), dict(words=True), dict(hide_special=True), dict(threshold=0.1),
             dict(combine="all-sum"), dict(words=False, hide_special=False, threshold=0.0, combine="head")]
    for step in steps:
        for name, value in step.items():
            getattr(w, name).value = value
        assert w.error is None
        expected = AttentionMap.from_output(w._fwd, enc.tokens, **w.view_options())
        # the in-place update equals the figure attention_map_figure builds from scratch
        assert as_json(w.figure) == as_json(F.attention_map_figure(expected))
        assert draws(w.out, w.figure)
    assert w._fwd is forward                               # no control re-ran the model
    assert w.view_options() == dict(layer=2, head=3, reduce="mean", words=False, hide_special=False, threshold=0.0)
    w.combine.value = "all-mean"
    assert w.layer.disabled and w.head.disabled and "all 6 layers, all 12 heads (mean)" in w.figure.layout.title.text
    w.words.value = True
    assert "rewrote (4)" in list(w.figure.data[0].x) and "##wr" not in str(list(w.figure.data[0].x))
    # a new model and a new text still give attention_map_figure's figure
    w.text.value = "A cat sat."
    assert as_json(w.figure) == as_json(F.attention_map_figure(
        AttentionMap.from_output(w._fwd, tok("A cat sat.").tokens, **w.view_options())))


def test_attention_explorer_shows_the_guesses_at_each_mask(mini, minilm):
    model, tok = mini
    w = W.AttentionExplorer("She opened the [MASK] and walked in.", model="bertlab-mini")
    expected = probe.fill_mask(model, tok, "She opened the [MASK] and walked in.", top_k=5)
    assert [[g.token for g in gs] for gs in w.guesses.guesses] == [[g.token for g in gs] for gs in expected.guesses]
    assert f"<b>{expected.guesses[0][0].token}</b>" in w.guesses_out.value
    w.text_pair.value = "The [MASK] was warm inside."                 # masks in both texts: two lists
    assert len(w.guesses.guesses) == 2 and w.guesses_out.value.count("[MASK]") == 2
    w.text.value, w.text_pair.value = "No mask here.", ""
    assert w.guesses is None and w.guesses_out.value == ""
    w.text.value = "The river [MASK] was muddy."
    w.model_select.value = "minilm"                                   # no MLM head: it says so and offers a switch
    assert w.error is None and w.guesses is None and "has no MLM head" in w.guesses_out.value
    assert w.switch.layout.display == ""


def test_the_head_view_without_bertviz_is_a_message_and_the_heatmap_stays(minilm, monkeypatch):
    monkeypatch.setitem(sys.modules, "bertviz", None)      # `import bertviz` fails, as where it is not installed
    w = W.AttentionExplorer("The cat sat on the mat.", model="minilm")
    w.show_head_view.value = True
    assert_message(w, "head view: not available in this installation", "bertviz is not installed",
                   "pip install bertviz")
    assert w.head_view_html is None and empty(w.head_view_out)
    assert w.figure is not None and draws(w.out, w.figure)


def test_attention_explorer_bad_input_is_a_message(minilm):
    w = W.AttentionExplorer("fine", model="minilm")
    w.text.value = "   "
    assert_message(w, "empty")
    assert w.figure is None and empty(w.out)
    w.text.value = "word " * 700
    assert_message(w, "702 tokens", "at most 512", "shorten it")
    w.text.value = "A short one."
    assert w.message.value == "" and w.figure is not None


def test_attention_explorer_switches_model(tiny, minilm):
    w = W.AttentionExplorer("The dog barked.", model="minilm", layer=5, head=11)
    w.model_select.value = "bertlab-tiny"
    model, tok = tiny
    assert (w.layer.max, w.head.max) == (model.config.num_hidden_layers - 1, model.config.num_attention_heads - 1)
    enc = tok("The dog barked.")
    out = model.bert(**enc, output_attentions=True)
    assert torch.allclose(torch.tensor(w.figure.data[0].z), out.attentions[w.layer.value][0, w.head.value], atol=1e-6)
    w2 = W.AttentionExplorer("The dog barked.", model=(model, tok))   # a (model, tokenizer) pair
    assert w2.model_name.startswith("custom") and w2.figure is not None


# ---- MaskPlayground -------------------------------------------------------------------------------------

def test_mask_playground_matches_fill_mask(tiny):
    model, tok = tiny
    text = "Grace walked along the muddy bank of the river with her old dog."
    w = W.MaskPlayground(text, model="bertlab-tiny", top_k=5)
    for word in ["bank", "dog", "river"]:
        w.mask(word)
        expected = probe.fill_mask(model, tok, text.replace(word, "[MASK]", 1), top_k=5, by_layer=True)
        assert w.masked == expected.mask_positions[0] and w.result.tokens == expected.tokens
        assert [t for t, _ in w.predictions] == [g.token for g in expected.guesses[0]]
        assert torch.allclose(torch.tensor([p for _, p in w.predictions]),
                              torch.tensor([g.probability for g in expected.guesses[0]]), atol=1e-5)
        for mine, theirs in zip(w.result.by_layer, expected.by_layer):
            assert [g.token for g in mine[0]] == [g.token for g in theirs[0]]
        fresh = as_json(F.fill_mask_figure(expected))
        assert [b["y"] for b in as_json(w.figure)["data"]] == [b["y"] for b in fresh["data"]]
        assert len(w.layers_figure.data[0].z) == model.config.num_hidden_layers
    # clicking a token button is the same as mask(i)
    before = w.predictions
    w.tokens.value = 2
    assert w.masked == 2 and w.result.tokens[2] == "[MASK]" and w.predictions != before


def test_mask_playground_bad_input(tiny):
    w = W.MaskPlayground("The dog barked.", model="bertlab-tiny", mask=None)
    assert w.figure is None and "click a token" in w.message.value
    w.mask("dog")
    assert w.predictions and not empty(w.layers_out)
    w.mask("cat")
    assert_message(w, "'cat' is not one of the text's tokens")
    assert w.predictions is None and w.figure is None and empty(w.layers_out)
    w.mask(0)
    assert_message(w, "position 0 cannot be masked")
    w.text.value = ""
    assert_message(w, "empty")
    w.text.value = "the " * 200
    assert_message(w, "202 tokens", "at most 128")
    w.text.value = "The dog barked loudly."
    w.mask("dog")
    assert w.message.value == "" and w.predictions


def test_mask_playground_offers_bertlab_mini_for_minilm(mini, minilm):
    w = W.MaskPlayground(model="minilm")
    assert_message(w, "MiniLM has no masked-LM head", "switch to bertlab-mini")
    assert w.figure is None and w.switch.layout.display != "none"
    w.switch.click()
    assert w.model_name == "bertlab-mini" and w.predictions and w.switch.layout.display == "none"


def test_mask_playground_on_bertlab_mini_finds_the_money_bank(mini):
    w = W.MaskPlayground("She deposited her money in the bank.", mask="bank")
    assert w.model_name == "bertlab-mini"                    # the default: the lab's model on real English
    assert w.predictions[0].token == "bank"


def test_the_model_menu_lists_the_bundled_models_and_cached_hub_berts(mini, monkeypatch):
    import bertlab.hub
    monkeypatch.setattr(bertlab.hub, "cached_models", lambda: ["google/bert_uncased_L-2_H-128_A-2", "minilm"])
    w = W.MaskPlayground("The [MASK] barked.", mask=None)
    assert list(w.model_select.options) == ["bertlab-mini", "bertlab-tiny", "minilm",
                                            "google/bert_uncased_L-2_H-128_A-2"]


# ---- MaskingLab -----------------------------------------------------------------------------------------

def test_masking_lab_counts_converge_on_the_rates(tiny):
    model, tok = tiny
    w = W.MaskingLab(LONG, model="bertlab-tiny", seed=0)
    assert w.counts["draws"] == 1
    first = as_json(w.figure)
    w.redraw.click()
    assert w.counts["draws"] == 2 and as_json(w.figure) != first
    w.draw100.click()
    w.draw(98)
    c, r = w.counts, w.rates
    n = sum(t not in (tok.cls_id, tok.sep_id) for t in tok(LONG).input_ids)
    assert c["draws"] == 200 and c["candidates"] == 200 * n
    assert c["chosen"] == c["mask"] + c["random"] + c["kept"]
    assert abs(r["chosen"] - 0.15) < 0.02
    assert abs(r["mask"] - 0.8) < 0.04 and abs(r["random"] - 0.1) < 0.03 and abs(r["kept"] - 0.1) < 0.03
    # the figure is the last draw: its title counts what mask_tokens did to that copy
    chosen = int((w.labels != -100).sum())
    assert w.figure.layout.title.text.startswith(f"{chosen} of {n + 2} tokens chosen")
    assert "200 draws" in w.stats.value

    w.mode.value = "bert"                                  # a setting change restarts the counts
    w.draw(9)
    assert w.counts["draws"] == 10 and w.counts["chosen"] == 10 * round(0.15 * n)
    w.text.value = "short text here"
    assert w.counts["draws"] == 1


def test_masking_lab_bad_input(minilm):
    w = W.MaskingLab("", model="minilm")
    assert_message(w, "empty")
    w.redraw.click()
    assert_message(w, "empty")
    assert w.figure is None and w.counts["draws"] == 0
    w.text.value = "Now it works."
    assert w.message.value == "" and w.counts["draws"] == 1


# ---- EmbeddingSumExplorer -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["minilm", "bertlab-tiny"])
def test_embedding_sum_explorer(name, tiny, minilm):
    model, tok = W.LOADED[name]
    w = W.EmbeddingSumExplorer("The cat sat.", "It was warm.", model=name)
    enc = tok("The cat sat.", "It was warm.")
    bert = probe.base_model(model)
    expected = F.embedding_sum(bert(**enc), enc.tokens)
    assert as_json(w.figure) == as_json(expected)
    before = as_json(w.figure)
    w.text_pair.value = ""
    assert as_json(w.figure) != before
    assert as_json(w.figure) == as_json(F.embedding_sum(bert(**tok("The cat sat.")), tok("The cat sat.").tokens))
    # a new text of a length seen before is drawn by updating the figure in place: still the same figure
    fig = w.figure
    # the same tokens in another order: the same length whatever the vocabulary
    for a, b in [("Sat the cat.", "It was warm."), ("The cat sat.", "Warm it was."), ("Cat the sat.", "")]:
        w.text.value, w.text_pair.value = a, b
        assert w.figure is fig
        enc = tok(a, b or None)
        assert as_json(w.figure) == as_json(F.embedding_sum(bert(**enc), enc.tokens))
    w.show_positions.value = True
    P = bert.config.max_position_embeddings
    weight = bert.embeddings.position_embeddings.weight
    assert as_json(w.positions_figure) == as_json(F.position_similarity(weight, n=min(P, 128)))
    w.text.value = ""
    assert_message(w, "empty")


# ---- NSPExplorer ----------------------------------------------------------------------------------------

def test_nsp_explorer_matches_next_sentence(tiny):
    model, tok = tiny
    a, b = "Grace walked along the muddy bank with her brother.", "Brown leaves floated past them."
    w = W.NSPExplorer(a, b, model="bertlab-tiny")
    assert w.probability == probe.next_sentence(model, tok, a, b)
    assert w.figure.data[0].x[0] == pytest.approx(w.probability)
    w.b.value = "The bank pays a small amount of interest each year."
    assert w.probability == probe.next_sentence(model, tok, a, w.b.value)
    w.swap.click()
    assert (w.a.value, w.b.value) == ("The bank pays a small amount of interest each year.", a)
    assert w.probability == probe.next_sentence(model, tok, w.a.value, a)
    w.b.value = " "
    assert_message(w, "sentence B is empty")
    assert w.probability is None and w.figure is None
    w.b.value = "the " * 200
    assert_message(w, "at most 128")


def test_nsp_explorer_offers_bertlab_mini_for_minilm(mini, minilm):
    w = W.NSPExplorer(model="minilm")
    assert_message(w, "MiniLM has no next-sentence head", "switch to bertlab-mini")
    assert w.probability is None
    w.switch.click()
    assert w.model_name == "bertlab-mini" and 0 < w.probability < 1 and w.message.value == ""


# ---- ContextExplorer ------------------------------------------------------------------------------------

SENTENCES = ["Grace walked along the muddy bank of the river. | river",
             "Tom went to the bank to open a savings account. | money",
             "The bank pays a small amount of interest each year. | money"]


@pytest.mark.parametrize("name", ["minilm", "bertlab-tiny"])
def test_context_explorer_layers(name, tiny, minilm):
    model, tok = W.LOADED[name]
    texts = [s.split(" | ")[0] for s in SENTENCES]
    w = W.ContextExplorer("bank", SENTENCES, model=name)
    L = model.config.num_hidden_layers
    assert w.layer.max == L and w.layer.value == L and w.senses == ["river", "money", "money"]
    vectors = w.vectors
    for layer in [0, 1, L]:
        w.layer.value = layer
        expected = probe.cosine_distances(probe.word_vectors(model, tok, texts, "bank", layer=layer))
        assert torch.allclose(torch.tensor(w.figure.data[0].z), expected, atol=1e-5)
        assert as_json(w.figure) == as_json(F.cosine_matrix(w.distances, texts, word="bank", layer=layer))
    assert w.vectors is vectors                    # the slider reuses the vectors
    w.show.value = "drift by layer"
    assert len(w.figure.data) == 2 and len(w.figure.data[0].y) == L + 1
    w.show.value = "projection 2-D"
    assert [t.name for t in w.figure.data] == ["river", "money"]
    assert as_json(w.figure) == as_json(F.projection_2d(w.vectors, texts, w.senses, word="bank", layer=L))


def test_context_explorer_bad_input(minilm):
    w = W.ContextExplorer("bank", SENTENCES, model="minilm")
    w.sentences.value = w.sentences.value + "\nThe banks were closed on Sunday."
    assert_message(w, "'bank' is not a word of sentence 4", "The banks were closed on Sunday.")
    assert w.figure is None
    w.word.value = ""
    assert_message(w, "word is empty")
    w.word.value = "bank"
    w.sentences.value = ""
    assert_message(w, "no sentences")
    w.sentences.value = "a river bank " * 200
    assert_message(w, "sentence 1 is", "at most 512")
    w.sentences.value = "\n".join(SENTENCES)
    assert w.message.value == "" and w.figure is not None


# ---- HeadAblation ---------------------------------------------------------------------------------------

def test_head_ablation_changes_predictions_and_restores_them(tiny):
    model, tok = tiny
    text = "Tom went to the [MASK] to open a savings account."
    w = W.HeadAblation(text, model="bertlab-tiny")
    original = w.predictions
    expected = probe.fill_mask(model, tok, text, top_k=5)
    assert [t for t, _ in original] == [g.token for g in expected.guesses[0]]
    assert w.baseline == original and w.ablated == set()

    importance = probe.head_importance(model, tok, text)
    flat = int(importance.scores.argmax())
    top = divmod(flat, model.config.num_attention_heads)
    button = w.heads[top]
    w.view.event = {"id": button.id, "value": True, "n": 7}   # a click on the head's button, as the page sends it
    assert w.ablated == {top} and button.button_style == "danger" and w.view.done == 7
    assert w.view.nodes[button.id]["value"] is True and w.view.nodes[button.id]["button_style"] == "danger"
    assert draws(w.out, w.figure)
    assert w.predictions != original and w.baseline == original
    with probe.ablate(model, [top]):
        by_hand = probe.fill_mask(model, tok, text, top_k=5)
    assert [t for t, _ in w.predictions] == [g.token for g in by_hand.guesses[0]]
    assert no_hooks_anywhere(model)

    w.toggle(*top)
    assert w.ablated == set() and w.predictions == original
    w.rank.click()
    assert torch.equal(w.importance.scores, importance.scores)
    assert w.importance_figure is not None and draws(w.importance_out, w.importance_figure)
    w.set_ablated(list(w.heads))                          # every head off at once
    assert len(w.ablated) == len(w.heads) and w.predictions != original
    w.all_on.click()
    assert w.predictions == original
    assert no_hooks_anywhere(model)


def test_head_ablation_with_minilm_measures_the_output(mini, minilm):
    model, tok = minilm
    w = W.HeadAblation("The river bank was muddy.", model="minilm")
    assert_message(w, "MiniLM has no masked-LM head", "switch to bertlab-mini")
    assert w.predictions is None and float(w.change.abs().max()) == 0.0
    assert len(w.heads) == model.config.num_hidden_layers * model.config.num_attention_heads
    w.heads[(0, 3)].value = True
    assert float(w.change.max()) > 0
    assert no_hooks_anywhere(model)
    w.heads[(0, 3)].value = False
    assert float(w.change.abs().max()) == 0.0
    w.switch.click()
    assert w.model_name == "bertlab-mini" and len(w.heads) == 6 * 12 and w.change is not None   # no [MASK]: output change
    grid = w.view.nodes[w.grid.id]["children"]                  # the page's grid is the new model's
    assert len(grid) == 6 and all(b.id in w.view.nodes for b in w.heads.values())
    assert "no [MASK] in the text" in w.message.value


def test_switching_every_head_sends_the_page_one_grid(minilm, monkeypatch):
    w = W.HeadAblation("The river bank was muddy.", model="minilm")     # 6 × 12 buttons
    sent = []
    real = w.view.send_state
    monkeypatch.setattr(w.view, "send_state", lambda key=None: (sent.append(key), real(key))[1])
    w.set_ablated(list(w.heads))
    assert len(w.ablated) == 72 and w.view.nodes[w.heads[max(w.heads)].id]["value"] is True
    assert len(sent) < 10, sent                  # not one message per button (144 without holding the sync)


def test_head_ablation_bad_input(tiny):
    w = W.HeadAblation(model="bertlab-tiny")
    w.text.value = ""
    assert_message(w, "empty")
    w.toggle(9, 9)
    assert_message(w, "head (9, 9) does not exist")
    w.text.value = "the " * 200
    assert_message(w, "at most 128")
    w.rank.click()
    assert_message(w, "at most 128")
    assert no_hooks_anywhere(tiny[0])


# ---- every view's figures fit a 1,000-px page at default settings (issue 28/30) -------------------------

def test_default_figures_are_at_most_1000_px_wide(tiny, mini):
    korean = "서울은 한국의 수도이며 많은 사람들이 살고 있습니다. 강물이 천천히 흘러갑니다."
    views = [W.AttentionExplorer(LONG, model="bertlab-tiny"), W.MaskingLab(LONG + " " + LONG, model="bertlab-tiny"),
             W.EmbeddingSumExplorer(korean + " " + korean, model="bertlab-mini"),
             W.MaskPlayground(LONG, model="bertlab-tiny"), W.NSPExplorer(model="bertlab-tiny"),
             W.ContextExplorer("bank", model="bertlab-tiny")]
    grid = views[0]
    grid.show_grid.value = True
    views[2].show_positions.value = True
    figures = [(type(v).__name__, v.figure) for v in views] + [("grid", grid.grid_figure),
                                                               ("positions", views[2].positions_figure)]
    for name, fig in figures:
        assert fig is not None, name
        assert fig.layout.width is None or fig.layout.width <= 1000, (name, fig.layout.width)
