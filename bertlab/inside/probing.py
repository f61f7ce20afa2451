"""A linear probe on a layer's raw activations against the same probe on its autoencoder features.

    compare_probes(model, tokenizer, sae)        # part of speech (bertlab/assets/probing/pos.tsv) by default

If the features are the layer's "real variables", a probe on them should do at least as well as one on the
raw vector. Often it does not (a plain linear probe on activations is a strong baseline that SAE probes
rarely beat), so this comparison belongs beside every autoencoder. Both probes are probe_layers's probe
(multinomial logistic regression, L-BFGS from zero, standardised inputs, the same sentence split), on each
word's vector at the autoencoder's layer (WordPieces averaged, then encoded for the features).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

import torch

from ..probe.layers import _split, layer_vectors, load_probing_set, train_linear_probe
from .sae import SparseAutoencoder, check_sae

__all__ = ["ProbeComparison", "compare_probes"]


@dataclass
class ProbeComparison:
    """Held-out accuracy of the probe on raw activations and on the features, and the majority baseline."""
    task: str
    layer: int
    raw: float
    features: float
    majority: float
    n_train: int
    n_test: int

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return (f"{self.task} at layer {self.layer}: raw activations {self.raw:.3f}, SAE features "
                f"{self.features:.3f}, majority class {self.majority:.3f} ({self.n_train} train / {self.n_test} "
                "test words)")


def _accuracy(x: torch.Tensor, y: torch.Tensor, test: torch.Tensor, n_classes: int) -> float:
    mean, std = x[~test].mean(0), x[~test].std(0).clamp_min(1e-6)
    x = (x - mean) / std
    probe = train_linear_probe(x[~test], y[~test], n_classes)
    with torch.no_grad():
        return float((probe(x[test]).argmax(-1) == y[test]).float().mean())


def compare_probes(model, tokenizer, sae: SparseAutoencoder, task: str = "pos", test_size: float = 0.25,
                   seed: int = 0) -> ProbeComparison:
    """Probe `task` ("pos" or "senses", a shipped probing set) on raw activations and on `sae`'s features."""
    sae = check_sae(model, sae)
    if isinstance(test_size, bool) or not isinstance(test_size, (int, float)) or not 0 < test_size < 1:
        raise ValueError(f"test_size must be a fraction between 0 and 1 (the share of sentences held out), "
                         f"got {test_size!r}")
    examples, labels = load_probing_set(task)
    vectors = layer_vectors(model, tokenizer, examples)[:, sae.layer]              # (N, H)
    with torch.no_grad():
        feats = sae.encode(vectors)                                                 # (N, width)
    sentences = [ex[0] for ex in examples]
    held = _split(sentences, test_size, seed)
    test = torch.tensor([s in held for s in sentences])
    classes = sorted(set(y for y, t in zip(labels, test.tolist()) if not t))
    index = {c: i for i, c in enumerate(classes)}
    y = torch.tensor([index.get(l, -1) for l in labels])
    counts = Counter(y[~test].tolist())
    majority = float((y[test] == counts.most_common(1)[0][0]).float().mean())
    torch.manual_seed(seed)
    return ProbeComparison(task, sae.layer, _accuracy(vectors, y, test, len(classes)),
                           _accuracy(feats, y, test, len(classes)), majority, int((~test).sum()), int(test.sum()))
