"""Opening files and folders in the background: every file is read by the core's
format readers; a file that fails is reported (file and line) while the others load."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from PySide6.QtCore import QObject, Signal

from fastbioner.documents import Document
from fastbioner.errors import FastBioNERError
from fastbioner.jobs import CancelToken, EventCallback, run_job

from .jobs import Job, JobManager
from .models.workspace import Workspace


@dataclass
class LoadResult:
    files: list[tuple[str, list[Document]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def documents(self) -> int:
        return sum(len(docs) for _, docs in self.files)


def expand_paths(paths: Sequence[str | Path]) -> list[Path]:
    """Files as given; a folder stands for the files in it (recursively) whose
    extension a reader knows, in name order."""
    from fastbioner.formats import format_for_path

    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            for child in sorted(p.rglob("*")):
                if child.is_file() and not child.name.startswith(".") and _known(child, format_for_path):
                    out.append(child)
        else:
            out.append(p)
    return out


def _known(path: Path, format_for_path) -> bool:  # noqa: ANN001
    try:
        return format_for_path(path) is not None
    except FastBioNERError:
        return False


def read_files(paths: Sequence[str | Path], on_event: EventCallback, cancel: CancelToken) -> LoadResult:
    """The job: read each file with its format's reader, one progress step per file."""
    from fastbioner.formats import read_documents

    def job(reporter) -> LoadResult:
        files = expand_paths(paths)
        reporter.stage("read", total=len(files))
        result = LoadResult()
        for i, path in enumerate(files):
            reporter.check()
            try:
                docs = list(read_documents(path))
            except FastBioNERError as exc:
                result.errors.append(str(exc))
            except OSError as exc:
                result.errors.append(f"{path}: cannot read: {exc.strerror or exc}")
            else:
                if not docs:
                    result.errors.append(f"{path}: no documents found")
                result.files.append((str(path), docs))
            reporter.emit(step=i + 1, message=path.name)
        return result

    return run_job(job, on_event, cancel)


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
        return job

    def _add(self, result: LoadResult) -> None:
        for path, docs in result.files:
            self.workspace.add_documents(docs, origin=path)
        self.loaded.emit(result)
