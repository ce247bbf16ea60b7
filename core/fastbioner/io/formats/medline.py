"""MEDLINE text format (PubMed's "MEDLINE" display, ``.nbib``): records of
``TAG - value`` lines (tag padded to four characters), values continued on lines
that start with six spaces, a blank line between records.

``PMID`` is the id, ``TI`` the title and ``AB`` the abstract (one passage). Every
other field is kept in order in ``metadata["medline"]`` as ``[tag, value]`` pairs and
written back, so a record round-trips. MEDLINE holds no entity spans.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Iterator

from fastbioner.io.documents import Document
from fastbioner.base.errors import InputError
from fastbioner.io.fileio import atomic_write
from fastbioner.io.formats.checks import refuse_chars
from fastbioner.io.formats.limits import DEFAULT_LIMITS, ReadLimits
from fastbioner.io.formats.lines import text_lines
from fastbioner.io.formats.report import WriteReport

NAME = "medline"
EXTENSIONS = (".medline", ".nbib", ".medline.txt")

_FIELD_RE = re.compile(r"^([A-Z][A-Z0-9 ]{1,3})- ?(.*)$")
_CONTINUATION = "      "


def _records(path: Path, limits: ReadLimits) -> Iterator[tuple[int, list[tuple[str, str]]]]:
    """(first line, [(tag, value)]) per record, continuation lines joined by a space;
    read as a stream, one record in memory (at most ``limits.max_document_chars``)."""
    fields: list[tuple[str, str]] = []
    first = size = 0
    for lineno, line in text_lines(path, limits):
        if not line.strip():
            if fields:
                yield first, fields
                fields, size = [], 0
            continue
        size += len(line)
        if size > limits.max_document_chars:
            raise InputError(f"a record of more than {limits.max_document_chars:,} characters (a limit, see "
                             f"docs/reference/limits.md)", path, first or lineno)
        if line.startswith(_CONTINUATION) and fields:
            tag, value = fields[-1]
            fields[-1] = (tag, f"{value} {line.strip()}" if value else line.strip())
            continue
        m = _FIELD_RE.match(line)
        if m is None:
            raise InputError(f"not a MEDLINE field line (expected 'TAG - value'): {line[:60]!r}", path, lineno)
        if not fields:
            first = lineno
        fields.append((m.group(1).strip(), m.group(2).strip()))
    if fields:
        yield first, fields


def read(path: str | Path, limits: ReadLimits | None = None) -> Iterator[Document]:
    """One document per MEDLINE record, read as a stream."""
    path = Path(path)
    seen = False
    for first, fields in _records(path, limits or DEFAULT_LIMITS):
        seen = True
        pmid = next((v for t, v in fields if t == "PMID"), "")
        if not pmid:
            raise InputError("MEDLINE record without a PMID field", path, first)
        title = " ".join(v for t, v in fields if t == "TI")
        abstract = " ".join(v for t, v in fields if t == "AB")
        rest = [[t, v] for t, v in fields if t not in ("PMID", "TI", "AB")]
        doc = Document.from_parts(pmid, title, [(None, abstract)])
        if rest:
            doc.metadata["medline"] = rest
        yield doc
    if not seen:
        raise InputError("empty file: no MEDLINE records", path)


def write(docs: Iterable[Document], path: str | Path) -> WriteReport:
    """Write documents as MEDLINE records (``PMID``, ``TI``, ``AB``, then kept fields).
    Values are written on one line each (no wrapping), so no white space is lost."""
    report = WriteReport(path=str(path), format=NAME)
    with atomic_write(path) as fh:
        for n, doc in enumerate(docs):
            refuse_chars(doc.id, "id", doc.id, path, re.compile(r"\s"), NAME, empty=False)
            report.add(doc, holds_spans=False)
            lines = [("PMID", doc.id)]
            if doc.title:
                lines.append(("TI", doc.title))
            if doc.abstract:
                lines.append(("AB", doc.abstract))
            lines.extend((t, v) for t, v in doc.metadata.get("medline") or [])
            fh.write("\n" if n else "")
            for tag, value in lines:
                fh.write(f"{tag:<4}- {str(value).replace(chr(10), ' ')}\n")
    return report
