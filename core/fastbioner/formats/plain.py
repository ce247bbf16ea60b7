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

from ..documents import Document
from ..errors import InputError
from ..fileio import atomic_write, read_text
from .report import WriteReport

NAME = "text"
EXTENSIONS = (".txt", ".text")

_BLOCK_RE = re.compile(r"[^\n]*\S[^\n]*(?:\n[^\n]*\S[^\n]*)*")
_BLANK_LINES_RE = re.compile(r"\n\s*\n")


def read(path: str | Path) -> Iterator[Document]:
    """One document per blank-line-separated block."""
    path = Path(path)
    text = read_text(path)
    if not text.strip():
        raise InputError("empty file: no text", path)
    for m in _BLOCK_RE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        yield Document(id=f"{path.stem}:{line}", text=m.group().strip())


def write(docs: Iterable[Document], path: str | Path) -> WriteReport:
    """Write each document's text as one block."""
    report = WriteReport(path=str(path), format=NAME)
    with atomic_write(path) as fh:
        for n, doc in enumerate(docs):
            report.add(doc, holds_spans=False)
            body = _BLANK_LINES_RE.sub("\n", doc.text.strip())
            fh.write(("\n" if n else "") + body + "\n")
    return report
