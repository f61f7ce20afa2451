"""The book's in-page model, in Chromium with the network cut: the page's tokenizer gives bertlab's ids on
thousands of lines, `window.bertlab` gives Python's guesses, attention and NSP, the live views draw typed text,
and the speed targets hold.

A small book (five lessons rendered without running them, so it builds in seconds) is served from 127.0.0.1;
every other request is aborted and listed, and the tests assert the list is empty.

Timing targets (issue 29): the first result ≤ 5 s after opening a page, ≤ 150 ms per edit at 32 tokens. They
are for a reader's machine with its CPU to itself. This project's machine is shared (its load average is
often several times its 2 cores), so the limits are scaled by the load average per core when that is above 1,
and the raw numbers are printed; bench/live.py measures them properly.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
import unicodedata
from pathlib import Path

import pytest
import torch

from browser.conftest import OfflinePage, serve_folder

pytestmark = [pytest.mark.browser, pytest.mark.slow]
pytest.importorskip("onnx", reason="the in-page model is exported with torch's ONNX exporter: pip install onnx")

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "bertlab" / "assets" / "corpus"
LESSONS = ("02_input_embeddings.ipynb", "03_self_attention.ipynb", "04_masked_lm.ipynb", "05_next_sentence.ipynb",
           "07_contextual_embeddings.ipynb")
FIRST_RESULT_S = 5.0
PER_EDIT_MS = 150.0

# 20 sentences with one [MASK]: the first ones are the kind the lessons use; the rest are kept in this test only
MASKED = [
    "The capital of France is [MASK].",
    "The river [MASK] was muddy after the rain.",
    "She poured the [MASK] into a glass.",
    "He sat down on the [MASK] and read a book.",
    "The children played in the [MASK] after school.",
    "I need to buy some [MASK] at the shop.",
    "The cat chased the [MASK] across the garden.",
    "They went to the [MASK] to see a film.",
    "My brother plays the [MASK] in a band.",
    "It was so cold that the lake [MASK] over.",
    "Please close the [MASK] when you leave.",
    "The doctor told him to take the [MASK] twice a day.",
    "We watched the sun [MASK] behind the hills.",
    "Our teacher wrote the answer on the [MASK].",
    "The train was late because of the [MASK].",
    "A [MASK] of birds flew over the village at dawn.",
    "She keeps her money in a [MASK] under the bed.",
    "The old man walked slowly with his [MASK].",
    "After dinner we washed the [MASK] and went to bed.",
    "The bakery on the corner sells fresh [MASK] every morning.",
]
PAIRS = [
    ("It rained all day.", "The river rose over its banks."),
    ("She opened the door.", "Penguins live in the southern hemisphere."),
    ("We bought a new car.", "It is red and very fast."),
    ("The match ended in a draw.", "My grandmother bakes bread on Sundays."),
    ("He studied for the exam all night.", "In the morning he was tired but ready."),
]


# ---- the site, the server, the browser ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from bertlab.book import build

    notebooks = tmp_path_factory.mktemp("notebooks")
    for name in LESSONS:
        shutil.copy(REPO / "notebooks" / name, notebooks / name)
    book = build(tmp_path_factory.mktemp("book") / "site", notebooks=notebooks, execute=False, reuse=[],
                 cache=tmp_path_factory.mktemp("cache"))
    assert book.live_model is not None
    print(f"\nin-page model: {book.live_model['model'] / 1e6:.1f} MB model, {book.live_model['files'] / 1e6:.1f} MB "
          f"runtime and views")
    return book


@pytest.fixture(scope="module")
def server(site):
    with serve_folder(site.out) as url:
        yield url


class Page(OfflinePage):
    """A page whose every request outside the site is aborted and listed, with its JavaScript errors."""

    def __init__(self, browser, server: str):
        super().__init__(browser, (server, "data:", "blob:"))

    def open(self, url: str, wait_views: bool = True) -> float:
        """Open `url`; returns the seconds from the request to the first fillMask result."""
        t0 = time.perf_counter()
        self.page.goto(url)
        self.page.wait_for_function("window.bertlab !== undefined", timeout=120_000, polling=20)
        self.page.evaluate("bertlab.fillMask('the [MASK] is here .', 1)")
        first = time.perf_counter() - t0
        if wait_views:
            self.page.wait_for_function("document.documentElement.dataset.bertlabLive === 'ready'", timeout=120_000)
        return first


@pytest.fixture(scope="module")
def page(browser, server):
    p = Page(browser, server)
    p.open(server + "04_masked_lm.html")
    yield p
    assert not p.blocked, f"requests left the site: {p.blocked}"
    assert not p.errors, "JavaScript errors:\n" + "\n".join(p.errors)
    p.close()


@pytest.fixture(scope="module")
def mini():
    import bertlab

    return bertlab.load("bertlab-mini", device="cpu")


def _load_factor() -> float:
    """How many times over the machine's cores are asked for (1 when idle): the timing limits scale by it."""
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:
        return 1.0


# ---- the tokenizer ------------------------------------------------------------------------------------------

def _lines() -> list[str]:
    """Thousands of lines: the bundled corpus (English and Korean), and made-up lines with accents, digits and
    odd Unicode (combining marks, full-width forms, emoji, control and zero-width characters, CJK)."""
    lines = []
    for path in sorted(CORPUS.rglob("*.txt")):
        lines += [l for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
    odd = ["Café naïve résumé façade Ångström Øresund Straße ŁÓDŹ", "Crème brûlée costs €4,50 or £3.99 (2024-01-31)",
           "e\u0301 vs é, A\u030a vs Å, ﬁ ligature, ｆｕｌｌ ｗｉｄｔｈ １２３", "3.14159 1,000,000 0x1F 2^10 -42 +7 1e-5 ½ ² ³",
           "emoji 😀👍🏽 👩‍👩‍👧 flags 🇰🇷🇫🇷 and ✓ ✗ ★", "zero\u200bwidth\u200cjoin\u200d and soft\u00adhyphen",
           "tab\tand\u00a0nbsp\u3000ideographic space", "control \x07 bell \x1b escape \x7f delete", "中文字符 日本語 ひらがな カタカナ",
           "Ελληνικά Русский עברית العربية हिन्दी ไทย", "ＡＢＣ ＼ 〜 ― “quotes” ‘single’ «guillemets» —dash– …",
           "don't won't it's O'Neil rock'n'roll e-mail co-operate", "[MASK] [CLS] [SEP] [PAD] [UNK] [mask] [ MASK ]",
           "ⅰⅱⅲ Ⅳ ① ② ℃ ℉ ™ © ® № ℓ µ Ω", "ᄀ ᅡ ᆨ 한국어 자모 ㄱㄴㄷ ㅏㅑㅓ 갂 힣", "MiXeD CaSe ÀÉÎÕÜ ǅ ǈ ǋ İstanbul",
           "𝐁𝐨𝐥𝐝 𝑖𝑡𝑎𝑙𝑖𝑐 𝔉𝔯𝔞𝔨𝔱𝔲𝔯 𝟙𝟚𝟛", "a" * 120 + " " + "é" * 30, "ǃ ǂ ǀ ʼ ˈ ː ̃ ̈", "\ufeffBOM at the start"]
    lines += odd
    digits = [f"line {i}: {i * 7919 % 100003} items at {i / 7:.3f} each, {i}% off" for i in range(200)]
    accents = [unicodedata.normalize(form, l) for form in ("NFD", "NFKC") for l in lines[:400:4]]
    return lines + digits + accents


def test_the_page_tokenizer_gives_bertlabs_ids_on_every_line(page, mini):
    _, tokenizer = mini
    lines = _lines()
    assert len(lines) >= 3000, len(lines)
    pairs = list(zip(lines[:300:3], lines[1:300:3]))
    got = page.page.evaluate("""async ([lines, pairs]) => {
        const one = [], two = [];
        for (const l of lines) { try { one.push((await bertlab.encode(l)).ids); } catch (e) { one.push(String(e)); } }
        for (const [a, b] of pairs) { const e = await bertlab.encode(a, b); two.push([e.ids, e.token_type_ids]); }
        return [one, two]; }""", [lines, pairs])
    wrong = []
    for line, ids in zip(lines, got[0]):
        want = tokenizer(line).input_ids
        if ids != want:
            wrong.append((line, want, ids))
    for (a, b), (ids, types) in zip(pairs, got[1]):
        enc = tokenizer(a, b)
        if [ids, types] != [enc.input_ids, enc.token_type_ids]:
            wrong.append(((a, b), enc.input_ids, ids))
    print(f"\ntokenizer parity: {len(lines)} lines and {len(pairs)} pairs, {len(wrong)} differ")
    assert not wrong, f"{len(wrong)} of {len(lines) + len(pairs)} differ; first: {wrong[:3]}"


def test_the_book_carries_the_model_and_its_page(site):
    assert "what-runs-where.html" in site.pages
    lesson = (site.out / "03_self_attention.html").read_text(encoding="utf-8")
    assert '<script type="module" src="_static/live/live-views.mjs">' in lesson
    assert "Type your own sentence here" in lesson and 'href="what-runs-where.html">What runs where</a>' in lesson
    live = site.out / "_static" / "live"
    assert (live / "model" / "weights.fp16").is_file() and (live / "vendor" / "VENDOR.json").is_file()
    assert site.live_model["model"] + site.live_model["files"] <= 60e6      # the budget for the site


def test_a_text_longer_than_the_model_is_refused_with_a_message(page):
    msg = page.page.evaluate("bertlab.fillMask('word '.repeat(600) + '[MASK]', 5).then(() => 'no error', e => e.message)")
    assert "at most 512" in msg and "shorten" in msg, msg


@pytest.mark.parametrize("call, needle", [
    ("bertlab.fillMask('no mask here', 5)", "exactly one [MASK]"),
    ("bertlab.fillMask('two [MASK] [MASK]', 5)", "found 2"),
    ("bertlab.fillMask('a [MASK] .', 0)", "at least 1"),
    ("bertlab.fillMask('', 5)", "non-empty"),
    ("bertlab.nextSentence('a sentence', '   ')", "non-empty"),
    ("bertlab.attentions(42)", "non-empty"),
    ("bertlab.forward('a b c', null, [9])", "token positions 0 … 4"),
    ("bertlab.forward('a b c', null, [], {lens: [-1]})", "token positions"),
    ("bertlab.forward('a b c', null, [], {maskAt: [0]})", "cannot be masked"),
    ("document.querySelector('[data-bertlab-view=fill]').bertlabSet('nope', 1)", "no control nope: this view's are text"),
])
def test_bad_calls_to_the_page_api_say_what_was_wrong(page, call, needle):
    msg = page.page.evaluate(f"{call}.then(() => 'no error', e => e.message)")
    assert needle in msg, msg


# ---- parity with Python -------------------------------------------------------------------------------------

def test_fill_mask_top5_equals_pythons_on_20_sentences(page, mini):
    import bertlab

    model, tokenizer = mini
    got = page.page.evaluate("async (ss) => { const r = []; for (const s of ss) r.push(await bertlab.fillMask(s, 5)); "
                             "return r; }", MASKED)
    for text, guesses in zip(MASKED, got):
        want = bertlab.fill_mask(model, tokenizer, text, top_k=5).guesses[0]
        assert [g["token"] for g in guesses] == [g.token for g in want], text
        assert max(abs(g["prob"] - w.probability) for g, w in zip(guesses, want)) < 1e-4, text


def test_attention_equals_pythons_within_1e3_on_20_sentences(page, mini):
    model, tokenizer = mini
    texts = [t.replace("[MASK]", "thing") for t in MASKED]
    worst = 0.0
    for text in texts:
        got = torch.tensor(page.page.evaluate("(t) => bertlab.attentions(t)", text))
        with torch.no_grad():
            out = model(**tokenizer(text).to_tensors("cpu"), output_attentions=True)
        want = torch.stack(out.attentions, 1)[0]               # (L, heads, T, T)
        assert got.shape == want.shape, text
        worst = max(worst, float((got - want).abs().max()))
    print(f"\nlargest attention difference: {worst:.2g}")
    assert worst <= 1e-3


def test_next_sentence_equals_pythons(page, mini):
    import bertlab

    model, tokenizer = mini
    for a, b in PAIRS:
        got = page.page.evaluate("([a, b]) => bertlab.nextSentence(a, b)", [a, b])
        assert abs(got - bertlab.next_sentence(model, tokenizer, a, b)) < 1e-4, (a, b)


def test_logit_lens_equals_pythons(page, mini):
    import bertlab

    model, tokenizer = mini
    text = MASKED[1]
    got = page.page.evaluate("""async (t) => { const e = await bertlab.encode(t); const m = e.tokens.indexOf('[MASK]');
        const r = await bertlab.forward(t, null, [m], {lens: [m]}); return (await bertlab.lens(r, 3)).map(l => l[0].map(g => g.token)); }""",
                             text)
    want = bertlab.fill_mask(model, tokenizer, text, top_k=3, by_layer=True).by_layer
    assert got == [[g.token for g in layer[0]] for layer in want]


# ---- the live views on typed text: the notebook's view modules, the in-page model's numbers ---------------------

def _panes(p, view: str) -> dict:
    """Every figure the view's module drew, by pane name (the widget's attribute): trace types, title and data as
    plotly.js holds them."""
    return p.page.evaluate("""(view) => {
        const el = document.querySelector(`[data-bertlab-view="${view}"]`);
        const T = {f4: Float32Array, f8: Float64Array, i1: Int8Array, u1: Uint8Array, i2: Int16Array, u2: Uint16Array,
                   i4: Int32Array, u4: Uint32Array};
        // a figure's typed array as the template sent it ({dtype, shape, bdata}), or a (nested) array
        const arr = (a) => a === undefined || a === null ? null : a.bdata ? Array.from(new T[a.dtype](a.bdata))
          : Array.from(a, (r) => typeof r === "object" && r !== null ? Array.from(r) : r);
        const names = Object.fromEntries(Object.entries(el.bertlabControls).map(([k, v]) => [v, k]));
        const out = {};
        for (const d of el.querySelectorAll(".bl-view [data-kind=output]")) {
          if (!d.data || d.dataset.empty) continue;
          out[names[d.dataset.id]] = {title: d.layout.title.text, width: d.layout.width, height: d.layout.height,
            traces: d.data.map((t) => ({type: t.type, x: arr(t.x), y: arr(t.y), z: arr(t.z), text: arr(t.text),
                                        customdata: arr(t.customdata)}))};
        }
        return out; }""", view)


def _set(p, view: str, name: str, value=None, click: bool = False) -> None:
    """Set a view's control as a person would (the module's own event), and wait until it is drawn."""
    p.page.evaluate("([view, name, value, click]) => document.querySelector(`[data-bertlab-view=\"${view}\"]`)"
                    ".bertlabSet(name, value, click)", [view, name, value, click])


def _html(p, view: str, name: str) -> str:
    """The text of a view's HTML pane by name ("message", "guesses_out")."""
    return p.page.evaluate("""([view, name]) => { const el = document.querySelector(`[data-bertlab-view="${view}"]`);
        return el.querySelector(`[data-id="${el.bertlabControls[name]}"]`).innerText; }""", [view, name])


def _same_figure(got: dict, fig, atol: float) -> None:
    """A figure the page drew equals `fig` (the notebook widget's go.Figure): trace types, title, size, labels,
    and numbers within `atol`."""
    import numpy as np

    assert got["title"] == fig.layout.title.text
    assert (got["width"], got["height"]) == (fig.layout.width, fig.layout.height)
    assert [t["type"] for t in got["traces"]] == [t.type for t in fig.data]
    for g, t in zip(got["traces"], fig.data):
        for key in ("x", "y", "z"):
            want = getattr(t, key, None)
            if want is None:
                continue
            want = np.asarray(want.tolist() if hasattr(want, "tolist") else want, dtype=object)
            have = np.asarray(g[key], dtype=object)
            assert have.shape == want.shape, (key, have.shape, want.shape)
            if want.size and isinstance(want.flat[0], str):
                assert have.tolist() == want.tolist(), key
            else:
                np.testing.assert_allclose(have.astype(float), want.astype(float), atol=atol, err_msg=key)


def test_the_live_views_draw_what_the_notebooks_widgets_draw(browser, server, mini):
    """Each live view is the notebook's widget drawn by the same module: on a new text, the page's figures equal
    the figures bertlab.viz builds in Python for the same text (trace types, titles, labels, numbers)."""
    from bertlab.viz import AttentionExplorer, ContextExplorer, EmbeddingSumExplorer, NSPExplorer

    p = Page(browser, server)
    try:
        p.open(server + "03_self_attention.html")
        text = "The old dog slept by the warm [MASK] all night."
        _set(p, "attention", "text", text)
        _set(p, "attention", "layer", 3)
        _set(p, "attention", "head", 7)
        _set(p, "attention", "show_grid", True)
        w = AttentionExplorer(text, model="bertlab-mini", layer=3, head=7)
        w.show_grid.value = True
        got = _panes(p, "attention")
        _same_figure(got["out"], w.figure, 1e-3)
        _same_figure(got["grid_out"], w.grid_figure, 1e-3)
        guesses = _html(p, "attention", "guesses_out")
        assert all(g.token in guesses for g in w.guesses.guesses[0]), guesses

        p.open(server + "02_input_embeddings.html")
        text = "Birds sing in the morning."
        _set(p, "embeddings", "text", text)
        w = EmbeddingSumExplorer(text, "", model="bertlab-mini")
        _same_figure(_panes(p, "embeddings")["out"], w.figure, 1e-3)

        p.open(server + "05_next_sentence.html")
        a, b = PAIRS[2]
        _set(p, "nsp", "a", b)
        _set(p, "nsp", "b", a)
        _set(p, "nsp", "swap", click=True)                 # A and B back in order, by the view's own button
        w = NSPExplorer(a, b, model="bertlab-mini")
        _same_figure(_panes(p, "nsp")["out"], w.figure, 1e-4)

        p.open(server + "07_contextual_embeddings.html")
        sentences = ["We sat on the bank of the river.", "The bank lent them money.", "Fish swam near the bank."]
        _set(p, "context", "sentences", "\n".join(sentences))
        _set(p, "context", "layer", 4)
        w = ContextExplorer("bank", sentences, model="bertlab-mini", layer=4)
        _same_figure(_panes(p, "context")["out"], w.figure, 1e-3)
        _set(p, "context", "show", 1)                      # drift by layer
        w.show.value = "drift by layer"
        _same_figure(_panes(p, "context")["out"], w.figure, 1e-3)
        _set(p, "context", "show", 2)                      # the PCA: the notebook's, said so
        assert "run it live" in _html(p, "context", "message")
        _set(p, "context", "word", "river")                # not in every sentence: the widget's own message
        assert "is not a word of sentence 2" in _html(p, "context", "message")
        assert not p.blocked and not p.errors, (p.blocked, p.errors)
    finally:
        p.close()


def test_the_fill_view_takes_typed_text_and_a_click(page, mini):
    """MaskPlayground in the page: typed into its own text box (the module's control), then a word clicked."""
    import bertlab
    from bertlab.viz import MaskPlayground

    model, tokenizer = mini
    sel = '[data-bertlab-view="fill"]'
    text = MASKED[17]
    before = page.page.get_attribute(sel, "data-updates")
    box = page.page.locator(f"{sel} .bl-view input[type=text]")
    box.fill(text)
    box.press("Enter")
    page.page.wait_for_function(f"(b) => document.querySelector('{sel}').dataset.updates !== b", arg=before,
                                timeout=60_000)
    w = MaskPlayground(text, model="bertlab-mini", mask=None)
    got = _panes(page, "fill")
    _same_figure(got["out"], w.figure, 1e-4)
    layers = got["layers_out"]
    _same_figure(layers, w.layers_figure, 1e-4)
    assert layers["traces"][0]["text"] == [[g.token for g in layer[0]] for layer in w.result.by_layer]
    # the masking lab: a sentence without [MASK] (the position chosen before stays chosen, as in the notebook),
    # then another word clicked: the guesses at it
    _set(page, "fill", "text", "Hi there.")                # shorter than the position chosen before
    assert "click a token" in _html(page, "fill", "message")
    _set(page, "fill", "text", "The old man walked slowly with his stick.")
    before = page.page.get_attribute(sel, "data-updates")
    page.page.locator(f"{sel} .bl-view button", has_text="old").click()
    page.page.wait_for_function(f"(b) => document.querySelector('{sel}').dataset.updates !== b", arg=before,
                                timeout=60_000)
    top = bertlab.fill_mask(model, tokenizer, "The [MASK] man walked slowly with his stick.", top_k=5).guesses[0]
    assert _panes(page, "fill")["out"]["traces"][0]["customdata"] == [g.token for g in top]
    _set(page, "fill", "text", "   ")
    assert "non-empty" in _html(page, "fill", "message")


def test_the_book_ships_the_notebooks_view_modules(site):
    """The page imports the very module a notebook's view runs (bertlab.viz.views.esm), not a copy of its own."""
    from bertlab.viz.views import esm

    views = site.out / "_static" / "live" / "views"
    for module in ("view", "attention"):
        assert (views / f"{module}.mjs").read_text(encoding="utf-8") == esm(module)
    live = (site.out / "_static" / "live" / "live-views.mjs").read_text(encoding="utf-8")
    assert "Plotly.react" not in live and "createElement(\"canvas\")" not in live     # it draws nothing itself


# ---- speed --------------------------------------------------------------------------------------------------

def test_first_result_and_each_edit_are_fast_enough(browser, server, page):
    p = Page(browser, server)
    try:
        load = _load_factor()
        first = p.open(server + "05_next_sentence.html", wait_views=False)
        text = ("the man went to the [MASK] to buy milk , bread , eggs and some fresh fruit for his three little children "
                "before the long walk back home today .")
        n = len(p.page.evaluate("(t) => bertlab.encode(t)", text)["ids"])
        assert n == 32, n
        # an edit: one forward pass and what the page API makes of it (fill-mask, or every attention map)
        times = p.page.evaluate("""async (t) => { const fill = [], attn = [];
            for (let i = 0; i < 12; i++) {
              let t0 = performance.now(); await bertlab.fillMask(t, 5); fill.push(performance.now() - t0);
              t0 = performance.now(); await bertlab.attentions(t.replace('[MASK]', 'shop')); attn.push(performance.now() - t0); }
            return [fill, attn]; }""", text)
        per_edit = max(statistics.median(times[0][2:]), statistics.median(times[1][2:]))
        print(f"\nfirst result {first:.2f} s; per edit at 32 tokens, median: fill-mask "
              f"{statistics.median(times[0][2:]):.0f} ms, attention {statistics.median(times[1][2:]):.0f} ms; "
              f"load factor {load:.1f}; {p.page.evaluate('bertlab.timings')}")
        assert first <= FIRST_RESULT_S * load, f"first result after {first:.1f} s (load factor {load:.1f})"
        assert per_edit <= PER_EDIT_MS * load, f"{per_edit:.0f} ms per edit (load factor {load:.1f})"
    finally:
        p.close()
