"""`bertlab finetune`: fine-tune on JSONL files into a run folder, and lose nothing the folder held.

    bertlab finetune --model bertlab-mini --task classify --train train.jsonl --val val.jsonl --test test.jsonl \\
                     --out runs/ft [--overwrite]

    runs/ft/
      config.json, model.safetensors, tokenizer.json …   the fine-tuned model (bertlab.save): load it back with
                                                         bertlab.load("runs/ft")
      metrics.jsonl                                      one line per step (loss, lr, val scores)
      result.json                                        settings, label names, τ, val and test scores

The order is what keeps a user's work: everything is read and checked first (the three files, line by line;
the records and labels of every split, --test's included, against the head that will be trained; the --out
folder), so a bad input costs no training and touches nothing. An --out that holds a run or a model (a
pre-training run, a fine-tuning run, a save, the --model folder itself) is refused unless --overwrite.
The steps are logged to a temporary file while the run trains, so a run that stops (a diverged loss,
Ctrl-C) leaves the folder as it was. Then the model is saved, metrics.jsonl and result.json written, and
only then is --test scored: a test set that fails to score never throws the trained model away.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

from .. import files, settings
from ..experiments.records import _DuplicateKey, _no_duplicate_keys  # one JSON reader's duplicate-key rule

OUTPUTS = ("metrics.jsonl", "result.json")                  # what a fine-tuning run writes besides its model
RUN_MARKS = ("checkpoints", "snapshots.jsonl")              # what a pre-training run writes besides those


class Records(list):
    """Records read from a JSONL file, remembering the file, the line of each and the flag that named the file,
    so errors can name them."""

    def __init__(self, records, path: Path, lines: list[int], flag: str):
        super().__init__(records)
        self.path, self.lines, self.flag = path, lines, flag


def extend_parser(p) -> None:
    """What the `finetune` parser (made with the other experiment commands) needs for a run folder."""
    p.add_argument("--overwrite", action="store_true",
                   help="fine-tune into an --out that holds a run or a model (another fine-tuning or pre-training run, "
                        "a save, the --model folder), replacing it once the new run has trained")
    for action in p._actions:
        if action.dest == "out":
            action.help = ("folder for the model, metrics.jsonl and result.json (made if missing; one that holds a "
                           "run or a model is refused unless --overwrite)")


def read_jsonl(path, flag: str) -> Records:
    """The records of a JSONL file (one JSON object a line; blank lines skipped), or a one-line error naming the
    file, the line and what is wrong. Regular files only: a FIFO would wait for ever, /dev/zero never ends."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{flag} {path}: no such file") from None
    except OSError as e:
        raise ValueError(f"{flag} {path}: cannot read it ({e.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{flag} {path} is a folder: pass a JSONL file (one JSON record a line)")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{flag} {path} is not a regular file (a FIFO or a device?): pass a JSONL file")
    records, lines = [], []
    try:
        f = open(path, "rb")
    except OSError as e:
        raise ValueError(f"{flag} {path}: cannot read it ({e.strerror})") from None
    with f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{flag} {path}, line {n}: not UTF-8 text ({e.reason} at byte {e.start + 1} of the "
                                 "line): save the file as UTF-8") from None
            line = line.rstrip("\r\n")
            if n == 1:
                line = line.removeprefix("\ufeff")           # a byte-order mark some editors write
            if not line.strip():
                continue
            try:
                record = json.loads(line, object_pairs_hook=_no_duplicate_keys)
            except json.JSONDecodeError as e:
                array = ("; the file looks like one JSON array: write one record a line (JSONL)"
                         if n == 1 and line.lstrip().startswith("[") else "")
                raise ValueError(f"{flag} {path}, line {n}, column {e.colno}: not JSON ({e.msg}): each line must be "
                                 f"one JSON object{array}") from None
            except _DuplicateKey as e:
                raise ValueError(f"{flag} {path}, line {n}: the key {e.args[0]!r} appears twice, so one of its values "
                                 "would be lost silently: keep one") from None
            if not isinstance(record, dict):
                array = ("; the file looks like one JSON array of records: write one record a line (JSONL)"
                         if n == 1 and isinstance(record, list) and record and isinstance(record[0], dict) else "")
                raise ValueError(f"{flag} {path}, line {n} is a {type(record).__name__}, not a dict (a JSON object "
                                 f"with the record's fields){array}")
            records.append(record)
            lines.append(n)
    return Records(records, path, lines, flag)




def check_out(out: Path, model: str, overwrite: bool) -> None:
    """Refuse an --out that is a file, is inside bertlab's own installation, or holds a run or a model (unless
    `overwrite`); say which of those it holds."""
    from ..checkpoint import ASSETS, BUNDLED, REPLACED, resolve
    from ..pretraining.runfolder import check_out as check_folder

    check_folder(out)                                    # a file, or under one: NotADirectoryError
    here = out.resolve()
    if here.is_relative_to(ASSETS.parent.resolve()):
        raise ValueError(f"--out {out} is inside bertlab's installation ({ASSETS.parent}): choose a folder of your own")
    source = None
    if model in BUNDLED or model == "minilm" or Path(model).expanduser().is_dir():
        with contextlib.suppress(OSError, ValueError):
            source = resolve(model).resolve()
    if source is not None and here == source:
        if model in BUNDLED or model == "minilm":
            raise ValueError(f"--out {out} is where the installed model {model!r} lives: choose another --out")
        if not overwrite:
            raise FileExistsError(f"--out {out} is the --model folder: the run would replace the model it starts "
                                  "from; choose another --out (or pass --overwrite to replace it)")
    if not out.is_dir():
        return
    held = [name for name in (*RUN_MARKS, *OUTPUTS, *REPLACED) if (out / name).exists() or (out / name).is_symlink()]
    if held and not overwrite:
        what = ("a pre-training run" if set(held) & set(RUN_MARKS) else
                "a fine-tuning run" if "result.json" in held else "a model" if "config.json" in held else "a run")
        raise FileExistsError(f"--out {out} holds {what} ({', '.join(held)}): the run would replace it; choose "
                              "another --out, or pass --overwrite to replace it")


def main(args) -> int:
    """Run `bertlab finetune`: 0 when done, 1 when a run stopped (a diverged loss, a failed write), 2 for bad
    input (nothing trained, nothing written), 130 after Ctrl-C (nothing written)."""
    from ..files import WriteFailed
    try:
        return _run(args)
    except (ValueError, FileNotFoundError, FileExistsError, NotADirectoryError, PermissionError) as e:
        print(f"bertlab finetune: error: {e}", file=sys.stderr)
        return 2
    except (FloatingPointError, OSError) as e:
        print(f"bertlab finetune: error: {e.strerror if isinstance(e, WriteFailed) else e}", file=sys.stderr)
        return 1


def _run(args) -> int:
    from ..checkpoint import load, save
    from ..pretraining.runfolder import locked
    from . import checks
    from .loop import FineTuneSettings, NonFiniteLoss, _train, prepare

    for flag, value in (("--model", args.model), ("--out", args.out), ("--train", args.train)):
        if not value.strip():
            raise ValueError(f"{flag} is empty: pass " + ("a model name (bertlab-mini, …) or folder" if flag == "--model"
                                                          else "a folder" if flag == "--out" else "a JSONL file"))
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(FineTuneSettings)}   # its flags (commands.py)
    # every number in its range, said as the command line spells it (--lr nan (lr=nan)), before a file is read
    settings.check_given(FineTuneSettings, {k: v for k, v in given.items() if k != "task"})
    out = Path(args.out)
    check_out(out, args.model, args.overwrite)
    train = read_jsonl(args.train, "--train")
    val = read_jsonl(args.val, "--val") if args.val else None
    test = read_jsonl(args.test, "--test") if args.test else None
    model, tokenizer = load(args.model, device=args.device)
    result = prepare(model, tokenizer, train, val, **given, progress=args.progress, device=args.device)
    if test is not None:                 # the test set against the head that will be trained, before training
        checks.check_records(args.task, test, "--test")
        checks.check_head(args.task, result.model, test, result.labels, against=checks.split_name(train, "train"))
        checks.check_encodable(args.task, test, tokenizer, result.model.config.max_position_embeddings, "--test")

    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(locked(out))            # made if missing; removed again if the run leaves nothing
        except OSError as e:
            if isinstance(e, (FileExistsError, PermissionError)):     # in use by another run; not ours to write
                raise
            raise ValueError(f"--out {out}: cannot make or lock the folder ({e.strerror or e}): choose a folder you "
                             "may write to") from None
        check_out(out, args.model, args.overwrite)      # again, now that no other run can write here
        fd, tmp = tempfile.mkstemp(prefix=".metrics.", suffix=".jsonl.tmp", dir=out)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as metrics:
                def log(entry):
                    metrics.write(json.dumps(entry) + "\n")
                    metrics.flush()
                try:
                    _train(result, tokenizer, train, val, args.progress, [log])
                except NonFiniteLoss as e:
                    raise NonFiniteLoss(f"{e}. Nothing was written: --out {out} is as it was") from None
                except KeyboardInterrupt:
                    print(f"bertlab finetune: interrupted at step {len(result.history) + 1} of {args.steps}; nothing "
                          f"was written: --out {out} is as it was", file=sys.stderr)
                    return 130
            summary = {**result.to_dict(), "model": args.model}
            summary.pop("history")
            if val is not None:
                summary["val"] = {k.removeprefix("val_"): v for k, v in result.history[-1].items()
                                  if k.startswith("val_")}
            _publish(out, result, tokenizer, Path(tmp), summary, save)
        finally:
            Path(tmp).unlink(missing_ok=True)
        if test is not None:
            try:
                summary["test"] = result.evaluate(tokenizer, test)
            except Exception as e:
                raise ValueError(f"scoring --test failed ({e}); the trained model, metrics.jsonl and result.json "
                                 f"(without test scores) are saved in {out}") from e
            files.replace_text(out / "result.json", json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: summary[k] for k in ("val", "test") if k in summary}))
    return 0


def _publish(out: Path, result, tokenizer, metrics: Path, summary: dict, save) -> None:
    """The trained run into `out`: what an earlier run there left (with --overwrite) goes first, then the model
    (the costly part), then metrics.jsonl and result.json."""
    for name in (*RUN_MARKS, "result.json"):
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    save(result.model, tokenizer, out)
    os.chmod(metrics, files.umask_mode())
    os.replace(metrics, out / "metrics.jsonl")           # replaces a link there rather than writing through it
    files.replace_text(out / "result.json", json.dumps(summary, indent=1) + "\n")
