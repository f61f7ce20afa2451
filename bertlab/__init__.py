"""bertlab: a compact, inspectable BERT in plain PyTorch, and the notebooks that teach it.

    import bertlab
    model, tokenizer = bertlab.load("minilm")
    out = model(**tokenizer("The river bank was muddy."), output_attentions=True)
"""

from .checkpoint import load, save
from .config import BertConfig
from .course import check, hint  # exercise checks that never show the answer; hints in tiers
from .course.progress import progress  # which exercises a learner has answered right (a local file)
from .experiments import experiment, replay
from .export import export_onnx  # the model as one ONNX file, for ONNX Runtime and the book's in-page model
from .finetuning import FineTuneResult, evaluate_task, finetune, load_task
from .hooks import act_name  # a hook point's full name from its short one: act_name("pattern", 0)
from .hub import cached_models  # hub BERTs already downloaded; huggingface_hub is imported only on use
from .inside import HeadAtlas, ModelDiff, SparseAutoencoder, diff, head_atlas, sae_report, steer, train_sae
from .model import (
                    Bert,
                    BertForMaskedLM,
                    BertForMultipleChoice,
                    BertForPreTraining,
                    BertForQuestionAnswering,
                    BertForSequenceClassification,
                    BertForTokenClassification,
                    BertOutput,
                    EmbeddingParts,
)
from .pretraining import make_pairs, mask_tokens
from .pretraining.trainer import pretrain
from .probe import (
                    ablate,
                    attention_map,
                    attention_neurons,
                    attention_rollout,
                    compare_fill,
                    context_mixing,
                    contextuality,
                    cosine_distances,
                    fill_mask,
                    head_importance,
                    head_types,
                    load_probing_set,
                    mixing_scoreboard,
                    nearest_contexts,
                    next_sentence,
                    patch,
                    probe_layers,
                    saliency,
                    sentence_embedding,
                    word_vectors,
)
from .tokenizer import Batch, Encoding, Tokenizer
from .utils import set_seed

__version__ = "0.1.0"

__all__ = ["BertConfig", "Tokenizer", "Encoding", "Batch", "Bert", "BertOutput", "EmbeddingParts",
           "BertForPreTraining", "BertForMaskedLM", "BertForSequenceClassification",
           "BertForTokenClassification", "BertForQuestionAnswering", "BertForMultipleChoice", "load", "save", "cached_models", "set_seed",
           "mask_tokens", "make_pairs", "pretrain", "fill_mask", "next_sentence", "word_vectors",
           "cosine_distances", "sentence_embedding", "attention_rollout", "head_importance", "ablate", "saliency", "head_types",
           "contextuality", "nearest_contexts", "probe_layers", "load_probing_set", "attention_neurons",
           "attention_map", "patch", "compare_fill", "context_mixing", "mixing_scoreboard", "check", "hint",
           "finetune", "FineTuneResult", "evaluate_task", "load_task", "experiment", "replay", "export_onnx",
           "train_sae", "sae_report", "steer", "SparseAutoencoder", "diff", "ModelDiff", "head_atlas", "HeadAtlas", "act_name"]
__all__ += ["progress"]
