"""Bad checkpoints, configs and saves, as a table: each row is one way a folder can be wrong and the error it
must give. Every load error names the file and says what to do, and comes before the model is built, so a
config.json asking for a million layers is refused at once instead of allocating gigabytes first. A save
replaces the whole folder at once: an interrupted one leaves the previous save as it was."""

from __future__ import annotations

import json
import os
import random
import struct
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

import bertlab
from bertlab import BertConfig, BertForPreTraining, lab
from testkit import ODD, randomize_

WORDS = "bert.embeddings.word_embeddings.weight"
INDEX = "model.safetensors.index.json"
SHARDS = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")


@pytest.fixture
def good(tmp_path, odd_config, odd_tokenizer) -> Path:
    """A valid bertlab save of the odd config (vocab 99, hidden 32, 2 layers, FFN 37): each row spoils a copy."""
    return bertlab.save(randomize_(BertForPreTraining(odd_config), seed=3), odd_tokenizer, tmp_path / "ckpt")


# ---- ways to spoil a checkpoint folder ---------------------------------------------------------------

def config_with(**fields):
    """config.json with these fields changed; None removes one."""
    def spoil(d: Path):
        config = json.loads((d / "config.json").read_text())
        config.update(fields)
        (d / "config.json").write_text(json.dumps({k: v for k, v in config.items() if v is not None}))
    return spoil


def write(name: str, data: bytes | str):
    def spoil(d: Path):
        (d / name).write_bytes(data.encode() if isinstance(data, str) else data)
    return spoil


def cut(name: str, keep: int):
    """Keep the first `keep` bytes of a file (a negative count drops that many from its end)."""
    def spoil(d: Path):
        data = (d / name).read_bytes()
        (d / name).write_bytes(data[:keep])
    return spoil


def folder_instead(name: str):
    def spoil(d: Path):
        (d / name).unlink()
        (d / name).mkdir()
    return spoil


def link(name: str, target: str):
    def spoil(d: Path):
        (d / name).unlink()
        (d / name).symlink_to(target)
    return spoil


def huge(name: str, size: int):
    """A file of `size` zero bytes that takes no disk space (sparse)."""
    def spoil(d: Path):
        with open(d / name, "wb") as f:
            f.truncate(size)
    return spoil


def weights(change):
    """model.safetensors rewritten with `change(state_dict)`."""
    def spoil(d: Path):
        save_file(change(load_file(d / "model.safetensors")), str(d / "model.safetensors"))
    return spoil


def as_bin(change=lambda sd: sd, raw: bytes | None = None):
    """model.safetensors replaced by a pytorch_model.bin holding `change(state_dict)` (or the bytes `raw`)."""
    def spoil(d: Path):
        sd = load_file(d / "model.safetensors")
        (d / "model.safetensors").unlink()
        if raw is not None:
            (d / "pytorch_model.bin").write_bytes(raw)
        else:
            torch.save(change(sd), d / "pytorch_model.bin")
    return spoil


def steps(*spoils):
    def spoil(d: Path):
        for one in spoils:
            one(d)
    return spoil


def sharded(edit=lambda index, d: index, text: str | None = None):
    """model.safetensors split into two shards and an index, then the index edited (or replaced by `text`)."""
    def spoil(d: Path):
        sd = load_file(d / "model.safetensors")
        (d / "model.safetensors").unlink()
        keys = sorted(sd)
        weight_map = {}
        for name, part in zip(SHARDS, (keys[: len(keys) // 2], keys[len(keys) // 2:])):
            save_file({k: sd[k] for k in part}, str(d / name))
            weight_map.update(dict.fromkeys(part, name))
        index = edit({"metadata": {}, "weight_map": weight_map}, d)
        (d / INDEX).write_text(text if text is not None else json.dumps(index))
    return spoil


def shard_renamed(new_name: str):
    """The index sends the first shard's keys to `new_name`; the shard itself is moved there, so only the
    check on the name can refuse it."""
    def edit(index: dict, d: Path) -> dict:
        target = (d / new_name) if not Path(new_name).is_absolute() else Path(new_name)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(d / SHARDS[0], target)
        index["weight_map"] = {k: (new_name if v == SHARDS[0] else v) for k, v in index["weight_map"].items()}
        return index
    return edit


def shard_deleted(index: dict, d: Path) -> dict:
    (d / SHARDS[1]).unlink()
    return index


def key_not_in_its_shard(index: dict, d: Path) -> dict:
    index["weight_map"]["bert.encoder.layer.0.adapter.weight"] = SHARDS[0]
    return index


def latin1_vocab(d: Path):
    """Only a vocab.txt, with one token written in Latin-1 instead of UTF-8."""
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (d / name).unlink()
    tokens = (d / "vocab.txt").read_text(encoding="utf-8").splitlines()
    tokens[-1] = "café"
    (d / "vocab.txt").write_bytes(("\n".join(tokens) + "\n").encode("latin-1"))


def absolute_outside(d: Path) -> str:
    return str(d.parent / "elsewhere" / "shard.safetensors")


def garbage(n: int = 1000) -> bytes:
    return bytes(random.Random(0).randrange(256) for _ in range(n))


NEEDS_DEV_ZERO = pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero on this system")

# ---- the table: spoil → error type, a fragment of its message --------------------------------------------

BAD_CHECKPOINTS = [
    # config.json: missing, unreadable or not JSON
    ("config {}", write("config.json", "{}"), ValueError,
     "does not give vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size"),
    ("config without two sizes", config_with(hidden_size=None, intermediate_size=None), ValueError,
     "does not give hidden_size, intermediate_size"),
    ("config invalid JSON", write("config.json", '{"vocab_size": 99,'), ValueError, "config.json is not valid JSON"),
    ("config a JSON list", write("config.json", "[99, 32]"), ValueError, "holds a JSON list, not an object"),
    ("config a folder", folder_instead("config.json"), ValueError,
     "config.json is a folder, where a small JSON file should be"),
    pytest.param("config is /dev/zero", link("config.json", "/dev/zero"), ValueError, "is not a regular file",
                 marks=NEEDS_DEV_ZERO, id="config is /dev/zero"),
    ("config 100 MB", huge("config.json", 100 << 20), ValueError, "config.json is larger than"),
    # config.json: a field of the wrong type or out of range
    ("dropout '0.1'", config_with(hidden_dropout_prob="0.1"), ValueError,
     "hidden_dropout_prob must be a number in [0, 1), got '0.1', a string"),
    ("attention dropout 1", config_with(attention_probs_dropout_prob=1), ValueError,
     "attention_probs_dropout_prob must be a number in [0, 1), got 1"),
    ("eps '1e-12'", config_with(layer_norm_eps="1e-12"), ValueError,
     "layer_norm_eps must be a small positive number (BERT uses 1e-12), got '1e-12', a string"),
    ("eps negative", config_with(layer_norm_eps=-1e-12), ValueError, "layer_norm_eps must be a small positive number"),
    ("eps 0", config_with(layer_norm_eps=0), ValueError, "layer_norm_eps must be a small positive number"),
    ("hidden_size 0", config_with(hidden_size=0), ValueError, "hidden_size must be a positive integer, got 0"),
    ("layers -2", config_with(num_hidden_layers=-2), ValueError, "num_hidden_layers must be a positive integer"),
    ("heads true", config_with(num_attention_heads=True), ValueError,
     "num_attention_heads must be a positive integer, got True, a bool"),
    ("vocab 99.0", config_with(vocab_size=99.0), ValueError, "vocab_size must be a positive integer, got 99.0"),
    ("init range '0.02'", config_with(initializer_range="0.02"), ValueError, "initializer_range must be"),
    ("pad id '0'", config_with(pad_token_id="0"), ValueError, "pad_token_id must be an integer, got '0', a string"),
    ("hidden_act 3", config_with(hidden_act=3), ValueError, "hidden_act 3 is not one of"),
    # config.json: sizes that do not fit the weights, refused from the safetensors header
    ("10**6 layers", config_with(num_hidden_layers=10**6), ValueError,
     "num_hidden_layers is 1000000 but the weights hold 2 layers"),
    ("1 layer", config_with(num_hidden_layers=1), ValueError, "num_hidden_layers is 1 but the weights hold 2 layers"),
    ("vocab 10**12", config_with(vocab_size=10**12), ValueError,
     f"shape mismatch for {WORDS}: checkpoint has (99, 32), the model expects (1000000000000, 32) from the "
     "vocab_size, hidden_size in"),
    ("hidden 64", config_with(hidden_size=64), ValueError, "checkpoint has (99, 32), the model expects (99, 64)"),
    ("ffn 10**9", config_with(intermediate_size=10**9), ValueError,
     "intermediate.dense.weight: checkpoint has (37, 32), the model expects (1000000000, 32)"),
    ("positions 10**9", config_with(max_position_embeddings=10**9), ValueError,
     "position_embeddings.weight: checkpoint has (64, 32), the model expects (1000000000, 32)"),
    ("segments 10**6", config_with(type_vocab_size=10**6), ValueError,
     "token_type_embeddings.weight: checkpoint has (2, 32), the model expects (1000000, 32)"),
    ("10**6 layers, pytorch_model.bin", steps(as_bin(), config_with(num_hidden_layers=10**6)), ValueError,
     "num_hidden_layers is 1000000 but the weights hold 2 layers"),
    ("no token embeddings", weights(lambda sd: {k: v for k, v in sd.items() if k != WORDS}), ValueError,
     "have no embeddings.word_embeddings.weight, which every BERT has"),
    # model.safetensors
    ("safetensors empty", write("model.safetensors", b""), ValueError,
     "model.safetensors is not a readable safetensors file (header too small)"),
    ("safetensors truncated", cut("model.safetensors", -100), ValueError, "file not fully covered"),
    ("safetensors cut in its header", cut("model.safetensors", 30), ValueError, "not a readable safetensors file"),
    ("safetensors garbage", write("model.safetensors", garbage()), ValueError, "not a readable safetensors file"),
    ("safetensors header of 10**15 bytes", write("model.safetensors", struct.pack("<Q", 10**15) + b"{}"),
     ValueError, "header too large"),
    ("safetensors a folder", folder_instead("model.safetensors"), ValueError, "model.safetensors is a folder"),
    pytest.param("safetensors is /dev/zero", link("model.safetensors", "/dev/zero"), ValueError,
                 "model.safetensors is not a regular file", marks=NEEDS_DEV_ZERO, id="safetensors is /dev/zero"),
    ("int weights", weights(lambda sd: {**sd, WORDS: sd[WORDS].long()}), ValueError,
     f"{WORDS} holds int64 values"),
    # sharded safetensors: the index
    ("index invalid JSON", sharded(text='{"weight_map": '), ValueError, f"{INDEX} is not valid JSON"),
    ("index without weight_map", sharded(lambda index, d: {"metadata": {}}), ValueError, "has no weight_map"),
    ("index naming a deleted shard", sharded(shard_deleted), FileNotFoundError,
     f"names the shard {SHARDS[1]}, which is not in"),
    ("index with a key its shard lacks", sharded(key_not_in_its_shard), ValueError,
     "says bert.encoder.layer.0.adapter.weight is in"),
    ("shard in ../", sharded(shard_renamed("../elsewhere/shard.safetensors")), ValueError,
     "outside the checkpoint folder"),
    ("shard in a subfolder", sharded(shard_renamed("sub/shard.safetensors")), ValueError,
     "outside the checkpoint folder"),
    ("shard at an absolute path", sharded(lambda index, d: shard_renamed(absolute_outside(d))(index, d)), ValueError,
     "outside the checkpoint folder"),
    # pytorch_model.bin
    ("bin with a number beside the tensors", as_bin(lambda sd: {**sd, "step": 3}), ValueError,
     "holds int under 'step', not a tensor"),
    ("bin of a training checkpoint", as_bin(lambda sd: {"model": sd, "step": 3}), ValueError,
     "holds dict under 'model', not a tensor"),
    ("bin a list", as_bin(lambda sd: list(sd.values())), ValueError, "holds a list, not a dict of tensors"),
    ("bin int weights", as_bin(lambda sd: {**sd, WORDS: sd[WORDS].long()}), ValueError, f"{WORDS} holds int64 values"),
    ("bin garbage", as_bin(raw=garbage()), ValueError,
     "pytorch_model.bin could not be read as plain tensors (UnpicklingError: Unsupported operand"),
    ("bin empty", as_bin(raw=b""), ValueError, "it is damaged, cut short or not a PyTorch weights file"),
    ("bin truncated", steps(as_bin(), cut("pytorch_model.bin", -100)), ValueError,
     "it is damaged, cut short or not a PyTorch weights file"),
    # the tokenizer
    ("vocab.txt in Latin-1", latin1_vocab, ValueError, "vocab.txt is not UTF-8"),
    ("tokenizer_config invalid JSON", write("tokenizer_config.json", '{"do_lower_case": true,'), ValueError,
     "tokenizer_config.json is not valid JSON"),
    ("tokenizer_config a JSON list", write("tokenizer_config.json", '["do_lower_case"]'), ValueError,
     "tokenizer_config.json holds a JSON list, not an object"),
]


def rows(table):
    return [row if hasattr(row, "marks") else pytest.param(*row, id=row[0]) for row in table]


def test_the_unspoiled_checkpoint_and_its_sharded_and_bin_forms_load(good, odd_tokenizer, tmp_path):
    """The spoilers' controls: without the spoiling step, each form loads."""
    reference, _ = bertlab.load(good)
    for spoil in (sharded(), as_bin()):
        d = tmp_path / "copy"
        bertlab.save(reference, odd_tokenizer, d)
        spoil(d)
        model, _ = bertlab.load(d)
        assert all(torch.equal(v, reference.state_dict()[k]) for k, v in model.state_dict().items())


def test_a_hub_cache_snapshot_of_symlinks_into_blobs_loads(good, tmp_path):
    """huggingface_hub's cache keeps each file once under blobs/ and links to it from snapshots/REV/: links
    that point outside the folder are how a real checkpoint looks, and are followed."""
    sharded()(good)
    blobs, snapshot = tmp_path / "hub" / "blobs", tmp_path / "hub" / "snapshots" / "abc123"
    blobs.mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for i, f in enumerate(sorted(good.iterdir())):
        os.replace(f, blobs / f"blob{i}")
        (snapshot / f.name).symlink_to(Path("../../blobs") / f"blob{i}")
    model, _ = bertlab.load(snapshot)
    assert type(model) is BertForPreTraining


@pytest.mark.parametrize("name,spoil,error,fragment", rows(BAD_CHECKPOINTS))
def test_a_bad_checkpoint_is_refused_before_the_model_is_built(name, spoil, error, fragment, good, monkeypatch):
    spoil(good)

    def build(*args, **kwargs):
        raise AssertionError("the model was built before the checkpoint was checked")

    monkeypatch.setattr("bertlab.checkpoint.build", build)
    with pytest.raises(error) as info:
        bertlab.load(good)
    message = str(info.value)
    assert fragment in message
    assert str(good) in message, "the error names the file"


@pytest.mark.parametrize("layers", [10**6, 10**9])
def test_a_config_with_a_million_layers_is_refused_at_once(layers, good):
    config_with(num_hidden_layers=layers)(good)
    with pytest.raises(ValueError, match=f"num_hidden_layers is {layers} but the weights hold 2 layers"):
        bertlab.load(good)


# ---- BertConfig itself --------------------------------------------------------------------------------

BAD_CONFIGS = [
    ({}, "config gives none of the sizes"),
    ({"hidden_dropout_prob": "0.1"}, "hidden_dropout_prob must be a number in [0, 1), got '0.1', a string"),
    ({"attention_probs_dropout_prob": False}, "attention_probs_dropout_prob must be a number in [0, 1), got False"),
    ({"hidden_dropout_prob": float("nan")}, "hidden_dropout_prob must be a number in [0, 1), got nan"),
    ({"layer_norm_eps": "1e-12"}, "layer_norm_eps must be a small positive number (BERT uses 1e-12), got '1e-12'"),
    ({"layer_norm_eps": -1e-12}, "layer_norm_eps must be a small positive number"),
    ({"layer_norm_eps": float("inf")}, "layer_norm_eps must be a small positive number"),
    ({"initializer_range": -0.02}, "initializer_range must be a non-negative number"),
    ({"pad_token_id": True}, "pad_token_id must be an integer, got True, a bool"),
    ({"pad_token_id": 0.0}, "pad_token_id must be an integer, got 0.0"),
    ({"hidden_act": ["gelu"]}, "hidden_act ['gelu'] is not one of"),
    ({"type_vocab_size": 0}, "type_vocab_size must be a positive integer, got 0"),
]


@pytest.mark.parametrize("fields,fragment", BAD_CONFIGS, ids=[str(f) for f, _ in BAD_CONFIGS])
def test_a_bad_config_field_is_refused_with_its_name(fields, fragment):
    with pytest.raises(ValueError) as info:
        BertConfig.from_dict({**ODD, **fields} if fields else fields)
    assert fragment in str(info.value)


def test_a_partial_dict_still_takes_bert_base_defaults_for_the_rest():
    cfg = BertConfig.from_dict({"hidden_size": 64, "num_attention_heads": 2})
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size) == (64, 12, 30522)


# ---- saving -------------------------------------------------------------------------------------------

def files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_a_tokenizer_larger_than_the_model_is_refused_at_save(odd_tokenizer, tmp_path):
    small = BertForPreTraining(BertConfig(**{**ODD, "vocab_size": 50}))
    with pytest.raises(ValueError, match=rf"the tokenizer has {odd_tokenizer.vocab_size} tokens but the model only "
                                         "50 embeddings"):
        bertlab.save(small, odd_tokenizer, tmp_path / "ckpt")
    assert not (tmp_path / "ckpt").exists()


def test_a_save_into_a_file_is_refused(good, odd_tokenizer):
    model, _ = bertlab.load(good)
    with pytest.raises(NotADirectoryError, match="exists and is not a folder"):
        bertlab.save(model, odd_tokenizer, good / "config.json")


def test_a_bertlab_save_over_a_huggingface_save_leaves_no_stale_file(good, odd_tokenizer, transformers):
    model, _ = bertlab.load(good)
    bertlab.save(model, odd_tokenizer, good, format="huggingface")
    assert (good / "special_tokens_map.json").exists()
    (good / "pytorch_model.bin").write_bytes(b"an old save's weights")
    bertlab.save(model, odd_tokenizer, good)
    assert sorted(files(good)) == ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                                   "vocab.txt"]
    assert transformers.AutoTokenizer.from_pretrained(good).cls_token == "[CLS]"


@pytest.mark.parametrize("failing", ["bertlab.checkpoint.save_file", "bertlab.tokenizer.Tokenizer.save",
                                     "bertlab.tokenizer.Tokenizer.get_vocab"])
def test_an_interrupted_save_leaves_the_previous_one_as_it_was(failing, good, odd_tokenizer, monkeypatch):
    before = files(good)
    bigger = randomize_(BertForPreTraining(BertConfig(**{**ODD, "num_hidden_layers": 3})), seed=5)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(failing, killed)
    with pytest.raises(KeyboardInterrupt):
        bertlab.save(bigger, odd_tokenizer, good)
    assert files(good) == before, "new and old files mixed"
    assert sorted(p.name for p in good.parent.iterdir()) == ["ckpt"], "a temporary folder was left behind"


def test_without_an_atomic_exchange_the_folder_is_still_replaced_whole(good, odd_tokenizer, monkeypatch):
    """Where renameat2 is missing (macOS, Windows, some filesystems) the swap is two renames."""
    model, _ = bertlab.load(good)
    monkeypatch.setattr("bertlab.checkpoint._exchange", lambda a, b: False)
    bertlab.save(model, odd_tokenizer, good, format="huggingface")
    bertlab.save(model, odd_tokenizer, good)
    assert not (good / "special_tokens_map.json").exists()
    assert sorted(p.name for p in good.parent.iterdir()) == ["ckpt"]
    bertlab.load(good)


def test_a_save_into_a_run_folder_keeps_the_runs_own_files(good, odd_tokenizer):
    model, _ = bertlab.load(good)
    (good / "metrics.jsonl").write_text('{"step": 1}\n')
    (good / "checkpoints" / "step-0000001").mkdir(parents=True)
    (good / "checkpoints" / "step-0000001" / "trainer_state.pt").write_bytes(b"state")
    (good / "special_tokens_map.json").write_text("{}")  # from an earlier huggingface save
    bertlab.save(model, odd_tokenizer, good)
    assert (good / "metrics.jsonl").read_text() == '{"step": 1}\n'
    assert (good / "checkpoints" / "step-0000001" / "trainer_state.pt").read_bytes() == b"state"
    assert not (good / "special_tokens_map.json").exists()
    assert sorted(p.name for p in good.iterdir() if p.name.startswith(".")) == []
    bertlab.load(good)


def test_a_new_save_folder_has_the_permissions_of_a_plain_mkdir(good, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert good.stat().st_mode == plain.stat().st_mode


def test_a_symlink_planted_at_a_temporary_name_is_never_written_through(good, odd_tokenizer, tmp_path):
    """Old temporary names were `.NAME.tmp-PID` (save) and `.NAME.tmpPID` (lab): anyone able to write in the folder
    could plant a link there and have bertlab overwrite the file it points to."""
    model, _ = bertlab.load(good)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    pid = os.getpid()
    for name in ("model.safetensors", "config.json"):
        (good / f".{name}.tmp-{pid}").symlink_to(victim)
    bertlab.save(model, odd_tokenizer, good)
    assert victim.read_text() == "precious"

    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for src in lab.packaged_notebooks():
        (notebooks / f".{src.name}.tmp{pid}").symlink_to(victim)
    lab.copy_notebooks(notebooks, quiet=True)
    assert victim.read_text() == "precious"
