"""Notebook 04 (the masked LM): answers to its checkable exercises, and known wrong answers.

Open on purpose (no check): 04.4 (mask at 40 %: how much context is left, and why a rate far below 15 %
wastes compute) and 04.5 (why the unchanged 10 % matters for fine-tuning), whose point is the argument.
"""

import torch

import bertlab


def ex_04_1():
    """Measured the notebook's way on the corpus: chosen and shown as [MASK], over all candidates (0.12)."""
    _, tokenizer = bertlab.load("bertlab-tiny", device="cpu")
    ids = torch.randint(10, tokenizer.vocab_size, (400, 128), generator=torch.Generator().manual_seed(1))
    inputs, labels = bertlab.mask_tokens(ids, tokenizer, generator=torch.Generator().manual_seed(0))
    candidates = ~torch.isin(ids, torch.tensor([tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, tokenizer.mask_id]))
    to_mask = (labels != -100) & (inputs == tokenizer.mask_id)
    return int(to_mask.sum()) / int(candidates.sum())


def wrong_04_1():
    return [(0.8, "chosen, not of all"), (0.15, "not all of them"), (0.015, "random"), (12, "percentage"),
            (0.135, "random as masked"), ("12 %", "number")]


def ex_04_2():
    """min(20, round(0.15 × 198)) = 20: the cap binds."""
    _, tokenizer = bertlab.load("bertlab-tiny", device="cpu")
    ids = torch.tensor([[tokenizer.cls_id] + [tokenizer.token_to_id("river")] * 198 + [tokenizer.sep_id]])
    _, labels = bertlab.mask_tokens(ids, tokenizer, mode="bert", generator=torch.Generator().manual_seed(5))
    return int((labels != -100).sum())


def wrong_04_2():
    return [(30, "cap"), (21, "over the cap"), (15, ""), (20.0, "int")]


def ex_04_3():
    """Found by trying a few: layer 5 says 'water', layer 6 'tea'."""
    return "I drank a cup of [MASK] this morning."


def wrong_04_3():
    return [("The children [MASK] playing in the garden.", "agree"), ("I drank a cup of tea.", "[MASK]"),
            ("[MASK] drank a cup of [MASK].", "exactly one"),
            ("[MASK] folded the letter carefully and put a colourful stamp on the envelope.", "notebook"),
            (["a", "[MASK]"], "str"), ("The cat sat on the [mask].", "in capitals")]
