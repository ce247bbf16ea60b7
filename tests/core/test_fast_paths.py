"""The inference-only paths that cut the fast model's time (issue 69) compute what the
training paths do: the convolution's block without the window's copies, and Viterbi
in numpy."""

from __future__ import annotations

import itertools

import pytest
import torch

from fastbioner.models.architectures.convolution import ConvBlock
from fastbioner.models.architectures.crf import CRF


@pytest.mark.parametrize("kernel", [1, 3, 5])
@pytest.mark.parametrize("length", [1, 2, 3, 9])
def test_the_block_without_window_copies_scores_as_the_window(kernel, length):
    torch.manual_seed(kernel * 10 + length)
    block = ConvBlock(16, kernel, dropout=0.0).eval()
    h = torch.randn(3, length, 16)
    keep = (torch.arange(length)[None] < torch.tensor([length, 1, max(1, length - 1)])[:, None]).float()[..., None]
    trained_way = block(h, keep)            # gradients on: the window path
    with torch.inference_mode():
        fast = block(h, keep)
    assert torch.allclose(fast, trained_way, atol=1e-5)


def _best_path(crf: CRF, emissions: torch.Tensor) -> list[int]:
    """Every tag sequence scored; the best (one row, all positions real)."""
    def score(path):
        s = crf.start[path[0]] + emissions[0, path[0]] + crf.end[path[-1]]
        return s + sum(crf.transitions[a, b] + emissions[t + 1, b] for t, (a, b) in enumerate(zip(path, path[1:])))
    return list(max(itertools.product(range(crf.num_tags), repeat=len(emissions)), key=lambda p: float(score(p))))


def test_viterbi_finds_the_best_path_of_each_row_whatever_its_length():
    torch.manual_seed(0)
    crf = CRF(3)
    with torch.no_grad():
        for p in crf.parameters():
            p.normal_()
    emissions = torch.randn(4, 5, 3) * 2
    lengths = [5, 1, 3, 4]
    mask = torch.arange(5)[None] < torch.tensor(lengths)[:, None]
    paths = crf.decode(emissions, mask)
    assert [len(p) for p in paths] == lengths
    with torch.no_grad():
        assert paths == [_best_path(crf, emissions[i, :n]) for i, n in enumerate(lengths)]
