"""Write tests/browser/fixtures/gallery.ipynb and its marimo twin gallery_marimo.py: every bertlab view, once,
on the bundled bertlab-tiny.

The browser tests open it in JupyterLab and Notebook 7 (and gallery_marimo.py in marimo), draw every view and
drive each by typing and clicking. One source: VIEWS below; run this script after adding a view.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "browser" / "fixtures"
OUT, MARIMO = FIXTURES / "gallery.ipynb", FIXTURES / "gallery_marimo.py"

# (class, constructor arguments as source): each view on bertlab-tiny, the small bundled model
VIEWS = [
    ("AttentionExplorer", '"The cat sat on the mat because it was warm.", model="bertlab-tiny"'),
    ("MaskPlayground", '"The dog ran along the river bank.", model="bertlab-tiny", mask="bank"'),
    ("MaskingLab", '"The river was low after a long dry summer.", model="bertlab-tiny"'),
    ("EmbeddingSumExplorer", '"The cat sat on the mat.", "It was warm there.", model="bertlab-tiny"'),
    ("NSPExplorer", '"It rained all day.", "The river rose.", model="bertlab-tiny"'),
    ("ContextExplorer", '"bank", model="bertlab-tiny"'),
    ("Predict", '"How many heads does each layer of bertlab-tiny have?", choices=["1", "2", "4"], answer="2"'),
    ("Quiz", '[("Which token does BERT predict in pre-training?", [("the masked ones", True, "yes: MLM"), '
             '("the next one", False, "that is a left-to-right model")])], title="Gallery quiz"'),
    ("HeadAblation", '"Tom went to the [MASK] to open a savings account.", model="bertlab-tiny"'),
    ("NeuronExplorer", '"The cat sat on the mat because it was warm.", model="bertlab-tiny", layer=0, head=1'),
    ("SaliencyExplorer", '"The river [MASK] was muddy after the storm.", model="bertlab-tiny", steps=8'),
    ("ContextSearch", '"He sat on the bank of the river.", "bank", model="bertlab-tiny", k=3, '
                      'corpus=["The bank raised its rates.", "We fished from the grassy bank.", '
                      '"She opened an account at the bank.", "Ducks rested on the muddy bank."]'),
    # b is a token longer than a, so the chart draws at once and the heatmap once a word is typed into a
    ("MinimalPairs", '"Tom went to the [MASK] to open a savings account.", '
                     '"Tom went to the [MASK] to open a birthday present today.", model="bertlab-tiny"'),
    # three snapshots of bertlab-tiny as it is (a run's would come from read_snapshots(out)): steps to replay
    ("SnapshotReplay", '[__import__("bertlab.pretraining.snapshots", fromlist=["take"]).take('
                       '*__import__("bertlab").load("bertlab-tiny"), "The cat sat on the [MASK].", step) '
                       'for step in (0, 50, 100)]'),
    # notebook 13's views: the shipped autoencoder reads bertlab-mini; the atlas is made here on bertlab-tiny
    ("SteeringView", '"The river [MASK] was muddy after the rain."'),
    ("HeadAtlasView", '__import__("bertlab").head_atlas(*__import__("bertlab").load("bertlab-tiny"), '
                      '["The cat sat on the mat.", "It was warm there.", "The dog ran along the river bank."])'),
    # a notebook's own live cell (bertlab.viz.interact): typing, a slider and toggle buttons each redraw the curve
    ("interact", 'lambda text, warmup, peak: lr_schedule(10 * len(text.split()), warmup, peak), '
                 'text="the schedule of a run of this many words", warmup=W.FloatSlider(value=0.2, min=0.0, max=0.4, step=0.1), '
                 'peak=W.ToggleButtons(options=[1e-3, 5e-4])'),
]
# what a view's cell uses besides its class: bertlab.viz names, and W (bertlab.viz.views.controls)
NEEDS = {"interact": ("lr_schedule", "W")}


def main() -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells.append(nbformat.v4.new_markdown_cell(
        "# Every view\n\nThe browser tests' fixture: each bertlab view once, drawn by its module "
        "(bertlab.viz.views), on bertlab-tiny."))
    nb.cells.append(nbformat.v4.new_code_cell(import_line()))
    for cls, args in VIEWS:
        nb.cells.append(nbformat.v4.new_code_cell(f"{cls}({args})"))
    for i, c in enumerate(nb.cells):
        c["id"] = f"cell-{i}"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, OUT)
    MARIMO.write_text(marimo_app())


def import_line() -> str:
    """`from bertlab.viz import ...` of every view, one name a line (as ruff formats a long import)."""
    viz = {c for c, _ in VIEWS} | {n for needs in NEEDS.values() for n in needs if n != "W"}
    names = "".join(f"    {c},\n" for c in sorted(viz, key=lambda c: (c[:1].islower(), c.lower())))  # as ruff sorts
    return f"from bertlab.viz import (\n{names})\nfrom bertlab.viz.views import controls as W"


def marimo_app() -> str:
    """The same views as a marimo app: each view's anywidget (`.view`) wrapped by `mo.ui.anywidget`."""
    names = ", ".join(sorted({c for c, _ in VIEWS} | {n for needs in NEEDS.values() for n in needs}))
    imports = import_line().replace("\n", "\n    ")
    cells = [f"""@app.cell
def _():
    import marimo as mo

    {imports}
    return ({names}, mo)
"""]
    for i, (cls, args) in enumerate(VIEWS):
        cells.append(f"""@app.cell
def _({", ".join((cls, *NEEDS.get(cls, ())))}, mo):
    view_{i} = mo.ui.anywidget({cls}({args}).view)
    view_{i}
    return
""")
    head = ('"""Every bertlab view in marimo (written by scripts/make_gallery.py; `marimo run` this file)."""\n\n'
            "import marimo\n\napp = marimo.App()\n\n\n")
    return head + "\n\n".join(cells) + '\n\nif __name__ == "__main__":\n    app.run()\n'


if __name__ == "__main__":
    main()
