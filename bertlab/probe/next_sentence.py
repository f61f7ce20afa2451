"""Next-sentence prediction: how strongly the NSP head believes sentence B followed sentence A.

    next_sentence(model, tokenizer, "It rained all day.", "The river rose.")   # P(IsNext)
"""

from __future__ import annotations

from .running import has_nsp_head, inference, max_length

__all__ = ["next_sentence"]


def next_sentence(model, tokenizer, a: str, b: str) -> float:
    """P(IsNext): the model's belief that `b` is the sentence that followed `a` (NSP head, label 0 = IsNext)."""
    if not has_nsp_head(model):
        raise ValueError(f"{type(model).__name__} has no next-sentence head: load a model pre-trained with NSP, "
                         "e.g. bertlab.load('bertlab-tiny')")
    for name, s in (("a", a), ("b", b)):
        if not isinstance(s, str) or not s.strip():
            raise ValueError(f"sentence {name} is {s!r}: give two non-empty sentences to compare")
    enc = tokenizer(a, b, max_length=max_length(model, tokenizer))
    with inference(model):
        out = model.bert(**enc.to_tensors(model.bert.device))
        logits = model.cls.seq_relationship(out.pooler_output)         # (1, 2)
    return float(logits.float().softmax(-1)[0, 0])
