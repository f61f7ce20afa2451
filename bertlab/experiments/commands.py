"""`bertlab finetune`, `bertlab experiment` and `bertlab replay`: thin commands over the Python API.

    bertlab finetune --model bertlab-mini --task classify --train train.jsonl --val val.jsonl --out runs/ft
    bertlab experiment ablations --out runs/abl --jobs 2 [--shard 1/4] [--only "No NSP" "MLM + NSP"] [--seeds 0 1]
    bertlab experiment spec.json --out runs/x            # {"run": "module:function", "variants": {...}, "seeds": [...]}
    bertlab experiment --merge runs/x/card-1-of-2.json runs/y/card-2-of-2.json --out runs/all
    bertlab replay bertlab/assets/ablations/card.json --row 9
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


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
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-every", type=int, default=None, help="score --val every N steps too")
    p.add_argument("--device", default=None)
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="show a progress bar")

    p = sub.add_parser("experiment", help="run a grid of variants × seeds and write an experiment card",
                       description="Run every (variant, seed) of SPEC in processes, resumably, into --out/rows.jsonl "
                                   "and --out/card.json. SPEC: 'ablations' (the paper's ablations), "
                                   "'ablations-quick' (the same at a tiny budget), 'finetune' (pre-trained vs "
                                   "random start on the five tasks), or a JSON file {\"run\": \"module:function\", "
                                   "\"variants\": {name: settings}, \"seeds\": [...]}.")
    p.add_argument("spec", nargs="?", help="ablations, ablations-quick, finetune, or a JSON file")
    p.add_argument("--out", required=True, help="folder for rows.jsonl and the card")
    p.add_argument("--jobs", type=int, default=1, help="processes, one torch thread each (changes no number)")
    p.add_argument("--shard", type=_shard, default=None, help="K/N: run only the K-th of N slices of the grid")
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="override the spec's seeds")
    p.add_argument("--only", nargs="+", default=None, help="run only these variants")
    p.add_argument("--merge", nargs="+", metavar="CARD", help="merge the cards of a grid's shards into --out/card.json")

    p = sub.add_parser("replay", help="re-run an experiment card's rows and say whether the numbers agree")
    p.add_argument("card", help="an experiment card (card.json)")
    p.add_argument("--row", type=int, default=None, help="replay only this row (0-based)")


def _shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard takes K/N, e.g. 2/4, got {text!r}") from None
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"--shard K/N needs 1 ≤ K ≤ N, got {text!r}")
    return k, n


def spec_of(name: str) -> dict:
    """The built-in specs, or a JSON file's."""
    if name in ("ablations", "ablations-quick"):
        from . import ablations as a
        variants = a.VARIANTS if name == "ablations" else {k: {**v, **a.QUICK} for k, v in a.VARIANTS.items()}
        return {"run": "bertlab.experiments.ablations:run", "variants": variants, "seeds": [0, 1, 2],
                "data": a.DATA, "name": name}
    if name == "finetune":
        from . import finetune_study as f
        return {"run": "bertlab.experiments.finetune_study:run", "variants": f.pretrained_vs_random(),
                "seeds": [0, 1, 2], "data": f.DATA, "name": "pre-trained vs random start"}
    path = Path(name)
    if not path.is_file():
        raise ValueError(f"no experiment spec {name!r}: name ablations, ablations-quick or finetune, or a JSON file")
    spec = json.loads(path.read_text(encoding="utf-8"))
    missing = {"run", "variants"} - set(spec)
    if missing:
        raise ValueError(f"{path} lacks {', '.join(sorted(missing))}: a spec is {{\"run\": \"module:function\", "
                         "\"variants\": {name: settings}, \"seeds\": [0, 1, 2]}")
    return spec


def format_summary(card: dict) -> str:
    """The card's summary as plain lines: mean ± std per metric, '*' where clear of noise against the reference."""
    lines = [f"{card['name']}: {len(card['rows'])} rows; reference {card['reference']!r}; * = clear of seed noise"]
    for group, metrics in card["summary"].items():
        cells = [f"{m} {s['mean']:.3f} ± {s['std']:.3f}" + ("*" if s.get("clear") else "") for m, s in metrics.items()]
        lines.append(f"  {group}: " + ", ".join(cells))
    return "\n".join(lines)


def main(args) -> int:
    if args.command == "finetune":
        return _finetune(args)
    if args.command == "experiment":
        from .cards import merge_cards, write_card
        from .grid import experiment
        if args.merge:
            card = merge_cards(args.merge)
            Path(args.out).mkdir(parents=True, exist_ok=True)
            write_card(card, Path(args.out) / "card.json")
        else:
            if not args.spec:
                print("bertlab experiment: error: give a SPEC (ablations, finetune or a JSON file) or --merge",
                      file=sys.stderr)
                return 2
            spec = spec_of(args.spec)
            variants = spec["variants"]
            if args.only:
                unknown = set(args.only) - set(variants)
                if unknown:
                    print(f"bertlab experiment: error: unknown variant(s) {sorted(unknown)}: choose from "
                          f"{sorted(variants)}", file=sys.stderr)
                    return 2
                variants = {k: v for k, v in variants.items() if k in args.only}
            card = experiment(spec["run"], variants, args.seeds or spec.get("seeds"), out=args.out, jobs=args.jobs,
                              shard=args.shard, reference=spec.get("reference"), data=spec.get("data", ()),
                              name=spec.get("name"))
        print(format_summary(card))
        return 0
    if args.command == "replay":
        from .cards import replay
        reports = replay(args.card, args.row)
        for r in reports:
            verdict = "agrees" if r["agree"] else f"DIFFERS {r['differences']}"
            data = "; the data files changed since the card was written" if r["data_same"] is False else ""
            same = "; every number identical" if r["identical"] and r["mode"] != "bit-identical" else ""
            print(f"row {r['row']} ({r['variant']}, seed {r['seed']}): {verdict} ({r['mode']}{same}{data})")
        return 0 if all(r["agree"] for r in reports) else 1
    return 2


def _read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def _finetune(args) -> int:
    from ..checkpoint import load, save
    from ..finetuning import finetune
    model, tokenizer = load(args.model, device=args.device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    val = _read_jsonl(args.val) if args.val else None
    metrics = open(out / "metrics.jsonl", "w", encoding="utf-8")
    with metrics:
        result = finetune(model, tokenizer, _read_jsonl(args.train), val, task=args.task, steps=args.steps,
                          lr=args.lr, batch_size=args.batch_size, seed=args.seed, progress=args.progress,
                          device=args.device, eval_every=args.eval_every,
                          callbacks=[lambda entry: metrics.write(json.dumps(entry) + "\n")])
    summary = {**result.to_dict(), "model": args.model}
    summary.pop("history")
    if val is not None:
        summary["val"] = {k.removeprefix("val_"): v for k, v in result.history[-1].items() if k.startswith("val_")}
    if args.test:
        summary["test"] = result.evaluate(tokenizer, _read_jsonl(args.test))
    save(result.model, tokenizer, out)
    (out / "result.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: summary[k] for k in ("val", "test") if k in summary}))
    return 0
