#!/usr/bin/env python
"""How hard each loss term pulls on a row's student: at the start, and once trained.

For each named row of ``experiments/runs.toml`` this runs
``experiments/loss_scales.py`` with the row's own distillation flags (seed 13's
command, less what only a training run needs: devel scoring, checkpoints, bf16) on
the first batches of the training file, before any step, and records per loss term
its value and its weighted gradient norm (its *pull*: what the term adds to the
update), the pull as a multiple of the gold-label term's, and the cosine of the whole
update with the label terms' update. A calibrated row is measured after its
calibration, as it trains.

With ``--trained`` it measures the row's registered students instead (every seed
whose model is in the registry): the same terms on the same batches, the student
as training left it (a calibrated row's with the scales its run recorded). Set
beside the start, this shows how much each term still pulls at the end.

    FASTBIONER_HOME=~/fastbioner-experiments/home python -m experiments.term_pull \\
        bc5cdr/pkd-6 bc5cdr/cal-constant-phi-6 [--trained] --threads 1

Each measurement is written at once to ``experiments/results/term_pull.json`` (keyed
by row, or ``row @ model`` for a trained student); the report's section 11 reads it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path


from . import runs
from .paper_results import write_json
from .paths import TERM_PULL

RESULTS = TERM_PULL
# Flags that only a training run needs (and the one that names its model): the
# measurement neither scores devel nor saves anything, and runs in fp32.
RUN_ONLY = {"--dev": 1, "--eval-every": 1, "--checkpoint-every": 1, "--resume": 0, "--cpu-bf16": 0,
            "--name": 1, "--seed": 1}


def measurement_flags(row, model: str | None = None) -> list[str]:
    """The row's distill flags for loss_scales.py: its seed-13 command less RUN_ONLY,
    seed 13, and for a trained student that student as the start (all its layers)."""
    args = row.command(runs.SEED)[2:]   # after "fastbioner distill"
    out, i = [], 0
    while i < len(args):
        flag = args[i]
        if flag in RUN_ONLY:
            i += 1 + RUN_ONLY[flag]
            continue
        if model and flag in ("--student-from", "--layers"):
            i += 2
            continue
        out.append(flag)
        i += 1
    out += ["--name", "probe", "--seed", str(runs.SEED)]
    if model:
        out += ["--student-from", model]
    return out


def row_layers(row) -> int | None:
    """The student's depth as the row's command sets it (--layers)."""
    args = list(row.args)
    return int(args[args.index("--layers") + 1]) if "--layers" in args else None


def summary(figures: dict) -> dict:
    """Means over the measured batches: each term's value and pull, the pull over the
    gold term's (mean over mean, as the calibration measures it), the update's cosine
    with the label terms' update."""
    batches = figures.get("calibrated_batches") or figures["batches"]
    terms = list(batches[0]["values"])
    value = {t: sum(b["values"][t] for b in batches) / len(batches) for t in terms}
    pull = {t: sum(b["weighted_grad_norms"][t] for b in batches) / len(batches) for t in terms}
    cosines = [b["label_cosine"] for b in batches if b["label_cosine"] is not None]
    gold = pull.get("gold")
    return {"terms": terms, "value": value, "pull": pull,
            "vs_gold": {t: pull[t] / gold for t in terms} if gold else {},
            "label_cosine": sum(cosines) / len(cosines) if cosines else None,
            "calibration": (figures.get("calibration") or {}).get("scales"),
            "clip": figures["config"]["training"]["max_grad_norm"], "batches": len(batches)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", nargs="+", metavar="ROW", help="rows of experiments/runs.toml")
    parser.add_argument("--trained", action="store_true", help="measure the rows' registered students")
    parser.add_argument("--batches", type=int, default=4, help="first batches of epoch 0 (4, as calibration)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    from . import loss_scales
    from fastbioner import Registry

    rows = {r.id: r for r in runs.all_rows()}
    unknown = [r for r in args.rows if r not in rows or "distill" not in rows[r].args[:1]]
    if unknown:
        print(f"not distillation rows of experiments/runs.toml: {', '.join(unknown)}", file=sys.stderr)
        return 2
    registry = Registry()
    recorded = runs.load_results()
    jobs: list[tuple[str, object, str | None, int | None]] = []
    for row_id in args.rows:
        if not args.trained:
            jobs.append((row_id, rows[row_id], None, None))
            continue
        for seed, run in sorted((recorded.get(row_id) or {}).items()):
            model = run.get("model")
            if model and (registry.root / model).is_dir():
                jobs.append((f"{row_id} @ {model}", rows[row_id], model, int(seed)))
            else:
                print(f"{row_id} seed {seed}: its model {model} is not in this registry", file=sys.stderr)
    saved = json.loads(args.out.read_text(encoding="utf-8")) if args.out.is_file() else {}
    entries = saved.setdefault("entries", {})
    for key, row, model, seed in jobs:
        flags = measurement_flags(row, model)
        # A trained student is measured with the scales its run recorded, if its method
        # calibrates (loss_scales.py reads them only then).
        own = ["--batches", str(args.batches), *(["--scales-from", model] if model else [])]
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "figures.json"
            loss_scales.main([*own, "--json", str(out), "--", *flags, "--threads", str(args.threads)])
            figures = json.loads(out.read_text(encoding="utf-8"))
        entries[key] = {
            "row": row.id, "layers": row_layers(row), "student": model or "start", "seed": seed, **summary(figures),
            "command": "python -m experiments.loss_scales " + " ".join([*own, "--", *flags]),
            "cpu": runs.cpu_name(), "finished": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        e = entries[key]
        print(f"{key}: pull over the gold term's " + ", ".join(f"{t} {v:.3g}x" for t, v in e["vs_gold"].items()))
        write_json(args.out, saved, sort_keys=True)  # after each: a call cut short keeps what it measured
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
