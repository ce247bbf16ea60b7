"""JSONL: one document per line, everything the document model holds, so it is the
lossless format (the app's project files use it too).

Each line is an object::

    {"id": "123", "text": "...",
     "passages": [{"start": 0, "end": 42, "kind": "title", "label": null}, ...],
     "spans": [{"start": 0, "end": 7, "label": "Chemical", "source": "gold",
                "score": null, "concept_id": "D008094", "annotator": "alice"}, ...],
     "relations": [["CID", "D008094", "D006331"], ...],
     "metadata": {...}}

``annotator`` (which curator a span came from, after adjudication) is written only
when known. Only ``id`` and ``text`` are required; a line that is not such an object, or whose
spans or passages fall outside the text, is an error naming file and line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from fastbioner.io.documents import Document, Passage, Source, Span
from fastbioner.base.errors import InputError
from fastbioner.io.fileio import atomic_write
from fastbioner.io.formats.checks import check_metadata, expect, has_lone_surrogate, is_int, is_number, load_json
from fastbioner.io.formats.limits import DEFAULT_LIMITS, ReadLimits
from fastbioner.io.formats.lines import text_lines
from fastbioner.io.formats.report import WriteReport

NAME = "jsonl"
EXTENSIONS = (".jsonl", ".ndjson")


def document_to_dict(doc: Document) -> dict[str, Any]:
    """The JSON object of one document (also used by the app's project files)."""
    return {
        "id": doc.id,
        "text": doc.text,
        "passages": [{"start": p.start, "end": p.end, "kind": p.kind, "label": p.label} for p in doc.passages],
        "spans": [_span_dict(s) for s in doc.spans],
        "relations": [list(r) for r in doc.relations],
        "metadata": doc.metadata,
    }


def _span_dict(s: Span) -> dict[str, Any]:
    out = {"start": s.start, "end": s.end, "label": s.label, "source": s.source.value,
           "score": s.score, "concept_id": s.concept_id}
    if s.annotator is not None:  # only adjudicated spans carry one: other files stay as they were
        out["annotator"] = s.annotator
    return out


def _offsets(item: Any, where: str, text: str) -> tuple[int, int]:
    expect(isinstance(item, dict), where, "an object", item)
    start, end = item.get("start"), item.get("end")
    expect(is_int(start), f"{where}.start", "a whole number", start)
    expect(is_int(end), f"{where}.end", "a whole number", end)
    if not 0 <= start <= end <= len(text):
        raise ValueError(f"{where}: offsets {start}..{end} fall outside the text ({len(text)} characters)")
    return start, end


def _optional_str(value: Any, where: str) -> str | None:
    expect(value is None or isinstance(value, str), where, "a string or null", value)
    return value


_SOURCES = {x.value: x for x in Source}


# A project of thousands of documents is read through these: the fast checks build no
# message; only what they refuse goes through the checks that say what is wrong.
def _fast_passage(p: Any, n: int) -> Passage | None:
    if type(p) is not dict:
        return None
    start, end, kind, label = p.get("start"), p.get("end"), p.get("kind", "abstract"), p.get("label")
    if (type(start) is int and type(end) is int and 0 <= start <= end <= n and type(kind) is str
            and (label is None or type(label) is str)):
        return Passage(start, end, kind, label)
    return None


def _checked_passage(p: Any, i: int, text: str) -> Passage:
    start, end = _offsets(p, f"passages[{i}]", text)
    kind = p.get("kind", "abstract")
    expect(isinstance(kind, str), f"passages[{i}].kind", "a string", kind)
    return Passage(start, end, kind, _optional_str(p.get("label"), f"passages[{i}].label"))


def _fast_span(s: Any, n: int) -> Span | None:
    if type(s) is not dict:
        return None
    start, end, label = s.get("start"), s.get("end"), s.get("label")
    raw_source, score, concept = s.get("source", "gold"), s.get("score"), s.get("concept_id")
    annotator = s.get("annotator")
    source = _SOURCES.get(raw_source) if type(raw_source) is str else None
    if (type(start) is int and type(end) is int and 0 <= start <= end <= n and type(label) is str
            and label.strip() and source is not None and (score is None or is_number(score))
            and (concept is None or type(concept) is str) and (annotator is None or type(annotator) is str)):
        return Span(start, end, label, source, None if score is None else float(score), concept, annotator)
    return None


def _checked_span(s: Any, i: int, text: str) -> Span:
    where = f"spans[{i}]"
    start, end = _offsets(s, where, text)
    label = s.get("label")
    expect(isinstance(label, str) and label.strip() != "", f"{where}.label", "a non-empty string", label)
    source = s.get("source", "gold")
    if not isinstance(source, str) or source not in _SOURCES:
        raise ValueError(f"{where}.source must be one of {', '.join(_SOURCES)}, got {source!r:.40}")
    score = s.get("score")
    expect(score is None or is_number(score), f"{where}.score", "a finite number or null", score)
    return Span(start, end, label, Source(source), None if score is None else float(score),
                _optional_str(s.get("concept_id"), f"{where}.concept_id"),
                _optional_str(s.get("annotator"), f"{where}.annotator"))


def document_from_dict(obj: Any) -> Document:
    """Inverse of :func:`document_to_dict`, checking every field's type and range:
    ValueError (its text the message) or KeyError (a required key missing).
    Keys it does not know are ignored (a project adds its own)."""
    expect(isinstance(obj, dict), "a document", "a JSON object", obj)
    doc_id, text = obj["id"], obj["text"]
    expect(isinstance(doc_id, str) or is_int(doc_id), "'id'", "a string", doc_id)
    expect(isinstance(text, str), "'text'", "a string", text)
    raw_passages = obj.get("passages") or []
    expect(isinstance(raw_passages, list), "'passages'", "a list", raw_passages)
    n = len(text)
    passages = []
    for i, p in enumerate(raw_passages):
        fast = _fast_passage(p, n)
        passages.append(fast if fast is not None else _checked_passage(p, i, text))
    ordered = sorted(passages, key=lambda p: (p.start, p.end))
    for before, after in zip(ordered, ordered[1:]):
        if after.start < before.end:
            raise ValueError(f"passages overlap ({before.start}..{before.end} and {after.start}..{after.end})")
    raw_spans = obj.get("spans") or []
    expect(isinstance(raw_spans, list), "'spans'", "a list", raw_spans)
    spans = []
    for i, s in enumerate(raw_spans):
        span = _fast_span(s, n)
        spans.append(span if span is not None else _checked_span(s, i, text))
    metadata = obj.get("metadata") or {}
    check_metadata(metadata)
    for i, disc in enumerate(metadata.get("bioc_discontinuous") or []):
        for offset, length in disc["locations"]:
            if offset + length > len(text):
                raise ValueError(f"metadata['bioc_discontinuous'][{i}]: offsets {offset}..{offset + length} "
                                 f"fall outside the text ({len(text)} characters)")
    raw_relations = obj.get("relations") or []
    expect(isinstance(raw_relations, list), "'relations'", "a list", raw_relations)
    relations = []
    for i, r in enumerate(raw_relations):
        expect(isinstance(r, list) and len(r) > 0 and all(isinstance(x, str) for x in r),
               f"relations[{i}]", "a list of strings (type, arguments ...)", r)
        relations.append(tuple(r))
    return Document(id=str(doc_id), text=text, passages=passages, spans=spans, metadata=metadata,
                    relations=relations)


def read(path: str | Path, limits: ReadLimits | None = None) -> Iterator[Document]:
    """One document per non-blank line, read as a stream (one line in memory; a line
    over ``limits.max_line_bytes`` or a text over ``limits.max_document_chars`` is
    refused)."""
    path = Path(path)
    limits = limits or DEFAULT_LIMITS
    seen = False
    for lineno, line in text_lines(path, limits):
        if not line.strip():
            continue
        seen = True
        try:
            obj = load_json(line)
            doc = document_from_dict(obj)
        except KeyError as exc:
            raise InputError(f"document without the required key {exc.args[0]!r}", path, lineno) from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"bad document: {exc}" if not str(exc).startswith("not valid JSON") else str(exc),
                             path, lineno) from None
        if len(doc.text) > limits.max_document_chars:
            raise InputError(f"a text of {len(doc.text):,} characters, over the {limits.max_document_chars:,} "
                             f"one document may hold (see docs/reference/limits.md)", path, lineno)
        yield doc
    if not seen:
        raise InputError("empty file: no JSON lines", path)


def write(docs: Iterable[Document], path: str | Path) -> WriteReport:
    """Write one JSON object per line (UTF-8, not ASCII-escaped)."""
    report = WriteReport(path=str(path), format=NAME)
    with atomic_write(path) as fh:
        for doc in docs:
            try:
                line = json.dumps(document_to_dict(doc), ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError, RecursionError) as exc:
                raise InputError(f"document {doc.id}: cannot be written as JSON ({exc})", path) from None
            if has_lone_surrogate(line):
                raise InputError(f"document {doc.id}: holds a lone surrogate, which is not Unicode text",
                                 path)
            report.add(doc)
            fh.write(line + "\n")
    return report
