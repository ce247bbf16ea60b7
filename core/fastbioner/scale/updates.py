"""PubMed's update semantics over a list of input files: which copy of each citation
a corpus run keeps.

PubMed ships a baseline (about 1,300 files) and then daily update files that revise
citations (a PMID again, with new text) and withdraw others (``<DeleteCitation>``).
Over inputs given oldest first, a run keeps:

- no citation whose PMID any input deletes;
- of a PMID present several times, the last copy (the latest input; within a file,
  its last occurrence).

Inputs are scanned once for their document ids (:func:`fastbioner.scale.work.parse_input`), then
:func:`resolve` decides per input which of its documents are kept, as a boolean mask
over the documents in file order. Ids are held as integers in NumPy arrays (PMIDs
are numbers; other ids get negative codes) so that all of PubMed, 36 million
citations, resolves in well under a gigabyte.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Sequence, overload

import numpy as np



@dataclass
class InputScan:
    """One input file's document ids in file order, the PMIDs it deletes, and the
    SHA-256 of its bytes (a changed file is tagged again on resume). Ids are kept as
    numbers (8 bytes each: the scans of all of PubMed stay small); an id that is not
    a number (a text file's ``notes:3``) is -1 there and kept in ``others`` by position."""

    path: str
    numbers: np.ndarray
    others: dict[int, str] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    sha256: str = ""
    hashes: np.ndarray | None = None   # each document's text hash (corpus folders: what changed)
    size: int = 0                      # the file's bytes

    @classmethod
    def of(cls, path: str, ids: list[str], deleted: Sequence[str] = (), sha256: str = "",
           hashes: np.ndarray | None = None) -> "InputScan":
        numbers = np.full(len(ids), -1, dtype=np.int64)
        others: dict[int, str] = {}
        for k, id_ in enumerate(ids):
            if _is_number(id_):
                numbers[k] = int(id_)
            else:
                others[k] = id_
        return cls(str(path), numbers, others, list(deleted), sha256, hashes)

    @property
    def ids(self) -> list[str]:
        return [self.others[k] if n < 0 else str(n) for k, n in enumerate(self.numbers.tolist())]


def _is_number(id_: str) -> bool:
    # "007" is not the number 7 as an id: only canonical digits are stored as numbers.
    # ASCII digits only: str.isdigit() also takes "١٢٣" and "１２３" (which int() reads
    # as 123, so another file's PMID 123 would supersede or delete them) and "²"
    # (which int() refuses). Such an id is a document id of its own.
    return (id_.isascii() and id_.isdigit() and len(id_) < 18
            and (id_ == "0" or not id_.startswith("0")))


@dataclass
class Resolution:
    """Per input, the mask of documents kept; and what was dropped."""

    keep: list[np.ndarray]
    deleted_pmids: list[str]          # every PMID a DeleteCitation names, sorted
    deleted_dropped: int              # documents left out because their PMID was deleted
    superseded: int                   # older copies left out for a later one


class _Codes:
    """Ids to int64: a PMID is its number; any other id a negative code."""

    def __init__(self) -> None:
        self.other: dict[str, int] = {}

    @overload
    def code(self, id_: str, add: Literal[True] = True) -> int: ...
    @overload
    def code(self, id_: str, add: bool) -> int | None: ...

    def code(self, id_: str, add: bool = True) -> int | None:
        """The id's code; a new one for an id not seen before, or None when not ``add``."""
        if _is_number(id_):
            return int(id_)
        if id_ not in self.other:
            if not add:
                return None
            self.other[id_] = -1 - len(self.other)
        return self.other[id_]

    def array(self, scan: InputScan) -> np.ndarray:
        keys = scan.numbers.copy()
        for k, id_ in scan.others.items():
            keys[k] = self.code(id_)
        return keys


def resolve(scans: list[InputScan]) -> Resolution:
    """Which documents of each input (oldest first) a run keeps: see the module's doc."""
    codes = _Codes()
    keys = [codes.array(s) for s in scans]
    sizes = [len(k) for k in keys]
    everything = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    # The last copy of each id: the first one met walking backwards.
    _, first_from_end = np.unique(everything[::-1], return_index=True)
    latest = np.zeros(len(everything), dtype=bool)
    latest[len(everything) - 1 - first_from_end] = True
    deleted = sorted({p for s in scans for p in s.deleted})
    deleted_codes = np.array([c for c in (codes.code(p, add=False) for p in deleted) if c is not None],
                             dtype=np.int64)
    alive = ~np.isin(everything, deleted_codes)
    keep_all = latest & alive
    keep, start = [], 0
    for n in sizes:
        keep.append(keep_all[start:start + n].copy())
        start += n
    return Resolution(keep, deleted, int((~alive).sum()), int((~latest & alive).sum()))
