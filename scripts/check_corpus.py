"""Check the demo corpus for near-duplicates and for text shared with other sources.

    python scripts/check_corpus.py            # exits 1 if it finds anything over the thresholds

- Repeated sentences: the same line (case and punctuation ignored) in two documents. A few short stock
  lines ("It was a good day.") are fine; long repeated lines suggest copy-paste.
- Near-duplicate documents: Jaccard similarity of word 5-gram sets ≥ 0.3 between two documents.
- Copied text: any word 8-gram shared with WordNet's glosses and examples, the other real English on this
  machine. The demo corpus is original writing; an 8-word run in common is a sign of copying (or of a
  very common phrase, which the report lists so a person can judge).

A shared 8-gram with the whole web cannot be checked offline; the check is what this machine allows.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from itertools import combinations
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "bertlab" / "assets" / "corpus" / "source"
WORD = re.compile(r"[a-z0-9']+")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def grams(ws: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(ws[i:i + n]) for i in range(len(ws) - n + 1)}


def documents() -> list[tuple[str, int, list[str]]]:
    docs = []
    for path in sorted(SOURCE.glob("en_*.txt")):
        blocks = [b for b in path.read_text(encoding="utf-8").split("\n\n") if b.strip()]
        docs += [(path.name, i, [line.strip() for line in b.splitlines() if line.strip()]) for i, b in enumerate(blocks)]
    return docs


def other_texts() -> dict[str, str]:
    texts = {}
    wordnet = Path("/usr/share/wordnet")
    if wordnet.exists():
        texts["WordNet 3.0"] = "\n".join(line.split("|", 1)[1] for p in wordnet.glob("data.*")
                                         for line in p.read_text(encoding="latin-1").splitlines() if "|" in line)
    return texts


def main() -> int:
    docs = documents()
    problems = 0

    # repeated long sentences
    seen: dict[str, list[str]] = defaultdict(list)
    for name, i, lines in docs:
        for line in lines:
            key = " ".join(words(line))
            seen[key].append(f"{name}#{i}")
    repeated = {k: v for k, v in seen.items() if len(set(v)) > 1 and len(k.split()) >= 8}
    print(f"{len(docs)} documents, {sum(len(d[2]) for d in docs)} sentences")
    print(f"sentences of 8+ words found in two documents: {len(repeated)}")
    for k, v in list(repeated.items())[:20]:
        print(f"  {k!r}: {', '.join(v)}")
    problems += len(repeated)

    # near-duplicate documents: only pairs sharing a rare 5-gram are compared
    doc_grams = [grams(words(" ".join(lines)), 5) for _, _, lines in docs]
    index: dict[tuple, list[int]] = defaultdict(list)
    for j, g in enumerate(doc_grams):
        for t in g:
            index[t].append(j)
    candidates = {pair for ids in index.values() if 1 < len(ids) < 50 for pair in combinations(ids, 2)}
    near = []
    for a, b in candidates:
        jac = len(doc_grams[a] & doc_grams[b]) / max(1, len(doc_grams[a] | doc_grams[b]))
        if jac >= 0.3:
            near.append((jac, a, b))
    print(f"near-duplicate document pairs (5-gram Jaccard >= 0.3): {len(near)}")
    for jac, a, b in sorted(near, reverse=True)[:20]:
        print(f"  {jac:.2f} {docs[a][0]}#{docs[a][1]} ~ {docs[b][0]}#{docs[b][1]}")
    problems += len(near)

    # 8-grams shared with other texts on this machine
    corpus8 = defaultdict(set)
    for j, (_, _, lines) in enumerate(docs):
        for line in lines:
            for g in grams(words(line), 8):
                corpus8[g].add(j)
    for source, text in other_texts().items():
        shared = corpus8.keys() & grams(words(text), 8)
        print(f"word 8-grams shared with {source}: {len(shared)}")
        for g in list(shared)[:10]:
            print("  " + " ".join(g))
        problems += len(shared)
    print("OK" if not problems else f"{problems} finding(s) to look at")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
