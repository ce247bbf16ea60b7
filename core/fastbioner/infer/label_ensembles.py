"""Several models' label distributions, one per word: the combination rule shared by
multi-teacher distillation (:mod:`fastbioner.train.distill.ensemble`, which turns teachers'
word logits into one set of soft labels) and by scoring the teachers themselves
combined (``fastbioner evaluate A FILE --ensemble-with B``), so the figure the
report gives for an ensemble is the rule its students learn from. No training code
here: evaluation and tagging import it too.

Each model's weight per word is its confidence there (its top probability at T = 1),
normalised over the models; or the models weigh equally (``mean``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from fastbioner.base.config import COMBINATIONS


def softmax(x: np.ndarray, t: float = 1.0) -> np.ndarray:
    z = x / t
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def model_weights(plain: np.ndarray, rule: str) -> np.ndarray:
    """``(K, W)`` weights of K models per word from their T = 1 distributions
    ``(K, W, C)``; they sum to 1 over the models."""
    if rule not in COMBINATIONS:
        raise ValueError(f"combination must be one of {', '.join(COMBINATIONS)}, not {rule!r}")
    if rule == "confidence":
        w = plain.max(-1)
        return w / np.clip(w.sum(0, keepdims=True), 1e-12, None)
    return np.full(plain.shape[:2], 1.0 / plain.shape[0], dtype=np.float32)


def combine(per_model: Sequence[np.ndarray], temperature: float, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """One sentence, from each model's word logits ``(W, C)``: the combined
    distribution ``(W, C)`` at ``temperature`` and its confidence per word (the top
    probability of the combined T = 1 distributions)."""
    soft = np.stack([softmax(z, temperature) for z in per_model])      # (K, W, C)
    plain = np.stack([softmax(z) for z in per_model])
    w = model_weights(plain, rule)                                      # (K, W)
    target = (w[..., None] * soft).sum(0)
    confidence = (w[..., None] * plain).sum(0).max(-1)
    return target.astype(np.float32), confidence.astype(np.float32)


def combined_labels(per_model: Sequence[np.ndarray], rule: str) -> np.ndarray:
    """One sentence, from each model's word distributions at T = 1 ``(W, C)``: the
    label id per word of their combination (the argmax of the weighted mean)."""
    plain = np.stack(per_model)
    if plain.shape[1] == 0:
        return np.zeros(0, dtype=np.int64)
    w = model_weights(plain, rule)
    return (w[..., None] * plain).sum(0).argmax(-1)
