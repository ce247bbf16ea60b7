"""Gold-label losses for token classification, over positions whose label is not
-100: cross-entropy, class-weighted cross-entropy and focal loss (the DRET paper's
answers to the dominant ``O`` class). Used by teacher fine-tuning and by every
distillation method's gold term."""

from __future__ import annotations

from typing import Iterable

import torch
import torch.nn.functional as F
from torch import nn

from fastbioner.base.config import LossConfig
from fastbioner.models.encoding import IGNORE_INDEX


def balanced_class_weights(label_ids: Iterable[int], num_labels: int, power: float = 1.0) -> torch.Tensor:
    """``(n / (k * count_c)) ** power`` per class (sklearn's "balanced" weights,
    smoothed by ``power``), over the labels that occur; a label that never occurs
    gets weight 1. -100 entries are skipped."""
    counts = torch.zeros(num_labels, dtype=torch.float64)
    for i in label_ids:
        if i != IGNORE_INDEX:
            counts[i] += 1
    seen = counts > 0
    weights = torch.ones(num_labels, dtype=torch.float64)
    if seen.any():
        total, k = counts[seen].sum(), seen.sum()
        weights[seen] = (total / (k * counts[seen])) ** power
    return weights.float()


class FocalLoss(nn.Module):
    """Mean over labelled positions of ``-(1 - p_t) ** gamma * log p_t``; gamma = 0
    is plain cross-entropy."""

    weight: torch.Tensor | None  # a buffer (register_buffer): moves with the module

    def __init__(self, gamma: float = 2.0, weight: torch.Tensor | None = None):
        super().__init__()
        self.gamma = gamma
        self.register_buffer("weight", weight if weight is not None else None, persistent=False)

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = logits.reshape(-1, logits.shape[-1]).float()
        labels = labels.reshape(-1)
        keep = labels != IGNORE_INDEX
        if not keep.any():
            return logits.sum() * 0.0
        logp = F.log_softmax(logits[keep], dim=-1)
        target = labels[keep]
        logp_t = logp.gather(1, target[:, None]).squeeze(1)
        loss = -((1 - logp_t.exp()) ** self.gamma) * logp_t
        if self.weight is not None:
            loss = loss * self.weight.to(loss.device)[target]
        return loss.mean()


class CrossEntropy(nn.Module):
    """Cross-entropy over labelled positions, optionally class-weighted."""

    weight: torch.Tensor | None  # a buffer (register_buffer): moves with the module

    def __init__(self, weight: torch.Tensor | None = None):
        super().__init__()
        self.register_buffer("weight", weight if weight is not None else None, persistent=False)

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        flat = labels.reshape(-1)
        if not (flat != IGNORE_INDEX).any():
            return logits.sum() * 0.0
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), flat,
                               weight=None if self.weight is None else self.weight.to(logits.device),
                               ignore_index=IGNORE_INDEX)


def make_token_loss(config: LossConfig, num_labels: int,
                    label_ids: Iterable[int] | None = None) -> nn.Module:
    """The loss a :class:`LossConfig` names; ``weighted-ce`` needs the training
    ``label_ids`` to count class frequencies."""
    if config.kind == "ce":
        return CrossEntropy()
    if config.kind == "weighted-ce":
        if label_ids is None:
            raise ValueError("class-weighted cross-entropy needs the training labels")
        return CrossEntropy(balanced_class_weights(label_ids, num_labels, config.class_weight_power))
    if config.kind == "focal":
        return FocalLoss(config.focal_gamma)
    raise ValueError(f"unknown loss {config.kind!r}")
