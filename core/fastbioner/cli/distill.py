"""``fastbioner distill``: compress a registered teacher into a student."""

from __future__ import annotations

import argparse
import sys

from fastbioner.base.errors import ModelError
from fastbioner.base.jobs import Cancelled, CancelToken
from fastbioner.cli.config_flags import add_config_flags, config_from_flags
from fastbioner.cli.progress import ProgressBar, ctrl_c_cancels
from fastbioner.cli.training_options import add_run_flags, print_training, run_training
from fastbioner.train.distill.config import (
    SMALL_SOURCES,
    DistillConfig,
    default_epochs,
    default_learning_rate,
    default_method,
    default_teacher_layers,
    teacher_layers_methods_summary,
    teacher_layers_rates_summary,
)
from fastbioner.train.distill.methods import METHODS
from fastbioner.base.units import human_size
from fastbioner.train.guided import compact_by_default, compact_student

# The distillation run (torch, transformers) is imported when the command runs; table() at
# call time, so the help states a replaced defaults table (tests replace it).


def register(subparsers: argparse._SubParsersAction) -> None:
    from fastbioner.base.defaults import table

    methods = "; ".join(f"{n}: {m.summary}" for n, m in METHODS.items())
    defaults = table()
    small_rates = _by_kind(defaults.small, lambda d: f"{d.learning_rate:g}")
    small_epochs = _by_kind(defaults.small, lambda d: str(d.epochs))
    small_methods = _by_kind(defaults.small, lambda d: d.method)
    p = subparsers.add_parser(
        "distill", help="distil a registered teacher into a small student and register it",
        description="Knowledge distillation of a fine-tuned teacher into a student of fewer layers "
                    "(or a BiGRU), by FastBioNER or a baseline method. Methods: " + methods +
                    ". Ctrl-C cancels cleanly; --resume continues.")
    p.add_argument("--name", required=True, help="registry name of the student")
    add_config_flags(p, DistillConfig, required=("teacher", "train_files"), overrides={
        # decided from the student once it is known, by the defaults table (fastbioner/base/defaults.toml)
        "training.learning_rate": {"default": None, "help": f"peak learning rate (default, for the teacher's own "
                                   f"layers: {teacher_layers_rates_summary()}; {small_rates}; "
                                   f"{defaults.encoder.learning_rate:g} for another encoder)"},
        "training.epochs": {"default": None, "help": f"passes over the training data (default "
                            f"{defaults.teacher_epochs} for the teacher's own layers; {small_epochs}; "
                            f"{defaults.encoder.epochs} for another encoder)"},
        "student.layers": {"default": None, "help": f"student layers (from the teacher: default "
                           f"{defaults.teacher_layers}; another encoder: its first N, default all)"},
        "method.name": {"default": None, "help": "distillation method (default, for the teacher's own layers, "
                        "the one that led at that depth (docs/research/decisions.md): "
                        f"{teacher_layers_methods_summary()}; {defaults.encoder.method} for another encoder, "
                        f"{small_methods})"},
        "teacher": {"action": "append"}})
    p.add_argument("--compact", action=argparse.BooleanOptionalAction, default=None,
                   help="compact the registered student (vocabulary trimmed to the training text, weights in "
                        "float16, as `fastbioner compact` does; a cnn keeps its vocabulary, its table in int8), "
                        "scored on devel again (default: " + ("yes" if defaults.compact_after_distillation else
                                                              "no") + ": "
                        "docs/research/decisions.md#compaction)")
    add_run_flags(p)
    p.set_defaults(func=distill_command)


def _by_kind(kinds: dict, word) -> str:
    """``{"bigru": a, "bilstm": a, "cnn": b}`` in words: "a for bigru and bilstm, b for cnn"."""
    groups: dict[str, list[str]] = {}
    for name, entry in kinds.items():
        groups.setdefault(word(entry), []).append(name)
    return ", ".join(f"{value} for {' and '.join(names)}"
                     for value, names in groups.items())


def config_from_args(args: argparse.Namespace):
    teachers = list(args.teacher)  # --teacher A --teacher B: the first is the one the student copies
    args = argparse.Namespace(**{**vars(args), "teacher": teachers[0],
                                 "extra_teachers": teachers[1:] + list(args.extra_teachers)})
    config = config_from_flags(DistillConfig, args)
    if args.student__source in ("teacher", *SMALL_SOURCES):  # names, not folders
        config.student.source = args.student__source
    if args.student__embeddings == "teacher":
        config.student.embeddings = "teacher"
    if config.student.layers is None and config.student.source == "teacher":
        config.student.layers = default_teacher_layers()
    if config.training.learning_rate is None:
        config.training.learning_rate = default_learning_rate(config.student.source, config.student.layers)
    if config.training.epochs is None:
        config.training.epochs = default_epochs(config.student.source, config.student.layers)
    if config.method.name is None:
        config.method.name = default_method(config.student.source, config.student.layers)
    return config


def distill_command(args: argparse.Namespace) -> int:
    from fastbioner.train.distill.runner import distill

    config = config_from_args(args)
    result = run_training(distill, config, args)
    if isinstance(result, int):
        return result
    entry, c = result.entry, result.compression
    print(f"registered {entry.name} at {entry.path} (teacher {c['teacher']}, method {entry.manifest.method})")
    for note in result.notes:
        print(f"  {note}")
    cache = result.teacher_cache
    if "estimated_saved_seconds" in cache:
        print(f"teacher cache ({cache['mode']}, {cache['bytes'] / 2**20:.0f} MiB): built in "
              f"{cache['build_seconds']:.0f} s, read in {cache['fetch_seconds']:.0f} s; saved about "
              f"{cache['estimated_saved_seconds']:.0f} s against computing the teacher at every step")
    print(f"parameters {c['student_parameters']:,} vs {c['teacher_parameters']:,} "
          f"({100 * c['smaller_by']:.1f}% smaller); size {c['student_size_bytes'] / 2**20:.1f} MiB vs "
          f"{c['teacher_size_bytes'] / 2**20:.1f} MiB")
    print_training(result)
    compact = args.compact if args.compact is not None else compact_by_default()
    return _compact(result, config, args) if compact else 0


def _compact(result, config, args: argparse.Namespace) -> int:
    """Compact the registered student in place (the guided path's step); a cancel or a
    vocabulary that cannot be trimmed leaves the full-precision student registered."""
    token, bar = CancelToken(), ProgressBar(quiet=args.quiet)
    try:
        with ctrl_c_cancels(token):
            entry, report, figures = compact_student(result.entry, result.report, config, on_event=bar, cancel=token)
    except Cancelled:
        print(f"fastbioner: compaction cancelled; {result.entry.name} stays registered in full precision",
              file=sys.stderr)
        return 130
    except ModelError as exc:
        print(f"not compacted ({exc}); the student keeps full precision")
        return 0
    finally:
        bar.close()
    scored = f"; devel F1 {report.f1:.4f}" if report is not None else ""
    print(f"compacted {entry.name}: weights in {figures['dtype']}, vocabulary {figures['vocab_before']} -> "
          f"{figures['vocab_after']} pieces, {human_size(entry.manifest.size_bytes or 0)} on disk{scored}")
    return 0
