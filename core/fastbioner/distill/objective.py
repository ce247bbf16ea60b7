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
from typing import Callable, Sequence

import torch
from torch import nn

from ..encoding import IGNORE_INDEX
from .alignment import DistillBatch, SubwordAligner, check_same_words, word_level
from .capture import capture
from .losses import (attention_mse, confidence_weights, hidden_mse, logit_mse, normalized_hidden_mse,
                     prob_mse, soft_label_loss)
from .methods import TOKEN_LEVEL_TERMS, Method
from .teacher_cache import TeacherOutputs, TeacherSource

LABEL_TERMS = ("soft", "prob-mse", "logit-mse")


@dataclass
class ObjectiveParts:
    """The trainable pieces besides the student: W_h (hidden states) and W_e
    (embeddings, TinyBERT), each present only when the widths differ."""

    hidden_projection: nn.Module | None = None
    embedding_projection: nn.Module | None = None

    def modules(self) -> dict[str, nn.Module]:
        out = {}
        if self.hidden_projection is not None:
            out["hidden_projection"] = self.hidden_projection
        if self.embedding_projection is not None:
            out["embedding_projection"] = self.embedding_projection
        return out


class DistillationObjective:
    def __init__(self, student: nn.Module, method: Method, teacher: TeacherSource | None,
                 mapping: Sequence[int], gold_loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                 parts: ObjectiveParts | None = None, scale_by_t2: bool = True,
                 attention_kind: str = "scores", aligner: SubwordAligner | None = None):
        self.student = student
        self.method = method
        self.teacher = teacher
        self.mapping = list(mapping)  # teacher layer of student layer j = mapping[j - 1]
        self.gold_loss = gold_loss
        self.parts = parts or ObjectiveParts()
        self.scale_by_t2 = scale_by_t2
        self.attention_kind = attention_kind
        self.aligner = aligner
        if method.needs_teacher and teacher is None:
            raise ValueError(f"method {method.name} needs the teacher's outputs")

    def __call__(self, batch: DistillBatch, step: int, total_steps: int) -> tuple[torch.Tensor, dict[str, float]]:
        w, weights = self.method.weights(step, total_steps)
        active = {name: wt for name, wt in weights.items() if wt != 0.0}
        sb = batch.student
        n = len(self.mapping)
        hidden_layers: list[int] = []
        if "embedding" in active:
            hidden_layers.append(0)
        if "hidden" in active or "hidden-norm" in active:
            hidden_layers.extend(range(1, n + 1))
        attention_layers = list(range(1, n + 1)) if "attention" in active else []
        s = capture(self.student, sb.input_ids, sb.attention_mask, hidden_layers, attention_layers,
                    self.attention_kind)

        terms: dict[str, torch.Tensor] = {}
        if "gold" in active:
            labels = sb.labels.masked_fill(batch.unlabeled[:, None], IGNORE_INDEX)
            terms["gold"] = self.gold_loss(s.logits, labels)
        if any(name != "gold" for name in active):
            t = self.teacher.outputs(batch.teacher)
            if any(name in TOKEN_LEVEL_TERMS for name in active) and not batch.shared:
                self.aligner.check(batch.teacher, batch.student)
            terms.update(self._label_terms(active, s.logits, t, batch))
            terms.update(self._layer_terms(active, s, t, sb.attention_mask.bool()))

        # Starts from a zero tied to the student, so a step with no weighted term
        # (possible only at a schedule's edge) is a valid, empty update.
        loss = s.logits.sum() * 0.0 + sum(active[name] * value for name, value in terms.items())
        logs = {name: float(value.detach()) for name, value in terms.items()}
        logs["loss"] = float(loss.detach())  # L_total, the weighted sum the optimiser sees
        logs["phi"] = w
        return loss, logs

    def _label_terms(self, active: dict[str, float], student_logits: torch.Tensor, t: TeacherOutputs,
                     batch: DistillBatch) -> dict[str, torch.Tensor]:
        wanted = [name for name in LABEL_TERMS if name in active]
        if not wanted:
            return {}
        teacher_logits = t.logits
        if batch.shared:
            mask = batch.student.labels != IGNORE_INDEX
        else:  # another tokenizer: compare at the first subword of each word
            teacher_logits, t_valid = word_level(teacher_logits, batch.teacher)
            student_logits, mask = word_level(student_logits, batch.student)
            check_same_words(t_valid, mask, batch.teacher)
        # Unlabelled rows learn from soft labels weighted by the teacher's confidence.
        weights = torch.where(batch.unlabeled[:, None], confidence_weights(teacher_logits),
                              torch.ones_like(mask, dtype=torch.float32))
        out = {}
        if "soft" in active:
            out["soft"] = soft_label_loss(student_logits, teacher_logits, mask, self.method.temperature,
                                          self.scale_by_t2, weights)
        if "prob-mse" in active:
            out["prob-mse"] = prob_mse(student_logits, teacher_logits, mask)
        if "logit-mse" in active:
            out["logit-mse"] = logit_mse(student_logits, teacher_logits, mask)
        return out

    def _layer_terms(self, active: dict[str, float], s, t: TeacherOutputs,
                     real: torch.Tensor) -> dict[str, torch.Tensor]:
        out = {}
        proj = self.parts.hidden_projection
        pairs = list(enumerate(self.mapping, start=1))
        if "embedding" in active:
            out["embedding"] = hidden_mse(s.hidden[0], t.hidden[0], real, self.parts.embedding_projection)
        if "hidden" in active:
            out["hidden"] = sum(hidden_mse(s.hidden[j], t.hidden[m], real, proj) for j, m in pairs)
        if "hidden-norm" in active:
            out["hidden-norm"] = sum(normalized_hidden_mse(s.hidden[j], t.hidden[m], real, proj)
                                     for j, m in pairs)
        if "attention" in active:
            out["attention"] = sum(attention_mse(s.attention[j], t.attention[m], real) for j, m in pairs)
        return out
