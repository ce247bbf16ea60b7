"""What ``train-teacher`` and ``distill`` share around their core run: the run-control
flags (the settings' flags are generated from the configs:
:mod:`fastbioner.cli.config_flags`), the ``--estimate`` printer,
:func:`run_training`, which runs the job under a progress bar with Ctrl-C as cancel,
and :func:`print_training`, the summary both end with."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from fastbioner.base.jobs import Cancelled, CancelToken
from fastbioner.cli.progress import ProgressBar, ctrl_c_cancels
from fastbioner.models.registry import Registry
from fastbioner.train.estimate import estimate_run

# The training bookkeeping (torch) is imported when a run starts, not by --help or --estimate's parsing.
from fastbioner.cli.output import echo


def add_run_flags(p: argparse.ArgumentParser) -> None:
    """How a run is started, resumed and shown; not settings of the model it makes."""
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


def run_training(run: Callable[..., Any], config, args: argparse.Namespace) -> Any | int:
    """Run ``run(config, name, registry=..., resume=..., ..., on_event=, cancel=)``
    (``train_teacher`` or ``distill``), under torchrun too: every process runs it,
    rank 0 alone shows progress and gets the result (with a line saying how many
    processes trained). Returns the result, or the exit code when the run was
    cancelled (130), ``--estimate`` was asked, or on a rank other than 0 (0: rank 0
    registered the model). A run that ended well has left its process group when this
    returns."""
    if args.estimate:
        return print_estimate(config, args)
    from fastbioner.train import distributed
    from fastbioner.train.checkpoints import has_checkpoint
    from fastbioner.train.runs import checkpoint_folder

    distributed.init_from_env()
    processes = distributed.world_size()
    registry = Registry()
    token = CancelToken()
    bar = ProgressBar(quiet=args.quiet or not distributed.is_main())
    try:
        with ctrl_c_cancels(token):
            result = run(config, args.name, registry=registry, resume=args.resume, restart=args.restart,
                         overwrite=args.overwrite, on_event=bar, cancel=token)
    except Cancelled:
        folder = checkpoint_folder(registry, args.name)
        hint = (f" Continue with the same command and --resume (checkpoint in {folder})"
                if has_checkpoint(folder) else "")
        print(f"fastbioner: cancelled; nothing registered.{hint}", file=sys.stderr)
        return 130
    finally:
        bar.close()
    # Only after a run that ended well: leaving while another rank may still sit in a
    # collective (one rank failed or was cancelled) can hang instead of exiting.
    distributed.leave()
    if result.entry is None:  # a rank other than 0: rank 0 registered the model
        return 0
    if processes > 1:
        print(f"trained on {processes} processes")
    return result


def print_training(result) -> None:
    """The lines a finished run (teacher or student) ends with: its steps and time
    per epoch, then its devel scores."""
    t = result.training
    if t.epoch_seconds:
        per_epoch = ", ".join(f"{s:.0f}" for s in t.epoch_seconds)
        print(f"{t.steps} steps in {t.seconds:.0f} s (training seconds per epoch: {per_epoch})")
    if result.report is not None:
        print(f"devel scores (best step {t.best_step}):")
        echo(result.report.to_text())
