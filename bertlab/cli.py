"""The `bertlab` command.

    bertlab pretrain CORPUS [CORPUS ...] --out DIR [--preset tiny] [--steps N] ...
    bertlab pretrain --out DIR --resume [--steps N]
    bertlab pretrain CORPUS [CORPUS ...] --out DIR --overwrite ...     (replaces the run in DIR)
    bertlab lab [DIR] [--no-browser] [--port N]

Flags mirror `PretrainArgs` one to one, so the command and `bertlab.pretrain(...)` cannot drift apart.
`bertlab lab` copies the notebooks shipped in the package into DIR (never over the reader's own) and opens
JupyterLab there (bertlab/lab.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys

HELP = {
    "preset": "model size: tiny (L2/H128), mini (L4/H256), small, medium, base, large",
    "steps": "optimizer steps to train to (with --resume: the new total)",
    "batch_size": "sequences per optimizer step, over all processes",
    "grad_accum": "micro-batches per step (batch_size / grad_accum sequences per forward pass)",
    "max_len": "tokens per sequence, [CLS] A [SEP] B [SEP] included",
    "lr": "peak learning rate (paper: 1e-4; tiny models like 5e-4 to 1e-3)",
    "warmup_steps": "linear warm-up steps (default: 10%% of --steps), then linear decay to zero",
    "weight_decay": "AdamW weight decay, not applied to biases and LayerNorm",
    "clip": "gradient-norm clipping threshold",
    "mask_probability": "share of tokens chosen for masked LM",
    "mask_mode": "dynamic: every token chosen independently, re-drawn each batch; "
                 "bert: Google's exact count per sequence",
    "whole_word": "mask all WordPieces of a word together",
    "max_predictions": "cap on chosen tokens per sequence in --mask-mode bert",
    "nsp_balance": "exactly 50/50 IsNext/NotNext pairs (Google's recipe gives fewer IsNext on short documents)",
    "init": "continue pre-training from a checkpoint folder or bundled name (e.g. minilm): its sizes, encoder "
            "weights and tokenizer; missing MLM/NSP heads start fresh",
    "tokenizer": "vocab.txt, tokenizer.json or a folder; default: train a WordPiece vocabulary on the corpus",
    "vocab_size": "vocabulary size when training a tokenizer",
    "lowercase": "lowercase text when training a tokenizer",
    "strip_accents": "strip accents when training a tokenizer (default: with --lowercase; "
                     "--no-strip-accents keeps Hangul syllables whole)",
    "layers": "override the preset's number of layers",
    "hidden": "override the preset's hidden size (the feed-forward size follows at 4x unless --intermediate)",
    "heads": "override the preset's number of attention heads (must divide the hidden size; default with --hidden: hidden / 64)",
    "intermediate": "override the preset's feed-forward size",
    "hidden_dropout": "override the preset's hidden dropout (0.1)",
    "attention_dropout": "override the preset's attention dropout (0.1)",
    "max_position_embeddings": "learned positions (default: --max-len)",
    "seed": "seed for initialisation, data order, pairs and masks",
    "save_every": "write a checkpoint every N steps (also at the end and on Ctrl-C)",
    "keep_checkpoints": "how many recent checkpoints to keep",
    "log_every": "append a line to DIR/metrics.jsonl every N steps",
    "eval_corpus": "held-out text files or folders, scored at the end (MLM top-1, NSP accuracy)",
    "bf16": "bfloat16 autocast (default: on for CUDA, off for the CPU)",
    "compile": "torch.compile the model",
    "device": "cpu, cuda, cuda:1 … (default: cuda if available)",
    "progress": "show a progress bar",
}


def _add_pretrain(sub) -> argparse.ArgumentParser:
    from .pretraining.trainer import PretrainArgs

    p = sub.add_parser("pretrain", help="pre-train a BERT with masked LM + next-sentence prediction",
                       description="Pre-train BertForPreTraining on plain text (a blank line separates documents). "
                                   "Runs unchanged under torchrun for several processes.")
    p.add_argument("corpus", nargs="*", help="text files or folders (with --resume: only if the run's corpus "
                                             "has moved, to say where it is now)")
    p.add_argument("--out", required=True, help="output folder: the model, metrics.jsonl, checkpoints/")
    p.add_argument("--resume", action="store_true", help="continue exactly from the latest checkpoint in --out")
    p.add_argument("--overwrite", action="store_true",
                   help="start a new run in an --out that holds one, deleting its checkpoints, metrics and model")
    for f in dataclasses.fields(PretrainArgs):
        if f.name in ("corpus", "out"):
            continue
        flag = "--" + f.name.replace("_", "-")
        default = f.default
        kind = str(f.type)
        if kind.startswith("bool"):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=default, help=HELP[f.name])
        elif kind.startswith("list"):
            p.add_argument(flag, nargs="+", default=default, help=HELP[f.name])
        else:
            cast = int if kind.startswith("int") else float if kind.startswith("float") else str
            p.add_argument(flag, type=cast, default=default, help=HELP[f.name] + f" (default: {default})")
    return p


def _add_lab(sub) -> argparse.ArgumentParser:
    from .lab import DEFAULT_DIR

    p = sub.add_parser("lab", help="copy the notebooks into a folder and open JupyterLab there",
                       description="Copy bertlab's notebooks into DIR and open JupyterLab on them. A notebook "
                                   "already in DIR is never overwritten: if this bertlab's version differs, it "
                                   "is written beside yours as NAME.new.ipynb. Needs the notebook extras: "
                                   "pip install 'bertlab[notebooks]'.")
    p.add_argument("dir", nargs="?", default=DEFAULT_DIR, metavar="DIR",
                   help=f"folder for the notebooks (default: ./{DEFAULT_DIR})")
    p.add_argument("--no-browser", action="store_true", help="start JupyterLab without opening a browser")
    p.add_argument("--port", type=_port, default=None,
                   help="JupyterLab's port, 1 … 65535 (default: JupyterLab's, 8888)")
    return p


def _port(text: str) -> int:
    """argparse type for --port: an int in 1 … 65535 (lab.check_port), else argparse's own clear error."""
    from .lab import check_port

    try:
        return check_port(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: pass a whole number from 1 to 65535, "
                                         "or leave --port out for JupyterLab's default, 8888") from None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bertlab", description="bertlab: a compact, inspectable BERT")
    sub = parser.add_subparsers(dest="command", required=True)
    pretrain_parser = _add_pretrain(sub)
    _add_lab(sub)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    if args.command == "pretrain":
        from .pretraining.trainer import LAST_RUN, pretrain

        options = {k: v for k, v in vars(args).items()
                   if k not in ("command", "corpus", "out", "resume", "overwrite")}
        if args.resume:
            # only options given explicitly on the command line override the checkpoint's; parsing again with
            # no defaults finds them in every spelling argparse accepts (--no-progress, --step 8, --steps=8)
            for action in pretrain_parser._actions:
                action.default = argparse.SUPPRESS
            given = vars(parser.parse_args(argv))
            options = {k: v for k, v in options.items() if k in given}
        elif not args.corpus:
            pretrain_parser.error("pretrain needs a CORPUS (text files or folders), or --resume")
        try:
            pretrain(args.corpus, args.out, resume=args.resume, overwrite=args.overwrite, **options)
        # bad input, and an --out that is a file, holds a run, is in use or may not be written: one line
        except (ValueError, FileNotFoundError, FileExistsError, NotADirectoryError, PermissionError) as e:
            print(f"bertlab pretrain: error: {e}", file=sys.stderr)
            return 2
        return 130 if LAST_RUN.get("interrupted") else 0
    if args.command == "lab":
        from .lab import main as lab_main

        return lab_main(args.dir, no_browser=args.no_browser, port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
