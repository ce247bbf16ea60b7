"""Plain text: one abstract per block, blocks separated by blank lines.

Each block is a document with one ``abstract`` passage; its id is
``<file stem>:<line of the block's first line>``. Single line breaks inside a block
are kept in the text (the sentence splitter does not cut at them). Plain text holds
no entity spans; the writer collapses blank lines inside a document's text to one
line break so that the file reads back as the same number of documents.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Iterator

from fastbioner.io.documents import Document
from fastbioner.base.errors import InputError
from fastbioner.io.fileio import atomic_write
from fastbioner.io.formats.limits import DEFAULT_LIMITS, ReadLimits
from fastbioner.io.formats.lines import text_lines
from fastbioner.io.formats.report import WriteReport

NAME = "text"
EXTENSIONS = (".txt", ".text")

_BLANK_LINES_RE = re.compile(r"\n\s*\n")


def read(path: str | Path, limits: ReadLimits | None = None) -> Iterator[Document]:
    """One document per blank-line-separated block, read as a stream (one block in
    memory; a block over ``limits.max_document_chars`` is refused)."""
    path = Path(path)
    cap = (limits or DEFAULT_LIMITS).max_document_chars
    block: list[str] = []
    size, first_line, any_text = 0, 0, False
    for lineno, line in text_lines(path, limits):
        if not line.strip():
            if block:
                yield Document(id=f"{path.stem}:{first_line}", text="\n".join(block).strip())
                block, size = [], 0
            continue
        if not block:
            first_line, any_text = lineno, True
        size += len(line) + 1
        if size > cap:
            raise InputError(f"a block (document) of more than {cap:,} characters (a limit, see "
                             f"docs/reference/limits.md): separate documents with a blank line", path, first_line)
        block.append(line)
    if block:
        yield Document(id=f"{path.stem}:{first_line}", text="\n".join(block).strip())
    if not any_text:
        raise InputError("empty file: no text", path)


def write(docs: Iterable[Document], path: str | Path) -> WriteReport:
    """Write each document's text as one block."""
    report = WriteReport(path=str(path), format=NAME)
    with atomic_write(path) as fh:
        for n, doc in enumerate(docs):
            report.add(doc, holds_spans=False)
            body = _BLANK_LINES_RE.sub("\n", doc.text.strip())
            fh.write(("\n" if n else "") + body + "\n")
    return report
