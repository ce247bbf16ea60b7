#!/usr/bin/env python
"""One real guided run, as the distillation dialog's "Fine-tune a teacher first" runs
it (``fastbioner.train.guided.fine_tune_then_distill``): curated documents -> a teacher
fine-tuned from a base encoder -> a distilled, compacted student, both registered.
Prints the wall time of the chain and of each stage, the devel scores of teacher and
student, and the student's size against its teacher.

    OMP_NUM_THREADS=1 nice -n 10 python -m experiments.guided_run \\
        --curated assets/samples/bc5cdr-devel-sample.pubtator \\
        --base ~/.cache/fastbioner/base-models/all-MiniLM-L6-v2 \\
        --devel ../shared/data/bc5cdr/pubtator/CDR_TrainingSet.PubTator.txt --devel-docs 50 \\
        --epochs 1 --layers 2

The curated documents are read in any format the app opens and turned into BIO as
the dialog does (gold and accepted entities); the devel documents are the first
``--devel-docs`` of the devel file whose PMIDs are not among the curated ones. The
run goes to a throwaway registry (``FASTBIONER_HOME`` in a temporary folder) unless
``--home`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--curated", required=True, help="the curated documents (PubTator, BioC, JSONL ...)")
    p.add_argument("--base", required=True, help="base encoder folder or Hugging Face id")
    p.add_argument("--devel", required=True, help="devel documents (any readable format)")
    p.add_argument("--devel-docs", type=int, default=50)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--keep-full-precision", action="store_true")
    p.add_argument("--home", help="FASTBIONER_HOME to register into (default: a temporary folder)")
    p.add_argument("--json", help="write the figures here too")
    args = p.parse_args()
    home = Path(args.home or tempfile.mkdtemp(prefix="fastbioner-guided-"))
    os.environ["FASTBIONER_HOME"] = str(home)

    import torch

    from fastbioner import (DistillConfig, ExportSettings, Source, TeacherConfig, TrainingConfig, default_method,
                            export_documents, fine_tune_then_distill, read_any, recipe)

    torch.set_num_threads(args.threads)
    data = home / "data"
    data.mkdir(parents=True, exist_ok=True)
    curated = list(read_any([args.curated]))
    pmids = {d.id for d in curated}
    devel = [d for d in read_any([args.devel]) if d.id not in pmids][:args.devel_docs]
    bio = ExportSettings("BIO / CoNLL (IOB2)", (Source.GOLD, Source.CURATOR))
    train_file, dev_file = data / "curated.conll", data / "devel.conll"
    export_documents(curated, train_file, bio)
    export_documents(devel, dev_file, bio)

    training = TrainingConfig(epochs=args.epochs, batch_size=args.batch_size, device="cpu", threads=args.threads)
    teacher = TeacherConfig(base_model=str(Path(args.base).expanduser()), train_files=[str(train_file)],
                            dev_file=str(dev_file), training=training)
    # The dialog's recipe (the CLI's method for the depth, T=2, the CLI's rate), with the
    # depth and epochs asked for.
    config = recipe("Fast").apply(DistillConfig(train_files=[str(train_file)], dev_file=str(dev_file),
                                                training=training))
    config.student.layers = args.layers
    config.method.name = default_method("teacher", args.layers)
    config.training.epochs = args.epochs

    stage_start: dict[str, float] = {}
    stage_end: dict[str, float] = defaultdict(float)

    def on_event(event) -> None:
        part = event.stage.split(":", 1)[0] if ":" in event.stage else event.stage
        stage_start.setdefault(part, event.elapsed_seconds)
        stage_end[part] = event.elapsed_seconds

    t0 = time.monotonic()
    result = fine_tune_then_distill(teacher, "guided-teacher", config, "guided-student",
                                    compact=not args.keep_full_precision, on_event=on_event)
    wall = time.monotonic() - t0
    sentences = sum(1 for block in train_file.read_text(encoding="utf-8").split("\n\n") if block.strip())
    dev_sentences = sum(1 for block in dev_file.read_text(encoding="utf-8").split("\n\n") if block.strip())

    def scores(report):
        if report is None:
            return None
        return {"f1": round(report.f1, 4), **{t: round(s.f1, 4) for t, s in report.per_type.items()}}

    figures = {
        "curated_documents": len(curated), "train_sentences": sentences,
        "devel_documents": len(devel), "devel_sentences": dev_sentences,
        "base": Path(args.base).name, "epochs": args.epochs, "student_layers": args.layers,
        "threads": args.threads, "wall_seconds": round(wall, 1),
        "stage_seconds": {k: round(stage_end[k] - stage_start[k], 1) for k in stage_start},
        "teacher_devel": scores(result.teacher_report), "student_devel": scores(result.report),
        "teacher_bytes": result.size.parent_bytes if result.size else None,
        "student_bytes": result.size.student_bytes if result.size else None,
        "size": result.size.describe() if result.size else None,
        "compaction": result.compaction, "notes": result.notes, "registry": str(home),
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
