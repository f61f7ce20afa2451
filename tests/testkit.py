"""Plain helpers shared by the tests (fixtures live in conftest.py).

A module with a name of its own: `conftest` is ambiguous when pytest collects tests/ and notebooks/
together, each with its own conftest.py.
"""

from __future__ import annotations

import torch

ODD = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
           max_position_embeddings=64, type_vocab_size=2)

# bertlab class name → transformers class name (the heads share their names)
HF_NAMES = {"Bert": "BertModel"}


def randomize_(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Overwrite every parameter with seeded noise, and switch to eval mode.

    Google's init (zero biases, LayerNorm at identity, std 0.02) would let a bug in a bias or a LayerNorm
    gain go unseen, and near-uniform attention would hide a bug in the mask. Weights of std 0.2 give
    peaked attention patterns on the odd config. Tied parameters are visited once.
    """
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if name.endswith("LayerNorm.weight"):
                value = 1.0 + 0.1 * noise
            elif p.dim() == 1:
                value = 0.1 * noise
            else:
                value = 0.2 * noise
            p.copy_(value.to(p.device, p.dtype))
    return model.eval()


def make_batch(B: int = 3, T: int = 11, vocab_size: int = 99, lengths=(11, 7, 4), seed: int = 1) -> dict:
    """Random ids with right padding (pad id 0, mask 0, segment 0) and random segments on real tokens."""
    g = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(1, vocab_size, (B, T), generator=g)
    token_type_ids = torch.randint(0, 2, (B, T), generator=g)
    attention_mask = torch.zeros(B, T, dtype=torch.long)
    for b, n in enumerate(lengths):
        attention_mask[b, :n] = 1
    input_ids = input_ids * attention_mask
    token_type_ids = token_type_ids * attention_mask
    return dict(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask)
