"""BertConfig: the handful of numbers that define a BERT, with HuggingFace's field names.

The names match HuggingFace's `BertConfig` so a `config.json` written for any BERT checkpoint maps onto this
class one to one, and one written by `bertlab.save` loads in `transformers`.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

# name: (layers L, hidden H). Heads are H / 64 and the feed-forward is 4H, as in the paper.
# Parameter counts are for the 30,522-token uncased vocabulary, with the pooler.
PRESETS: dict[str, tuple[int, int]] = {
    "tiny": (2, 128),     # 4.4M
    "mini": (4, 256),     # 11.2M
    "small": (4, 512),    # 28.8M
    "medium": (8, 512),   # 41.4M
    "base": (12, 768),    # 109.5M  (BERT-base)
    "large": (24, 1024),  # 335.1M  (BERT-large)
}

HIDDEN_ACTS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu")


@dataclass
class BertConfig:
    vocab_size: int = 30522             # WordPiece vocabulary, specials included
    hidden_size: int = 768              # H: width of the residual stream
    num_hidden_layers: int = 12         # L: encoder layers
    num_attention_heads: int = 12       # A: heads per layer, each of width H / A
    intermediate_size: int = 3072       # feed-forward width, 4H in the paper
    max_position_embeddings: int = 512  # longest input: positions are learned, one vector each
    type_vocab_size: int = 2            # segments: A = 0, B = 1
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"            # exact x·Φ(x); "gelu_new"/"gelu_pytorch_tanh" = tanh approximation
    initializer_range: float = 0.02     # std of the normal init, as Google's BERT
    pad_token_id: int = 0

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not divisible by num_attention_heads "
                f"{self.num_attention_heads}: each head gets hidden_size / heads dimensions, "
                f"so pick a divisor of {self.hidden_size}, e.g. {_heads_for(self.hidden_size)} "
                "(the nearest to BERT's 64 dimensions per head)"
            )
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            p = getattr(self, name)
            if not 0.0 <= p < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {p}")
        if self.hidden_act not in HIDDEN_ACTS:
            raise ValueError(f"hidden_act {self.hidden_act!r} is not one of {HIDDEN_ACTS}")
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(f"pad_token_id {self.pad_token_id} is outside the vocabulary of {self.vocab_size}")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def preset(cls, name: str, **overrides) -> "BertConfig":
        """A size from the BERT family (`tiny` L2/H128 … `large` L24/H1024); any field can be overridden."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}")
        layers, hidden = PRESETS[name]
        fields = dict(num_hidden_layers=layers, hidden_size=hidden,
                      num_attention_heads=hidden // 64, intermediate_size=4 * hidden)
        fields.update(overrides)
        return cls(**fields)

    # ---- config.json -------------------------------------------------------------------------

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "BertConfig":
        """Reads a HuggingFace or bertlab config.json dict; fields this BERT has no use for are ignored."""
        if d.get("model_type", "bert") not in ("bert",):
            raise ValueError(f"config model_type is {d['model_type']!r}: bertlab loads BERT checkpoints only")
        if d.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute (learned) position embeddings are supported, "
                             f"got {d['position_embedding_type']!r}")
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known and v is not None})

    def save(self, path: str | Path) -> None:
        d = {"architectures": ["BertForPreTraining"], "model_type": "bert", **self.to_dict()}
        Path(path).write_text(json.dumps(d, indent=2) + "\n")

    @classmethod
    def from_file(cls, path: str | Path) -> "BertConfig":
        try:
            d = json.loads(Path(path).read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not valid JSON ({e})") from None
        return cls.from_dict(d)


def _heads_for(hidden_size: int) -> int:
    """The divisor of hidden_size closest to hidden_size / 64: the head count BERT's sizes would use."""
    return min((d for d in range(1, hidden_size + 1) if hidden_size % d == 0), key=lambda d: (abs(d - hidden_size / 64), -d))
