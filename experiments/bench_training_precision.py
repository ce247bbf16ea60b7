#!/usr/bin/env python
"""How much faster a training step runs under CPU bf16 autocast (``--cpu-bf16``).

Each of the rows named (``paper_tables`` row ids; default the 3-layer og and
calibrated FastBioNER rows) is measured as its own command with ``--estimate STEPS``
(a few real optimisation steps of that run, the teacher's cache included, then the
projected run time), once without and once with ``--cpu-bf16``, alternated
``--repeat`` times, each a whole process on one thread. The figure is the median
seconds per step of each mode and their ratio, with the CPU's name: compare figures
from one run only, on a quiet machine (pause the experiment queue first).

    FASTBIONER_HOME=~/fastbioner-experiments/home \\
        python -m experiments.bench_training_precision [ROW ...] [--steps 20] [--repeat 2] [--json out.json]

The rows' teachers must be registered in ``FASTBIONER_HOME`` (the experiment queue's
registry holds them).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from datetime import datetime, timezone

from benchmarks.results_file import write_keeping_earlier

from . import runs

ROWS = ("bc5cdr/og-3", "bc5cdr/fastbioner-cal-3")
# The line ``--estimate`` prints (fastbioner.train.estimate.RunEstimate.describe).
STEP = re.compile(r"([\d,]+) steps at ([\d.]+) s")


def step_seconds(command: list[str], bf16: bool, steps: int) -> float:
    args = [a for a in command[1:] if a != "--cpu-bf16"]
    args += ["--estimate", str(steps), "--threads", "1"] + (["--cpu-bf16"] if bf16 else [])
    out = subprocess.run([sys.executable, "-m", "fastbioner.cli.main", *args], capture_output=True, text=True)
    found = STEP.search(out.stdout)
    if out.returncode != 0 or found is None:
        raise SystemExit(f"{' '.join(args)}\nfailed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return float(found.group(2))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rows", nargs="*", default=list(ROWS))
    parser.add_argument("--steps", type=int, default=20, help="optimisation steps each estimate measures")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    rows = {r.id: r for r in runs.all_rows()}
    unknown = [r for r in args.rows if r not in rows]
    if unknown:
        parser.error(f"unknown rows: {', '.join(unknown)}")
    figures: dict = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                     "cpu": runs.cpu_name(), "threads": 1, "steps": args.steps, "repeat": args.repeat,
                     "rows": {}}
    for row_id in args.rows:
        command = rows[row_id].command()
        times: dict[str, list[float]] = {"fp32": [], "bf16": []}
        for _ in range(args.repeat):
            for mode in ("fp32", "bf16"):
                times[mode].append(step_seconds(command, mode == "bf16", args.steps))
        fp32, bf16 = statistics.median(times["fp32"]), statistics.median(times["bf16"])
        figures["rows"][row_id] = {"fp32_step_seconds": fp32, "bf16_step_seconds": bf16,
                                   "speed_up": fp32 / bf16, "runs": times}
        print(f"{row_id}: fp32 {fp32:.3f} s/step, bf16 {bf16:.3f} s/step: {fp32 / bf16:.2f}x")
    if args.json:  # earlier runs (other days, abstracts, machines) stay, as the README quotes them
        write_keeping_earlier(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
