"""Errors a user can act on: each names the file (and line, when there is one).

The CLI and the app print ``str(error)`` as one line; they never show a traceback
for these.
"""

from __future__ import annotations

from pathlib import Path


class FastBioNERError(Exception):
    """Base of every error the user is meant to read."""


class InputError(FastBioNERError):
    """Bad input data: names the file and, when known, the 1-based line."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.path = str(path) if path is not None else None
        self.line = line
        self.message = message
        where = ""
        if self.path is not None:
            where = f"{self.path}:{line}: " if line is not None else f"{self.path}: "
        super().__init__(f"{where}{message}")


class ModelError(FastBioNERError):
    """A model folder or registry entry that cannot be used (missing, corrupt, too new)."""


class InputWarning(UserWarning):
    """Input that was read after a repair (invalid tag sequence, span off token
    boundaries ...): issued through :mod:`warnings`, its text names file and line."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.path = str(path) if path is not None else None
        self.line = line
        self.message = message
        where = ""
        if self.path is not None:
            where = f"{self.path}:{line}: " if line is not None else f"{self.path}: "
        super().__init__(f"{where}{message}")
