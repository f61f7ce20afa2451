"""One way to call everything: names, calling conventions and result types agree across bertlab and bertlab.viz.

- every public name says what it is for (a docstring of its own) and every public function what it returns;
- README.md's "API at a glance" table is what bertlab/api_table.py (scripts/api_table.py) writes from the code today;
- probe/__init__.py only re-exports, and no probe module imports from it;
- the old spellings (`tok=`, `Widget.tok`, a guess indexed like a tuple, a layer by position) still work,
  with a DeprecationWarning that names the new spelling; the new spellings warn about nothing.

pyproject's pytest settings ignore DeprecationWarning, so each check here records warnings explicitly.
"""

from __future__ import annotations

import ast
import inspect
import warnings
from pathlib import Path

import pytest
import torch

import bertlab
from bertlab import probe

ROOT = Path(__file__).resolve().parents[1]
TEXT = "The river bank was muddy."


def public_names():
    import bertlab.viz
    for module in (bertlab, bertlab.viz, probe):
        for name in module.__all__:
            yield f"{module.__name__}.{name}", getattr(module, name)


@pytest.fixture(scope="module")
def api_table():
    from bertlab import api_table
    return api_table


@pytest.fixture
def no_deprecations():
    """Inside the block, any DeprecationWarning is an error: the new spellings must not warn."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        yield


# ---- every public name documents itself ---------------------------------------------------------------

@pytest.mark.parametrize("name,obj", list(public_names()), ids=[n for n, _ in public_names()])
def test_every_public_name_says_what_it_is_for_and_what_it_returns(name, obj):
    own = obj.__doc__ if inspect.isclass(obj) else inspect.getdoc(obj)   # a class's own, not its base's
    short = name.rsplit(".", 1)[1]
    assert own and own.strip(), f"{name} has no docstring"
    first = own.strip().splitlines()[0]
    assert not first.startswith(f"{short}("), f"{name}'s docstring is the dataclass's generated signature"
    if inspect.isfunction(obj):
        assert inspect.signature(obj).return_annotation is not inspect.Signature.empty, f"{name} has no return type"


def test_help_on_a_head_and_on_load_says_what_they_are_for():
    assert bertlab.BertForMaskedLM.__doc__.startswith("Masked LM alone")
    assert inspect.signature(bertlab.load).return_annotation == "tuple[BertModule, Tokenizer]"


# ---- the README table is the code's -------------------------------------------------------------------

def test_the_readme_api_table_is_what_the_code_says(api_table):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert api_table.current(readme) == api_table.render(), "run: python scripts/api_table.py"


def test_the_api_table_lists_every_public_name_with_its_arguments(api_table):
    table = api_table.render()
    assert table.count("\n| `bertlab.") == len(bertlab.__all__) + len(__import__("bertlab.viz").viz.__all__)
    assert "| `bertlab.fill_mask` | `model, tokenizer, text, top_k=5," in table
    assert "| `bertlab.viz.head_view` | `model, tokenizer, text," in table
    assert "| `FillMask` |" in table and "| `go.Figure` |" in table


def test_the_api_table_check_fails_on_a_stale_readme(api_table, tmp_path, monkeypatch):
    stale = tmp_path / "README.md"
    stale.write_text(f"# x\n\n{api_table.BEGIN}\n| old | table |\n{api_table.END}\n", encoding="utf-8")
    monkeypatch.setattr(api_table, "README", stale)
    assert api_table.main(["--check"]) == 1
    assert api_table.main([]) == 0 and api_table.main(["--check"]) == 0   # rewritten, now current
    assert stale.read_text(encoding="utf-8").startswith("# x\n\n")


# ---- probe/__init__ only re-exports ----------------------------------------------------------------

def test_the_probe_package_init_only_re_exports():
    tree = ast.parse((ROOT / "bertlab" / "probe" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body[1:]:                                         # after the module docstring
        is_import = isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
        is_all = isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["__all__"]
        assert is_import or is_all, f"probe/__init__.py line {node.lineno} is neither an import nor __all__"
    for path in (ROOT / "bertlab" / "probe").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                assert node.module, f"{path.name}:{node.lineno} imports from the probe package's __init__"
    assert set(probe.__all__) <= set(dir(probe)) and len(set(probe.__all__)) == len(probe.__all__)


# ---- the new calling convention -----------------------------------------------------------------------

def test_attention_map_runs_the_model_like_every_probe(minilm, no_deprecations):
    model, tokenizer = minilm
    enc = tokenizer(TEXT)
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    by_text = probe.attention_map(model, tokenizer, TEXT, layer=2, head="all", words=True)
    by_output = probe.attention_map(out, enc.tokens, layer=2, head="all", words=True)
    assert by_text.tokens == by_output.tokens and by_text.title == by_output.title
    assert torch.allclose(by_text.weights, by_output.weights, atol=1e-6)
    pair = probe.attention_map(model, tokenizer, TEXT, text_pair="It rained.", layer=0, head=1)
    assert pair.tokens == tokenizer(TEXT, "It rained.").tokens
    with pytest.raises(ValueError, match="text is ''"):
        probe.attention_map(model, tokenizer, "")


def test_head_view_html_takes_the_model_like_head_view(minilm, no_deprecations):
    pytest.importorskip("bertviz", reason="the bertviz views need bertviz (the notebooks extra)")
    from bertlab.viz import head_view_html, model_view_html
    model, tokenizer = minilm
    html = head_view_html(model, tokenizer, TEXT, "It rained.", layer=1)
    assert "<script" in html and '"muddy"' in html and '"rained"' in html
    assert "<script" in model_view_html(model, tokenizer, TEXT, layers=[0])
    with pytest.raises(ValueError, match="text_pair instead"):
        head_view_html(model, tokenizer, TEXT, sentence_b_start=3)


def test_head_outputs_carry_attentions_like_transformers(minilm):
    model, tokenizer = minilm
    head = bertlab.BertForMaskedLM(model).eval()
    with torch.no_grad():
        out = head(**tokenizer(TEXT), output_attentions=True)
    assert out.attentions is out.bert.attentions and len(out.attentions) == model.config.num_hidden_layers


# ---- the old spellings warn and still work ------------------------------------------------------------

def test_tok_keyword_still_works_and_names_tokenizer(minilm):
    pytest.importorskip("bertviz", reason="the bertviz views need bertviz (the notebooks extra)")
    from bertlab.viz import AttentionView, head_view, neuron_view_html
    model, tokenizer = minilm
    with pytest.warns(DeprecationWarning, match=r"AttentionView.__init__\(tok=...\).*use tokenizer="):
        old = AttentionView(model, tok=tokenizer, texts=[TEXT])
    new = AttentionView(model, tokenizer, [TEXT])
    assert old.tokens == new.tokens and torch.equal(old.attentions(0)[0], new.attentions(0)[0])
    with pytest.warns(DeprecationWarning, match="use tokenizer="):
        assert "<script" in head_view(model, tok=tokenizer, text=TEXT).data
    with pytest.warns(DeprecationWarning, match="use tokenizer="):
        assert "<script" in neuron_view_html(model, tok=tokenizer, text=TEXT, layer=1, head=2)
    with pytest.raises(TypeError, match="pass only tokenizer="):
        head_view(model, tokenizer=tokenizer, tok=tokenizer, text=TEXT)


def test_masking_figure_takes_tok_with_a_warning(minilm):
    pytest.importorskip("plotly", reason="figures need plotly (the notebooks extra)")
    from bertlab.viz import masking_figure
    _, tokenizer = minilm
    enc = tokenizer(TEXT)
    ids = torch.tensor([enc.input_ids])
    inputs, labels = bertlab.mask_tokens(ids, tokenizer, generator=torch.Generator().manual_seed(0))
    with pytest.warns(DeprecationWarning, match="masking_figure\\(tok=...\\).*use tokenizer="):
        old = masking_figure(enc.tokens, inputs, labels, tok=tokenizer)
    assert old.to_json() == masking_figure(enc.tokens, inputs, labels, tokenizer=tokenizer).to_json()


def test_a_widget_s_tok_is_its_tokenizer_with_a_warning(minilm):
    pytest.importorskip("ipywidgets", reason="widgets need ipywidgets (the notebooks extra)")
    from bertlab.viz import AttentionExplorer
    w = AttentionExplorer(TEXT, model=minilm)
    assert w.tokenizer is minilm[1]
    with pytest.warns(DeprecationWarning, match=r"AttentionExplorer.tok .*use AttentionExplorer.tokenizer"):
        assert w.tok is w.tokenizer


def test_results_unpack_as_the_tuples_they_replaced_and_indexing_warns():
    guess = probe.Guess("bank", 0.25)
    token, p = guess                                                   # unpacking: still fine, no warning
    assert (token, p) == ("bank", 0.25)
    with pytest.warns(DeprecationWarning, match=r"Guess\[0\].*named fields \(token, probability\)"):
        assert guess[0] == "bank"
    change = probe.GuessChange("bank", 0.5, 0.1)
    assert tuple(change) == ("bank", 0.5, 0.1)
    with pytest.warns(DeprecationWarning, match=r"GuessChange\[2\].*\(token, before, after\)"):
        assert change[2] == 0.1
    examples, labels = bertlab.load_probing_set("senses")
    with pytest.warns(DeprecationWarning, match=r"\.examples and \.labels"):
        assert bertlab.load_probing_set("senses")[0] == examples


def test_attention_map_with_the_layer_by_position_warns(minilm):
    model, tokenizer = minilm
    enc = tokenizer(TEXT)
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    with pytest.warns(DeprecationWarning, match="layer= by keyword"):
        old = probe.attention_map(out, enc.tokens, 3)
    assert torch.equal(old.weights, probe.attention_map(out, enc.tokens, layer=3).weights)


def test_head_view_html_with_the_pair_start_by_position_warns(minilm):
    pytest.importorskip("bertviz", reason="the bertviz views need bertviz (the notebooks extra)")
    from bertlab.viz import head_view_html
    model, tokenizer = minilm
    enc = tokenizer(TEXT, "It rained.")
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    b_start = enc.token_type_ids.index(1)
    with pytest.warns(DeprecationWarning, match="sentence_b_start= by keyword"):
        html = head_view_html(out, enc.tokens, b_start)
    assert '"rained"' in html
    with pytest.warns(DeprecationWarning, match=r"head_view_html\((attentions|tokens)=...\)"):
        assert '"rained"' in head_view_html(attentions=out, tokens=enc.tokens, sentence_b_start=b_start)


def test_attention_rollout_runs_the_model_like_every_probe(minilm, no_deprecations):
    model, tokenizer = minilm
    with torch.no_grad():
        out = model(**tokenizer(TEXT), output_attentions=True)
    assert torch.allclose(probe.attention_rollout(model, tokenizer, TEXT), probe.attention_rollout(out), atol=1e-6)
    with pytest.raises(ValueError, match="passed alone"):
        probe.attention_rollout(out.attentions, tokenizer, TEXT)


def test_the_old_keyword_and_positional_forms_of_the_attention_probes_warn(minilm):
    model, tokenizer = minilm
    enc = tokenizer(TEXT)
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    with pytest.warns(DeprecationWarning, match="add_residual= by keyword"):
        old = probe.attention_rollout(out.attentions, False)
    assert torch.equal(old, probe.attention_rollout(out.attentions, add_residual=False))
    with pytest.warns(DeprecationWarning, match=r"attention_rollout\(attentions=...\)"):
        assert torch.equal(probe.attention_rollout(attentions=out), probe.attention_rollout(out))
    with pytest.warns(DeprecationWarning, match=r"attention_map\((attentions|tokens)=...\)"):
        old = probe.attention_map(attentions=out, tokens=enc.tokens, layer=1)
    assert torch.equal(old.weights, probe.attention_map(out, enc.tokens, layer=1).weights)


def test_each_deprecation_points_at_the_caller_s_line(minilm):
    """Python shows a DeprecationWarning by default only when it is attributed to the caller's own code."""
    model, tokenizer = minilm
    enc = tokenizer(TEXT)
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    calls = [lambda: probe.attention_map(out, enc.tokens, 1), lambda: probe.attention_rollout(out, False),
             lambda: probe.attention_map(attentions=out, tokens=enc.tokens), lambda: probe.Guess("a", 0.5)[0],
             lambda: bertlab.load_probing_set("pos")[1]]
    for call in calls:
        with pytest.warns(DeprecationWarning) as record:
            call()
        assert {Path(w.filename).name for w in record} == {Path(__file__).name}
