"""Relations between the concepts of a document (BC5CDR's chemical-induced disease:
``("CID", chemical id, disease id)``), as pure functions: the rows a panel shows, adding
and removing one, and how relations follow a concept-id edit.

A relation is a tuple ``(type, argument ids ...)`` kept in ``Document.relations``
exactly as PubTator, BioC and JSONL read and write them. BioC names each argument
(``Chemical``, ``Disease``) in ``metadata["bioc_relation_keys"]``, one list per
relation in order; :func:`set_relations` keeps that list aligned when relations are
added or removed, so a BioC file read, edited and written keeps its names.

The rule for concept-id edits (:func:`follow_concept_edit`): when an entity's id
changes from X to Y and no entity of the document names X any more, relations naming
X name Y instead (a relation that would then repeat another is dropped). While another
entity still names X, relations stay as they are: X is still in the document. A
cleared id (Y empty) changes no relation: the panel shows X as not in the document,
for the curator to remove or keep. Composite ids (``D1|D2``) count as their parts; an
edit that swaps exactly one part for one other renames it, any other edit of a
composite id changes no relation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterable, Sequence

from fastbioner.curate.concepts import concept_parts
from fastbioner.io.documents import Document, Span

CID = "CID"
# The label of each argument of a relation type (and what BioC calls it).
ARGUMENT_LABELS = {CID: ("Chemical", "Disease")}
KEYS_METADATA = "bioc_relation_keys"

Relation = tuple[str, ...]


@dataclass(frozen=True)
class RelationRow:
    """One relation as a panel shows it: each argument's id, name and whether an entity
    of the document names it."""

    relation: Relation
    type: str
    ids: tuple[str, ...]
    names: tuple[str, ...]
    present: tuple[bool, ...]


def document_concepts(doc: Document, label: str | None = None) -> dict[str, str]:
    """Concept id -> name (its most frequent mention text in the document, ties to the
    first) for every single id the document's entities carry (pending suggestions
    included: their ids were proposed or typed), within ``label`` when given, sorted
    by name."""
    counts: dict[str, dict[str, int]] = {}
    for span in doc.sorted_spans():
        if label is not None and span.label != label:
            continue
        for part in sorted(concept_parts(span.concept_id)):
            texts = counts.setdefault(part, {})
            text = " ".join(doc.span_text(span).split())
            texts[text] = texts.get(text, 0) + 1
    names = {cid: max(texts, key=lambda t: texts[t]) for cid, texts in counts.items()}
    return dict(sorted(names.items(), key=lambda kv: (kv[1].casefold(), kv[0])))


def relation_rows(doc: Document, name_of: Callable[[str], str | None] | None = None) -> list[RelationRow]:
    """The document's relations with their arguments named: by the document's own
    mentions, else by ``name_of`` (the concept dictionary), else left empty."""
    known = document_concepts(doc)
    rows = []
    for rel in doc.relations:
        ids = tuple(str(x) for x in rel[1:])
        names = tuple(known.get(i) or (name_of(i) if name_of else None) or "" for i in ids)
        rows.append(RelationRow(tuple(rel), str(rel[0]) if rel else "", ids, names, tuple(i in known for i in ids)))
    return rows


def add_relation(relations: Sequence[Relation], relation: Relation) -> list[Relation]:
    """``relations`` with ``relation`` at the end; a relation already there (the same
    type and arguments) is not doubled."""
    relation = tuple(str(x).strip() for x in relation)
    if len(relation) < 2 or not all(relation):
        raise ValueError(f"a relation needs a type and its arguments: {relation!r}")
    if any(any(c.isspace() for c in x) for x in relation):
        raise ValueError(f"a relation's type and ids have no spaces: {relation!r}")
    if relation[0].lstrip("-").isdigit():  # PubTator tells relation lines from mentions by it
        raise ValueError(f"a relation's type is a name, not a number: {relation[0]!r}")
    return list(relations) if relation in relations else [*relations, relation]


def remove_relation(relations: Sequence[Relation], relation: Relation) -> list[Relation]:
    """``relations`` without ``relation`` (every copy of it)."""
    return [r for r in relations if tuple(r) != tuple(relation)]


def follow_concept_edit(spans_after: Iterable[Span], relations: Sequence[Relation], old_id: str | None,
                        new_id: str | None) -> list[Relation]:
    """The relations once an entity's id went from ``old_id`` to ``new_id`` (the rule in
    the module's docstring); ``spans_after`` are the document's spans after the edit."""
    old, new = concept_parts(old_id), concept_parts(new_id)
    gone, came = old - new, new - old
    if len(gone) != 1 or len(came) != 1:
        return list(relations)
    x, y = next(iter(gone)), next(iter(came))
    if any(x in concept_parts(s.concept_id) for s in spans_after):
        return list(relations)
    out: list[Relation] = []
    for rel in relations:
        moved = tuple(rel[:1]) + tuple(y if a == x else a for a in rel[1:])
        if moved not in out:
            out.append(moved)
    return out


def set_relations(doc: Document, relations: Sequence[Relation]) -> Document:
    """``doc`` with ``relations`` (a copy; ``doc`` is not changed), BioC's argument names
    kept with their relations: a relation the document had keeps its names, a new one
    gets its type's (:data:`ARGUMENT_LABELS`) or none."""
    old_keys = doc.metadata.get(KEYS_METADATA)
    metadata = dict(doc.metadata)
    if old_keys is not None:
        by_relation = {tuple(r): list(k) for r, k in zip(doc.relations, old_keys)}
        metadata[KEYS_METADATA] = [by_relation.get(tuple(r)) or default_keys(r) for r in relations]
    return replace(doc, relations=[tuple(r) for r in relations], metadata=metadata)


def default_keys(relation: Relation) -> list[str]:
    """BioC's names for a relation's arguments when it has none of its own."""
    names = ARGUMENT_LABELS.get(relation[0])
    if names and len(names) == len(relation) - 1:
        return list(names)
    return [f"arg{i}" for i in range(1, len(relation))]


def arguments_of(spans: Sequence[Span], labels: Sequence[str] = ARGUMENT_LABELS[CID]) -> list[str | None]:
    """For each label (Chemical, then Disease), the single concept id of the entities
    ``spans`` with that label, or None when they name none or several: what "add a
    relation between the selected entities" preselects."""
    out: list[str | None] = []
    for label in labels:
        ids = {p for s in spans if s.label == label for p in concept_parts(s.concept_id)}
        out.append(next(iter(ids)) if len(ids) == 1 else None)
    return out


__all__ = ["CID", "ARGUMENT_LABELS", "RelationRow", "document_concepts", "relation_rows", "add_relation",
           "remove_relation", "follow_concept_edit", "set_relations", "default_keys", "arguments_of"]
