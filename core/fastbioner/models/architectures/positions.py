"""Gathering the labelled positions of a batch (the first subword of each word),
left-aligned: what a CRF's emissions and word-level comparisons are taken over."""

from __future__ import annotations

import torch

from fastbioner.models.encoding import IGNORE_INDEX


def first_positions(labels_or_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Index of the labelled positions of each row, left-aligned: ``(index, valid)``,
    both (B, W) where W is the most labelled positions in a row. ``labels_or_mask``
    is either labels (-100 where none) or a bool mask."""
    mask = labels_or_mask if labels_or_mask.dtype == torch.bool else labels_or_mask != IGNORE_INDEX
    counts = mask.sum(1)
    width = int(counts.max()) if mask.numel() else 0
    # Stable sort puts the labelled positions first, in their original order.
    order = torch.sort((~mask).to(torch.int8), dim=1, stable=True).indices[:, :max(width, 1)]
    valid = torch.arange(order.shape[1], device=mask.device)[None, :] < counts[:, None]
    return order, valid


def gather_positions(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``values`` (B, L, ...) at ``index`` (B, W) -> (B, W, ...)."""
    shape = index.shape + values.shape[2:]
    idx = index.reshape(index.shape + (1,) * (values.dim() - 2)).expand(shape)
    return values.gather(1, idx)
