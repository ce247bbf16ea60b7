"""Opening files and folders in the background: every file is read by the core's
format readers; a file that fails is reported (file and line) while the others load."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from PySide6.QtCore import QObject, Signal

from fastbioner.documents import Document
from fastbioner.jobs import CancelToken, EventCallback

from .jobs import Job, JobManager
from .models.workspace import Workspace


@dataclass
class LoadResult:
    files: list[tuple[str, list[Document]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def documents(self) -> int:
        return sum(len(docs) for _, docs in self.files)


def read_files(paths: Sequence[str | Path], on_event: EventCallback, cancel: CancelToken) -> LoadResult:
    """The job: the core's multi-file reader (folders searched, one progress step per
    file, a bad file's error kept while the others load), grouped by file."""
    from fastbioner.formats import read_any

    batch = read_any(paths, on_event=on_event, cancel=cancel)
    by_file: dict[str, list[Document]] = {}
    for doc in batch:
        # ``files`` grows before a file's documents are yielded: the last is theirs.
        by_file.setdefault(str(batch.files[-1]), []).append(doc)
    result = LoadResult(files=list(by_file.items()), errors=[str(e) for e in batch.errors])
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
        job.failed.connect(lambda message: self._add(LoadResult(errors=[message])))
        return job

    def _add(self, result: LoadResult) -> None:
        for path, docs in result.files:
            self.workspace.add_documents(docs, origin=path)
        self.loaded.emit(result)
