"""``fastbioner fine-tune MODEL --train FILE... --name NEW``: continue training a model
on reviewed documents (:mod:`fastbioner.train.finetune`)."""

from __future__ import annotations

import argparse
import sys

from fastbioner.models.registry import Registry
from fastbioner.train.finetune_config import SMALL_MODEL_LEARNING_RATE, TRANSFORMER_LEARNING_RATE, FineTuneConfig
from fastbioner.base.jobs import CancelToken, Cancelled
from fastbioner.cli.config_flags import add_config_flags, config_from_flags
from fastbioner.cli.progress import ProgressBar, ctrl_c_cancels

# The fine-tune itself (torch) is imported when the command runs: --help starts without it.


def register(subparsers: argparse._SubParsersAction) -> None:
    f = subparsers.add_parser(
        "fine-tune", help="continue training a model on your reviewed documents",
        description="Continue training MODEL (registry name or folder: a teacher or a student, transformer, "
                    "convolutional or recurrent) on "
                    "reviewed documents and register the result as --name. New entity types get new rows "
                    "of the tagging head; the model's types the documents do not annotate are kept (it "
                    "learns its own predictions for them) unless --drop-other-labels. Without --dev a "
                    "tenth of the documents (at least 5) is held back for early stopping and the before/"
                    "after scores; the same documents are held back at every update (see --split). A "
                    "result worse than the start on them beyond doubt (the bootstrap interval of after minus "
                    "before below zero) is not registered unless --keep-worse. Ctrl-C cancels and registers "
                    "nothing. See docs/guides/curator-loop.md.")
    f.add_argument("model", metavar="MODEL", help="registry name or model folder to start from")
    f.add_argument("--name", required=True, help="registry name of the new model")
    add_config_flags(f, FineTuneConfig, required=("train_files",), overrides={
        # decided by the kind of model once it is loaded (finetune_config.default_learning_rate)
        "training.learning_rate": {"default": None, "help": f"peak learning rate (default "
                                   f"{TRANSFORMER_LEARNING_RATE:g} for a transformer, {SMALL_MODEL_LEARNING_RATE:g} "
                                   f"for a convolutional or recurrent student)"}})
    f.add_argument("--overwrite", action="store_true", help="replace a registered model of that name")
    f.add_argument("--quiet", action="store_true", help="no progress bar")
    f.set_defaults(func=fine_tune_command)


def fine_tune_command(args: argparse.Namespace) -> int:
    from fastbioner.train.finetune import fine_tune

    config = config_from_flags(FineTuneConfig, args)
    config.validate()
    token = CancelToken()
    bar = ProgressBar(quiet=args.quiet)
    try:
        with ctrl_c_cancels(token):
            result = fine_tune(args.model, config, args.name, registry=Registry(), overwrite=args.overwrite,
                               on_event=bar, cancel=token)
    except Cancelled:
        print("fastbioner: cancelled; nothing registered", file=sys.stderr)
        return 130
    finally:
        bar.close()
    for line in summary_lines(result):
        print(line)
    return 0


def summary_lines(result) -> list[str]:
    t = result.training
    lines = [f"registered {result.entry.name} at {result.entry.path}",
             f"labels: {', '.join(result.labels)}"
             + (f" (added: {', '.join(result.added_labels)})" if result.added_labels else ""),
             f"reviewed types: {', '.join(result.reviewed_types)}; kept from the starting model: "
             f"{', '.join(result.kept_types) or 'none'}",
             f"trained on {result.documents - result.held_back} of {result.documents} reviewed document(s); "
             f"scored on: {result.dev_source}",
             f"{t.steps} steps in {t.seconds:.0f} s" + (" (stopped early)" if t.stopped_early else "")]
    lines += result.notes
    if result.comparison is not None:
        lines.append(result.comparison.line() + ", reviewed types only")
        for typ in result.reviewed_types:
            b, a = result.before.per_type.get(typ), result.after.per_type.get(typ)
            if b is not None and a is not None:
                lines.append(f"  {typ}: {100 * b.f1:.1f} -> {100 * a.f1:.1f}")
    return lines
