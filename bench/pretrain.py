"""One pre-training step (forward, backward, AdamW) of bertlab against transformers' BertForPreTraining.

    .venv/bin/python bench/pretrain.py                        # mini, batch 32 × 128, fp32 and bf16 autocast
    .venv/bin/python bench/pretrain.py --preset base --cases bf16 --device cuda --json bench/results/pretrain-gpu.json

Same weights (copied), same batch (15 % of tokens masked, NSP labels), same optimizer settings, in one process,
alternating bertlab and reference steps, medians of at least 5. The difference being measured is the one
bertlab makes on purpose: the MLM head projects only the ~15 % masked positions onto the vocabulary, where
the reference projects all of them and then ignores 85 % in the loss.

Model FLOPs per token (for the share-of-peak column, the same useful work for both sides):
    3 × forward encoder FLOPs (forward + backward ≈ 3 × forward)  +  3 × 2 × (H² + H·V) × mask rate
i.e. the MLM transform and decoder counted only where a loss exists. The reference does more work than
this; it is not credited for it.

Two roofs. "Peak" is a 2048² matmul, what the CPU's BLAS reaches on a large square product. A small model's
step never multiplies such shapes: its matmuls are (B·T, H) × (H, H), per-head (T, Dh) × (Dh, T) and so on, and
on a 2-core CPU those reach a fraction of the peak. So the step's own matmuls are also timed alone (forward,
and the two backward products of each), and their FLOPs over their summed time is the "shapes' ceiling":
the FLOP/s a step could reach if it did nothing but its matmuls. "Share of ceiling" is read against that.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
from pathlib import Path

import torch

from bertlab.optim import clip_and_step

sys.path.insert(0, str(Path(__file__).resolve().parent))
from forward import flops_per_token  # noqa: E402

import _common as C  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="mini", help="model size (default mini)")
    p.add_argument("--cases", default="fp32,bf16", type=lambda s: s.split(","), help="fp32, bf16 (autocast)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--repeats", type=int, default=5, help="timed steps per side (at least 5)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--device", default=None)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--max-others", type=float, default=0.25,
                   help="re-run a round when other processes used more cores than this")
    p.add_argument("--json", default=None, help="write the rows to this file")
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    if args.repeats < 5:
        p.error("--repeats must be at least 5")
    return args


def step_matmuls(cfg, batch: int, seq_len: int, n_masked: int) -> list[tuple[int, int, int, int]]:
    """Every matmul of one forward pass as (m, k, n, how many): (m, k) @ (k, n)."""
    H, L, T, V = cfg.hidden_size, cfg.num_hidden_layers, seq_len, cfg.vocab_size
    heads, Dh, F = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads, cfg.intermediate_size
    BT = batch * T
    return [(BT, H, H, 4 * L),                    # q, k, v and the output projection, per layer
            (T, Dh, T, batch * heads * L),        # scores: q @ kᵀ, per example and head
            (T, T, Dh, batch * heads * L),        # context: pattern @ v
            (BT, H, F, L), (BT, F, H, L),         # the feed-forward block
            (batch, H, H, 1), (batch, H, 2, 1),   # pooler, NSP
            (n_masked, H, H, 1), (n_masked, H, V, 1)]   # MLM transform and decoder, at the masked positions


def shapes_ceiling(shapes, device, dtype=torch.float32, repeats: int = 5) -> float:
    """FLOP/s of `shapes` (forward, and both backward products of each: dX = dY Wᵀ, dW = Xᵀ dY) timed one
    by one: total FLOPs over total median time. What a step made only of its own matmuls could reach."""
    g = torch.Generator(device="cpu").manual_seed(0)
    flops = seconds = 0.0
    for m, k, n, count in shapes:
        for a_shape, b_shape in (((m, k), (k, n)), ((m, n), (n, k)), ((k, m), (m, n))):
            a = torch.randn(*a_shape, generator=g).to(device=device, dtype=dtype)
            b = torch.randn(*b_shape, generator=g).to(device=device, dtype=dtype)
            with torch.inference_mode():
                (times,) = C.time_alternating([lambda: torch.mm(a, b)], device, repeats, 2).times
            flops += 2 * m * k * n * count
            seconds += C.median(times) * count
    return flops / seconds


def build(preset: str, device):
    import transformers

    import bertlab

    config = bertlab.BertConfig.preset(preset)
    ours = bertlab.BertForPreTraining(config, device=device).train()
    ref = transformers.BertForPreTraining(transformers.BertConfig(**config.to_dict(), attn_implementation="sdpa"))
    state = {k: v for k, v in ours.state_dict().items()}
    missing, unexpected = ref.load_state_dict(state, strict=False)
    missing = [k for k in missing if k not in ("cls.predictions.decoder.bias", "cls.predictions.decoder.weight")]
    if missing or unexpected:
        sys.exit(f"weight copy incomplete: missing {missing}, unexpected {unexpected}")
    ref.to(device).train()
    return ours, ref


def make_batch(vocab: int, batch: int, seq_len: int, device, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(999, vocab, (batch, seq_len), generator=g)
    ids[:, 0], ids[:, -1], ids[:, seq_len // 2] = 101, 102, 102
    token_type = torch.zeros_like(ids)
    token_type[:, seq_len // 2 + 1:] = 1
    chosen = torch.rand(ids.shape, generator=g) < 0.15
    chosen[:, 0] = chosen[:, -1] = chosen[:, seq_len // 2] = False
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    inputs = torch.where(chosen, torch.full_like(ids, 103), ids)  # [MASK]
    nsp = torch.randint(0, 2, (batch,), generator=g)
    return {k: v.to(device) for k, v in dict(input_ids=inputs, token_type_ids=token_type,
                                             attention_mask=torch.ones_like(ids), labels=labels,
                                             next_sentence_label=nsp).items()}


def adamw(model):
    """The trainer's optimizer (bertlab.optim.adamw: no decay on biases and LayerNorm, batched updates), for
    both sides, so the comparison is the models' and the share of peak is what `bertlab.pretrain` steps at."""
    from bertlab.optim import adamw as trainer_adamw
    return trainer_adamw(model, lr=1e-4, weight_decay=0.01, eps=1e-6)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = C.pick_device(args.device)
    import transformers
    transformers.utils.logging.set_verbosity_error()

    info = C.machine_info(device)
    header = C.machine_header(info)
    C.log(f"pre-training step benchmark on {header}")
    peak_dtypes = {"fp32": torch.float32, **({"bf16": torch.bfloat16} if "bf16" in args.cases else {})}
    peaks = {k: C.matmul_peak(device, dt) for k, dt in peak_dtypes.items()}
    C.log("matmul peak " + ", ".join(f"{k} {v / 1e9:.1f} GFLOP/s" for k, v in peaks.items()))

    ours, ref = build(args.preset, device)
    cfg = ours.config
    batch = make_batch(cfg.vocab_size, args.batch, args.seq_len, device)
    mask_rate = float((batch["labels"] != -100).float().mean())
    tokens = args.batch * args.seq_len
    fpt = 3 * flops_per_token(cfg, args.seq_len) + 3 * 2 * (cfg.hidden_size ** 2 + cfg.hidden_size * cfg.vocab_size) * mask_rate
    opt_ours, opt_ref = adamw(ours), adamw(ref)
    shapes = step_matmuls(cfg, args.batch, args.seq_len, int((batch["labels"] != -100).sum()))
    ceilings = {k: shapes_ceiling(shapes, device, dt) for k, dt in peak_dtypes.items()}
    C.log("the step's own matmul shapes reach " + ", ".join(f"{k} {v / 1e9:.1f} GFLOP/s" for k, v in ceilings.items()))

    # loss agreement before timing: the same weights and batch must give the same loss (dropout off for the check)
    ours.eval(); ref.eval()  # noqa: E702
    with torch.no_grad():
        l_ours = ours(**batch).loss.item()
        l_ref = ref(**batch).loss.item()
    ours.train(); ref.train()  # noqa: E702
    if abs(l_ours - l_ref) > 1e-3 * max(1.0, abs(l_ref)):
        sys.exit(f"losses disagree before timing: bertlab {l_ours:.6f}, transformers {l_ref:.6f}")
    C.log(f"[{args.preset}] losses agree: {l_ours:.5f} vs {l_ref:.5f}; {mask_rate:.1%} of tokens masked")

    rows = []
    for case in args.cases:
        autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if case == "bf16" else contextlib.nullcontext

        def step(model, opt, autocast=autocast):
            def run():
                opt.zero_grad(set_to_none=True)
                with autocast():
                    loss = model(**batch).loss
                loss.backward()
                clip_and_step(model, opt, 1.0)
            return run

        timing = C.time_alternating([step(ours, opt_ours), step(ref, opt_ref)], device, args.repeats, args.warmup,
                                    max_others=args.max_others)
        t_ours, t_ref = (C.median(t) for t in timing.times)
        peak = peaks["bf16" if case == "bf16" else "fp32"]
        row = {"case": f"{args.preset}/{case}", "bertlab_tok_s": tokens / t_ours, "reference_tok_s": tokens / t_ref,
               "ratio": t_ref / t_ours, "peak_share": tokens / t_ours * fpt / peak,
               "reference_peak_share": tokens / t_ref * fpt / peak, "bertlab_ms": t_ours * 1e3,
               "shapes_ceiling_flops": ceilings["bf16" if case == "bf16" else "fp32"],
               "ceiling_share": tokens / t_ours * fpt / ceilings["bf16" if case == "bf16" else "fp32"],
               "reference_ms": t_ref * 1e3, "repeats": len(timing.times[0]), "discarded_rounds": timing.discarded,
               "others_cores": timing.others, "flops_per_token": fpt, "batch": args.batch, "seq_len": args.seq_len,
               "device": info["device_name"], "threads": info["threads"]}
        rows.append(row)
        C.log(f"  {row['case']:<12} bertlab {t_ours * 1e3:8.1f} ms/step   reference {t_ref * 1e3:8.1f} ms/step   "
              f"ratio {row['ratio']:.2f}   ({row['repeats']} steps each, {timing.discarded} rounds discarded)")
        gc.collect()

    print(f"bertlab pre-training step vs transformers BertForPreTraining — {header}")
    print(f"{args.preset}, batch {args.batch} × {args.seq_len} tokens, forward + backward + AdamW; median of "
          f"≥ {args.repeats} alternating steps; ratio = reference time / bertlab time")
    print("matmul peak " + ", ".join(f"{k} {v / 1e9:.1f} GFLOP/s" for k, v in peaks.items())
          + "; share of peak = model FLOPs/s (MLM head counted at masked positions only) ÷ peak")
    print("the step's own matmul shapes, alone: " + ", ".join(f"{k} {v / 1e9:.1f} GFLOP/s" for k, v in ceilings.items())
          + "; share of ceiling = model FLOPs/s ÷ that")
    print()
    table = [(r["case"], f"{r['bertlab_tok_s']:,.0f}", f"{r['reference_tok_s']:,.0f}", f"{r['ratio']:.2f}",
              f"{r['peak_share']:.0%}", f"{r['reference_peak_share']:.0%}", f"{r['ceiling_share']:.0%}") for r in rows]
    print(C.format_table(["case", "bertlab tok/s", "reference tok/s", "ratio", "bertlab share of peak",
                          "reference share", "bertlab share of ceiling"], table, markdown=args.markdown))
    misses = [r["case"] for r in rows if r["ratio"] < 2.0]
    print()
    print("target (ratio ≥ 2.0): " + ("met" if not misses else "missed on " + ", ".join(misses)))
    if args.json:
        C.log(f"wrote {len(rows)} rows to {C.write_json(args.json, rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
