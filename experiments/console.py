"""A job's progress on the terminal, for the research scripts that call the library
directly (an ``on_event`` callback): one line per stage, rewritten in place."""

from __future__ import annotations

import sys


class Progress:
    """``on_event`` for a library job: ``stage step/total`` on stderr."""

    def __init__(self) -> None:
        self._stage: str | None = None

    def __call__(self, event) -> None:
        if event.stage != self._stage and self._stage is not None:
            sys.stderr.write("\n")
        self._stage = event.stage
        total = f"/{event.total}" if event.total else ""
        sys.stderr.write(f"\r{event.stage} {event.step}{total}")
        if event.finished:
            self.close()

    def close(self) -> None:
        if self._stage is not None:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._stage = None
