"""Saving and opening projects, autosave and crash recovery.

Autosave: at most one interval (a second) after any change, however steady the
editing, the whole working set is written atomically to
this session's autosave file (``autosave/autosave-N.fbproj``, slot N held by a
``QLockFile`` so two running apps never share one). A clean exit deletes it; so an
autosave found in a free slot at start-up is what a crashed session left, and the
app offers to recover it. The lock file also tells a crashed session (its process
is gone) from a live one.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QLockFile, QObject, QTimer, Signal
from PySide6.QtGui import QUndoStack

from fastbioner.base.errors import FastBioNERError
from fastbioner.curate.project import PROJECT_SUFFIX, Project, autosave_folder, load_project, save_project

from .models.workspace import Workspace

_SLOTS = 16


class ProjectController(QObject):
    """Knows where the working set is saved, whether it changed since, and keeps the
    autosave current."""

    stateChanged = Signal()        # path or modified flag changed (window title)
    autosaveFailed = Signal(str)

    def __init__(self, workspace: Workspace, stack: QUndoStack, autosave_seconds: float = 1.0,
                 parent: QObject | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.stack = stack
        self.path: Path | None = None
        self._dirty = False
        self._locks: list[QLockFile] = []
        self.autosave_file: Path | None = None
        # The workspace row the curator is reading (set by the window): the autosave
        # records it, so a recovery opens on the document being edited.
        self.current_row = -1
        self.start_row = 0  # the row to show first after the last replace()
        self._wrote_autosave = False  # this session's autosave file is its own, not a leftover
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(int(autosave_seconds * 1000))
        self._timer.timeout.connect(self.autosave_now)
        workspace.modified.connect(self._changed)
        stack.cleanChanged.connect(lambda _clean: self.stateChanged.emit())

    # State -----------------------------------------------------------------
    @property
    def modified(self) -> bool:
        return self._dirty or not self.stack.isClean()

    def name(self) -> str:
        return self.path.name if self.path is not None else "Untitled"

    def set_autosave_interval(self, seconds: float) -> None:
        self._timer.setInterval(max(100, int(seconds * 1000)))

    def _changed(self) -> None:
        self._dirty = True
        # The timer runs from the first unsaved change and is not restarted by later
        # ones: a change is on disk within one interval however steady the editing
        # (restarting it on every change meant edits half a second apart never saved).
        if not self._timer.isActive():
            self._timer.start()
        self.stateChanged.emit()

    def mark_clean(self) -> None:
        self._dirty = False
        self.stack.setClean()
        self.stateChanged.emit()

    # Save and open -----------------------------------------------------------
    def save(self, path: str | Path | None = None) -> Path:
        """Save the working set (raises OSError / FastBioNERError for the caller to show)."""
        path = Path(path) if path is not None else self.path
        if path is None:
            raise ValueError("no file name to save to")
        if path.suffix != PROJECT_SUFFIX:
            path = path.with_suffix(PROJECT_SUFFIX)
        save_project(self.workspace.project, path)
        self.path = path
        self.mark_clean()
        self.autosave_now()  # the autosave now matches the file, and names it
        return path

    def open(self, path: str | Path) -> None:
        project = load_project(path)
        self.replace(project, Path(path))

    def replace(self, project: Project, path: Path | None, modified: bool = False) -> None:
        """Show ``project`` as the working set (from a file, a recovery or the samples)."""
        self.start_row = 0
        self.workspace.set_project(project)
        self.stack.clear()
        self.path = path
        self.mark_clean()
        if modified:
            self._changed()

    # Autosave and recovery -------------------------------------------------
    def claim_autosave_slot(self, fresh: bool = False) -> Path | None:
        """Take a free autosave slot for this session. Returns the autosave a crashed
        session left in that slot (to offer for recovery), or None. ``fresh`` skips
        slots holding a leftover (the user keeps it for later; the slot stays locked
        by this session so no other one offers it meanwhile)."""
        folder = autosave_folder()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file in its place, a read-only home: the session runs without autosave
            self.autosave_file = None
            self.autosaveFailed.emit(f"no autosave this session: {folder}: {exc.strerror or exc}")
            return None
        sweep_stale_locks(folder)
        for slot in range(_SLOTS):
            lock = QLockFile(str(folder / f"autosave-{slot}.lock"))
            lock.setStaleLockTime(0)  # only a dead owner makes a lock stale, never its age
            if not lock.tryLock(0):
                continue
            file = folder / f"autosave-{slot}{PROJECT_SUFFIX}"
            if file.exists() and not file.is_file():  # a folder (or FIFO) in the way: not a usable slot
                lock.unlock()
                continue
            if fresh and file.exists():
                self._locks.append(lock)
                continue
            self._locks.append(lock)
            self.autosave_file = file
            return file if file.exists() else None
        self.autosave_file = None  # every slot busy: this session autosaves nowhere, but still runs
        return None

    def recover(self, path: Path) -> None:
        project = load_project(path)
        saved_as = project.info.pop("autosave_of", None)
        row = project.info.pop("autosave_row", 0)
        self.replace(project, Path(saved_as) if saved_as else None, modified=True)
        self.start_row = row if isinstance(row, int) and 0 <= row < len(project.entries) else 0

    def autosave_now(self) -> None:
        self._timer.stop()
        if self.autosave_file is None:
            return
        project = self.workspace.project
        project.info["autosave_of"] = str(self.path) if self.path is not None else None
        project.info["autosave_row"] = self.current_row
        try:
            save_project(project, self.autosave_file)
            self._wrote_autosave = True
        except (OSError, FastBioNERError) as exc:  # a full disk says so, never ends the app
            self.autosaveFailed.emit(f"autosave to {self.autosave_file} failed: {exc}")
        finally:
            project.info.pop("autosave_of", None)
            project.info.pop("autosave_row", None)

    def discard_autosave(self) -> None:
        if self.autosave_file is not None:
            try:
                self.autosave_file.unlink(missing_ok=True)
            except OSError as exc:  # a folder put in its place: closing still ends cleanly
                self.autosaveFailed.emit(f"cannot remove the autosave {self.autosave_file}: {exc.strerror or exc}")

    def close(self) -> None:
        """A clean exit: no autosave left behind (the user saved or chose to discard)."""
        self._timer.stop()
        self.discard_autosave()
        self._unlock()

    def release(self) -> None:
        """An exit nobody was asked about (SIGTERM: a logout, a service stop): work not
        saved stays in the autosave, brought up to date, for the next start to offer;
        an unmodified session leaves none (but a crashed session's autosave it was
        still asking about stays). Either way the slot's lock goes."""
        self._timer.stop()
        if self.modified:
            self.autosave_now()
        elif self._wrote_autosave:
            self.discard_autosave()
        self._unlock()

    def _unlock(self) -> None:
        for lock in self._locks:
            lock.unlock()
        self._locks = []


def sweep_stale_locks(folder: Path) -> list[Path]:
    """Remove the autosave locks whose process is gone (a session killed, or ended
    by a signal before it could unlock): otherwise they pile up, one per slot. A live
    session's lock is left alone; the autosaves themselves stay, to be offered for
    recovery. Returns the lock files removed."""
    removed = []
    for path in sorted(folder.glob("autosave-*.lock")):
        lock = QLockFile(str(path))
        lock.setStaleLockTime(0)  # stale only when its owner is dead, never by age
        if lock.tryLock(0):  # only succeeds on a stale lock (it is taken over) or none
            lock.unlock()
            removed.append(path)
    return removed
