"""Context mixing: each measure is what its paper defines (checked on properties that must hold exactly), the
intervention it is scored against, Spearman's ρ, and the minimal-pair comparison (compare_fill)."""

import math

import pytest
import torch

import bertlab
from bertlab import BertConfig
from bertlab.probe.minimal_pairs import compare_fill
from bertlab.probe.mixing import (
    MEASURES,
    _norm_based,
    _value_zeroing,
    context_mixing,
    leave_one_out,
    mixing_scoreboard,
    spearman,
)
from testkit import ODD, bundled, no_hooks_anywhere, randomize_

BANK = "Tom went to the [MASK] to open a savings account."


@pytest.fixture(scope="module")
def mini():
    return bundled("bertlab-mini")


@pytest.mark.slow
def test_every_measure_gives_one_score_per_token(mini):
    model, tok = mini
    mix = context_mixing(model, tok, BANK)
    T = len(tok(BANK).input_ids)
    assert list(mix.scores) == list(MEASURES) and mix.tokens[mix.position] == "[MASK]"
    assert mix.target == bertlab.fill_mask(model, tok, BANK, top_k=1).guesses[0][0].token
    for name, s in mix.scores.items():
        assert s.shape == (T,) and torch.isfinite(s).all(), name
    for name in ("attention", "rollout", "norm", "value_zeroing"):          # shares of the position's input
        assert mix.scores[name].sum().item() == pytest.approx(1.0, abs=1e-4), name
        assert (mix.scores[name] >= 0).all(), name
    assert no_hooks_anywhere(model)


def test_norm_based_mixing_adds_up_to_the_attention_output(mini):
    # Kobayashi et al.: Σ_j Σ_h α_ij W_O^h v_j is the attention sublayer's output minus its bias, exactly;
    # the measure is the norm of each summand, so the vectors it measures must add up to what the model adds
    model, tok = mini
    bert = model.bert
    enc = tok(BANK).to_tensors()
    with torch.no_grad():
        _, cache = bert.run_with_cache(**enc, names=lambda n: n.endswith(("hook_pattern", "hook_v", "hook_attn_out")))
    layer = bert.encoder.layer[2]
    H, A, Dh = bert.config.hidden_size, bert.config.num_attention_heads, bert.config.head_dim
    alpha = cache["encoder.layer.2.attention.self.hook_pattern"][0]
    v = cache["encoder.layer.2.attention.self.hook_v"][0]
    fv = torch.einsum("hjd,ohd->hjo", v, layer.attention.output.dense.weight.view(H, A, Dh))
    summands = torch.einsum("hij,hjo->ijo", alpha, fv)                                  # (T, T, H)
    added = cache["encoder.layer.2.attention.output.hook_attn_out"][0] - layer.attention.output.dense.bias
    assert torch.allclose(summands.sum(1), added, atol=1e-4)
    norms = _norm_based(bert, cache, enc["input_ids"].shape[1])[2]
    assert torch.allclose(norms, summands.norm(dim=-1), atol=1e-5)


def test_value_zeroing_sees_no_influence_from_the_future_in_a_left_to_right_model():
    # with a causal mask, position i never reads token j > i: zeroing j's values cannot move i's output
    model = randomize_(bertlab.Bert(BertConfig(**ODD, is_decoder=True)).eval())
    ids = torch.randint(5, 99, (1, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        out = model(ids, output_hidden_states=True)
        mats = _value_zeroing(model, out.hidden_states, 9)
    for m in mats:
        assert torch.all(m.triu(1).abs() < 1e-6)
        assert torch.all(m.tril().diagonal() > 0)          # every token's own values matter to itself


@pytest.mark.slow
def test_the_intervention_blanks_one_token_at_a_time(mini):
    model, tok = mini
    truth = leave_one_out(model, tok, BANK, target="bank")
    tokens = tok(BANK).tokens
    for special in ("[CLS]", "[SEP]", "[MASK]"):
        assert truth[tokens.index(special)].item() == pytest.approx(0.0, abs=1e-5)    # never blanked
    # by hand, for every word: blank it alone ([PAD], as integrated gradients' baseline), read log P(bank),
    # and place it between the plain run (0) and the run with every word blank (1)
    enc = tok(BANK)
    ids = torch.tensor([enc.input_ids])
    blank_all = ids.clone()
    words = [i for i, t in enumerate(enc.tokens) if t not in ("[CLS]", "[SEP]", "[MASK]")]
    blank_all[0, words] = tok.pad_id
    m = tokens.index("[MASK]")
    bank = tok.token_to_id("bank")

    def logp(x):
        with torch.no_grad():
            return model.cls.predictions(model.bert(x).last_hidden_state[0, m]).log_softmax(-1)[bank].item()

    plain, blank = logp(ids), logp(blank_all)
    for w in words:
        one = ids.clone()
        one[0, w] = tok.pad_id
        assert truth[w].item() == pytest.approx((plain - logp(one)) / (plain - blank), abs=1e-4), tokens[w]


def test_spearman():
    a = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert spearman(a, a * 10) == pytest.approx(1.0)
    assert spearman(a, -a) == pytest.approx(-1.0)
    assert spearman(torch.tensor([1.0, 1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0, 4.0])) == pytest.approx(
        0.9486833, abs=1e-6)                                              # ties averaged, as scipy does
    assert math.isnan(spearman(torch.ones(4), a))


@pytest.mark.slow
def test_the_scoreboard_ranks_measures_by_mean_agreement(mini):
    model, tok = mini
    texts = [BANK, "She opened the [MASK] and walked in."]
    board = mixing_scoreboard(model, tok, texts, measures=["attention", "norm", "integrated_gradients"])
    assert set(board.summary) == {"attention", "norm", "integrated_gradients"}
    means = [m for m, _ in board.summary.values()]
    assert means == sorted(means, reverse=True) and board.best() == next(iter(board.summary))
    assert all(len(v) == 2 and all(-1 <= r <= 1 for r in v) for v in board.per_text.values())


@pytest.mark.slow
def test_the_shipped_minimal_pairs_are_minimal_and_their_guesses_are_the_models(mini):
    import json
    from importlib import resources
    model, tok = mini
    data = json.loads(resources.files("bertlab").joinpath("assets/patching/minimal_pairs.json").read_text())
    pairs = data["pairs"]
    assert len(pairs) >= 30
    for p in pairs:
        a, b = tok(p["clean"]), tok(p["corrupt"])
        assert len(a.input_ids) == len(b.input_ids), p
        assert sum(x != y for x, y in zip(a.input_ids, b.input_ids)) >= 1
        assert a.input_ids.count(tok.mask_id) == 1 and a.tokens.index("[MASK]") == b.tokens.index("[MASK]")
    for p in pairs[:8]:                                                   # the guesses recorded are the model's
        c = compare_fill(model, tok, p["clean"], p["corrupt"])
        assert (c.top_a.token, c.top_b.token) == (p["clean_guess"], p["corrupt_guess"]), p


@pytest.mark.slow
def test_compare_fill_reports_the_probability_that_moved(mini):
    model, tok = mini
    b = "Tom went to the [MASK] to open a birthday present."
    c = compare_fill(model, tok, BANK, b, top_k=10)
    assert len(c.shifts) == 10 and c.top_a.token == "bank"
    bank = next(s for s in c.shifts if s.token == "bank")
    assert bank.p_a > 5 * bank.p_b and bank.log_ratio == pytest.approx(math.log(bank.p_b / bank.p_a))
    pa = {g.token: g.probability for g in bertlab.fill_mask(model, tok, BANK, top_k=20).guesses[0]}
    assert bank.p_a == pytest.approx(pa["bank"], abs=1e-5)
    moves = [s.p_b - s.p_a for s in c.shifts]
    assert moves == sorted(moves, reverse=True)                           # most raised by b first
    assert c.shifts[-1].token == "bank"                                   # the biggest loser


@pytest.mark.parametrize("kwargs, message", [
    (dict(text_a="The river bank.", text_b=BANK), "exactly one"),
    (dict(text_a=BANK, text_b=""), "non-empty"),
    (dict(text_a=BANK, text_b=BANK, top_k=0), "top_k"),
])
def test_compare_fill_refuses_what_it_cannot_compare(mini, kwargs, message):
    model, tok = mini
    with pytest.raises(ValueError, match=message):
        compare_fill(model, tok, **kwargs)


def test_context_mixing_refusals(mini, minilm):
    model, tok = mini
    with pytest.raises(ValueError, match="measures must be"):
        context_mixing(model, tok, BANK, measures=["attention", "lime"])
    with pytest.raises(ValueError, match="exactly one"):
        context_mixing(model, tok, "No mask here.")
    with pytest.raises(ValueError, match="position must be"):
        context_mixing(model, tok, BANK, position=99)
    m, t = minilm
    with pytest.raises(ValueError, match="masked-LM"):
        context_mixing(m, t, "The river bank.", position=3)
    mix = context_mixing(m, t, "The river bank.", position=3, measures=["attention", "norm", "value_zeroing"])
    assert mix.tokens[3] == "bank" and mix.target is None


@pytest.mark.slow
def test_the_stored_scoreboard_recomputes(mini):
    # notebook 12 shows the stored scoreboard (98 sentences take minutes); two of its rows, recomputed here,
    # must agree (rank correlations: a near-tie flipping on another CPU moves ρ by a few hundredths at most)
    import json
    from importlib import resources
    model, tok = mini
    stored = json.loads(resources.files("bertlab").joinpath("assets/patching/scoreboard.json").read_text())
    assert len(stored["texts"]) >= 60 and set(stored["summary"]) == set(MEASURES)
    for i in (0, len(stored["texts"]) - 1):
        board = mixing_scoreboard(model, tok, [stored["texts"][i]])
        for m in MEASURES:
            assert board.per_text[m][0] == pytest.approx(stored["per_text"][m][i], abs=0.03), (i, m)
    for m, s in stored["summary"].items():
        rhos = torch.tensor(stored["per_text"][m], dtype=torch.float64)
        assert s["mean"] == pytest.approx(float(rhos.mean()), abs=1e-9)
