"""A concept dictionary: which concept id (MeSH, in BC5CDR and NCBI-disease) a mention
text usually stands for, and completion of a concept cell by name or id.

It is built from annotated documents: every gold, accepted or added span that carries
a concept id counts one vote for that id under its (label, text). A dictionary ships
with the app (``fastbioner_assets/concepts/mentions.tsv``, made by
``scripts/build_concept_dictionary.py`` from the BC5CDR and NCBI-disease *training*
sets); the app adds the concepts of every loaded document to it.

A concept's name is its most frequent mention text: MeSH's own headings cannot be had
offline. Lookup is by the exact mention text first, then by the text case-folded with
whitespace collapsed ("Cocaine" and "cocaine" share a concept; "NO" the molecule and
"no" the word are kept apart only by the exact pass), always within the mention's
label when it has one.

Composite ids (``D001|D002``, one mention naming two concepts) are kept whole, as the
corpora write them; :func:`same_concept` compares them as sets.
"""

from __future__ import annotations

import csv
import io
import re
import sys
from array import array
from collections import Counter
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path
from typing import Iterable, Iterator

from fastbioner.base.errors import InputError
from fastbioner.io.fileio import atomic_write
from fastbioner.curate.concept_index import ConceptIndex
from fastbioner.io.documents import Document, Source, Span

# Ids that mean "no concept" in the corpora (BC5CDR writes -1).
NO_CONCEPT = {"", "-1", "-"}
HEADER = ("mention", "label", "concept_id", "count")
MAX_DICTIONARY_BYTES = 64 * 1024 * 1024


def collapse(text: str) -> str:
    """The text with runs of white space made one space, none at either end (``split``
    knows the same white space as the regular expression ``\\s``, and is faster)."""
    return " ".join(text.split())


def normalise(text: str) -> str:
    """The case-folded mention text with runs of whitespace made one space."""
    return collapse(text).casefold()


def concept_parts(concept_id: str | None) -> frozenset[str]:
    """The single ids of a (possibly composite) concept id: ``D001|D002`` -> {D001, D002}."""
    if not concept_id:
        return frozenset()
    return frozenset(p.strip() for p in re.split(r"[|,;+]", concept_id) if p.strip() not in NO_CONCEPT)


def same_concept(a: str | None, b: str | None) -> bool:
    """Whether two concept ids name the same concept(s), composite ids compared as sets."""
    pa, pb = concept_parts(a), concept_parts(b)
    return bool(pa) and pa == pb


@dataclass(frozen=True)
class Concept:
    """One concept as the dictionary knows it: its id, its label, its name (the most
    frequent mention text) and how many mentions named it."""

    id: str
    label: str
    name: str
    mentions: int


class ConceptDictionary:
    """Votes of (label, mention text) for concept ids, with lookups over them.

    The votes are rows: a mention text, a concept number and a count (the text's
    string, and 16 bytes in two arrays); concepts, one per (label, id), are numbered in
    the order first added. The lookups go through
    :class:`~fastbioner.curate.concept_index.ConceptIndex`: :meth:`load` builds it, so
    that the first lookup after loading answers at once; after a change, the next
    lookup (or :meth:`build_index`) builds it again."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._concept_of = array("q")
        self._count = array("q")
        # (label, id) -> concept number while adding; a loaded dictionary drops it (a
        # tenth of its memory) and makes it again if anything is added.
        self._number: dict[tuple[str, str], int] | None = {}
        self._keys: list[tuple[str, str]] = []          # concept number -> (label, id)
        self._index: ConceptIndex | None = None

    def __len__(self) -> int:
        return len(self._keys)

    def _built(self) -> ConceptIndex:
        if self._index is None:
            self._index = ConceptIndex(self._text, self._concept_of, self._count, self._keys)
        return self._index

    def build_index(self) -> None:
        """Build every lookup now (seconds for a dictionary of millions of rows), so that
        none waits later: where a caller must not wait, it calls this where waiting is
        harmless (the app, on a worker thread)."""
        self._built().build()

    def _concept(self, c: int) -> Concept:
        texts: Counter[str] = Counter()
        for i in self._built().rows_of(c):
            texts[self._text[i]] += self._count[i]
        return _concept(*self._keys[c], texts)

    def _numbers(self) -> dict[tuple[str, str], int]:
        if self._number is None:
            self._number = {k: c for c, k in enumerate(self._keys)}
        return self._number

    def _append(self, text: str, key: tuple[str, str], count: int) -> None:
        numbers = self._numbers()
        c = numbers.get(key)
        if c is None:
            # One string per label name, not one per concept (each would be a copy read from the file).
            key = (sys.intern(key[0]), key[1])
            c = numbers[key] = len(self._keys)
            self._keys.append(key)
        self._text.append(text)
        self._concept_of.append(c)
        self._count.append(count)
        self._index = None

    def add(self, text: str, label: str, concept_id: str | None, count: int = 1) -> None:
        """One mention (or ``count`` of them) of ``text`` naming ``concept_id``."""
        text = collapse(text)
        if not text or concept_id is None or count <= 0:
            return
        key = (label, concept_id.strip())
        # A known concept's id was checked when it was first added (checking it again for
        # every row was a good part of loading's time).
        if key not in self._numbers() and not concept_parts(concept_id):
            return
        if count >= 2**62:  # a count is one of the rows' 64-bit numbers; totals sum them
            raise ValueError(f"a count of {count} mentions")
        self._append(text, key, count)

    def add_documents(self, docs: Iterable[Document]) -> None:
        """The concepts of the documents' gold, accepted and added spans (never a
        model's pending suggestion: what the curator has not confirmed teaches nothing)."""
        self.add_votes(document_votes(docs))

    def add_votes(self, votes: Iterable[tuple[str, str, str]]) -> None:
        """One mention each of ``(text, label, concept id)``."""
        for text, label, concept_id in votes:
            self.add(text, label, concept_id)

    def propose(self, text: str, label: str | None = None) -> str | None:
        """The id that ``text`` most often named (within ``label`` when given), or None.
        Exact text first, then case-folded; ties go to the id seen first in sort order,
        so the answer is deterministic."""
        text = collapse(text)
        index = self._built()
        for rows in (index.rows_with_text(text), index.rows_with_folded(normalise(text))):
            votes: Counter[str] = Counter()
            for i in rows:
                lab, cid = self._keys[self._concept_of[i]]
                if label is None or lab == label:
                    votes[cid] += self._count[i]
            if votes:
                return min(votes, key=lambda cid: (-votes[cid], cid))
        return None

    def concept(self, concept_id: str, label: str | None = None) -> Concept | None:
        """The concept of an id (its most frequent mention as its name); of two labels
        with as many mentions, the one added first."""
        index = self._built()
        best = None
        for c in index.concepts_with_id(concept_id):
            if (label is None or self._keys[c][0] == label) and (
                    best is None or index.total[c] > index.total[best]):  # ties: the first added
                best = c
        return None if best is None else self._concept(best)

    def complete(self, typed: str, label: str | None = None, limit: int = 20) -> list[Concept]:
        """Concepts whose id or any mention text starts with (then contains) ``typed``,
        most mentioned first: what a concept cell offers as the curator types."""
        key = normalise(typed)
        if not key or limit <= 0:
            return []
        index = self._built()
        found = index.search(label, "\t" + key, limit, ())  # a field starts with it
        if len(found) < limit:
            found += index.search(label, key, limit - len(found), set(found))
        return [self._concept(c) for c in found]

    def merged(self, other: "ConceptDictionary") -> "ConceptDictionary":
        """A new dictionary holding both sets of votes (the shipped one plus a project's)."""
        out = ConceptDictionary()
        for source in (self, other):
            for text, c, n in zip(source._text, source._concept_of, source._count):
                out._append(text, source._keys[c], n)
        return out

    # -- files --------------------------------------------------------------------------

    def save(self, path: str | Path) -> None:
        """A TSV of ``mention, label, concept_id, count``, sorted, so a rebuild from the
        same data gives the same bytes."""
        votes: Counter[tuple[str, str, str]] = Counter()
        for text, c, n in zip(self._text, self._concept_of, self._count):
            votes[(text, *self._keys[c])] += n
        buf = io.StringIO()
        writer = csv.writer(buf, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
        writer.writerow(HEADER)
        writer.writerows((*key, n) for key, n in sorted(votes.items()))
        with atomic_write(path, "w", encoding="utf-8") as fh:
            fh.write(buf.getvalue())

    @classmethod
    def load(cls, path: str | Path, *, indexed: bool = True) -> "ConceptDictionary":
        """Read a dictionary written by :meth:`save`, its lookups built (a 60 MB file:
        seconds, after which every lookup answers at once) unless ``indexed`` is False
        (a dictionary only to be merged into another); a bad line, or a file that is not
        one, is one InputError naming the file (and line)."""
        path = Path(path)
        out = cls()
        lineno = 0
        try:
            if not path.is_file():  # a device (/dev/zero) has no size to check and no end
                raise InputError("not a concept dictionary: not a regular file", path)
            size = path.stat().st_size
            if size > MAX_DICTIONARY_BYTES:
                raise InputError(f"a concept dictionary of {size:,} bytes is over the "
                                 f"{MAX_DICTIONARY_BYTES:,}-byte limit", path)
            with open(path, encoding="utf-8", newline="") as fh:
                reader = csv.reader(fh, delimiter="\t")
                for row in reader:
                    lineno = reader.line_num
                    if lineno == 1 and tuple(row) == HEADER:
                        continue
                    # A count of more digits than any real one would also be more than int() reads.
                    if len(row) != 4 or not row[3].isascii() or not row[3].isdigit() or len(row[3]) > 15:
                        raise InputError("expected mention, label, concept id and count separated by tabs",
                                         path, lineno)
                    out.add(row[0], row[1], row[2], int(row[3]))
            out._number = None
        except csv.Error as exc:  # an unclosed quote running into a field over csv's limit ...
            raise InputError(f"not a concept dictionary's line ({exc})", path, lineno + 1) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the concept dictionary ({exc})", path) from None
        if indexed:
            out.build_index()
        return out


def shipped_dictionary(*, indexed: bool = True) -> ConceptDictionary:
    """The dictionary that ships with the app (empty if the asset is missing);
    ``indexed`` as :meth:`ConceptDictionary.load` takes it."""
    try:
        resource = files("fastbioner_assets") / "concepts" / "mentions.tsv"
        if not resource.is_file():
            return ConceptDictionary()
        with as_file(resource) as path:
            return ConceptDictionary.load(path, indexed=indexed)
    except ModuleNotFoundError:
        return ConceptDictionary()


def document_votes(docs: Iterable[Document]) -> Iterator[tuple[str, str, str]]:
    """``(text, label, concept id)`` of each of the documents' gold, accepted and added
    spans that has an id (never a model's pending suggestion: what the curator has not
    confirmed teaches nothing). Strings only: the app takes them on its GUI thread and
    builds the dictionary from them on a worker thread, away from documents it edits."""
    for doc in docs:
        for span in doc.spans:
            if span.source is not Source.MODEL and span.concept_id is not None:
                yield doc.span_text(span), span.label, span.concept_id


def accepted_without_id(before: Iterable[Span], after: list[Span]) -> list[Span]:
    """The spans of ``after`` that are suggestions the curator just accepted (a model
    span in ``before``, the curator's in ``after``, same offsets and label) with no
    concept id."""
    pending = {(s.start, s.end, s.label) for s in before if s.source is Source.MODEL}
    return [s for s in after if s.source is Source.CURATOR and s.concept_id is None
            and (s.start, s.end, s.label) in pending]


def propose_for_accepted(before: Iterable[Span], after: list[Span], text: str,
                         dictionary: ConceptDictionary) -> list[Span]:
    """``after`` with a proposed id on every suggestion the curator just accepted that
    has none (:func:`accepted_without_id`) and whose text the dictionary knows. The app
    makes this part of the accept itself, so one undo takes back the accept and the
    proposal together."""
    todo = {id(s) for s in accepted_without_id(before, after)}
    out = []
    for span in after:
        if id(span) in todo:
            proposed = dictionary.propose(text[span.start:span.end], span.label)
            if proposed:
                span = span.with_(concept_id=proposed)
        out.append(span)
    return out


def _concept(label: str, cid: str, texts: Counter[str]) -> Concept:
    name = min(texts, key=lambda t: (-texts[t], t))
    return Concept(cid, label, name, sum(texts.values()))
