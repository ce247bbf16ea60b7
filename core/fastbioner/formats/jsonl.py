"""JSONL: one document per line, everything the document model holds, so it is the
lossless format (the app's project files use it too).

Each line is an object::

    {"id": "123", "text": "...",
     "passages": [{"start": 0, "end": 42, "kind": "title", "label": null}, ...],
     "spans": [{"start": 0, "end": 7, "label": "Chemical", "source": "gold",
                "score": null, "concept_id": "D008094"}, ...],
     "relations": [["CID", "D008094", "D006331"], ...],
     "metadata": {...}}

Only ``id`` and ``text`` are required; a line that is not such an object, or whose
spans or passages fall outside the text, is an error naming file and line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..documents import Document, Passage, Source, Span
from ..errors import InputError
from ..fileio import atomic_write, read_text
from .report import WriteReport

NAME = "jsonl"
EXTENSIONS = (".jsonl", ".ndjson")


def document_to_dict(doc: Document) -> dict[str, Any]:
    """The JSON object of one document (also used by the app's project files)."""
    return {
        "id": doc.id,
        "text": doc.text,
        "passages": [{"start": p.start, "end": p.end, "kind": p.kind, "label": p.label} for p in doc.passages],
        "spans": [{"start": s.start, "end": s.end, "label": s.label, "source": s.source.value,
                   "score": s.score, "concept_id": s.concept_id} for s in doc.spans],
        "relations": [list(r) for r in doc.relations],
        "metadata": doc.metadata,
    }


def document_from_dict(obj: Any) -> Document:
    """Inverse of :func:`document_to_dict`; ValueError/TypeError/KeyError on bad data."""
    if not isinstance(obj, dict):
        raise TypeError(f"expected a JSON object, got {type(obj).__name__}")
    doc_id, text = obj["id"], obj["text"]
    if not isinstance(doc_id, (str, int)) or not isinstance(text, str):
        raise TypeError("'id' must be a string and 'text' a string")
    passages = [Passage(int(p["start"]), int(p["end"]), str(p.get("kind", "abstract")), p.get("label"))
                for p in obj.get("passages") or []]
    spans = [Span(int(s["start"]), int(s["end"]), str(s["label"]), Source(s.get("source", "gold")),
                  None if s.get("score") is None else float(s["score"]), s.get("concept_id"))
             for s in obj.get("spans") or []]
    for item in [*passages, *spans]:
        if not 0 <= item.start <= item.end <= len(text):
            raise ValueError(f"offsets {item.start}..{item.end} fall outside the text ({len(text)} characters)")
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise TypeError("'metadata' must be an object")
    relations = [tuple(r) for r in obj.get("relations") or []]
    doc = Document(id=str(doc_id), text=text, passages=passages, spans=spans, metadata=metadata,
                   relations=relations)
    return doc


def read(path: str | Path) -> Iterator[Document]:
    """One document per non-blank line."""
    path = Path(path)
    text = read_text(path)
    if not text.strip():
        raise InputError("empty file: no JSON lines", path)
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", path, lineno) from None
        try:
            yield document_from_dict(obj)
        except KeyError as exc:
            raise InputError(f"document without the required key {exc.args[0]!r}", path, lineno) from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"bad document: {exc}", path, lineno) from None


def write(docs: Iterable[Document], path: str | Path) -> WriteReport:
    """Write one JSON object per line (UTF-8, not ASCII-escaped)."""
    report = WriteReport(path=str(path), format=NAME)
    with atomic_write(path) as fh:
        for doc in docs:
            try:
                line = json.dumps(document_to_dict(doc), ensure_ascii=False)
            except (TypeError, ValueError) as exc:
                raise InputError(f"document {doc.id}: metadata cannot be written as JSON ({exc})",
                                 path) from None
            report.add(doc)
            fh.write(line + "\n")
    return report
