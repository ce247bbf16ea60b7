"""Errors a user can act on: each names the file (and line, when there is one).

The CLI and the app print ``str(error)`` as one line; they never show a traceback
for these.
"""

from __future__ import annotations

from pathlib import Path


def located(message: str, path: str | Path | None = None, line: int | None = None) -> str:
    """``path:line: message`` (or ``path: message``, or the message alone)."""
    if path is None:
        return message
    return f"{path}:{line}: {message}" if line is not None else f"{path}: {message}"


class FastBioNERError(Exception):
    """Base of every error the user is meant to read."""


class InputError(FastBioNERError):
    """Bad input data: names the file and, when known, the 1-based line."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.path = str(path) if path is not None else None
        self.line = line
        self.message = message
        super().__init__(located(message, path, line))


class ConfigError(FastBioNERError):
    """A setting with an impossible value, or a settings dict (or the defaults table)
    that does not fit; :mod:`fastbioner.base.config` raises it, defined here so that the
    defaults table its settings read can raise it too."""


class ModelError(FastBioNERError):
    """A model folder or registry entry that cannot be used (missing, corrupt, too new)."""


class DiskSpaceError(FastBioNERError):
    """Not enough free disk for what a run is about to write (a teacher cache): said
    before it starts, since a memory-mapped file that meets a full disk ends the
    process with a bus error, not a message."""


# Free disk a teacher cache's build leaves for everything else (checkpoints, the
# model, logs); the run checks it, and `--estimate` says when a cache would not fit.
DISK_MARGIN_BYTES = 2**30


class InputWarning(UserWarning):
    """Input that was read after a repair (invalid tag sequence, span off token
    boundaries ...): issued through :mod:`warnings`, its text names file and line."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.path = str(path) if path is not None else None
        self.line = line
        self.message = message
        super().__init__(located(message, path, line))
