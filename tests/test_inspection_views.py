"""Looking inside, as views: bertviz's neuron view offline, the inspection figures, and their widgets.

Each figure is built from a real probe result and read back: the numbers it shows are the probe's. The
neuron view is checked as a string (no URL, the tokens in it, the weights equal to the model's attention)
and in a headless Chromium with the network cut off (it drew, and asked for nothing). Each widget is driven
from Python as a person drives it, and its new figure compared with the figure function's.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import torch

pytest.importorskip("bertviz", reason="the neuron view needs bertviz (the notebooks extra)")
pytest.importorskip("plotly", reason="the figures need plotly (the notebooks extra)")

from bertlab.probe.layers import probe_layers  # noqa: E402
from bertlab.probe.nearest import nearest_contexts  # noqa: E402
from bertlab.probe.neurons import attention_neurons  # noqa: E402
from bertlab.viz.figures import (  # noqa: E402
    contextuality_figure,
    head_types_figure,
    nearest_contexts_figure,
    nearest_contexts_html,
    neuron_figure,
    probe_layers_figure,
    saliency_figure,
)
from bertlab.viz.neuron_view import neuron_view, neuron_view_data, neuron_view_html  # noqa: E402
from bertlab.viz.views import same_figure  # noqa: E402
from testkit import bundled, embedded_params, model_attentions, one_thread, urls_in  # noqa: E402, F401  (one_thread: a fixture)

SENTENCE = "The cat sat on the mat because it was warm."
PAIR = ("The river bank was muddy.", "She sat on the bank and fished.")
CHROMIUM = shutil.which("chromium")


# ---- the neuron view ------------------------------------------------------------------------------------

def test_neuron_view_is_offline_and_holds_the_models_attention(minilm):
    model, tok = minilm
    html = neuron_view_html(model, tok, SENTENCE, layer=2, head=3)
    assert urls_in(html) == []                                     # no CDN, no require.js, no src= to a URL
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "window.bertviz_params" not in html                     # each view keeps its data to itself
    assert html.count("</script>") == 1                            # one script: the libraries are inside it
    params = embedded_params(html)
    data = params["attention"]["all"]
    tokens = tok(SENTENCE).tokens
    assert data["left_text"] == data["right_text"] == tokens
    assert (params["layer"], params["head"]) == (2, 3)
    expected = model_attentions(model, tok, SENTENCE)
    assert torch.allclose(torch.tensor(data["attn"], dtype=torch.float64), expected.double(), atol=1e-6)
    # the q and k the page multiplies are the head's own: their scaled dot products give its scores
    n = attention_neurons(model, tok, SENTENCE, layer=2, head=3)
    q, k = torch.tensor(data["queries"][2][3]).float(), torch.tensor(data["keys"][2][3]).float()
    assert torch.allclose(q, n.queries, atol=1e-4) and torch.allclose(k, n.keys, atol=1e-4)
    assert torch.allclose((q @ k.T / q.shape[-1] ** 0.5).softmax(-1), n.weights, atol=1e-3)


def test_neuron_view_of_a_pair_slices_each_direction(minilm):
    model, tok = minilm
    data = neuron_view_data(model, tok, *PAIR)
    enc = tok(*PAIR)
    b = enc.token_type_ids.index(1)
    full = model_attentions(model, tok, *PAIR)
    assert set(data) == {"all", "aa", "ab", "ba", "bb"}
    assert data["ab"]["left_text"] == enc.tokens[:b] and data["ab"]["right_text"] == enc.tokens[b:]
    assert torch.allclose(torch.tensor(data["ab"]["attn"], dtype=torch.float64), full[:, :, :b, b:].double(), atol=1e-6)
    assert torch.tensor(data["ba"]["queries"]).shape[2] == len(enc.tokens) - b


def test_neuron_view_displays_and_checks_its_input(minilm):
    model, tok = minilm
    view = neuron_view(model, tok, SENTENCE, layer=-1, head=0)
    assert view._repr_html_() == view.data                         # Jupyter shows it as HTML
    assert embedded_params(view.data)["layer"] == model.config.num_hidden_layers - 1
    with pytest.raises(ValueError, match="head must be an int in 0 … 11"):
        neuron_view_html(model, tok, SENTENCE, layer=0, head=12)
    with pytest.raises(ValueError, match="too many for the neuron view"):
        neuron_view_html(model, tok, "word " * 120, layer=0, head=0)
    with pytest.raises(ValueError, match="non-empty str"):
        neuron_view_html(model, tok, "  ", layer=0, head=0)


def test_a_token_stays_data(minilm):
    model, tok = minilm
    html = neuron_view_html(model, tok, "a </script><b> b", layer=0, head=0)
    assert html.count("</script>") == 1 and "</script><b>" not in html


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH: the browser check needs one")
def test_neuron_view_draws_in_chromium_with_no_network(minilm, tmp_path):
    model, tok = minilm
    page = tmp_path / "neuron.html"
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
                    + neuron_view_html(model, tok, SENTENCE, 1, 0) + neuron_view_html(model, tok, *PAIR[:1], 0, 0,
                                                                                    text_pair=PAIR[1])
                    + "</body></html>")
    profile = Path(tempfile.mkdtemp(prefix="bertlab-chromium-"))
    try:
        netlog = profile / "netlog.json"
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage", f"--user-data-dir={profile / 'p'}", "--host-resolver-rules=MAP * ~NOTFOUND",
               f"--log-net-log={netlog}", "--virtual-time-budget=5000", "--dump-dom", page.as_uri()]
        dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout
        log = json.loads(netlog.read_text())
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    asked = [e["params"].get("url", "") for e in log["events"]
             if e["type"] == start_job and e.get("params", {}).get("initiator") != "not an origin"]
    assert [u for u in asked if u and not u.startswith(("file:", "data:", "blob:"))] == []
    drawn = re.findall(r'<text class="token"[^>]*>([^<]*)</text>', dom)
    tokens, pair = tok(SENTENCE).tokens, tok(*PAIR).tokens
    assert drawn == tokens * 4 + pair * 4          # both views drew every token: queries, keys, both text columns


# ---- figures from real probe results ---------------------------------------------------------------------

def test_neuron_figure_shows_one_querys_computation(minilm):
    model, tok = minilm
    n = attention_neurons(model, tok, SENTENCE, layer=2, head=3)
    fig = neuron_figure(n, query="sat")
    i = n.tokens.index("sat")
    assert torch.allclose(torch.tensor(fig.data[0].z), n.queries[i] * n.keys, atol=1e-6)
    assert torch.allclose(torch.tensor(fig.data[0].z).sum(-1), n.dots[i], atol=1e-4)   # a row sums to q·k
    assert torch.allclose(torch.tensor(fig.data[1].x), n.scores[i], atol=1e-6)
    assert torch.allclose(torch.tensor(fig.data[2].x), n.weights[i], atol=1e-6)
    assert "'sat' (3)" in fig.layout.title.text
    with pytest.raises(ValueError, match="query must be a token position"):
        neuron_figure(n, query=99)


@pytest.fixture(scope="module")
def senses_probe(minilm):
    """A small word-sense probe (3 words, 2 senses each): fast, and the senses still separate by layer."""
    from bertlab.probe.layers import load_probing_set

    model, tok = minilm
    examples, labels = load_probing_set("senses")
    keep = [i for i, y in enumerate(labels) if y.split("/")[0] in ("bank", "bat", "crane")]
    return probe_layers(model, tok, [examples[i] for i in keep], [labels[i] for i in keep], task="senses")


def test_probe_layers_figure_draws_accuracy_and_baseline(senses_probe):
    r = senses_probe
    fig = probe_layers_figure(r)
    line, baseline, best = fig.data
    assert list(line.y) == pytest.approx(r.accuracy) and list(line.x) == list(range(len(r.accuracy)))
    assert list(baseline.y) == pytest.approx([r.majority_baseline] * 2) and baseline.line.dash == "dash"
    assert list(best.x) == [r.best_layer]
    assert list(fig.layout.xaxis.ticktext) == r.layer_names
    assert len(probe_layers_figure(r, r, names=["a", "b"]).data) == 6
    with pytest.raises(ValueError, match="at least one probe_layers result"):
        probe_layers_figure()


def test_nearest_contexts_table_and_html_highlight_the_word(minilm):
    model, tok = minilm
    corpus = ["The bank raised its interest rates.", "We fished from the grassy bank of the river.",
              "She opened an account at the bank.", "Ducks rested on the muddy bank.", "A cat & a <dog>."]
    r = nearest_contexts(model, tok, "He sat on the bank of the stream.", "bank", corpus=corpus, k=3)
    fig = nearest_contexts_figure(r)
    ranks, cosines, sentences = fig.data[0].cells.values
    assert list(cosines) == [f"{h.cosine:.3f}" for h in r.hits] and len(sentences) == 3
    assert all("<b>bank</b>" in s for s in sentences)
    html = nearest_contexts_html(r)
    assert html.count("<mark>bank</mark>") == 4                   # the query and three hits
    assert urls_in(html) == [] and "<script" not in html
    # the river senses come first at the last layer: the figure shows the probe's order
    assert [h.sentence for h in r.hits][0] in corpus[1::2]


def test_saliency_figure_puts_attribution_beside_attention():
    from bertlab.probe import attention_rollout
    from bertlab.probe.saliency import saliency

    model, tok = mini_model()
    text = "The river [MASK] was muddy after the storm."
    s = saliency(model, tok, text, target="bank", steps=16)
    with torch.no_grad():
        out = model.bert(**tok(text), output_attentions=True)
    fig = saliency_figure(s, out.attentions)
    ig, last, rollout = (torch.tensor(t.z[0]) for t in fig.data)
    i = s.mask_position
    assert torch.allclose(ig, s.scores.float(), atol=1e-6)
    assert torch.allclose(last, out.attentions[-1][0, :, i].mean(0), atol=1e-6)
    assert torch.allclose(rollout, attention_rollout(out.attentions)[0, i], atol=1e-6)
    assert "'bank'" in fig.layout.title.text and "[MASK] (3)" in fig.layout.title.text
    with pytest.raises(ValueError, match="same 11 tokens"):
        saliency_figure(s, model.bert(**tok("Short."), output_attentions=True).attentions)


def test_head_types_figure_colours_every_head_by_its_label(minilm):
    from bertlab.probe.head_types import head_types

    model, tok = minilm
    ht = head_types(model, tok, [SENTENCE, PAIR[0], PAIR[1]])
    fig = head_types_figure(ht)
    heat = fig.data[0]
    kinds = list(heat.colorbar.ticktext)
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    assert len(heat.z) == L and len(heat.z[0]) == H
    assert [[kinds[int(v)] for v in row] for row in heat.z] == ht.labels      # each cell's colour band = its label
    assert f"[SEP]: {float(ht.share['[SEP]'][3, 5]):.2f}" in heat.customdata[3][5]


def test_contextuality_figure_draws_measure_baseline_and_adjusted(minilm):
    from bertlab.probe.contextuality import contextuality

    model, tok = minilm
    sentences = ["The bank was closed.", "The river bank flooded.", "A bank loan helps.", "The cat sat down.",
                 "The cat was asleep.", "A dog chased the cat."]
    c = contextuality(model, tok, sentences, samples=200)
    fig = contextuality_figure(c)
    assert len(fig.data) == 9
    self_sim, base, adjusted = fig.data[:3]
    assert list(self_sim.y) == pytest.approx(c.self_similarity) and list(base.y) == pytest.approx(c.baseline_cosine)
    assert list(adjusted.y) == pytest.approx(c.adjusted("self_similarity")) and list(self_sim.x) == c.layers
    assert list(fig.data[8].y) == pytest.approx(c.adjusted("mev"))


# ---- widgets, driven from Python ---------------------------------------------------------------------------

LONG32 = ("The old fisherman walked slowly along the muddy river bank at dawn, hoping that the fish would bite "
          "before the heavy rain came down on the quiet valley.")          # 32 tokens in both vocabularies


_MINI = []


def mini_model():
    """bertlab-mini (package data), copied once for this file."""
    if not _MINI:
        _MINI.append(bundled("bertlab-mini"))
    return _MINI[0]


@pytest.fixture
def loaded(minilm, monkeypatch):
    """The widgets load models by name once per process: hand them the session's MiniLM and bertlab-mini."""
    from bertlab.viz import widgets as base

    monkeypatch.setitem(base.LOADED, "minilm", minilm)
    monkeypatch.setitem(base.LOADED, "bertlab-mini", mini_model())
    return base.LOADED


def test_neuron_explorer_follows_the_clicked_query(minilm, loaded):
    from bertlab.viz.widgets import NeuronExplorer

    model, tok = minilm
    w = NeuronExplorer(SENTENCE, model="minilm", layer=0, head=2)
    assert w.error is None and [v for _, v in w.query.options] == list(range(len(tok(SENTENCE).tokens)))
    figure = w.figure
    w.query.value = 3                                             # click "sat"
    expected = neuron_figure(attention_neurons(model, tok, SENTENCE, 0, 2), 3)
    assert w.figure is figure                                     # patched in place ...
    for got, want in zip(w.figure.data, expected.data):          # ... to exactly what neuron_figure draws
        assert got.to_plotly_json() == want.to_plotly_json()
    assert w.figure.layout.title.text == expected.layout.title.text
    assert same_figure(w.out.content["figure"], expected)         # the browser gets the new query's figure
    w.text.value = "A dog barked."                                # new text: new tokens, new buttons
    assert [label for label, _ in w.query.options][:2] == ["[CLS] (0)", "a (1)"]
    w.head.value = 5
    assert w.neurons.head == 5 and w.figure.layout.title.text.startswith("layer 0, head 5")
    w.show_view.value = True                                      # bertviz's neuron view of the same text
    assert urls_in(w.view_html) == [] and embedded_params(w.view_html)["head"] == 5
    assert w.view_out.html == w.view_html and w.view_out.content["frame"]   # its scripts run in a frame
    w.show_view.value = False
    assert w.view_out.empty and w.view_html is None
    w.text.value = ""
    assert w.error and "empty" in w.error and w.figure is None


def test_saliency_explorer_redraws_for_each_method(loaded):
    from bertlab.probe.saliency import saliency
    from bertlab.viz.widgets import SaliencyExplorer

    model, tok = loaded["bertlab-mini"]
    text = "The river [MASK] was muddy after the storm."
    w = SaliencyExplorer(text, steps=16)
    assert w.error is None
    w.method.value = "gradient"
    expected = saliency(model, tok, text, method="gradient")
    assert torch.allclose(torch.tensor(w.figure.data[0].z[0]), torch.as_tensor(expected.scores).float(), atol=1e-5)
    assert same_figure(w.out.content["figure"], w.figure)
    w.text.value = "She put her money in the [MASK] on Monday."
    assert w.error is None and "money" in "".join(w.figure.data[0].x)
    w.text.value = "No mask here."
    assert w.error and "[MASK]" in w.error
    w.model_select.value = "minilm"                                # no MLM head: a message and a way out
    assert w.error and "no masked-LM head" in w.error and w.switch.layout.display == ""


def test_context_search_moves_with_the_layer(minilm, loaded):
    from bertlab.viz.widgets import ContextSearch

    model, tok = minilm
    corpus = ["The bank raised its interest rates.", "We fished from the grassy bank of the river.",
              "She opened an account at the bank.", "Ducks rested on the muddy bank."]
    w = ContextSearch("He sat on the bank of the stream.", "bank", corpus=corpus, k=2)
    assert w.error is None and w.layer.value == model.config.num_hidden_layers
    w.layer.value = 0
    expected = nearest_contexts(model, tok, "He sat on the bank of the stream.", "bank", corpus=corpus, layer=0, k=2)
    assert w.result.layer == 0 and [h.sentence for h in w.result.hits] == [h.sentence for h in expected.hits]
    assert w.html == nearest_contexts_html(expected) and w.out.html == w.html     # the table the browser shows
    w.word.value = "zebra"
    assert w.error and "zebra" in w.error and w.result is None and w.out.empty


LONG = ("The old river bank was muddy after the long storm, so the children who had come to fish there "
        "walked back up the [MASK] to the village before dark.")                # ~32 tokens


def test_every_figure_of_the_views_fits_a_notebook(loaded):
    """≤ 1,000 px wide, at the default settings and at 32 tokens (a wider figure scrolls in a notebook)."""
    from bertlab.viz.widgets import HeadAblation, MinimalPairs, NeuronExplorer, SaliencyExplorer

    for text in (None, LONG):
        kw = {} if text is None else {"text": text}
        a = HeadAblation(**kw)
        a.rank.click()
        n = NeuronExplorer(**kw)
        s = SaliencyExplorer(**kw, steps=4)
        m = MinimalPairs(*(() if text is None else (text, text.replace("village", "town"))))
        m.patch_button.click()
        for w, fig in ((a, a.figure), (a, a.importance_figure), (n, n.figure), (s, s.figure), (m, m.figure),
                       (m, m.patch_figure)):
            assert w.error is None, w.error
            assert fig.layout.width is not None and fig.layout.width <= 1000, (type(w).__name__, fig.layout.width)
