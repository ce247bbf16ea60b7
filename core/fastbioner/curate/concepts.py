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
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from fastbioner.io.documents import Document, Source, Span
from fastbioner.base.errors import InputError

# Ids that mean "no concept" in the corpora (BC5CDR writes -1).
NO_CONCEPT = {"", "-1", "-"}
_SPACES = re.compile(r"\s+")
HEADER = ("mention", "label", "concept_id", "count")
MAX_DICTIONARY_BYTES = 64 * 1024 * 1024


def normalise(text: str) -> str:
    """The case-folded mention text with runs of whitespace made one space."""
    return _SPACES.sub(" ", text).strip().casefold()


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
    """Votes of (label, mention text) for concept ids, with lookups over them."""

    def __init__(self) -> None:
        # (label, exact text) -> Counter(id); and the same keyed by the normalised text.
        self._exact: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        self._folded: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        self._names: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)  # (label, id) -> texts
        self._labels: dict[str, set[str]] = defaultdict(set)  # exact or normalised text -> labels

    def __len__(self) -> int:
        return len(self._names)

    def add(self, text: str, label: str, concept_id: str | None, count: int = 1) -> None:
        """One mention (or ``count`` of them) of ``text`` naming ``concept_id``."""
        text = _SPACES.sub(" ", text).strip()
        if not text or concept_id is None or not concept_parts(concept_id) or count <= 0:
            return
        cid = concept_id.strip()
        self._exact[(label, text)][cid] += count
        self._folded[(label, normalise(text))][cid] += count
        self._names[(label, cid)][text] += count
        self._labels[text].add(label)
        self._labels[normalise(text)].add(label)

    def add_documents(self, docs: Iterable[Document]) -> None:
        """The concepts of the documents' gold, accepted and added spans (never a
        model's pending suggestion: what the curator has not confirmed teaches nothing)."""
        for doc in docs:
            for span in doc.spans:
                if span.source is Source.MODEL:  # a suggestion not yet accepted
                    continue
                self.add(doc.span_text(span), span.label, span.concept_id)

    def propose(self, text: str, label: str | None = None) -> str | None:
        """The id that ``text`` most often named (within ``label`` when given), or None.
        Exact text first, then case-folded; ties go to the id seen first in sort order,
        so the answer is deterministic."""
        text = _SPACES.sub(" ", text).strip()
        for table, key in ((self._exact, text), (self._folded, normalise(text))):
            votes: Counter[str] = Counter()
            for _, ids in _matching(table, key, label, self._labels):
                votes.update(ids)
            if votes:
                return min(votes, key=lambda cid: (-votes[cid], cid))
        return None

    def concept(self, concept_id: str, label: str | None = None) -> Concept | None:
        """The concept of an id (its most frequent mention as its name)."""
        best: Concept | None = None
        for (lab, cid), texts in self._names.items():
            if cid != concept_id or (label is not None and lab != label):
                continue
            c = _concept(lab, cid, texts)
            if best is None or c.mentions > best.mentions:
                best = c
        return best

    def complete(self, typed: str, label: str | None = None, limit: int = 20) -> list[Concept]:
        """Concepts whose id or any mention text starts with (then contains) ``typed``,
        most mentioned first: what a concept cell offers as the curator types."""
        key = normalise(typed)
        if not key:
            return []
        prefix, inner = [], []
        for (lab, cid), texts in self._names.items():
            if label is not None and lab != label:
                continue
            names = [normalise(t) for t in texts]
            if cid.casefold().startswith(key) or any(n.startswith(key) for n in names):
                prefix.append(_concept(lab, cid, texts))
            elif key in cid.casefold() or any(key in n for n in names):
                inner.append(_concept(lab, cid, texts))
        order = lambda c: (-c.mentions, c.id, c.label)  # noqa: E731 - a sort key
        return (sorted(prefix, key=order) + sorted(inner, key=order))[:limit]

    def merged(self, other: "ConceptDictionary") -> "ConceptDictionary":
        """A new dictionary holding both sets of votes (the shipped one plus a project's)."""
        out = ConceptDictionary()
        for source in (self, other):
            for (lab, text), ids in source._exact.items():
                for cid, n in ids.items():
                    out.add(text, lab, cid, n)
        return out

    # -- files --------------------------------------------------------------------------

    def save(self, path: str | Path) -> None:
        """A TSV of ``mention, label, concept_id, count``, sorted, so a rebuild from the
        same data gives the same bytes."""
        from fastbioner.io.fileio import atomic_write

        rows = sorted((text, lab, cid, n) for (lab, text), ids in self._exact.items() for cid, n in ids.items())
        buf = io.StringIO()
        writer = csv.writer(buf, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
        writer.writerow(HEADER)
        writer.writerows(rows)
        with atomic_write(path, "w", encoding="utf-8") as fh:
            fh.write(buf.getvalue())

    @classmethod
    def load(cls, path: str | Path) -> "ConceptDictionary":
        """Read a dictionary written by :meth:`save`; a bad line is one InputError
        naming the file and line."""
        path = Path(path)
        try:
            size = path.stat().st_size
            if size > MAX_DICTIONARY_BYTES:
                raise InputError(f"{path}: a concept dictionary of {size:,} bytes is over the "
                                 f"{MAX_DICTIONARY_BYTES:,}-byte limit")
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: cannot read the concept dictionary ({exc})") from None
        out = cls()
        reader = csv.reader(io.StringIO(text), delimiter="\t")
        for lineno, row in enumerate(reader, 1):
            if lineno == 1 and tuple(row) == HEADER:
                continue
            if len(row) != 4 or not row[3].isascii() or not row[3].isdigit():
                raise InputError(f"{path}:{lineno}: expected mention, label, concept id and count "
                                 f"separated by tabs")
            out.add(row[0], row[1], row[2], int(row[3]))
        return out


def shipped_dictionary() -> ConceptDictionary:
    """The dictionary that ships with the app (empty if the asset is missing)."""
    from importlib.resources import as_file, files

    try:
        resource = files("fastbioner_assets") / "concepts" / "mentions.tsv"
        if not resource.is_file():
            return ConceptDictionary()
        with as_file(resource) as path:
            return ConceptDictionary.load(path)
    except ModuleNotFoundError:
        return ConceptDictionary()


def propose_for_accepted(before: Iterable[Span], after: list[Span], text: str,
                         dictionary: ConceptDictionary) -> list[Span]:
    """``after`` with a proposed id on every suggestion the curator just accepted (a
    model span in ``before``, the curator's in ``after``, same offsets and label) that
    has none and whose text the dictionary knows. The app makes this part of the accept
    itself, so one undo takes back the accept and the proposal together."""
    pending = {(s.start, s.end, s.label) for s in before if s.source is Source.MODEL}
    out = []
    for span in after:
        if (span.source is Source.CURATOR and span.concept_id is None
                and (span.start, span.end, span.label) in pending):
            proposed = dictionary.propose(text[span.start:span.end], span.label)
            if proposed:
                span = span.with_(concept_id=proposed)
        out.append(span)
    return out


def _matching(table: Mapping[tuple[str, str], Counter[str]], key: str, label: str | None,
              labels: Mapping[str, set[str]]) -> list[tuple[tuple[str, str], Counter[str]]]:
    found = [label] if label is not None else sorted(labels.get(key, ()))
    return [((lab, key), table[(lab, key)]) for lab in found if (lab, key) in table]


def _concept(label: str, cid: str, texts: Counter[str]) -> Concept:
    name = min(texts, key=lambda t: (-texts[t], t))
    return Concept(cid, label, name, sum(texts.values()))
