"""How strongly each loss term pulls on the student, measured, and the calibration
that evens the pulls out before training starts.

The paper adds its matching terms to the label terms with no weights. Their sizes
differ by orders of magnitude (the attention-score MSE of a fresh 6-layer student is
24-47 against 0.02-0.7 for the label terms), and a term's size is not what moves the
student: its gradient is. :func:`measure_terms` takes, on one batch, each term's value
and the norm of its gradient with respect to every trainable parameter, weighted as
the objective weighs it at a given step, plus the cosine between the combined
gradient and the label terms' gradient (how much of the update still follows the
labels). :func:`calibrate` averages that over the first batches and scales each
matching term (hidden, attention, ...) so that its weighted gradient norm at step 0
equals the gold term's times ``ratio``. ``experiments/loss_scales.py`` prints the same
figures for any configuration, so a calibration is checked, not assumed.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import torch

from fastbioner.train.distill.capture import capture
from fastbioner.train.distill.objective import _ANCHOR, DistillationObjective

LABEL_TERMS = ("gold", "soft", "prob-mse", "logit-mse")
CALIBRATION_FILE = "calibration.json"


@dataclass
class TermMeasure:
    """One batch: each term's value, gradient norm (unweighted) and weight at the step."""

    values: dict[str, float]
    grad_norms: dict[str, float]
    weights: dict[str, float]
    label_cosine: float | None   # cosine(combined gradient, label terms' gradient)

    def weighted_norm(self, name: str) -> float:
        return self.weights.get(name, 0.0) * self.grad_norms.get(name, 0.0)


def _flat(grads: Sequence[torch.Tensor | None], params: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1).float()
                      for g, p in zip(grads, params)])


def measure_terms(objective: DistillationObjective, batch, params: Sequence[torch.Tensor], step: int,
                  total_steps: int, names: Sequence[str] | None = None) -> TermMeasure:
    """Every term of the method (or ``names``) on ``batch``, with gradient norms.
    The caller chooses train or eval mode; nothing is stepped."""
    _, weights = objective.weights(step, total_steps)
    names = list(names or objective.method.term_names)
    values = objective.terms(batch, names)
    values.pop(_ANCHOR)
    flat: dict[str, torch.Tensor] = {}
    for name, value in values.items():
        if not value.requires_grad:
            flat[name] = torch.zeros(sum(p.numel() for p in params))
            continue
        grads = torch.autograd.grad(value, params, retain_graph=True, allow_unused=True)
        flat[name] = _flat(grads, params)
    combined = sum(weights.get(n, 0.0) * g for n, g in flat.items())
    labels = sum(weights.get(n, 0.0) * g for n, g in flat.items() if n in LABEL_TERMS)
    cosine = None
    if isinstance(combined, torch.Tensor) and isinstance(labels, torch.Tensor):
        # In float64: a float32 dot product over tens of millions of parameters drifts
        # by ~1% (a soft-and-gold-only method measured cos 1.006 against itself).
        combined, labels = combined.double(), labels.double()
        denom = float(combined.norm() * labels.norm())
        cosine = float(combined @ labels) / denom if denom > 0 else None
    return TermMeasure({n: float(v.detach()) for n, v in values.items()},
                       {n: float(g.norm()) for n, g in flat.items()},
                       {n: float(weights.get(n, 0.0)) for n in values}, cosine)


@dataclass
class Calibration:
    """Scales of the matching terms and the measurements they came from."""

    scales: dict[str, float]
    reference: str                    # the term whose weighted gradient norm the others match
    ratio: float
    batches: int
    mean_weighted_norms: dict[str, float] = field(default_factory=dict)   # before scaling
    mean_values: dict[str, float] = field(default_factory=dict)
    ratios: dict[str, float] = field(default_factory=dict)  # a term's own ratio, in place of ``ratio``

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Calibration":
        return cls(**data)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / (CALIBRATION_FILE + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1), encoding="utf-8")
        tmp.replace(folder / CALIBRATION_FILE)

    @classmethod
    def load(cls, folder: Path) -> "Calibration | None":
        path = folder / CALIBRATION_FILE
        if not path.is_file():
            return None
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))


def _mean(xs: Iterable[float]) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else 0.0


def calibrate(objective: DistillationObjective, batches: Iterable, params: Sequence[torch.Tensor],
              total_steps: int, ratio: float = 1.0, ratios: dict[str, float] | None = None) -> Calibration:
    """Scale every matching term (but those a method keeps at their own weight) so
    that, at step 0 and averaged over ``batches``, its weighted gradient norm is
    ``ratio`` (or its own entry in ``ratios``) times the reference label term's: gold
    (its weighted norm, or its plain norm where the schedule gives it no weight at
    the start, as TinyBERT's first stage does), else soft labels."""
    names = objective.method.term_names
    calibrated = objective.method.calibrated_terms
    reference = next((n for n in ("gold", "soft") if n in names), None)
    measures = [measure_terms(objective, b, params, 0, total_steps) for b in batches]
    if reference is None or not measures:
        return Calibration({}, reference or "", ratio, len(measures), ratios=dict(ratios or {}))
    weighted = {n: _mean(m.weighted_norm(n) for m in measures) for n in names}
    values = {n: _mean(m.values[n] for m in measures) for n in names}
    ref_norm = weighted[reference] or _mean(m.grad_norms[reference] for m in measures)
    scales = {}
    for name in names:
        if name in calibrated and weighted[name] > 0 and math.isfinite(weighted[name]) and ref_norm > 0:
            scales[name] = (ratios or {}).get(name, ratio) * ref_norm / weighted[name]
    return Calibration(scales, reference, ratio, len(measures), weighted, values, dict(ratios or {}))


def fit_projection(projection: torch.nn.Linear, pairs: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> float:
    """Least-squares W_h (and bias) mapping student hidden states to the teacher's,
    from ``pairs`` of (student states (N, d_s), teacher states (N, d_t)) over real
    tokens; returns the fitted mean squared error. A random W_h at the student's small
    learning rate barely moves; this starts it where the hidden term is already small."""
    x = torch.cat([p[0] for p in pairs]).double()
    y = torch.cat([p[1] for p in pairs]).double()
    x1 = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], dim=1)
    # A little ridge keeps the fit sane when there are few tokens or correlated dimensions.
    lam = 1e-3 * float((x1 * x1).mean())
    gram = x1.T @ x1 + lam * torch.eye(x1.shape[1], dtype=x.dtype)
    w = torch.linalg.solve(gram, x1.T @ y)  # (d_s + 1, d_t)
    with torch.no_grad():
        projection.weight.copy_(w[:-1].T.to(projection.weight.dtype))
        projection.bias.copy_(w[-1].to(projection.bias.dtype))
    return float(((x1 @ w - y) ** 2).mean())


def fit_projections(objective: DistillationObjective, batches: Iterable) -> dict[str, float]:
    """Fit W_h (hidden states, over every mapped layer pair) and W_e (embeddings)
    where the objective has them, on ``batches``; returns each one's fitted MSE."""
    parts = objective.parts
    wanted = {name: proj for name, proj in (("hidden_projection", parts.hidden_projection),
                                             ("embedding_projection", parts.embedding_projection))
              if proj is not None}
    if not wanted:
        return {}
    n = len(objective.mapping)
    pairs: dict[str, list[tuple[torch.Tensor, torch.Tensor]]] = {name: [] for name in wanted}
    with torch.no_grad():
        for batch in batches:
            if objective.aligner is not None:
                # Another tokenizer: the same subwords (else the clear message), before pairing positions.
                objective.aligner.check(batch.teacher, batch.student)
            sb = batch.student
            s = capture(objective.student, sb.input_ids, sb.attention_mask, list(range(0, n + 1)), [], "scores")
            if objective.teacher is None:
                raise ValueError("fitting the projections reads the teacher's outputs, and there is no teacher")
            t = objective.teacher.outputs(batch.teacher)
            real = sb.attention_mask.bool()
            if "hidden_projection" in pairs:
                for j, m in enumerate(objective.mapping, start=1):
                    if m in t.hidden:
                        pairs["hidden_projection"].append((s.hidden[j][real].float().cpu(),
                                                           t.hidden[m][real].float().cpu()))
            if "embedding_projection" in pairs and 0 in t.hidden:
                pairs["embedding_projection"].append((s.hidden[0][real].float().cpu(),
                                                      t.hidden[0][real].float().cpu()))
    return {name: fit_projection(wanted[name], pairs[name]) for name in wanted if pairs[name]}
