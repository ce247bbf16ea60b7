#!/usr/bin/env python
"""Reproduce the FastBioNER paper's experiments on this hardware, one row at a time.

Every row is one ``fastbioner`` command (teacher fine-tuning or distillation). Running
a row executes that command, then reads the registered model's manifest (devel
scores, parameters, size, training time) and stores the row's result, with the exact
command, seed, epochs, wall time and CPU, in ``benchmarks/results/paper_rows.json``.
``report`` writes ``docs/benchmarks.md`` from what has been run; a row that has not
been run is shown as such, never with a guessed number.

    python benchmarks/paper_tables.py list
    python benchmarks/paper_tables.py run bc5cdr/teacher bc5cdr/fastbioner-6 ...
    python benchmarks/paper_tables.py run --table 1 --dataset bc5cdr
    python benchmarks/paper_tables.py report

The speed and compression table (the paper's Figure 3) comes from
``benchmarks/bench_inference.py``'s JSON, measured side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("FASTBIONER_SHARED_DATA", REPO.parent / "shared" / "data"))
BASES = Path(os.environ.get("FASTBIONER_BASE_MODELS", Path.home() / ".cache" / "fastbioner" / "base-models"))
RESULTS = REPO / "benchmarks" / "results" / "paper_rows.json"
SEED = 13
TEACHER_EPOCHS = 2
STUDENT_EPOCHS = 1  # what fits a shared 2-core CPU in one session; see docs/benchmarks.md

DATASETS = {"bc5cdr": "bc5cdr/iob", "ncbi": "ncbi-disease/iob"}

PREAMBLE = """**Conditions.** Two cores of an Intel Xeon (AVX-512, AMX) shared with other jobs, no
GPU. The teacher is all-mpnet-base-v2 fine-tuned 2 epochs (no biomedical encoder can
be had offline here; the paper's teacher is BioBERT). The method and depth students
are trained for **1 epoch** (285 steps of batch 16), the budget that fit a working
session; the paper trains for several. The two MiniLM students of the default model
are the exception (2 and 3 epochs, marked). Each run used one torch thread
(`OMP_NUM_THREADS=1`) so two or three runs could share the two cores: on a shared
machine two threads per process were measured many times slower. Wall times are
therefore those of a loaded machine (up to three runs at once), not of the method.

**What the figures say.** At one epoch, among 6-layer students of the teacher's own
layers, the methods that add the teacher's outputs to the gold labels lead, within a
point of each other: `hinton` 78.31, `pkd` 78.15, `mse-prob` 78.01, `mse-logit` 77.90;
then `og` (gold only) 77.44, FastBioNER 77.16 and `tinybert` 76.83, the two methods
whose attention matching weighs most early on. Differences under a point come from
one seed and one epoch each and are within what a second seed could move. FastBioNER
does not beat the baselines here, and falls
furthest behind as the student gets shallower (4 layers 67.56, 3 layers 47.64 against
`og`'s 58.21). The matching terms, notably the attention-score MSE (about 7 to 16
against about 0.1 for the label terms), dominate the loss while phi > 0, that is for
the first 70% of the steps, which leaves a one-epoch student too few gold-label steps.
The ablations (section 4, 3-layer students) bear that out: without the attention term
the 3-layer student reaches 59.41 and without L_ML altogether 59.54, against 47.64 with
every term and 58.21 for `og`; b = 0, which keeps phi > 0 for longer, falls to 44.27.
b = 0.5 (phi reaches 0 at half the steps) gives 50.22, and phi held at a constant 0.5
gives 43.64: the decaying schedule helps, and the sooner it hands over to the gold labels
the better at this budget. With the training abstracts added again as unlabelled text
(confidence-weighted soft labels) the 3-layer student reaches 63.09, but that run also
has twice the steps (570), so it mixes the effect of the text with that of a longer run.
The paper's students train for several epochs, where the matching terms
are meant to pay off; at this budget they do not, and the attention term costs most.

**The default model** (`assets/default-model`, README "The default model") is the
`bc5cdr/hinton-minilm-ft` row compacted (vocabulary trimmed, float16): devel F1 82.11
(Chemical 86.80, Disease 76.23), 28 MB, 4.31 points below the teacher. Its speed is in
section 3 as `bc5cdr-minilm-distilled`. A MiniLM-width student distilled from the
pretrained all-MiniLM-L6-v2 reached 80.25 in 3 epochs; starting from the MiniLM already
fine-tuned on BC5CDR (80.49) and distilling 2 epochs gave 82.24. In section 3,
`minilm-bc5cdr` and `minilm-bc5cdr-compact` are the fine-tuned MiniLM (not distilled)
before and after compaction.

**Reading section 3.** The speed run shared the machine with one training job (an
ablation row), so identical 6-layer students spread from 1.71x to 2.13x at float32 and
from 2.94x to 4.14x at bfloat16 in the same run: compare shapes (6, 4, 3 layers;
MiniLM width; BiGRU), not methods, and read ratios to about 15%. An earlier, quieter
run gave 2.10x for 6 layers, 4.55x for 3 and 7.2x to 7.3x for the MiniLM width at
float32. Rows marked *not yet run* have not been run."""


@dataclass(frozen=True)
class Row:
    id: str
    table: int
    dataset: str
    title: str
    model: str              # registry name the command registers
    args: tuple[str, ...]   # fastbioner arguments
    epochs: int
    teacher: str | None = None
    extra: dict = field(default_factory=dict)

    def command(self) -> list[str]:
        return ["fastbioner", *self.args]


def _data(dataset: str) -> tuple[str, str]:
    folder = DATA / DATASETS[dataset]
    return str(folder / "train.tsv"), str(folder / "devel.tsv")


def teacher_row(dataset: str) -> Row:
    train, dev = _data(dataset)
    name = f"teacher-mpnet-{dataset}"
    return Row(f"{dataset}/teacher", 1, dataset, "teacher (all-mpnet-base-v2, 12 layers)", name,
               ("train-teacher", "--train", train, "--dev", dev, "--base", str(BASES / "all-mpnet-base-v2"),
                "--name", name, "--epochs", str(TEACHER_EPOCHS), "--batch-size", "16", "--lr", "5e-5",
                "--seed", str(SEED), "--checkpoint-every", "100", "--resume"), TEACHER_EPOCHS)


def student_row(dataset: str, table: int, method: str, layers: int | None, *, slug: str | None = None,
                title: str | None = None, student_from: str = "teacher", extra_args: tuple[str, ...] = (),
                epochs: int = STUDENT_EPOCHS) -> Row:
    train, dev = _data(dataset)
    teacher = f"teacher-mpnet-{dataset}"
    slug = slug or f"{method}-{layers}"
    name = f"{dataset}-{slug}"
    args = ["distill", "--teacher", teacher, "--train", train, "--dev", dev, "--name", name,
            "--method", method, "--student-from", student_from, "--epochs", str(epochs),
            "--batch-size", "16", "--seed", str(SEED), "--checkpoint-every", "100", "--resume"]
    if layers is not None:
        args += ["--layers", str(layers)]
    args += list(extra_args)
    return Row(f"{dataset}/{slug}", table, dataset, title or f"{method}, {layers} layers", name,
               tuple(args), epochs, teacher=teacher)


def all_rows() -> list[Row]:
    rows: list[Row] = []
    for ds in DATASETS:
        rows.append(teacher_row(ds))
        for method in ("og", "hinton", "pkd", "tinybert", "mse-prob", "mse-logit", "fastbioner"):
            rows.append(student_row(ds, 1, method, 6))
    for ds in ("bc5cdr",):
        for layers in (4, 3):
            rows.append(student_row(ds, 2, "fastbioner", layers))
        rows.append(student_row(ds, 2, "og", 3))
        rows.append(student_row(ds, 2, "fastbioner", 6, slug="fastbioner-minilm",
                                title="fastbioner, all-MiniLM-L6-v2 student (6 layers, 384 wide)",
                                student_from=str(BASES / "all-MiniLM-L6-v2")))
        # The default model's candidate: soft and gold labels only, 3 epochs, because at one
        # epoch the matching terms left the narrower MiniLM student far behind (40.50).
        rows.append(student_row(ds, 2, "hinton", None, slug="hinton-minilm",
                                title="hinton, all-MiniLM-L6-v2 student (6 layers, 384 wide), 3 epochs",
                                student_from=str(BASES / "all-MiniLM-L6-v2"), epochs=3))
        # The default model: the same, from the all-MiniLM-L6-v2 already fine-tuned on the
        # corpus (minilm-bc5cdr, README "The default model"), refined by the teacher's soft labels.
        rows.append(student_row(ds, 2, "hinton", None, slug="hinton-minilm-ft",
                                title="hinton, student initialised from minilm-bc5cdr (all-MiniLM-L6-v2 "
                                      "fine-tuned on BC5CDR), 2 epochs",
                                student_from="minilm-bc5cdr", epochs=2))
        rows.append(student_row(ds, 2, "fastbioner", None, slug="fastbioner-bigru",
                                title="fastbioner, BiGRU+CRF student", student_from="bigru"))
        unl = str(DATA / "bc5cdr" / "pubtator" / "CDR_TrainingSet.PubTator.txt")
        for slug, title, extra in (
                ("ablate-no-ml", "without L_ML", ("--drop-terms", "hidden,attention")),
                ("ablate-no-attention", "without the attention term", ("--drop-terms", "attention")),
                ("ablate-constant-phi", "phi replaced by a constant 0.5", ("--schedule", "constant", "--alpha", "0.5")),
                ("ablate-b0", "b = 0", ("--b", "0")),
                ("ablate-b05", "b = 0.5", ("--b", "0.5")),
                ("ablate-unlabeled", "with unlabelled text (BC5CDR train abstracts as raw text)",
                 ("--unlabeled", unl))):
            rows.append(student_row(ds, 4, "fastbioner", 3, slug=f"{slug}-3", title=f"3 layers, {title}",
                                    extra_args=extra))
    return rows


def load_results() -> dict:
    if RESULTS.is_file():
        return json.loads(RESULTS.read_text(encoding="utf-8"))
    return {}


def save_results(results: dict) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, RESULTS)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def manifest_of(name: str) -> dict:
    from fastbioner.registry import Registry

    return Registry().get(name).manifest.to_dict()


def result_from_manifest(m: dict) -> dict:
    metrics = m.get("metrics") or {}
    per_type = {t: {k: s[k] for k in ("precision", "recall", "f1", "support")}
                for t, s in (metrics.get("per_type") or {}).items()}
    training = m.get("training") or {}
    return {"precision": metrics.get("precision"), "recall": metrics.get("recall"), "f1": metrics.get("f1"),
            "per_type": per_type, "parameters": m.get("parameters"), "size_bytes": m.get("size_bytes"),
            "layers": m.get("layers"), "width": m.get("width"), "method": m.get("method"),
            "parent": m.get("parent"), "epoch_seconds": training.get("epoch_seconds"),
            "steps": training.get("steps"), "best_step": training.get("best_step"),
            "compression": m.get("compression") or {}}


def run_rows(rows: list[Row], force: bool, dry_run: bool) -> int:
    results = load_results()
    failed = 0
    for row in rows:
        if row.id in results and not force:
            print(f"[skip] {row.id}: already run ({results[row.id]['finished']})")
            continue
        cmd = row.command()
        print(f"[run] {row.id}: {shlex.join(cmd)}", flush=True)
        if dry_run:
            continue
        if force:
            subprocess.run(["fastbioner", "models", "delete", row.model], capture_output=True)
        t0 = time.monotonic()
        proc = subprocess.run(cmd)
        wall = time.monotonic() - t0
        if proc.returncode != 0:
            print(f"[fail] {row.id}: exit {proc.returncode}", file=sys.stderr)
            failed += 1
            continue
        results = load_results()  # another runner may have written meanwhile
        results[row.id] = {"command": shlex.join(cmd), "seed": SEED, "epochs": row.epochs,
                           "wall_seconds": round(wall, 1), "cpu": cpu_name(), "cores": os.cpu_count(),
                           "finished": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
                           "model": row.model, **result_from_manifest(manifest_of(row.model))}
        save_results(results)
        print(f"[done] {row.id}: devel F1 {results[row.id]['f1']:.4f} in {wall / 60:.1f} min", flush=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the rows, and which have been run")
    run = sub.add_parser("run", help="run rows (skips rows already run unless --force)")
    run.add_argument("rows", nargs="*", help="row ids (see list)")
    run.add_argument("--table", type=int)
    run.add_argument("--dataset", choices=sorted(DATASETS))
    run.add_argument("--force", action="store_true")
    run.add_argument("--dry-run", action="store_true")
    adopt = sub.add_parser("adopt", help="record a row from a model already registered by the given "
                           "command (run by hand or by another script); the command is stored as given")
    adopt.add_argument("row")
    adopt.add_argument("--command", required=True, help="the exact command that made the model")
    adopt.add_argument("--model", help="registry name, if not the row's")
    adopt.add_argument("--seed", type=int, required=True)
    adopt.add_argument("--epochs", type=int, required=True)
    rep = sub.add_parser("report", help="write docs/benchmarks.md")
    rep.add_argument("--out", default=str(REPO / "docs" / "benchmarks.md"))
    args = parser.parse_args(argv)

    rows = all_rows()
    if args.cmd == "list":
        done = load_results()
        for r in rows:
            state = f"F1 {done[r.id]['f1']:.4f}" if r.id in done else "not yet run"
            print(f"table {r.table}  {r.id:<34} {state:<16} {r.title}")
        return 0
    if args.cmd == "run":
        chosen = [r for r in rows if (not args.rows or r.id in args.rows)
                  and (args.table is None or r.table == args.table)
                  and (args.dataset is None or r.dataset == args.dataset)]
        unknown = set(args.rows) - {r.id for r in rows}
        if unknown:
            parser.error(f"unknown row(s): {', '.join(sorted(unknown))}")
        return run_rows(chosen, args.force, args.dry_run)
    if args.cmd == "adopt":
        row = next((r for r in rows if r.id == args.row), None)
        if row is None:
            parser.error(f"unknown row {args.row}")
        name = args.model or row.model
        m = manifest_of(name)
        results = load_results()
        results[row.id] = {"command": args.command, "seed": args.seed, "epochs": args.epochs,
                           "wall_seconds": (m.get("training") or {}).get("seconds"), "cpu": cpu_name(),
                           "cores": os.cpu_count(), "finished": m.get("created"), "model": name,
                           **result_from_manifest(m)}
        save_results(results)
        print(f"recorded {row.id} from {name}: devel F1 {results[row.id]['f1']:.4f}")
        return 0
    from benchmark_report import write_report  # noqa: E402 (beside this script)

    write_report(rows, load_results(), Path(args.out), PREAMBLE)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
