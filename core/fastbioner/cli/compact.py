"""``fastbioner compact``: a trimmed-vocabulary, half-precision copy of a model,
registered under a new name (how the shipped default model is made small)."""

from __future__ import annotations

import argparse

from fastbioner.base.jobs import CancelToken
from fastbioner.cli.output import echo, report_skipped
from fastbioner.cli.progress import ProgressBar, ctrl_c_cancels
from fastbioner.io.formats import read_any
from fastbioner.models.manifest import MANIFEST, data_record, read_manifest, write_manifest
from fastbioner.models.registry import Registry

# torch is imported when the command runs: every other command starts without it.
DTYPES = ("bfloat16", "float16", "float32")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compact", help="trim a model's vocabulary to a corpus and store it in half precision",
        description="Keep only the wordpieces a corpus uses (plus special tokens and printable "
                    "single characters, so any text still tokenizes) and store the weights in half "
                    "precision. Text of the corpus tokenizes exactly as before. A convolutional student "
                    "can keep its whole vocabulary instead, its embedding table stored in int8.")
    p.add_argument("model", metavar="MODEL", help="registry name or folder")
    vocabulary = p.add_mutually_exclusive_group(required=True)
    vocabulary.add_argument("--corpus", nargs="+", metavar="FILE",
                            help="text whose wordpieces to keep, in any format `fastbioner convert` reads")
    vocabulary.add_argument("--keep-vocabulary", action="store_true",
                            help="keep every wordpiece (text unlike the corpus reads as in training)")
    p.add_argument("--int8-embeddings", action="store_true",
                   help="convolutional students: store the embedding table as int8 rows with a scale each "
                        "(its projection is folded into the table whenever it is compacted)")
    p.add_argument("--name", required=True, help="registry name of the compacted model")
    p.add_argument("--dtype", choices=DTYPES, default="float16")
    p.add_argument("--min-count", type=int, default=1, help="keep pieces seen at least N times")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=compact_command)


def compact_command(args: argparse.Namespace) -> int:
    import torch

    from fastbioner.models.compact import compact_model

    registry = Registry()
    source = registry.resolve(args.model)
    registry.check_name(args.name)
    token = CancelToken()
    bar = ProgressBar(quiet=args.quiet)
    with ctrl_c_cancels(token):
        docs = read_any(args.corpus) if args.corpus else None  # None: --keep-vocabulary
        texts = [d.text for d in docs] if docs is not None else None
        # A corpus file that cannot be read is said and skipped, the exit status 1, as in convert.
        status = report_skipped(docs.errors if docs is not None else ())
        vocabulary_files = docs.files if docs is not None else []
        with registry.staging() as folder:
            report = compact_model(source.path, folder, texts, dtype=getattr(torch, args.dtype),
                                   min_count=args.min_count, int8_embeddings=args.int8_embeddings,
                                   on_event=bar, cancel=token)
            # A Hugging Face folder made elsewhere has no manifest to carry over: the one
            # made from its config and weights when it was resolved stands in for it.
            manifest = read_manifest(folder) if (folder / MANIFEST).is_file() else source.manifest
            manifest.parameters = report.parameters_after
            manifest.compression = {**manifest.compression, "compacted_from": source.name,
                                    "vocabulary": report.to_dict()}
            manifest.training_data = [*manifest.training_data,
                                      *(data_record(p, "vocabulary") for p in vocabulary_files)]
            write_manifest(folder, manifest)
            entry = registry.install(folder, args.name, overwrite=args.overwrite)
    bar.close()
    mb = 1024 * 1024
    embeddings = (", embedding table in int8" if report.embedding_storage == "int8" else "") + \
        (", projection folded into it" if report.projection_folded else "")
    echo(f"registered {entry.name}: vocabulary {report.vocab_before} -> {report.vocab_after} pieces, "
          f"{report.parameters_before:,} -> {report.parameters_after:,} parameters, "
          f"{report.bytes_before / mb:.1f} -> {report.bytes_after / mb:.1f} MB weights ({report.dtype}"
          f"{embeddings}); corpus segmentations changed: {report.changed_segmentations}")
    if entry.manifest.metrics:
        # The manifest still carries the parent's devel scores until the compacted weights are scored.
        echo(f"its devel scores are {source.name}'s; score the compacted weights with "
              f"`fastbioner evaluate {entry.name} DEVEL_FILE --record`")
    return status
