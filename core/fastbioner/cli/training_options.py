"""The run-control flags shared by ``train-teacher`` and ``distill`` (the settings'
flags are generated from the configs: :mod:`fastbioner.cli.config_flags`), and the
``--estimate`` printer."""

from __future__ import annotations

import argparse


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
