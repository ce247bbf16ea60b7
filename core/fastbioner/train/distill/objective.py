"""The distillation objective the shared training loop optimises:
``objective(batch, step, total_steps) -> (loss, {term: value})``.

One code path for every method: the method's schedule gives ``w`` (FastBioNER's
phi), each listed term its weight, and only terms with a non-zero weight are
computed, so after phi reaches 0 (the last ``b`` of FastBioNER's training) the
teacher is not consulted at all. The logged values are the unweighted terms plus
``phi`` (the schedule's ``w``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import torch
from torch import nn

from fastbioner.models.encoding import IGNORE_INDEX
from fastbioner.train.distill.alignment import DistillBatch, SubwordAligner, check_same_words, word_level
from fastbioner.train.distill.capture import capture
from fastbioner.train.distill.losses import (
    attention_mse, confidence_weights, hidden_mse, logit_mse, normalized_hidden_mse, prob_mse, soft_label_loss,
    soft_label_loss_to,
)
from fastbioner.train.distill.methods import TOKEN_LEVEL_TERMS, Method, term_reads_teacher
from fastbioner.train.distill.teacher_cache import TeacherOutputs, TeacherSource


@dataclass
class ObjectiveParts:
    """The trainable pieces besides the student: W_h (hidden states) and W_e
    (embeddings, TinyBERT), each present only when the widths differ."""

    hidden_projection: nn.Linear | None = None
    embedding_projection: nn.Linear | None = None

    def modules(self) -> dict[str, nn.Module]:
        out: dict[str, nn.Module] = {}
        if self.hidden_projection is not None:
            out["hidden_projection"] = self.hidden_projection
        if self.embedding_projection is not None:
            out["embedding_projection"] = self.embedding_projection
        return out


class TermInputs:
    """What a loss term reads for one batch: the student's capture, the teacher's
    outputs and the masks, with the label-level views built once, on first use."""

    def __init__(self, objective: "DistillationObjective", batch: DistillBatch, s, t: TeacherOutputs | None):
        self.objective, self.batch, self.s, self.t = objective, batch, s, t
        self.real = batch.student.attention_mask.bool()
        self.pairs = list(enumerate(objective.mapping, start=1))
        self._labels: tuple | None = None

    @property
    def teacher(self) -> TeacherOutputs:
        """The teacher's outputs, for a term that reads them (they are fetched then)."""
        if self.t is None:
            raise ValueError("a term reads the teacher's outputs, which were not fetched")
        return self.t

    def label_level(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Student logits, teacher logits, mask and per-position weights where the
        label terms compare them: every labelled subword when both sides share the
        tokenizer, else the first subword of each word."""
        if self._labels is None:
            batch, student_logits, teacher_logits = self.batch, self.s.logits, self.teacher.logits
            if batch.shared:
                mask = batch.student.gold != IGNORE_INDEX
            else:
                teacher_logits, t_valid = word_level(teacher_logits, batch.teacher)
                student_logits, mask = word_level(student_logits, batch.student)
                check_same_words(t_valid, mask, batch.teacher)
            # Unlabelled rows learn from soft labels weighted by the teacher's confidence.
            weights = torch.where(batch.unlabeled[:, None], confidence_weights(teacher_logits),
                                  torch.ones_like(mask, dtype=torch.float32))
            self._labels = (student_logits, teacher_logits, mask, weights)
        return self._labels


def _total(terms: Iterable[torch.Tensor]) -> torch.Tensor:
    """``sum(terms)`` (0 + each term in turn, as Python's sum adds), typed as the tensor it is."""
    total: Any = 0
    for term in terms:
        total = total + term
    return total


def _gold(x: TermInputs) -> torch.Tensor:
    sb = x.batch.student
    labels = sb.gold.masked_fill(x.batch.unlabeled[:, None], IGNORE_INDEX)
    return x.objective.gold_loss(x.s.logits, labels)


def _soft(x: TermInputs) -> torch.Tensor:
    method = x.objective.method
    ensemble = x.objective.ensemble
    if ensemble is not None:  # several teachers: their combined soft labels, word by word
        sb = x.batch.student
        target, mask, confidence = ensemble.batch_targets(sb)
        weights = torch.where(x.batch.unlabeled[:, None], confidence.pow(2), torch.ones_like(confidence))
        return soft_label_loss_to(x.s.logits, target, mask, method.temperature, x.objective.scale_by_t2, weights)
    student, teacher, mask, weights = x.label_level()
    return soft_label_loss(student, teacher, mask, method.temperature, x.objective.scale_by_t2, weights)


def _prob_mse(x: TermInputs) -> torch.Tensor:
    student, teacher, mask, _ = x.label_level()
    return prob_mse(student, teacher, mask)


def _logit_mse(x: TermInputs) -> torch.Tensor:
    student, teacher, mask, _ = x.label_level()
    return logit_mse(student, teacher, mask)


def _embedding(x: TermInputs) -> torch.Tensor:
    return hidden_mse(x.s.hidden[0], x.teacher.hidden[0], x.real, x.objective.parts.embedding_projection)


def _hidden(x: TermInputs) -> torch.Tensor:
    proj = x.objective.parts.hidden_projection
    return _total(hidden_mse(x.s.hidden[j], x.teacher.hidden[m], x.real, proj) for j, m in x.pairs)


def _hidden_norm(x: TermInputs) -> torch.Tensor:
    proj = x.objective.parts.hidden_projection
    return _total(normalized_hidden_mse(x.s.hidden[j], x.teacher.hidden[m], x.real, proj) for j, m in x.pairs)


def _attention(x: TermInputs) -> torch.Tensor:
    centre = x.objective.attention_form == "centred"
    return _total(attention_mse(x.s.attention[j], x.teacher.attention[m], x.real, centre=centre)
                  for j, m in x.pairs)


# Every loss term by name: a new term is one function and one entry here (and its name
# in methods.TERM_NAMES).
TERMS: dict[str, Callable[[TermInputs], torch.Tensor]] = {
    "gold": _gold, "soft": _soft, "prob-mse": _prob_mse, "logit-mse": _logit_mse,
    "embedding": _embedding, "hidden": _hidden, "hidden-norm": _hidden_norm, "attention": _attention,
}


class DistillationObjective:
    def __init__(self, student: nn.Module, method: Method, teacher: TeacherSource | None,
                 mapping: Sequence[int], gold_loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                 parts: ObjectiveParts | None = None, scale_by_t2: bool = True,
                 attention_kind: str = "scores", aligner: SubwordAligner | None = None,
                 ensemble=None):
        self.student = student
        self.method = method
        self.teacher = teacher
        self.mapping = list(mapping)  # teacher layer of student layer j = mapping[j - 1]
        self.gold_loss = gold_loss
        self.parts = parts or ObjectiveParts()
        self.scale_by_t2 = scale_by_t2
        # "scores", "centred" (scores with each query row's mean taken out) or "probs"
        self.attention_form = attention_kind
        self.aligner = aligner
        # Per-term factors found by calibration (fastbioner.train.distill.calibration); 1 if absent.
        self.scales: dict[str, float] = {}
        # Several teachers' combined soft labels (fastbioner.train.distill.ensemble), if any:
        # they stand in for the first teacher's logits in the soft-label term.
        self.ensemble = ensemble
        if method.reads_teacher(ensemble is not None) and teacher is None:
            raise ValueError(f"method {method.name} needs the teacher's outputs")

    @property
    def capture_kind(self) -> str:
        return "probs" if self.attention_form == "probs" else "scores"

    def use_modules(self, wrapped: dict[str, nn.Module]) -> None:
        """Train through these (DDP-wrapped) modules from now on (the Trainer's call)."""
        self.student = wrapped.get("student", self.student)

    def weights(self, step: int, total_steps: int) -> tuple[float, dict[str, float]]:
        """The schedule's ``w`` and each term's full weight (method, user, calibration)."""
        w, weights = self.method.weights(step, total_steps)
        return w, {name: wt * self.scales.get(name, 1.0) for name, wt in weights.items()}

    def terms(self, batch: DistillBatch, names: Sequence[str]) -> dict[str, torch.Tensor]:
        """The unweighted values of the terms ``names`` on ``batch`` (one student pass)."""
        sb = batch.student
        n = len(self.mapping)
        hidden_layers: list[int] = []
        if "embedding" in names:
            hidden_layers.append(0)
        if "hidden" in names or "hidden-norm" in names:
            hidden_layers.extend(range(1, n + 1))
        attention_layers = list(range(1, n + 1)) if "attention" in names else []
        s = capture(self.student, sb.input_ids, sb.attention_mask, hidden_layers, attention_layers,
                    self.capture_kind)
        t = None
        if any(term_reads_teacher(name, self.ensemble is not None) for name in names):
            if self.teacher is None:
                raise ValueError(f"the terms {', '.join(names)} read a teacher, and the objective has none")
            t = self.teacher.outputs(batch.teacher)
            if any(name in TOKEN_LEVEL_TERMS for name in names) and not batch.shared:
                if self.aligner is None:
                    raise ValueError("token-level terms over two tokenizers need a subword aligner")
                self.aligner.check(batch.teacher, batch.student)
        inputs = TermInputs(self, batch, s, t)
        values = {name: TERMS[name](inputs) for name in names}
        # Tied to the student, so a step with no weighted term (possible only at a
        # schedule's edge) is a valid, empty update.
        values[_ANCHOR] = s.logits.sum() * 0.0
        return values

    def __call__(self, batch: DistillBatch, step: int, total_steps: int) -> tuple[torch.Tensor, dict[str, float]]:
        w, weights = self.weights(step, total_steps)
        active = {name: wt for name, wt in weights.items() if wt != 0.0}
        terms = self.terms(batch, list(active))
        anchor = terms.pop(_ANCHOR)
        loss = anchor + sum(active[name] * value for name, value in terms.items())
        logs = {name: float(value.detach()) for name, value in terms.items()}
        logs["loss"] = float(loss.detach())  # L_total, the weighted sum the optimiser sees
        logs["phi"] = w
        return loss, logs


_ANCHOR = "_anchor"
