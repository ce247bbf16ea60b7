"""``fastbioner distill``: compress a registered teacher into a student."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config import TrainingConfig
from ..jobs import CancelToken, Cancelled
from .progress import ProgressBar, ctrl_c_cancels
from .training_options import (add_training_options, encoding_config, loss_config, print_estimate,
                               training_config)

RECURRENT_LR = 1e-3  # a recurrent student learns from scratch: a transformer's 5e-5 is far too small


def register(subparsers: argparse._SubParsersAction) -> None:
    from ..distill.config import CACHE_MODES, StudentConfig
    from ..distill.methods import ATTENTION_FORMS, CALIBRATIONS, METHOD_NAMES, METHODS, TERM_NAMES, MethodConfig
    from ..distill.schedules import SCHEDULE_NAMES

    methods = "; ".join(f"{n}: {m.summary}" for n, m in METHODS.items())
    p = subparsers.add_parser(
        "distill", help="distil a registered teacher into a small student and register it",
        description="Knowledge distillation of a fine-tuned teacher into a student of fewer layers "
                    "(or a BiGRU), by FastBioNER or a baseline method. Methods: " + methods +
                    ". Ctrl-C cancels cleanly; --resume continues.")
    p.add_argument("--teacher", required=True, metavar="NAME", help="registry name or folder of the teacher")
    p.add_argument("--train", nargs="+", required=True, metavar="FILE", help="BIO training file(s)")
    p.add_argument("--dev", metavar="FILE", help="BIO devel file for model selection")
    p.add_argument("--name", required=True, help="registry name of the student")
    s = StudentConfig()
    p.add_argument("--student-from", default=s.source, metavar="SOURCE",
                   help="teacher (its own layers), bigru, bilstm, or a model id / folder / registry name "
                        "(default %(default)s)")
    p.add_argument("--layers", type=int, default=None,
                   help="student layers (from the teacher: default 6; another encoder: its first N, "
                        "default all)")
    p.add_argument("--rnn-hidden", type=int, default=s.rnn_hidden, help="recurrent units per direction")
    p.add_argument("--rnn-layers", type=int, default=s.rnn_layers)
    p.add_argument("--no-crf", action="store_true", help="recurrent student without a CRF")
    p.add_argument("--method", choices=METHOD_NAMES, default="fastbioner")
    p.add_argument("--unlabeled", nargs="+", default=[], metavar="FILE",
                   help="unlabelled text (PubTator, BioC, PubMed XML, plain text ...) for soft labels")
    p.add_argument("--unlabeled-format", default=None, help="format of the unlabelled files (default: guess)")
    p.add_argument("--unlabeled-limit", type=int, default=0, metavar="N",
                   help="take the first N unlabelled sentences (0: all)")
    p.add_argument("--temperature", type=float, default=None, help="soft-label temperature (method's default)")
    p.add_argument("--no-t2", action="store_true", help="do not scale the soft-label term by T^2")
    p.add_argument("--b", type=float, default=None, help="offset b of the dynamic phi (0.3)")
    p.add_argument("--schedule", choices=SCHEDULE_NAMES, default=None, help="replace the method's schedule")
    p.add_argument("--alpha", type=float, default=None, help="weight of a constant schedule")
    p.add_argument("--drop-terms", default="", metavar="T1,T2",
                   help=f"leave out loss terms (ablations): {', '.join(TERM_NAMES)}")
    m = MethodConfig()
    p.add_argument("--term-weight", action="append", default=[], metavar="TERM=W", type=_term_weight,
                   help=f"weight of one loss term, multiplying the method's own (repeat for several; "
                        f"terms: {', '.join(TERM_NAMES)}); e.g. --term-weight attention=0.01. Every weight "
                        f"1 and --calibrate none is the paper's literal form")
    p.add_argument("--calibrate", choices=CALIBRATIONS, default=m.calibrate,
                   help="grad-norm: before training, scale each matching term (hidden, attention, ...) so "
                        "its weighted gradient norm equals the gold term's (recorded in the manifest) "
                        "(default %(default)s)")
    p.add_argument("--calibration-batches", type=int, default=m.calibration_batches, metavar="N",
                   help="batches the calibration averages over (%(default)s)")
    p.add_argument("--calibration-ratio", type=float, default=m.calibration_ratio, metavar="R",
                   help="each matching term's gradient norm as a multiple of the gold term's (%(default)s)")
    p.add_argument("--attention", choices=ATTENTION_FORMS, default=m.attention,
                   help="attention maps to match: scores QK^T/sqrt(d_k) before softmax (the paper's); "
                        "centred: the same with each query row's mean removed (softmax ignores it); "
                        "probs: probabilities after softmax (default %(default)s)")
    p.add_argument("--projection-init", choices=("lstsq", "random"), default=m.projection_init,
                   help="W_h of a student of another width: least-squares fit on the first batches, or "
                        "random (default %(default)s)")
    p.add_argument("--projection-lr", type=float, default=None, metavar="LR",
                   help="peak learning rate of W_h (default: the student's)")
    p.add_argument("--teacher-cache", choices=CACHE_MODES, default="auto",
                   help="keep the teacher's outputs in memory or on disk, or compute them at every "
                        "step (none); auto: memory when it fits --cache-memory-mb")
    p.add_argument("--cache-memory-mb", type=int, default=4096)
    add_training_options(p, lr_help=f"peak learning rate (default {TrainingConfig().learning_rate}; "
                                    f"{RECURRENT_LR} for bigru/bilstm)")
    p.set_defaults(func=distill_command)


def _term_weight(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    try:
        weight = float(value)
    except ValueError:
        weight = None
    if not sep or weight is None:
        raise argparse.ArgumentTypeError(f"expected TERM=WEIGHT (e.g. attention=0.01), got {text!r}")
    return name.strip(), weight


def _path(p: str) -> str:
    return str(Path(p).expanduser().resolve())


def config_from_args(args: argparse.Namespace):
    from ..distill.config import RECURRENT_SOURCES, DistillConfig, StudentConfig
    from ..distill.methods import MethodConfig

    source = args.student_from
    if source not in ("teacher", *RECURRENT_SOURCES) and Path(source).expanduser().exists():
        source = _path(source)
    recurrent = source in RECURRENT_SOURCES
    layers = args.layers if args.layers is not None else (6 if source == "teacher" else None)
    lr = args.lr if args.lr is not None else (RECURRENT_LR if recurrent else TrainingConfig().learning_rate)
    teacher = args.teacher
    if Path(teacher).expanduser().is_dir():
        teacher = _path(teacher)
    return DistillConfig(
        teacher=teacher,
        student=StudentConfig(source=source, layers=layers, rnn_hidden=args.rnn_hidden,
                              rnn_layers=args.rnn_layers, crf=not args.no_crf),
        method=MethodConfig(name=args.method, schedule=args.schedule, b=args.b, alpha=args.alpha,
                            temperature=args.temperature, scale_by_t2=not args.no_t2,
                            drop_terms=[t.strip() for t in args.drop_terms.split(",") if t.strip()],
                            attention=args.attention, term_weights=dict(args.term_weight),
                            calibrate=args.calibrate, calibration_batches=args.calibration_batches,
                            calibration_ratio=args.calibration_ratio, projection_init=args.projection_init,
                            projection_lr=args.projection_lr),
        train_files=[_path(p) for p in args.train],
        dev_file=_path(args.dev) if args.dev else None,
        unlabeled_files=[_path(p) for p in args.unlabeled],
        unlabeled_format=args.unlabeled_format, unlabeled_limit=args.unlabeled_limit,
        encoding=encoding_config(args), training=training_config(args, learning_rate=lr),
        loss=loss_config(args),
        teacher_cache=args.teacher_cache, cache_memory_mb=args.cache_memory_mb)


def distill_command(args: argparse.Namespace) -> int:
    from ..distill.runner import distill
    from ..registry import Registry
    from ..runs import checkpoint_folder

    config = config_from_args(args)
    if args.estimate:
        return print_estimate(config, args)
    registry = Registry()
    token = CancelToken()
    bar = ProgressBar(quiet=args.quiet)
    try:
        with ctrl_c_cancels(token):
            result = distill(config, args.name, registry=registry, resume=args.resume, restart=args.restart,
                             overwrite=args.overwrite, on_event=bar, cancel=token)
    except Cancelled:
        print(f"fastbioner: cancelled; nothing registered. Continue with the same command and "
              f"--resume (checkpoint in {checkpoint_folder(registry, args.name)})", file=sys.stderr)
        return 130
    finally:
        bar.close()
    entry, t, c = result.entry, result.training, result.compression
    print(f"registered {entry.name} at {entry.path} (teacher {c['teacher']}, method {entry.manifest.method})")
    for note in result.notes:
        print(f"  {note}")
    if t.epoch_seconds:
        per_epoch = ", ".join(f"{s:.0f}" for s in t.epoch_seconds)
        print(f"{t.steps} steps in {t.seconds:.0f} s (training seconds per epoch: {per_epoch})")
    cache = result.teacher_cache
    if "estimated_saved_seconds" in cache:
        print(f"teacher cache ({cache['mode']}, {cache['bytes'] / 2**20:.0f} MiB): built in "
              f"{cache['build_seconds']:.0f} s, read in {cache['fetch_seconds']:.0f} s; saved about "
              f"{cache['estimated_saved_seconds']:.0f} s against computing the teacher at every step")
    print(f"parameters {c['student_parameters']:,} vs {c['teacher_parameters']:,} "
          f"({100 * c['smaller_by']:.1f}% smaller); size {c['student_size_bytes'] / 2**20:.1f} MiB vs "
          f"{c['teacher_size_bytes'] / 2**20:.1f} MiB")
    if result.report is not None:
        print(f"devel scores (best step {t.best_step}):")
        print(result.report.to_text())
    return 0
