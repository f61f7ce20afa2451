"""BertConfig: the handful of numbers that define a BERT, with HuggingFace's field names.

The names match HuggingFace's `BertConfig` so a `config.json` written for any BERT checkpoint maps onto this
class one to one, and one written by `bertlab.save` loads in `transformers`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch.nn.functional as F

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

# hidden_act name → the function the feed-forward (and the MLM head's transform) applies. BERT's GELU is the
# exact x·Φ(x); the tanh approximation is what GPT-2 uses, under two names in HuggingFace configs.
HIDDEN_ACTS = {
    "gelu": F.gelu,
    "gelu_new": partial(F.gelu, approximate="tanh"),
    "gelu_pytorch_tanh": partial(F.gelu, approximate="tanh"),
    "relu": F.relu,
}

# The sizes that shape the weights. Every config.json of a real BERT states them; one that leaves any out is
# broken, and filling it from BERT-base would build a model of the wrong size before anything noticed.
SIZES = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")

# The yes/no fields of HuggingFace's BertConfig (and PretrainedConfig) that a BERT config.json may carry: bertlab
# keeps only is_decoder, but a string in any of them is a broken file, refused with its name.
BOOLEANS = ("is_decoder", "add_cross_attention", "tie_word_embeddings", "use_cache", "is_encoder_decoder",
            "output_attentions", "output_hidden_states", "return_dict", "torchscript", "gradient_checkpointing")

# A config.json is a few hundred bytes (a few MB with a huge label list); anything bigger is not one.
MAX_CONFIG_BYTES = 16 << 20


@dataclass
class BertConfig:
    """A BERT's sizes and switches, with HuggingFace's field names so a `config.json` maps 1:1.

    `BertConfig.preset("mini")` for the paper's sizes (tiny … large); an impossible combination (hidden
    size not divisible by the heads) is a ValueError that says so.
    """
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
    is_decoder: bool = False            # causal attention: each position sees only itself and its left

    def __post_init__(self):
        # every field's type and range, so a bad config.json fails here with the field's name, not as a
        # TypeError deep in a layer or as NaN outputs (a negative layer_norm_eps)
        for name in SIZES + ("max_position_embeddings", "type_vocab_size"):
            value = getattr(self, name)
            if not _is_int(value) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {_show(value)}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not divisible by num_attention_heads "
                f"{self.num_attention_heads}: each head gets hidden_size / heads dimensions, "
                f"so pick a divisor of {self.hidden_size}, e.g. {_heads_for(self.hidden_size)} "
                "(the nearest to BERT's 64 dimensions per head)"
            )
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            p = getattr(self, name)
            if not _is_number(p) or not 0.0 <= p < 1.0:
                raise ValueError(f"{name} must be a number in [0, 1), got {_show(p)}")
        if not _is_number(self.layer_norm_eps) or not 0.0 < self.layer_norm_eps < 1.0:
            raise ValueError("layer_norm_eps must be a small positive number (BERT uses 1e-12), got "
                             f"{_show(self.layer_norm_eps)}")
        if not _is_number(self.initializer_range) or self.initializer_range < 0.0:
            raise ValueError("initializer_range must be a non-negative number (the std of the initial weights; "
                             f"BERT uses 0.02), got {_show(self.initializer_range)}")
        if not isinstance(self.hidden_act, str) or self.hidden_act not in HIDDEN_ACTS:
            raise ValueError(f"hidden_act {self.hidden_act!r} is not one of {', '.join(HIDDEN_ACTS)}")
        if not isinstance(self.is_decoder, bool):
            raise ValueError(f"is_decoder must be true or false (a JSON boolean, unquoted), got {self.is_decoder!r}")
        if not _is_int(self.pad_token_id):
            raise ValueError(f"pad_token_id must be an integer, got {_show(self.pad_token_id)}")
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(f"pad_token_id {self.pad_token_id} is outside the vocabulary of {self.vocab_size}")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def preset(cls, name: str, **overrides) -> "BertConfig":
        """A size from the BERT family (`tiny` L2/H128 … `large` L24/H1024); any field can be overridden,
        e.g. `BertConfig.preset("tiny", is_decoder=True)` for a left-to-right model."""
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
        """Reads a HuggingFace or bertlab config.json dict; fields this BERT has no use for are ignored.

        Sizes left out take BERT-base's values, but a dict with none of them is refused: it is not a BERT config.
        `from_file` is stricter: a config.json must state every size.
        """
        if not isinstance(d, dict):
            raise ValueError(f"a config is a dict (a JSON object), got {type(d).__name__}")
        if d.get("model_type", "bert") not in ("bert",):
            raise ValueError(f"config model_type is {d['model_type']!r}: bertlab loads BERT checkpoints only")
        if d.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute (learned) position embeddings are supported, "
                             f"got {d['position_embedding_type']!r}")
        if all(d.get(name) is None for name in SIZES):
            raise ValueError(f"config gives none of the sizes that shape a BERT ({', '.join(SIZES)}); "
                             "for a standard size use BertConfig.preset(name)")
        for name in BOOLEANS:     # a quoted "false" is a non-empty string, read as true by everything downstream
            if name in d and d[name] is not None and not isinstance(d[name], bool):
                quoted = ", a quoted string: write true or false without quotes" if isinstance(d[name], str) else ""
                raise ValueError(f"{name} must be true or false (a JSON boolean), got {d[name]!r}{quoted}")
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known and v is not None})

    def save(self, path: str | Path, architectures=("BertForPreTraining",), **extra) -> None:
        """Write config.json as transformers reads it: `architectures` names the class to build (a bare
        encoder is "BertModel", a classifier its head), `extra` adds keys bertlab keeps outside the config,
        such as a classifier's `num_labels`, `id2label` and `label2id`."""
        d = {"architectures": list(architectures), "model_type": "bert", **self.to_dict(), **extra}
        Path(path).write_text(json.dumps(d, indent=2) + "\n")

    @classmethod
    def from_file(cls, path: str | Path) -> "BertConfig":
        """Reads a config.json. Every size must be in it, and every error names the file."""
        d = read_config_json(path)
        missing = [name for name in SIZES if d.get(name) is None]
        if missing:
            raise ValueError(f"{path} does not give {', '.join(missing)}: a BERT's config.json states every size; "
                             "use the config.json that came with the weights")
        try:
            return cls.from_dict(d)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None


def read_config_json(path: str | Path) -> dict:
    """The JSON object in a checkpoint's config.json (or its other JSON files), or a ValueError naming the file:
    a folder or a device (/dev/zero) where the file should be, a file too large to be one, invalid JSON, or JSON
    that is not an object."""
    path = Path(path)
    if not path.is_file():
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist")
        what = "a folder" if path.is_dir() else "not a regular file (a device or a pipe?)"
        raise ValueError(f"{path} is {what}, where a small JSON file should be; use the one that came with the "
                         "weights")
    too_large = ValueError(f"{path} is larger than {MAX_CONFIG_BYTES >> 20} MiB, far too large for a checkpoint's "
                           "JSON file (a config.json is a few hundred bytes); use the one that came with the weights")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise too_large
    with open(path, "rb") as f:
        data = f.read(MAX_CONFIG_BYTES + 1)  # never more, whatever the file claimed to be
    if len(data) > MAX_CONFIG_BYTES:
        raise too_large
    try:
        d = json.loads(data)
    except (ValueError, RecursionError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(f"{path} is not valid JSON ({e}); fix it, or use the one that came with the "
                         "weights") from None
    if not isinstance(d, dict):
        raise ValueError(f"{path} holds a JSON {type(d).__name__}, not an object of names and values such as "
                         '{"hidden_size": 768, ...}')
    return d


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _show(value) -> str:
    """A bad value as a message shows it: a quoted number is the usual slip in a hand-written config.json."""
    if isinstance(value, str):
        return f"{value!r}, a string (write numbers without quotes)"
    if isinstance(value, bool):
        return f"{value!r}, a bool"
    return repr(value)


def _heads_for(hidden_size: int) -> int:
    """The divisor of hidden_size closest to hidden_size / 64: the head count BERT's sizes would use."""
    return min((d for d in range(1, hidden_size + 1) if hidden_size % d == 0), key=lambda d: (abs(d - hidden_size / 64), -d))
