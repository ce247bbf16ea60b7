#!/usr/bin/env python
"""Speed of ``fastbioner agree`` on one document with many mentions a side (issue 70:
matching every mention with every other one took 10 s at 8,000 and ran past 120 s at
30,000; PubTator allows a million mentions in a document).

    python benchmarks/bench_agree.py [--mentions 30000]

Writes two JSONL files of one generated document: A with ``--mentions`` mentions, B
agreeing on 70% of them and differing in every way the differences list (other type,
other boundaries, a mention only one side has). Times the whole command (start-up and
reading included), ``--match exact`` and ``--match overlap``, and prints the peak memory
of the command.
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fastbioner import Document, Span, write_documents

WORDS = ("aspirin", "renal", "failure", "lithium", "toxicity", "and", "the", "of", "induced", "cisplatin")


def corpus(n: int, folder: Path, seed: int = 0) -> tuple[Path, Path]:
    """A document of 3 words per mention; A marks one or two words of each three."""
    rng = random.Random(seed)
    words = [rng.choice(WORDS) for _ in range(3 * n)]
    places, pos = [], 0
    for w in words:
        places.append((pos, pos + len(w)))
        pos += len(w) + 1
    a, b = [], []
    for i in range(n):
        start, end = places[3 * i][0], places[3 * i + rng.choice((0, 1))][1]
        label = rng.choice(("Chemical", "Disease"))
        a.append(Span(start, end, label))
        r = rng.random()
        if r < 0.7:
            b.append(Span(start, end, label))
        elif r < 0.8:
            b.append(Span(start, end, "Chemical" if label == "Disease" else "Disease"))
        elif r < 0.9:
            b.append(Span(start, places[3 * i + 2][1], label))
        elif r < 0.95:
            b.append(Span(*places[3 * i + 2], label))
    text = " ".join(words) + "."
    path_a, path_b = folder / "a.jsonl", folder / "b.jsonl"
    write_documents([Document("1", text, spans=a)], path_a)
    write_documents([Document("1", text, spans=b)], path_b)
    return path_a, path_b


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mentions", type=int, default=30_000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path_a, path_b = corpus(args.mentions, Path(tmp))
        for match in ("exact", "overlap"):
            cmd = [sys.executable, "-m", "fastbioner.cli.main", "agree", str(path_a), str(path_b), "--match", match]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            seconds = time.perf_counter() - t0
            if proc.returncode:
                print(proc.stderr, file=sys.stderr)
                return proc.returncode
            overall = next(line for line in proc.stdout.splitlines() if line.startswith("overall"))
            print(f"{args.mentions:,} mentions a side, --match {match}: {seconds:.2f} s  ({overall})")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak memory of one command: {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
