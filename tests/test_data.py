"""From text files to NSP examples: sentence splitting, lazy document reading, a resumable stream, batches."""

from __future__ import annotations

import inspect
import itertools
import json
import os
import random
import threading
from pathlib import Path

import pytest
import torch

from bertlab import Tokenizer
from bertlab.pretraining import PairExample, PretrainingData, collate, iter_texts, read_documents, split_sentences
from testkit import WORDS


@pytest.fixture(scope="module")
def tok(minilm_dir) -> Tokenizer:
    return Tokenizer.from_file(minilm_dir)


def write_paragraphs(path: Path, n_docs: int, seed: int = 0, sentences=(4, 8)) -> list[list[str]]:
    """Documents of random sentences, a blank line between documents, one paragraph line per document (unlike
    testkit.write_corpus's one sentence a line: the reader must split the sentences itself)."""
    rng = random.Random(seed)
    docs = []
    for _ in range(n_docs):
        doc = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 10))).capitalize() + "."
               for _ in range(rng.randint(*sentences))]
        docs.append(doc)
    path.write_text("\n\n".join(" ".join(doc) for doc in docs) + "\n", encoding="utf-8")
    return docs


def take(iterable, n: int) -> list:
    return list(itertools.islice(iterable, n))


# ---- sentences ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("The cat sat. The dog ran! Did it? Yes.", ["The cat sat.", "The dog ran!", "Did it?", "Yes."]),
    ("Mr. Smith met Dr. Jones on St. James St. in London. They talked.",
     ["Mr. Smith met Dr. Jones on St. James St. in London.", "They talked."]),
    ("Pi is about 3.14 and e is 2.718. Both are irrational.",
     ["Pi is about 3.14 and e is 2.718.", "Both are irrational."]),
    ("Fruits, e.g. apples, i.e. the red ones, etc. are sold in the U.S. Army shops. Prices rose.",
     ["Fruits, e.g. apples, i.e. the red ones, etc. are sold in the U.S. Army shops.", "Prices rose."]),
    ('He said "Stop." Then he left. (It was late.) Nobody followed.',
     ['He said "Stop."', "Then he left.", "(It was late.)", "Nobody followed."]),
    ("Wait... what happened? I don't know… Maybe nothing.",
     ["Wait... what happened?", "I don't know…", "Maybe nothing."]),
    ("J. R. R. Tolkien wrote it. Really?! Yes.", ["J. R. R. Tolkien wrote it.", "Really?!", "Yes."]),
    ("안녕하세요. 반갑습니다! 뭐 해요?", ["안녕하세요.", "반갑습니다!", "뭐 해요?"]),
    ("오늘은 날씨가 좋다.내일은 비가 온다.", ["오늘은 날씨가 좋다.", "내일은 비가 온다."]),
    ("今天天气很好。明天会下雨！真的吗？", ["今天天气很好。", "明天会下雨！", "真的吗？"]),
    ("  no final stop here  ", ["no final stop here"]),
    ("", []),
    ("   \n ", []),
])
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


# ---- documents ---------------------------------------------------------------------------------------------

def test_read_documents_splits_on_blank_lines_and_sentences(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("One sentence per line.\nAnother line. With two sentences.\n\n\n"
                    "A paragraph document. It has three sentences! Really?\n  \nLast doc.", encoding="utf-8")
    assert list(read_documents(path)) == [
        ["One sentence per line.", "Another line.", "With two sentences."],
        ["A paragraph document.", "It has three sentences!", "Really?"],
        ["Last doc."],
    ]


def test_read_documents_reads_folders_recursively_in_sorted_order(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "2.txt").write_text("From b two.\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text("From a. Still a.\n\nSecond doc of a.\n", encoding="utf-8")
    (tmp_path / "b" / "1.txt").write_text("From b one.", encoding="utf-8")
    (tmp_path / "notes.md").write_text("Not a corpus file.", encoding="utf-8")
    extra = tmp_path / "extra.text"
    extra.write_text("\ufeffA file named explicitly.", encoding="utf-8")  # with a byte-order mark
    assert list(read_documents([tmp_path, extra])) == [
        ["From a.", "Still a."], ["Second doc of a."], ["From b one."], ["From b two."], ["A file named explicitly."],
    ]


def test_read_documents_streams_without_reading_the_whole_file(tmp_path):
    # A named pipe: the second document is written only after the first has come out of the reader.
    fifo = tmp_path / "stream.txt"
    os.mkfifo(fifo)
    first_out, writer_done = threading.Event(), threading.Event()

    def writer():
        with open(fifo, "w", encoding="utf-8") as f:
            f.write("First doc. Two sentences.\n\n")
            f.flush()
            first_out.wait(timeout=10)
            f.write("Second doc.\n")
        writer_done.set()

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    docs = read_documents(fifo)
    assert inspect.isgenerator(docs)
    assert next(docs) == ["First doc.", "Two sentences."]
    assert not writer_done.is_set()  # the reader did not wait for the end of the file
    first_out.set()
    assert list(docs) == [["Second doc."]]
    thread.join(timeout=10)


def test_missing_paths_and_empty_folders_fail_at_once(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.txt"):
        read_documents(tmp_path / "nowhere.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no .txt files"):
        read_documents(tmp_path / "empty")
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("Caf\xe9 au lait.".encode("latin-1"))
    with pytest.raises(ValueError, match="not UTF-8"):
        list(read_documents(bad))


def test_iter_texts_feeds_tokenizer_training(tmp_path):
    write_paragraphs(tmp_path / "c.txt", n_docs=5)
    lines = list(iter_texts(tmp_path))
    assert len(lines) == 5 and all(line and line == line.strip() for line in lines)
    trained = Tokenizer.train(iter_texts(tmp_path), vocab_size=400)
    assert trained.token_to_id("river") is not None


# ---- the stream --------------------------------------------------------------------------------------------

@pytest.fixture
def corpus(tmp_path) -> Path:
    path = tmp_path / "corpus.txt"
    write_paragraphs(path, n_docs=29)
    return path


def test_stream_gives_valid_pairs_and_check_counts_an_epoch(corpus, tok):
    data = PretrainingData(corpus, tok, max_len=32, docs_per_chunk=7)
    stats = data.check()
    assert stats["documents"] == 29 and stats["chunks"] == 4 and stats["examples"] > 60
    examples = take(data, stats["examples"])
    assert all(isinstance(ex, PairExample) and len(ex) <= 32 for ex in examples)
    assert 0.3 < sum(ex.next_sentence_label for ex in examples) / len(examples) < 0.7
    assert data.position == {"epoch": 0, "chunk": 3, "offset": data.position["offset"]}


def test_a_one_document_last_chunk_joins_the_previous_chunk(corpus, tok):
    # 29 documents in chunks of 7 would leave one document alone, which cannot make NotNext pairs.
    data = PretrainingData(corpus, tok, max_len=32, docs_per_chunk=7)
    assert [len(chunk) for chunk in data._chunks()] == [7, 7, 7, 8]


@pytest.mark.parametrize("consumed", [37, 150])  # mid-epoch, and after the first epoch rolled over
def test_a_resumed_stream_continues_exactly_where_it_stopped(corpus, tok, consumed):
    data = PretrainingData(corpus, tok, max_len=32, seed=3, docs_per_chunk=7)
    stream = iter(data)
    take(stream, consumed)
    state = json.loads(json.dumps(data.state_dict()))  # a checkpoint stores it as JSON
    expected = take(stream, 20)

    resumed = PretrainingData(corpus, tok, max_len=32, seed=3, docs_per_chunk=7)
    resumed.load_state_dict(state)
    assert take(resumed, 20) == expected
    assert resumed.position == data.position


def test_same_seed_same_stream_other_seed_other_stream(corpus, tok):
    def first(seed):
        return take(PretrainingData(corpus, tok, max_len=32, seed=seed, docs_per_chunk=7), 50)

    assert first(1) == first(1)
    assert first(1) != first(2)


def test_epochs_roll_over_with_fresh_pairs(corpus, tok):
    data = PretrainingData(corpus, tok, max_len=32, docs_per_chunk=7)
    per_epoch = data.check()["examples"]
    stream = iter(data)
    epoch0 = take(stream, per_epoch)
    epoch1 = take(stream, 5)
    assert data.position == {"epoch": 1, "chunk": 0, "offset": 5}
    assert epoch1 != epoch0[:5]  # new random splits, labels and order each epoch


def test_batches_are_consecutive_slices_of_the_stream(corpus, tok):
    batches = take(PretrainingData(corpus, tok, max_len=32, docs_per_chunk=7).batches(4), 10)
    flat = take(PretrainingData(corpus, tok, max_len=32, docs_per_chunk=7), 40)
    assert all(len(b) == 4 for b in batches)
    assert [ex for b in batches for ex in b] == flat


def test_resume_refuses_a_state_saved_with_other_settings(corpus, tok):
    state = PretrainingData(corpus, tok, max_len=32, seed=1).state_dict()
    with pytest.raises(ValueError, match="seed"):
        PretrainingData(corpus, tok, max_len=32, seed=2).load_state_dict(state)


@pytest.mark.parametrize("text, message", [
    ("", "has no text"),
    ("\n\n   \n", "has no text"),
    ("Only one document. But two sentences.\nAnd a third.\n", "only one document"),
    ("One sentence.\n\nAnother doc, one sentence.\n\nAnd a third.\n", "two or more sentences"),
])
def test_corpora_that_cannot_make_nsp_pairs_fail_before_training(tmp_path, tok, text, message):
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    data = PretrainingData(path, tok, max_len=32)
    with pytest.raises(ValueError, match=message):
        data.check()
    with pytest.raises(ValueError, match=message):
        next(iter(data))


def test_bad_paths_and_settings_fail_at_construction(tmp_path, corpus, tok):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        PretrainingData(tmp_path / "missing.txt", tok)
    with pytest.raises(ValueError, match="at least 5"):
        PretrainingData(corpus, tok, max_len=4)
    with pytest.raises(ValueError, match="docs_per_chunk"):
        PretrainingData(corpus, tok, docs_per_chunk=1)


# ---- batches of tensors ------------------------------------------------------------------------------------

def test_collate_pads_on_the_right_to_the_longest():
    examples = [PairExample([2, 10, 3, 11, 3], [0, 0, 0, 1, 1], 0),
                PairExample([2, 10, 12, 3, 11, 13, 14, 3], [0, 0, 0, 0, 1, 1, 1, 1], 1),
                PairExample([2, 9, 3, 8, 3], [0, 0, 0, 1, 1], 1)]
    batch = collate(examples, pad_id=0)
    assert set(batch) == {"input_ids", "token_type_ids", "attention_mask", "next_sentence_label"}
    assert batch["input_ids"].shape == batch["token_type_ids"].shape == batch["attention_mask"].shape == (3, 8)
    assert batch["input_ids"].dtype == torch.long
    assert batch["input_ids"][0].tolist() == [2, 10, 3, 11, 3, 0, 0, 0]
    assert batch["token_type_ids"][0].tolist() == [0, 0, 0, 1, 1, 0, 0, 0]
    assert batch["attention_mask"].sum(dim=1).tolist() == [5, 8, 5]
    assert batch["attention_mask"][2].tolist() == [1] * 5 + [0] * 3
    assert batch["next_sentence_label"].tolist() == [0, 1, 1]
    with pytest.raises(ValueError):
        collate([], pad_id=0)


@pytest.mark.parametrize("piece", [7, 50, 333, 4096])
def test_a_long_line_read_in_pieces_gives_the_same_documents(tmp_path, piece):
    # A line longer than data.PIECE is read in pieces, so a 30 MB line does not become one 30 MB string;
    # each piece's last sentence stays open until the next piece, so no sentence is cut at a piece boundary.
    import random

    from bertlab.pretraining import data

    rng = random.Random(0)
    words = ["the", "river", "bank", "was", "Mr.", "Smith", "3.14", "e.g.", "U.S.", "ok!", "wait...", "what?",
             "J.", '"quote."', "(paren.)", "사랑.", "안녕.반갑", "  ", "end.  "]
    para = lambda n: " ".join(rng.choice(words) for _ in range(n))  # noqa: E731
    path = tmp_path / "long.txt"
    path.write_text("\n".join([para(50), para(3000), "", para(40), "", para(5000)]) + "\n", encoding="utf-8")
    whole = list(data._documents([path], piece=10**9))
    assert len(whole) == 3 and list(data._documents([path], piece=piece)) == whole
