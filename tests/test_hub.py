"""HuggingFace hub ids: `bertlab.load("bert-base-uncased")` and `bertlab.hub`, tested without a network.

Each test lays out a hub cache in its own temporary folder, the way huggingface_hub does (models--org--name/
refs/<revision> holds a commit hash, snapshots/<commit>/<file> links to blobs/<hash>), filled with tiny real
checkpoints saved by transformers in the shapes real repositories have. Every socket is refused and recorded,
so a test that reached for the network fails even where the library swallowed the error.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import bertlab
from bertlab import BertForPreTraining, hub
from testkit import make_batch, randomize_

pytest.importorskip("huggingface_hub", reason="hub ids are loaded through huggingface_hub")
transformers = pytest.importorskip("transformers", reason="transformers is the reference for parity tests")
import huggingface_hub.constants  # noqa: E402
import huggingface_hub.errors  # noqa: E402

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "the", "a", "river", "bank", "was", "muddy",
         "after", "rain", "she", "opened", "door", "and", "walked", "in", "they", "sat", "on", "of", "fished",
         "cup", "hot", "tea", "##s", "##ed", "##ing", "sun", "shone"]
TINY = dict(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
            max_position_embeddings=64)
PAIR = ("the river bank was muddy after the rain.", "she opened the door and walked in.")
TOL = 1e-5


# ---- checkpoints shaped like real repositories ------------------------------------------------------------

def reference_model(seed: int):
    """A transformers BertForPreTraining with seeded weights far from their initialisation."""
    return randomize_(transformers.BertForPreTraining(transformers.BertConfig(**TINY)), seed=seed)


def write_vocab(folder: Path) -> None:
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True, "model_max_length": 64}))


def saved_by_transformers(folder: Path, seed: int) -> Path:
    """As a recent upload: save_pretrained's config.json and model.safetensors, and a vocab.txt."""
    reference_model(seed).save_pretrained(folder)
    write_vocab(folder)
    return folder


def like_bert_base_uncased(folder: Path, seed: int) -> Path:
    """As bert-base-uncased's pytorch_model.bin: converted from TensorFlow long ago, so LayerNorm is gamma/beta,
    the tied decoder weight and both decoder biases are stored, and config.json says BertForMaskedLM although
    the weights hold the NSP head (and pooler) too."""
    folder.mkdir(parents=True)
    model = reference_model(seed)
    sd = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v.clone()
          for k, v in model.state_dict().items()}
    sd["cls.predictions.decoder.weight"] = sd["bert.embeddings.word_embeddings.weight"].clone()
    sd["cls.predictions.decoder.bias"] = sd["cls.predictions.bias"].clone()
    assert any(k.endswith(".gamma") for k in sd) and "cls.seq_relationship.weight" in sd
    torch.save(sd, folder / "pytorch_model.bin")
    config = {"architectures": ["BertForMaskedLM"], "model_type": "bert", **TINY}
    (folder / "config.json").write_text(json.dumps(config))
    write_vocab(folder)
    return folder


def like_google_miniatures(folder: Path, seed: int) -> Path:
    """As google/bert_uncased_L-4_H-256_A-4: pytorch_model.bin only, a config.json with neither architectures
    nor model_type, keys without the bert. prefix, no tokenizer_config.json."""
    folder.mkdir(parents=True)
    sd = {k.removeprefix("bert."): v.clone() for k, v in reference_model(seed).state_dict().items()}
    torch.save(sd, folder / "pytorch_model.bin")
    (folder / "config.json").write_text(json.dumps(TINY))
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return folder


def not_a_bert(folder: Path, seed: int) -> Path:
    saved_by_transformers(folder, seed)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "roberta"}))
    return folder


# name → (maker, seed): the "remote" repositories, each built once per session
REPOS = {
    "org/tiny": (saved_by_transformers, 0),
    "org/tiny@v1": (saved_by_transformers, 1),
    "bert-base-uncased": (like_bert_base_uncased, 2),
    "google/bert_uncased_L-2_H-32_A-4": (like_google_miniatures, 3),
    "FacebookAI/roberta-tiny": (not_a_bert, 4),
}


@pytest.fixture(scope="module")
def remote(tmp_path_factory) -> dict[str, Path]:
    """The folders each repository revision holds, as the hub would serve them."""
    root = tmp_path_factory.mktemp("remote")
    return {name: make(root / name.replace("/", "__").replace("@", "__at__"), seed)
            for name, (make, seed) in REPOS.items()}


def commit_of(name: str) -> str:
    return hashlib.sha1(name.encode()).hexdigest()


def put_in_cache(cache: Path, name: str, folder: Path, files=None) -> Path:
    """Lay `folder`'s files (or those named) into a hub cache as huggingface_hub does; returns the snapshot."""
    repo_id, _, revision = name.partition("@")
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / commit_of(name)
    snap.mkdir(parents=True, exist_ok=True)
    (repo / "blobs").mkdir(exist_ok=True)
    for f in sorted(folder.iterdir()):
        if files is not None and f.name not in files:
            continue
        data = f.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snap / f.name
        if not link.is_symlink():
            link.symlink_to(os.path.relpath(blob, snap))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / (revision or "main")).write_text(commit_of(name))  # no newline, as huggingface_hub writes it
    return snap


@pytest.fixture
def no_network(monkeypatch):
    """Every attempt to resolve a name or open a connection is refused, and remembered."""
    attempts = []

    def refuse(what):
        def refused(*args, **kwargs):
            attempts.append((what, args[1:] if what == "connect" else args))
            raise OSError(f"test_hub: network access attempted ({what})")
        return refused

    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("connect_ex"))
    yield attempts
    assert attempts == [], f"a test tried to reach the network: {attempts}"


@pytest.fixture
def cache(tmp_path, monkeypatch, no_network) -> Path:
    """An empty hub cache in tmp_path, in offline mode, as huggingface_hub reads both (its constants are fixed
    when it is first imported, so they are set too)."""
    home = tmp_path / "hf"
    cache = home / "hub"
    cache.mkdir(parents=True)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return cache


@pytest.fixture
def cached(cache, remote) -> Path:
    """The hub cache holding every repository in REPOS."""
    for name, folder in remote.items():
        put_in_cache(cache, name, folder)
    return cache


def assert_same_outputs(model, tok, reference):
    """bertlab's model on bertlab's tokenizer gives transformers' MLM and NSP logits, on a sentence pair and on
    a padded batch of random ids."""
    assert type(model) is BertForPreTraining
    enc = tok(*PAIR)
    assert "[UNK]" not in enc.tokens, enc.tokens
    batches = [dict(enc), make_batch(vocab_size=len(VOCAB))]
    with torch.no_grad():
        for batch in batches:
            ours, theirs = model(**batch), reference(**batch)
            assert (ours.prediction_logits - theirs.prediction_logits).abs().max() <= TOL
            assert (ours.seq_relationship_logits - theirs.seq_relationship_logits).abs().max() <= TOL


# ---- loading from the cache ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["org/tiny", "bert-base-uncased", "google/bert_uncased_L-2_H-32_A-4"])
def test_a_cached_hub_model_loads_offline_with_both_heads(cached, name):
    model, tok = bertlab.load(name, device="cpu")
    assert_same_outputs(model, tok, reference_model(REPOS[name][1]).eval())


def test_a_revision_after_the_at_sign(cached):
    main, _ = bertlab.load("org/tiny", device="cpu")
    v1, tok = bertlab.load("org/tiny@v1", device="cpu")
    by_commit, _ = bertlab.load(f"org/tiny@{commit_of('org/tiny@v1')}", device="cpu")
    assert_same_outputs(v1, tok, reference_model(REPOS["org/tiny@v1"][1]).eval())
    assert_same_outputs(by_commit, tok, reference_model(REPOS["org/tiny@v1"][1]).eval())
    assert_same_outputs(main, tok, reference_model(REPOS["org/tiny"][1]).eval())
    assert not torch.equal(main.bert.embeddings.word_embeddings.weight, v1.bert.embeddings.word_embeddings.weight)
    assert hub.snapshot("org/tiny", revision="v1") == hub.snapshot("org/tiny@v1")
    with pytest.raises(ValueError, match="two revisions for org/tiny"):
        hub.snapshot("org/tiny@v1", revision="main")


def test_the_folder_is_the_cache_snapshot(cached):
    folder = hub.snapshot("bert-base-uncased")
    assert folder == cached / "models--bert-base-uncased" / "snapshots" / commit_of("bert-base-uncased")
    assert (folder / "pytorch_model.bin").is_symlink()  # loaded through the cache's links to its blobs


def test_an_uncached_id_offline_names_it_and_both_ways_out(cache):
    with pytest.raises(FileNotFoundError) as err:
        bertlab.load("bert-base-multilingual-cased")
    message = str(err.value)
    for part in ("'bert-base-multilingual-cased'", "not in the local cache", "HF_HUB_OFFLINE is set",
                 "connect to the internet once", "bertlab.load(path)", str(cache)):
        assert part in message, (part, message)


def test_an_uncached_revision_offline_is_named(cached):
    with pytest.raises(FileNotFoundError,
                       match=r"'org/tiny@v2' is not a model bertlab knows by name.*not in the local cache"):
        bertlab.load("org/tiny@v2")
    with pytest.raises(FileNotFoundError, match="not in the local cache"):
        bertlab.load("org/tiny@" + "0" * 40)


def test_a_hub_model_that_is_not_a_bert_is_refused(cached):
    with pytest.raises(ValueError, match="model_type is 'roberta': bertlab loads BERT checkpoints only"):
        bertlab.load("FacebookAI/roberta-tiny")


def test_a_partly_cached_repo_is_not_taken(cache, remote):
    # an interrupted download: config and vocabulary, no weights
    put_in_cache(cache, "org/tiny", remote["org/tiny"], files={"config.json", "vocab.txt"})
    with pytest.raises(FileNotFoundError, match="'org/tiny' is not a model bertlab knows by name"):
        bertlab.load("org/tiny")
    assert hub.cached_models() == []


def test_a_local_folder_wins_over_the_hub(cached, remote, tmp_path, monkeypatch):
    here = tmp_path / "work"
    (here / "org").mkdir(parents=True)
    (here / "org" / "tiny").symlink_to(remote["org/tiny@v1"], target_is_directory=True)
    monkeypatch.chdir(here)
    model, tok = bertlab.load("org/tiny", device="cpu")  # the folder ./org/tiny, not the cached main branch
    assert_same_outputs(model, tok, reference_model(REPOS["org/tiny@v1"][1]).eval())


def test_bundled_names_and_paths_never_reach_the_hub(cache, monkeypatch, tmp_path):
    def no_hub(*args, **kwargs):
        raise AssertionError("the hub was consulted")

    monkeypatch.setattr(hub, "snapshot", no_hub)
    model, _ = bertlab.load("bertlab-tiny", device="cpu")
    assert type(model) is BertForPreTraining
    for name in (str(tmp_path / "nope"), "a/b/c", "./nope", "~/nope"):
        with pytest.raises(FileNotFoundError, match="neither a model bertlab knows by name"):
            bertlab.load(name)


def test_what_reads_as_a_hub_id():
    for name in ("bert-base-uncased", "google/bert_uncased_L-4_H-256_A-4", "bert-base-multilingual-cased",
                 "org/name@v1.0", "org/name@refs/pr/1", f"org/name@{'a' * 40}"):
        assert hub.is_hub_id(name), name
    for name in ("/abs/path", "./rel", "~/home", "a/b/c", "org--x/y", "org/x..y", "name@", "@v1", "a b",
                 "org/name@../x", Path("bert-base-uncased")):
        assert not hub.is_hub_id(name), name
    assert hub.split("org/name@v1") == ("org/name", "v1") and hub.split("x") == ("x", None)


# ---- the cache listing -----------------------------------------------------------------------------------

def test_cached_models_lists_the_berts_in_the_cache(cached, remote):
    put_in_cache(cached, "org/config-only", remote["org/tiny"], files={"config.json"})  # not loadable
    dataset = cached / "datasets--org--tiny" / "snapshots" / "abc"
    dataset.mkdir(parents=True)
    assert hub.cached_models() == ["bert-base-uncased", "google/bert_uncased_L-2_H-32_A-4", "org/tiny",
                                   "org/tiny@v1"]
    assert bertlab.cached_models() == hub.cached_models()
    for name in hub.cached_models():  # each loads offline, as listed
        assert type(bertlab.load(name, device="cpu")[0]) is BertForPreTraining


def test_cached_models_without_a_cache_is_empty(cache):
    cache.rmdir()
    assert hub.cached_models() == []


# ---- online, with the hub played by a stand-in -----------------------------------------------------------

@pytest.fixture
def online_hub(cache, remote, monkeypatch):
    """Offline mode off, and huggingface_hub.snapshot_download replaced by a stand-in that 'downloads' the
    files matching allow_patterns from `remote` into the cache. Returns the calls' patterns."""
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    # a repository that holds weights in both formats, as bert-base-uncased does
    both = remote["org/tiny"].parent / "both"
    if not both.exists():
        both.mkdir()
        for f in remote["org/tiny"].iterdir():
            (both / f.name).write_bytes(f.read_bytes())
        (both / "pytorch_model.bin").write_bytes((remote["bert-base-uncased"] / "pytorch_model.bin").read_bytes())
        (both / "tf_model.h5").write_bytes(b"not for us")
    repos = {**remote, "org/both": both}
    calls = []

    def snapshot_download(repo_id, *, revision=None, allow_patterns=None, **kwargs):
        calls.append((repo_id, revision, list(allow_patterns)))
        name = repo_id + (f"@{revision}" if revision not in (None, "main") else "")
        answer = SimpleNamespace(headers={}, request=None)  # what the errors read from an HTTP response
        if repo_id == "org/gone":
            raise huggingface_hub.errors.RepositoryNotFoundError("404 Client Error", response=answer)
        if revision == "v9":
            raise huggingface_hub.errors.RevisionNotFoundError("404 Client Error", response=answer)
        if name not in repos:
            raise huggingface_hub.errors.LocalEntryNotFoundError("Got: ConnectError: [Errno -3] name resolution")
        wanted = {f.name for f in repos[name].iterdir() if any(fnmatch.fnmatch(f.name, p) for p in allow_patterns)}
        return str(put_in_cache(cache, name, repos[name], files=wanted))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    return calls


def test_online_only_the_safetensors_are_downloaded_when_the_repo_has_them(online_hub):
    folder = hub.snapshot("org/both")
    assert (folder / "model.safetensors").is_file()
    assert not (folder / "pytorch_model.bin").exists() and not (folder / "tf_model.h5").exists()
    assert len(online_hub) == 1 and "pytorch_model.bin" not in online_hub[0][2]
    assert type(bertlab.load("org/both", device="cpu")[0]) is BertForPreTraining


def test_online_a_bin_only_repo_gets_its_pytorch_model_bin(online_hub):
    model, tok = bertlab.load("bert-base-uncased", device="cpu")
    assert_same_outputs(model, tok, reference_model(REPOS["bert-base-uncased"][1]).eval())
    assert [c[2] for c in online_hub] == [hub.CONFIG_AND_TOKENIZER + hub.SAFETENSORS,
                                          hub.CONFIG_AND_TOKENIZER + hub.PYTORCH]
    assert online_hub[0][:2] == ("bert-base-uncased", None)


def test_online_a_revision_is_passed_on(online_hub):
    hub.snapshot("org/tiny@v1")
    assert online_hub[0][:2] == ("org/tiny", "v1")


def test_online_an_unreachable_hub_falls_back_to_the_cache_or_says_so(online_hub, cache, remote):
    with pytest.raises(FileNotFoundError, match=r"'org/elsewhere' .*the hub could not be reached .*ConnectError"):
        bertlab.load("org/elsewhere")
    put_in_cache(cache, "org/elsewhere", remote["org/tiny"])  # downloaded on an earlier day
    assert type(bertlab.load("org/elsewhere", device="cpu")[0]) is BertForPreTraining


def test_online_a_missing_repo_or_revision_is_named(online_hub):
    with pytest.raises(FileNotFoundError,
                       match=r"'org/gone' is not a model bertlab knows by name .*hub has no model by that id"):
        bertlab.load("org/gone")
    with pytest.raises(FileNotFoundError, match=r"org/tiny has no revision 'v9' on the HuggingFace hub"):
        bertlab.load("org/tiny@v9")


def test_a_cached_commit_needs_no_question_to_the_hub(online_hub, cached):
    bertlab.load(f"org/tiny@{commit_of('org/tiny@v1')}", device="cpu")
    assert online_hub == []


# ---- huggingface_hub stays optional ----------------------------------------------------------------------

def test_without_huggingface_hub_a_hub_id_says_what_to_install(cache, monkeypatch):
    for module in [m for m in sys.modules if m == "huggingface_hub" or m.startswith("huggingface_hub.")]:
        monkeypatch.setitem(sys.modules, module, None)  # `import huggingface_hub` now raises ImportError
    with pytest.raises(ImportError, match="pip install huggingface_hub"):
        bertlab.load("bert-base-uncased")
    assert bertlab.cached_models() == []


@pytest.mark.slow
def test_import_bertlab_does_not_import_huggingface_hub():
    code = ("import sys, bertlab; bertlab.load('bertlab-tiny', device='cpu'); bertlab.cached_models.__doc__; "
            "print(sorted(m for m in sys.modules if m.startswith(('huggingface_hub', 'transformers'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
