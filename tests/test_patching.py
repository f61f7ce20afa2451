"""Activation patching: the exactness checks a reader can trust (patching what the metric reads restores it
exactly, patching what it cannot read changes nothing), both directions at the extremes, on bertlab-mini and
bertlab-tiny (MLM and NSP heads) and on MiniLM with a metric of our own; then the requests it must refuse."""

import pytest
import torch
import torch.nn.functional as F

import bertlab
from bertlab.probe.patching import Patching, patch
from testkit import bundled, no_hooks_anywhere

CLEAN = "She paid the [MASK] with her card at the shop."
CORRUPT = "She paid the [MASK] with her hand at the shop."


@pytest.fixture(scope="module", params=["bertlab-mini", "bertlab-tiny"])
def lab_model(request):
    return bertlab.load(request.param)


@pytest.fixture(scope="module")
def mini():
    return bundled("bertlab-mini")


def _mask_pos(p: Patching) -> int:
    return p.tokens.index("[MASK]")


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["denoise", "noise"])
def test_last_layer_at_the_mask_restores_the_clean_metric_and_nothing_else_matters(lab_model, direction):
    # the MLM metric reads the last layer at the [MASK] only: patching that one vector moves the run all the
    # way (denoise: to the clean metric, effect 1; noise: to the corrupt metric, effect 0), any other
    # position of the last layer changes nothing (denoise: effect 0; noise: effect 1)
    model, tok = lab_model
    p = patch(model, tok, CLEAN, CORRUPT, direction=direction)
    m = _mask_pos(p)
    L = model.config.num_hidden_layers
    assert p.effect.shape == (L + 1, len(p.tokens)) and p.rows[0] == "embeddings"
    at_mask, elsewhere = (1.0, 0.0) if direction == "denoise" else (0.0, 1.0)
    assert p.effect[L, m].item() == pytest.approx(at_mask, abs=1e-4)
    others = torch.cat([p.effect[L, :m], p.effect[L, m + 1:]])
    assert torch.allclose(others, torch.full_like(others, elsewhere), atol=1e-4)
    assert p.patched[L, m].item() == pytest.approx(p.clean_metric if direction == "denoise" else p.corrupt_metric,
                                                   abs=1e-4)


@pytest.mark.slow
def test_the_embedding_row_is_zero_wherever_both_texts_have_the_same_token(lab_model):
    # row 0 is token + segment + position embedding (normed): a position whose token is the same in both texts
    # has the same vector in both runs, so patching it is no intervention at all
    model, tok = lab_model
    p = patch(model, tok, CLEAN, CORRUPT)
    same = [i for i, (a, b) in enumerate(zip(p.tokens, p.corrupt_tokens)) if a == b]
    differ = [i for i in range(len(p.tokens)) if i not in same]
    assert differ == [p.tokens.index("card")] and p.corrupt_tokens[differ[0]] == "hand"
    assert torch.allclose(p.effect[0, same], torch.zeros(len(same)), atol=1e-5)
    assert p.columns[differ[0]] == "card/hand"


@pytest.mark.slow
def test_the_metric_is_log_probability_of_the_clean_top_guess(mini):
    model, tok = mini
    top = bertlab.fill_mask(model, tok, CLEAN, top_k=1).guesses[0][0]
    p = patch(model, tok, CLEAN, CORRUPT)
    assert p.target == top.token and p.metric == "log P(target)"
    assert p.clean_metric == pytest.approx(torch.tensor(top.probability).log().item(), abs=1e-4)
    corrupt = {g.token: g.probability for g in bertlab.fill_mask(model, tok, CORRUPT, top_k=50).guesses[0]}
    assert p.corrupt_metric == pytest.approx(torch.tensor(corrupt[top.token]).log().item(), abs=1e-4)
    q = patch(model, tok, CLEAN, CORRUPT, target="cash")
    assert q.target == "cash" and q.clean_metric != p.clean_metric


@pytest.mark.slow
@pytest.mark.parametrize("site", ["attn", "mlp", "head"])
def test_sublayer_and_head_sweeps_have_their_shapes_and_stay_between_the_runs_in_sum(mini, site):
    model, tok = mini
    cfg = model.config
    p = patch(model, tok, CLEAN, CORRUPT, site=site)
    width = cfg.num_attention_heads if site == "head" else len(p.tokens)
    assert p.effect.shape == p.patched.shape == (cfg.num_hidden_layers, width)
    assert torch.isfinite(p.effect).all()
    assert torch.allclose(p.effect, (p.patched - p.corrupt_metric) / (p.clean_metric - p.corrupt_metric))
    assert len(p.rows) == cfg.num_hidden_layers and len(p.columns) == width


@pytest.mark.slow
@pytest.mark.parametrize("site", ["resid", "head"])
def test_each_cell_of_the_batched_sweep_equals_one_run_patched_by_hand(mini, site):
    # the sweep puts ~100 patched runs in one batch; the best cell, redone alone with a plain hook, must agree
    model, tok = mini
    p = patch(model, tok, CLEAN, CORRUPT, site=site)
    r, c = divmod(int(p.effect.argmax()), p.effect.shape[1])
    clean, corrupt = (tok(t).to_tensors() for t in (CLEAN, CORRUPT))
    if site == "resid":
        name = "embeddings.hook_normed" if r == 0 else f"encoder.layer.{r - 1}.hook_resid_post"
    else:
        name = f"encoder.layer.{r}.attention.self.hook_z"
    bert = model.bert
    _, cache = bert.run_with_cache(**clean, names=name)

    def put(act, _):
        act = act.clone()
        act[:, c] = cache[name][:, c]                 # position c of the stream, or head c of z
        return act

    with torch.no_grad(), bert.hooks([(name, put)]):
        hidden = bert(**corrupt).last_hidden_state
        m = _mask_pos(p)
        logp = model.cls.predictions(hidden[:, m]).log_softmax(-1)[0, tok.token_to_id(p.target)]
    assert p.patched[r, c].item() == pytest.approx(logp.item(), abs=1e-4)


@pytest.mark.slow
def test_nsp_pairs_use_the_is_next_logit_and_the_cls_position_is_all_it_reads(mini):
    model, tok = mini
    a = "The kettle began to whistle in the kitchen."
    clean = (a, "She poured the hot water over the tea leaves.")
    corrupt = (a, "The goalkeeper dived to his left and missed.")
    p = patch(model, tok, clean, corrupt)
    assert p.metric == "IsNext − NotNext logit" and p.target is None
    assert p.clean_metric > p.corrupt_metric
    prob = bertlab.next_sentence(model, tok, *clean)
    assert torch.sigmoid(torch.tensor(p.clean_metric)).item() == pytest.approx(prob, abs=1e-4)
    L = model.config.num_hidden_layers
    assert p.effect[L, 0].item() == pytest.approx(1.0, abs=1e-4)              # [CLS] feeds the pooler
    assert torch.allclose(p.effect[L, 1:], torch.zeros(len(p.tokens) - 1), atol=1e-4)


@pytest.mark.slow
def test_minilm_with_a_metric_of_our_own(minilm):
    # MiniLM has no MLM or NSP head: the metric is the cosine of the final vector at "bank" to the clean run's
    model, tok = minilm
    clean, corrupt = "He rowed to the river bank at dawn.", "He rowed to the money bank at dawn."
    enc = tok(clean)
    pos = enc.tokens.index("bank")
    with torch.no_grad():
        ref = model(**enc.to_tensors()).last_hidden_state[0, pos]

    def closeness(out):
        return F.cosine_similarity(out.last_hidden_state[:, pos], ref[None], dim=-1)      # (B,)

    p = patch(model, tok, clean, corrupt, metric=closeness)
    L = model.config.num_hidden_layers
    assert p.metric == "closeness" and p.clean_metric == pytest.approx(1.0, abs=1e-5)
    assert p.effect[L, pos].item() == pytest.approx(1.0, abs=1e-4)
    others = torch.cat([p.effect[L, :pos], p.effect[L, pos + 1:]])
    assert torch.allclose(others, torch.zeros_like(others), atol=1e-4)
    changed = enc.tokens.index("river")
    assert p.effect[0, changed].item() > 0.05                       # restoring "river" alone moves it back a bit
    noisy = patch(model, tok, clean, corrupt, metric=closeness, direction="noise")
    assert noisy.effect[L, pos].item() == pytest.approx(0.0, abs=1e-4)


@pytest.mark.slow
def test_hooks_are_removed_and_the_model_is_left_as_it_was(mini):
    model, tok = mini
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    try:
        patch(model, tok, CLEAN, CORRUPT, site="head")
        with pytest.raises(ValueError):
            patch(model, tok, CLEAN, CORRUPT, metric=lambda out: out.last_hidden_state)     # wrong shape, mid-sweep
        assert no_hooks_anywhere(model)
        assert all(m.training for m in model.modules())
        assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    finally:
        model.eval()


@pytest.mark.slow
def test_the_same_call_gives_the_same_numbers_whatever_the_chunk_size(mini, monkeypatch):
    model, tok = mini
    whole = patch(model, tok, CLEAN, CORRUPT)
    monkeypatch.setattr("bertlab.probe.patching.ROWS_PER_PASS", 7)
    chunked = patch(model, tok, CLEAN, CORRUPT)
    assert torch.allclose(whole.effect, chunked.effect, atol=1e-4)


@pytest.mark.parametrize("kwargs, message", [
    (dict(clean="The river [MASK] was muddy.", corrupt="The big river [MASK] was muddy."), "same number of tokens"),
    (dict(clean="The river bank was muddy.", corrupt="The money bank was muddy."), "exactly one [MASK]"),
    (dict(clean="The [MASK] [MASK] was muddy.", corrupt="The river [MASK] was muddy."), "exactly one [MASK]"),
    (dict(clean=CLEAN, corrupt=CLEAN), "same metric"),
    (dict(clean=CLEAN, corrupt=CORRUPT, site="residual"), "site must be one of"),
    (dict(clean=CLEAN, corrupt=CORRUPT, direction="both"), "direction must be"),
    (dict(clean=CLEAN, corrupt=("a", "b")), "both be single texts or both"),
    (dict(clean=CLEAN, corrupt=CORRUPT, target="savings account"), "single known token"),
    (dict(clean=("It rained.", "The river rose."), corrupt=("It rained.", "The cat slept."), target="x"),
     "NSP head"),
    (dict(clean="", corrupt=CORRUPT), "clean is empty"),
    (dict(clean=CLEAN, corrupt=None), "corrupt must be a str"),
    (dict(clean=CLEAN, corrupt=CORRUPT, metric="cosine"), "metric must be a function"),
])
def test_requests_that_cannot_be_answered_say_why(mini, kwargs, message):
    model, tok = mini
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        patch(model, tok, **kwargs)
    assert no_hooks_anywhere(model)


def test_a_model_without_heads_needs_a_metric(minilm):
    model, tok = minilm
    with pytest.raises(ValueError, match="no masked-LM head"):
        patch(model, tok, "The river [MASK] was muddy.", "The money [MASK] was muddy.")
