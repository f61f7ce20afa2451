"""Task heads: logits and losses equal transformers' on copied random weights; bad labels fail clearly."""

from __future__ import annotations

import pytest
import torch

from bertlab import (
    Bert,
    BertForMaskedLM,
    BertForPreTraining,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
)
from bertlab.model import BertForMultipleChoice
from bertlab.model.heads import IGNORE, HeadOutput, PreTrainingOutput
from testkit import make_batch, max_err

ATOL = 1e-5


@pytest.fixture
def mlm_labels(batch):
    """Labels on a few real tokens per row (-100 elsewhere, padding included)."""
    labels = torch.full_like(batch["input_ids"], -100)
    g = torch.Generator().manual_seed(3)
    for b, n in enumerate(batch["attention_mask"].sum(1).tolist()):
        positions = torch.randperm(n - 2, generator=g)[:2] + 1
        labels[b, positions] = torch.randint(0, 99, (2,), generator=g)
    return labels


def test_pretraining_logits_match_transformers(odd_config, batch, randomize, hf_twin):
    model = randomize(BertForPreTraining(odd_config))
    hf = hf_twin(model)
    with torch.no_grad():
        ours, theirs = model(**batch), hf(**batch)
    assert ours.prediction_logits.shape == (3, 11, 99)
    assert max_err(ours.prediction_logits, theirs.prediction_logits) <= ATOL
    assert max_err(ours.seq_relationship_logits, theirs.seq_relationship_logits) <= ATOL
    assert ours.loss is None and ours.mlm_loss is None and ours.nsp_loss is None


def test_pretraining_loss_matches_transformers(odd_config, batch, mlm_labels, randomize, hf_twin):
    model = randomize(BertForPreTraining(odd_config))
    hf = hf_twin(model)
    nsp = torch.tensor([0, 1, 1])
    with torch.no_grad():
        ours = model(**batch, labels=mlm_labels, next_sentence_label=nsp)
        theirs = hf(**batch, labels=mlm_labels, next_sentence_label=nsp)
    chosen = mlm_labels != -100
    # with labels, bertlab projects only the labelled positions onto the vocabulary
    assert ours.prediction_logits.shape == (int(chosen.sum()), 99)
    assert max_err(ours.prediction_logits, theirs.prediction_logits[chosen]) <= ATOL
    assert abs(ours.loss.item() - theirs.loss.item()) <= ATOL
    assert abs((ours.mlm_loss + ours.nsp_loss).item() - ours.loss.item()) <= 1e-6
    nsp_ref = torch.nn.functional.cross_entropy(theirs.seq_relationship_logits, nsp)
    assert abs(ours.nsp_loss.item() - nsp_ref.item()) <= ATOL


def test_masked_lm_logits_and_loss_match_transformers(odd_config, batch, mlm_labels, randomize, hf_twin):
    model = randomize(BertForMaskedLM(odd_config))
    hf = hf_twin(model)
    with torch.no_grad():
        plain, hf_plain = model(**batch), hf(**batch)
        ours, theirs = model(**batch, labels=mlm_labels), hf(**batch, labels=mlm_labels)
    assert max_err(plain.logits, hf_plain.logits) <= ATOL
    assert max_err(ours.logits, theirs.logits[mlm_labels != -100]) <= ATOL
    assert abs(ours.loss.item() - theirs.loss.item()) <= ATOL


def test_masked_lm_with_no_labelled_position_has_zero_loss(odd_config, batch, randomize):
    model = randomize(BertForMaskedLM(odd_config))
    out = model(**batch, labels=torch.full_like(batch["input_ids"], -100))
    assert out.logits.shape == (0, 99)
    assert out.loss.item() == 0.0 and out.loss.requires_grad  # a step on such a batch does nothing, not NaN


def test_mlm_decoder_is_tied_to_the_token_embeddings(odd_config):
    for model in (BertForPreTraining(odd_config), BertForMaskedLM(odd_config)):
        assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    model = BertForPreTraining(odd_config)
    with torch.no_grad():
        model.bert.embeddings.word_embeddings.weight[7] += 1.0
    assert torch.equal(model.cls.predictions.decoder.weight[7], model.bert.embeddings.word_embeddings.weight[7])
    # counted once: encoder + transform + MLM bias + NSP
    H, V = 32, 99
    assert model.num_parameters() == model.bert.num_parameters() + (H * H + H) + 2 * H + V + (2 * H + 2)


@pytest.mark.parametrize("num_labels", [3, 1], ids=["classes", "regression"])
def test_sequence_classification_matches_transformers(odd_config, batch, randomize, hf_twin, num_labels):
    model = randomize(BertForSequenceClassification(odd_config, num_labels=num_labels))
    hf = hf_twin(model, num_labels=num_labels)
    labels = torch.tensor([2, 0, 1]) if num_labels > 1 else torch.tensor([0.5, -1.0, 2.0])
    with torch.no_grad():
        ours, theirs = model(**batch, labels=labels), hf(**batch, labels=labels)
    assert ours.logits.shape == (3, num_labels)
    assert max_err(ours.logits, theirs.logits) <= ATOL
    assert abs(ours.loss.item() - theirs.loss.item()) <= ATOL


def test_token_classification_matches_transformers(odd_config, batch, randomize, hf_twin):
    model = randomize(BertForTokenClassification(odd_config, num_labels=5))
    hf = hf_twin(model, num_labels=5)
    g = torch.Generator().manual_seed(4)
    labels = torch.randint(0, 5, batch["input_ids"].shape, generator=g).masked_fill(batch["attention_mask"] == 0, -100)
    with torch.no_grad():
        ours, theirs = model(**batch, labels=labels), hf(**batch, labels=labels)
    assert ours.logits.shape == (3, 11, 5)
    assert max_err(ours.logits, theirs.logits) <= ATOL
    assert abs(ours.loss.item() - theirs.loss.item()) <= ATOL
    assert model.bert.pooler is None  # a tagger has no use for the pooled [CLS]


def test_question_answering_matches_transformers(odd_config, batch, randomize, hf_twin):
    model = randomize(BertForQuestionAnswering(odd_config))
    hf = hf_twin(model)
    start, end = torch.tensor([1, 4, 50]), torch.tensor([3, 6, 60])  # row 2's answer was truncated away
    with torch.no_grad():
        ours = model(**batch, start_positions=start, end_positions=end)
        theirs = hf(**batch, start_positions=start, end_positions=end)
    assert ours.start_logits.shape == ours.end_logits.shape == (3, 11)
    assert max_err(ours.start_logits, theirs.start_logits) <= ATOL
    assert max_err(ours.end_logits, theirs.end_logits) <= ATOL
    assert abs(ours.loss.item() - theirs.loss.item()) <= ATOL


@pytest.fixture
def choices() -> dict:
    """2 questions × 3 endings × 11 tokens, each (context, ending) pair padded to its own length."""
    flat = make_batch(B=6, lengths=(11, 7, 4, 9, 11, 5), seed=6)
    return {k: v.view(2, 3, 11) for k, v in flat.items()}


def test_multiple_choice_matches_transformers(odd_config, choices, randomize, hf_twin):
    model = randomize(BertForMultipleChoice(odd_config))
    hf = hf_twin(model)  # transformers.BertForMultipleChoice: `classifier` is Linear(H, 1) in both
    labels = torch.tensor([2, 0])
    with torch.no_grad():
        ours, theirs = model(**choices, labels=labels), hf(**choices, labels=labels)
    assert ours.logits.shape == (2, 3)                                  # one score per choice
    assert ours.bert.last_hidden_state.shape == (6, 11, 32)            # the encoder read B·C sequences
    assert max_err(ours.logits, theirs.logits) <= ATOL
    assert abs(ours.loss.item() - theirs.loss.item()) <= ATOL
    assert abs(ours.loss.item() - torch.nn.functional.cross_entropy(ours.logits, labels).item()) <= 1e-6


def test_multiple_choice_scores_each_choice_on_its_own(odd_config, choices, randomize):
    """Choice c's score is the sequence classifier's score of pair c alone: the C pairs never see each other."""
    model = randomize(BertForMultipleChoice(odd_config))
    with torch.no_grad():
        logits = model(**choices).logits
        one = model(**{k: v[1:2, 2:3] for k, v in choices.items()}).logits
    assert one.shape == (1, 1) and max_err(one[0, 0], logits[1, 2]) <= ATOL
    assert logits.std().item() > 1e-3                                   # the choices really get different scores


def test_multiple_choice_bad_inputs_say_what_to_pass(odd_config, choices):
    model = BertForMultipleChoice(odd_config).eval()
    with pytest.raises(ValueError, match=r"shape \(batch, choices, seq_len\), got \(2, 11\)"):
        model(choices["input_ids"][:, 0])
    with pytest.raises(ValueError, match=r"attention_mask has shape \(2, 2, 11\) but input_ids has \(2, 3, 11\)"):
        model(choices["input_ids"], attention_mask=choices["attention_mask"][:, :2])
    with pytest.raises(ValueError, match=r"labels must be in 0 … 2"):
        model(**choices, labels=torch.tensor([0, 3]))


def test_a_head_reuses_the_bert_it_is_given(odd_config, batch, randomize):
    bert = randomize(Bert(odd_config))
    head = BertForSequenceClassification(bert, num_labels=2)
    assert head.bert is bert
    with torch.no_grad():
        assert torch.equal(head.eval()(**batch).bert.last_hidden_state, bert(**batch).last_hidden_state)


def test_heads_return_the_encoder_outputs_when_asked(odd_config, batch, randomize):
    model = randomize(BertForPreTraining(odd_config))
    out = model(**batch, output_attentions=True, output_hidden_states=True)
    assert len(out.bert.hidden_states) == 3 and len(out.bert.attentions) == 2


def test_losses_are_differentiable(odd_config, batch, mlm_labels, randomize):
    model = randomize(BertForPreTraining(odd_config)).train()
    out = model(**batch, labels=mlm_labels, next_sentence_label=torch.tensor([0, 1, 0]))
    out.loss.backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert model.bert.embeddings.word_embeddings.weight.grad.abs().sum().item() > 0


# ---- bad labels and bad construction -------------------------------------------------------------

@pytest.mark.parametrize("bad", [3, -1])
def test_sequence_classification_labels_out_of_range(odd_config, batch, bad):
    model = BertForSequenceClassification(odd_config, num_labels=3).eval()
    with pytest.raises(ValueError, match=r"labels must be in 0 … 2"):
        model(**batch, labels=torch.tensor([0, bad, 1]))


def test_token_classification_labels_of_wrong_shape(odd_config, batch):
    model = BertForTokenClassification(odd_config, num_labels=3).eval()
    with pytest.raises(ValueError, match=r"labels has shape \(3, 10\) but the input has \(3, 11\)"):
        model(**batch, labels=torch.zeros(3, 10, dtype=torch.long))


def test_token_classification_labels_out_of_range(odd_config, batch):
    model = BertForTokenClassification(odd_config, num_labels=3).eval()
    labels = torch.zeros(3, 11, dtype=torch.long)
    labels[1, 4] = 7
    with pytest.raises(ValueError, match=r"labels must be in 0 … 2.* 7"):
        model(**batch, labels=labels)


def test_masked_lm_labels_of_wrong_shape(odd_config, batch):
    model = BertForMaskedLM(odd_config).eval()
    with pytest.raises(ValueError, match=r"labels has shape \(3,\) but the input has \(3, 11\)"):
        model(**batch, labels=torch.tensor([1, 2, 3]))


def test_prediction_logits_are_every_position_without_labels_and_the_labelled_ones_with(odd_config, batch,
                                                                                      mlm_labels, randomize):
    """The documented two shapes of `prediction_logits`: (B, T, V) without labels; with them (N, V), row i the
    i-th labelled position in row-major order — the same numbers the full projection gives there."""
    assert "(N, V)" in PreTrainingOutput.__doc__ and "(N, V)" in HeadOutput.__doc__
    for model in (randomize(BertForPreTraining(odd_config)), randomize(BertForMaskedLM(odd_config))):
        with torch.no_grad():
            full, sparse = model(**batch), model(**batch, labels=mlm_labels)
        get = (lambda o: o.prediction_logits) if isinstance(model, BertForPreTraining) else (lambda o: o.logits)
        chosen = mlm_labels != IGNORE
        assert get(full).shape == (3, 11, 99)
        assert get(sparse).shape == (int(chosen.sum()), 99)
        assert max_err(get(sparse), get(full)[chosen]) <= 1e-5


def test_num_labels_must_be_positive(odd_config):
    with pytest.raises(ValueError, match="num_labels must be at least 1, got 0"):
        BertForSequenceClassification(odd_config, num_labels=0)
    with pytest.raises(ValueError, match="num_labels must be at least 1, got 0"):
        BertForTokenClassification(odd_config, num_labels=0)


def test_classifier_needs_a_pooler(odd_config):
    with pytest.raises(ValueError, match="no pooler"):
        BertForSequenceClassification(Bert(odd_config, add_pooling_layer=False))


def test_a_head_needs_a_bert_or_a_config():
    with pytest.raises(ValueError, match="expected a Bert or a BertConfig, got dict"):
        BertForPreTraining({"hidden_size": 32})


# ---- the encoder's outputs where transformers users look for them ---------------------------------

HEAD_CASES = {
    "pretraining": (BertForPreTraining, {}),
    "masked_lm": (BertForMaskedLM, {}),
    "sequence": (BertForSequenceClassification, {"num_labels": 3}),
    "token": (BertForTokenClassification, {"num_labels": 3}),
    "qa": (BertForQuestionAnswering, {}),
    "choice": (BertForMultipleChoice, {}),
}


@pytest.mark.parametrize("name", list(HEAD_CASES))
def test_every_head_output_carries_the_encoder_views_directly(odd_config, batch, choices, randomize, name):
    """`out.attentions`, `out.hidden_states`, `out.embeddings` on any head are `out.bert`'s own tensors (no copy)."""
    cls, kwargs = HEAD_CASES[name]
    model = randomize(cls(odd_config, **kwargs))
    inputs = choices if name == "choice" else batch
    with torch.no_grad():
        out = model(**inputs, output_attentions=True, output_hidden_states=True)
        plain = model(**inputs)
    assert out.attentions is out.bert.attentions and len(out.attentions) == 2
    assert out.hidden_states is out.bert.hidden_states and len(out.hidden_states) == 3
    assert out.embeddings is out.bert.embeddings
    assert torch.equal(out.hidden_states[-1], out.bert.last_hidden_state)
    B_seq = 6 if name == "choice" else 3                                # multiple choice reads B·C sequences
    assert out.attentions[0].shape == (B_seq, 4, 11, 11)
    assert out.embeddings.normed.shape == (B_seq, 11, 32)
    assert plain.attentions is None and plain.hidden_states is None     # only when asked, as in transformers


def test_head_attentions_match_transformers_on_the_head_output(odd_config, batch, randomize, hf_twin):
    """A transformers user's first guess, `out.attentions` on a MaskedLM output, gives the same weights."""
    model = randomize(BertForMaskedLM(odd_config))
    hf = hf_twin(model)
    with torch.no_grad():
        ours = model(**batch, output_attentions=True, output_hidden_states=True)
        theirs = hf(**batch, output_attentions=True, output_hidden_states=True)
    assert max(max_err(a, b) for a, b in zip(ours.attentions, theirs.attentions)) <= ATOL
    assert max(max_err(a, b) for a, b in zip(ours.hidden_states, theirs.hidden_states)) <= ATOL
