"""Build the five shipped task sets of `bertlab.load_task` (bertlab/assets/tasks/<task>.<split>.jsonl).

    .venv/bin/python scripts/make_tasks.py            # deterministic: one seeded generator per task and split
    .venv/bin/python scripts/make_tasks.py --check    # exit 1 if the shipped files differ from what this builds

  topic    one sentence → which of four corpus files it comes from (accuracy)
  follows  two sentences → does B follow A in its document, or come from another document (accuracy)
  tagging  words → PER / LOC / TIME / O, test sentences with names, places, times and frames never trained on
  qa       question + passage → answer span, or no answer (SQuAD 2.0; exact match)
  choice   a sentence + four candidate next sentences → the one that follows (SWAG-style; accuracy)
`topic`, `follows` and `choice` come from the demo corpus: train and validation from its `train/` documents
(every 10th of them for validation), test from its `heldout/` documents, which no bertlab model was trained on.
`tagging` and `qa` are generated from templates written here, with disjoint name, place, time and frame lists.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "bertlab" / "assets" / "corpus"
OUT = ROOT / "bertlab" / "assets" / "tasks"
TASKS = ("topic", "follows", "tagging", "qa", "choice")



def read_documents(path: Path) -> list[list[str]]:
    """A corpus file: documents separated by blank lines, one sentence a line."""
    return [block.strip().splitlines() for block in path.read_text(encoding="utf-8").split("\n\n") if block.strip()]


def corpus_split(name: str) -> dict[str, list[list[str]]]:
    """train / val / test documents of one corpus file; val is every 10th training document."""
    train = read_documents(CORPUS / "train" / name)
    return {"train": [d for i, d in enumerate(train) if i % 10 != 9], "val": train[9::10],
            "test": read_documents(CORPUS / "heldout" / name)}


TOPIC_FILES = ("en_explain.txt", "en_people.txt", "en_home.txt", "en_travel.txt")
PAIR_FILES = ("en_daily.txt", "en_explain.txt", "en_home.txt", "en_life.txt", "en_outdoors.txt",
              "en_people.txt", "en_town.txt", "en_travel.txt", "en_world.txt")
SIZES = {"train": 640, "val": 160, "test": 200}


def topic_rows(split: str, rng: random.Random) -> list[dict]:
    per_class = SIZES[split] // len(TOPIC_FILES)
    rows = []
    for label, name in enumerate(TOPIC_FILES):
        sentences = [s for d in corpus_split(name)[split] for s in d if len(s.split()) >= 8]
        rows += [{"text": s, "label": label} for s in rng.sample(sentences, per_class)]
    rng.shuffle(rows)
    return rows


def _next_sentence_sources(split: str):
    docs = [(name, d) for name in PAIR_FILES for d in corpus_split(name)[split] if len(d) >= 4]
    by_file = {name: [d for n, d in docs if n == name] for name in PAIR_FILES}
    return docs, by_file


def follows_rows(split: str, rng: random.Random) -> list[dict]:
    """B is A's next sentence (label 1), or a sentence from another document of the same file (label 0)."""
    docs, by_file = _next_sentence_sources(split)
    rows = []
    for k in range(SIZES[split]):
        name, doc = rng.choice(docs)
        i = rng.randrange(len(doc) - 1)
        if k % 2 == 0:
            rows.append({"a": doc[i], "b": doc[i + 1], "label": 1})
        else:
            other = rng.choice([d for d in by_file[name] if d is not doc])
            rows.append({"a": doc[i], "b": rng.choice(other), "label": 0})
    return rows


def choice_rows(split: str, rng: random.Random) -> list[dict]:
    """SWAG-style: the sentence that follows, among one sentence from later in the same document and two
    from other documents of the same file."""
    docs, by_file = _next_sentence_sources(split)
    n = {"train": 320, "val": 100, "test": 200}[split]
    rows = []
    while len(rows) < n:
        name, doc = rng.choice(docs)
        i = rng.randrange(len(doc) - 2)
        same_doc = [s for j, s in enumerate(doc) if j not in (i, i + 1)]
        others = [d for d in by_file[name] if d is not doc]
        endings = [doc[i + 1], rng.choice(same_doc)] + [rng.choice(rng.choice(others)) for _ in range(2)]
        order = list(range(4))
        rng.shuffle(order)
        rows.append({"context": doc[i], "endings": [endings[o] for o in order], "label": order.index(0)})
    return rows


# Names, places, times and sentence frames for tagging and QA. Train and test lists share nothing, so a test
# sentence is a new frame filled with a new name, a new place and a new time: only what the encoder knows
# about words it was never fine-tuned on can tag them.
NAMES = {
    "train": "tom grace hana leo mia omar carlos nina ravi ella kenji sofia amara james lucy david maria ahmed "
             "chloe pedro fatima liam yuki noah aisha oliver emma lars ingrid diego".split(),
    "test": "priya mateo zara felix aiko hugo layla ivan rosa kwame elena tariq anya bruno mei sven nadia "
            "paolo greta jamal lena marco keiko rahul clara tomas amina oskar wendy farid".split(),
}
PLACES = {
    "train": "paris lima cairo tokyo berlin dublin nairobi oslo lisbon seoul boston chicago madrid vienna "
             "athens mumbai toronto sydney warsaw prague".split(),
    "test": "rome delhi london moscow bangkok havana manila helsinki budapest montreal denver accra "
            "istanbul jakarta santiago glasgow hamburg lagos kyoto dallas".split(),
}
TIMES = {   # words before "|" are O, after it TIME
    "train": ["on|monday", "on|tuesday", "on|wednesday", "on|thursday", "in|january", "in|february", "in|march",
              "in|april", "in|may", "in|june", "at|noon", "at|midnight", "|last night", "|this morning"],
    "test": ["on|friday", "on|saturday", "on|sunday", "in|july", "in|august", "in|september", "in|october",
             "in|november", "in|december", "at|dawn", "at|dusk", "|yesterday evening", "|next week"],
}
FRAMES = {
    "train": ["{P} flew to {L} {T} to see her aunt .", "{T} , {P} moved to {L} with two cats .",
              "{P} bought a red bicycle in {L} {T} .", "the letter from {P} arrived in {L} {T} .",
              "{P} will give a talk in {L} {T} .", "{T} , {P} cooked dinner for friends in {L} .",
              "my cousin {P} works at a bank in {L} .", "{P} and her brother drove to {L} {T} .",
              "{P} lost his keys at the station in {L} {T} .", "we met {P} at a cafe in {L} {T} .",
              "{P} painted the old fence {T} .", "the train from {L} was late {T} .",
              "{P} was born in {L} .", "{T} , the museum in {L} was closed .",
              "{P} sent a postcard from {L} .", "{P} sang in a small choir {T} .",
              "the weather in {L} was cold {T} .", "{P} called her mother {T} ."],
    "test": ["{P} opened a bakery in {L} {T} .", "{T} , {P} walked along the river in {L} .",
             "a friend of {P} studies music in {L} .", "{P} arrived at the airport in {L} {T} .",
             "{T} , it snowed in {L} for hours .", "{P} fixed the roof of the barn {T} .",
             "the concert in {L} ended late {T} .", "{P} grew up in a village near {L} .",
             "{P} and {P} played chess {T} .", "{T} , {P} wrote to a friend in {L} ."],
}
TAGS = ("O", "PER", "LOC", "TIME")


def fill(frame: str, split: str, rng: random.Random) -> tuple[list[str], list[int]]:
    words, tags = [], []
    for w in frame.split():
        if w == "{P}":
            words.append(rng.choice(NAMES[split])), tags.append(1)
        elif w == "{L}":
            words.append(rng.choice(PLACES[split])), tags.append(2)
        elif w == "{T}":
            before, _, time_words = rng.choice(TIMES[split]).partition("|")
            for x in before.split():
                words.append(x), tags.append(0)
            for x in time_words.split():
                words.append(x), tags.append(3)
        else:
            words.append(w), tags.append(0)
    return words, tags


def tagging_rows(split: str, rng: random.Random) -> list[dict]:
    frames = FRAMES["train" if split in ("train", "val") else "test"]
    names_split = "test" if split == "test" else "train"
    rows = []
    for _ in range(SIZES[split]):
        words, tags = fill(rng.choice(frames), names_split, rng)
        rows.append({"words": words, "tags": tags})
    return rows


# QA events: (past tense, question form). A passage tells two events; a question asks who / where / when of
# one of them. An event told without a place or a time, or an action no one did, makes a question with no
# answer in the passage (SQuAD 2.0).
EVENTS = [("baked bread", "bake bread"), ("caught a large fish", "catch a large fish"),
          ("bought a red bicycle", "buy a red bicycle"), ("painted the fence", "paint the fence"),
          ("visited her grandmother", "visit her grandmother"), ("lost a wallet", "lose a wallet"),
          ("found a small kitten", "find a small kitten"), ("sold an old piano", "sell an old piano"),
          ("planted tomatoes", "plant tomatoes"), ("fixed a broken clock", "fix a broken clock"),
          ("ran a marathon", "run a marathon"), ("opened a shop", "open a shop"),
          ("watched a football match", "watch a football match"), ("rented a boat", "rent a boat"),
          ("wrote a long letter", "write a long letter"), ("climbed a hill", "climb a hill")]


def qa_rows(split: str, rng: random.Random) -> list[dict]:
    names_split = "test" if split == "test" else "train"
    rows = []
    for _ in range(SIZES[split]):
        people = rng.sample(NAMES[names_split], 2)
        events = rng.sample(EVENTS, 3)                     # the third is never told: questions about it
        told, facts = [], []
        for person, (past, _) in zip(people, events[:2]):
            place = rng.choice(PLACES[names_split]) if rng.random() < 0.7 else None
            before, _, when = (rng.choice(TIMES[names_split]).partition("|") if rng.random() < 0.7
                               else ("", "", None))
            sentence = f"{person} {past}" + (f" in {place}" if place else "")
            sentence += (f" {before} {when}".replace("  ", " ") if when else "") + "."
            told.append(sentence[0].upper() + sentence[1:])
            facts.append((person, place, when))
        passage = " ".join(told)
        kind = rng.choice(["who", "where", "when", "who-untold"])
        k = rng.randrange(2)
        person, place, when = facts[k]
        if kind == "who":
            question, answer = f"Who {events[k][0]}?", person
        elif kind == "where":
            question, answer = f"Where did {person} {events[k][1]}?", place
        elif kind == "when":
            question, answer = f"When did {person} {events[k][1]}?", when
        else:
            question, answer = f"Who {events[2][0]}?", None
        rows.append({"question": question, "passage": passage, "answer": answer})
    return rows


BUILDERS = {"topic": topic_rows, "follows": follows_rows, "tagging": tagging_rows, "qa": qa_rows,
            "choice": choice_rows}


def build_data() -> dict[str, dict[str, list[dict]]]:
    """Every task's splits; deterministic (one seeded generator per task and split)."""
    return {task: {split: BUILDERS[task](split, random.Random(f"{task}-{split}"))
                   for split in ("train", "val", "test")} for task in TASKS}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the shipped files instead of writing")
    args = ap.parse_args(argv)
    data = build_data()
    differ = []
    for task, splits in data.items():
        for split, rows in splits.items():
            path = OUT / f"{task}.{split}.jsonl"
            text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            if args.check:
                if not path.exists() or path.read_text(encoding="utf-8") != text:
                    differ.append(path.name)
            else:
                OUT.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    if differ:
        print("differ from what this script builds:", ", ".join(differ))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
