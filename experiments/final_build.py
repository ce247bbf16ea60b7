#!/usr/bin/env python
"""The final build of a chosen recipe (issue 51): its row's command from ``runs.toml``,
trained on train + devel, for the number of steps its train-only twin chose.

A recipe is chosen on devel with the model trained on train alone (its twin: the row's
run of that seed, in ``experiments/results/paper_rows.json``). The released model then
learns from devel's labels too, a quarter more labelled text, which leaves nothing to
select it on: so nothing is selected. It trains as many steps as the twin's kept
weights had (``--max-steps``: the learning-rate schedule and phi run over those steps),
is not scored as it goes (no ``--dev``, so its last weights are kept), and its card
reports the twin's devel scores, said as the twin's (``fastbioner models describe
--scores-from``).

    export FASTBIONER_HOME=~/fastbioner-experiments/home    # the experiment queue's registry
    python -m experiments.final_build bc5cdr/pkd-minilm-unl --seed 13 --dry-run
    python -m experiments.final_build bc5cdr/pkd-minilm-unl --seed 13

The command runs with the queue's settings (one torch thread, the shared teacher cache,
``--resume``: a run cut short continues from its checkpoint when started again). When it
ends, or when the model is already registered from the same command, the build is
recorded in ``experiments/results/final_builds.json`` (the command, the twin, its devel
F1 and steps, the wall time), where ``experiments.build_default_model`` finds the
command and the twin.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from . import runs
from .paper_results import write_json
from .paths import FINAL_BUILDS

# What the queue adds to every run's command (experiments.queue_runner): one torch
# thread, no progress bar, the teacher's outputs kept for the next run of that teacher.
RUN_EXTRAS = ("--threads", "1", "--quiet", "--teacher-cache", "shared")
DROPPED = ("--dev", "--eval-every", "--patience", "--selection-metric", "--keep-weights")  # flag, value


class FinalBuildError(Exception):
    """The recipe cannot be built on train + devel; the message says why."""


def final_name(row: runs.Row, seed: int) -> str:
    """``bc5cdr-pkd-minilm-unl-bf16`` seed 13 -> ``bc5cdr-pkd-minilm-unl-trdev-s13``."""
    return f"{row.model.removesuffix('-bf16')}-trdev-s{seed}"


def twin_run(row: runs.Row, seed: int, results: dict) -> dict:
    run = (results.get(row.id) or {}).get(str(seed))
    if not run or not run.get("best_step"):
        raise FinalBuildError(f"{row.id} seed {seed} has no recorded run (its train-only twin) to take the "
                              f"step count from: run it first (python -m experiments.experiment_queue add "
                              f"{row.id} --seeds {seed})")
    return run


def final_args(row: runs.Row, steps: int) -> list[str]:
    """The row's fastbioner arguments with devel moved into ``--train``, nothing scored
    as it goes, and ``--max-steps`` right after ``--epochs``."""
    args = list(row.args)
    if "--dev" not in args or "--train" not in args:
        raise FinalBuildError(f"{row.id}: its command names no --train and --dev to join")
    dev = args[args.index("--dev") + 1]
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in DROPPED:
            i += 2
            continue
        out.append(a)
        if a == "--train":
            i += 1
            while i < len(args) and not args[i].startswith("--"):
                out.append(args[i])
                i += 1
            if dev in out:
                raise FinalBuildError(f"{row.id}: devel is already among its training files")
            out.append(dev)
            continue
        if a == "--epochs":
            out += [args[i + 1], "--max-steps", str(steps)]
            i += 2
            continue
        i += 1
    if "--max-steps" not in out:
        out += ["--max-steps", str(steps)]
    return out


def final_command(row: runs.Row, seed: int, results: dict, steps: int | None = None) -> list[str]:
    """``steps``: given when the build starts before its twin has ended (the twin's
    planned steps, say); else the step whose weights the twin kept."""
    steps = steps or int(twin_run(row, seed, results)["best_step"])
    return ["fastbioner", *final_args(row, steps), "--name", final_name(row, seed), "--seed", str(seed),
            *RUN_EXTRAS]


def load_builds(path: Path | None = None) -> dict:
    import json

    path = path or FINAL_BUILDS
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def record_build(row: runs.Row, seed: int, command: list[str], results: dict, path: Path | None = None) -> dict:
    """Store the registered final model's build, from its manifest and its twin's run."""
    from fastbioner import Registry

    path = path or FINAL_BUILDS
    name = final_name(row, seed)
    manifest = Registry().get(name).manifest
    twin = twin_run(row, seed, results)
    training = manifest.training or {}
    entry = {"row": row.id, "seed": seed, "command": runs.portable(shlex.join(command)),
             "max_steps": int(command[command.index("--max-steps") + 1]),
             "twin": row.model_name(seed), "twin_command": twin.get("command"), "twin_f1": twin.get("f1"),
             "twin_per_type": {t: s.get("f1") for t, s in (twin.get("per_type") or {}).items()},
             "twin_best_step": twin.get("best_step"), "twin_steps": twin.get("steps"),
             "steps": training.get("steps"), "epoch_seconds": training.get("epoch_seconds"),
             "train_seconds": round(sum(training.get("epoch_seconds") or []), 1) or None,
             "cpu": runs.cpu_name(), "created": manifest.created,
             "recorded": datetime.now(timezone.utc).replace(microsecond=0).isoformat()}
    builds = load_builds(path)
    builds[name] = entry
    write_json(path, builds, sort_keys=True)
    return entry


def registered_from(name: str, steps: int) -> bool:
    """Whether ``name`` is registered and was trained for ``steps`` steps (this build)."""
    from fastbioner import FastBioNERError, Registry

    try:
        manifest = Registry().get(name).manifest
    except FastBioNERError:
        return False
    return (manifest.config.get("training") or {}).get("max_steps") == steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("row", help="row id in experiments/runs.toml (the chosen recipe)")
    parser.add_argument("--seed", type=int, default=runs.SEED, help="the twin's seed (default %(default)s)")
    parser.add_argument("--steps", type=int, default=None,
                        help="train this many steps, not the step the twin kept: for a build started before its "
                             "twin has ended (its planned steps); recorded beside the twin's kept step")
    parser.add_argument("--dry-run", action="store_true", help="print the command, run nothing")
    args = parser.parse_args(argv)
    rows = {r.id: r for r in runs.all_rows()}
    if args.row not in rows:
        parser.error(f"no row {args.row!r} in {runs.RUNS}")
    row, results = rows[args.row], runs.load_results()
    try:
        command = final_command(row, args.seed, results, args.steps)
    except FinalBuildError as exc:
        print(f"final_build: {exc}", file=sys.stderr)
        return 2
    print(runs.portable(shlex.join(command)))
    if args.dry_run:
        return 0
    name, steps = final_name(row, args.seed), int(command[command.index("--max-steps") + 1])
    if not registered_from(name, steps):
        started = time.monotonic()
        rc = subprocess.run([sys.executable, "-m", "fastbioner.cli.main", *command[1:]]).returncode
        if rc != 0:
            print(f"final_build: the run ended with code {rc}; start it again to resume", file=sys.stderr)
            return rc
        print(f"final_build: {name} trained in {time.monotonic() - started:.0f} s")
    try:
        entry = record_build(row, args.seed, command, runs.load_results())  # the twin may have ended since
    except FinalBuildError as exc:
        print(f"final_build: {name} is built; not recorded yet: {exc}; run this again once it has",
              file=sys.stderr)
        return 2
    print(f"final_build: {name} recorded in {runs.portable(str(FINAL_BUILDS))} (twin {entry['twin']}, "
          f"devel F1 {100 * entry['twin_f1']:.2f} at step {entry['twin_best_step']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
