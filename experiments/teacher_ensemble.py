#!/usr/bin/env python
"""Issue 12's ensemble lever, at the teachers: the three packed-context teachers
(seeds 13-15, `bc5cdr/teacher-packed`, `-s14`, `-s15`) combined word by word by the
rule multi-teacher distillation uses (each teacher weighted by its confidence in the
word), scored on the devel documents they select on. It is what the ensemble students
(`bc5cdr/hinton-minilm-unl-packed-ens`, `-minilm6-ft-unl-packed-ens`) learn from, against the single teacher
the shipped default learnt from: whether the lever can help before a student pays
for it.

    FASTBIONER_HOME=~/fastbioner-experiments/home python -m experiments.teacher_ensemble --threads 1

The same as ``fastbioner evaluate teacher-packed-bc5cdr DEVEL --ensemble-with
teacher-packed-bc5cdr-s14 --ensemble-with teacher-packed-bc5cdr-s15``, written with the
teachers' builds to ``experiments/results/teacher_ensemble.json`` for the report.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path


from fastbioner import COMBINATIONS

from . import runs
from .console import Progress
from .paper_results import write_json
from .paths import TEACHER_ENSEMBLE

RESULTS = TEACHER_ENSEMBLE
ROWS = ("bc5cdr/teacher-packed", "bc5cdr/teacher-packed-s14", "bc5cdr/teacher-packed-s15")
DEVEL = runs.DATA / "bc5cdr" / "pubtator" / "CDR_DevelopmentSet.PubTator.txt"


def command(models: list[str], devel: Path, combination: str) -> str:
    extra = " ".join(f"--ensemble-with {m}" for m in models[1:])
    return (f"FASTBIONER_HOME=~/fastbioner-experiments/home fastbioner evaluate {models[0]} {devel.name} {extra} "
            f"--combination {combination}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devel", type=Path, default=DEVEL, help="devel documents (default: %(default)s)")
    parser.add_argument("--combination", choices=COMBINATIONS, default="confidence")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    import torch

    from fastbioner import evaluate_model

    torch.set_num_threads(args.threads)
    rows = {r.id: r for r in runs.all_rows()}
    recorded = runs.load_results()
    models = [rows[r].model for r in ROWS]
    builds = {}
    for row_id in ROWS:  # each teacher's build, so the report can tell a stale combination
        run = next(iter((recorded.get(row_id) or {}).values()), None)
        if run is None:
            print(f"{row_id} has not run (queue it: python -m experiments.experiment_queue add {row_id})",
                  file=sys.stderr)
            return 2
        builds[row_id] = {"model": rows[row_id].model, "f1": run.get("f1"), "finished": run.get("finished"),
                          "disease_f1": ((run.get("per_type") or {}).get("Disease") or {}).get("f1")}
    bar = Progress()
    try:
        report = evaluate_model(models[0], args.devel, ensemble_with=models[1:], combination=args.combination,
                                device="cpu", on_event=bar)
    finally:
        bar.close()
    print(report.to_text())
    out = {"command": command(models, args.devel, args.combination), "file": args.devel.name,
           "combination": args.combination, "teachers": builds, "f1": report.f1, "precision": report.precision,
           "recall": report.recall, "per_type": {t: s.f1 for t, s in report.per_type.items()},
           "finished": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
