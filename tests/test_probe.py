"""Probes: each answer equals the same number computed by hand from the model's own outputs, and bad input teaches.

Three models: a seeded random BertForPreTraining on the odd config (exact hand computations, always runs),
the real MiniLM (contextual vectors, sentence embeddings, rollout on real attention), and bertlab-tiny
(a pre-trained MLM + NSP model, for claims about real guesses).
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

import bertlab
from bertlab import probe
from bertlab.probe import (
    Ablation,
    AblationEffect,
    FillMask,
    Guess,
    GuessChange,
    HeadImportance,
    ablate,
    attention_rollout,
    cosine_distances,
    fill_mask,
    head_importance,
    next_sentence,
    sentence_embedding,
    word_vectors,
)
from testkit import bundled, no_hooks_anywhere

torch.set_num_threads(1)

RIVER_1 = "We sat on the river bank and watched the water flow past."
RIVER_2 = "The boat drifted toward the muddy bank of the river."
MONEY = "I deposited my salary at the bank this morning."


@pytest.fixture
def odd_pretraining(odd_config, randomize):
    return randomize(bertlab.BertForPreTraining(odd_config, device="cpu"))


@pytest.fixture(scope="module")
def tiny():
    """bertlab-tiny, the bundled pre-trained model with MLM and NSP heads."""
    return bundled("bertlab-tiny")


def token_span(tokens: list[str], pieces: list[str]) -> tuple[int, int]:
    """Where `pieces` first occurs in `tokens`, found by a plain scan (independent of the probe's matcher)."""
    for s in range(len(tokens) - len(pieces) + 1):
        if tokens[s:s + len(pieces)] == pieces:
            return s, s + len(pieces)
    raise AssertionError(f"{pieces} not in {tokens}")


# ---- fill_mask and next_sentence -----------------------------------------------------------------

def test_fill_mask_probabilities_are_the_softmax_of_the_mlm_head_at_each_mask(odd_pretraining, odd_tokenizer):
    model, tok = odd_pretraining, odd_tokenizer
    text = "the cat [MASK] on the [MASK] ."
    result = fill_mask(model, tok, text, top_k=4, by_layer=True)
    enc = tok(text)
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True)
    positions = [i for i, t in enumerate(enc.tokens) if t == "[MASK]"]
    assert result.mask_positions == positions == [3, 6]
    probs = out.prediction_logits[0, positions].softmax(-1)            # (2, V): the full model's own logits
    probs = probs[:, :tok.vocab_size]     # the odd model's last 5 ids have no token: never guessed (issue 21)
    p, ids = probs.topk(4, dim=-1)
    for m in range(2):
        assert [g.token for g in result.guesses[m]] == [tok.id_to_token(int(i)) for i in ids[m]]
        assert torch.allclose(torch.tensor([g.probability for g in result.guesses[m]]), p[m], atol=1e-6)
    # logit lens: layer 1's guesses are the MLM head applied to hidden_states[1]
    lens = model.cls.predictions(out.bert.hidden_states[1][0, positions]).softmax(-1)
    first = torch.tensor([g.probability for g in result.by_layer[0][0]])
    assert torch.allclose(first, lens[0].topk(4).values, atol=1e-6)


def test_fill_mask_on_bertlab_tiny_gives_sorted_top_k_for_every_mask_and_every_layer(tiny):
    model, tok = tiny
    result = fill_mask(model, tok, "the river [MASK] was full of [MASK] after the rain .", top_k=5, by_layer=True)
    assert isinstance(result, FillMask) and len(result.guesses) == 2
    for guesses in result.guesses:
        p = [g.probability for g in guesses]
        assert len(p) == 5
        assert all(0.0 < q <= 1.0 for q in p)
        assert p == sorted(p, reverse=True)
        assert sum(p) <= 1.0 + 1e-6
    assert len(result.by_layer) == model.config.num_hidden_layers
    last = result.by_layer[-1]
    for final, lens in zip(result.guesses, last):
        assert [g.token for g in final] == [g.token for g in lens]
        assert all(abs(a.probability - b.probability) < 1e-6 for a, b in zip(final, lens))


def test_next_sentence_is_the_softmax_of_the_nsp_head_on_the_pooled_output(odd_pretraining, odd_tokenizer):
    model, tok = odd_pretraining, odd_tokenizer
    p = next_sentence(model, tok, "the cat sat on the mat .", "it was muddy .")
    with torch.no_grad():
        out = model.bert(**tok("the cat sat on the mat .", "it was muddy ."))
        by_hand = model.cls.seq_relationship(out.pooler_output).softmax(-1)[0, 0]
    assert 0.0 <= p <= 1.0
    assert abs(p - float(by_hand)) < 1e-6


def test_next_sentence_on_bertlab_tiny_is_a_probability(tiny):
    model, tok = tiny
    p = next_sentence(model, tok, "the river rose after the rain .", "the fields were under water .")
    assert 0.0 <= p <= 1.0


@pytest.mark.slow
def test_probes_switch_dropout_off_and_give_back_each_modules_mode(odd_pretraining, odd_tokenizer):
    model, tok = odd_pretraining, odd_tokenizer
    model.train()
    model.cls.eval()                                                    # a mixed state must survive too
    a = fill_mask(model, tok, "the [MASK] sat .", top_k=3)
    b = fill_mask(model, tok, "the [MASK] sat .", top_k=3)
    assert [g.probability for g in a.guesses[0]] == [g.probability for g in b.guesses[0]]   # no dropout
    assert model.training and model.bert.training and not model.cls.training
    sentence_embedding(model, tok, ["the cat sat ."])
    head_importance(model, tok, "the [MASK] sat .")
    assert model.training and model.bert.encoder.layer[0].training and not model.cls.predictions.training


def test_fill_mask_at_positions_masks_by_id_and_guesses_only_those(odd_pretraining, odd_tokenizer):
    # hiding "sat" by position gives what writing [MASK] in its place gives: the ids are the same
    model, tok = odd_pretraining, odd_tokenizer
    at = fill_mask(model, tok, "the cat sat on the [MASK] .", top_k=4, by_layer=True, positions=[3])
    written = fill_mask(model, tok, "the cat [MASK] on the [MASK] .", top_k=4, by_layer=True)
    assert at.mask_positions == [3] and len(at.guesses) == 1                 # the text's own [MASK] is not guessed
    assert at.tokens == written.tokens and at.tokens[3] == "[MASK]"
    assert at.text == "the cat [MASK] on the [MASK]."
    assert [g.token for g in at.guesses[0]] == [g.token for g in written.guesses[0]]
    assert torch.allclose(torch.tensor([g.probability for g in at.guesses[0]]),
                          torch.tensor([g.probability for g in written.guesses[0]]), atol=1e-6)
    assert [[g.token for g in layer[0]] for layer in at.by_layer] == [[g.token for g in layer[0]]
                                                                       for layer in written.by_layer]
    for bad, message in [([0], "position 0 cannot be masked"), ([8], "position 8 cannot be masked"),
                         (3, r"write \[3\]"), ([], "non-empty list")]:
        with pytest.raises(ValueError, match=message):
            fill_mask(model, tok, "the cat sat on the mat .", positions=bad)


# ---- what every probe runs on ----------------------------------------------------------------------

def test_which_heads_a_model_has(odd_config):
    pre, mlm = bertlab.BertForPreTraining(odd_config), bertlab.BertForMaskedLM(odd_config)
    bare, classifier = bertlab.Bert(odd_config), bertlab.BertForSequenceClassification(odd_config)
    assert [probe.has_mlm_head(m) for m in (pre, mlm, bare, classifier)] == [True, True, False, False]
    assert [probe.has_nsp_head(m) for m in (pre, mlm, bare, classifier)] == [True, False, False, False]
    assert probe.mlm_head(mlm) is mlm.cls.predictions
    with pytest.raises(ValueError, match="no masked-LM head"):
        probe.mlm_head(classifier)
    assert probe.base_model(pre) is pre.bert and probe.base_model(bare) is bare
    with pytest.raises(ValueError, match="expected a bertlab model"):
        probe.base_model(torch.nn.Linear(2, 2))


def test_inference_is_eval_without_grad_and_gives_every_mode_back(odd_pretraining):
    model = odd_pretraining.train()
    model.cls.eval()
    with probe.inference(model):
        assert not torch.is_grad_enabled() and not any(m.training for m in model.modules())
    assert torch.is_grad_enabled() and model.training and model.bert.training and not model.cls.training
    with pytest.raises(RuntimeError, match="boom"):
        with probe.inference(model):
            raise RuntimeError("boom")
    assert model.bert.encoder.training and not model.cls.predictions.training


def test_run_attention_weights_and_embedding_parts_are_the_models_own(odd_pretraining, odd_tokenizer):
    model, tok = odd_pretraining.train(), odd_tokenizer                 # dropout on: the probes switch it off
    enc = tok("the cat sat on the mat .", "it was muddy .")
    out = probe.run(model, enc, output_attentions=True)
    model.eval()
    with torch.no_grad():
        by_hand = model.bert(**enc, output_attentions=True)
    assert torch.equal(out.last_hidden_state, by_hand.last_hidden_state) and not out.last_hidden_state.requires_grad
    weights = probe.attention_weights(model, tok.batch(["the cat sat .", "the dog sat on the mat ."]))
    with torch.no_grad():
        batch_out = model.bert(**tok.batch(["the cat sat .", "the dog sat on the mat ."]), output_attentions=True)
    assert len(weights) == 2 and all(torch.equal(a, b) for a, b in zip(weights, batch_out.attentions))
    parts = probe.embedding_parts(model, enc)
    assert torch.equal(parts.normed, by_hand.embeddings.normed) and torch.equal(parts.position,
                                                                                 by_hand.embeddings.position)
    assert probe.max_length(model, tok) == min(model.config.max_position_embeddings, tok.model_max_length)

    class Silent(torch.nn.Module):                                      # a model that returns no weights
        def forward(self, **inputs):
            return torch.zeros(1)
    with pytest.raises(ValueError, match="no attention weights"):
        probe.attention_weights(Silent(), enc)


def test_an_ablation_with_no_head_off_is_the_model_and_with_heads_off_equals_ablate(odd_pretraining, odd_tokenizer):
    model, tok = odd_pretraining, odd_tokenizer
    text = "the cat [MASK] on the mat ."
    ablation = Ablation(model, tok, text)
    assert ablation.metric == "prediction" and ablation.mask_positions == [3]
    none = ablation.effect((), top_k=3)
    expected = fill_mask(model, tok, text, top_k=3).guesses[0]
    assert isinstance(none, AblationEffect) and none.heads == [] and none.guesses == none.baseline
    assert all(isinstance(g, Guess) for g in none.baseline + none.guesses)     # named, as fill_mask's
    assert [g.token for g in none.baseline] == [g.token for g in expected]
    assert all(abs(a.probability - g.probability) < 1e-6 for a, g in zip(none.baseline, expected))
    off = ablation.effect({(1, 2), (0, 1)}, top_k=3)
    assert off.heads == [(0, 1), (1, 2)] and off.baseline == none.baseline
    with ablate(model, [(0, 1), (1, 2)]):
        by_hand = fill_mask(model, tok, text, top_k=99).guesses[0]
    p_off = {g.token: g.probability for g in by_hand}
    assert [g.token for g in off.guesses] == [g.token for g in by_hand[:3]]
    # compared: every token of either top 3, baseline's first, with both probabilities
    assert all(isinstance(c, GuessChange) for c in off.compared)
    assert [c.token for c in off.compared] == list(dict.fromkeys([g.token for g in off.baseline + off.guesses]))
    assert all(abs(c.after - p_off[c.token]) < 1e-6 for c in off.compared)
    p_on = {g.token: g.probability for g in fill_mask(model, tok, text, top_k=99).guesses[0]}
    assert all(abs(c.before - p_on[c.token]) < 1e-6 for c in off.compared)
    assert no_hooks_anywhere(model)
    with pytest.raises(ValueError, match="does not exist"):
        ablation.effect([(5, 0)])


@pytest.mark.slow
def test_an_ablation_without_a_mask_measures_how_far_each_output_vector_moves(minilm):
    model, tok = minilm
    ablation = Ablation(model, tok, "The river bank was muddy.")
    assert ablation.metric == "output"
    assert torch.equal(ablation.effect(()).change, torch.zeros(len(ablation.tokens)))
    effect = ablation.effect([(0, 3)])
    enc = tok("The river bank was muddy.")
    with torch.no_grad():
        clean = model(**enc).last_hidden_state[0]
        with ablate(model, [(0, 3)]):
            moved = model(**enc).last_hidden_state[0]
    assert torch.allclose(effect.change, 1 - F.cosine_similarity(moved, clean, dim=-1), atol=1e-6)
    assert effect.guesses is None and float(effect.change.max()) > 0
    assert no_hooks_anywhere(model)


# ---- word vectors --------------------------------------------------------------------------------

def test_bank_by_a_river_is_nearer_bank_by_a_river_than_bank_with_money(minilm):
    model, tok = minilm
    v = word_vectors(model, tok, [RIVER_1, RIVER_2, MONEY], "bank")
    assert v.shape == (3, model.config.hidden_size) and v.device.type == "cpu"
    d = cosine_distances(v)
    assert d[0, 1] > 0.05                                               # context changes the vector
    assert d[0, 1] < d[0, 2] and d[0, 1] < d[1, 2]                      # ...and river senses stay together


def test_river_bank_and_bank_account_get_different_vectors(minilm):
    model, tok = minilm
    v = word_vectors(model, tok, ["the river bank", "the bank account"], "bank")
    assert not torch.allclose(v[0], v[1], atol=1e-2)


@pytest.mark.slow
def test_a_multi_piece_word_is_the_mean_of_its_pieces(minilm):
    model, tok = minilm
    pieces = tok.tokenize("overdraft")
    assert len(pieces) >= 2                                             # the claim needs a split word
    texts = ["The overdraft fee was high.", "I paid it."]
    enc = tok(texts[0])
    s, e = token_span(enc.tokens, pieces)
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True)
    for layer in (-1, 0, 3):
        by_hand = out.hidden_states[layer][0, s:e].mean(dim=0)
        got = word_vectors(model, tok, texts[:1] + ["Another overdraft."], "overdraft", layer=layer)[0]
        assert torch.allclose(got, by_hand, atol=1e-5), layer


@pytest.mark.slow
def test_one_layer_and_all_layers_agree(minilm):
    model, tok = minilm
    L = model.config.num_hidden_layers
    sentences = [RIVER_1, MONEY]
    every = word_vectors(model, tok, sentences, "bank", layer="all")
    assert every.shape == (2, L + 1, model.config.hidden_size)
    assert torch.allclose(word_vectors(model, tok, sentences, "bank", layer=None), every, atol=0)
    for layer in (0, 2, L, -1, -(L + 1)):
        assert torch.allclose(word_vectors(model, tok, sentences, "bank", layer=layer), every[:, layer], atol=1e-6)


@pytest.mark.slow
def test_padding_in_the_batch_does_not_change_a_vector(minilm):
    model, tok = minilm
    alone = word_vectors(model, tok, ["the bank"], "bank")
    padded = word_vectors(model, tok, ["the bank", RIVER_1], "bank")
    assert torch.allclose(alone[0], padded[0], atol=1e-5)


@pytest.mark.slow
def test_words_match_whole_and_ignore_case_in_an_uncased_vocabulary(minilm):
    model, tok = minilm
    upper = word_vectors(model, tok, ["The Bank closed."], "BANK")
    lower = word_vectors(model, tok, ["the bank closed."], "bank")
    assert torch.allclose(upper, lower, atol=1e-6)
    assert tok.tokenize("riverbank")[-1] == "##bank"                   # "bank" inside a word is not the word
    with pytest.raises(ValueError, match="riverbank"):
        word_vectors(model, tok, ["the riverbank flooded"], "bank")
    assert tok.tokenize("embankments")[0] == "embankment"              # a prefix of a longer word is not the word
    with pytest.raises(ValueError, match="not a word of sentence 0"):
        word_vectors(model, tok, ["the embankments held"], "embankment")


@pytest.mark.slow
def test_occurrence_picks_the_nth_match(minilm):
    model, tok = minilm
    text = "the bank near the bank"
    enc = tok(text)
    with torch.no_grad():
        last = model(**enc).last_hidden_state[0]
    hits = [i for i, t in enumerate(enc.tokens) if t == "bank"]
    assert len(hits) == 2
    for occurrence, position in ((0, hits[0]), (1, hits[1]), (-1, hits[1])):
        got = word_vectors(model, tok, [text], "bank", occurrence=occurrence)[0]
        assert torch.allclose(got, last[position], atol=1e-5), occurrence


# ---- cosine distances ----------------------------------------------------------------------------

def test_cosine_distances_of_simple_vectors():
    d = cosine_distances(torch.tensor([[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0]]))
    assert torch.allclose(d, torch.tensor([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]]), atol=1e-6)


def test_cosine_distances_match_one_minus_cosine_similarity_pair_by_pair():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 7, generator=g)
    d = cosine_distances(x)
    for i in range(5):
        for j in range(5):
            by_hand = 0.0 if i == j else 1.0 - float(F.cosine_similarity(x[i], x[j], dim=0))
            assert abs(float(d[i, j]) - by_hand) < 1e-6
    assert torch.equal(d, d.T) and torch.equal(d.diagonal(), torch.zeros(5))


def test_cosine_distances_per_layer():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 3, 6, generator=g)                              # (n, L, H)
    d = cosine_distances(x)
    assert d.shape == (3, 4, 4)
    for layer in range(3):
        assert torch.allclose(d[layer], cosine_distances(x[:, layer]), atol=1e-6)


# ---- sentence embeddings -------------------------------------------------------------------------

@pytest.mark.slow
def test_mean_pooling_is_the_masked_mean_of_a_layer(minilm):
    model, tok = minilm
    texts = ["A short one.", RIVER_1, MONEY]                           # different lengths: padding is exercised
    batch = tok.batch(texts)
    assert (batch.attention_mask == 0).any()
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True)
    for layer in (-1, 0, 2):
        h = out.hidden_states[layer]
        for i in range(3):
            n = int(batch.attention_mask[i].sum())
            by_hand = h[i, :n].mean(dim=0)                              # real tokens, [CLS] and [SEP] included
            got = sentence_embedding(model, tok, texts, layer=layer, pooling="mean")[i]
            assert torch.allclose(got, by_hand, atol=1e-5), (layer, i)
    every = sentence_embedding(model, tok, texts, layer="all", pooling="mean")
    assert every.shape == (3, model.config.num_hidden_layers + 1, model.config.hidden_size)
    assert torch.allclose(every[:, 2], sentence_embedding(model, tok, texts, layer=2, pooling="mean"), atol=1e-6)


def test_mean_pooling_equals_sentence_transformers_all_minilm_before_normalisation(minilm, hf_minilm):
    model, tok = minilm
    texts = ["A short one.", RIVER_1, MONEY]
    hf = hf_minilm("eager")
    batch = tok.batch(texts)
    with torch.no_grad():
        last = hf(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                  token_type_ids=batch.token_type_ids).last_hidden_state
    mask = batch.attention_mask[:, :, None].float()
    reference = (last * mask).sum(1) / mask.sum(1).clamp(min=1e-9)      # sentence-transformers' Pooling(mean)
    got = sentence_embedding(model, tok, texts, pooling="mean")
    assert torch.allclose(got, reference, atol=1e-5)


@pytest.mark.slow
def test_cls_pooling_is_the_cls_hidden_state_not_the_pooler_output(minilm):
    model, tok = minilm
    texts = [RIVER_1, MONEY]
    with torch.no_grad():
        out = model(**tok.batch(texts), output_hidden_states=True)
    cls = sentence_embedding(model, tok, texts, pooling="cls")
    assert torch.allclose(cls, out.last_hidden_state[:, 0], atol=1e-5)
    assert not torch.allclose(cls, out.pooler_output, atol=1e-2)
    assert torch.allclose(sentence_embedding(model, tok, texts, layer=1), out.hidden_states[1][:, 0], atol=1e-5)


# ---- attention rollout ---------------------------------------------------------------------------

def test_rollout_by_hand_on_small_matrices():
    g = torch.Generator().manual_seed(0)
    L, B, A, T = 3, 2, 2, 4
    attentions = [torch.rand(B, A, T, T, generator=g).softmax(-1) for _ in range(L)]
    expected = torch.empty(B, T, T)
    for b in range(B):
        R = torch.eye(T)
        for layer in range(L):
            W = sum(attentions[layer][b, h] for h in range(A)) / A      # average the heads
            W = 0.5 * W + 0.5 * torch.eye(T)                            # the residual connection
            W = W / W.sum(dim=1, keepdim=True)
            R = W @ R                                                   # bottom up
        expected[b] = R
    got = attention_rollout(tuple(attentions))
    assert got.shape == (B, T, T)
    assert torch.allclose(got, expected, atol=1e-6)
    assert torch.allclose(attention_rollout(torch.stack(attentions)), expected, atol=1e-6)
    plain = attention_rollout(attentions, add_residual=False)
    mean = [a.mean(1) for a in attentions]
    assert torch.allclose(plain, mean[2] @ mean[1] @ mean[0], atol=1e-6)
    peak = attention_rollout(attentions[:1], add_residual=False, head_fusion="max")
    top = attentions[0].amax(1)
    assert torch.allclose(peak, top / top.sum(-1, keepdim=True), atol=1e-6)


def test_rollout_of_identity_attention_is_identity():
    eye = torch.eye(5).expand(1, 3, 5, 5)
    assert torch.allclose(attention_rollout([eye, eye]), torch.eye(5)[None], atol=1e-7)


def test_rollout_of_a_real_model_is_row_stochastic(minilm):
    model, tok = minilm
    with torch.no_grad():
        out = model(**tok.batch([RIVER_1, "Short."]), output_attentions=True)
    r = attention_rollout(out.attentions)
    assert r.shape == (2, out.attentions[0].shape[-1], out.attentions[0].shape[-1])
    assert torch.allclose(r.sum(-1), torch.ones(r.shape[:2]), atol=1e-5)
    assert (r >= 0).all()
    assert torch.allclose(attention_rollout(out), r, atol=0)           # a BertOutput works too


# ---- ablation ------------------------------------------------------------------------------------

def test_ablating_a_head_equals_cutting_its_slice_of_the_output_projection(odd_model, batch):
    # zeroing head h's z is the same as zeroing the columns of W_O that read head h
    layer, head = 1, 2
    Dh = odd_model.config.head_dim
    cut = copy.deepcopy(odd_model)
    with torch.no_grad():
        cut.encoder.layer[layer].attention.output.dense.weight[:, head * Dh:(head + 1) * Dh] = 0
        expected = cut(**batch).last_hidden_state
        with ablate(odd_model, [(layer, head)]):
            got = odd_model(**batch).last_hidden_state
    assert torch.allclose(got, expected, atol=1e-5)
    assert not torch.allclose(got, odd_model(**batch).last_hidden_state, atol=1e-3)


def test_ablate_restores_the_model_exactly_and_leaves_no_hook(odd_model, batch):
    with torch.no_grad():
        before = odd_model(**batch).last_hidden_state
        with ablate(odd_model, {0: [0, 3], 1: 1}):
            assert sum(bool(m._forward_hooks) for m in odd_model.modules()) == 2   # one hook per layer
            _, cache = odd_model.run_with_cache(**batch, names="*.hook_z")
            during = odd_model(**batch).last_hidden_state
        after = odd_model(**batch).last_hidden_state
    z0, z1 = cache["encoder.layer.0.attention.self.hook_z"], cache["encoder.layer.1.attention.self.hook_z"]
    assert (z0[:, [0, 3]] == 0).all() and (z0[:, [1, 2]] != 0).any() and (z1[:, 1] == 0).all()
    assert not torch.allclose(before, during, atol=1e-3)
    assert torch.equal(before, after)
    assert no_hooks_anywhere(odd_model)
    with pytest.raises(RuntimeError, match="boom"):
        with ablate(odd_model, [(0, 0)]):
            raise RuntimeError("boom")
    assert no_hooks_anywhere(odd_model)


# ---- head importance -----------------------------------------------------------------------------

@pytest.mark.slow
def test_head_importance_of_a_sentence_encoder_measures_the_output_change(minilm):
    model, tok = minilm
    text = "The river bank was muddy after the rain."
    result = head_importance(model, tok, text)
    cfg = model.config
    assert isinstance(result, HeadImportance) and result.metric == "output" and result.baseline == 0.0
    assert result.scores.shape == (cfg.num_hidden_layers, cfg.num_attention_heads)
    assert torch.isfinite(result.scores).all()
    assert no_hooks_anywhere(model)
    enc = tok(text)
    with torch.no_grad():
        clean = model(**enc).last_hidden_state[0]

        def change(flat: int) -> float:
            with ablate(model, [divmod(flat, cfg.num_attention_heads)]):
                h = model(**enc).last_hidden_state[0]
            return float((1 - F.cosine_similarity(h, clean, dim=-1)).mean())

        most, least = int(result.scores.argmax()), int(result.scores.argmin())
        assert change(most) > change(least)
        assert abs(change(most) - float(result.scores.flatten()[most])) < 1e-5
    assert no_hooks_anywhere(model)


@pytest.mark.slow
def test_head_importance_with_targets_is_the_rise_in_masked_token_loss(tiny):
    model, tok = tiny
    text = "the [MASK] flowed past the town ."
    result = head_importance(model, tok, text, targets=["river"])
    cfg = model.config
    assert result.metric == "mlm_loss" and result.scores.shape == (cfg.num_hidden_layers, cfg.num_attention_heads)
    assert torch.isfinite(result.scores).all()
    enc = tok(text)
    pos = enc.tokens.index("[MASK]")
    target = torch.tensor([tok.token_to_id("river")])

    def loss() -> float:
        with torch.no_grad():
            return float(F.cross_entropy(model(**enc).prediction_logits[0, [pos]], target))

    assert abs(result.baseline - loss()) < 1e-5
    changes = {}
    for flat in (int(result.scores.argmax()), int(result.scores.argmin())):
        with ablate(model, [divmod(flat, cfg.num_attention_heads)]):
            changes[flat] = loss() - result.baseline
        assert abs(changes[flat] - float(result.scores.flatten()[flat])) < 1e-4
    assert changes[int(result.scores.argmax())] > changes[int(result.scores.argmin())]
    assert no_hooks_anywhere(model)


@pytest.mark.slow
def test_head_importance_without_targets_tracks_the_top_guess(odd_pretraining, odd_tokenizer):
    model, tok = odd_pretraining, odd_tokenizer
    text = "the cat [MASK] on the mat ."
    result = head_importance(model, tok, text)
    assert result.metric == "prediction" and result.scores.shape == (2, 4)
    assert abs(result.baseline - fill_mask(model, tok, text, top_k=1).guesses[0][0].probability) < 1e-6
    top = fill_mask(model, tok, text, top_k=1).guesses[0][0].token
    with ablate(model, [(0, 0)]):
        probs = {g.token: g.probability for g in fill_mask(model, tok, text, top_k=99).guesses[0]}
    assert abs(float(result.scores[0, 0]) - (result.baseline - probs[top])) < 1e-6
    assert result.tokens == tok(text).tokens
    assert no_hooks_anywhere(model)


# ---- bad input -----------------------------------------------------------------------------------

BAD_MINILM = [
    (lambda m, t: fill_mask(m, t, "the [MASK] ."), "bertlab-tiny"),
    (lambda m, t: next_sentence(m, t, "a b.", "c d."), "bertlab-tiny"),
    (lambda m, t: word_vectors(m, t, [], "bank"), "sentences is empty"),
    (lambda m, t: word_vectors(m, t, "the bank", "bank"), r"for one text pass \[sentence\]"),
    (lambda m, t: word_vectors(m, t, ["the bank"], ""), "word is ''"),
    (lambda m, t: word_vectors(m, t, ["the bank", "a river"], "bank"), r"sentence 1 \('a river'\)"),
    (lambda m, t: word_vectors(m, t, ["the bank"], "bank", layer=7), r"out of range.*0 … 6"),
    (lambda m, t: word_vectors(m, t, ["the bank"], "bank", layer=-8), r"-7 … -1"),
    (lambda m, t: word_vectors(m, t, ["the bank"], "bank", layer="last"), "layer must be an int or 'all'"),
    (lambda m, t: word_vectors(m, t, ["the bank"], "bank", occurrence=1), "1 occurrence"),
    (lambda m, t: word_vectors(m, t, ["the bank"], "🦆"), "not in this vocabulary"),
    (lambda m, t: sentence_embedding(m, t, ["a"], pooling="max"), "'cls' or 'mean'"),
    (lambda m, t: sentence_embedding(m, t, ["a", " "], pooling="mean"), r"texts\[1\]"),
    (lambda m, t: head_importance(m, t, "the bank", targets=["bank"]), "masked-LM head"),
    (lambda m, t: head_importance(m, t, "the bank", metric="loss"), "metric must be one of"),
    (lambda m, t: ablate(m, [(6, 0)]).__enter__(), r"layers 0 … 5 and heads 0 … 11"),
    (lambda m, t: ablate(m, [0, 1]).__enter__(), r"\(layer, head\) pair"),
]


@pytest.mark.parametrize("call, message", BAD_MINILM, ids=[m for _, m in BAD_MINILM])
def test_bad_input_to_minilm_probes_raises_a_value_error_that_says_what_to_do(minilm, call, message):
    model, tok = minilm
    with pytest.raises(ValueError, match=message):
        call(model, tok)
    assert no_hooks_anywhere(model)


BAD_MLM = [
    (lambda m, t: fill_mask(m, t, "no gap here"), "must contain \\[MASK\\]"),
    (lambda m, t: fill_mask(m, t, "the [MASK] .", top_k=0), "top_k must be"),
    (lambda m, t: next_sentence(m, t, "the cat .", ""), "sentence b"),
    (lambda m, t: head_importance(m, t, "the [MASK] sat on the [MASK] .", targets=["cat"]), "2 \\[MASK\\]"),
    (lambda m, t: head_importance(m, t, "the cat sat .", targets=["cat"]), "has none|no \\[MASK\\]|drop targets"),
    (lambda m, t: head_importance(m, t, "the [MASK] sat .", targets="cat"), r"write \['cat'\]"),
    (lambda m, t: head_importance(m, t, "the [MASK] sat .", targets=["catdog"]), "pick a word that is one token"),
    (lambda m, t: head_importance(m, t, "the cat sat .", metric="prediction"), "has none"),
    (lambda m, t: cosine_distances(torch.ones(3)), "torch.stack"),
    (lambda m, t: cosine_distances(torch.ones(2, 3, dtype=torch.long)), "floating-point"),
    (lambda m, t: attention_rollout([]), "output_attentions=True"),
    (lambda m, t: attention_rollout(torch.ones(2, 3, 3, 3)), r"for one layer pass \[attention\]"),
    (lambda m, t: attention_rollout([torch.ones(1, 2, 3, 3), torch.ones(1, 2, 4, 4)]), "one forward pass"),
    (lambda m, t: attention_rollout([torch.ones(1, 2, 3, 3)], head_fusion="sum"), "head_fusion"),
    (lambda m, t: attention_rollout(m(**t("the cat ."))), "output_attentions=True"),
]


@pytest.mark.parametrize("call, message", BAD_MLM, ids=[m for _, m in BAD_MLM])
def test_bad_input_to_mlm_probes_raises_a_value_error_that_says_what_to_do(odd_pretraining, odd_tokenizer,
                                                                            call, message):
    with pytest.raises(ValueError, match=message):
        call(odd_pretraining, odd_tokenizer)
    assert no_hooks_anywhere(odd_pretraining)


# ---- what the figures draw is computed here (probes compute, viz draws) ------------------------------------

def test_pca_2d_and_cosine_similarity_live_in_probe():
    from bertlab.probe.cosine import cosine_similarity
    from bertlab.probe.projection import pca_2d
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 16, generator=g)
    sim = cosine_similarity(x)
    assert torch.allclose(sim, torch.nn.functional.cosine_similarity(x[:, None], x[None], dim=-1), atol=1e-6)
    coords, var = pca_2d(x)
    assert coords.shape == (6, 2) and 0 < float(var[1]) <= float(var[0]) <= 1
    xc = x.double() - x.double().mean(0)
    total = float((xc ** 2).sum())
    assert abs(float((coords.double() ** 2).sum()) / total - float(var.sum())) < 1e-5   # the variance it keeps
    assert coords.abs().argmax(0).tolist() == [int(i) for i in coords.abs().argmax(0)]
    far = coords.abs().argmax(0)
    assert (coords[far, torch.arange(2)] > 0).all()                    # the sign convention: farthest point positive


def test_masking_fate_is_the_one_rule_for_the_figure_and_the_counts():
    import bertlab
    from bertlab.model.heads import IGNORE
    from bertlab.pretraining.masking import mask_tokens
    from bertlab.probe.masking import masking_fate
    _, tok = bertlab.load("bertlab-tiny", device="cpu")
    ids = torch.tensor(tok("The river was low after a long dry summer and the ducks swam.").input_ids).expand(400, -1)
    inputs, labels = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(0))
    fate = masking_fate(inputs, labels, tok)
    chosen = labels != IGNORE
    assert torch.equal(fate > 0, chosen)
    assert torch.equal(fate == 1, chosen & (inputs == tok.mask_id))
    assert torch.equal(fate == 3, chosen & (inputs == labels))
    assert 0.7 < float((fate == 1).sum() / chosen.sum()) < 0.9        # 80 / 10 / 10
    with pytest.raises(ValueError, match="same shape"):
        masking_fate(inputs[:, :3], labels, tok)
