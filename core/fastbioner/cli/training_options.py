"""The training options shared by ``train-teacher`` and ``distill``: one set of flags,
one conversion to the typed configs, so the two commands cannot drift apart."""

from __future__ import annotations

import argparse

from ..config import LOSS_KINDS, EncodingConfig, LossConfig, TrainingConfig


def add_training_options(p: argparse.ArgumentParser, lr_help: str | None = None) -> None:
    """Optimisation, encoding, loss, checkpoint and run-control flags. ``--lr``
    defaults to None when ``lr_help`` is given (the command picks the default)."""
    d, e, lo = TrainingConfig(), EncodingConfig(), LossConfig()
    p.add_argument("--epochs", type=int, default=d.epochs)
    if lr_help:
        p.add_argument("--lr", type=float, default=None, help=lr_help)
    else:
        p.add_argument("--lr", type=float, default=d.learning_rate, help="peak learning rate (%(default)s)")
    p.add_argument("--batch-size", type=int, default=d.batch_size)
    p.add_argument("--eval-batch-size", type=int, default=d.eval_batch_size)
    p.add_argument("--grad-accum", type=int, default=d.grad_accum_steps, metavar="N",
                   help="micro-batches per optimisation step (%(default)s)")
    p.add_argument("--warmup", type=float, default=d.warmup_ratio, metavar="RATIO",
                   help="warm-up share of all steps (%(default)s)")
    p.add_argument("--weight-decay", type=float, default=d.weight_decay)
    p.add_argument("--max-grad-norm", type=float, default=d.max_grad_norm)
    p.add_argument("--max-length", type=int, default=e.max_length, help="subwords per window (%(default)s)")
    p.add_argument("--label-mode", choices=("first", "all"), default=e.label_mode,
                   help="label the first subword of each word, or all (label propagation)")
    p.add_argument("--loss", choices=LOSS_KINDS, default=lo.kind, help="gold-label loss (%(default)s)")
    p.add_argument("--focal-gamma", type=float, default=lo.focal_gamma)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--device", default=d.device, help="auto, cpu, cuda, cuda:N (%(default)s)")
    p.add_argument("--threads", type=int, default=d.threads,
                   help="CPU threads (0: one per core); 1 is faster on a machine busy with other jobs")
    p.add_argument("--no-mixed-precision", action="store_true", help="no autocast on CUDA")
    p.add_argument("--eval-every", type=int, default=0, metavar="STEPS",
                   help="evaluate every STEPS steps (default: each epoch)")
    p.add_argument("--patience", type=int, default=0,
                   help="stop after this many evaluations without improvement (0: off)")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="STEPS",
                   help="also checkpoint every STEPS steps (always: each epoch and on cancel)")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (timing runs)")
    p.add_argument("--estimate", type=int, nargs="?", const=10, default=0, metavar="STEPS",
                   help="time STEPS real steps (default 10) and print how long the whole run would take; "
                        "trains and registers nothing")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--resume", action="store_true", help="continue an interrupted run of --name")
    group.add_argument("--restart", action="store_true", help="discard an interrupted run's checkpoint")
    p.add_argument("--overwrite", action="store_true", help="replace a registered model of that name")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def print_estimate(config, args: argparse.Namespace) -> int:
    """``--estimate``: measure a few steps of ``config`` and print the whole run's time."""
    from ..estimate import estimate_run
    from ..jobs import Cancelled, CancelToken
    from .progress import ProgressBar, ctrl_c_cancels

    token = CancelToken()
    bar = ProgressBar(quiet=args.quiet)
    try:
        with ctrl_c_cancels(token):
            estimate = estimate_run(config, steps=max(2, args.estimate), on_event=bar, cancel=token)
    except Cancelled:
        return 130
    finally:
        bar.close()
    print(f"estimated run time: {estimate.describe()}")
    return 0


def encoding_config(args: argparse.Namespace) -> EncodingConfig:
    return EncodingConfig(max_length=args.max_length, label_mode=args.label_mode)


def training_config(args: argparse.Namespace, learning_rate: float | None = None) -> TrainingConfig:
    return TrainingConfig(
        epochs=args.epochs, learning_rate=learning_rate if learning_rate is not None else args.lr,
        batch_size=args.batch_size, eval_batch_size=args.eval_batch_size, grad_accum_steps=args.grad_accum,
        warmup_ratio=args.warmup, weight_decay=args.weight_decay, max_grad_norm=args.max_grad_norm,
        seed=args.seed, device=args.device, threads=args.threads, mixed_precision=not args.no_mixed_precision,
        eval_every_steps=args.eval_every, early_stopping_patience=args.patience,
        checkpoint_every_steps=args.checkpoint_every, max_steps=args.max_steps)


def loss_config(args: argparse.Namespace) -> LossConfig:
    return LossConfig(kind=args.loss, focal_gamma=args.focal_gamma)
