"""The lookups of a concept dictionary (:mod:`fastbioner.curate.concepts`) over its rows,
built once, each part on its first use, and light on memory: arrays of row and concept
numbers and one string to search, nothing per row beyond what the dictionary holds.

A 60 MB dictionary (1.6 million rows) held as dictionaries of counters took 2.4 GB,
and each completion walked every concept (seconds per keystroke). Here:

- proposals bisect the rows ordered by text and by case-folded text;
- concepts (one per label and id, numbered by the dictionary) are ranked most
  mentioned first, then by id, then label: the order completion lists them in;
- completion searches one string holding, concept after concept in rank order, a tab
  and the case-folded id, then a tab and each case-folded mention text. ``str.find``
  scans it at C speed, so the first concepts found are the answer, found in rank order.
  A typed text, its white space collapsed, holds no tab, so it matches within one
  field, and after a tab only at a field's start (a prefix). Each label's concepts get
  a string of their own, cut from that one when a completion first asks for the label.

Orderings are stable sorts on one key each, never a tuple per item.
"""

from __future__ import annotations

import bisect
from array import array
from collections import Counter
from functools import cached_property
from itertools import accumulate
from typing import Callable, Container, Sequence


def _order(keys: Sequence, reverse: bool = False) -> list[int]:
    return sorted(range(len(keys)), key=keys.__getitem__, reverse=reverse)


class ConceptIndex:
    """Lookups over rows (``text``, ``concept_of``, ``count``: parallel) and concepts
    (``keys``: (label, id) per concept number)."""

    def __init__(self, text: list[str], concept_of: array, count: array, keys: list[tuple[str, str]]) -> None:
        self.text, self.concept_of, self.count, self.keys = text, concept_of, count, keys
        self._strings: dict[str | None, tuple[str, array, array]] = {}

    # -- proposals ----------------------------------------------------------------------
    @cached_property
    def _by_text(self) -> array:
        return array("q", _order(self.text))

    @cached_property
    def _by_folded(self) -> array:
        # For the sort only (bisection folds again); the text itself where folding changes nothing.
        folded = [f if f != t else t for t, f in zip(self.text, map(str.casefold, self.text))]
        return array("q", _order(folded))

    @staticmethod
    def _equal_range(order: array, key: str, of: Callable[[int], str]) -> list[int]:
        lo = bisect.bisect_left(order, key, key=of)
        return list(order[lo:bisect.bisect_right(order, key, lo, key=of)])

    def rows_with_text(self, text: str) -> list[int]:
        return self._equal_range(self._by_text, text, self.text.__getitem__)

    def rows_with_folded(self, folded: str) -> list[int]:
        return self._equal_range(self._by_folded, folded, lambda i: self.text[i].casefold())

    # -- concepts -----------------------------------------------------------------------
    @cached_property
    def total(self) -> list[int]:
        """Mentions per concept."""
        total = [0] * len(self.keys)
        for c, n in zip(self.concept_of, self.count):
            total[c] += n
        return total

    @cached_property
    def ranked(self) -> list[int]:
        """The concepts most mentioned first, then by id, then label (stable sorts)."""
        ranked = _order([k[0] for k in self.keys])
        ids = [k[1] for k in self.keys]
        ranked.sort(key=ids.__getitem__)
        del ids
        ranked.sort(key=self.total.__getitem__, reverse=True)
        return ranked

    @cached_property
    def _groups(self) -> tuple[array, array]:
        """The row numbers grouped by concept number (row order within one), and where
        each concept's rows start (and the end)."""
        sizes = Counter(self.concept_of)
        starts = array("q", accumulate((sizes[c] for c in range(len(self.keys))), initial=0))
        return array("q", _order(self.concept_of)), starts

    def rows_of(self, c: int) -> list[int]:
        groups, start = self._groups
        return list(groups[start[c]:start[c + 1]])

    @cached_property
    def _by_id(self) -> array:
        return array("q", _order([k[1] for k in self.keys]))

    def concepts_with_id(self, cid: str) -> list[int]:
        """The concepts (of any label) of an id, in the order first added."""
        return sorted(self._equal_range(self._by_id, cid, lambda c: self.keys[c][1]))

    # -- completion ---------------------------------------------------------------------
    def _string(self, label: str | None) -> tuple[str, array, array]:
        """The search string of ``label``'s concepts (None: all), the ranks it holds,
        and where each one's fields start (and the string's end)."""
        if label in self._strings:
            return self._strings[label]
        ranked = self.ranked
        parts: list[str]
        if label is not None:
            text, _, starts = self._string(None)
            mine = [r for r, c in enumerate(ranked) if self.keys[c][0] == label]
            parts = [text[starts[r]:starts[r + 1]] for r in mine]
            got = "".join(parts), array("q", mine), array("q", accumulate(map(len, parts), initial=0))
        else:
            # Per concept (in rank order) its id, then its rows' texts, each after a tab.
            groups, start = self._groups
            texts = list(map(self.text.__getitem__, groups))
            parts = []
            for c in ranked:
                parts.append(self.keys[c][1])
                parts.extend(texts[start[c]:start[c + 1]])
            del texts
            folded = ("\t" + "\t".join(parts)).casefold()
            if len(folded) != sum(map(len, parts)) + len(parts):  # a letter folding to two (ß -> ss)
                parts = [p.casefold() for p in parts]
                folded = "\t" + "\t".join(parts)
            # Where each field starts (its tab); concept r's first field follows those before.
            field_start = array("q", accumulate((len(p) + 1 for p in parts), initial=0))
            del parts
            first_field = accumulate((1 + start[c + 1] - start[c] for c in ranked), initial=0)
            starts = array("q", (field_start[f] for f in first_field))
            got = folded, array("q", range(len(ranked))), starts
        self._strings[label] = got
        return got

    def search(self, label: str | None, needle: str, want: int, skip: Container[int]) -> list[int]:
        """The first ``want`` concepts (most mentioned first, of ``label`` or any) whose
        fields hold ``needle``, leaving out those in ``skip``."""
        text, ranks, starts = self._string(label)
        ranked = self.ranked
        out: list[int] = []
        pos = text.find(needle)
        while pos >= 0 and len(out) < want:
            k = bisect.bisect_right(starts, pos) - 1
            c = ranked[ranks[k]]
            if c not in skip:
                out.append(c)
            pos = text.find(needle, starts[k + 1])
        return out
