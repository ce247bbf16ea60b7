#!/usr/bin/env python
"""Completion over a large concept dictionary (issue 70: over a 60 MB one, 3.8 s and
1.9 GB; the target, every completion under 0.3 s and the process under 500 MB; the app
completes a concept cell as the curator types).

    python benchmarks/bench_concepts.py [--megabytes 60] [--keep FILE]

Generates a dictionary of about ``--megabytes`` MB (``mention, label, concept_id,
count``: multi-word mention texts, two types, a few mentions per concept, near the
64 MB a dictionary may hold), then, in a fresh process, loads it (which builds every
lookup: that part is timed too) and times completions (the first right after loading;
prefixes short and long, within a label or not, a text found only inside names, an id)
and proposals, wall and CPU time, and reports that process's peak memory after each.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

SYLLABLES = ("ami", "bro", "car", "dex", "eth", "flu", "gly", "hyd", "iso", "ket", "lit", "met", "nor", "oxy",
             "pro", "qui", "ren", "sul", "tri", "ure", "val", "xan", "yl", "zol", "ine", "ate", "ide", "one")
WORDS = ("acid", "chloride", "syndrome", "disease", "failure", "toxicity", "deficiency", "carcinoma", "type 2")


def generate(path: Path, megabytes: float, seed: int = 0) -> int:
    """A dictionary file of about ``megabytes`` MB; returns its rows."""
    rng = random.Random(seed)
    target, size, rows, concept = megabytes * 1_000_000, 0, 0, 0
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t", lineterminator="\n")
        writer.writerow(("mention", "label", "concept_id", "count"))
        while size < target:
            concept += 1
            label = rng.choice(("Chemical", "Disease"))
            stem = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
            for _ in range(rng.randint(1, 4)):
                text = stem + " " + rng.choice(WORDS) if rng.random() < 0.5 else stem.capitalize()
                row = (text + str(rng.randint(0, 99)), label, f"D{concept:07d}", rng.randint(1, 300))
                writer.writerow(row)
                size += sum(len(str(v)) for v in row) + 4
                rows += 1
    return rows


PROBE = """
import json, resource, sys, time
from fastbioner.research import ConceptDictionary
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
def timed(call):
    wall, cpu = time.perf_counter(), time.process_time()
    got = call()
    return [round(time.perf_counter() - wall, 4), round(time.process_time() - cpu, 4), got]
index_times = []
build_index = ConceptDictionary.build_index
def timed_build(self):
    index_times.append(timed(lambda: build_index(self)))
ConceptDictionary.build_index = timed_build
loaded = []
out = {"load": timed(lambda: loaded.append(ConceptDictionary.load(sys.argv[1])))}
out["index"] = index_times[0][:2] if index_times else None
out["peak_after_load_mb"] = peak()
d = loaded.pop()
out["complete"] = {f"{typed}/{label}": timed(lambda: len(d.complete(typed, label)))
                   for typed, label in [("ami", None), ("a", "Chemical"), ("fail", "Disease"), ("carpro", None),
                                        ("chloride", "Chemical"), ("d00012", None), ("zolzolzol", None),
                                        ("xyzzy", None)]}
out["peak_after_completion_mb"] = peak()
out["propose"] = [timed(lambda: d.propose(text, "Chemical")) for text in ("Amibro", "amibro acid12", "unknown")]
out["peak_mb"] = peak()
print(json.dumps(out))
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--megabytes", type=float, default=60)
    p.add_argument("--keep", default=None, help="write the generated dictionary here (else a temporary file)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.keep or Path(tmp) / "mentions.tsv")
        rows = generate(path, args.megabytes)
        print(f"{path.stat().st_size / 1e6:.1f} MB, {rows:,} rows")
        proc = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True)
        if proc.returncode:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        figures = json.loads(proc.stdout)
    print("seconds: wall (on this machine, however busy) and CPU (this process's own)")
    print("load: {:.2f} s wall, {:.2f} s CPU".format(*figures["load"]))
    if figures["index"]:
        print("  of which building the lookups: {:.2f} s wall, {:.2f} s CPU".format(*figures["index"]))
    print(f"peak memory after loading: {figures['peak_after_load_mb']} MB")
    for i, (what, (wall, cpu, n)) in enumerate(figures["complete"].items()):
        first = " (the first after loading)" if i == 0 else ""
        print(f"complete {what}{first}: {wall:.4f} s wall, {cpu:.4f} s CPU, {n} concept(s)")
    print(f"peak memory after loading and completing: {figures['peak_after_completion_mb']} MB")
    for wall, cpu, got in figures["propose"]:
        print(f"propose: {wall:.4f} s wall, {cpu:.4f} s CPU ({got})")
    print(f"peak memory after proposals too: {figures['peak_mb']} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
