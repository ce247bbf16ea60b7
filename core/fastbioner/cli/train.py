"""``fastbioner train-teacher`` and ``fastbioner evaluate``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fastbioner.base.config import COMBINATIONS, TeacherConfig
from fastbioner.base.errors import FastBioNERError, ModelError
from fastbioner.base.threads import choose
from fastbioner.infer.evaluation import evaluate_model
from fastbioner.io.fileio import atomic_write
from fastbioner.base.jobs import CancelToken, Cancelled
from fastbioner.cli.progress import ProgressBar, ctrl_c_cancels
from fastbioner.cli.config_flags import add_config_flags, config_from_flags
from fastbioner.cli.output import echo
from fastbioner.cli.training_options import add_run_flags, print_training, run_training
from fastbioner.models.manifest import trained_on
from fastbioner.models.registry import Registry

# Training and torch are imported when a command runs: --help starts without them.


def register(subparsers: argparse._SubParsersAction) -> None:
    t = subparsers.add_parser(
        "train-teacher", help="fine-tune a teacher model on BIO files and register it",
        description="Fine-tune a Hugging Face encoder (model id or folder) for NER on BIO files, "
                    "select it on devel F1 and register it. Ctrl-C cancels cleanly; --resume continues.")
    t.add_argument("--name", required=True, help="registry name of the new model")
    add_config_flags(t, TeacherConfig, required=("base_model", "train_files"))
    add_run_flags(t)
    t.set_defaults(func=train_teacher_command)

    ev = subparsers.add_parser("evaluate", help="score a model on a BIO file",
                               description="Entity-level (seqeval, strict IOB2) and token-level scores "
                                           "of MODEL (registry name or folder) on FILE.")
    ev.add_argument("model", metavar="MODEL")
    ev.add_argument("file", metavar="FILE")
    ev.add_argument("--batch-size", type=int, default=32)
    ev.add_argument("--device", default="auto")
    ev.add_argument("--threads", type=int, default=0, help="CPU threads (0: the cores less what other work keeps busy)")
    ev.add_argument("--json", metavar="OUT", help="also write the scores as JSON ('-' for stdout only)")
    ev.add_argument("--record", action="store_true",
                    help="store the scores as the registered model's devel metrics (its card shows them), "
                         "e.g. after `fastbioner compact`")
    ev.add_argument("--ensemble-with", metavar="NAME", action="append", default=[],
                    help="another model to combine with MODEL word by word (repeat for more), as "
                         "distillation from several teachers combines them: scores what such a "
                         "student learns from")
    ev.add_argument("--combination", choices=COMBINATIONS, default="confidence",
                    help="how --ensemble-with models combine per word: weighted by each model's confidence "
                         "in the word (its top probability), or the mean (default: %(default)s)")
    ev.add_argument("--quiet", action="store_true")
    ev.set_defaults(func=evaluate_command)


def config_from_args(args: argparse.Namespace) -> TeacherConfig:
    return config_from_flags(TeacherConfig, args)


def train_teacher_command(args: argparse.Namespace) -> int:
    from fastbioner.train.teacher import train_teacher

    result = run_training(train_teacher, config_from_args(args), args)
    if isinstance(result, int):
        return result
    print(f"registered {result.entry.name} at {result.entry.path}")
    print_training(result)
    return 0


def _trained_on(model: str, file: str) -> bool:
    """Whether ``model`` (a registry name or folder with a manifest) trained on ``file``'s labels."""
    try:
        return trained_on(Registry().resolve(model).manifest, file)
    except (ModelError, OSError):
        return False  # a model without a manifest, or none at all: evaluate says so itself


def evaluate_command(args: argparse.Namespace) -> int:
    import torch

    torch.set_num_threads(choose(args.threads or None).threads)
    registry = None
    if args.record and args.ensemble_with:
        raise FastBioNERError("--record stores one model's own scores; an --ensemble-with combination "
                              "is not that model (write its scores with --json)")
    if args.record:  # refused before the scoring, not after
        registry = Registry()
        try:
            registered = registry.exists(Registry.check_name(args.model))
        except ModelError:
            registered = False
        if not registered:
            raise FastBioNERError(f"--record needs a registered model; {args.model!r} is not one "
                                  f"(see `fastbioner models list`)")
    seen = _trained_on(args.model, args.file)
    if seen and args.record:
        raise FastBioNERError(f"{args.model} trained on {args.file}'s labels: scores on it say nothing of unseen "
                              f"text, so they are not recorded as its devel scores (a final model built on "
                              f"train + devel reports those of its train-only twin)")
    if seen:
        print(f"fastbioner: note: {args.model} trained on {args.file}'s labels; these are scores on its own "
              f"training text", file=sys.stderr)
    token = CancelToken()
    bar = ProgressBar(quiet=args.quiet or args.json == "-")
    try:
        with ctrl_c_cancels(token):
            report = evaluate_model(args.model, args.file, batch_size=args.batch_size,
                                    device=args.device, ensemble_with=args.ensemble_with,
                                    combination=args.combination, on_event=bar, cancel=token)
    except Cancelled:
        print("fastbioner: cancelled", file=sys.stderr)
        return 130
    finally:
        bar.close()
    if registry is not None:  # --record
        report.source = {"model": args.model, "file": str(Path(args.file).resolve())}
        registry.update_manifest(args.model, metrics=report.to_dict())
    data = json.dumps(report.to_dict(), indent=2)
    if args.json == "-":
        print(data)
        return 0
    echo(report.to_text())  # the types are the file's labels: escaped
    if args.json:
        try:
            with atomic_write(args.json) as fh:
                fh.write(data + "\n")
        except OSError as exc:
            raise FastBioNERError(f"{args.json}: cannot write ({exc.strerror or exc})") from None
    return 0
