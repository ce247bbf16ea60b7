#!/usr/bin/env python
"""Why a student sits below its teacher on devel: how well it fits the data it trained
on. Each named row's students (every seed whose model is in the registry) and the
teacher they learnt from are scored on the training file with ``fastbioner evaluate``;
the report (section 10) sets each one's train F1 beside its devel F1, and per depth
the rows' order on train against their order on devel. Train F1 is scored against the
gold tags, so it measures fit to them, not capacity (a distilled student also learns
the teacher's soft labels).

    FASTBIONER_HOME=~/fastbioner-experiments/home python -m experiments.train_fit \\
        bc5cdr/hinton-4 bc5cdr/cal-constant-phi-4 --threads 1

Scores are written after each model to ``experiments/results/train_fit.json`` (keyed by
model, so a later call adds models and one cut short keeps what it scored); a model
already there is skipped unless ``--again``, or unless it was rebuilt since (its row
records another build): the new build is scored and the earlier scoring kept under
``earlier``.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path


from . import runs
from .console import Progress
from .paper_results import write_json
from .paths import TRAIN_FIT

RESULTS = TRAIN_FIT


def runs_by_model(recorded: dict) -> dict[str, tuple[str, str, dict]]:
    """Every recorded run, by the registry name of the model it made: (row, seed, run)."""
    out = {}
    for row_id, by_seed in recorded.items():
        for seed, run in by_seed.items():
            if isinstance(run, dict) and run.get("model"):
                out[run["model"]] = (row_id, seed, run)
    return out


def models_to_score(row_ids: list[str], recorded: dict, registered) -> tuple[list[str], list[str]]:
    """The registered models of ``row_ids``' seeds, then the teachers they learnt from
    (each once, teachers last); and the messages for the seeds skipped."""
    students, teachers, skipped = [], [], []
    for row_id in row_ids:
        by_seed = recorded.get(row_id)
        if not by_seed:
            skipped.append(f"{row_id} has not run")
            continue
        for seed, run in sorted(by_seed.items()):
            model = run.get("model")
            if not model or not registered(model):
                skipped.append(f"{row_id} seed {seed}: its model {model} is not in this registry")
                continue
            students.append(model)
            parent = run.get("parent")
            if parent and registered(parent) and parent not in teachers:
                teachers.append(parent)
    return [*students, *[t for t in teachers if t not in students]], skipped


def rebuilt_since_scored(scored: dict, run: dict) -> bool:
    """True when the model's recorded run is not the build that was scored: a teacher
    (or a seed) rebuilt with the same name on a replaced machine. Its students learnt
    from one build or the other, so the earlier scoring is kept, not overwritten, and
    section 10 sets each student against the build it learnt from."""
    return bool(run.get("finished")) and scored.get("devel_finished") != run.get("finished")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", nargs="+", metavar="ROW", help="rows of experiments/runs.toml, e.g. bc5cdr/hinton-4")
    parser.add_argument("--train", type=Path, help="training file (default: the rows' dataset's train.tsv)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--again", action="store_true", help="score models already in the results again")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    import torch

    from fastbioner import evaluate_model
    from fastbioner import Registry

    rows = {r.id: r for r in runs.all_rows()}
    unknown = [r for r in args.rows if r not in rows]
    if unknown:
        print(f"unknown row(s): {', '.join(unknown)} (see experiments/runs.toml)", file=sys.stderr)
        return 2
    datasets = {rows[r].dataset for r in args.rows}
    if args.train is None and len(datasets) > 1:
        print("rows of several datasets: name one --train file", file=sys.stderr)
        return 2
    train = args.train or Path(runs.data_files(datasets.pop())[0])
    torch.set_num_threads(args.threads)
    registry = Registry()

    def registered(name: str) -> bool:
        return (registry.root / name).is_dir()

    recorded = runs.load_results()
    models, skipped = models_to_score(args.rows, recorded, registered)
    for message in skipped:
        print(message, file=sys.stderr)
    saved = json.loads(args.out.read_text(encoding="utf-8")) if args.out.is_file() else {}
    scores = saved.setdefault("models", {})
    known = runs_by_model(recorded)
    for model in models:
        row_id, seed, run = known.get(model, (None, None, {}))
        earlier = scores.get(model)
        rebuilt = bool(earlier) and rebuilt_since_scored(earlier, run)
        if earlier and not args.again and not rebuilt:
            print(f"{model}: already scored on {earlier['file']} (--again to score it again)")
            continue
        if rebuilt:
            print(f"{model}: rebuilt since it was scored (that build finished {earlier.get('devel_finished')}, "
                  f"this one {run.get('finished')}): scoring this build, the earlier scoring kept under 'earlier'")
        bar = Progress()
        try:
            report = evaluate_model(model, train, device="cpu", registry=registry, on_event=bar)
        finally:
            bar.close()
        scores[model] = {
            "row": row_id, "seed": int(seed) if seed is not None else None, "layers": run.get("layers"),
            "file": train.name, "train_f1": report.f1,
            "train_per_type": {t: s.f1 for t, s in report.per_type.items()},
            "devel_f1": run.get("f1"), "devel_finished": run.get("finished"), "parent": run.get("parent"),
            "command": f"FASTBIONER_HOME=~/fastbioner-experiments/home fastbioner evaluate {model} {train.name}",
            "cpu": runs.cpu_name(), "finished": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        if rebuilt:
            scores[model]["earlier"] = [*earlier.pop("earlier", []), earlier]
        elif earlier and earlier.get("earlier"):  # --again on the same build: its older builds stay
            scores[model]["earlier"] = earlier["earlier"]
        print(f"{model}: train F1 {100 * report.f1:.2f}, devel F1 "
              + (f"{100 * run['f1']:.2f}" if run.get("f1") is not None else "not recorded"))
        write_json(args.out, saved, sort_keys=True)  # after each model: a run cut short keeps what it scored
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
