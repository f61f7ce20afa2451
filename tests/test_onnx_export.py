"""`bertlab export --onnx` and `bertlab.export_onnx`: the exported graph equals bertlab's own forward (run by
ONNX Runtime, at any length, for single texts and pairs), fp16 keeps that parity, the manifest says what it
holds; every hostile input is one clear error; the vendored in-page runtime is byte for byte what its manifest
says; the book's hook adds the live panel where it belongs."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
import torch

import bertlab
from bertlab import BertConfig, BertForMaskedLM, BertForPreTraining, BertForSequenceClassification
from bertlab.cli import main
from bertlab.export import DTYPES, MANIFEST, export_onnx, reference_outputs, session

pytest.importorskip("onnx", reason="torch's ONNX exporter writes through the onnx package: pip install onnx")
ort = pytest.importorskip("onnxruntime", reason="the parity tests run the export: pip install onnxruntime")

REPO = Path(__file__).resolve().parents[1]
VENDOR = REPO / "bertlab" / "book" / "inpage" / "static" / "vendor"
TEXTS = [("the river [MASK] was muddy .", None), ("It rained all day.", "The river rose over its banks."),
         ("a", None), (" ".join(["word"] * 100) + " [MASK] end", None)]


@pytest.fixture(scope="module")
def tiny():
    return bertlab.load("bertlab-tiny", device="cpu")


@pytest.fixture(scope="module")
def tiny_export(tiny, tmp_path_factory):
    model, tokenizer = tiny
    return export_onnx(model, tokenizer, tmp_path_factory.mktemp("tiny") / "onnx", name="bertlab-tiny")


def _run(path: Path, tokenizer, text, pair, positions=None, lens=None):
    enc = tokenizer(text, pair)
    T = len(enc.input_ids)
    positions = list(range(T)) if positions is None else positions
    lens = list(range(T)) if lens is None else lens
    feeds = dict(input_ids=torch.tensor([enc.input_ids]), token_type_ids=torch.tensor([enc.token_type_ids]),
                 positions=torch.tensor(positions, dtype=torch.long), lens_positions=torch.tensor(lens, dtype=torch.long))
    run = session(path)
    got = run.run(None, {k: v.numpy() for k, v in feeds.items()})
    return dict(zip([o.name for o in run.get_outputs()], got)), feeds


def _compare(model, path, tokenizer, text, pair, positions=None, lens=None, tol=1e-4):
    got, feeds = _run(path, tokenizer, text, pair, positions, lens)
    ref = reference_outputs(model.eval(), *feeds.values())
    assert set(got) == set(ref)
    for name, value in got.items():
        assert value.shape == tuple(ref[name].shape), name
        err = float((torch.from_numpy(value) - ref[name].detach()).abs().max()) if value.size else 0.0
        assert err <= tol, (name, err, text)


@pytest.mark.parametrize("text, pair", TEXTS)
def test_the_export_equals_bertlabs_forward_at_any_length(tiny, tiny_export, text, pair):
    model, tokenizer = tiny
    _compare(model, tiny_export.dir, tokenizer, text, pair)


def test_guesses_only_where_asked_and_none_is_allowed(tiny, tiny_export):
    model, tokenizer = tiny
    _compare(model, tiny_export.dir, tokenizer, "the [MASK] sat on the [MASK] .", None, positions=[2, 6], lens=[6])
    got, _ = _run(tiny_export.dir, tokenizer, "the cat sat .", None, positions=[], lens=[])
    V = model.config.vocab_size
    assert got["mlm_logits"].shape == (0, V) and got["lens_logits"].shape == (0, V)
    assert got["attentions"].shape[1:3] == (model.config.num_hidden_layers, model.config.num_attention_heads)


def test_the_manifest_says_what_the_folder_holds(tiny, tiny_export):
    model, tokenizer = tiny
    m = json.loads((tiny_export.dir / MANIFEST).read_text())
    assert m["dtype"] == "fp32" and m["outputs"] == tiny_export.outputs and "nsp_logits" in m["outputs"]
    assert m["config"]["num_hidden_layers"] == model.config.num_hidden_layers
    assert m["tokenizer"]["special_ids"]["mask"] == tokenizer.mask_id
    assert m["size_bytes"] == tiny_export.model.stat().st_size and m["weights"] is None
    assert max(m["parity"]["max_abs_diff"].values()) < 1e-4
    assert bertlab.Tokenizer.from_file(tiny_export.dir / "tokenizer.json")("a test").input_ids == \
        tokenizer("a test").input_ids


def test_fp16_weights_halve_bertlab_mini_and_keep_its_outputs(tmp_path):
    # bertlab-mini was saved in bfloat16: float16 holds each of its weights exactly, so nothing is lost
    model, tokenizer = bertlab.load("bertlab-mini", device="cpu")
    half = export_onnx(model, tokenizer, tmp_path / "fp16", "fp16")
    n_params = sum(p.numel() for p in model.parameters())
    assert half.size_bytes < 2 * n_params * 1.02                       # 2 bytes a weight, plus the graph
    assert (half.dir / "weights.fp16").stat().st_size == 2 * n_params
    assert half.model.stat().st_size < 1e6                             # the graph alone: the weights are beside it
    assert max(half.max_abs_diff.values()) < 1e-4, half.max_abs_diff
    _compare(model, half.dir, tokenizer, "She poured the [MASK] into a glass.", "It was cold.")


def test_a_masked_lm_without_nsp_exports_without_the_nsp_output(tiny, tmp_path):
    model, tokenizer = tiny
    mlm = BertForMaskedLM(model.bert)
    mlm.cls.predictions.load_state_dict(model.cls.predictions.state_dict())
    result = export_onnx(mlm, tokenizer, tmp_path / "mlm")
    assert "nsp_logits" not in result.outputs
    _compare(mlm, result.dir, tokenizer, "the [MASK] .", None)


def test_the_callers_model_is_left_as_it_was(tiny, tmp_path):
    model, tokenizer = tiny
    model.train()
    try:
        export_onnx(model, tokenizer, tmp_path / "x")
        assert model.training and all(m.training for m in model.modules())
    finally:
        model.eval()


def test_a_second_export_replaces_the_first(tiny, tmp_path):
    model, tokenizer = tiny
    export_onnx(model, tokenizer, tmp_path / "x")
    again = export_onnx(model, tokenizer, tmp_path / "x", "fp16")
    assert json.loads((again.dir / MANIFEST).read_text())["dtype"] == "fp16"


# ---- bad input (STYLE 18) ---------------------------------------------------------------------------------

def test_models_without_an_mlm_head_are_refused(tiny, tmp_path):
    model, tokenizer = tiny
    tiny_cfg = BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size)
    for bad, needle in ((model.bert, "bare encoder"), (BertForSequenceClassification(tiny_cfg), "task head"),
                        ("bertlab-mini", "not a bertlab model"), (None, "not a bertlab model"),
                        (BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size,
                                                              is_decoder=True)), "causal")):
        with pytest.raises(ValueError, match=needle):
            export_onnx(bad, tokenizer, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_bad_tokenizers_and_dtypes_are_refused(tiny, tmp_path):
    model, tokenizer = tiny
    with pytest.raises(ValueError, match="bertlab Tokenizer"):
        export_onnx(model, "bert-base-uncased", tmp_path / "a")
    big = bertlab.load("bertlab-mini")[1]
    with pytest.raises(ValueError, match="model's own tokenizer"):
        export_onnx(model, big, tmp_path / "a")
    for dtype in ("int8", "FP16", "float16", None, 16, ""):
        with pytest.raises(ValueError, match="dtype must be one of"):
            export_onnx(model, tokenizer, tmp_path / "a", dtype)
    assert DTYPES == ("fp32", "fp16")


def test_out_folders_that_are_files_links_or_someone_elses_are_refused(tiny, tmp_path):
    model, tokenizer = tiny
    a_file = tmp_path / "file.txt"
    a_file.write_text("mine")
    with pytest.raises(NotADirectoryError, match="is a file"):
        export_onnx(model, tokenizer, a_file)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not empty"):
        export_onnx(model, tokenizer, theirs)
    assert (theirs / "notes.txt").read_text() == "keep me"
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(ValueError, match="symbolic link"):
        export_onnx(model, tokenizer, link)
    # an earlier export with a folder or a link planted inside is not replaced either
    planted = tmp_path / "planted"
    export_onnx(model, tokenizer, planted)
    (planted / "model.onnx").unlink()
    (planted / "model.onnx").symlink_to(a_file)
    with pytest.raises(FileExistsError, match="not a plain file"):
        export_onnx(model, tokenizer, planted)
    assert a_file.read_text() == "mine"
    for bad in ("", None, 3):
        with pytest.raises(ValueError, match="folder path"):
            export_onnx(model, tokenizer, bad)


def test_the_export_command(tmp_path, capsys):
    assert main(["export", "--onnx", str(tmp_path / "m"), "--model", "bertlab-tiny", "--dtype", "fp16"]) == 0
    out = capsys.readouterr().out
    assert "fp16" in out and "largest difference from bertlab's forward" in out
    assert (tmp_path / "m" / "model.onnx").is_file() and (tmp_path / "m" / "tokenizer.json").is_file()
    for argv, needle in ((["--model", "minilm"], "bare encoder"), (["--model", str(tmp_path / "nothing")], ""),
                         (["--onnx-is-missing"], None)):
        if argv == ["--onnx-is-missing"]:
            with pytest.raises(SystemExit) as e:
                main(["export", "--model", "bertlab-tiny"])
            assert e.value.code == 2
            continue
        assert main(["export", "--onnx", str(tmp_path / "n")] + argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("bertlab export: error:") and len(err.strip().splitlines()) == 1 and needle in err
    with pytest.raises(SystemExit):
        main(["export", "--onnx", str(tmp_path / "n"), "--dtype", "int4"])
    (tmp_path / "f").write_text("x")
    assert main(["export", "--onnx", str(tmp_path / "f"), "--model", "bertlab-tiny"]) == 2
    assert "is a file" in capsys.readouterr().err


# ---- the vendored runtime and the book's hook ---------------------------------------------------------------

def test_the_vendored_runtime_is_what_its_manifest_says():
    manifest = json.loads((VENDOR / "VENDOR.json").read_text())
    listed = set()
    for name, package in manifest["packages"].items():
        assert package["version"] and package["integrity"].startswith("sha512-"), name
        assert (VENDOR / package["licence_file"]).is_file(), name
        listed.add(package["licence_file"])
        for path, info in package["files"].items():
            data = (VENDOR / path).read_bytes()
            assert hashlib.sha256(data).hexdigest() == info["sha256"] and len(data) == info["bytes"], path
            listed.add(path)
    on_disk = {str(p.relative_to(VENDOR)) for p in VENDOR.rglob("*") if p.is_file()} - {"VENDOR.json"}
    assert on_disk == listed, on_disk ^ listed
    assert not [p for p in on_disk if "webgpu" in p or "jsep" in p or "webgl" in p]   # the wasm backend only


def test_lesson_pages_get_the_live_panel_and_the_hosting_page_names_the_wasm_type():
    from bertlab.book import inpage

    assert inpage.panel("01_wordpiece.ipynb") == ""
    html = inpage.panel("04_masked_lm.ipynb")
    assert "Type your own sentence here" in html and 'data-bertlab-view="fill"' in html
    assert inpage.PAGE in html
    page = inpage.what_runs_where({"model": 39_700_000, "files": 14_400_000})
    assert "application/wasm" in page and "text/javascript" in page and "leaves your machine" in page
    assert "54.1 MB" in page
    for name in inpage.LESSON_VIEWS:
        assert (REPO / "notebooks" / name).is_file(), name


def test_each_live_view_is_the_notebooks_widget_state_with_its_controls_named():
    """What a page's live view starts from: the widget's own nodes and figures (bertlab-mini, the default text),
    its view module named, every control the glue reads or sets present, the model menu fixed."""
    from bertlab.book import inpage

    for kind in ("nsp", "fill"):
        entry = inpage.view_state(kind)
        state, ids = entry["state"], entry["controls"]
        assert entry["module"] == "view" and "_esm" not in state and "plotly_js" not in state
        assert set(ids) <= set(state["nodes"]) | set(ids) and all(i in state["nodes"] for i in ids.values())
        assert state["nodes"][ids["model"]]["disabled"] is True
        assert state["content"][ids["out"]]["figure"]["data"], kind
    assert inpage.view_state("attention")["module"] == "attention"


@pytest.mark.parametrize("kind", ["masking", "", None, 3])
def test_a_live_view_that_does_not_exist_is_named(kind):
    from bertlab.book import inpage

    with pytest.raises(ValueError, match="the live views are fill, attention, embeddings, nsp, context"):
        inpage.view_state(kind)


def test_the_book_without_onnx_says_what_to_install(monkeypatch, tmp_path):
    import builtins

    from bertlab.book import inpage

    real = builtins.__import__

    def no_onnx(name, *args, **kwargs):
        if name == "onnx":
            raise ImportError("No module named 'onnx'")
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_onnx)
    with pytest.raises(ImportError, match="pip install 'bertlab\\[book\\]'"):
        inpage.add_to_site(tmp_path)
    assert not os.listdir(tmp_path)


# ---- the adversarial round: what a hostile user tried -----------------------------------------------------

def test_a_file_of_the_users_beside_an_earlier_export_is_never_deleted(tiny, tmp_path):
    model, tokenizer = tiny
    out = export_onnx(model, tokenizer, tmp_path / "site", "fp16").dir
    (out / "notes.txt").write_text("my notes")
    with pytest.raises(FileExistsError, match="notes.txt was not written by an export"):
        export_onnx(model, tokenizer, out)
    assert (out / "notes.txt").read_text() == "my notes" and (out / "weights.fp16").is_file()
    (out / "notes.txt").unlink()
    export_onnx(model, tokenizer, out)                    # the export's own files alone: replaced, fp16's too
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "model.onnx", "tokenizer.json"]


def test_a_folder_under_a_file_a_nan_model_and_a_bad_name_are_refused(tiny, tmp_path):
    import copy
    model, tokenizer = tiny
    (tmp_path / "file.txt").write_text("mine")
    with pytest.raises(NotADirectoryError, match="file.txt is a file, so no folder"):
        export_onnx(model, tokenizer, tmp_path / "file.txt" / "deeper" / "out")
    broken = copy.deepcopy(model)
    with torch.no_grad():
        broken.bert.encoder.layer[0].output.LayerNorm.weight[0] = float("nan")
    with pytest.raises(ValueError, match="LayerNorm.weight holds nan or inf"):
        export_onnx(broken, tokenizer, tmp_path / "nan")
    with pytest.raises(ValueError, match="name must be a str"):
        export_onnx(model, tokenizer, tmp_path / "named", name=123)
    assert not (tmp_path / "nan").exists() and not (tmp_path / "named").exists()


def test_a_damaged_manifest_is_named(tmp_path):
    from bertlab.export import read_manifest
    (tmp_path / MANIFEST).write_text("{not json")
    with pytest.raises(ValueError, match="is damaged \\(not JSON"):
        session(tmp_path)
    (tmp_path / MANIFEST).write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a bertlab ONNX manifest"):
        read_manifest(tmp_path)


def test_the_command_says_a_bad_folder_before_it_loads_the_model(tmp_path, capsys, monkeypatch):
    import bertlab.checkpoint
    monkeypatch.setattr(bertlab.checkpoint, "load", lambda *a, **k: pytest.fail("loaded before checking DIR"))
    (tmp_path / "f").write_text("x")
    assert main(["export", "--onnx", str(tmp_path / "f" / "sub"), "--model", "bertlab-tiny"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bertlab export: error:") and "is a file" in err and err.count("\n") == 1


def test_two_threads_exporting_at_once_both_finish(tiny, tmp_path):
    import threading
    model, tokenizer = tiny
    errors = []

    def export(name):
        try:
            export_onnx(model, tokenizer, tmp_path / name)
        except Exception as e:                       # torch's exporter keeps global state: a second one raised
            errors.append(e)
    threads = [threading.Thread(target=export, args=(name,)) for name in ("a", "b")]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not errors and (tmp_path / "a" / "model.onnx").is_file() and (tmp_path / "b" / "model.onnx").is_file()
