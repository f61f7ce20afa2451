"""Bad and unusual inputs, replayed (issue 13, items 7-10): model and tokenizer inputs, widgets driven from
Python, sentence splitting, `bertlab lab`.

Two tables. `REFUSED`: each row is an input that must fail with a ValueError (or argparse's exit) whose
message says what was wrong; the fragment checked is the part that names it. `HANDLED`: inputs that are
odd but fine, each with what must come out. One row per input, so the tables are the count; the tests
after them check what a table cannot (a file left alone, a warning logged, work that stays linear).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from functools import cached_property
from unittest import mock

import pytest
import torch

import bertlab
from bertlab import Bert, BertConfig, Tokenizer, lab
from bertlab.cli import main as cli_main
from bertlab.pretraining.data import split_sentences
from testkit import ODD, bundled, randomize_

needs_widgets = pytest.mark.skipif(
    importlib.util.find_spec("ipywidgets") is None or importlib.util.find_spec("plotly") is None,
    reason="the widgets need the notebooks extra (ipywidgets, plotly)")

TINY_POSITIONS = 128    # bertlab-tiny's max_position_embeddings; its shipped tokenizer_config.json says 512


def widget(*row):
    """A table row that drives a widget: skipped without the notebooks extra."""
    return pytest.param(*row, marks=needs_widgets)


SENTENCES = ["The river bank was muddy after the rain.", "She paid the cheque in at the bank."]


@pytest.fixture(scope="module")
def tiny():
    """bertlab-tiny as shipped (package data: its absence is a failure, not a skip)."""
    return bundled("bertlab-tiny")


class Inputs:
    """What the rows call, built on first use: the odd tiny model and tokenizer, bertlab-tiny, widgets."""

    def __init__(self, odd_tokenizer, tiny, tmp_path):
        self.tok = odd_tokenizer
        self.tiny = tiny
        self.tmp_path = tmp_path

    @cached_property
    def model(self) -> Bert:
        return randomize_(Bert(BertConfig(**ODD), device="cpu")).eval()

    @cached_property
    def ids(self) -> torch.Tensor:
        return torch.tensor([self.tok("the cat sat on the mat").input_ids])     # (1, T)

    def with_mask(self, value) -> None:
        """The model on `ids` with an attention_mask of `value` everywhere."""
        self.model(self.ids, attention_mask=torch.as_tensor(value).expand_as(self.ids))

    @cached_property
    def masking_lab(self):
        from bertlab.viz import widgets as W
        return W.MaskingLab("The river was low after a long dry summer.", model=self.tiny)

    @cached_property
    def head_ablation(self):
        from bertlab.viz import widgets as W
        return W.HeadAblation(model=self.tiny)

    def ablate(self, heads) -> None:
        self.head_ablation.set_ablated(heads)

    def context_explorer(self, sentences, senses):
        from bertlab.viz import widgets as W
        return W.ContextExplorer("bank", sentences, senses=senses, model=self.tiny)


@pytest.fixture
def inputs(odd_tokenizer, tiny, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)     # `bertlab lab` changes directory before it starts JupyterLab
    return Inputs(odd_tokenizer, tiny, tmp_path)


def cli_lab_port(c: Inputs, port: str) -> None:
    never = AssertionError("a bad --port must not start JupyterLab")
    with mock.patch.object(os, "execv", side_effect=never), \
            mock.patch.object(lab.subprocess, "call", side_effect=never):
        cli_main(["lab", str(c.tmp_path / "nb"), "--no-browser", "--port", port])


# (description, call, error type, fragment of the message)
REFUSED = [
    # ---- model inputs (item 7)
    ("attention_mask holding a 2", lambda c: c.with_mask(2),
     ValueError, "only 1 (real token) and 0 (padding), got 2"),
    ("attention_mask holding a -1", lambda c: c.with_mask(-1),
     ValueError, "only 1 (real token) and 0 (padding), got -1"),
    ("attention_mask already additive (-10000)", lambda c: c.with_mask(-10_000), ValueError, "additive"),
    ("attention_mask of floats", lambda c: c.with_mask(torch.tensor(1.0)), ValueError, "attention_mask.long()"),
    ("an empty batch (0, T)", lambda c: c.model(torch.zeros(0, 6, dtype=torch.long)), ValueError, "empty batch"),
    ("an empty batch (0, T) with its mask",
     lambda c: c.model(torch.zeros(0, 6, dtype=torch.long), attention_mask=torch.zeros(0, 6, dtype=torch.long)),
     ValueError, "empty batch"),
    ("an empty nested list [[]]", lambda c: c.model([[]]), ValueError, "seq_len 0"),
    ("uint8 id past the vocabulary (99)", lambda c: c.model(torch.full((1, 3), 200, dtype=torch.uint8)),
     ValueError, "token id 200 is outside the vocabulary"),
    ("decode of a negative id", lambda c: c.tok.decode([2, -1, 3]), ValueError, "token id -1 at position 1"),
    ("decode of a float id", lambda c: c.tok.decode([2, 2.5]), ValueError, "must be integers, got 2.5"),
    ("decode of a whole float id", lambda c: c.tok.decode([3.0]), ValueError, "must be integers, got 3.0"),
    ("decode of probabilities", lambda c: c.tok.decode(torch.rand(4)), ValueError, "dtype torch.float32"),
    ("decode of a bool", lambda c: c.tok.decode([True]), ValueError, "must be integers, got True"),
    ("decode of None", lambda c: c.tok.decode([None]), ValueError, "must be integers, got None"),
    ("decode of text", lambda c: c.tok.decode("the cat"), ValueError, "got text"),
    ("decode of an id past the vocabulary", lambda c: c.tok.decode([10**9]),
     ValueError, "outside the vocabulary (0 … 93)"),
    ("decode of an id past int64", lambda c: c.tok.decode([2**64]), ValueError, "outside the vocabulary"),
    ("decode of a 2-D tensor", lambda c: c.tok.decode(torch.ones(2, 3, dtype=torch.long)),
     ValueError, "decode each row"),
    ("tokenizer saved for 0 positions", lambda c: c.tok.save(c.tmp_path / "t", max_position_embeddings=0),
     ValueError, "max_position_embeddings must be a positive int"),
    # ---- widgets from Python (item 8)
    widget("MaskingLab.draw(0)", lambda c: c.masking_lab.draw(0), ValueError, "from 1 to 10,000, got 0"),
    widget("MaskingLab.draw(-3)", lambda c: c.masking_lab.draw(-3), ValueError, "got -3"),
    widget("MaskingLab.draw(2.5)", lambda c: c.masking_lab.draw(2.5), ValueError, "got 2.5"),
    widget("MaskingLab.draw(True)", lambda c: c.masking_lab.draw(True), ValueError, "got True"),
    widget("MaskingLab.draw('2')", lambda c: c.masking_lab.draw("2"), ValueError, "got '2'"),
    widget("MaskingLab.draw(10**6)", lambda c: c.masking_lab.draw(10**6), ValueError, "call it again for more"),
    widget("set_ablated: layer out of range", lambda c: c.ablate([(9, 0)]),
           ValueError, "head (9, 0) does not exist: layers 0 … 1, heads 0 … 1"),
    widget("set_ablated: a negative head past the first", lambda c: c.ablate([(0, -3)]),
           ValueError, "head (0, -3) does not exist"),
    widget("set_ablated: one number, not a pair", lambda c: c.ablate([(0,)]), ValueError, "(layer, head) pair"),
    widget("set_ablated: a triple", lambda c: c.ablate([(0, 1, 1)]), ValueError, "(layer, head) pair"),
    widget("set_ablated: a float head", lambda c: c.ablate([(0.5, 1)]), ValueError, "got (0.5, 1)"),
    widget("set_ablated: a string", lambda c: c.ablate(["01"]), ValueError, "got '01'"),
    widget("set_ablated: a bare pair", lambda c: c.ablate((0, 1)), ValueError, "e.g. [(0, 1)], got 0"),
    widget("set_ablated(None)", lambda c: c.ablate(None), ValueError, "list of (layer, head) pairs"),
    widget("ContextExplorer: fewer senses than sentences",
           lambda c: c.context_explorer(SENTENCES + ["The bank closed early."], ["river", "money"]),
           ValueError, "got 3 sentences but 2 senses"),
    widget("ContextExplorer: more senses than sentences",
           lambda c: c.context_explorer(SENTENCES, ["river", "money", "river"]),
           ValueError, "got 2 sentences but 3 senses"),
    widget("ContextExplorer: senses as one string", lambda c: c.context_explorer(SENTENCES, "river"),
           ValueError, "senses must be a list"),
    # ---- data (item 9)
    ("split_sentences of bytes", lambda c: split_sentences(b"One. Two."), ValueError, "text must be a str"),
    # ---- bertlab lab (item 10)
    ("bertlab lab --port 0", lambda c: cli_lab_port(c, "0"), SystemExit, "'0' is not a port"),
    ("bertlab lab --port 65536", lambda c: cli_lab_port(c, "65536"), SystemExit, "from 1 to 65535"),
    ("bertlab lab --port -1", lambda c: cli_lab_port(c, "-1"), SystemExit, "'-1' is not a port"),
    ("bertlab lab --port http", lambda c: cli_lab_port(c, "http"), SystemExit, "'http' is not a port"),
    ("lab.check_port(True)", lambda c: lab.check_port(True), ValueError, "from 1 to 65535, got True"),
]


def ids(table) -> list[str]:
    return [row.values[0] if hasattr(row, "values") else row[0] for row in table]


@pytest.mark.parametrize("description, call, error, fragment", REFUSED, ids=ids(REFUSED))
def test_refused_with_a_clear_message(description, call, error, fragment, inputs, capsys):
    with pytest.raises(error) as caught:
        call(inputs)
    message = str(caught.value) + capsys.readouterr().err      # argparse prints its message, then exits
    assert fragment in message, f"{description}: {message!r}"


def same_output(pair) -> bool:
    a, b = pair
    return torch.equal(a.last_hidden_state, b.last_hidden_state)


def same_ids(pair) -> bool:
    a, b = pair
    return a.input_ids == b.input_ids


# (description, call, check of its result)
HANDLED = [
    ("uint8 input_ids, compared in int64", lambda c: (c.model(c.ids.to(torch.uint8)), c.model(c.ids)), same_output),
    ("int16 input_ids", lambda c: (c.model(c.ids.to(torch.int16)), c.model(c.ids)), same_output),
    ("uint8 token_type_ids and attention_mask",
     lambda c: (c.model(c.ids, c.ids.new_zeros(c.ids.shape, dtype=torch.uint8),
                        c.ids.new_ones(c.ids.shape, dtype=torch.uint8)), c.model(c.ids)), same_output),
    ("a bool attention_mask",
     lambda c: (c.model(c.ids, attention_mask=c.ids.new_ones(c.ids.shape, dtype=torch.bool)), c.model(c.ids)),
     same_output),
    ("a lone surrogate: replaced, then dropped as BERT drops U+FFFD",
     lambda c: (c.tok("the cat\ud800 sat"), c.tok("the cat sat")), same_ids),
    ("a lone surrogate in text_pair", lambda c: (c.tok("the cat", "\udc00it sat"), c.tok("the cat", "it sat")),
     same_ids),
    ("a lone surrogate in tokenize", lambda c: c.tok.tokenize("\ud83dthe dog"), lambda r: r == ["the", "dog"]),
    ("a lone surrogate in a batch", lambda c: c.tok.batch(["the\udfff dog", "a cat"]), lambda r: len(r) == 2),
    ("a surrogate pair as two code points is its character",
     lambda c: (c.tok("the \ud83d\ude00 dog"), c.tok("the \U0001F600 dog")), same_ids),
    ("decode of one int, as transformers", lambda c: (c.tok.decode(45), c.tok.decode([45])),
     lambda r: r[0] == r[1] != ""),
    ("decode of an int16 tensor", lambda c: c.tok.decode(torch.tensor([45, 46], dtype=torch.int16)),
     lambda r: r != ""),
    ("bertlab-tiny as shipped: max_length=tok.model_max_length fits",
     lambda c: c.tiny[0](**c.tiny[1]("word " * 400, max_length=c.tiny[1].model_max_length)).prediction_logits,
     lambda r: r.shape[1] == TINY_POSITIONS),
    widget("set_ablated with lists, not tuples", lambda c: (c.ablate([[0, 1]]), c.head_ablation.ablated)[1],
           lambda r: r == {(0, 1)}),
    widget("ContextExplorer: senses skip blank lines",
           lambda c: c.context_explorer(f"{SENTENCES[0]}\n\n{SENTENCES[1]}", ["river", "money"]).senses,
           lambda r: r == ["river", "money"]),
]


@pytest.mark.parametrize("description, call, check", HANDLED, ids=ids(HANDLED))
def test_handled(description, call, check, inputs):
    result = call(inputs)
    assert check(result), f"{description}: got {result!r}"


# ---- what a table row cannot show ------------------------------------------------------------------------

def test_bertlab_tiny_tokenizer_is_capped_at_its_positions(tiny):
    model, tok = tiny
    assert model.config.max_position_embeddings == TINY_POSITIONS
    assert tok.model_max_length == model.config.max_position_embeddings


def test_tokenizer_saved_and_loaded_for_a_model_records_its_positions(odd_tokenizer, tmp_path):
    assert odd_tokenizer.model_max_length == 512
    odd_tokenizer.save(tmp_path, max_position_embeddings=ODD["max_position_embeddings"])
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert config["model_max_length"] == ODD["max_position_embeddings"]
    assert odd_tokenizer.model_max_length == 512                       # the tokenizer itself is not changed
    odd_tokenizer.save(tmp_path / "plain")                              # without a model: as it was
    assert Tokenizer.from_file(tmp_path / "plain").model_max_length == 512
    assert Tokenizer.from_file(tmp_path / "plain", max_position_embeddings=64).model_max_length == 64
    assert Tokenizer.from_file(tmp_path / "plain", max_position_embeddings=1024).model_max_length == 512


def test_checkpoint_save_records_the_models_positions(odd_tokenizer, tmp_path):
    model = Bert(BertConfig(**ODD), device="cpu")
    bertlab.save(model, odd_tokenizer, tmp_path / "ckpt")
    config = json.loads((tmp_path / "ckpt" / "tokenizer_config.json").read_text())
    assert config["model_max_length"] == ODD["max_position_embeddings"]
    assert bertlab.load(tmp_path / "ckpt")[1].model_max_length == ODD["max_position_embeddings"]


def test_a_lone_surrogate_is_logged(odd_tokenizer, caplog):
    with caplog.at_level(logging.WARNING, logger="bertlab.tokenizer"):
        odd_tokenizer("the cat\ud800")
    assert "1 lone surrogate" in caplog.text and "U+FFFD" in caplog.text


def test_training_text_with_a_lone_surrogate():
    texts = ["the cat sat on the mat", "the dog sat"]
    broken = Tokenizer.train([texts[0].replace("sat", "sat\ud800"), texts[1]], vocab_size=60, min_frequency=1)
    assert broken.get_vocab() == Tokenizer.train(texts, vocab_size=60, min_frequency=1).get_vocab()


@needs_widgets
def test_refused_widget_calls_change_nothing(inputs):
    w = inputs.head_ablation
    w.set_ablated([(1, 1)])
    before = (w.ablated, w.predictions)
    with pytest.raises(ValueError):
        w.set_ablated([(0, 0), (7, 7)])           # one good head, one bad: none applied
    assert (w.ablated, w.predictions) == before
    m = inputs.masking_lab
    draws = m.counts["draws"]
    with pytest.raises(ValueError):
        m.draw(0)
    assert m.counts["draws"] == draws
    m.redraw.click()                               # and the widget still works
    assert m.counts["draws"] == draws + 1 and m.error is None


class CountingStr(str):
    """A str that adds up how many characters its slices copy."""
    copied = 0

    def __getitem__(self, key):
        piece = super().__getitem__(key)
        CountingStr.copied += len(piece)
        return piece


def test_split_sentences_copies_a_long_line_a_bounded_number_of_times():
    # Each "." used to slice off the rest of the line (text[m.end():]), so a line of n characters with a
    # sentence every ~50 cost ~n²/100 copies: 0.96 MB took 3.8 s and 30 MB never finished. Counting the
    # characters copied proves linearity without a timer.
    line = "The river was low. Mr. Smith saw it, e.g. at 3.14 p.m. today! Was it deep? It was... not. " * 2000
    CountingStr.copied = 0
    sentences = split_sentences(CountingStr(line))
    assert len(sentences) == 8000
    assert sentences[:2] == ["The river was low.", "Mr. Smith saw it, e.g. at 3.14 p.m. today!"]
    assert CountingStr.copied <= 3 * len(line), f"{CountingStr.copied:,} characters copied for {len(line):,}"


def edit(path, text="edited"):
    nb = json.loads(path.read_text(encoding="utf-8"))
    nb["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": [text]})
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path.read_bytes()


def test_lab_keeps_edits_to_the_new_copy(tmp_path, capsys):
    first = lab.copy_notebooks(tmp_path, quiet=True)[0]
    shipped = first.read_bytes()
    edit(first, "mine")
    lab.copy_notebooks(tmp_path, quiet=True)
    newer = tmp_path / (first.stem + ".new.ipynb")
    assert newer.read_bytes() == shipped
    mine = edit(newer, "worked in the .new copy")                       # the reader works in NAME.new.ipynb
    lab.copy_notebooks(tmp_path)                                       # the next launch
    assert newer.read_bytes() == mine
    second = tmp_path / (first.stem + ".new-2.ipynb")
    assert second.read_bytes() == shipped
    out = capsys.readouterr().out
    assert second.name in out and f"{newer.name} differs from it too" in out
    lab.copy_notebooks(tmp_path, quiet=True)                           # and the one after: nothing new
    assert sorted(p.name for p in tmp_path.glob(first.stem + ".new*")) == sorted([newer.name, second.name])


def test_lab_temporary_files_are_not_guessable(tmp_path):
    """A symlink planted at the old predictable temp name must not be written through."""
    src = lab.packaged_notebooks()[0]
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "dest").mkdir()
    target = tmp_path / "dest" / src.name
    try:
        (tmp_path / "dest" / f".{src.name}.tmp{os.getpid()}").symlink_to(victim)
    except (OSError, NotImplementedError):
        pytest.skip("cannot make symlinks here")
    lab.copy_notebooks(tmp_path / "dest", quiet=True)
    assert victim.read_text() == "keep me" and target.read_bytes() == src.read_bytes()
    assert not [p for p in (tmp_path / "dest").iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]


@pytest.fixture
def fake_lab(monkeypatch):
    """`bertlab lab` with JupyterLab present but never started: returns the list of started commands."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "jupyterlab" else real(name, *a))
    started = []
    monkeypatch.setattr(os, "execv", lambda path, args: started.append(args))
    monkeypatch.setattr(lab.subprocess, "call", lambda args, cwd: started.append(args) or 0)
    monkeypatch.chdir(os.getcwd())      # main() changes directory: undo it
    return started


@pytest.mark.parametrize("euid, root", [(0, True), (1000, False)])
def test_lab_allow_root_only_as_root_with_a_note(euid, root, tmp_path, monkeypatch, capsys, fake_lab):
    monkeypatch.setattr(os, "geteuid", lambda: euid, raising=False)
    assert cli_main(["lab", str(tmp_path / "nb"), "--no-browser"]) == 0
    out = capsys.readouterr().out
    assert ("--allow-root" in fake_lab[0]) == root
    assert ("note: running as root" in out) == root


def test_lab_bad_port_from_python(tmp_path, capsys, fake_lab):
    assert lab.main(tmp_path / "nb", port=70000) == 2
    assert "--port must be a whole number from 1 to 65535, got 70000" in capsys.readouterr().err
    assert not (tmp_path / "nb").exists() and not fake_lab
    assert lab.main(tmp_path / "nb", no_browser=True, port=65535) == 0 and "--port=65535" in fake_lab[0]
