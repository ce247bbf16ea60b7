"""``fastbioner train-teacher`` and ``fastbioner evaluate``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..config import LOSS_KINDS, EncodingConfig, LossConfig, TeacherConfig, TrainingConfig
from ..errors import FastBioNERError
from ..fileio import atomic_write
from ..jobs import CancelToken, Cancelled
from .progress import ProgressBar, ctrl_c_cancels


def register(subparsers: argparse._SubParsersAction) -> None:
    t = subparsers.add_parser(
        "train-teacher", help="fine-tune a teacher model on BIO files and register it",
        description="Fine-tune a Hugging Face encoder (model id or folder) for NER on BIO files, "
                    "select it on devel F1 and register it. Ctrl-C cancels cleanly; --resume continues.")
    t.add_argument("--train", nargs="+", required=True, metavar="FILE", help="BIO training file(s)")
    t.add_argument("--dev", metavar="FILE", help="BIO devel file for model selection and early stopping")
    t.add_argument("--base", required=True, metavar="MODEL", help="Hugging Face model id or folder")
    t.add_argument("--name", required=True, help="registry name of the new model")
    d, e, lo = TrainingConfig(), EncodingConfig(), LossConfig()
    t.add_argument("--epochs", type=int, default=d.epochs)
    t.add_argument("--lr", type=float, default=d.learning_rate, help="peak learning rate (%(default)s)")
    t.add_argument("--batch-size", type=int, default=d.batch_size)
    t.add_argument("--eval-batch-size", type=int, default=d.eval_batch_size)
    t.add_argument("--grad-accum", type=int, default=d.grad_accum_steps, metavar="N",
                   help="micro-batches per optimisation step (%(default)s)")
    t.add_argument("--warmup", type=float, default=d.warmup_ratio, metavar="RATIO",
                   help="warm-up share of all steps (%(default)s)")
    t.add_argument("--weight-decay", type=float, default=d.weight_decay)
    t.add_argument("--max-grad-norm", type=float, default=d.max_grad_norm)
    t.add_argument("--max-length", type=int, default=e.max_length, help="subwords per window (%(default)s)")
    t.add_argument("--label-mode", choices=("first", "all"), default=e.label_mode,
                   help="label the first subword of each word, or all (label propagation)")
    t.add_argument("--loss", choices=LOSS_KINDS, default=lo.kind)
    t.add_argument("--focal-gamma", type=float, default=lo.focal_gamma)
    t.add_argument("--seed", type=int, default=d.seed)
    t.add_argument("--device", default=d.device, help="auto, cpu, cuda, cuda:N (%(default)s)")
    t.add_argument("--threads", type=int, default=d.threads,
                   help="CPU threads (0: one per core); 1 is faster on a machine busy with other jobs")
    t.add_argument("--no-mixed-precision", action="store_true", help="no autocast on CUDA")
    t.add_argument("--eval-every", type=int, default=0, metavar="STEPS",
                   help="evaluate every STEPS steps (default: each epoch)")
    t.add_argument("--patience", type=int, default=0,
                   help="stop after this many evaluations without improvement (0: off)")
    t.add_argument("--checkpoint-every", type=int, default=0, metavar="STEPS",
                   help="also checkpoint every STEPS steps (always: each epoch and on cancel)")
    t.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (timing runs)")
    group = t.add_mutually_exclusive_group()
    group.add_argument("--resume", action="store_true", help="continue an interrupted run of --name")
    group.add_argument("--restart", action="store_true", help="discard an interrupted run's checkpoint")
    t.add_argument("--overwrite", action="store_true", help="replace a registered model of that name")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=train_teacher_command)

    ev = subparsers.add_parser("evaluate", help="score a model on a BIO file",
                               description="Entity-level (seqeval, strict IOB2) and token-level scores "
                                           "of MODEL (registry name or folder) on FILE.")
    ev.add_argument("model", metavar="MODEL")
    ev.add_argument("file", metavar="FILE")
    ev.add_argument("--batch-size", type=int, default=32)
    ev.add_argument("--device", default="auto")
    ev.add_argument("--threads", type=int, default=0, help="CPU threads (0: one per core)")
    ev.add_argument("--json", metavar="OUT", help="also write the scores as JSON ('-' for stdout only)")
    ev.add_argument("--quiet", action="store_true")
    ev.set_defaults(func=evaluate_command)


def config_from_args(args: argparse.Namespace) -> TeacherConfig:
    base = args.base
    if Path(base).expanduser().exists():
        base = str(Path(base).expanduser().resolve())
    return TeacherConfig(
        base_model=base,
        train_files=[str(Path(p).resolve()) for p in args.train],
        dev_file=str(Path(args.dev).resolve()) if args.dev else None,
        encoding=EncodingConfig(max_length=args.max_length, label_mode=args.label_mode),
        training=TrainingConfig(
            epochs=args.epochs, learning_rate=args.lr, batch_size=args.batch_size,
            eval_batch_size=args.eval_batch_size, grad_accum_steps=args.grad_accum,
            warmup_ratio=args.warmup, weight_decay=args.weight_decay, max_grad_norm=args.max_grad_norm,
            seed=args.seed, device=args.device, threads=args.threads,
            mixed_precision=not args.no_mixed_precision,
            eval_every_steps=args.eval_every, early_stopping_patience=args.patience,
            checkpoint_every_steps=args.checkpoint_every, max_steps=args.max_steps),
        loss=LossConfig(kind=args.loss, focal_gamma=args.focal_gamma))


def train_teacher_command(args: argparse.Namespace) -> int:
    from ..checkpoints import has_checkpoint
    from ..registry import Registry
    from ..teacher import checkpoint_folder, train_teacher

    config = config_from_args(args)
    registry = Registry()
    token = CancelToken()
    bar = ProgressBar(quiet=args.quiet)
    try:
        with ctrl_c_cancels(token):
            result = train_teacher(config, args.name, registry=registry, resume=args.resume,
                                   restart=args.restart, overwrite=args.overwrite,
                                   on_event=bar, cancel=token)
    except Cancelled:
        folder = checkpoint_folder(registry, args.name)
        hint = (f" Continue with the same command and --resume (checkpoint in {folder})"
                if has_checkpoint(folder) else "")
        print(f"fastbioner: cancelled; nothing registered.{hint}", file=sys.stderr)
        return 130
    finally:
        bar.close()
    entry = result.entry
    print(f"registered {entry.name} at {entry.path}")
    t = result.training
    if t.epoch_seconds:
        per_epoch = ", ".join(f"{s:.0f}" for s in t.epoch_seconds)
        print(f"{t.steps} steps in {t.seconds:.0f} s (training seconds per epoch: {per_epoch})")
    if result.report is not None:
        print(f"devel scores (best step {t.best_step}):")
        print(result.report.to_text())
    return 0


def evaluate_command(args: argparse.Namespace) -> int:
    from ..evaluation import evaluate_model

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    token = CancelToken()
    bar = ProgressBar(quiet=args.quiet or args.json == "-")
    try:
        with ctrl_c_cancels(token):
            report = evaluate_model(args.model, args.file, batch_size=args.batch_size,
                                    device=args.device, on_event=bar, cancel=token)
    except Cancelled:
        print("fastbioner: cancelled", file=sys.stderr)
        return 130
    finally:
        bar.close()
    data = json.dumps(report.to_dict(), indent=2)
    if args.json == "-":
        print(data)
        return 0
    print(report.to_text())
    if args.json:
        try:
            with atomic_write(args.json) as fh:
                fh.write(data + "\n")
        except OSError as exc:
            raise FastBioNERError(f"{args.json}: cannot write ({exc.strerror or exc})") from None
    return 0
