"""Opening files and folders in the background: every file is read by the core's
format readers; a file that fails is reported (file and line) while the others load,
warnings (a repaired IOB1 file) are kept for the app to show, and a document already
open (same id: the same PMID twice) is reported and not added again."""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from PySide6.QtCore import QObject, Signal

from fastbioner.io.documents import Document
from fastbioner.base.errors import InputWarning
from fastbioner.base.jobs import CancelToken, EventCallback

from .jobs import Job, JobManager
from .models.workspace import Workspace


@dataclass
class LoadResult:
    files: list[tuple[str, list[Document]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)     # read, but repaired: file and line
    duplicates: list[str] = field(default_factory=list)   # "id (file)": already open, not added
    failed_paths: list[str] = field(default_factory=list)  # what was asked for, when nothing could be read

    @property
    def documents(self) -> int:
        return sum(len(docs) for _, docs in self.files)

    def summary(self) -> str:
        """One line for the status bar."""
        if not self.files and (self.errors or self.failed_paths):
            names = self.failed_paths or [e.split(":")[0] for e in self.errors]
            first = Path(names[0]).name if names else "the files"
            more = f" and {len(names) - 1} more" if len(names) > 1 else ""
            return f"Could not open {first}{more}: {self.errors[0] if self.errors else 'no documents'}"
        n = self.documents - len(self.duplicates)
        text = (f"Loaded {n} document{'s' if n != 1 else ''} "
                f"from {len(self.files)} file{'s' if len(self.files) != 1 else ''}")
        if self.duplicates:
            text += f"; {len(self.duplicates)} already open, not added again"
        if self.errors:
            text += f"; {len(self.errors)} file{'s' if len(self.errors) != 1 else ''} could not be read"
        if self.warnings:
            text += f"; {len(self.warnings)} warning{'s' if len(self.warnings) != 1 else ''}"
        return text


def read_files(paths: Sequence[str | Path], on_event: EventCallback, cancel: CancelToken) -> LoadResult:
    """The job: the core's multi-file reader (folders searched, one progress step per
    file, a bad file's error kept while the others load), grouped by file."""
    from fastbioner.io.formats import read_any

    batch = read_any(paths, on_event=on_event, cancel=cancel)
    by_file: dict[str, list[Document]] = {}
    # The readers warn through the warnings module (InputWarning names file and line);
    # they are kept for the app to show instead of going to the terminal. (The record
    # is process-wide while it lasts: a warning of another thread is passed on.)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InputWarning)
        for doc in batch:
            # ``files`` grows before a file's documents are yielded: the last is theirs.
            by_file.setdefault(str(batch.files[-1]), []).append(doc)
    kept = [str(w.message) for w in caught if issubclass(w.category, InputWarning)]
    for w in caught:
        if not issubclass(w.category, InputWarning):
            print(warnings.formatwarning(w.message, w.category, w.filename, w.lineno), file=sys.stderr, end="")
    result = LoadResult(files=list(by_file.items()), errors=[str(e) for e in batch.errors],
                        warnings=list(dict.fromkeys(kept)))
    for path in batch.files:
        if str(path) not in by_file:
            result.errors.append(f"{path}: no documents found")
    return result


class FileLoader(QObject):
    """Reads files with a background job and adds what they hold to the workspace."""

    loaded = Signal(object)  # LoadResult, after its documents were added

    def __init__(self, workspace: Workspace, jobs: JobManager, parent: QObject | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.jobs = jobs

    def open(self, paths: Sequence[str | Path]) -> Job:
        paths = [str(p) for p in paths]
        title = f"Open {Path(paths[0]).name}" + (f" and {len(paths) - 1} more" if len(paths) > 1 else "")
        job = self.jobs.start(title, lambda on_event, cancel: read_files(paths, on_event, cancel), kind="open")
        job.succeeded.connect(self._add)
        job.failed.connect(lambda message: self._add(LoadResult(errors=[message], failed_paths=paths)))
        return job

    def _add(self, result: LoadResult) -> None:
        """Add the documents read, except those already open (or read twice now): the
        same PMID twice would be curated and exported twice."""
        seen = {self.workspace.document(r).id for r in range(len(self.workspace))}
        for path, docs in result.files:
            fresh = []
            for doc in docs:
                if doc.id and doc.id in seen:
                    result.duplicates.append(f"{doc.id} ({Path(path).name})")
                    continue
                seen.add(doc.id)
                fresh.append(doc)
            self.workspace.add_documents(fresh, origin=path)
        self.loaded.emit(result)
