"""Real BERT checkpoints from the HuggingFace hub, for people who are online: `bertlab.load("bert-base-uncased")`.

bertlab is offline-first: its own model names (the bundled models, and "minilm" from its installed package) and
local folders need no network, and nothing here runs unless a name is neither of those and reads as a hub id
("bert-base-uncased", "google/bert_uncased_L-4_H-256_A-4"). Such an id becomes a local folder through
`huggingface_hub`, in its usual cache (~/.cache/huggingface/hub, moved by HF_HUB_CACHE or HF_HOME), so a model
downloaded once, by bertlab or by transformers, loads again without a network, and HF_HUB_OFFLINE=1 means what
it means to transformers. The folder then loads like any other HuggingFace BERT directory
(`bertlab.checkpoint.load`), MLM and NSP heads included when the weights have them.

A revision (a branch, a tag or a commit hash) follows an `@`: `load("bert-base-uncased@<commit>")`. It is part
of the name rather than a keyword so that everything that takes a model name (`load`, the widgets) can pin one;
`load(snapshot("bert-base-uncased", revision="main"))` is the keyword form.

huggingface_hub is optional: it is imported only when a hub id is used, so `import bertlab` never needs it.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from .config import read_config_json

log = logging.getLogger(__name__)

__all__ = ["cached_models", "is_hub_id", "snapshot"]

# What a BERT needs from a repository. A repo such as bert-base-uncased also holds TensorFlow, Flax, Rust, ONNX
# and CoreML copies (gigabytes in all); the weights are fetched in one format only: safetensors when the repo has
# them (they cannot run code when read, and need no unpickling), else pytorch_model.bin.
CONFIG_AND_TOKENIZER = ["config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json",
                        "special_tokens_map.json"]
SAFETENSORS = ["model.safetensors", "model.safetensors.index.json", "model-*-of-*.safetensors"]
PYTORCH = ["pytorch_model.bin"]

# "name" or "org/name" (letters, digits, - _ .; no "--", which the cache uses as its separator), then an optional
# "@revision". Anything else (an absolute path, "./x", "~/x", "a/b/c") is never sent to the hub.
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
HUB_ID = re.compile(rf"(?:{_PART}/)?{_PART}", re.ASCII)
REVISION = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]*", re.ASCII)
COMMIT = re.compile(r"[0-9a-f]{40}")


def split(name) -> tuple[str, str | None] | None:
    """`(repo_id, revision or None)` for a string that reads as a hub id, `"org/name@revision"`; else None."""
    if not isinstance(name, str):
        return None  # a Path is always a path
    repo_id, at, revision = name.partition("@")
    if (not HUB_ID.fullmatch(repo_id) or "--" in repo_id or ".." in repo_id or len(repo_id) > 96
            or (at and (not REVISION.fullmatch(revision) or ".." in revision))):
        return None
    return repo_id, revision or None


def is_hub_id(name) -> bool:
    """Whether `name` could be a HuggingFace hub id (the hub alone can say whether it is one)."""
    return split(name) is not None


def snapshot(repo_id: str, revision: str | None = None) -> Path:
    """The local folder holding hub model `repo_id` at `revision` (default: the main branch).

    Online, it asks the hub for the revision's current commit and downloads what is missing, as transformers
    does. Offline (HF_HUB_OFFLINE=1, or the hub cannot be reached), it takes the cached copy; with none, the
    FileNotFoundError says how to get one. `repo_id` may carry its revision: `"org/name@v1.0"`.
    """
    parsed = split(repo_id)
    if parsed is None:
        raise ValueError(f'{repo_id!r} is not a HuggingFace hub id ("name" or "org/name", optionally followed by '
                         '"@revision")')
    repo_id, pinned = parsed
    if pinned and revision and pinned != revision:
        raise ValueError(f"two revisions for {repo_id}: {pinned!r} in the name and revision={revision!r}")
    revision = pinned or revision
    label = repo_id + (f"@{revision}" if revision else "")
    hf = _huggingface_hub(label)

    if revision and COMMIT.fullmatch(revision) and (folder := _cached(hf, repo_id, revision)):
        return folder  # a commit never changes: a cached one needs no question to the hub
    if _offline(hf):
        why = "HF_HUB_OFFLINE is set"
    else:
        try:
            return _download(hf, repo_id, revision)
        except hf.errors.RevisionNotFoundError:
            raise FileNotFoundError(f"{repo_id} has no revision {revision!r} on the HuggingFace hub: use a branch, "
                                    "a tag or a commit hash of the repository") from None
        except hf.errors.RepositoryNotFoundError:  # GatedRepoError is one too
            raise FileNotFoundError(f"{label!r} is not a model bertlab knows by name or a local folder, and the "
                                    "HuggingFace hub has no model by that id that you may read (check the spelling; "
                                    "for a private or gated model, log in with `hf auth login`)") from None
        except hf.errors.LocalEntryNotFoundError as e:  # the hub could not be reached, and nothing usable is cached
            why = f"the hub could not be reached ({(str(e).splitlines() or [type(e).__name__])[0]})"
    folder = _cached(hf, repo_id, revision)
    if folder is None:
        raise FileNotFoundError(
            f"{label!r} is not a model bertlab knows by name or a local folder, and as a HuggingFace hub id it is not "
            f"in the local cache ({hf.constants.HF_HUB_CACHE}), and {why}. Either connect to the internet once and "
            f"load it again, so that it is downloaded and cached, or get the model's folder (config.json, "
            "model.safetensors or pytorch_model.bin, vocab.txt) some other way and call bertlab.load(path) on it")
    log.info("%s: using the cached copy in %s (%s)", label, folder, why)
    return folder


def cached_models() -> list[str]:
    """The hub BERTs already in the local HuggingFace cache, as names `bertlab.load` takes offline.

    `"org/name"` when the main branch is cached, `"org/name@ref"` for another cached branch or tag. A repository
    counts when a cached revision holds a whole BERT: config.json (model_type "bert", or no model_type and BERT's
    sizes, as Google's original uploads have), weights and a vocabulary. Empty without huggingface_hub or a cache.
    """
    try:
        import huggingface_hub as hf
        import huggingface_hub.constants  # noqa: F401  (hf.constants below)
    except ImportError:
        return []
    try:  # scan_cache_dir's default is fixed when huggingface_hub is imported; the constant can be changed later
        cache = hf.scan_cache_dir(hf.constants.HF_HUB_CACHE)
    except (hf.CacheNotFound, OSError, ValueError):
        return []
    names = set()
    for repo in cache.repos:
        if repo.repo_type != "model" or not is_hub_id(repo.repo_id):
            continue
        for rev in repo.revisions:
            if rev.refs and _complete(Path(rev.snapshot_path)) and _is_bert(Path(rev.snapshot_path) / "config.json"):
                names.update(repo.repo_id if ref == "main" else f"{repo.repo_id}@{ref}" for ref in rev.refs)
    return sorted(names)


# ---- the pieces --------------------------------------------------------------------------------

def _huggingface_hub(label: str):
    try:
        import huggingface_hub
        import huggingface_hub.constants
        import huggingface_hub.errors
    except ImportError:
        raise ImportError(f"{label!r} is not a model bertlab knows by name or a local folder; to load it from the "
                          "HuggingFace hub, bertlab needs huggingface_hub: pip install huggingface_hub") from None
    return huggingface_hub


def _offline(hf) -> bool:
    """HF_HUB_OFFLINE as huggingface_hub read it at import, or as it is now (set in a notebook after transformers
    imported huggingface_hub, it still counts here)."""
    now = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")
    return bool(hf.constants.HF_HUB_OFFLINE) or now


def _download(hf, repo_id: str, revision: str | None) -> Path:
    """Fetch config, tokenizer and weights in one format. Asking for safetensors first and for pytorch_model.bin
    only when the repo has none costs a second small request to the hub, and never downloads both."""
    folder = Path(hf.snapshot_download(repo_id, revision=revision, allow_patterns=CONFIG_AND_TOKENIZER + SAFETENSORS))
    if not any((folder / name).is_file() for name in ("model.safetensors", "model.safetensors.index.json")):
        folder = Path(hf.snapshot_download(repo_id, revision=revision, allow_patterns=CONFIG_AND_TOKENIZER + PYTORCH))
    return folder


def _cached(hf, repo_id: str, revision: str | None) -> Path | None:
    """The cached snapshot of `repo_id` at `revision` if it holds a whole BERT; looked up on disk only."""
    config = hf.try_to_load_from_cache(repo_id, "config.json", revision=revision)
    if not isinstance(config, str):  # None (not cached) or the "known not to exist" marker
        return None
    folder = Path(config).parent
    return folder if _complete(folder) else None


def _complete(folder: Path) -> bool:
    """config.json, weights and a vocabulary: what `bertlab.load` reads."""
    return ((folder / "config.json").is_file()
            and any((folder / f).is_file() for f in ("model.safetensors", "model.safetensors.index.json",
                                                     "pytorch_model.bin"))
            and any((folder / f).is_file() for f in ("tokenizer.json", "vocab.txt")))


def _is_bert(config_file: Path) -> bool:
    try:
        config = read_config_json(config_file)
    except (OSError, ValueError):
        return False
    if "model_type" in config:
        return config["model_type"] == "bert"
    return all(k in config for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"))
