"""The loss terms of every distillation method, as plain tensor functions.

The gold-label term is not here: every method takes it from
:mod:`fastbioner.models.losses`, as teacher fine-tuning does.

Shapes: logits ``(B, L, C)``, hidden states ``(B, L, D)``, attention maps
``(B, H, L, L)``; ``mask`` is a ``(B, L)`` bool tensor of the positions a term is
taken over (positions that carry a label for the label terms, real tokens for the
intermediate-layer terms). Every term averages over its positions, so its size does
not depend on the batch's padding, and returns a 0-dim tensor that is exactly 0
(still attached to the graph) when there is nothing to average.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _empty(like: torch.Tensor) -> torch.Tensor:
    return like.sum() * 0.0


def _masked_mean(per_position: torch.Tensor, mask: torch.Tensor,
                 weights: torch.Tensor | None = None) -> torch.Tensor:
    """Mean of ``per_position`` (B, L) over ``mask``; ``weights`` (B, L) scale each
    position but the mean still divides by the number of positions, so a weight
    below 1 really lowers a position's say (a low-confidence soft label)."""
    mask = mask.to(per_position.dtype)
    count = mask.sum()
    if count == 0:
        return _empty(per_position)
    if weights is not None:
        mask = mask * weights.to(per_position.dtype)
    return (per_position * mask).sum() / count


def soft_label_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, mask: torch.Tensor,
                    temperature: float = 1.0, scale_by_t2: bool = True,
                    weights: torch.Tensor | None = None) -> torch.Tensor:
    """L_SL: cross-entropy between the teacher's and the student's distributions
    softened by ``temperature``.

    Computed as KL(teacher || student), which is the cross-entropy minus the
    teacher's entropy: the gradient is the same, and the value reads 0 when the
    student matches the teacher, so a logged 0.01 means "nearly matched" whatever
    the teacher's own uncertainty. ``scale_by_t2`` multiplies by T^2 so the
    gradient keeps its size across temperatures (Hinton et al.)."""
    t = float(temperature)
    log_p_s = F.log_softmax(student_logits.float() / t, dim=-1)
    log_p_t = F.log_softmax(teacher_logits.float() / t, dim=-1)
    per_position = (log_p_t.exp() * (log_p_t - log_p_s)).sum(-1)
    loss = _masked_mean(per_position, mask, weights)
    return loss * (t * t) if scale_by_t2 else loss


def soft_label_loss_to(student_logits: torch.Tensor, target_probs: torch.Tensor, mask: torch.Tensor,
                       temperature: float = 1.0, scale_by_t2: bool = True,
                       weights: torch.Tensor | None = None) -> torch.Tensor:
    """L_SL against soft labels given as probabilities (several teachers' combined
    labels, already at ``temperature``): KL(target || student at T), as
    :func:`soft_label_loss`."""
    t = float(temperature)
    log_p_s = F.log_softmax(student_logits.float() / t, dim=-1)
    p_t = target_probs.float()
    per_position = (p_t * (torch.log(p_t.clamp_min(1e-12)) - log_p_s)).sum(-1)
    loss = _masked_mean(per_position, mask, weights)
    return loss * (t * t) if scale_by_t2 else loss


def hidden_mse(student_hidden: torch.Tensor, teacher_hidden: torch.Tensor, mask: torch.Tensor,
               projection: torch.nn.Module | None = None) -> torch.Tensor:
    """MSE(H_s W_h, H_t) over real tokens (mean over tokens and dimensions);
    ``projection`` is W_h, present only when the widths differ."""
    h_s = projection(student_hidden) if projection is not None else student_hidden
    per_position = (h_s.float() - teacher_hidden.float()).pow(2).mean(-1)
    return _masked_mean(per_position, mask)


def normalized_hidden_mse(student_hidden: torch.Tensor, teacher_hidden: torch.Tensor, mask: torch.Tensor,
                          projection: torch.nn.Module | None = None) -> torch.Tensor:
    """Patient KD's term: squared distance between the unit-normalised hidden
    vectors of each real token (0 to 4, i.e. 2 - 2 cos), mean over tokens."""
    h_s = projection(student_hidden) if projection is not None else student_hidden
    h_s = F.normalize(h_s.float(), dim=-1)
    h_t = F.normalize(teacher_hidden.float(), dim=-1)
    return _masked_mean((h_s - h_t).pow(2).sum(-1), mask)


def head_average(attention: torch.Tensor) -> torch.Tensor:
    return attention.mean(dim=1, keepdim=True)


def centre_rows(attention: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each query row minus its mean over the real keys: softmax(x + c) = softmax(x),
    so a per-row offset of the scores carries nothing the student could use."""
    keys = mask[:, None, None, :].to(attention.dtype)  # (B, 1, 1, L)
    mean = (attention * keys).sum(-1, keepdim=True) / keys.sum(-1, keepdim=True).clamp(min=1)
    return attention - mean


def attention_mse(student_attention: torch.Tensor, teacher_attention: torch.Tensor,
                  mask: torch.Tensor, centre: bool = False) -> torch.Tensor:
    """Mean over heads of MSE(A_s, A_t), over query and key positions that are both
    real tokens. When the head counts differ (or the teacher's maps were cached
    head-averaged) both sides are compared as head-averaged maps. ``centre``
    compares row-centred maps (:func:`centre_rows`)."""
    a_s, a_t = student_attention.float(), teacher_attention.float()
    if a_s.shape[1] != a_t.shape[1]:
        a_s = head_average(a_s)
        a_t = head_average(a_t) if a_t.shape[1] != 1 else a_t
    if centre:
        a_s, a_t = centre_rows(a_s, mask), centre_rows(a_t, mask)
    pair = (mask[:, :, None] & mask[:, None, :]).to(a_s.dtype)  # (B, L, L)
    count = pair.sum() * a_s.shape[1]
    if count == 0:
        return _empty(a_s)
    sq = (a_s - a_t).pow(2) * pair[:, None]
    return sq.sum() / count


def prob_mse(student_logits: torch.Tensor, teacher_logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Squared distance between the softmax outputs (summed over classes), mean over
    positions: the BERT+CRF to BiGRU+CRF paper's term."""
    diff = student_logits.float().softmax(-1) - teacher_logits.float().softmax(-1)
    return _masked_mean(diff.pow(2).sum(-1), mask)


def logit_mse(student_logits: torch.Tensor, teacher_logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Squared distance between the logits (summed over classes), mean over
    positions: the BERT to BiLSTM paper's term."""
    diff = student_logits.float() - teacher_logits.float()
    return _masked_mean(diff.pow(2).sum(-1), mask)


def confidence_weights(teacher_logits: torch.Tensor) -> torch.Tensor:
    """Each position's weight for a soft label on unlabelled text: the teacher's top
    probability squared (the multi-teacher cross-lingual NER paper), so the student
    learns little from the positions the teacher itself is unsure of."""
    return teacher_logits.float().softmax(-1).amax(-1).pow(2)
