"""Hook points: run_with_cache reads every intermediate; `with model.hooks(...)` changes them, then vanishes."""

from __future__ import annotations

import pytest
import torch
from torch.overrides import TorchFunctionMode

import bertlab
from bertlab.model import HookPoint
from testkit import no_hooks_anywhere

B, HEADS, T, H, DH, FFN = 3, 4, 11, 32, 8, 37
Z0 = "encoder.layer.0.attention.self.hook_z"


def ablate_head_3(z, name):
    z = z.clone()
    z[:, 3] = 0
    return z


def test_run_with_cache_records_every_hook_point_with_its_documented_shape(odd_model, batch):
    out, cache = odd_model.run_with_cache(**batch)
    assert set(cache) == set(odd_model.hook_points())
    expected = {"embeddings.hook_token": (B, T, H), "embeddings.hook_segment": (B, T, H),
                "embeddings.hook_position": (B, T, H), "embeddings.hook_sum": (B, T, H),
                "embeddings.hook_normed": (B, T, H)}
    for i in range(odd_model.config.num_hidden_layers):
        a = f"encoder.layer.{i}.attention."
        expected.update({a + "self.hook_q": (B, HEADS, T, DH), a + "self.hook_k": (B, HEADS, T, DH),
                         a + "self.hook_v": (B, HEADS, T, DH), a + "self.hook_z": (B, HEADS, T, DH),
                         a + "self.hook_scores": (B, HEADS, T, T), a + "self.hook_pattern": (B, HEADS, T, T),
                         a + "output.hook_attn_out": (B, T, H),
                         f"encoder.layer.{i}.hook_resid_mid": (B, T, H),
                         f"encoder.layer.{i}.intermediate.hook_mlp_act": (B, T, FFN),
                         f"encoder.layer.{i}.output.hook_mlp_out": (B, T, H),
                         f"encoder.layer.{i}.hook_resid_post": (B, T, H)})
    assert set(cache) == set(expected)
    for name, shape in expected.items():
        assert tuple(cache[name].shape) == shape, name
    assert all(not t.requires_grad for t in cache.values())  # detached by default


def test_cache_agrees_with_the_familiar_outputs(odd_model, batch):
    out, cache = odd_model.run_with_cache(**batch, output_attentions=True, output_hidden_states=True)
    L = odd_model.config.num_hidden_layers
    for i in range(L):
        assert torch.equal(cache[f"encoder.layer.{i}.attention.self.hook_pattern"], out.attentions[i])
        assert torch.equal(cache[f"encoder.layer.{i}.hook_resid_post"], out.hidden_states[i + 1])
    assert torch.equal(cache["embeddings.hook_normed"], out.hidden_states[0])
    assert torch.equal(cache[f"encoder.layer.{L - 1}.hook_resid_post"], out.last_hidden_state)
    assert torch.equal(cache["embeddings.hook_sum"], out.embeddings.sum)


def test_cached_pattern_equals_output_attentions_of_a_plain_call(odd_model, batch):
    _, cache = odd_model.run_with_cache(**batch, names="*.hook_pattern")
    with torch.no_grad():
        out = odd_model(**batch, output_attentions=True)
    for i, pattern in enumerate(out.attentions):
        assert (cache[f"encoder.layer.{i}.attention.self.hook_pattern"] - pattern).abs().max().item() <= 1e-7


def test_cached_pieces_recompute_the_head_outputs(odd_model, batch):
    """z = pattern @ v, and the scores are q·k / sqrt(Dh) plus the mask: the cache holds the real intermediates."""
    _, cache = odd_model.run_with_cache(**batch, names="encoder.layer.1.attention.self.*")
    a = "encoder.layer.1.attention.self."
    pattern, v, z = cache[a + "hook_pattern"], cache[a + "hook_v"], cache[a + "hook_z"]
    assert (pattern @ v - z).abs().max().item() <= 1e-5
    q, k, scores = cache[a + "hook_q"], cache[a + "hook_k"], cache[a + "hook_scores"]
    real = batch["attention_mask"].bool()[:, None, None, :].expand_as(scores)
    raw = q @ k.transpose(-2, -1) / DH ** 0.5
    assert (raw - scores)[real].abs().max().item() <= 1e-5
    assert scores[~real].max().item() < -1e30


def test_names_select_with_globs_lists_and_predicates(odd_model, batch):
    _, by_glob = odd_model.run_with_cache(**batch, names="*.hook_z")
    assert sorted(by_glob) == [f"encoder.layer.{i}.attention.self.hook_z" for i in range(2)]
    _, by_list = odd_model.run_with_cache(**batch, names=["embeddings.hook_sum", "encoder.layer.1.hook_resid_*"])
    assert set(by_list) == {"embeddings.hook_sum", "encoder.layer.1.hook_resid_mid", "encoder.layer.1.hook_resid_post"}
    _, by_predicate = odd_model.run_with_cache(**batch, names=lambda n: n.startswith("encoder.layer.0.") and "mlp" in n)
    assert set(by_predicate) == {"encoder.layer.0.intermediate.hook_mlp_act", "encoder.layer.0.output.hook_mlp_out"}
    assert no_hooks_anywhere(odd_model)


def test_unknown_hook_name_is_a_value_error_and_leaves_nothing_behind(odd_model, batch):
    with pytest.raises(ValueError, match=r"no hook point matches 'encoder.layer.9.hook_nope'"):
        with odd_model.hooks([(Z0, ablate_head_3), ("encoder.layer.9.hook_nope", ablate_head_3)]):
            pass
    assert no_hooks_anywhere(odd_model)
    with pytest.raises(ValueError, match="no hook point matches"):
        odd_model.run_with_cache(**batch, names="hook_q")  # a glob must match the whole name


def test_zero_ablating_one_head_changes_the_output_and_leaves_no_hook_behind(odd_model, batch):
    with torch.no_grad():
        before = odd_model(**batch).last_hidden_state
        seen = []
        with odd_model.hooks([(Z0, lambda z, name: seen.append(name) or ablate_head_3(z, name))]):
            ablated = odd_model(**batch).last_hidden_state
            _, cache = odd_model.run_with_cache(**batch, names=Z0)
        after = odd_model(**batch).last_hidden_state
    assert seen == [Z0, Z0]
    assert (ablated - before).abs().max().item() > 1e-2
    assert cache[Z0][:, 3].abs().max().item() == 0.0      # the cache sees the ablated head
    assert cache[Z0][:, 2].abs().max().item() > 0.0
    assert no_hooks_anywhere(odd_model)
    assert torch.equal(after, before)


def test_hooks_are_removed_even_when_the_body_raises(odd_model, batch):
    with pytest.raises(RuntimeError, match="boom"):
        with odd_model.hooks([("*.hook_z", ablate_head_3), ("*.hook_pattern", lambda x, n: None)]):
            assert not no_hooks_anywhere(odd_model)
            raise RuntimeError("boom")
    assert no_hooks_anywhere(odd_model)


def test_hooks_are_removed_when_the_hook_itself_raises(odd_model, batch):
    def broken(x, name):
        raise KeyError("broken hook")

    with pytest.raises(KeyError, match="broken hook"):
        with odd_model.hooks([("encoder.layer.1.hook_resid_mid", broken)]):
            odd_model(**batch)
    assert no_hooks_anywhere(odd_model)
    assert all(not p.active for p in odd_model.hook_points().values())


def test_a_hook_returning_none_changes_nothing(odd_model, batch):
    with torch.no_grad():
        before = odd_model(**batch).last_hidden_state
        with odd_model.hooks([("*.hook_resid_mid", lambda x, n: None)]):
            during = odd_model(**batch).last_hidden_state
    assert torch.equal(before, during)


def test_patching_the_residual_stream_propagates(odd_model, batch):
    """Replacing the last layer's output is exactly what comes out (and what the pooler sees)."""
    with torch.no_grad():
        with odd_model.hooks([("encoder.layer.1.hook_resid_post", lambda x, n: torch.zeros_like(x))]):
            out = odd_model(**batch)
    assert out.last_hidden_state.abs().max().item() == 0.0
    expected_pool = torch.tanh(odd_model.pooler.dense.bias).expand(B, H)
    assert (out.pooler_output - expected_pool).abs().max().item() <= 1e-6


class Recorder(TorchFunctionMode):
    """Records every torch function called and the shapes of the tensors it returns."""

    def __init__(self):
        super().__init__()
        self.calls, self.shapes = [], []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        self.calls.append(getattr(func, "__name__", str(func)))
        if isinstance(result, torch.Tensor):
            self.shapes.append(tuple(result.shape))
        return result


def test_a_plain_forward_never_forms_the_attention_pattern(odd_model, batch):
    with torch.no_grad(), Recorder() as rec:
        odd_model(**batch)
    assert (B, HEADS, T, T) not in rec.shapes
    assert rec.calls.count("scaled_dot_product_attention") == odd_model.config.num_hidden_layers


def test_a_hook_on_the_pattern_forces_the_explicit_path_and_fires(odd_model, batch):
    fired = []
    with torch.no_grad(), Recorder() as rec:
        with odd_model.hooks([("encoder.layer.0.attention.self.hook_pattern", lambda p, n: fired.append(p.shape))]):
            odd_model(**batch)
    assert fired == [(B, HEADS, T, T)]
    assert (B, HEADS, T, T) in rec.shapes
    # only layer 0 was asked for: layer 1 still runs fused
    assert rec.calls.count("scaled_dot_product_attention") == odd_model.config.num_hidden_layers - 1


def test_a_hook_on_the_scores_fires_too(odd_model, batch):
    fired = []
    with torch.no_grad(), odd_model.hooks([("*.hook_scores", lambda s, n: fired.append(n))]):
        odd_model(**batch)
    assert fired == [f"encoder.layer.{i}.attention.self.hook_scores" for i in range(2)]


def test_editing_the_pattern_changes_the_output(odd_model, batch):
    def uniform(p, name):
        keep = batch["attention_mask"][:, None, None, :].to(p.dtype).expand_as(p)
        return keep / keep.sum(-1, keepdim=True)

    with torch.no_grad():
        before = odd_model(**batch).last_hidden_state
        with odd_model.hooks([("encoder.layer.0.attention.self.hook_pattern", uniform)]):
            after = odd_model(**batch, output_attentions=True)
    assert torch.equal(after.attentions[0], uniform(after.attentions[0], ""))
    assert (after.last_hidden_state - before).abs().max().item() > 1e-2


def test_ablating_a_head_gives_the_same_result_on_both_attention_paths(odd_model, batch):
    with torch.no_grad(), odd_model.hooks([(Z0, ablate_head_3)]):
        fast = odd_model(**batch).last_hidden_state
        explicit = odd_model(**batch, output_attentions=True).last_hidden_state
    assert (fast - explicit).abs().max().item() <= 1e-5


def test_hooks_work_through_a_head_model(odd_config, batch, randomize):
    from bertlab import BertForSequenceClassification

    model = randomize(BertForSequenceClassification(odd_config, num_labels=3))
    with torch.no_grad():
        before = model(**batch).logits
        _, cache = model.run_with_cache(**batch, names="bert.encoder.layer.0.attention.self.hook_z")
        with model.hooks([("bert." + Z0, ablate_head_3)]):
            ablated = model(**batch).logits
    assert set(cache) == {"bert." + Z0}
    assert (before - ablated).abs().max().item() > 1e-3
    assert no_hooks_anywhere(model)


def test_hook_points_are_identities(odd_model):
    x = torch.randn(2, 3)
    assert isinstance(odd_model.hook_points()[Z0], HookPoint)
    assert odd_model.hook_points()[Z0](x) is x


# ---- short names, as TransformerLens users write them ----------------------------------------------------------

def test_act_name_gives_the_full_hook_point_name(odd_model):
    assert bertlab.act_name("pattern", 0) == "encoder.layer.0.attention.self.hook_pattern"
    assert bertlab.act_name("hook_z", 1) == "encoder.layer.1.attention.self.hook_z"
    assert bertlab.act_name("normed") == "embeddings.hook_normed"
    points = set(odd_model.hook_points())
    from bertlab.hooks import EMBEDDING_POINTS, LAYER_POINTS
    short = {bertlab.act_name(n) for n in EMBEDDING_POINTS} | {bertlab.act_name(n, l) for n in LAYER_POINTS
                                                                for l in range(odd_model.config.num_hidden_layers)}
    assert short == points                                          # every hook point has a short name, and only those


@pytest.mark.parametrize("args, words", [
    (("pattern",), "pass the layer"),
    (("pattern", -1), "pass the layer"),
    (("pattern", True), "pass the layer"),
    (("normed", 0), "has no layer"),
    (("attention",), "no hook point is called 'attention'"),
    ((3,), "short name"),
])
def test_a_bad_short_name_says_what_exists(args, words):
    with pytest.raises((ValueError, TypeError), match=words):
        bertlab.act_name(*args)


def test_the_cache_is_indexed_by_short_name_and_layer_and_by_full_name(odd_model, batch):
    _, cache = odd_model.run_with_cache(**batch)
    full = cache["encoder.layer.1.attention.self.hook_pattern"]
    assert cache["pattern", 1] is full and cache["normed"] is cache["embeddings.hook_normed"]
    head = bertlab.BertForMaskedLM(odd_model)
    _, head_cache = head.run_with_cache(**batch)
    assert torch.equal(head_cache["pattern", 1], head_cache["bert.encoder.layer.1.attention.self.hook_pattern"])
    with pytest.raises(KeyError):
        cache["encoder.layer.9.attention.self.hook_pattern"]
