"""Where the product benchmarks' results go, and writing a benchmark's JSON so that an
earlier run's figures stay beside the new ones (another day, machine or input: the
README and report may still quote them)."""

from __future__ import annotations

import json
from pathlib import Path

# The product benchmarks' results folder: the one place under benchmarks/ that names it
# (the research report reads some of these files, through experiments/paths.py).
RESULTS = Path(__file__).resolve().parent / "results"


def write_keeping_earlier(out: str | Path, figures: dict) -> None:
    """Write ``figures`` to ``out``; what ``out`` held goes under ``figures["earlier"]``
    (oldest first), written whole or not at all."""
    out = Path(out)
    if out.is_file():
        before = json.loads(out.read_text(encoding="utf-8"))
        figures = {**figures, "earlier": [*before.pop("earlier", []), before]}
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    tmp.replace(out)
