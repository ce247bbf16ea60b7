#!/usr/bin/env python
"""Moved: the spaCy peer comparison is ``experiments/spacy_peer.py`` (the research
area), run from the repository root as ``python -m experiments.spacy_peer``. Its
results are in ``experiments/results/spacy_peer.json``.

This forwarder runs it with the same arguments, so ``python benchmarks/spacy_peer.py``
keeps working (the research area's modules import each other as a package, so the
repository root goes on PYTHONPATH for the child process)."""

import os
import subprocess
import sys
from pathlib import Path

if __name__ == "__main__":
    repo = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p)
    sys.exit(subprocess.call([sys.executable, "-m", "experiments.spacy_peer", *sys.argv[1:]],
                             env={**os.environ, "PYTHONPATH": path}))
