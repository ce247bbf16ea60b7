"""The lookups of a concept dictionary (:mod:`fastbioner.curate.concepts`) over its rows,
light on memory: three numbers per row and a few per concept, in numpy arrays, and one
byte string per label to search; no Python object per row or concept beyond what the
dictionary holds.

A 60 MB dictionary (1.6 million rows) held as dictionaries of counters took 2.4 GB,
and each completion walked every concept (seconds per keystroke). Here:

- proposals bisect the rows ordered by the hash of their case-folded text (a string's
  hash is fixed within a process), then compare the texts themselves: exact and
  case-folded lookups share that one order, and no folded copy of a text is kept;
- concepts (one per label and id, numbered by the dictionary) are ranked most
  mentioned first, then by id, then label: the order completion lists them in;
- completion searches, per label, one UTF-8 byte string holding, concept after concept
  in rank order, a tab and the case-folded id, then a tab and each case-folded mention
  text. ``bytes.find`` scans it at C speed, so the first concepts found are the answer,
  found in rank order (UTF-8 matches a valid UTF-8 needle only at whole characters). A
  typed text, its white space collapsed, holds no tab, so it matches within one field,
  and after a tab only at a field's start (a prefix). Completion over every label merges
  the labels' answers by rank.

Each part is built on its first use, or all at once by :meth:`ConceptIndex.build`, which
loading a dictionary calls, so that no lookup after it waits (the app loads and builds
on a worker thread). Numpy does the sorts of numbers; the one sort of strings (the ids)
is Python's, on one key, never a tuple per item.
"""

from __future__ import annotations

import bisect
from array import array
from functools import cached_property
from itertools import chain
from typing import Container, Iterable, NamedTuple, Sequence

import numpy as np

# Concepts whose fields are joined and case-folded at a time while a search string is
# built: enough for C speed, few enough that the transient copies stay a few MB.
_CONCEPTS_AT_A_TIME = 1 << 14
# Rows hashed at a time (see _by_folded_hash).
_ROWS_AT_A_TIME = 1 << 16
# Below this every sum of float64 counts is exact (each partial sum is at most the total).
_EXACT_IN_FLOAT = 2**53


class SearchString(NamedTuple):
    """One label's concepts as one string to search: ``text`` (their fields, case-folded,
    UTF-8), ``concepts`` (concept numbers, in rank order) and ``starts`` (where each
    one's fields start in ``text``, then its length)."""

    text: bytes
    concepts: array
    starts: array


def _as_array(numbers: np.ndarray) -> array:
    # bisect and indexing of an array('q') run in C, a numpy scalar per access does not.
    return array("q", numbers.astype(np.int64).tobytes())


def _folded_fields(fields: Iterable[str]) -> bytes:
    """The fields case-folded (a character at a time: no field changes another), each
    after a tab, as UTF-8 (where no byte of a longer character is a tab)."""
    return ("\t" + "\t".join(fields)).casefold().encode("utf-8")


class ConceptIndex:
    """Lookups over rows (``text``, ``concept_of``, ``count``: parallel) and concepts
    (``keys``: (label, id) per concept number)."""

    def __init__(self, text: Sequence[str], concept_of: array, count: array, keys: list[tuple[str, str]]) -> None:
        self.text, self.concept_of, self.count, self.keys = text, concept_of, count, keys

    def build(self) -> None:
        """Every part now, so that no lookup waits for one."""
        for part in ("_by_folded_hash", "_search_strings", "_rank_of", "_by_id", "_groups", "total"):
            getattr(self, part)

    # -- proposals ----------------------------------------------------------------------
    @cached_property
    def _by_folded_hash(self) -> tuple[np.ndarray, np.ndarray]:
        """The hashes of the rows' case-folded texts, sorted, and the row of each."""
        hashes = np.empty(len(self.text), dtype=np.int64)
        # In slices: one C loop over every row would hold the interpreter lock for a
        # third of a second, and the GUI thread waits for it while a worker builds this.
        for lo in range(0, len(self.text), _ROWS_AT_A_TIME):
            rows = self.text[lo:lo + _ROWS_AT_A_TIME]
            hashes[lo:lo + len(rows)] = np.fromiter(map(hash, map(str.casefold, rows)), np.int64, len(rows))
        order = np.argsort(hashes, kind="stable")
        return hashes[order], order

    def rows_with_folded(self, folded: str) -> list[int]:
        """The rows whose case-folded text is ``folded``, in row order."""
        hashes, order = self._by_folded_hash
        key = hash(folded)
        rows = order[np.searchsorted(hashes, key, "left"):np.searchsorted(hashes, key, "right")]
        return [i for i in rows.tolist() if self.text[i].casefold() == folded]  # hashes may collide

    def rows_with_text(self, text: str) -> list[int]:
        """The rows whose text is ``text``, in row order (among those folding alike)."""
        return [i for i in self.rows_with_folded(text.casefold()) if self.text[i] == text]

    # -- concepts -----------------------------------------------------------------------
    def _concept_numbers(self) -> np.ndarray:
        # A copy, not a view: an array('q') exporting its buffer could not grow.
        return np.array(self.concept_of, dtype=np.int64)

    @cached_property
    def total(self) -> np.ndarray:
        """Mentions per concept: int64, or Python ints (an object array) where a sum
        could be past float64's exact integers (only counts no corpus has)."""
        sums = np.bincount(self._concept_numbers(), weights=np.array(self.count, dtype=np.float64),
                           minlength=len(self.keys))
        if not sums.size or sums.max() < _EXACT_IN_FLOAT:
            return sums.astype(np.int64)
        exact = [0] * len(self.keys)
        for c, n in zip(self.concept_of, self.count):
            exact[c] += n
        return np.array(exact, dtype=object)

    @cached_property
    def _labels(self) -> tuple[list[str], np.ndarray]:
        """The labels, sorted, and each concept's label as a number into them."""
        names = sorted({label for label, _ in self.keys})
        number = {label: i for i, label in enumerate(names)}
        return names, np.fromiter((number[label] for label, _ in self.keys), np.int64, len(self.keys))

    @cached_property
    def _by_id(self) -> np.ndarray:
        """The concepts by id, then label, then first added (stable sorts)."""
        by_label = np.argsort(self._labels[1], kind="stable").tolist()
        ids = [cid for _, cid in self.keys]
        return np.array(sorted(by_label, key=ids.__getitem__), dtype=np.int64)

    @cached_property
    def ranked(self) -> np.ndarray:
        """The concepts most mentioned first, then by id, then label."""
        by_id = self._by_id
        return by_id[np.argsort(-self.total[by_id], kind="stable")]

    @cached_property
    def _rank_of(self) -> np.ndarray:
        rank = np.empty(len(self.keys), dtype=np.int64)
        rank[self.ranked] = np.arange(len(self.keys))
        return rank

    @cached_property
    def _groups(self) -> tuple[np.ndarray, np.ndarray]:
        """The row numbers grouped by concept number (row order within one), and where
        each concept's rows start (and the end)."""
        concept_of = self._concept_numbers()
        starts = np.zeros(len(self.keys) + 1, dtype=np.int64)
        np.cumsum(np.bincount(concept_of, minlength=len(self.keys)), out=starts[1:])
        return np.argsort(concept_of, kind="stable"), starts

    def rows_of(self, c: int) -> list[int]:
        groups, start = self._groups
        return groups[start[c]:start[c + 1]].tolist()

    def concepts_with_id(self, cid: str) -> list[int]:
        """The concepts (of any label) of an id, in the order first added."""
        by_id, keys = self._by_id, self.keys
        lo = bisect.bisect_left(by_id, cid, key=lambda c: keys[c][1])
        hi = bisect.bisect_right(by_id, cid, lo, key=lambda c: keys[c][1])
        return sorted(by_id[lo:hi].tolist())

    # -- completion ---------------------------------------------------------------------
    @cached_property
    def _search_strings(self) -> dict[str, SearchString]:
        """Each label's search string (its concepts in rank order)."""
        names, label_of = self._labels
        ranked = self.ranked
        ranked_label = label_of[ranked]
        return {name: self._search_string(ranked[ranked_label == i]) for i, name in enumerate(names)}

    def _fields(self, concepts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per concept of ``concepts`` its id, then its rows' texts, in one sequence; and
        where each concept's id falls in it."""
        groups, starts = self._groups
        size = starts[concepts + 1] - starts[concepts]  # rows per concept
        first = np.cumsum(size + 1) - (size + 1)
        fields = np.empty(len(concepts) + int(size.sum()), dtype=object)
        is_row = np.ones(len(fields), dtype=bool)
        is_row[first] = False
        # A text holds no tab (its white space is collapsed); an id that did would look
        # like two fields, so its tabs become line ends, which no typed text holds either.
        fields[first] = [self.keys[c][1].replace("\t", "\n") for c in concepts.tolist()]
        # Concept k's rows are groups[starts[c_k]:][:size_k]: its start repeated, plus 0, 1, ...
        within = np.arange(int(size.sum())) - np.repeat(np.cumsum(size) - size, size)
        fields[is_row] = list(map(self.text.__getitem__, groups[np.repeat(starts[concepts], size) + within].tolist()))
        return fields, first

    def _search_string(self, concepts: np.ndarray) -> SearchString:
        # A slice of the concepts at a time: the fields of all of them at once would be a
        # transient list (and arrays) of millions of items.
        chunks, starts = [], []
        at = 0
        for lo in range(0, len(concepts), _CONCEPTS_AT_A_TIME):
            fields, first = self._fields(concepts[lo:lo + _CONCEPTS_AT_A_TIME])
            chunk = _folded_fields(fields.tolist())
            tabs = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == ord("\t"))  # where each field starts
            starts.append(tabs[first] + at)
            chunks.append(chunk)
            at += len(chunk)
        starts.append(np.array([at]))
        return SearchString(b"".join(chunks), _as_array(concepts), _as_array(np.concatenate(starts)))

    def search(self, label: str | None, needle: str, want: int, skip: Container[int]) -> list[int]:
        """The first ``want`` concepts (most mentioned first, of ``label`` or any) whose
        fields hold ``needle``, leaving out those in ``skip``."""
        strings = self._search_strings
        pattern = needle.encode("utf-8")
        if label is not None:
            return _search_one(strings[label], pattern, want, skip) if label in strings else []
        # Each label's first ``want`` hold the first ``want`` of all of them.
        found = chain.from_iterable(_search_one(s, pattern, want, skip) for s in strings.values())
        return sorted(found, key=self._rank_of.__getitem__)[:want]


def _search_one(string: SearchString, needle: bytes, want: int, skip: Container[int]) -> list[int]:
    text, concepts, starts = string
    out: list[int] = []
    pos = text.find(needle)
    while pos >= 0 and len(out) < want:
        k = bisect.bisect_right(starts, pos) - 1
        if concepts[k] not in skip:
            out.append(concepts[k])
        pos = text.find(needle, starts[k + 1])
    return out
