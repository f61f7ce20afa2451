"""Fine-tuning: one loop for the paper's task shapes, their scores, and the shipped task sets.

    result = bertlab.finetune(model, tokenizer, train, val, task="classify", steps=60, lr=3e-4)
    bertlab.evaluate_task(result.model, tokenizer, test, task="classify")
    bertlab.load_task("tagging")                       # {"train": [...], "val": [...], "test": [...]}
"""

from .loop import FineTuneResult, FineTuneSettings, NonFiniteLoss, finetune
from .metrics import choose_tau, entity_f1, evaluate_task, qa_exact_match, qa_scores
from .tasks import METRIC, SHIPPED, TASKS, encode, load_task

__all__ = ["finetune", "FineTuneResult", "FineTuneSettings", "evaluate_task", "load_task", "encode", "TASKS",
           "SHIPPED", "METRIC", "entity_f1", "qa_scores", "qa_exact_match", "choose_tau", "NonFiniteLoss"]
