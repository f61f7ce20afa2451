"""Attention views offline: bertviz's head/model views with nothing fetched, and bertlab's AttentionView.

The views are checked three ways: the HTML string (no URL, the libraries inlined, the data equal to the
model's), a real headless Chromium with the network cut off (the JavaScript ran: tokens are drawn as SVG
text, and the page tried to fetch nothing), and the figures and files of AttentionView.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("bertviz", reason="the attention views need bertviz (the notebooks extra)")
pytest.importorskip("plotly", reason="the attention views need plotly (the notebooks extra)")

from bertlab.viz.attention_view import AttentionView  # noqa: E402
from bertlab.viz.bertviz_views import head_view, head_view_html, model_view, model_view_html  # noqa: E402
from testkit import embedded_params, model_attentions, urls_in  # noqa: E402

torch.set_num_threads(1)

SENTENCE = "The cat sat on the mat because it was tired."
PAIR = ("The river bank was muddy.", "She sat on the bank and fished.")
CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH: the browser checks need one")


def long_text(n_tokens: int) -> str:
    """A text of exactly n_tokens tokens for MiniLM ([CLS] and [SEP] included): single-token words."""
    words = itertools.cycle("the river bank was muddy after the rain".split())
    return " ".join(itertools.islice(words, n_tokens - 2))


@pytest.fixture(scope="module")
def views(minilm):
    """The HTML of both views for a sentence and for a pair, made once."""
    model, tok = minilm
    return {
        ("head", "sentence"): head_view(model, tok, SENTENCE).data,
        ("head", "pair"): head_view(model, tok, *PAIR).data,
        ("model", "sentence"): model_view(model, tok, SENTENCE).data,
        ("model", "pair"): model_view(model, tok, *PAIR).data,
    }


# ---- bertviz views: the HTML string -------------------------------------------------------------------

@pytest.mark.parametrize("key", [("head", "sentence"), ("head", "pair"), ("model", "sentence"), ("model", "pair")])
def test_views_are_self_contained(views, minilm, key):
    html = views[key]
    assert urls_in(html) == []                                   # no CDN, no require.js, nothing to fetch
    assert "<script src" not in html and "require.min.js" not in html and "cdnjs" not in html
    assert html.count("</script>") == 1                          # one script: libraries, shim and view
    assert "jQuery v2.2.4" in html and '"5.7.0"' in html          # jQuery's banner, d3's version string
    model, tok = minilm
    text = (SENTENCE,) if key[1] == "sentence" else PAIR
    tokens = tok(*text).tokens
    params = embedded_params(html)
    assert params["attention"][0]["left_text"] == tokens
    for t in tokens:
        assert json.dumps(t) in html


@pytest.mark.slow
@pytest.mark.parametrize("key", [("head", "sentence"), ("head", "pair"), ("model", "sentence"), ("model", "pair")])
def test_embedded_data_is_the_models_attention(views, minilm, key):
    model, tok = minilm
    text = (SENTENCE,) if key[1] == "sentence" else PAIR
    expected = model_attentions(model, tok, *text)               # (L, heads, T, T)
    params = embedded_params(views[key])
    got = torch.tensor(params["attention"][0]["attn"], dtype=torch.float64)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected.double(), atol=1e-6, rtol=0)
    if key[1] == "pair":
        b = tok(*PAIR).token_type_ids.index(1)                   # sentence_b_start: the first B token
        names = [d["name"] for d in params["attention"]]
        assert names == ["All", "Sentence A -> Sentence A", "Sentence B -> Sentence B",
                         "Sentence A -> Sentence B", "Sentence B -> Sentence A"]
        a_to_b = params["attention"][3]
        assert len(a_to_b["left_text"]) == b and a_to_b["right_text"] == tok(*PAIR).tokens[b:]
        got_ab = torch.tensor(a_to_b["attn"], dtype=torch.float64)
        torch.testing.assert_close(got_ab, expected[:, :, :b, b:].double(), atol=1e-6, rtol=0)
    else:
        assert len(params["attention"]) == 1


def test_each_view_has_its_own_div_id(views):
    ids = [re.search(r'<div id="(bertviz-[0-9a-f]+)"', html).group(1) for html in views.values()]
    assert len(set(ids)) == len(ids)
    for html, root in zip(views.values(), ids):
        assert embedded_params(html)["root_div_id"] == root      # the script draws into its own div


@pytest.mark.slow
def test_html_functions_take_a_bertoutput_and_options(minilm):
    model, tok = minilm
    enc = tok(SENTENCE)
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    html = head_view_html(attentions=out, tokens=enc.tokens, layer=-1, heads=[0, 3])
    params = embedded_params(html)
    assert params["layer"] == 5 and params["heads"] == [0, 3]
    html = model_view_html(attentions=out.attentions, tokens=enc.tokens, layers=[0, 2], heads=[1],
                           display_mode="light")
    attn = torch.tensor(embedded_params(html)["attention"][0]["attn"])
    assert attn.shape == (2, 1, len(enc), len(enc))
    torch.testing.assert_close(attn[1, 0], out.attentions[2][0, 1], atol=1e-6, rtol=0)


def test_tokens_stay_data():
    """A token is drawn as text, whatever it holds: it cannot close the script, nor be taken for a URL."""
    attn = [torch.full((1, 1, 4, 4), 1 / 4)]
    tokens = ["[CLS]", "</script><b>", '<script src="https://x.org/a.js"></script>', "[SEP]"]
    html = head_view_html(attentions=attn, tokens=tokens)
    assert "</script><b>" not in html and html.count("</script>") == 1
    assert embedded_params(html)["attention"][0]["left_text"] == tokens


# ---- bertviz views in a real browser, network cut off ----------------------------------------------------

def chromium(path: Path) -> tuple[str, list[str]]:
    """Open `path` in headless Chromium with DNS cut off; return the DOM after the scripts ran and the
    http(s) URLs the page itself asked for (from Chromium's network log; Chromium's own background
    requests have no page initiator and are left out)."""
    tmp = Path(tempfile.mkdtemp(prefix="bertlab-chromium-"))
    try:
        netlog = tmp / "netlog.json"
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage", f"--user-data-dir={tmp / 'profile'}", "--host-resolver-rules=MAP * ~NOTFOUND",
               f"--log-net-log={netlog}", "--virtual-time-budget=5000", "--dump-dom", path.as_uri()]
        dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout
        log = json.loads(netlog.read_text())
        start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        asked = [e["params"].get("url", "") for e in log["events"]
                 if e["type"] == start_job and e.get("params", {}).get("initiator") != "not an origin"]
        return dom, [u for u in asked if u and not u.startswith(("file:", "data:", "blob:"))]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def view_doms(dom: str) -> dict[str, str]:
    """Each bertviz view's rendered <div>, by id."""
    parts = re.split(r'(?=<div id="bertviz-)', dom)[1:]
    return {re.match(r'<div id="(bertviz-[0-9a-f]+)"', p).group(1): p.split("<script")[0] for p in parts}


@pytest.mark.slow
@needs_chromium
def test_views_render_offline_in_chromium(views, minilm, tmp_path):
    model, tok = minilm
    page = tmp_path / "views.html"
    probe = ("<script>document.body.setAttribute('data-globals', [typeof window.$, typeof window.jQuery, "
             "typeof window.d3, typeof window.require, typeof window.requirejs, typeof window.define].join());"
             "</script>")
    order = [("head", "pair"), ("head", "sentence"), ("model", "pair")]   # several views on one page
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
                    + "".join(views[k] for k in order) + probe + "</body></html>")
    dom, asked = chromium(page)
    assert asked == []                                           # the page fetched nothing
    assert 'data-globals="undefined,undefined,undefined,undefined,undefined,undefined"' in dom  # nothing leaked
    rendered = list(view_doms(dom).values())
    assert len(rendered) == 3
    for (kind, what), div in zip(order, rendered):
        tokens = tok(*(PAIR if what == "pair" else (SENTENCE,))).tokens
        texts = re.findall(r"<text[^>]*>([^<]*)</text>", div)
        if kind == "head":                                       # every token drawn left and right
            assert texts == tokens + tokens
            assert div.count("<line") == model.config.num_attention_heads * len(tokens) ** 2
        else:                                                    # a thumbnail per layer × head
            assert texts[0] == "Heads" and "Layers" in texts
            assert div.count('<option value="') == 5 and "<svg" in div


@pytest.mark.slow
@needs_chromium
def test_bertviz_alone_fetches_from_a_cdn(tmp_path):
    """The control: the same check catches bertviz's own view asking a CDN, and drawing nothing offline."""
    from bertviz import head_view as bertviz_head_view

    page = tmp_path / "bertviz.html"
    attn = [torch.full((1, 2, 3, 3), 1 / 3)]
    page.write_text("<html><body>" + bertviz_head_view(attn, ["a", "b", "c"], html_action="return").data
                    + "</body></html>")
    dom, asked = chromium(page)
    assert any("cdnjs.cloudflare.com" in u for u in asked)
    assert "<text" not in dom


# ---- AttentionView ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def batch_view(minilm):
    model, tok = minilm
    texts = [SENTENCE, long_text(300), PAIR[0]]
    return AttentionView(model, tok, texts, text_pairs=[None, None, PAIR[1]])


@pytest.mark.slow
def test_attention_view_batch_equals_the_model(batch_view, minilm):
    model, tok = minilm
    view = batch_view
    texts = [(SENTENCE,), (long_text(300),), PAIR]
    assert view.lengths == [len(tok(*t)) for t in texts] and view.lengths[1] == 300
    assert view.truncated == [False, False, False]
    assert view.sentence_b_starts == [None, None, tok(*PAIR).token_type_ids.index(1)]
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    for i, t in enumerate(texts):
        n = view.lengths[i]
        expected = model_attentions(model, tok, *t)              # unpadded: padding must not change a weight
        assert view.attentions(i).shape == (L, H, n, n)
        torch.testing.assert_close(view.attentions(i), expected, atol=1e-5, rtol=0)
        fig = view.figure(i, layer=L - 1, head=2)
        z = np.asarray(fig.data[0].z)
        assert z.shape == (n, n)
        np.testing.assert_allclose(z, expected[L - 1, 2].numpy(), atol=1e-5, rtol=0)


def test_attention_view_ticks(batch_view):
    short = batch_view.figure(0, layer=0, head=0).layout
    assert list(short.xaxis.ticktext) == batch_view.tokens[0]    # short: every token named
    long = batch_view.figure(1, layer=0, head=0)
    ticks = list(long.layout.xaxis.ticktext) + list(long.layout.yaxis.ticktext)
    assert all(t.isdigit() for t in ticks) and len(long.layout.xaxis.ticktext) <= 12   # positions, not tokens
    assert len(long.data[0].x) == 300 and "[CLS] (0)" == long.data[0].x[0]              # hover still has them
    assert "%{x}" in long.data[0].hovertemplate


@pytest.mark.slow
def test_attention_view_grid(batch_view, minilm, monkeypatch):
    model, _ = minilm
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    grid = batch_view.figure(0)                                  # 12 tokens: exact
    assert len(grid.data) == L * H
    np.testing.assert_allclose(np.asarray(grid.data[H + 3].z), batch_view.attentions(0)[1, 3].numpy(), atol=0)
    grid = batch_view.figure(1)                                  # 300 tokens: max over 5 × 5 blocks
    assert len(grid.data) == L * H and np.asarray(grid.data[0].z).shape == (60, 60)
    pooled = F.max_pool2d(batch_view.attentions(1)[2:3, 7], 5, ceil_mode=True)[0]
    np.testing.assert_allclose(np.asarray(grid.data[2 * H + 7].z), pooled.numpy(), atol=0)
    assert grid.layout.xaxis.showticklabels is False
    assert len(batch_view.figure(1, layer=3).data) == H and len(batch_view.figure(1, head=3).data) == L
    import plotly.io as pio

    monkeypatch.setattr(pio.renderers, "default", "plotly_mimetype")   # what a Jupyter kernel picks
    bundle = batch_view._repr_mimebundle_()                   # a notebook shows example 0's grid
    assert len(bundle["application/vnd.plotly.v1+json"]["data"]) == L * H


def test_attention_view_truncates_to_max_length(minilm):
    model, tok = minilm
    view = AttentionView(model, tok, long_text(80), max_length=50)
    assert view.lengths == [50] and view.truncated == [True] and view.tokens[0][-1] == "[SEP]"
    assert "truncated" in view.figure(0, 0, 0).layout.title.text


@pytest.mark.slow
def test_to_html_is_standalone(batch_view, tmp_path):
    path = batch_view.to_html(tmp_path / "view.html", index=2)
    html = path.read_text(encoding="utf-8")
    assert "<script src" not in html and "<link" not in html and "cdn.plot.ly" not in html.split("plotly.js v")[0]
    blocks = re.findall(r"<script[^>]*>(.*?)</script>", html, flags=re.S)
    plotly_js = [b for b in blocks if b.lstrip().startswith("/**\n* plotly.js v")]
    assert len(plotly_js) == 1 and len(plotly_js[0]) > 1_000_000 # plotly.js itself, inline
    rest = html.replace(plotly_js[0], "")
    assert urls_in(rest) == []                                   # the page around plotly.js names no URL
    fig = batch_view.html_figure(2)
    L, H = batch_view.num_layers, batch_view.num_heads
    assert len(fig.data) == L * H and [t.visible for t in fig.data].count(True) == 1
    assert len(fig.layout.updatemenus[0].buttons) == L and len(fig.layout.sliders) == L
    assert all(len(s.steps) == H for s in fig.layout.sliders)
    if CHROMIUM is not None:                                     # opens with no network and draws
        dom, asked = chromium(path)
        assert asked == []
        assert "main-svg" in dom and "layer 0, head 0" in dom


@pytest.mark.slow
@needs_chromium
def test_to_png(batch_view, tmp_path):
    path = batch_view.to_png(tmp_path / "head.png", index=1, layer=2, head=3)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1024


# ---- bad inputs -------------------------------------------------------------------------------------------

class NoAttentions(torch.nn.Module):
    """A model that ignores output_attentions."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert
        self.config = bert.config

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, output_attentions=False):
        out = self.bert(input_ids, token_type_ids, attention_mask)
        return out


@pytest.mark.parametrize("args, match", [
    (("",), "text is empty"),
    (("   ",), "text is empty"),
    ((None, "a pair"), "text_pair given without text"),
    (("", "a pair"), "text_pair given without text"),
    (("a sentence", ""), "text_pair is empty"),
    ((42,), "must be a str"),
    ((long_text(200),), "AttentionView"),
    ((long_text(600),), "longer than the model's maximum of 512"),
])
def test_views_reject_bad_text(minilm, args, match):
    model, tok = minilm
    with pytest.raises(ValueError, match=match):
        head_view(model, tok, *args)
    with pytest.raises(ValueError, match=match):
        model_view(model, tok, *args)


def test_without_bertviz_the_views_say_how_to_install_it(minilm, monkeypatch):
    from bertlab.viz.bertviz_views import bertviz
    model, tok = minilm
    monkeypatch.setitem(sys.modules, "bertviz", None)      # `import bertviz` fails, as where it is not installed
    for call in (bertviz, lambda: head_view(model, tok, SENTENCE), lambda: model_view(model, tok, SENTENCE)):
        with pytest.raises(ImportError, match=r"bertviz is not installed.*pip install bertviz"):
            call()
    assert len(AttentionView(model, tok, [SENTENCE])) == 1               # bertlab's own view needs no bertviz


def test_bad_model_and_arguments(minilm):
    model, tok = minilm
    with pytest.raises(ValueError, match="no attention weights"):
        head_view(NoAttentions(model), tok, SENTENCE)
    with pytest.raises(ValueError, match="no attention weights"):
        AttentionView(NoAttentions(model), tok, [SENTENCE])
    enc = tok(SENTENCE)
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
        plain = model(**enc)
    T = len(enc)
    with pytest.raises(ValueError, match="output_attentions=True"):
        head_view_html(attentions=plain, tokens=enc.tokens)
    with pytest.raises(ValueError, match="tokens given"):
        head_view_html(attentions=out, tokens=enc.tokens[:-1])
    with pytest.raises(ValueError, match="batch of 2"):
        head_view_html(attentions=[torch.cat([a, a]) for a in out.attentions], tokens=enc.tokens)
    with pytest.raises(ValueError, match="sentence_b_start"):
        head_view_html(attentions=out, tokens=enc.tokens, sentence_b_start=T)
    with pytest.raises(ValueError, match="layer 6 does not exist"):
        head_view_html(attentions=out, tokens=enc.tokens, layer=6)
    with pytest.raises(ValueError, match="head 12 does not exist"):
        model_view_html(attentions=out, tokens=enc.tokens, heads=[12])
    with pytest.raises(ValueError, match="display_mode"):
        model_view_html(attentions=out, tokens=enc.tokens, display_mode="neon")
    with pytest.raises(ValueError, match="per-layer tensors"):
        head_view_html(attentions=out.attentions[0], tokens=enc.tokens)


@pytest.mark.parametrize("fn", [head_view_html, model_view_html])
def test_the_html_views_have_one_calling_form_and_take_computed_attention_by_keyword(minilm, fn):
    model, tok = minilm
    enc = tok(SENTENCE)
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    ran = embedded_params(fn(model, tok, SENTENCE))
    given = embedded_params(fn(attentions=out, tokens=enc.tokens))
    assert ran["attention"][0]["attn"] == given["attention"][0]["attn"]      # the same weights, either way
    name = fn.__name__
    cases = [
        (lambda: fn(out, enc.tokens), TypeError, rf"{name} runs a model: pass \(model, tokenizer, text\), not a "
                                                 rf"BertOutput; .* by keyword: {name}\(attentions=out"),
        (lambda: fn(out.attentions, enc.tokens), TypeError, "not a tuple; for attention already computed"),
        (lambda: fn("a model", tok, SENTENCE), TypeError, r"not a str$"),
        (lambda: fn(model, tok, SENTENCE, attentions=out, tokens=enc.tokens), ValueError, "not both"),
        (lambda: fn(attentions=out), ValueError, "needs both"),
        (lambda: fn(tokens=enc.tokens), ValueError, "needs both"),
        (lambda: fn(model, tok), ValueError, "text must be a str, got NoneType"),
        (lambda: fn(model, tok, SENTENCE, sentence_b_start=3), ValueError, "read off the encoding"),
        (lambda: fn(attentions=out, tokens="the cat"), ValueError, "tokens must be a list of str"),
        (lambda: fn(attentions=None, tokens=enc.tokens), ValueError, "needs both"),
    ]
    for call, error, words in cases:
        with pytest.raises(error, match=words):
            call()


def test_attention_view_rejects_bad_input(minilm, batch_view):
    model, tok = minilm
    with pytest.raises(ValueError, match="non-empty list"):
        AttentionView(model, tok, [])
    with pytest.raises(ValueError, match=r"text\[1\] is empty"):
        AttentionView(model, tok, [SENTENCE, ""])
    with pytest.raises(ValueError, match="one pair"):
        AttentionView(model, tok, [SENTENCE, SENTENCE], text_pairs=["b"])
    with pytest.raises(ValueError, match=r"text_pair\[0\] given without text\[0\]"):
        AttentionView(model, tok, ["", SENTENCE], text_pairs=["b", None])
    with pytest.raises(ValueError, match="max_length"):
        AttentionView(model, tok, [SENTENCE], max_length=1)
    with pytest.raises(ValueError, match="example 3 does not exist"):
        batch_view.figure(3)
    with pytest.raises(ValueError, match="layer 6 does not exist"):
        batch_view.figure(0, layer=6, head=0)
    with pytest.raises(ValueError, match="head -13 does not exist"):
        batch_view.to_png("unused.png", 0, layer=0, head=-13)
    with pytest.raises(ValueError, match="no layers selected"):
        batch_view.html_figure(0, layers=[])
