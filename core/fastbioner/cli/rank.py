"""``fastbioner rank``: the documents a model is least sure of, for review first."""

from __future__ import annotations

import argparse
from pathlib import Path

from fastbioner.base.defaults import table
from fastbioner.base.errors import InputError
from fastbioner.io.fileio import check_not_an_input, output_target
from fastbioner.cli.progress import run_writing_job
from fastbioner.cli.tag import _run_options, _tagger_config, check_chunk
from fastbioner.io.formats import guess_format
from fastbioner.models.shipped import model_to_tag

# The Tagger (torch) is imported when the command runs: --help starts without it.


def register(subparsers: argparse._SubParsersAction) -> None:
    r = subparsers.add_parser(
        "rank", help="pick the documents the model is least sure of (a review queue)",
        description="Score every document of INPUT by how many words the model expects to have tagged "
                    "wrongly (the sum over its words of 1 - the probability of the chosen tag; see "
                    "docs/guides/curator-loop.md) and write the --top N most uncertain to --out, most uncertain "
                    "first (ties by document id). The input's own annotations play no part in the ranking "
                    "and are written back unchanged; the output format follows --out's extension, as in "
                    "convert. Ctrl-C cancels cleanly (no partial output).")
    r.add_argument("inputs", nargs="+", metavar="INPUT", help="input file(s) or folder(s), any document format")
    r.add_argument("--model", default=None, metavar="NAME",
                   help="registry name or model folder (default: the shipped default model)")
    r.add_argument("--top", type=int, required=True, metavar="N", help="documents to write")
    r.add_argument("--out", required=True, metavar="FILE", help="output file; its format from the extension")
    r.add_argument("--to", dest="out_format", default=None, metavar="FMT",
                   help="output format, if not by extension (conll, pubtator, bioc, jsonl ...)")
    r.add_argument("--input-format", default=None, metavar="FMT", help="input format, if not by extension")
    r.add_argument("--suggestions", action="store_true",
                   help="also add the model's entities where the input has none overlapping (pre-annotation)")
    r.add_argument("--chunk", type=int, default=table().section("tagging")["chunk"], metavar="DOCS",
                   help="documents scored together (memory is bounded by this) (%(default)s)")
    _run_options(r)
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=rank_command)


def rank_command(args: argparse.Namespace) -> int:
    from fastbioner.infer.inference import Tagger
    from fastbioner.infer.ranking import rank_files

    for path in args.inputs:
        if not Path(path).exists():
            raise InputError("no such file", path)
    if args.top < 1:
        raise InputError(f"--top must be at least 1, not {args.top}")
    check_chunk(args.chunk)
    check_not_an_input(Path(args.out), [Path(p) for p in args.inputs])
    output_target(args.out)
    if args.out_format is None:
        guess_format(args.out, for_writing=True)  # an unknown extension says so before any work
    config = _tagger_config(args)
    config.validate()
    tagger = Tagger.load(model_to_tag(args.model), config)
    return run_writing_job(args.out, args.quiet, lambda bar, token: rank_files(
        tagger, args.inputs, args.top, args.out, args.out_format, input_format=args.input_format,
        chunk_documents=args.chunk, suggestions=args.suggestions, on_event=bar, cancel=token))
