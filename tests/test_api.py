"""One way to call everything: names, calling conventions and result types agree across bertlab and bertlab.viz.

- every public name says what it is for (a docstring of its own) and every public function what it returns;
- README.md's "API at a glance" table is what bertlab/api_table.py (scripts/api_table.py) writes from the code today;
- probe/__init__.py only re-exports, and no probe module imports from it;
- one calling form per function: `attention_map(model, tokenizer, text, ...)` runs the model, and attention
  already computed goes to the named constructor `AttentionMap.from_output(out, tokens, ...)`; the 0.1
  spellings (`tok=`, `Widget.tok`, a guess indexed like a tuple, a layer by position) are gone, each refused
  with an error instead of working differently; the current spellings warn about nothing.

pyproject's pytest settings make a DeprecationWarning raised from bertlab's own modules an error; the
checks here also turn every DeprecationWarning into one, wherever it comes from.
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
    by_output = probe.AttentionMap.from_output(out, enc.tokens, layer=2, head="all", words=True)
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


# ---- the 0.1 spellings are gone, each refused ---------------------------------------------------------

@pytest.mark.slow
def test_the_old_tok_keyword_is_refused(minilm, no_deprecations):
    pytest.importorskip("bertviz", reason="the bertviz views need bertviz (the notebooks extra)")
    from bertlab.viz import AttentionExplorer, AttentionView, head_view
    model, tokenizer = minilm
    with pytest.raises(TypeError, match="tok"):
        AttentionView(model, tok=tokenizer, texts=[TEXT])
    with pytest.raises(TypeError, match="tok"):
        head_view(model, tok=tokenizer, text=TEXT)
    pytest.importorskip("ipywidgets", reason="widgets need ipywidgets (the notebooks extra)")
    assert not hasattr(AttentionExplorer(TEXT, model=minilm), "tok")


def test_results_unpack_by_name_and_are_not_indexed(no_deprecations):
    token, p = probe.Guess("bank", 0.25)                                # unpacking, as the pair it replaced
    assert (token, p) == ("bank", 0.25)
    assert tuple(probe.GuessChange("bank", 0.5, 0.1)) == ("bank", 0.5, 0.1)
    for indexed in (lambda: probe.Guess("bank", 0.25)[0], lambda: probe.GuessChange("bank", 0.5, 0.1)[2],
                    lambda: bertlab.load_probing_set("senses")[0]):
        with pytest.raises(TypeError, match="not subscriptable"):
            indexed()


def test_attention_computed_already_goes_to_the_named_constructor(minilm, no_deprecations):
    model, tokenizer = minilm
    enc = tokenizer(TEXT)
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    with pytest.raises(TypeError, match=r"AttentionMap.from_output\(out, tokens, ...\)"):
        probe.attention_map(out, enc.tokens, layer=3)
    with pytest.raises(TypeError, match="attentions"):
        probe.attention_map(attentions=out, tokens=enc.tokens)
    assert torch.equal(probe.AttentionMap.from_output(out, enc.tokens, layer=3).weights,
                       probe.AttentionMap.from_output(out.attentions, enc.tokens, layer=3).weights)


def test_head_view_html_takes_computed_attention_by_keyword_only(minilm, no_deprecations):
    pytest.importorskip("bertviz", reason="the bertviz views need bertviz (the notebooks extra)")
    from bertlab.viz import head_view_html
    model, tokenizer = minilm
    enc = tokenizer(TEXT, "It rained.")
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    b_start = enc.token_type_ids.index(1)
    assert '"rained"' in head_view_html(attentions=out, tokens=enc.tokens, sentence_b_start=b_start)
    with pytest.raises(TypeError, match=r"by keyword: head_view_html\(attentions=out, tokens=enc.tokens, "
                                        r"sentence_b_start=…\)"):
        head_view_html(out, enc.tokens, b_start)                  # the old positional form of computed attention


def test_attention_rollout_runs_the_model_like_every_probe(minilm, no_deprecations):
    model, tokenizer = minilm
    with torch.no_grad():
        out = model(**tokenizer(TEXT), output_attentions=True)
    assert torch.allclose(probe.attention_rollout(model, tokenizer, TEXT), probe.attention_rollout(out), atol=1e-6)
    with pytest.raises(ValueError, match="passed alone"):
        probe.attention_rollout(out.attentions, tokenizer, TEXT)


def test_attention_rollout_takes_no_flag_where_the_tokenizer_goes(minilm, no_deprecations):
    model, tokenizer = minilm
    with torch.no_grad():
        out = model(**tokenizer(TEXT), output_attentions=True)
    with pytest.raises(ValueError, match="a tokenizer and text go with a model"):
        probe.attention_rollout(out.attentions, False)         # the 0.1 layout (attentions, add_residual)
    assert not torch.equal(probe.attention_rollout(out.attentions, add_residual=False),
                           probe.attention_rollout(out.attentions))

