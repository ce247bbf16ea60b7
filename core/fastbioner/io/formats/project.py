"""The app's project files (``.fbproj``) read as documents, read-only: every command
that reads documents (``agree``, ``stats``, ``convert``, ``tag``, ``rank`` ...) takes a
project as it takes a JSONL file.

A project is a header line (``{"format": "fastbioner-project", "version": 2, ...}``),
then one lossless JSONL document per line with the project's own keys (``status``,
``tagged_by``, ``origin``, ``rejected``: see :mod:`fastbioner.curate.project`, which opens
a project whole, statuses included). Read as documents, each is its curator's version:
gold, accepted and added entities, without the pending suggestions nobody has decided
on (``suggestions=True`` keeps them). A project is written by the app (File > Save
project), never by a format writer: writing one is refused, so no command can turn a
curator's project into a file without its statuses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator

from fastbioner.base.errors import InputError
from fastbioner.io.documents import Document, Source
from fastbioner.io.formats.checks import is_int, load_json
from fastbioner.io.formats.jsonl import document_from_dict
from fastbioner.io.formats.limits import DEFAULT_LIMITS, ReadLimits
from fastbioner.io.formats.lines import text_lines
from fastbioner.io.formats.report import WriteReport

NAME = "project"
EXTENSIONS = (".fbproj",)
PROJECT_FORMAT = "fastbioner-project"
PROJECT_VERSION = 2
# A document line's keys that are the project's, not the document's.
PROJECT_KEYS = ("status", "tagged_by", "origin", "rejected")


def check_header(header: object, path: str | Path) -> int:
    """The version of a project's header line; InputError at line 1 for anything else."""
    if not isinstance(header, dict) or header.get("format") != PROJECT_FORMAT:
        raise InputError("not a FastBioNER project (no project header)", path, 1)
    version = header.get("version")
    if not is_int(version) or version < 1:
        raise InputError(f"bad project header: version must be a whole number from 1, got {version!r:.40}",
                         path, 1)
    if version > PROJECT_VERSION + 1:
        # One version ahead is read: a next version adds fields this one ignores.
        raise InputError(f"project format version {version} is newer than this program "
                         f"reads ({PROJECT_VERSION}): update FastBioNER", path, 1)
    return version


def read(path: str | Path, limits: ReadLimits | None = None, suggestions: bool = False) -> Iterator[Document]:
    """The project's documents, as a stream (one line in memory, as JSONL)."""
    path = Path(path)
    limits = limits or DEFAULT_LIMITS
    header = False
    for lineno, line in text_lines(path, limits):
        if not line.strip():
            continue
        try:
            obj = load_json(line)
        except ValueError as exc:
            raise InputError(str(exc), path, lineno) from None
        if not header:
            check_header(obj, path)
            header = True
            continue
        if not isinstance(obj, dict):
            raise InputError("expected a JSON object (one document)", path, lineno)
        for key in PROJECT_KEYS:
            obj.pop(key, None)
        try:
            doc = document_from_dict(obj)
        except KeyError as exc:
            raise InputError(f"document without the required key {exc.args[0]!r}", path, lineno) from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"bad document: {exc}", path, lineno) from None
        if len(doc.text) > limits.max_document_chars:
            raise InputError(f"a text of {len(doc.text):,} characters, over the {limits.max_document_chars:,} "
                             f"one document may hold (see docs/reference/limits.md)", path, lineno)
        if not suggestions:
            doc.spans = [s for s in doc.spans if s.source is not Source.MODEL]
        yield doc
    if not header:
        raise InputError("empty file, expected a FastBioNER project", path)


def write(docs: Iterable[Document], path: str | Path) -> WriteReport:
    raise InputError("project files are read here, never written: the app saves a project (File > Save "
                     "project); write JSONL to keep every span", path)
