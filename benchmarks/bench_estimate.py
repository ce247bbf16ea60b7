#!/usr/bin/env python
"""How close the run-time estimate comes to the run it estimates: in one process,
estimate a distillation from a few steps, then run it, and print both side by side.

    python benchmarks/bench_estimate.py --teacher minilm-bc5cdr --train ../shared/data/bc5cdr/iob/train.tsv \\
        --dev ../shared/data/bc5cdr/iob/devel.tsv --sentences 400 --dev-sentences 200 --layers 3 --epochs 2
    python benchmarks/bench_estimate.py --fine-tune-base ~/.cache/fastbioner/base-models/all-MiniLM-L6-v2 \\
        --train ... --dev ... --sentences 400 --dev-sentences 200 --epochs 1     # a teacher run instead

The run goes to a throwaway registry; the teacher is read from the user's registry.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def first_sentences(src: str, n: int, dest: Path) -> str:
    blocks = Path(src).read_text(encoding="utf-8").strip().split("\n\n")[:n]
    dest.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return str(dest)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--teacher", help="the teacher of a distillation (registry name or folder)")
    p.add_argument("--fine-tune-base", metavar="BASE",
                   help="estimate a teacher run (train-teacher --base BASE) instead of a distillation")
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    p.add_argument("--sentences", type=int, default=400)
    p.add_argument("--dev-sentences", type=int, default=200)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--method", default="fastbioner")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--steps", type=int, default=10, help="steps the estimate measures")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    if not args.teacher and not args.fine_tune_base:
        p.error("give --teacher (a distillation) or --fine-tune-base (a teacher run)")

    import torch

    from fastbioner import DistillConfig, MethodConfig, Registry, StudentConfig, TeacherConfig, TrainingConfig
    from fastbioner import distill_student as distill
    from fastbioner import train_teacher
    from fastbioner.research import estimate_run

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="bench-estimate-") as work:
        work = Path(work)
        train = [first_sentences(args.train, args.sentences, work / "train.tsv")]
        dev = first_sentences(args.dev, args.dev_sentences, work / "dev.tsv")
        training = TrainingConfig(epochs=args.epochs, batch_size=16, threads=args.threads)
        config: DistillConfig | TeacherConfig
        if args.fine_tune_base:
            config = TeacherConfig(base_model=args.fine_tune_base, train_files=train, dev_file=dev, training=training)
            run = train_teacher
        else:
            config = DistillConfig(
                teacher=str(Registry().resolve(args.teacher).path),
                student=StudentConfig(source="teacher", layers=args.layers), method=MethodConfig(name=args.method),
                train_files=train, dev_file=dev, training=training)
            run = distill
        t0 = time.monotonic()
        estimate = estimate_run(config, registry=Registry(work / "scratch"), steps=args.steps)
        measuring = time.monotonic() - t0
        stages: dict[str, float] = {}
        last = [time.monotonic()]

        def on_event(event) -> None:  # wall time per stage of the real run
            # The time since the previous event went to what this event reports: a step,
            # or a step and the devel scoring that followed it.
            now = time.monotonic()
            label = f"{event.stage} step + devel" if event.metrics else event.stage
            stages[label] = stages.get(label, 0.0) + now - last[0]
            last[0] = now

        t0 = time.monotonic()
        result = run(config, "run", registry=Registry(work / "registry"), on_event=on_event)
        actual = time.monotonic() - t0
    print(json.dumps({"estimate": estimate.to_dict(), "measuring_seconds": round(measuring, 1),
                      "actual_seconds": round(actual, 1),
                      "actual_stages": {k: round(v, 1) for k, v in stages.items()},
                      "actual_steps": result.training.steps,
                      "estimate_over_actual": round(estimate.total_seconds / actual, 3)}, indent=1))
    print(f"estimated {estimate.total_seconds:.0f} s, took {actual:.0f} s: "
          f"ratio {estimate.total_seconds / actual:.2f} (estimate measured in {measuring:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
