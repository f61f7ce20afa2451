"""Widget latency: the time from an input change to the new figure being ready, per widget, on the CPU.

    python bench/widgets.py                                     # every case, minilm, bertlab-tiny and bertlab-mini
    python bench/widgets.py --json bench/results/widgets-cpu.json
    python bench/widgets.py --models minilm --widgets AttentionExplorer,ContextExplorer --interactions 20

Each case builds a widget on a ~32-token text, makes a few untimed interactions (warm-up), then times
`--interactions` (50) more. An interaction is what a person does to the widget's main input: set a
control's `.value` (a slider, a text box, a token button, a head toggle) or click a button. Callbacks run
synchronously, so the time from the assignment until it returns is the time until `w.figure` holds the new
figure (and the Output area its JSON). Inputs alternate between two values, each of which needs the work a
real change needs: a slider reuses the cached forward pass (as it does for a person), a text change runs
the model again. p50 and p95 over the timed interactions; target p95 ≤ 100 ms, except where a case does more than one
forward pass by design (TARGETS_MS: integrated gradients with 16 steps ≤ 200 ms, a patching sweep ≤ 1 s).

MiniLM has no MLM or
NSP head, so MaskPlayground and NSPExplorer run on bertlab-tiny and bertlab-mini only.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # `_common`, and bertlab from this checkout

import _common as C  # noqa: E402
from bertlab.viz import widgets as W  # noqa: E402

TARGET_MS = 100.0
MODELS = ("minilm", "bertlab-tiny", "bertlab-mini")
WITH_HEADS = ("bertlab-tiny", "bertlab-mini")
PASSAGE = ("Grace walked along the muddy bank of the river with her brother and their old dog while brown "
           "leaves floated past them on the slow current and a family of ducks paddled close to the far shore "
           "near the village bridge")
PASSAGE_2 = ("Tom went to the bank on Friday afternoon to open his first savings account with the money he had "
             "earned by mowing lawns all summer in his quiet neighborhood and felt proud walking home again")
SENTENCES = ["Grace walked along the muddy bank of the river. | river",
             "The ducks rested on the grassy bank near the water. | river",
             "Tom went to the bank to open a savings account. | money",
             "The bank pays a small amount of interest each year. | money"]


def fit(tok, passage: str, n: int = 32, mask_word: str | None = None) -> str:
    """The longest prefix of `passage` (whole words) that is at most `n` tokens with [CLS] and [SEP]."""
    words = passage.split()
    while len(tok(" ".join(words))) > n:
        words.pop()
    return " ".join(words)


def quantile(xs: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


# ---- cases: each returns (widget, interact(i)) ---------------------------------------------------------

def attention_slider(model, tok):
    w = W.AttentionExplorer(fit(tok, PASSAGE), model=model)
    top = w.layer.max

    def step(i):
        w.layer.value = top if i % 2 == 0 else 0
    return w, step


def attention_text(model, tok):
    texts = [fit(tok, PASSAGE), fit(tok, PASSAGE_2)]
    w = W.AttentionExplorer(texts[1], model=model, layer=1, head=1)

    def step(i):
        w.text.value = texts[i % 2]
    return w, step


def attention_combine(model, tok):
    w = W.AttentionExplorer(fit(tok, PASSAGE), model=model, layer=1)
    w.words.value, w.hide_special.value = True, True      # word level, no [CLS]/[SEP]: the costliest view

    def step(i):
        w.combine.value = "all-sum" if i % 2 == 0 else "layer-mean"
    return w, step


def neuron_control(control: str, values: tuple[int, int]):
    """NeuronExplorer with `control` (the query buttons or the head slider) alternating between `values`."""
    def build(model, tok):
        w = W.NeuronExplorer(fit(tok, PASSAGE), model=model, layer=1, head=1)

        def step(i):
            getattr(w, control).value = values[i % 2]
        return w, step
    return build


def saliency_method(method: str, steps: int = 16):
    def build(model, tok):
        w = W.SaliencyExplorer(fit(tok, PASSAGE.replace(" bank ", " [MASK] ", 1)), model=model, method=method,
                               steps=steps)
        targets = ["bank", "river"]

        def step(i):
            w.target.value = targets[i % 2]              # a new target: the attribution is computed again
        return w, step
    return build


def context_search_layer(model, tok):
    w = W.ContextSearch(fit(tok, PASSAGE), "bank", model=model, layer=-1)
    top = w.layer.max

    def step(i):
        w.layer.value = 1 if i % 2 == 0 else top       # each layer's index is built once (warm-up), then cached
    return w, step


def mask_click(model, tok):
    text = fit(tok, PASSAGE)
    w = W.MaskPlayground(text, model=model, mask=None)
    a, b = w._position_of("bank"), w._position_of("dog")

    def step(i):
        w.tokens.value = a if i % 2 == 0 else b
    return w, step


def masking_redraw(model, tok):
    w = W.MaskingLab(fit(tok, PASSAGE), model=model)
    return w, lambda i: w.redraw.click()


def embedding_text(model, tok):
    texts = [fit(tok, PASSAGE), fit(tok, PASSAGE_2)]
    w = W.EmbeddingSumExplorer(texts[1], "", model=model)

    def step(i):
        w.text.value = texts[i % 2]
    return w, step


def nsp_text(model, tok):
    a = "Grace walked along the muddy bank of the river with her brother."
    bs = ["Brown leaves floated past them on the slow current near the far shore.",
          "The bank pays a small amount of interest on savings every single year."]
    w = W.NSPExplorer(a, bs[1], model=model)

    def step(i):
        w.b.value = bs[i % 2]
    return w, step


def context_slider(model, tok):
    w = W.ContextExplorer("bank", SENTENCES, model=model)
    top = w.layer.max

    def step(i):
        w.layer.value = 0 if i % 2 == 0 else top
    return w, step


def context_sentences(model, tok):
    variants = ["\n".join(SENTENCES), "\n".join(SENTENCES[:3] + ["She sat on the bank and watched the river. | river"])]
    w = W.ContextExplorer("bank", variants[1], model=model)

    def step(i):
        w.sentences.value = variants[i % 2]
    return w, step


PATCH_PAIR = ("He took his money to the [MASK] on the corner early this morning.",     # 16 tokens each
              "He took his boat to the [MASK] on the corner early this morning.")


def patch_click(model, tok):
    """A click on "patch": every (layer, position) of the residual stream, (L + 1) × 16 patched runs."""
    w = W.MinimalPairs(*PATCH_PAIR, model=model)
    assert len(w.tokenizer(PATCH_PAIR[0])) == 16

    def step(i):
        w.direction.value = ("denoise", "noise")[i % 2]       # a new direction: the sweep runs again
        w.patch_button.click()
        w.figure = w.patch_figure                             # what run_case checks: the heatmap is there
    return w, step


def ablation_toggle(model, tok):
    w = W.HeadAblation(fit(tok, PASSAGE.replace(" bank ", " [MASK] ", 1)), model=model)
    w.toggle(0, 0, off=True)                   # one head stays off, so every toggle below needs a forward pass
    last = max(w.heads)

    def step(i):
        w.heads[last].value = i % 2 == 0
    return w, step


class _Replay:
    """SnapshotReplay as run_case reads a widget: `figure`, `error` (it has no model, so no message line)."""

    def __init__(self, replay, tokens: int):
        self.replay, self.error, self.tokens = replay, None, tokens

    @property
    def figure(self):
        return self.replay.figure


def replay_step(model, tok):
    """SnapshotReplay's step slider over 8 snapshots of a 32-token sentence (what ▶ does, one frame each)."""
    from bertlab.pretraining.snapshots import take
    from bertlab.viz.replay import SnapshotReplay

    m, t = W.load_model(model)
    text = fit(t, PASSAGE.replace(" bank ", " [MASK] ", 1))
    shot = take(m, t, text, 0)
    w = SnapshotReplay([dataclasses.replace(shot, step=10 * k) for k in range(8)])
    steps = list(w.step.options)

    def step(i):
        w.step.value = steps[i % len(steps)]
    return _Replay(w, len(shot.tokens)), step


CASES = [  # (widget, interaction, build, models)
    ("AttentionExplorer", "layer-slider", attention_slider, MODELS),
    ("AttentionExplorer", "text", attention_text, MODELS),
    ("MaskPlayground", "mask-click", mask_click, WITH_HEADS),
    ("MaskingLab", "redraw", masking_redraw, MODELS),
    ("EmbeddingSumExplorer", "text", embedding_text, MODELS),
    ("NSPExplorer", "text-b", nsp_text, WITH_HEADS),
    ("ContextExplorer", "layer-slider", context_slider, MODELS),
    ("ContextExplorer", "sentences", context_sentences, MODELS),
    ("HeadAblation", "toggle-head", ablation_toggle, MODELS),
    ("AttentionExplorer", "combine-words", attention_combine, MODELS),
    ("NeuronExplorer", "query-click", neuron_control("query", (3, 9)), MODELS),
    ("NeuronExplorer", "head-slider", neuron_control("head", (0, 1)), MODELS),
    ("SaliencyExplorer", "target-gradient", saliency_method("gradient"), WITH_HEADS),
    ("SaliencyExplorer", "target-ig16", saliency_method("integrated_gradients", 16), WITH_HEADS),
    ("ContextSearch", "layer-slider", context_search_layer, MODELS),
    ("MinimalPairs", "patch-resid-16", patch_click, WITH_HEADS),
    ("SnapshotReplay", "step-slider", replay_step, WITH_HEADS),
]

# cases with their own target (p95): a patching sweep is (L + 1) × T forward rows, integrated gradients a
# forward and a backward pass of steps + 2 rows; every other interaction should feel instant (≤ 100 ms)
TARGETS_MS = {"SaliencyExplorer/bertlab-mini/target-ig16": 200.0, "MinimalPairs/bertlab-mini/patch-resid-16": 1000.0,
              "MinimalPairs/bertlab-tiny/patch-resid-16": 1000.0}


def run_case(build, name: str, interactions: int, warmup: int) -> dict:
    model, tok = W.load_model(name)
    w, step = build(name, tok)
    if w.error:
        raise RuntimeError(f"{type(w).__name__} did not start cleanly: {w.error}")
    for i in range(warmup):
        step(i)
    meter = C.CpuMeter()
    a = meter.snapshot()
    times = []
    for i in range(warmup, warmup + interactions):
        t0 = time.perf_counter()
        step(i)
        times.append((time.perf_counter() - t0) * 1e3)
        if (w.figure is None and getattr(w, "html", None) is None) or w.error:
            raise RuntimeError(f"{type(w).__name__} failed on interaction {i}: {w.error}")
    b = meter.snapshot()
    others, _ = meter.others(a, b)
    tokens = _tokens(w)
    return dict(p50_ms=round(quantile(times, 0.5), 2), p95_ms=round(quantile(times, 0.95), 2),
                max_ms=round(max(times), 2), mean_ms=round(statistics.fmean(times), 2), tokens=tokens,
                interactions=interactions, others_cores=round(others, 2))


def _tokens(w) -> int | str:
    if isinstance(w, _Replay):
        return w.tokens
    if hasattr(w, "text_a"):
        return len(w.tokenizer(w.text_a.value))
    if hasattr(w, "text"):
        return len(w.tokenizer(w.text.value, getattr(w, "text_pair", None) and w.text_pair.value or None))
    if hasattr(w, "a"):
        return len(w.tokenizer(w.a.value, w.b.value))
    if hasattr(w, "contexts"):
        return "/".join(str(len(w.tokenizer(s))) for s in w.contexts)
    return "?"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated, from minilm, bertlab-tiny, bertlab-mini")
    p.add_argument("--widgets", default=None, help="comma-separated widget class names (default: all)")
    p.add_argument("--interactions", type=int, default=50, help="timed interactions per case")
    p.add_argument("--warmup", type=int, default=5, help="untimed interactions first")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's own)")
    p.add_argument("--json", default=None, metavar="FILE", help='write rows {"case", "p50_ms", "p95_ms", ...}')
    p.add_argument("--markdown", action="store_true", help="print the table as markdown")
    p.add_argument("--browser", action="store_true",
                   help="time in Chromium instead, change → drawn figure, in JupyterLab (bench/widgets_browser.py)")
    p.add_argument("--baseline", default=None, metavar="REV",
                   help="with --browser: also measure bertlab as of this git commit (git archive), in turns with "
                        "this checkout, view by view")
    p.add_argument("--front", default="lab", choices=["lab", "nb7"],
                   help="with --browser: JupyterLab 4 (lab, the default) or Notebook 7 (nb7)")
    p.add_argument("--no-local-baseline", action="store_true",
                   help="with --baseline: the baseline's page does not answer changes itself (runtime.js local "
                        "answers off), to measure what they save on the same code")
    return p.parse_args(argv)


def _export(rev: str) -> Path:
    """bertlab as of `rev`, exported with `git archive` into a temporary folder (not a worktree)."""
    import subprocess
    import tempfile
    dest = Path(tempfile.mkdtemp(prefix="bertlab-baseline-"))
    archive = subprocess.run(["git", "-C", str(HERE.parent), "archive", rev, "bertlab"], capture_output=True)
    if archive.returncode:
        sys.exit(f"--baseline {rev}: git archive failed: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def browser_main(args) -> int:
    """--browser: the views in Chromium, this checkout (and --baseline's), rows and a table."""
    import shutil

    import widgets_browser
    baseline = _export(args.baseline) if args.baseline else None
    info = C.machine_info(torch.device("cpu"))
    C.log(C.machine_header(info))
    try:
        rows = widgets_browser.run(interactions=args.interactions, log=C.log, baseline=baseline,
                                   only=set(args.widgets.split(",")) if args.widgets else None,
                                   baseline_local=not args.no_local_baseline, front=args.front)
    finally:
        if baseline:
            shutil.rmtree(baseline, ignore_errors=True)
    targets = {"AttentionExplorer/512": 150.0}
    for r in rows:
        r["target_ms"] = targets.get(r["case"].split(" ")[0], TARGET_MS)
        r["baseline_rev"] = args.baseline if r["tree"] == "baseline" else None
    table = [(r["case"], r["tree"] if r["tree"] == "this" else f"{args.baseline}", f"{r['p50_ms']:.1f}",
              f"{r['p95_ms']:.1f}", f"{'yes' if r['p95_ms'] <= r['target_ms'] else 'no'} (≤ {r['target_ms']:.0f})",
              f"{r['local']}/{r['n']}", r["recv_ms"], r["draw_ms"], r["py_ms"], r["kernel_cpu_ms"],
              r["server_cpu_ms"], r["page_cpu_ms"], f"{r['load']:.1f}") for r in rows]
    print(C.machine_header(info) + f"; front end: {'JupyterLab 4' if args.front == 'lab' else 'Notebook 7'}")
    print(C.format_table(["view (change)", "bertlab", "p50 ms", "p95 ms", "p95 on target (ms)", "in page",
                          "recv ms", "draw ms", "python ms", "kernel CPU", "server CPU", "page CPU", "load"],
                         table, markdown=args.markdown))
    if args.json:
        C.write_json(args.json, rows)
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.browser:
        return browser_main(args)
    if args.threads:
        torch.set_num_threads(args.threads)
    models = [m for m in args.models.split(",") if m]
    unknown = set(models) - set(MODELS)
    if unknown:
        sys.exit(f"--models: unknown {', '.join(sorted(unknown))}; choose from {', '.join(MODELS)}")
    widgets = set(args.widgets.split(",")) if args.widgets else None
    for name in models:
        W.load_model(name)  # load once, outside the timings
    info = C.machine_info(torch.device("cpu"))
    C.log(C.machine_header(info))
    rows = []
    for widget, what, build, supported in CASES:
        if widgets and widget not in widgets:
            continue
        for name in models:
            if name not in supported:
                continue
            case = f"{widget}/{name}/{what}"
            r = run_case(build, name, args.interactions, args.warmup)
            C.log(f"{case}: p50 {r['p50_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms, max {r['max_ms']:.1f} ms, "
                  f"{r['tokens']} tokens, others used {r['others_cores']:.2f} cores")
            rows.append(dict(case=case, target_ms=TARGETS_MS.get(case, TARGET_MS), **r))
    table = [(r["case"], r["tokens"], f"{r['p50_ms']:.1f}", f"{r['p95_ms']:.1f}",
              f"{'yes' if r['p95_ms'] <= r['target_ms'] else 'no'} (≤ {r['target_ms']:.0f})") for r in rows]
    print(C.machine_header(info))
    print(C.format_table(["case", "tokens", "p50 ms", "p95 ms", "p95 on target (ms)"], table,
                         markdown=args.markdown))
    if args.json:
        C.write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
