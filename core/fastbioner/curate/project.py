"""A curator's working set, saved as one file: the documents with all their spans
(gold, model, curator), each document's curation status, and which model tagged it.

The file is JSON Lines: a header line (format name, version, the models used with
their provenance), then one line per document in the lossless JSONL document format
of :mod:`fastbioner.io.formats.jsonl` with four extra keys, ``status``, ``tagged_by``,
``origin`` and ``rejected`` (the suggestions a curator rejected, so that re-tagging
does not offer them again). It is always written atomically, so a project file (or an autosave)
is complete or absent, never half-written.

Format versions: 1 knew the statuses new, tagged and curated, where "curated" meant
only that the document had been edited; 2 has the review workflow (new, tagged, in
review, reviewed) and the rejected suggestions. A version 1 file still opens: its
"curated" documents become "in review" (touched, but nobody said they were done).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Any, Iterable


from fastbioner import __version__
from fastbioner.io.documents import Document, Source, Span
from fastbioner.base.errors import InputError
from fastbioner.base.home import user_home
from fastbioner.io.fileio import atomic_write, read_text
# The file's layout is the formats' too: a command reads a project's documents as it reads JSONL.
from fastbioner.io.formats.project import PROJECT_FORMAT, PROJECT_VERSION, check_header
from fastbioner.io.formats import jsonl
from fastbioner.io.formats.checks import expect, is_int, load_json

PROJECT_SUFFIX = ".fbproj"


class DocStatus(str, Enum):
    """Where a document is in review: ``NEW`` (nothing done), ``TAGGED`` (a model made
    suggestions), ``IN_REVIEW`` (a curator has edited it), ``REVIEWED`` (a curator said
    it is done: only this is a deliberate action, never a side effect of an edit)."""

    NEW = "new"
    TAGGED = "tagged"
    IN_REVIEW = "in review"
    REVIEWED = "reviewed"
    # An alias, not a fifth status: code written before the review workflow asked for
    # "curated" documents to train on or export, and those are now the reviewed ones.
    CURATED = "reviewed"


# Statuses of older format versions, read as today's: version -> {old value: status}.
_OLD_STATUSES = {1: {"curated": DocStatus.IN_REVIEW}}


def needs_review(status: DocStatus) -> bool:
    """Whether a curator still has to look at a document with this status."""
    return status is not DocStatus.REVIEWED


def reviewed_documents(project: "Project") -> list[Document]:
    """The documents a curator marked reviewed: what export and training on curated
    work take by default."""
    return [e.document for e in project.entries if e.status is DocStatus.REVIEWED]


@dataclass
class ProjectEntry:
    document: Document
    status: DocStatus = DocStatus.NEW
    tagged_by: str | None = None  # registry name of the model that made its suggestions
    origin: str | None = None     # the file it was read from
    # Suggestions a curator rejected: re-tagging does not offer the same mention again.
    rejected: list[Span] = field(default_factory=list)


@dataclass
class Project:
    entries: list[ProjectEntry] = field(default_factory=list)
    # Provenance of each model that tagged something: name -> manifest summary.
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Labels the curator works with beyond those in the documents (e.g. a model's).
    labels: list[str] = field(default_factory=list)
    # Free-form notes kept in the header (e.g. an autosave records the project it saves).
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def documents(self) -> list[Document]:
        return [e.document for e in self.entries]

    @classmethod
    def of(cls, documents: Iterable[Document], origin: str | None = None) -> "Project":
        return cls([entry_for(d, origin) for d in documents])


def entry_for(doc: Document, origin: str | None = None) -> ProjectEntry:
    """A new entry; a document that arrives with model spans counts as tagged."""
    status = DocStatus.TAGGED if any(s.source is Source.MODEL for s in doc.spans) else DocStatus.NEW
    return ProjectEntry(doc, status, origin=origin)


def save_project(project: Project, path: str | Path) -> None:
    header = {"format": PROJECT_FORMAT, "version": PROJECT_VERSION, "fastbioner": __version__,
              "saved": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "documents": len(project.entries), "models": project.models,
              "labels": project.labels, "info": project.info}
    def line(obj: Any, what: str) -> str:
        # Refused here (not NaN or Infinity written, which no reader takes back): a
        # project that saves must open again.
        try:
            return json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n"
        except (TypeError, ValueError, RecursionError) as exc:
            raise InputError(f"{what} cannot be saved as JSON ({exc})", path) from None

    with atomic_write(path) as fh:
        fh.write(line(header, "the project header"))
        for entry in project.entries:
            record = jsonl.document_to_dict(entry.document)
            record["status"] = entry.status.value
            record["tagged_by"] = entry.tagged_by
            record["origin"] = entry.origin
            if entry.rejected:
                record["rejected"] = [{"start": r.start, "end": r.end, "label": r.label, "score": r.score}
                                      for r in entry.rejected]
            fh.write(line(record, f"document {entry.document.id}"))


def _check_header(header: Any, path: str | Path) -> dict[str, Any]:
    """The header's fields, type-checked: InputError at line 1 for any fault. Keys it
    does not know are ignored (a newer minor version may add some)."""
    version = check_header(header, path)
    assert isinstance(header, dict)
    try:
        models = header.get("models") or {}
        expect(isinstance(models, dict), "'models'", "an object (model name: details)", models)
        for name, details in models.items():
            expect(isinstance(details, dict), f"models[{name!r}]", "an object", details)
        labels = header.get("labels") or []
        expect(isinstance(labels, list), "'labels'", "a list of strings", labels)
        for i, label in enumerate(labels):
            expect(isinstance(label, str) and label.strip() != "", f"labels[{i}]", "a non-empty string", label)
        info = header.get("info") or {}
        expect(isinstance(info, dict), "'info'", "an object", info)
        count = header.get("documents")
        expect(count is None or (is_int(count) and count >= 0), "'documents'", "a whole number", count)
    except ValueError as exc:
        raise InputError(f"bad project header: {exc}", path, 1) from None
    return {"models": models, "labels": labels, "info": info, "documents": count, "version": version}


def load_project(path: str | Path) -> Project:
    """Read a project file; any fault is an :class:`InputError` naming file and line:
    a header whose fields have the wrong types, a document line that is not a valid
    document, and a file holding fewer (or more) documents than its header says (a
    file cut short)."""
    if Path(path).exists() and not Path(path).is_file() and not Path(path).is_dir():
        # read_text would wait on a FIFO forever (the app would freeze opening it)
        raise InputError("not a regular file (a FIFO, device or socket); a project is a .fbproj file", path)
    lines = read_text(path).split("\n")
    if not lines or not lines[0].strip():
        raise InputError("empty file, expected a FastBioNER project", path, 1)
    header = _check_header(_json_line(lines[0], path, 1), path)
    project = Project(models=header["models"], labels=header["labels"], info=header["info"])
    last = 1
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        last = number
        record = _json_line(line, path, number)
        if not isinstance(record, dict):
            raise InputError("expected a JSON object (one document)", path, number)
        try:
            status = _status(record.pop("status", DocStatus.NEW.value), header["version"])
        except (ValueError, TypeError, KeyError) as exc:
            raise InputError(f"unknown status: {exc}", path, number) from None
        tagged_by = record.pop("tagged_by", None)
        origin = record.pop("origin", None)
        rejected_records = record.pop("rejected", None) or []
        try:
            rejected = [Span(int(r["start"]), int(r["end"]), str(r["label"]), Source.MODEL,
                             None if r.get("score") is None else float(r["score"])) for r in rejected_records]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"bad rejected suggestion: {exc}", path, number) from None
        try:
            for key, value in (("tagged_by", tagged_by), ("origin", origin)):
                if value is not None and not isinstance(value, str):
                    raise ValueError(f"{key!r} must be a string or null")
            doc = jsonl.document_from_dict(record)
        except KeyError as exc:
            raise InputError(f"document without the required key {exc.args[0]!r}", path, number) from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"bad document: {exc}", path, number) from None
        project.entries.append(ProjectEntry(doc, status, tagged_by, origin, rejected))
    expected = header["documents"]
    if expected is not None and expected != len(project.entries):
        cut = " (the file was cut short?)" if expected > len(project.entries) else ""
        raise InputError(f"the header says {expected} document(s) but the file holds "
                         f"{len(project.entries)}{cut}", path, last)
    return project


def _status(value: str, version: int) -> DocStatus:
    old = _OLD_STATUSES.get(version, {})
    return old[value] if value in old else DocStatus(value)


def _json_line(line: str, path: str | Path, number: int) -> Any:
    try:
        return load_json(line)
    except ValueError as exc:
        raise InputError(str(exc), path, number) from None


def autosave_folder() -> Path:
    return user_home() / "autosave"


def home_problem() -> str | None:
    """Why the user folder (settings, autosave, models) cannot be written: a regular
    file in its place, a read-only file system, a full disk; None when it can. Tries
    what a save does: make the folder, write a byte, remove it."""
    home = user_home()
    try:
        home.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".write-check-", dir=home)
        try:
            os.write(fd, b"x")
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(name)
    except OSError as exc:
        return (f"{home}: cannot save settings, autosaves or models there ({exc.strerror or exc}); "
                f"set FASTBIONER_HOME to a folder you can write")
    return None
