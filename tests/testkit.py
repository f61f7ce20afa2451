"""Plain helpers shared by the tests, and the fixtures a test module opts into by importing them.

A module with a name of its own: `conftest` is ambiguous when pytest collects tests/ and notebooks/
together, each with its own conftest.py. Fixtures every test may use live in conftest.py; the two here
change how a module runs (`one_thread`) or what it trains on (`corpus`), so a module takes them by name:
`from testkit import corpus, one_thread  # noqa: F401  (fixtures)`.
"""

from __future__ import annotations

import copy
import json
import random
import re
import socket
import time
from pathlib import Path

import pytest
import torch

ODD = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
           max_position_embeddings=64, type_vocab_size=2)

# bertlab class name → transformers class name (the heads share their names)
HF_NAMES = {"Bert": "BertModel"}

_BUNDLED: dict[str, tuple] = {}


def bundled(name: str) -> tuple:
    """`(model, tokenizer)` of a model shipped with bertlab ("bertlab-tiny", "bertlab-mini", "minilm"), on the CPU.

    Each name is read from disk once per test session (bertlab-mini takes seconds to load, a deep copy a tenth
    of that); every call returns its own copy of the model, so a test may train it, hook it or change its
    weights without touching another module's. The tokenizer is shared: nothing in the tests changes one.
    """
    if name not in _BUNDLED:
        import bertlab

        _BUNDLED[name] = bertlab.load(name, device="cpu")
    model, tokenizer = _BUNDLED[name]
    return copy.deepcopy(model), tokenizer


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


def max_err(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest absolute difference between two tensors, compared in float32: what a parity test bounds."""
    return (a.float() - b.float()).abs().max().item()


def no_hooks_anywhere(model: torch.nn.Module) -> bool:
    """Whether every module of `model` is free of forward hooks and pre-hooks: none may outlive its call."""
    return all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the system picks it), for a server a test starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- offline HTML views ------------------------------------------------------------------------------

# d3 5.7.0 keeps these XML namespace names as string constants for createElementNS. They are names, never
# fetched; they are the only http strings a view may hold (the browser tests prove nothing is fetched).
XML_NAMESPACES = ("http://www.w3.org/1999/xhtml", "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink",
                  "http://www.w3.org/XML/1998/namespace", "http://www.w3.org/2000/xmlns/")


def urls_in(html: str) -> list[str]:
    """Every URL in a page but d3's namespace names: what an offline view must not hold."""
    for name in XML_NAMESPACES:
        html = html.replace(f'"{name}"', '""')
    return re.findall(r"https?://\S{0,60}|//cdn\S{0,60}", html)


def embedded_params(html: str) -> dict:
    """The data bertviz embeds in its script: `const params = {...}`."""
    marker = "const params = "
    start = html.index(marker) + len(marker)
    return json.JSONDecoder().raw_decode(html, start)[0]


def model_attentions(model, tok, text, text_pair=None) -> torch.Tensor:
    """(L, heads, T, T): the model run on one unpadded text."""
    with torch.no_grad():
        out = model(**tok(text, text_pair), output_attentions=True)
    return torch.stack([a[0] for a in out.attentions])


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread for every test of the module that imports this: on a busy two-core machine, two OpenMP
    threads per tiny matmul are much slower than one."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# ---- a pretraining corpus ---------------------------------------------------------------------------

WORDS = ("the river bank was muddy after rain and a cat sat on the old mat while children played near "
         "water under bridges of stone so every morning people walked slowly home").split()


def write_corpus(path: Path, n_docs: int = 30, seed: int = 0, sentences: tuple[int, int] = (3, 6)) -> Path:
    """`n_docs` documents of distinct short sentences, one sentence a line, a blank line between documents."""
    rng, seen, docs = random.Random(seed), set(), []
    for _ in range(n_docs):
        doc = []
        while len(doc) < rng.randint(*sentences):
            s = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7))).capitalize() + "."
            if s not in seen:
                seen.add(s)
                doc.append(s)
        docs.append("\n".join(doc))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The module's training corpus: write_corpus's 30 documents, written once per module."""
    return write_corpus(tmp_path_factory.mktemp("corpus") / "train.txt")


def toy_run(settings: dict, seed: int) -> dict:
    """An experiment run in a second: fit a noisy line with SGD. It draws from torch's global generator, so
    its numbers depend on the seeding `bertlab.experiment` does; settings["log"], if given, is a file that
    gets one line per call (to count which rows really ran)."""
    if settings.get("log"):
        with open(settings["log"], "a") as f:
            f.write(f"{settings['lr']} {seed}\n")
    x = torch.randn(64, 3)
    y = x @ torch.tensor([1.0, -2.0, 0.5]) + 0.3 * torch.randn(64)
    w = torch.zeros(3, requires_grad=True)
    for _ in range(settings.get("steps", 20)):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= settings["lr"] * w.grad
            w.grad = None
    w = w.detach()
    result = {"loss": float(((x @ w - y) ** 2).mean()), "w0": float(w[0])}
    if settings.get("timed"):                      # a timing, as the studies record them: never the same twice
        result["train_s"] = time.perf_counter()
    return result
