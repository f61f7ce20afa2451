"""`bertlab finetune`, `bertlab experiment` and `bertlab replay`: thin commands over the Python API.

The three parsers are made here; `experiment` and `replay` run here, `finetune` in finetuning/command.py (its
run folder's rules: read and check everything, train, then write, and lose nothing the folder held).

    bertlab finetune --model bertlab-mini --task classify --train train.jsonl --val val.jsonl --out runs/ft
    bertlab experiment ablations --out runs/abl --jobs 2 [--shard 1/4] [--only "No NSP" "MLM + NSP"] [--seeds 0 1]
    bertlab experiment finetune --out runs/ft --jobs 2     # the fine-tuning study (its protocol) behind notebook 08
    bertlab experiment finetune --out runs/ft1 --shard 1/2 [--from merged/card.json]   # a round of one shard
    bertlab experiment spec.json --out runs/x --allow mystudy   # {"run": "mystudy:run", "variants": {...}, "seeds": [...]}
    bertlab experiment --merge runs/x/card-1-of-2.json runs/y/card-2-of-2.json --out runs/all
    bertlab replay bertlab/assets/ablations/card.json --row 9
    bertlab replay their/card.json --allow theirstudy          # a card whose run is code you trust
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .. import settings
from ..finetuning.loop import FineTuneSettings
from .records import read_json
from .studies import STUDIES, study_spec


def add_parsers(sub) -> None:
    p = sub.add_parser("finetune", help="fine-tune a model on JSONL records (bertlab.finetune)",
                       description="Fine-tune a task head on records, one JSON object a line: classify "
                                   '{"text", "label"} or {"a", "b", "label"}; tag {"words", "tags"}; qa '
                                   '{"question", "passage", "answer"}; choice {"context", "endings", "label"}. '
                                   "Writes the model, metrics.jsonl (every step) and result.json to --out.")
    p.add_argument("--model", required=True, help="a name or folder for bertlab.load (bertlab-mini, minilm, …)")
    p.add_argument("--task", required=True, choices=["classify", "tag", "qa", "choice"])
    p.add_argument("--train", required=True, help="training records (.jsonl)")
    p.add_argument("--val", help="validation records (.jsonl): scored at the end; QA chooses τ on them")
    p.add_argument("--test", help="test records (.jsonl): scored once, after training")
    p.add_argument("--out", required=True, help="output folder")
    settings.add_flags(p, FineTuneSettings, skip=("task",))   # --steps, --lr, …: each field's help, range, default
    p.add_argument("--device", default=None)
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="show a progress bar")

    p = sub.add_parser("experiment", help="run a grid of variants × seeds and write an experiment card",
                       description="Run every (variant, seed) of SPEC in processes, resumably, into --out/rows.jsonl "
                                   "and --out/card.json. SPEC: one of bertlab's studies (" + ", ".join(STUDIES) +
                                   "; the -quick ones at a tiny budget), or a JSON file {\"run\": \"module:function\", "
                                   "\"variants\": {name: settings}, \"seeds\": [...]} whose module you --allow.")
    p.add_argument("spec", nargs="?", help=", ".join(STUDIES) + ", or a JSON file")
    p.add_argument("--out", required=True, help="folder for rows.jsonl and the card")
    p.add_argument("--jobs", type=int, default=1, help="processes, one torch thread each (changes no number)")
    p.add_argument("--shard", type=_shard, default=None, help="K/N: run only the K-th of N slices of the grid")
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="override the spec's seeds")
    p.add_argument("--only", nargs="+", default=None, help="run only these variants")
    p.add_argument("--merge", nargs="+", metavar="CARD", help="merge the cards of a grid's shards into --out/card.json")
    p.add_argument("--allow", action="append", default=[], metavar="MODULE",
                   help="run a spec whose run is in MODULE (your own code: the current folder is searched)")
    p.add_argument("--from", dest="adopt", metavar="CARD", default=None,
                   help="first add this card's rows to --out (the merged card of a sharded study's last round)")

    p = sub.add_parser("replay", help="re-run an experiment card's rows and say whether the numbers agree")
    p.add_argument("card", help="an experiment card (card.json)")
    p.add_argument("--row", type=int, default=None, help="replay only this row (0-based)")
    p.add_argument("--allow", action="append", default=[], metavar="MODULE",
                   help="trust the card's run if it is in MODULE (bertlab's own studies need no --allow); "
                        "the current folder is searched for it")


def _shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard takes K/N, e.g. 2/4, got {text!r}") from None
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"--shard K/N needs 1 ≤ K ≤ N, got {text!r}")
    return k, n


SPEC_KEYS = {"run", "variants", "seeds", "reference", "data", "name", "notes"}


def spec_of(name: str) -> dict:
    """A study's spec (studies.py), or a JSON file's: {"run", "variants", "seeds"?, "reference"?, "data"?,
    "name"?, "notes"?}, every key checked."""
    if name in STUDIES:
        return study_spec(name)
    path = Path(name)
    if not path.exists():
        raise ValueError(f"no experiment spec {name!r}: name one of {', '.join(STUDIES)}, or a JSON file")
    spec = read_json(path, "an experiment spec")
    if not isinstance(spec, dict):
        raise ValueError(f"{path}: a spec is a JSON object {{\"run\": \"module:function\", \"variants\": {{name: "
                         "settings}, \"seeds\": [0, 1, 2]}")
    missing, unknown = {"run", "variants"} - set(spec), set(spec) - SPEC_KEYS
    if missing:
        raise ValueError(f"{path} lacks {', '.join(sorted(missing))}: a spec is {{\"run\": \"module:function\", "
                         "\"variants\": {name: settings}, \"seeds\": [0, 1, 2]}")
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}: a spec has {', '.join(sorted(SPEC_KEYS))}")
    for key, kind, what in (("run", str, "a 'module:function' string"), ("name", str, "a string"),
                            ("reference", str, "a variant's name"), ("notes", dict, "a JSON object"),
                            ("data", list, "a list of paths")):
        if key in spec and not isinstance(spec[key], kind):
            raise ValueError(f"{path}: {key!r} must be {what}, got {spec[key]!r:.40}")
    if not all(isinstance(p, str) for p in spec.get("data", [])):
        raise ValueError(f"{path}: 'data' must be a list of paths (strings)")
    return spec


def format_summary(card: dict) -> str:
    """The card's summary as plain lines: mean ± std per metric, '*' where clear of noise against the reference,
    and how many seeds diverged."""
    lines = [f"{card['name']}: {len(card['rows'])} rows; reference {card['reference']!r}; * = clear of seed noise"]
    for group, metrics in card["summary"].items():
        cells = []
        for m, s in metrics.items():
            cell = f"{m} {s['mean']:.3f} ± {s['std']:.3f}" + ("*" if s.get("clear") else "") if s["n"] else f"{m} –"
            if s.get("diverged"):
                cell += f" ({s['diverged']} of {s['n'] + s['diverged']} seeds diverged)"
            cells.append(cell)
        lines.append(f"  {group}: " + ", ".join(cells))
    return "\n".join(lines)


def _trust_cwd(allow) -> None:
    """The user's own module is found where they run the command (`python -m` adds the folder; the `bertlab`
    script does not), but only when they allowed a module."""
    if allow and os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())


def main(args) -> int:
    if args.command == "experiment":
        return _experiment(args)
    if args.command == "replay":
        from .cards import read_card, summarise
        from .replay import replay
        _trust_cwd(args.allow)
        card = read_card(args.card)
        reports = replay(card, args.row, allow=args.allow)
        if summarise(card["rows"], card["reference"]) != card["summary"]:
            print("note: the card's stored summary does not match its rows (edited?); replay used the rows")
        for r in reports:
            verdict = ("cannot agree: " + r["reason"] if r["reason"] else
                       "agrees" if r["agree"] else f"DIFFERS {r['differences']}")
            data = "; the data files changed since the card was written" if r["data_same"] is False else ""
            same = "; every number identical" if r["identical"] and r["mode"] != "bit-identical" else ""
            print(f"row {r['row']} ({r['variant']}, seed {r['seed']}): {verdict} ({r['mode']}{same}{data})")
        return 0 if all(r["agree"] for r in reports) else 1
    return 2


def _experiment(args) -> int:
    from .cards import merge_cards, write_card
    from .grid import experiment
    if args.merge:
        if args.spec:
            raise ValueError(f"--merge joins cards already made: drop the SPEC {args.spec!r} (or drop --merge)")
        from .grid import make_out
        card = merge_cards(args.merge)
        write_card(card, make_out(args.out) / "card.json")
        print(format_summary(card))
        return 0
    if not args.spec:
        raise ValueError(f"give a SPEC ({', '.join(STUDIES)} or a JSON file) or --merge CARD …")
    _trust_cwd(args.allow)
    spec = spec_of(args.spec)
    if "protocol" in spec:            # a study that chooses its later runs from its earlier ones
        for flag in ("seeds", "only"):
            if getattr(args, flag):
                raise ValueError(f"--{flag} does not apply to {args.spec}: the study chooses its runs from its "
                                 "own results (its protocol)")
        card = spec["protocol"](args.out, jobs=args.jobs, shard=args.shard, adopt=args.adopt)
        print(format_summary(card))
        stage = card["notes"].get("stage")
        if stage:
            k, n = args.shard
            print(f"stage {stage} of {args.spec} is done in this shard; its next choice needs every shard's rows: "
                  f"merge the shards' cards (bertlab experiment --merge …/card-*-of-{n}.json --out MERGED), then "
                  f"run each shard again with --from MERGED/card.json")
        return 0
    if args.adopt:
        from .grid import adopt_rows
        adopt_rows(args.adopt, args.out)
    variants = spec["variants"]
    if args.only:
        unknown = set(args.only) - set(variants)
        if unknown:
            raise ValueError(f"unknown variant(s) {sorted(unknown)}: choose from {sorted(variants)}")
        variants = {k: v for k, v in variants.items() if k in args.only}
    card = experiment(spec["run"], variants, args.seeds or spec.get("seeds"), out=args.out, jobs=args.jobs,
                      shard=args.shard, reference=spec.get("reference"), data=spec.get("data", ()),
                      name=spec.get("name"), notes=spec.get("notes"), allow=args.allow)
    print(format_summary(card))
    return 0
