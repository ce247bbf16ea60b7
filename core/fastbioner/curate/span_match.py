"""Matching two annotators' mentions by sorting and sweeping, so that agreement on a
document of tens of thousands of mentions takes time near-linear in them (comparing
every mention with every other one took minutes at 30,000 a side).

The rules are :mod:`fastbioner.curate.agreement`'s and the results the same as the
all-pairs comparison they replace (``tests/core/test_span_match.py`` holds the two
side by side on random inputs):

- :func:`overlap_found`: which mentions of one side overlap a mention of the same
  type on the other side (``--match overlap``): a prefix maximum of the other side's
  ends over its starts, one binary search per mention.
- :func:`overlapping_pairs`: every overlapping pair of an A and a B mention, by one
  sweep over both lists sorted by start. The cost is the number of mentions plus the
  number of pairs found; mentions overlap a handful of others in any real annotation,
  but thousands of mentions nested in one another would pair every one with every
  other, so past :data:`MAX_OVERLAPPING_PAIRS` the caller is refused rather than left
  to exhaust memory.
"""

from __future__ import annotations

import bisect
from itertools import accumulate
from typing import Sequence

from fastbioner.base.errors import InputError
from fastbioner.io.documents import Span

# Pairs of overlapping A and B mentions left after exact and same-offset matches, per
# document (each pair costs about 100 bytes while the pairs are ranked).
MAX_OVERLAPPING_PAIRS = 5_000_000


def overlap_found(xs: Sequence[Span], ys: Sequence[Span]) -> list[bool]:
    """For each mention of ``xs``, whether some mention of ``ys`` with the same label
    overlaps it (``Span.overlaps``: ``y.start < x.end and x.start < y.end``)."""
    by_label: dict[str, list[Span]] = {}
    for y in ys:
        by_label.setdefault(y.label, []).append(y)
    # Per label: ys sorted by start, and the largest end among the first k of them.
    index: dict[str, tuple[list[int], list[int]]] = {}
    for label, group in by_label.items():
        group.sort(key=lambda y: y.start)
        index[label] = [y.start for y in group], list(accumulate((y.end for y in group), max))
    out = []
    for x in xs:
        got = index.get(x.label)
        if got is None:
            out.append(False)
            continue
        starts, max_end = got
        k = bisect.bisect_left(starts, x.end)  # the ys starting before x ends
        out.append(k > 0 and max_end[k - 1] > x.start)
    return out


def overlapping_pairs(xs: Sequence[Span], ys: Sequence[Span], doc_id: str = "",
                      limit: int = MAX_OVERLAPPING_PAIRS) -> list[tuple[int, int]]:
    """Every ``(i, j)`` with ``xs[i]`` overlapping ``ys[j]``, in no particular order.

    Both lists are walked together by start; each mention is held "open" until a later
    start passes its end, and pairs with every open mention of the other side. More
    than ``limit`` pairs is an InputError naming the document."""
    # At one offset, zero-length mentions come first: closed at once, they never hold a
    # mention open that they do not overlap, so every open mention met is a pair.
    events = sorted([(x.start, x.end > x.start, 0, i) for i, x in enumerate(xs)]
                    + [(y.start, y.end > y.start, 1, j) for j, y in enumerate(ys)])
    open_: tuple[list[int], list[int]] = ([], [])
    spans = (xs, ys)
    out: list[tuple[int, int]] = []
    for start, _, side, k in events:
        other = 1 - side
        # Close the other side's mentions that end at or before this start: they can
        # overlap nothing that starts here or later.
        still = [m for m in open_[other] if spans[other][m].end > start]
        open_[other][:] = still
        me = spans[side][k]
        for m in still:
            o = spans[other][m]
            if o.start < me.end and me.start < o.end:  # a zero-length span overlaps only what holds it
                out.append((k, m) if side == 0 else (m, k))
        if len(out) > limit:
            raise InputError(f"document {doc_id}: over {limit:,} pairs of overlapping mentions differ between "
                             "the two annotations (mentions nested in one another by the thousand); too many "
                             "to pair up")
        open_[side].append(k)
    return out
