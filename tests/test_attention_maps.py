"""Attention as a reader asks for it (bertlab.probe.attention_maps): heads combined, pieces merged into words,
[CLS]/[SEP] hidden, weak links blanked. Each rule is checked against the sum it is defined by."""

from __future__ import annotations

import pytest
import torch

import bertlab
from bertlab.probe import AttentionMap, merge_word_pieces, word_groups
from bertlab.probe.running import run
from testkit import bundled, one_thread  # noqa: F401  (a fixture)

TEXT = "The playwright quietly rewrote the unfinished manuscript."


@pytest.fixture(scope="module")
def mini():
    return bundled("bertlab-mini")


@pytest.fixture(scope="module")
def minilm_run(minilm):
    model, tok = minilm
    enc = tok(TEXT)
    return enc, run(model, enc, output_attentions=True)


def test_word_groups_join_pieces_to_the_word_before():
    tokens = ["[CLS]", "re", "##wr", "##ote", "it", "[SEP]", "##x"]
    assert word_groups(tokens) == [[0], [1, 2, 3], [4], [5], [6]]     # a piece never joins [SEP]


def test_merging_sums_keys_and_averages_queries_so_rows_still_sum_to_one():
    torch.manual_seed(0)
    tokens = ["[CLS]", "play", "##wright", "sat", "[SEP]"]
    weights = torch.rand(3, 5, 5).softmax(-1)                         # (heads, T, T), rows sum to 1
    words, merged = merge_word_pieces(weights, tokens)
    assert words == ["[CLS]", "playwright", "sat", "[SEP]"]
    assert merged.shape == (3, 4, 4)
    assert torch.allclose(merged.sum(-1), torch.ones(3, 4))
    # "sat" → "playwright" is "sat" → "play" plus "sat" → "##wright" (keys summed)
    assert torch.allclose(merged[:, 2, 1], weights[:, 3, 1] + weights[:, 3, 2])
    # "playwright" → "sat" is the mean of where "play" and "##wright" look (queries averaged)
    assert torch.allclose(merged[:, 1, 2], (weights[:, 1, 3] + weights[:, 2, 3]) / 2)
    # a text of whole words is unchanged
    same_words, same = merge_word_pieces(weights[:, :1, :1], ["[CLS]"])
    assert same_words == ["[CLS]"] and torch.equal(same, weights[:, :1, :1])


def test_one_head_is_the_models_attention(minilm_run):
    enc, out = minilm_run
    m = AttentionMap.from_output(out, enc.tokens, layer=3, head=5)
    assert torch.equal(m.weights, out.attentions[3][0, 5].float())
    assert m.tokens == enc.tokens and m.title == "layer 3, head 5"


def test_heads_and_layers_combine_by_mean_or_sum(minilm_run):
    enc, out = minilm_run
    stack = torch.stack(out.attentions)[:, 0].float()                 # (L, heads, T, T)
    layer_mean = AttentionMap.from_output(out, enc.tokens, layer=2, head="all")
    assert torch.allclose(layer_mean.weights, stack[2].mean(0)) and "all 12 heads (mean)" in layer_mean.title
    assert torch.allclose(layer_mean.weights.sum(-1), torch.ones(len(enc)))        # a mean keeps rows at 1
    everything = AttentionMap.from_output(out, enc.tokens, layer="all", head="all", reduce="sum")
    assert torch.allclose(everything.weights, stack.sum((0, 1)), atol=1e-5)
    assert torch.allclose(everything.weights.sum(-1), torch.full((len(enc),), 6.0 * 12))   # a sum: L × heads
    chosen = AttentionMap.from_output(out, enc.tokens, layer=[0, 5], head=[1, 2])
    assert torch.allclose(chosen.weights, stack[[0, 5]][:, [1, 2]].mean((0, 1)))
    assert chosen.title == "layers 0, 5, heads 1, 2 (mean)"


def test_word_level_hides_and_thresholds_in_that_order(minilm_run):
    enc, out = minilm_run
    assert "##wr" in enc.tokens                                       # "rewrote" is three pieces for MiniLM
    m = AttentionMap.from_output(out, enc.tokens, layer=1, head="all", words=True, hide_special=True, threshold=0.05)
    assert m.tokens == ["the", "playwright", "quietly", "rewrote", "the", "unfinished", "manuscript", "."]
    assert m.groups[3] == [enc.tokens.index("re"), enc.tokens.index("##wr"), enc.tokens.index("##ote")]
    words, merged = merge_word_pieces(out.attentions[1][0].float().mean(0), enc.tokens)
    keep = [i for i, w in enumerate(words) if w not in ("[CLS]", "[SEP]")]
    expected = merged[keep][:, keep]                                  # not renormalised: the rest went to specials
    assert torch.allclose(m.weights, torch.where(expected >= 0.05, expected, torch.zeros(())))
    assert (m.weights.sum(-1) < 1).all() and ((m.weights == 0) | (m.weights >= 0.05)).all()
    assert m.title.endswith("per word, [CLS]/[SEP] hidden, weights ≥ 0.05")


@pytest.mark.parametrize("kwargs, match", [
    (dict(layer=6), "layer 6 does not exist: there are 6 layers"),
    (dict(head=[0, 12]), "head 12 does not exist"),
    (dict(head="some"), "head must be an index, a list of indices or 'all'"),
    (dict(reduce="max"), "reduce must be one of"),
    (dict(threshold=-0.1), "threshold must be a number"),
    (dict(batch_index=1), "batch_index 1 does not exist"),
])
def test_bad_choices_say_what_to_pass(minilm_run, kwargs, match):
    enc, out = minilm_run
    with pytest.raises(ValueError, match=match):
        AttentionMap.from_output(out, enc.tokens, **kwargs)


def test_bad_inputs_say_what_was_expected(minilm_run):
    enc, out = minilm_run
    with pytest.raises(ValueError, match="output_attentions=True"):
        AttentionMap.from_output(out.last_hidden_state, enc.tokens)
    with pytest.raises(ValueError, match="52 tokens given for an attention map over 12 positions"):
        AttentionMap.from_output(out, enc.tokens + ["extra"] * 40)
    with pytest.raises(ValueError, match="a list of token strings"):
        AttentionMap.from_output(out, "the playwright")
    only_special = AttentionMap.from_output(out, enc.tokens, hide_special=True)
    assert "[CLS]" not in only_special.tokens
    with pytest.raises(ValueError, match="leaves nothing"):
        AttentionMap.from_output(out, ["[CLS]", "[SEP]"], hide_special=True)


def test_fill_mask_reads_masks_in_either_text_of_a_pair(mini):
    model, tok = mini
    result = bertlab.fill_mask(model, tok, "She unlocked the front door.", text_pair="Then she opened the [MASK].")
    assert result.tokens.count("[SEP]") == 2 and len(result.mask_positions) == 1
    assert result.mask_positions[0] > result.tokens.index("[SEP]")
    with pytest.raises(ValueError, match="text_pair must be a str"):
        bertlab.fill_mask(model, tok, "The [MASK] sat.", text_pair=3)
