"""Prepare bertlab-mini's pre-training text: WordNet 3.0 glosses and examples, plus the demo corpus.

    apt-get install wordnet-base                  # WordNet 3.0's data files, in /usr/share/wordnet
    python scripts/split_corpus.py                # the demo corpus: source/ → train/ + heldout/
    python scripts/prepare_corpora.py             # → build/corpora/mini-train.txt, and WordNet's held-out part
    python scripts/prepare_corpora.py --prose-repeats 9 --name mini-phase2.txt    # the second phase's mix

Why WordNet: it is real English written by lexicographers, 117,659 glosses ("sloping land (especially the
slope beside a body of water)") and 48,339 example sentences ("they pulled the canoe up on the bank"), one
word sense at a time, under a licence that allows redistribution with its notice (LICENSE beside the
held-out file). It teaches vocabulary and word senses. It has no documents of running text, so on its own
one-sense "documents" would teach next-sentence prediction a format shortcut (a one-sentence chunk can
only be NotNext). Here a "document" is a run of about eight consecutive entries of one lexicographer file
(noun.food, verb.motion, ...): WordNet lists related senses next to each other, so an IsNext pair shares a
topic, as consecutive sentences of prose do.

Why the demo corpus three times over: it is the prose (documents of consecutive sentences) that NSP and the
everyday cloze sentences need, and it is about a sixth of WordNet's size. Its Korean files stay out: the
warm start's vocabulary is English.

Every 50th WordNet document is held out (written into the package, so the model card's numbers can be
recomputed anywhere); the training text is one file of documents shuffled with a fixed seed, so that every
chunk of the stream mixes sources. The output is a pure function of the inputs.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "bertlab" / "assets" / "corpus"
POS_FILES = ("noun", "verb", "adj", "adv")
HELDOUT_EVERY = 50
SENTENCES_PER_DOCUMENT = 8
PROSE_REPEATS = 3


def read_synsets(wordnet: Path) -> list[tuple[str, str, str, list[str]]]:
    """(lexicographer file, headword, definition, examples) for every synset of data.noun/verb/adj/adv, in file order.

    A data line is `offset lex_filenum pos w_cnt word lex_id ... | gloss`; the gloss is the definition,
    then `; "example"` quotations.
    """
    synsets = []
    for pos in POS_FILES:
        path = wordnet / f"data.{pos}"
        if not path.exists():
            raise SystemExit(f"{path} is missing: install WordNet 3.0 with `apt-get install wordnet-base` "
                             "or pass --wordnet DIR (the folder holding data.noun)")
        for line in path.read_text(encoding="latin-1").splitlines():
            if line.startswith("  ") or "|" not in line:
                continue  # the licence header
            head, gloss = line.split("|", 1)
            fields = head.split()
            word = re.sub(r"\(.*\)$", "", fields[4]).replace("_", " ")  # "bank", "river_bank", "big(a)"
            examples = re.findall(r'"([^"]+)"', gloss)
            definition = re.sub(r'"[^"]*"', "", gloss.split(';"')[0] if ';"' in gloss else gloss)
            definition = re.sub(r"[;\s]+$", "", definition.strip())
            synsets.append((f"{pos}.{fields[1]}", word, definition, examples))
    return synsets


def sentence(text: str) -> str:
    text = text.strip().rstrip(";,: ")
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def wordnet_documents(synsets) -> list[list[str]]:
    """Consecutive senses of one lexicographer file, about eight sentences a document.

    Each sense is written "word: definition.", followed by its examples as sentences.
    """
    docs: list[list[str]] = []
    current: list[str] = []
    last_file = None
    for lexfile, word, definition, examples in synsets:
        if current and (lexfile != last_file or len(current) >= SENTENCES_PER_DOCUMENT):
            docs.append(current)
            current = []
        last_file = lexfile
        if definition:
            current.append(f"{word}: {definition}.")
        current.extend(s for s in map(sentence, examples) if s)
    if current:
        docs.append(current)
    return docs


def read_prose(folder: Path) -> list[list[str]]:
    docs = []
    for path in sorted(folder.glob("en_*.txt")):
        for block in path.read_text(encoding="utf-8").split("\n\n"):
            lines = [line.strip() for line in block.splitlines() if line.strip()]
            if lines:
                docs.append(lines)
    return docs


def write_documents(path: Path, docs: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join("\n".join(d) for d in docs) + "\n", encoding="utf-8")


def stats(docs: list[list[str]]) -> dict:
    return {"documents": len(docs), "lines": sum(map(len, docs)),
            "words": sum(len(line.split()) for d in docs for line in d)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wordnet", default="/usr/share/wordnet", help="folder of WordNet 3.0's data.* files")
    parser.add_argument("--out", default=str(ROOT / "build" / "corpora"), help="where the training text goes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prose-repeats", type=int, default=PROSE_REPEATS,
                        help="how many times the demo corpus's training prose goes into the mix")
    parser.add_argument("--name", default="mini-train.txt", help="the training text's file name in --out")
    a = parser.parse_args(argv)

    synsets = read_synsets(Path(a.wordnet))
    wn = wordnet_documents(synsets)
    wn_train = [d for i, d in enumerate(wn) if i % HELDOUT_EVERY != HELDOUT_EVERY - 1]
    wn_heldout = [d for i, d in enumerate(wn) if i % HELDOUT_EVERY == HELDOUT_EVERY - 1]
    write_documents(CORPUS / "wordnet" / "heldout.txt", wn_heldout)

    prose_train, prose_heldout = read_prose(CORPUS / "train"), read_prose(CORPUS / "heldout")
    mixed = wn_train + prose_train * a.prose_repeats
    random.Random(a.seed).shuffle(mixed)
    out = Path(a.out)
    write_documents(out / a.name, mixed)

    summary = {
        "wordnet": {"synsets": len(synsets), "examples": sum(len(s[3]) for s in synsets),
                    "train": stats(wn_train), "heldout": stats(wn_heldout)},
        "prose (English demo corpus)": {"train": stats(prose_train), "heldout": stats(prose_heldout)},
        a.name: {**stats(mixed), "prose_repeats": a.prose_repeats, "seed": a.seed},
    }
    stats_file = out / "corpus_stats.json"          # one file for every mix written: each under its name
    earlier = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    summary = {**earlier, **summary}
    stats_file.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
