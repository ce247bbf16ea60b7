"""PubTator: ``PMID|t|title``, ``PMID|a|abstract``, mention lines
``PMID<TAB>start<TAB>end<TAB>text<TAB>type<TAB>concept id[<TAB>more ...]``, relation
lines ``PMID<TAB>CID<TAB>chemical<TAB>disease``, a blank line between documents.

The document's text is ``title + " " + abstract`` (the offsets in the file count that
way). A document without a title (an empty ``|t|`` line, or none) is its abstract alone:
the file's offsets still count the space after the empty title, as PubTator's do, and
are read one less, so a title-less document written and read back is the same text
with the same offsets (its text used to come back with a leading space and every
offset shifted, so it matched no source document).

Mentions are written in offset order (a curator's added entity among the others, as
PubTator files have them), each with its six columns: a mention without a concept id
has an empty sixth column, which reads back as no id. Kept for a lossless
round trip: concept ids verbatim (NCBI disease writes some with a leading space),
columns after the concept id (BC5CDR's composite mentions) in
``metadata["pubtator_columns"]`` keyed by ``"start:end:type"``, and relation lines in
``Document.relations`` as their fields after the PMID.

A mention whose offsets fall outside the text or whose text column differs from the
text at its offsets is an error naming the line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Iterator

from fastbioner.io.documents import Document, Passage, Span
from fastbioner.base.errors import InputError
from fastbioner.io.fileio import atomic_write
from fastbioner.io.formats.checks import refuse_chars
from fastbioner.io.formats.limits import DEFAULT_LIMITS, ReadLimits
from fastbioner.io.formats.lines import text_lines
from fastbioner.io.formats.report import WriteReport

NAME = "pubtator"
EXTENSIONS = (".pubtator", ".pubtator.txt")

_HEADER_RE = re.compile(r"^([^|\t]+)\|([ta])\|(.*)$")
# A mention's offsets; a negative one is a (bad) mention, never a relation's type.
_INT_RE = re.compile(r"^\s*[+-]?[0-9]+\s*$")
_LINE_BREAKS = "\t\n\r"


class _Builder:
    def __init__(self, path: Path, pmid: str, line: int, max_chars: int):
        self.path, self.pmid, self.line, self.max_chars = path, pmid, line, max_chars
        self.title: str | None = None
        self.abstract: str | None = None
        self.doc: Document | None = None
        self.annotations = 0  # mention and relation lines

    def document(self) -> Document:
        if self.doc is None:
            title = self.title or ""
            abstract = self.abstract or ""
            if len(title) + 1 + len(abstract) > self.max_chars:
                raise InputError(f"document {self.pmid}: a text of {len(title) + 1 + len(abstract):,} "
                                 f"characters, over the {self.max_chars:,} one document may hold "
                                 f"(see docs/reference/limits.md)", self.path, self.line)
            passages = []
            if title:
                passages.append(Passage(0, len(title), "title"))
            text = title
            if abstract:
                text = f"{title} {abstract}" if title else abstract
                passages.append(Passage(len(text) - len(abstract), len(text), "abstract"))
            self.doc = Document(id=self.pmid, text=text, passages=passages)
        return self.doc

    @property
    def offset_shift(self) -> int:
        """What to add to a file offset to get one in the document's text: -1 without a
        title (the file counts the space after the empty title; the text holds none)."""
        return -1 if not self.title else 0


def _mention(b: _Builder, fields: list[str], lineno: int) -> None:
    doc = b.document()
    try:
        start, end = int(fields[1]), int(fields[2])
    except ValueError:
        raise InputError(f"mention offsets {fields[1][:20]!r}..{fields[2][:20]!r} are not numbers that fit "
                         f"in the text", b.path, lineno) from None
    shift = b.offset_shift
    if not 0 <= start + shift <= end + shift <= len(doc.text):
        raise InputError(f"mention offsets {start}..{end} fall outside the document "
                         f"({len(doc.text) - shift} characters{', after an empty title' if shift else ''})",
                         b.path, lineno)
    start, end = start + shift, end + shift
    if len(fields) < 5 or not fields[4]:
        raise InputError("mention line without a type (expected PMID, start, end, text, type[, id])",
                         b.path, lineno)
    # Compared without surrounding white space: NCBI disease has a text column with
    # trailing spaces the offsets do not cover.
    if doc.text[start:end].strip() != fields[3].strip():
        raise InputError(f"mention text {fields[3]!r} does not match the text at {start - shift}..{end - shift} "
                         f"({doc.text[start:end]!r})", b.path, lineno)
    concept = fields[5] if len(fields) > 5 and fields[5] != "" else None  # an empty column: no id
    span = Span(start, end, fields[4], concept_id=concept)
    doc.spans.append(span)
    if len(fields) > 6:
        doc.metadata.setdefault("pubtator_columns", {})[f"{start}:{end}:{span.label}"] = fields[6:]


def read(path: str | Path, limits: ReadLimits | None = None) -> Iterator[Document]:
    """Documents of a PubTator file, in file order, read as a stream (one document in
    memory; see :class:`~fastbioner.io.formats.limits.ReadLimits` for what one may hold)."""
    path = Path(path)
    limits = limits or DEFAULT_LIMITS
    cur: _Builder | None = None
    seen = False
    for lineno, line in text_lines(path, limits):
        seen = seen or bool(line.strip())
        if not line.strip():
            if cur is not None:
                yield cur.document()
                cur = None
            continue
        header = _HEADER_RE.match(line)
        if header:
            pmid, kind, body = header.groups()
            if cur is not None and (cur.pmid != pmid or cur.doc is not None
                                    or getattr(cur, "title" if kind == "t" else "abstract") is not None):
                # No blank line between two documents: close the previous one.
                yield cur.document()
                cur = None
            if cur is None:
                cur = _Builder(path, pmid, lineno, limits.max_document_chars)
            if kind == "t":
                cur.title = body
            else:
                cur.abstract = body
            continue
        fields = line.split("\t", limits.max_columns)
        if len(fields) > limits.max_columns:
            raise InputError(f"more than {limits.max_columns} tab-separated columns "
                             "(a limit, see docs/reference/limits.md)",
                             path, lineno)
        if cur is None or fields[0] != cur.pmid:
            raise InputError(f"line belongs to no document (expected 'PMID|t|title' first): {line[:60]!r}",
                             path, lineno)
        cur.annotations += 1
        if cur.annotations > limits.max_annotations:
            raise InputError(f"document {cur.pmid}: more than {limits.max_annotations:,} mention and relation "
                             f"lines (a limit, see docs/reference/limits.md)", path, lineno)
        if len(fields) >= 4 and _INT_RE.match(fields[1]) and _INT_RE.match(fields[2]):
            _mention(cur, fields, lineno)
        elif len(fields) >= 2 and not _INT_RE.match(fields[1]):
            cur.document().relations.append(tuple(fields[1:]))
        else:
            raise InputError(f"cannot read this PubTator line: {line[:60]!r}", path, lineno)
    if cur is not None:
        yield cur.document()
    if not seen:
        raise InputError("empty file: no PubTator documents", path)


def _layout(doc: Document) -> tuple[str, str, int]:
    """(title, abstract, shift) such that ``title + " " + abstract`` holds the document
    and a span at offset ``o`` past the title moves to ``o + shift``."""
    title_p = next((p for p in doc.passages if p.kind == "title" and p.start == 0), None)
    title = doc.text[:title_p.end] if title_p else ""
    rest_start = min((p.start for p in doc.passages if p is not title_p and p.start >= len(title)),
                     default=len(doc.text))
    abstract = doc.text[rest_start:]
    return title, abstract, len(title) + 1 - rest_start


def _check_writable(doc: Document, path: str | Path) -> None:
    """Refuse what a PubTator file cannot hold (it would read back as something else)."""
    refuse_chars(doc.id, "id", doc.id, path, _LINE_BREAKS + "|", NAME, empty=False)
    if doc.id != doc.id.strip():
        raise InputError(f"document {doc.id!r}: id has white space around it, which {NAME} cannot hold", path)
    extra = doc.metadata.get("pubtator_columns") or {}
    for span in doc.spans:
        refuse_chars(span.label, "a span's label", doc.id, path, _LINE_BREAKS, NAME, empty=False)
        if span.concept_id is not None:
            refuse_chars(span.concept_id, "a span's concept id", doc.id, path, _LINE_BREAKS, NAME)
        for col in extra.get(f"{span.start}:{span.end}:{span.label}") or []:
            refuse_chars(col, "a mention's extra column", doc.id, path, _LINE_BREAKS, NAME)
    for rel in doc.relations:
        if not rel or not str(rel[0]).strip() or _INT_RE.match(str(rel[0])):
            raise InputError(f"document {doc.id}: relation {list(rel)!r:.60} needs a type that is not a "
                             f"number first, which {NAME} requires", path)
        for value in rel:
            refuse_chars(value, "a relation's field", doc.id, path, _LINE_BREAKS, NAME)


def mention_order(spans: Iterable[Span]) -> list[Span]:
    """The order mentions are written in: by start, then end (stable: spans at the
    same offsets keep their order)."""
    return sorted(spans, key=lambda s: (s.start, s.end))


def write(docs: Iterable[Document], path: str | Path) -> WriteReport:
    """Write documents as PubTator. New lines and tabs inside the text become spaces
    (same length, so offsets hold); a document without a title gets an empty ``|t|``."""
    report = WriteReport(path=str(path), format=NAME)
    with atomic_write(path) as fh:
        for doc in docs:
            _check_writable(doc, path)
            report.add(doc, holds_annotators=False)
            title, abstract, shift = _layout(doc)
            clean = str.maketrans("\n\t\r", "   ")
            fh.write(f"{doc.id}|t|{title.translate(clean)}\n{doc.id}|a|{abstract.translate(clean)}\n")
            extra = doc.metadata.get("pubtator_columns") or {}
            for span in mention_order(doc.spans):
                move = shift if span.start >= len(title) and (title or shift) else 0
                start, end = span.start + move, span.end + move
                fields = [doc.id, str(start), str(end), doc.text[span.start:span.end].translate(clean),
                          span.label]
                cols = extra.get(f"{span.start}:{span.end}:{span.label}")
                fields.append(span.concept_id or "")  # six columns always (PubTator tools expect them)
                if cols:
                    fields.extend(cols)
                fh.write("\t".join(fields) + "\n")
            for rel in doc.relations:
                fh.write("\t".join([doc.id, *map(str, rel)]) + "\n")
            fh.write("\n")
    return report
