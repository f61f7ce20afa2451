"""Split the demo corpus into train/ and heldout/: every 10th document (the 10th, 20th, …) is held out.

    python scripts/split_corpus.py     # reads bertlab/assets/corpus/source/*.txt
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "bertlab" / "assets" / "corpus"

for src in sorted((ROOT / "source").glob("*.txt")):
    docs = [d.strip() for d in src.read_text(encoding="utf-8").split("\n\n") if d.strip()]
    for part, keep in (("train", lambda i: i % 10 != 9), ("heldout", lambda i: i % 10 == 9)):
        (ROOT / part).mkdir(exist_ok=True)
        chosen = [d for i, d in enumerate(docs) if keep(i)]
        (ROOT / part / src.name).write_text("\n\n".join(chosen) + "\n", encoding="utf-8")
        print(f"{part}/{src.name}: {len(chosen)} documents")
