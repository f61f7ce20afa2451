"""The `bertlab` command.

    bertlab pretrain CORPUS [CORPUS ...] --out DIR [--preset tiny] [--steps N] ...
    bertlab pretrain --out DIR --resume [--steps N]
    bertlab pretrain CORPUS [CORPUS ...] --out DIR --overwrite ...     (replaces the run in DIR)
    bertlab lab [DIR] [--no-browser] [--port N] [--solutions [SRC]]
    bertlab book OUT [--repo DIR] [--repo-url URL] [--hub-url URL] [--branch B] [--no-execute]
    bertlab finetune --model NAME --task classify --train train.jsonl [--val val.jsonl] --out DIR [--overwrite]
    bertlab experiment ablations|finetune|SPEC.json --out DIR [--jobs N] [--shard K/N] [--allow MODULE]
    bertlab replay CARD [--row N] [--allow MODULE]
    bertlab export --onnx DIR [--model NAME_OR_PATH] [--dtype fp32|fp16]
    bertlab assign DIR [--notebooks NN ...] [--solutions SRC]      (for teachers: nbgrader assignments)

The pretrain flags are generated from the fields of `PretrainArgs` (pretraining/args.py) by `settings.add_flags`,
as finetune's are from `FineTuneSettings`: one flag per field, with the field's name, default, `help`, range and
resumability (bertlab/settings.py), and a type read from its annotation (bool: --x/--no-x, list: one or more
values, int, float, else a string). A new field is therefore a new flag with its help, and
test_cli checks that `--help` lists every field. Written by hand here: CORPUS and --out (their help still comes
from their fields), and --resume and --overwrite, which are `pretrain()`'s own keywords rather than fields; a
field of a type the annotation rule does not cover (a tuple, say) would need a line here too.

`bertlab lab` copies the notebooks shipped in the package into DIR (never over the reader's own) and opens
JupyterLab there (bertlab/lab.py).

`bertlab book` builds the lessons into a static web site that views offline (bertlab/book/).

`bertlab export --onnx DIR` writes a model with its MLM head as ONNX, with its tokenizer.json (bertlab/export.py).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path


def _add_pretrain(sub) -> argparse.ArgumentParser:
    from . import settings
    from .pretraining.args import RENAMED, PretrainArgs

    p = sub.add_parser("pretrain", help="pre-train a BERT with masked LM + next-sentence prediction",
                       description="Pre-train BertForPreTraining on plain text (a blank line separates documents). "
                                   "Runs unchanged under torchrun for several processes.")
    p.add_argument("corpus", nargs="*", help=settings.flag_help(PretrainArgs, "corpus"))
    p.add_argument("--out", required=True, help=settings.flag_help(PretrainArgs, "out"))
    p.add_argument("--resume", action="store_true", help="continue exactly from the latest checkpoint in --out")
    p.add_argument("--overwrite", action="store_true",
                   help="start a new run in an --out that holds one, deleting its checkpoints, metrics and model")
    settings.add_flags(p, PretrainArgs, skip=("corpus", "out"))   # one flag per field: its help, range, default

    class Renamed(argparse.Action):     # an old flag: refused, saying the new one
        def __call__(self, parser, namespace, values, option_string=None):
            parser.error(f"{option_string} is now --{RENAMED[self.dest].replace('_', '-')}")

    for old in RENAMED:
        p.add_argument("--" + old.replace("_", "-"), dest=old, action=Renamed, default=argparse.SUPPRESS,
                       help=argparse.SUPPRESS)
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
    p.add_argument("--solutions", nargs="?", const="", default=None, metavar="SRC",
                   help="for teachers: also copy the instructor pack (one answer per checkable exercise) into "
                        "DIR/solutions, from SRC, the bertlab repository's solutions/ folder (alone: the "
                        "checkout's, when bertlab runs from one). It is not in the installed package.")
    return p


def _port(text: str) -> int:
    """argparse type for --port: an int in 1 … 65535 (lab.check_port), else argparse's own clear error."""
    from .lab import check_port

    try:
        return check_port(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: pass a whole number from 1 to 65535, "
                                         "or leave --port out for JupyterLab's default, 8888") from None


def _add_book(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("book", help="build the lessons into a static web site (the lab book)",
                       description="Build every lesson notebook into a static site in OUT: one page per lesson "
                                   "with its figures and attention views, the course map, the teacher's notes and "
                                   "search. Executed copies are reused when their cells match (build/executed/, "
                                   "written by the test suite's nbval run, and build/book-cache/); otherwise the "
                                   "notebook is run first. Open OUT/index.html, or copy OUT to any static host.")
    p.add_argument("out", metavar="OUT", help="folder for the site (created; a book built there before is replaced)")
    p.add_argument("--repo", default=None, metavar="DIR",
                   help="the repository whose notebooks/ and README.md to build (default: the one bertlab runs from)")
    p.add_argument("--repo-url", default=None,
                   help="the git repository the live links open (default: the origin remote of --repo; without one "
                        "the pages show no Binder, Colab or hub link)")
    p.add_argument("--hub-url", default=None,
                   help="your class's JupyterHub, for the nbgitpuller links (default: none, and no hub link)")
    p.add_argument("--branch", default=None,
                   help="the branch the live links open (default: the origin remote's default branch, else main)")
    p.add_argument("--cache", default=None, metavar="DIR",
                   help="where notebooks the build runs are kept for the next build (default: REPO/build/book-cache)")
    p.add_argument("--reuse", action="append", default=None, metavar="DIR",
                   help="a folder of executed notebooks to reuse when their cells match (default: REPO/build/executed)")
    p.add_argument("--no-execute", action="store_true",
                   help="do not run notebooks that have no executed copy: render them without outputs")
    return p


def _add_export(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("export", help="write a model as ONNX (every attention, hidden state and guess)",
                       description="Write a model with its masked-LM head (and NSP head, if it has one) to "
                                   "DIR/model.onnx for ONNX Runtime, with its tokenizer.json and a manifest "
                                   "that records the outputs and how closely they match bertlab's forward.")
    p.add_argument("--onnx", required=True, metavar="DIR",
                   help="folder for the export (created; an export written there before is replaced)")
    p.add_argument("--model", default="bertlab-mini", metavar="NAME_OR_PATH",
                   help="what bertlab.load takes: a bundled name or a saved model's folder (default: bertlab-mini)")
    p.add_argument("--dtype", default="fp32", choices=("fp32", "fp16"),
                   help="how the weights are stored; fp16 halves the file, the sums stay float32 (default: fp32)")
    return p


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bertlab", description="bertlab: a compact, inspectable BERT")
    sub = parser.add_subparsers(dest="command", required=True)
    pretrain_parser = _add_pretrain(sub)
    _add_lab(sub)
    _add_book(sub)
    _add_export(sub)
    from .experiments import commands  # finetune, experiment, replay: thin commands over the Python API

    commands.add_parsers(sub)
    from .finetuning import command as finetune_command  # the run folder's rules: --out, --overwrite

    finetune_command.extend_parser(sub.choices["finetune"])
    from .course import grading  # `bertlab assign`: the exercises as nbgrader assignments

    grading.add_parser(sub)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    if args.command == "pretrain":
        from .files import WriteFailed
        from .pretraining.trainer import pretrain

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
            run = pretrain(args.corpus, args.out, resume=args.resume, overwrite=args.overwrite, **options)
        # bad input, and an --out that is a file, holds a run, is in use or may not be written: one line
        except (ValueError, FileNotFoundError, FileExistsError, NotADirectoryError, PermissionError) as e:
            print(f"bertlab pretrain: error: {e}", file=sys.stderr)
            return 2
        # the loss diverged, or a write failed (a full disk, a read-only mount): one line, what is intact
        except (FloatingPointError, OSError) as e:
            print(f"bertlab pretrain: error: {e.strerror if isinstance(e, WriteFailed) else e}", file=sys.stderr)
            return 1
        return 130 if run.interrupted else 0    # 128 + SIGINT, as a shell reports a Ctrl-C
    if args.command == "finetune":      # checks everything, then trains; one-line errors of its own
        return finetune_command.main(args)
    if args.command in ("experiment", "replay"):
        from .experiments.grid import JobFailed

        try:
            return commands.main(args)
        # bad input, a card or spec that is not one (file, line, field named), an out in use or not a folder
        except (ValueError, FileNotFoundError, FileExistsError, NotADirectoryError, IsADirectoryError,
                PermissionError) as e:
            print(f"bertlab {args.command}: error: {e}", file=sys.stderr)
            return 2
        # a job raised or its worker died (the finished rows are kept), or a write failed (a full disk)
        except (JobFailed, OSError) as e:
            print(f"bertlab {args.command}: error: {e}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            kept = "; the finished rows are kept in --out: run the same command again to resume" \
                if args.command == "experiment" else ""
            print(f"bertlab {args.command}: interrupted{kept}", file=sys.stderr)
            return 130
    if args.command == "assign":
        return grading.main(args)
    if args.command == "lab":
        from .lab import main as lab_main

        return lab_main(args.dir, no_browser=args.no_browser, port=args.port, solutions=args.solutions)
    if args.command == "export":
        from .checkpoint import load
        from .export import _prepare_dir, export_onnx

        try:
            _prepare_dir(args.onnx)                 # a bad DIR is said before the model loads, not after
            model, tokenizer = load(args.model, device="cpu")
            result = export_onnx(model, tokenizer, args.onnx, args.dtype, name=args.model)
        # a model without an MLM head, a folder that is a file, a link or someone's: one line
        except (ValueError, FileNotFoundError, FileExistsError, NotADirectoryError, PermissionError) as e:
            print(f"bertlab export: error: {e}", file=sys.stderr)
            return 2
        worst = max(result.max_abs_diff.values()) if result.max_abs_diff else None
        print(f"{result.model} ({result.dtype}, {result.size_bytes / 1e6:.1f} MB); outputs: {', '.join(result.outputs)}")
        print("largest difference from bertlab's forward: " + (f"{worst:.2g}" if worst is not None else
                                                               "not measured (pip install onnxruntime)"))
        return 0
    if args.command == "book":
        from .book import Live, build

        kept = " (the book already there is as it was)" if (Path(args.out) / ".bertlab-book").is_file() else ""
        try:
            from .book import default_repo

            live = Live.from_git(args.repo or default_repo(), repo=args.repo_url, hub=args.hub_url, branch=args.branch)
            book = build(args.out, args.repo, cache=args.cache, reuse=args.reuse or (), execute=not args.no_execute,
                         live=live)
        # bad input, a folder that holds something else, a notebook that is not one: one line
        except (ValueError, FileNotFoundError, FileExistsError, NotADirectoryError, PermissionError) as e:
            print(f"bertlab book: error: {e}{kept}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"bertlab book: interrupted: nothing was written to {args.out}{kept}", file=sys.stderr)
            return 130                          # 128 + SIGINT, as a shell reports a Ctrl-C
        # a notebook whose cell raised, whose kernel died or that did not finish; a full disk: one line
        except (RuntimeError, TimeoutError, OSError) as e:
            print(f"bertlab book: error: {e}{kept}", file=sys.stderr)
            return 1
        print(book.summary())
        for line in book.executed.items():
            print("  %s: %s" % line)
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
