"""Live widgets: type a sentence, move a slider, click a token, and watch BERT answer.

One module per lesson widget, on a shared base (base.py: the model menu, the message line, safe callbacks):

    AttentionExplorer(text, text_pair, model)   layer / head sliders → heatmap (heads combined, per word,
                                                [CLS]/[SEP] hidden, threshold); grid, bertviz head view, guesses
    MaskPlayground(text, model)                 click a token to mask it → top-k and per-layer guesses
    MaskingLab(text, model)                     re-draw the 15 % / 80-10-10 masking; running counts
    EmbeddingSumExplorer(text, text_pair)       token + segment + position → LayerNorm; position similarity
    NSPExplorer(a, b, model)                    P(IsNext)
    ContextExplorer(word, sentences, model)     one word in several contexts: distances, drift, projection
    HeadAblation(text, model)                   switch heads off → predictions change; rank heads
    NeuronExplorer(text, model)                 click a token: its q, each k, q × k, q·k and the softmax
    SaliencyExplorer(text, model)               a [MASK]'s attribution beside attention and rollout
    ContextSearch(text, word, model)            exBERT's search: corpus sentences using the word the same way
    MinimalPairs(text_a, text_b, model)         one word changed: the [MASK] shift, then patching on a click
    Predict(question, choices, answer)          commit to a prediction; only then the result shows beside it
    Quiz([(question, [(option, correct, why)])]) multiple choice, every option explained once answered

Predict and Quiz need no model, so they stand on their own minimal base (a `view` VBox), not on base.py.

    w = AttentionExplorer("The river bank was muddy.", model="minilm")
    w.layer.value = 3                  # the heatmap now shows layer 3
    w.figure.data[0].z                 # ... and here are its numbers

`model` is "bertlab-mini" or "bertlab-tiny" (MLM + NSP heads), "minilm" (a real encoder without them), a
HuggingFace hub id, a checkpoint directory, or a `(model, tokenizer)` pair. Named models load once per
process and are shared. The model menu lists the bundled models and every BERT in the local hub cache.

Why it is fast enough to use while typing: each widget keeps the forward pass of its current text and
reuses it when only a view setting changes (a slider, a toggle); a slider that changes only the numbers
of a figure updates that figure in place instead of building a new one (`w.figure` is then the same
object with new data). The numbers all come from bertlab.probe; the widgets lay them out.
"""

from .ablation import HeadAblation
from .attention import AttentionExplorer
from .base import DISPLAY_NAMES, LOADED, MODEL_NAMES, WIDE, WITH_HEADS, Widget, load_model, model_options
from .context import ContextExplorer
from .embeddings import EmbeddingSumExplorer
from .inspection import ContextSearch, NeuronExplorer, SaliencyExplorer
from .masked_lm import MaskPlayground
from .masking import MaskingLab
from .minimal_pairs import MinimalPairs
from .nsp import NSPExplorer
from .predict import Predict
from .quiz import Quiz

__all__ = ["Widget", "AttentionExplorer", "MaskPlayground", "MaskingLab", "EmbeddingSumExplorer", "NSPExplorer",
           "ContextExplorer", "HeadAblation", "NeuronExplorer", "SaliencyExplorer", "ContextSearch", "MinimalPairs", "Predict", "Quiz", "load_model", "model_options", "MODEL_NAMES", "DISPLAY_NAMES",
           "WITH_HEADS", "WIDE", "LOADED"]
