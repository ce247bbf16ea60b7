"""A linear-chain CRF in plain torch (pytorch-crf is unmaintained).

Sequences are left-aligned: ``mask`` (B, T) is True on a prefix of each row, the
first position of every row is real. The recurrent student runs it over the first
subword of each word, so transitions are between word labels.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from fastbioner.models.architectures.positions import first_positions, gather_positions
from fastbioner.models.losses import CrossEntropy


class CRF(nn.Module):
    def __init__(self, num_tags: int):
        super().__init__()
        self.num_tags = num_tags
        self.start = nn.Parameter(torch.zeros(num_tags))
        self.end = nn.Parameter(torch.zeros(num_tags))
        self.transitions = nn.Parameter(torch.zeros(num_tags, num_tags))  # [from, to]

    def nll(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Mean negative log-likelihood of ``tags`` over the sequences that have at
        least one position."""
        keep = mask[:, 0]
        if not keep.any():
            return emissions.sum() * 0.0
        emissions, tags, mask = emissions[keep].float(), tags[keep], mask[keep]
        return (self._log_partition(emissions, mask) - self._score(emissions, tags, mask)).mean()

    def _score(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b = torch.arange(emissions.shape[0], device=emissions.device)
        m = mask.to(emissions.dtype)
        tags = tags.clamp(min=0)  # padded positions are masked out below
        score = self.start[tags[:, 0]] + emissions[b, 0, tags[:, 0]]
        for t in range(1, emissions.shape[1]):
            step = self.transitions[tags[:, t - 1], tags[:, t]] + emissions[b, t, tags[:, t]]
            score = score + step * m[:, t]
        last = mask.long().sum(1) - 1
        return score + self.end[tags[b, last]]

    def _log_partition(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        alpha = self.start + emissions[:, 0]  # (B, K)
        for t in range(1, emissions.shape[1]):
            nxt = torch.logsumexp(alpha[:, :, None] + self.transitions[None] + emissions[:, t, None, :], dim=1)
            alpha = torch.where(mask[:, t, None], nxt, alpha)
        return torch.logsumexp(alpha + self.end, dim=1)

    @torch.no_grad()
    def decode(self, emissions: torch.Tensor, mask: torch.Tensor) -> list[list[int]]:
        """Viterbi: the best tag sequence of each row, as long as its real prefix.

        In numpy, the recursion too: each step is a few operations on (rows, tags, tags),
        some hundreds of numbers, where a torch operation's fixed cost (dispatch, and
        on several threads their wake-up) was most of its time: the recursion took 12%
        of tagging 500 abstracts with the fast model on one thread, and far more with
        threads waiting on a busy machine (issue 69). The same float32 sums, so the
        same paths."""
        e = emissions.detach().float().cpu().numpy()
        real = mask.detach().cpu().numpy().astype(bool)
        transitions = self.transitions.detach().float().cpu().numpy()
        score = self.start.detach().float().cpu().numpy() + e[:, 0]
        rows, steps = e.shape[0], e.shape[1]
        back = np.zeros((max(steps - 1, 0), rows, self.num_tags), dtype=np.int64)
        for t in range(1, steps):
            candidates = score[:, :, None] + transitions[None]           # (rows, from, to)
            idx = candidates.argmax(1)
            best = candidates.max(1)       # the value at idx (cheaper than gathering it)
            score = np.where(real[:, t, None], best + e[:, t], score)
            back[t - 1] = idx
        score = score + self.end.detach().float().cpu().numpy()
        # The backtrace runs over all rows at once (a Python loop over every position of
        # every row cost a second per 500 abstracts). A row's positions past its end
        # never move its tag: it starts at its own last position.
        lengths = real.sum(1)
        index = np.arange(rows)
        tag = score.argmax(-1)
        paths = np.zeros((rows, steps), dtype=np.int64)
        paths[index, np.maximum(lengths - 1, 0)] = tag
        for t in range(steps - 1, 0, -1):
            active = lengths - 1 >= t
            tag = np.where(active, back[t - 1, index, tag], tag)
            paths[active, t - 1] = tag[active]
        return [paths[i, :n].tolist() for i, n in enumerate(lengths.tolist())]


def first_subword_nll(crf: CRF | None, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """A tagger's gold loss: the CRF's negative log-likelihood over the labelled
    positions (the first subword of each word), or token cross-entropy without a CRF."""
    if crf is None:
        return CrossEntropy()(logits, labels)
    index, valid = first_positions(labels)
    return crf.nll(gather_positions(logits, index), gather_positions(labels, index), valid)


def label_count(num_labels: int | None) -> int:
    """A tagger's number of labels (a config's ``num_labels``, None when it has no
    ``id2label``): a tagger needs them named."""
    if num_labels is None:
        raise ValueError("the config names no labels (id2label)")
    return num_labels


@torch.no_grad()
def first_subword_decode(crf: CRF | None, logits: torch.Tensor, label_mask: torch.Tensor) -> list[list[int]]:
    """Best label id of each labelled position (``label_mask``, usually the first
    subword of each word), row by row: Viterbi with a CRF, argmax without."""
    index, valid = first_positions(label_mask)
    emissions = gather_positions(logits, index)
    if crf is not None:
        return crf.decode(emissions, valid)
    best = emissions.argmax(-1)
    return [best[i, :int(v.sum())].tolist() for i, v in enumerate(valid)]
