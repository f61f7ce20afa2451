"""Multi-head self-attention, in the order it is taught.

    project q, k, v → split heads → scaled scores → additive mask → softmax → dropout → weighted sum
    → merge heads → output projection → dropout → add & LayerNorm

When nobody asks for the attention weights, the middle steps (scores … weighted sum) run as one fused
`scaled_dot_product_attention` call instead: same maths, less memory traffic. A test proves both agree.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..config import BertConfig
from ..hooks import HookPoint


def additive_mask(attention_mask: torch.Tensor | None, x: torch.Tensor, causal: bool = False) -> torch.Tensor | None:
    """Which keys each query may see, as a bias on the scores: 0 where it may, the dtype's minimum where not.

    Padding (attention_mask 0) hides a key from every query: (B, 1, 1, T). A decoder (`is_decoder`) also
    hides the keys right of each query, so position i sees 0 … i: (B or 1, 1, T, T). Both are combined as
    booleans, as transformers does, so a padded future key gets the minimum once (twice overflows to -inf).
    None when nothing is hidden: fused attention then skips the add. x: the (B, T, H) stream, for T and dtype.
    """
    keep = None
    if attention_mask is not None and not bool(attention_mask.all()):
        keep = attention_mask[:, None, None, :].bool()                              # (B, 1, 1, T)
    if causal:
        T = x.shape[1]
        left = torch.ones(1, 1, T, T, dtype=torch.bool, device=x.device).tril()     # (1, 1, T, T): key j ≤ query i
        keep = left if keep is None else keep & left                                 # (B, 1, T, T)
    if keep is None:
        return None
    return torch.zeros(keep.shape, dtype=x.dtype, device=x.device).masked_fill(~keep, torch.finfo(x.dtype).min)


class BertSelfAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.head_dim
        H = config.hidden_size
        # Q, K and V are three projections of the same input: that is what makes it *self*-attention.
        self.query = nn.Linear(H, H)
        self.key = nn.Linear(H, H)
        self.value = nn.Linear(H, H)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)
        self.hook_q = HookPoint()        # (B, heads, T, Dh)
        self.hook_k = HookPoint()        # (B, heads, T, Dh)
        self.hook_v = HookPoint()        # (B, heads, T, Dh)
        self.hook_scores = HookPoint()   # (B, heads, T, T)  scaled and masked (padding, causal), before softmax
        self.hook_pattern = HookPoint()  # (B, heads, T, T)  softmax: row i = where token i looks
        self.hook_z = HookPoint()        # (B, heads, T, Dh) each head's output: zero a head here to ablate it

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # (B, T, H) → (B, heads, T, Dh)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, output_attentions: bool = False):
        """x: (B, T, H); mask: from `additive_mask`, (B, 1, 1, T) or (B or 1, 1, T, T), or None.

        Returns (context (B, T, H), attention pattern (B, heads, T, T) or None).
        """
        B, T, H = x.shape
        q = self.hook_q(self.split_heads(self.query(x)))
        k = self.hook_k(self.split_heads(self.key(x)))
        v = self.hook_v(self.split_heads(self.value(x)))

        if output_attentions or self.hook_scores.active or self.hook_pattern.active:
            # scaled by 1/sqrt(Dh), multiplied after the product as transformers does: dividing rounds
            # differently, and padded rows amplify that past 1e-4 on a real checkpoint
            scores = (q @ k.transpose(-2, -1)) * self.head_dim ** -0.5  # (B, heads, T, T)
            if mask is not None:
                scores = scores + mask
            scores = self.hook_scores(scores)
            pattern = self.hook_pattern(scores.softmax(dim=-1))
            z = self.dropout(pattern) @ v                                  # (B, heads, T, Dh)
        else:
            pattern = None
            p = self.dropout.p if self.training else 0.0
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        z = self.hook_z(z)
        context = z.transpose(1, 2).reshape(B, T, H)                       # merge heads: (B, T, H)
        return context, pattern


class AddAndNorm(nn.Module):
    """How both sublayers end: project to H, dropout, add the residual, LayerNorm (post-LN, as the paper).

    `hook` names the hook point on what the sublayer adds to the residual stream, (B, T, H):
    `hook_attn_out` after attention, `hook_mlp_out` after the feed-forward.
    """

    def __init__(self, config: BertConfig, in_features: int, hook: str):
        super().__init__()
        self.dense = nn.Linear(in_features, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.hook = hook
        self.add_module(hook, HookPoint())

    def forward(self, x: torch.Tensor, resid: torch.Tensor) -> torch.Tensor:
        added = getattr(self, self.hook)(self.dropout(self.dense(x)))
        return self.LayerNorm(added + resid)


class BertSelfOutput(AddAndNorm):
    """Attention's output projection (H → H), then add & norm."""

    def __init__(self, config: BertConfig):
        super().__init__(config, config.hidden_size, "hook_attn_out")


class BertAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.self = BertSelfAttention(config)   # `self.self` is the checkpoint's name, odd as it reads
        self.output = BertSelfOutput(config)

    def forward(self, x, mask, output_attentions=False):
        context, pattern = self.self(x, mask, output_attentions)
        return self.output(context, x), pattern
