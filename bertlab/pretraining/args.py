"""A pre-training run's settings, declared once: each field's default, help, range and whether resume may change it.

`bertlab pretrain`'s flags are generated from these fields (cli.py), `checks.check_given` holds a given value to
its range before anything loads, `runfolder.resumed_args` lets a resumed run change only the resumable ones, and
the README's flag list is `bertlab pretrain --help`. The mechanism is bertlab/settings.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..settings import Range, setting
from . import snapshots

# the ranges in which each number means something; what the number is, said in the error
WHOLE_1 = dict(whole=True, low=1)
DROPOUT = Range(low=0, high=1, what="a dropout probability in [0, 1)", optional=True)
SIZE = Range(whole=True, low=1, what="a size of the model", optional=True)


@dataclass
class PretrainArgs:
    """Everything that defines a run. Saved in every checkpoint, so `resume` needs only the output folder.

    Each field is a flag of `bertlab pretrain` (`max_len` is `--max-len`): its metadata holds that flag's help,
    the range its value must lie in, and whether `resume` may change it (bertlab/settings.py), so the command
    line, `pretrain(...)`, the checks and resume are one list and cannot drift apart.
    """
    corpus: list[str] = setting(help="text files or folders (with --resume: only if the run's corpus has moved, "
                                     "to say where it is now)")
    out: str = setting(help="output folder: the model, metrics.jsonl, checkpoints/")
    preset: str = setting("tiny", "model size: tiny (L2/H128), mini (L4/H256), small, medium, base, large")
    steps: int = setting(1000, "optimizer steps to train to (with --resume: the new total)",
                         range=Range(**WHOLE_1, what="optimizer steps"), resumable=True)
    batch_size: int = setting(32, "sequences per optimizer step, over all processes",
                              range=Range(**WHOLE_1, what="sequences per step"))
    grad_accum: int = setting(1, "micro-batches per step (batch_size / grad_accum sequences per forward pass)",
                              range=Range(**WHOLE_1, what="micro-batches per step"))
    max_len: int = setting(128, "tokens per sequence, [CLS] A [SEP] B [SEP] included",
                           range=Range(whole=True, low=5, high=2**16, what="tokens per sequence ([CLS] A [SEP] B "
                                                                             "[SEP] needs 5; BERT's own 512)"))
    lr: float = setting(1e-4, "peak learning rate (paper: 1e-4; tiny models like 5e-4 to 1e-3)",
                        range=Range(low=0, low_ok=False, what="the peak learning rate, e.g. 1e-4"))
    warmup: float = setting(0.1, "the share of --steps spent warming up linearly, then linear decay to zero "
                                 "(the paper: 10,000 of 1,000,000 steps)",
                            range=Range(low=0, high=1, what="the share of the steps spent warming up, e.g. 0.1"))
    weight_decay: float = setting(0.01, "AdamW weight decay, not applied to biases and LayerNorm",
                                  range=Range(low=0, what="AdamW's decoupled weight decay, e.g. 0.01; a negative "
                                                          "one grows the weights"))
    clip: float = setting(1.0, "gradient-norm clipping threshold",
                          range=Range(low=0, low_ok=False, what="the gradient-norm threshold, e.g. 1.0; a negative "
                                                                 "one reverses the gradient"))
    mask_probability: float = setting(0.15, "share of tokens chosen for masked LM",
                                      range=Range(low=0, low_ok=False, high=1, what="the share of tokens masked, "
                                                                                    "e.g. 0.15"))
    mask_mode: str = setting("dynamic", "dynamic: every token chosen independently, re-drawn each batch; "
                                        "bert: Google's exact count per sequence")
    whole_word: bool = setting(False, "mask all WordPieces of a word together")
    max_predictions: int = setting(20, "cap on chosen tokens per sequence in --mask-mode bert",
                                   range=Range(**WHOLE_1, what="masked tokens per sequence in --mask-mode bert"))
    nsp_balance: bool = setting(False, "exactly 50/50 IsNext/NotNext pairs (Google's recipe gives fewer IsNext "
                                       "on short documents)")   # make_pairs(balance=True); Google: ~55 / 45
    init: str | None = setting(None, "continue pre-training from a checkpoint folder or bundled name (e.g. "
                                     "minilm): its sizes, encoder weights and tokenizer; missing MLM/NSP heads "
                                     "start fresh")
    tokenizer: str | None = setting(None, "vocab.txt, tokenizer.json or a folder; default: train a WordPiece "
                                          "vocabulary on the corpus")
    vocab_size: int = setting(8000, "vocabulary size when training a tokenizer",
                              range=Range(whole=True, low=6, high=2**20, what="tokens in a trained vocabulary (the "
                                                                               "5 specials and more; BERT's own has "
                                                                               "30,522)"))
    lowercase: bool = setting(True, "lowercase text when training a tokenizer")
    strip_accents: bool | None = setting(None, "strip accents when training a tokenizer (default: with "
                                               "--lowercase; --no-strip-accents keeps Hangul syllables whole)")
    layers: int | None = setting(None, "override the preset's number of layers", range=SIZE)
    hidden: int | None = setting(None, "override the preset's hidden size (the feed-forward size follows at 4x "
                                       "unless --intermediate)", range=SIZE)
    heads: int | None = setting(None, "override the preset's number of attention heads (must divide the hidden "
                                      "size; default with --hidden: hidden / 64)", range=SIZE)
    intermediate: int | None = setting(None, "override the preset's feed-forward size", range=SIZE)
    hidden_dropout: float | None = setting(None, "override the preset's hidden dropout (0.1)", range=DROPOUT)
    attention_dropout: float | None = setting(None, "override the preset's attention dropout (0.1)", range=DROPOUT)
    max_position_embeddings: int | None = setting(None, "learned positions (default: --max-len)",  # more: never trained
                                                  range=SIZE)
    seed: int = setting(0, "seed for initialisation, data order, pairs and masks",
                        range=Range(whole=True, low=0, high=2**63 - 1, high_ok=True, what="the random seed"))
    save_every: int = setting(500, "write a checkpoint every N steps (also at the end and on Ctrl-C)",
                              range=Range(**WHOLE_1, what="steps between checkpoints"), resumable=True)
    keep_checkpoints: int = setting(2, "how many recent checkpoints to keep",
                                    range=Range(**WHOLE_1, what="checkpoints kept"), resumable=True)
    log_every: int = setting(10, "append a line to DIR/metrics.jsonl every N steps",
                             range=Range(**WHOLE_1, what="steps between log lines"), resumable=True)
    eval_corpus: list[str] | None = setting(None, "held-out text files or folders, scored at the end (MLM top-1, "
                                                  "NSP accuracy)", resumable=True)
    bf16: bool | None = setting(None, "bfloat16 autocast (default: on for CUDA, off for the CPU)")
    compile: bool = setting(False, "torch.compile the model")
    fused_adamw: bool = setting(False, "AdamW as one fused kernel per step: faster, but it rounds differently "
                                       "from the default (foreach), so numbers differ in the last bits")
    device: str | None = setting(None, "cpu, cuda, cuda:1 … (default: cuda if available)", resumable=True)
    progress: bool = setting(True, "show a progress bar", resumable=True)
    snapshot_every: int = setting(0, "every N steps (and at step 0), record attention, [MASK] guesses and "
                                     "similarity for --snapshot-text in DIR/snapshots.jsonl (0: never)",
                                  range=Range(whole=True, low=0, what="the whole number of steps between snapshots "
                                                                       "(0: none)"), resumable=True)
    snapshot_text: str = setting(snapshots.DEFAULT_TEXT, "the sentence snapshots look at (one [MASK] or more "
                                                         "for guesses)")


# the one spelling each renamed setting now has: an old name is refused with a message that says the new one
RENAMED = {"warmup_steps": "warmup (the share of --steps spent warming up, e.g. 0.1; was a count of steps)"}

