"""ONNX export: a bertlab model as one file that ONNX Runtime runs anywhere, the reader's browser included.

    bertlab.export_onnx(model, tokenizer, "site/model")            # or: bertlab export --onnx DIR
    # → DIR/model.onnx, DIR/tokenizer.json, DIR/bertlab-model.json (what the file holds and how well it matches)

The exported graph is bertlab's own forward, run on one sentence (or pair) at a time with every token real,
so there is no attention mask to pass. What it returns is everything the book's live views draw:

    inputs   input_ids (B, T), token_type_ids (B, T)          int64, T any length up to max_position
             positions (N,)                                    int64: the token positions to guess (N may be 0)
             lens_positions (M,)                               int64: the positions to read through every layer
    outputs  mlm_logits     (B·N, V)        the MLM head at `positions` (all T of them: pass 0 … T-1), rows in
                                            (batch, position) order
             lens_logits    (B·L·M, V)      the same head on every layer's output at `lens_positions` (the logit
                                            lens), rows in (batch, layer, position) order; its last layer's rows
                                            equal mlm_logits at the same positions
             nsp_logits     (B, 2)          0 = IsNext, 1 = NotNext (a model with an NSP head only)
             attentions     (B, L, heads, T, T)
             hidden_states  (B, L + 1, T, H) the embeddings' output first, then every layer
             token, segment, position (B, T, H)  the three parts of the input embedding sum

Why guesses only at `positions`: the MLM decoder is the model's largest matrix (V × H); scoring every token
would cost more than the whole encoder at a sentence's length, and a page only shows the [MASK]s. The lens
has its own positions for the same reason: L decoders for a view that does not draw them cost as much again.

Why the TorchScript exporter (`dynamo=False`): it needs only the `onnx` package, takes this plain-PyTorch
forward as it is and writes a graph with a dynamic length in seconds. The newer exporter also needs
`onnxscript`; it can replace this one when the old one goes.

dtype: "fp32" stores the weights inside model.onnx as float32; "fp16" stores them beside it as float16
(weights.fp16), which the runner widens back to float32 before the graph runs (the sums stay float32),
halving the download. bertlab-mini was saved in bfloat16,
whose every value float16 holds exactly, so for it fp16 loses nothing; for any model the manifest records
the largest difference from bertlab's forward, measured at export on a sentence with ONNX Runtime.

Why no int8 (measured by `python bench/live.py --int8` on bertlab-mini, 20 sentences and 5 pairs): ONNX
Runtime's `quantize_dynamic` writes a graph ONNX Runtime refuses (the tied decoder, a Gemm reading the
token-embedding table, becomes a MatMulInteger of the wrong shape); weight-only int8 (a scale per row) would
store the weights in 19.8 MB instead of 39.2 MB but keeps the same top 5 on only 14 of 20 sentences and moves
attention by up to 0.076 and P(IsNext) by up to 0.031, where the page promises Python's guesses and 1e-3.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import shutil
import tempfile
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from . import files
from .model.bert import Bert
from .model.heads import BertForMaskedLM, BertForPreTraining
from .tokenizer import Tokenizer

__all__ = ["export_onnx", "OnnxExport", "DTYPES", "MANIFEST"]

logger = logging.getLogger(__name__)
_EXPORTING = threading.Lock()

DTYPES = ("fp32", "fp16")
MANIFEST = "bertlab-model.json"
MODEL_FILE = "model.onnx"
WEIGHTS_FILE = "weights.fp16"    # fp16 exports: the weights, float16, in the graph's order
WEIGHTS_AS = "weights.bin"       # the name the graph gives them (as float32), which the page supplies
OPSET = 17
CHECK_TEXT = ("a sentence the export was not traced with , [MASK] and all .", "the second one checks the pair .")
INPUTS = ("input_ids", "token_type_ids", "positions", "lens_positions")
EXPORT_FILES = (MODEL_FILE, WEIGHTS_FILE, "tokenizer.json", MANIFEST)   # what an export writes, and replaces
OUTPUTS = ("mlm_logits", "lens_logits", "nsp_logits", "attentions", "hidden_states", "token", "segment", "position")


@dataclass
class OnnxExport:
    """What `export_onnx` wrote and measured."""
    dir: Path
    dtype: str
    size_bytes: int               # model.onnx
    outputs: list[str]
    max_abs_diff: dict[str, float] | None   # per output, ONNX Runtime vs bertlab on CHECK_TEXT; None without onnxruntime

    @property
    def model(self) -> Path:
        return self.dir / MODEL_FILE


class _Graph(nn.Module):
    """The forward that is exported: bertlab's modules called in bertlab's order, with every output stacked.

    It skips `Bert.forward`'s input checks (they read values, which a graph cannot) and the padding mask
    (one unpadded sequence); the page checks its inputs itself before it runs the graph.
    """

    def __init__(self, model):
        super().__init__()
        self.bert: Bert = model.bert
        self.mlm = model.cls.predictions
        self.nsp = model.cls.seq_relationship if isinstance(model, BertForPreTraining) else None

    def _guess(self, states):
        """The MLM head on (..., H) states, run on them as one (n, H) matrix and returned as one (n, V).

        On a matrix the exporter writes the tied decoder as Gemm(transB=1), which reads the token-embedding
        table as it is: the file holds it once and nothing transposes it when the page opens the model. The
        rows stay flat because ONNX's Reshape reads a 0 in a shape as "keep this dimension", so a shape with
        no guesses in it (N = 0) could not be written back."""
        return self.mlm(states.reshape(-1, states.shape[-1]))            # (n, V)

    def forward(self, input_ids, token_type_ids, positions, lens_positions):
        parts = self.bert.embeddings(input_ids, token_type_ids)
        last, hidden, attn = self.bert.encoder(parts.normed, None, output_attentions=True, output_hidden_states=True)
        hidden_states = torch.stack(hidden, dim=1)                       # (B, L + 1, T, H)
        attentions = torch.stack(attn, dim=1)                            # (B, L, heads, T, T)
        mlm_logits = self._guess(last.index_select(1, positions))         # (B·N, V)
        lens_logits = self._guess(hidden_states[:, 1:].index_select(2, lens_positions))   # (B·L·M, V)
        out = [mlm_logits, lens_logits]
        if self.nsp is not None:
            out.append(self.nsp(self.bert.pooler(last)))                 # (B, 2)
        return (*out, attentions, hidden_states, parts.token, parts.segment, parts.position)


def _check_model(model):
    if not isinstance(model, (BertForPreTraining, BertForMaskedLM)):
        kind = type(model).__name__
        why = ("a bare encoder" if isinstance(model, Bert) else
               "a fine-tuned task head" if isinstance(getattr(model, "bert", None), Bert) else "not a bertlab model")
        raise ValueError(f"{kind} is {why}: the export needs a masked-LM head (BertForPreTraining or "
                         "BertForMaskedLM), e.g. bertlab.load('bertlab-mini')")
    if isinstance(model, BertForPreTraining) and model.bert.pooler is None:
        raise ValueError("this BertForPreTraining has no pooler, so its NSP head has no input: rebuild it with one")
    if model.config.is_decoder:
        raise ValueError("a causal (is_decoder=True) model is not exported: the page's views assume BERT's "
                         "bidirectional attention")


def _prepare_dir(out) -> Path:
    """`out` as an empty folder or one a previous export wrote (replaced); never a file, link or someone's folder."""
    if not isinstance(out, (str, os.PathLike)) or not str(out):
        raise ValueError(f"out must be a folder path, got {out!r}")
    out = Path(out)
    if out.is_symlink():
        raise files.LinkRefused(f"{out} is a symbolic link: pass a real folder for the export (a link could send "
                                "the files anywhere)")
    if out.exists():
        if not out.is_dir():
            raise NotADirectoryError(f"{out} is a file: pass a folder for the export")
        entries = list(out.iterdir())
        if entries and not (out / MANIFEST).is_file():
            raise FileExistsError(f"{out} is not empty and holds no earlier export ({MANIFEST}): pass a new or "
                                  "empty folder (an export written there before is replaced)")
        for e in entries:
            if e.is_symlink() or not e.is_file():
                raise FileExistsError(f"{e} is not a plain file: {out} holds more than an export; pass a new folder")
            # the export replaces only what an export writes: a file of the user's beside it is never deleted
            if e.name not in EXPORT_FILES:
                raise FileExistsError(f"{e} was not written by an export: {out} holds more than an export, and "
                                      "replacing the export would delete it; move it away or pass a new folder")
    else:
        above = next((p for p in out.parents if p.exists()), None)
        if above is not None and not above.is_dir():
            raise NotADirectoryError(f"{above} is a file, so no folder {out} can be made under it: pass a folder "
                                     "path whose parents are folders")
    return out


def _check_finite(model) -> None:
    """A weight that is nan or ±inf would be written into the file and make every page that uses it show nan."""
    for name, p in model.named_parameters():
        if p.is_floating_point() and not bool(torch.isfinite(p).all()):
            raise ValueError(f"the model's weight {name} holds nan or inf: such a model computes nan, so it is not "
                             "exported; load or train it again")


def _to_fp16(model_path: Path, weights_path: Path) -> None:
    """Move every float32 weight out of the graph into `weights_path` as float16, one after another.

    The graph keeps float32 weights stored outside it (ONNX's external data, at the offsets a float32 file
    `WEIGHTS_AS` would have), so whoever runs it widens the float16 file to float32 first: the page does that
    in a few lines of JavaScript (bertlab-live.mjs), `session()` below in numpy. Why not float16 inside the
    graph with casts: ONNX Runtime Web then spends seconds folding the casts when the page opens."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    proto = onnx.load(str(model_path))
    chunks, offset = [], 0
    for init in proto.graph.initializer:
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        arr = numpy_helper.to_array(init).astype(np.float32)
        if arr.size and np.abs(arr).max() > np.finfo(np.float16).max:
            raise ValueError(f"weight {init.name} holds values beyond float16's range (±65504): export with "
                             "dtype='fp32'")
        chunks.append(arr.astype(np.float16).tobytes())
        init.ClearField("raw_data")
        del init.float_data[:]
        init.data_location = onnx.TensorProto.EXTERNAL
        del init.external_data[:]
        for key, value in (("location", WEIGHTS_AS), ("offset", str(4 * offset)), ("length", str(4 * arr.size))):
            init.external_data.add(key=key, value=value)
        offset += arr.size
    onnx.save(proto, str(model_path))
    weights_path.write_bytes(b"".join(chunks))


def session(folder):
    """An ONNX Runtime session (CPU) over an export folder: fp32 as it is, fp16 with its weights widened to
    float32 in a temporary folder, as the page does."""
    import numpy as np
    import onnxruntime as ort

    folder = Path(folder)
    manifest = read_manifest(folder)
    if not manifest.get("weights"):
        return ort.InferenceSession(str(folder / MODEL_FILE), providers=["CPUExecutionProvider"])
    with tempfile.TemporaryDirectory(prefix="bertlab-onnx-") as tmp:
        shutil.copyfile(folder / MODEL_FILE, Path(tmp) / MODEL_FILE)
        half = np.fromfile(folder / manifest["weights"]["file"], dtype=np.float16)
        half.astype(np.float32).tofile(Path(tmp) / WEIGHTS_AS)
        return ort.InferenceSession(str(Path(tmp) / MODEL_FILE), providers=["CPUExecutionProvider"])


def _feeds(tokenizer: Tokenizer, text: str, pair: str | None = None):
    enc = tokenizer(text, pair)
    ids = torch.tensor([enc.input_ids])
    every = torch.arange(ids.shape[1])
    return ids, torch.tensor([enc.token_type_ids]), every, every


@torch.no_grad()
def reference_outputs(model, ids, token_type_ids, positions, lens_positions) -> dict[str, torch.Tensor]:
    """bertlab's own forward (`model(...)`, input checks and all) arranged as the graph's outputs: the parity
    tests compare the two."""
    out = model(ids, token_type_ids, output_attentions=True, output_hidden_states=True)
    head = model.cls.predictions
    hidden = torch.stack(out.hidden_states, 1)
    V = model.config.vocab_size
    ref = {"mlm_logits": head(hidden[:, -1, positions]).reshape(-1, V),
           "lens_logits": head(hidden[:, 1:, lens_positions]).reshape(-1, V)}
    if isinstance(model, BertForPreTraining):
        ref["nsp_logits"] = out.seq_relationship_logits
    ref.update(attentions=torch.stack(out.attentions, 1), hidden_states=hidden, token=out.embeddings.token,
               segment=out.embeddings.segment, position=out.embeddings.position)
    return ref


def measure(model, tokenizer, folder: Path, text: str = CHECK_TEXT[0], pair: str | None = CHECK_TEXT[1]):
    """Largest |ONNX Runtime − bertlab| per output on one text (pair); None when onnxruntime is not installed."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None
    run = session(folder)
    feeds = _feeds(tokenizer, text, pair)
    got = run.run(None, dict(zip(INPUTS, (x.numpy() for x in feeds))))
    names = [o.name for o in run.get_outputs()]
    with torch.no_grad():
        ref = reference_outputs(model, *feeds)
    # detach: an output can be a view of a parameter (the position table), which keeps requires_grad
    return {n: float((torch.from_numpy(g) - ref[n].detach()).abs().max()) for n, g in zip(names, got)}


def export_onnx(model, tokenizer, out, dtype: str = "fp32", *, name: str | None = None) -> OnnxExport:
    """Write `model` (with its MLM head, and NSP head if any) as ONNX into the folder `out`, for ONNX Runtime.

    `out` gets model.onnx (and weights.fp16 for fp16), the tokenizer.json, and a manifest
    (`bertlab-model.json`: sizes, outputs, special ids, the largest difference from bertlab's forward).

    `out` is created, or replaced if an earlier export wrote it; a file, a link or a folder holding anything
    else is refused. `dtype`: "fp32" or "fp16" (weights stored as float16, computed in float32).
    """
    _check_model(model)
    if not isinstance(tokenizer, Tokenizer):
        raise ValueError(f"tokenizer must be a bertlab Tokenizer (the model's own, from bertlab.load), got "
                         f"{type(tokenizer).__name__}")
    if tokenizer.vocab_size > model.config.vocab_size:
        raise ValueError(f"the tokenizer has {tokenizer.vocab_size} tokens but the model only "
                         f"{model.config.vocab_size}: pass the model's own tokenizer")
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if name is not None and not isinstance(name, str):
        raise ValueError(f"name must be a str (what the manifest calls the model, e.g. 'bertlab-mini') or None, "
                         f"got {type(name).__name__}")
    _check_finite(model)
    out = _prepare_dir(out)

    # a float32 CPU copy in eval mode: the caller's model keeps its device, dtype and training mode
    cpu = copy.deepcopy(model).to("cpu", torch.float32).eval()
    # the exporter puts a module back in the mode it found it in: the wrapper must be in eval mode too, or
    # it would switch the copy's dropout back on afterwards
    graph = _Graph(cpu).eval()
    outputs = [n for n in OUTPUTS if n != "nsp_logits" or graph.nsp is not None]
    feeds = _feeds(tokenizer, "the [MASK] is exported once .")
    dynamic = {"input_ids": {0: "batch", 1: "tokens"}, "token_type_ids": {0: "batch", 1: "tokens"},
               "positions": {0: "guesses"}, "lens_positions": {0: "lens_guesses"}}
    weights = {"file": WEIGHTS_FILE, "dtype": "float16", "as": WEIGHTS_AS} if dtype == "fp16" else None
    with tempfile.TemporaryDirectory(prefix="bertlab-onnx-") as tmp:
        path = Path(tmp) / MODEL_FILE
        # the TorchScript exporter on purpose (it needs only `onnx`; torch.export's would add onnxscript): its
        # "legacy exporter" notice is torch's, about a choice made here, so it is not passed on to the caller
        # torch's exporter keeps global state: one export at a time (_EXPORTING)
        with _EXPORTING, torch.no_grad(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="You are using the legacy TorchScript-based ONNX export",
                                    category=DeprecationWarning)
            torch.onnx.export(graph, feeds, str(path), dynamo=False, opset_version=OPSET,
                              input_names=list(INPUTS), output_names=outputs,
                              dynamic_axes=dynamic, do_constant_folding=True)
        if weights:
            _to_fp16(path, Path(tmp) / WEIGHTS_FILE)
        out.mkdir(parents=True, exist_ok=True)
        for e in out.iterdir():                 # an earlier export's files (checked plain by _prepare_dir)
            e.unlink()
        for name in (MODEL_FILE, WEIGHTS_FILE) if weights else (MODEL_FILE,):
            shutil.copyfile(Path(tmp) / name, out / name)
    files.replace_text(out / "tokenizer.json", tokenizer.backend.to_str(pretty=False))
    c = model.config
    manifest = {
        "format": "bertlab-onnx/1", "name": name, "dtype": dtype, "opset": OPSET, "model_file": MODEL_FILE,
        "size_bytes": sum((out / n).stat().st_size for n in (MODEL_FILE, WEIGHTS_FILE) if (out / n).is_file()),
        "weights": weights,
        "config": {"vocab_size": c.vocab_size, "hidden_size": c.hidden_size, "num_hidden_layers": c.num_hidden_layers,
                   "num_attention_heads": c.num_attention_heads,
                   "max_position_embeddings": c.max_position_embeddings, "type_vocab_size": c.type_vocab_size},
        "tokenizer": {"file": "tokenizer.json", "vocab_size": tokenizer.vocab_size, "lowercase": tokenizer.lowercase,
                      "special_ids": {"pad": tokenizer.pad_id, "unk": tokenizer.unk_id, "cls": tokenizer.cls_id,
                                      "sep": tokenizer.sep_id, "mask": tokenizer.mask_id}},
        "inputs": list(INPUTS), "outputs": outputs,
    }
    files.replace_text(out / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    diff = measure(cpu.eval(), tokenizer, out)
    manifest["parity"] = {"text": list(CHECK_TEXT), "max_abs_diff": diff}
    files.replace_text(out / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    files.match_umask(out)
    logger.info("exported %s (%s, %.1f MB) to %s", name or type(model).__name__, dtype,
                manifest["size_bytes"] / 1e6, out)
    return OnnxExport(out, dtype, manifest["size_bytes"], outputs, diff)


def read_manifest(folder) -> dict:
    """The manifest of an export folder, or a ValueError saying what is missing."""
    path = Path(folder) / MANIFEST
    try:
        data = json.loads(files.read_text(path, "the export's manifest"))
    except FileNotFoundError as e:
        raise ValueError(f"{folder} holds no bertlab ONNX export ({MANIFEST} is missing): run bertlab export "
                         "--onnx DIR first") from e
    except ValueError as e:        # not JSON, or not UTF-8
        raise ValueError(f"{path} is damaged (not JSON: {e}): export again with bertlab export --onnx DIR") from None
    if not isinstance(data, dict) or not str(data.get("format", "")).startswith("bertlab-onnx/"):
        raise ValueError(f"{path} is not a bertlab ONNX manifest (no \"format\": \"bertlab-onnx/1\" in it): export "
                         "again with bertlab export --onnx DIR")
    return data

