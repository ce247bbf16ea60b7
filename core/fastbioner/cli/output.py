"""How commands print: every line through :func:`fastbioner.base.terminal.shown`, so
nothing read from a file, a model folder or the network acts on the terminal, and a
folder's unreadable files said the same way by every command."""

from __future__ import annotations

import sys
from typing import Iterable

from fastbioner.base.terminal import shown, shown_lines


def echo(text: object = "", err: bool = False) -> None:
    """Print ``text`` (one line or several, ``\\n`` between them) with every control
    character and bidirectional mark escaped; to stderr with ``err``."""
    print(shown_lines(str(text)), file=sys.stderr if err else sys.stdout)


def echo_lines(lines: Iterable[object], err: bool = False) -> None:
    for line in lines:
        echo(line, err)


def warn(message: object) -> None:
    echo(f"fastbioner: warning: {message}", err=True)


def report_skipped(errors: Iterable[object]) -> int:
    """Say each file of a folder that could not be read, one line each on stderr, and
    return the exit status a command ends with: 1 when any was skipped (the others
    were processed), else 0. ``convert``, ``stats``, ``rank`` and ``compact`` alike."""
    n = 0
    for err in errors:
        n += 1
        echo(f"fastbioner: error: {err} (file skipped)", err=True)
    return 1 if n else 0


__all__ = ["echo", "echo_lines", "warn", "report_skipped", "shown"]
