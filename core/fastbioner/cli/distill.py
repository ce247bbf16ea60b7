"""``fastbioner distill``: compress a registered teacher into a student."""

from __future__ import annotations

import argparse

from .config_flags import add_config_flags, config_from_flags
from .training_options import add_run_flags, print_training, run_training


def register(subparsers: argparse._SubParsersAction) -> None:
    from ..defaults_table import table
    from ..distill.config import DistillConfig, teacher_layers_methods_summary, teacher_layers_rates_summary
    from ..distill.methods import METHODS

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
        # decided from the student once it is known, by the defaults table (fastbioner/defaults.toml)
        "training.learning_rate": {"default": None, "help": f"peak learning rate (default, for the teacher's own "
                                   f"layers: {teacher_layers_rates_summary()}; {small_rates}; "
                                   f"{defaults.encoder.learning_rate:g} for another encoder)"},
        "training.epochs": {"default": None, "help": f"passes over the training data (default "
                            f"{defaults.teacher_epochs} for the teacher's own layers; {small_epochs}; "
                            f"{defaults.encoder.epochs} for another encoder)"},
        "student.layers": {"default": None, "help": f"student layers (from the teacher: default "
                           f"{defaults.teacher_layers}; another encoder: its first N, default all)"},
        "method.name": {"default": None, "help": "distillation method (default, for the teacher's own layers, "
                        "the one that led at that depth (docs/decisions.md): "
                        f"{teacher_layers_methods_summary()}; {defaults.encoder.method} for another encoder, "
                        f"{small_methods})"},
        "teacher": {"action": "append"}})
    add_run_flags(p)
    p.set_defaults(func=distill_command)


def _by_kind(kinds: dict, word) -> str:  # noqa: ANN001 - a small callable
    """``{"bigru": a, "bilstm": a, "cnn": b}`` in words: "a for bigru and bilstm, b for cnn"."""
    groups: dict[str, list[str]] = {}
    for name, entry in kinds.items():
        groups.setdefault(word(entry), []).append(name)
    return ", ".join(f"{value} for {' and '.join(names)}" for value, names in groups.items())


def config_from_args(args: argparse.Namespace):
    from ..distill.config import (SMALL_SOURCES, DistillConfig, default_epochs, default_learning_rate, default_method,
                                  default_teacher_layers)

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
    from ..distill.runner import distill

    result = run_training(distill, config_from_args(args), args)
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
    return 0
