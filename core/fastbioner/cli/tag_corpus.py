"""``fastbioner tag-corpus``: tag many files (all of PubMed) into Parquet shards, on this
machine or on a Ray cluster; resumable, Ctrl-C cancels cleanly."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
import sys

from fastbioner.io.fileio import check_not_an_input
from fastbioner.base.terminal import shown
from fastbioner.base.defaults import table
from fastbioner.base.jobs import CancelToken, Cancelled
from fastbioner.cli.progress import ProgressBar, ctrl_c_cancels
from fastbioner.cli.tag import _run_options, _tagger_config
from fastbioner.models.shipped import model_to_tag

# The corpus job (torch, pyarrow) is imported when the command runs: --help starts without it.


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "tag-corpus", help="tag many files (e.g. the PubMed baseline) into Parquet shards, locally or on Ray",
        description="Bring the folder --out up to date with INPUT files (PubMed .xml/.xml.gz, or any "
                    "format `convert` reads; folders are read in name order, PubMed files in file-number "
                    "order) and every input it took before: one Parquet shard per input (columns pmid, "
                    "text, passages, text_hash, spans: start, end, label, score, text, offsets into "
                    "title + ' ' + abstract) in DIR/current, a link swapped in one step at the end of a "
                    "run to a snapshot of exactly the current documents, plus _summary.json. --out must "
                    "be new, empty or made by tag-corpus. "
                    "A PMID deleted by a <DeleteCitation> in any input is in no shard, and a PMID in "
                    "several inputs is kept once, from the latest. Only documents whose text (or the "
                    "model) changed are tagged; inputs seen before are not parsed again. A bad input is "
                    "reported and skipped (exit status 1); Ctrl-C cancels, keeping what was tagged, and "
                    "the same command resumes. See docs/guides/pubmed-daily.md.")
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="input files or folders (none: bring the folder's own inputs up to date, e.g. "
                        "after changing --model)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="folder for the shards (read DIR/current) and _summary.json")
    p.add_argument("--engine", default="local", choices=("local", "ray"),
                   help="local: this process; ray: Ray tasks read, a pool of Tagger actors tags "
                        '(pip install "fastbioner-studio[scale]") (%(default)s)')
    p.add_argument("--model", default=None, metavar="NAME",
                   help="registry name or model folder (default: the shipped default model)")
    p.add_argument("--input-format", default=None, metavar="FMT", help="input format, if not by extension")
    p.add_argument("--address", default=None, metavar="RAY_ADDRESS",
                   help="Ray: the cluster to join (e.g. auto, or ray://head:10001); default: start Ray here")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="Ray: Tagger actors (default: one per --gpus-per-worker share of the GPUs, "
                        "else the CPUs less one)")
    p.add_argument("--gpus-per-worker", type=float, default=0.0, metavar="G",
                   help="Ray: GPUs per actor, fractions allowed (%(default)s: CPU actors)")
    p.add_argument("--chunk", type=int, default=table().section("tagging")["chunk"], metavar="DOCS",
                   help="documents per chunk sent to a worker and checkpointed; changes no output "
                        "(%(default)s)")
    _run_options(p)
    for action in p._actions:
        if action.dest == "threads":  # a corpus run's own default (see scale.preflight.default_threads)
            action.help = ("CPU threads of the local engine (default: the cores less what other work keeps "
                           "busy, at least 1)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=tag_corpus_command)


def tag_corpus_command(args: argparse.Namespace) -> int:
    from fastbioner.scale import CorpusOptions, tag_corpus

    options = CorpusOptions(engine=args.engine, input_format=args.input_format, chunk_documents=args.chunk,
                            address=args.address, workers=args.workers, gpus_per_worker=args.gpus_per_worker)
    options.validate()
    # The folder of shards never inside an input folder: the run would read what it writes.
    check_not_an_input(Path(args.out), [Path(p) for p in args.inputs])
    config = _tagger_config(args)
    config.validate()
    model = model_to_tag(args.model)
    token = CancelToken()
    bar = ProgressBar(quiet=args.quiet)
    try:
        with ctrl_c_cancels(token):
            summary = tag_corpus(args.inputs, args.out, model, config, options, cancel=token,
                                 on_event=lambda ev: bar(dataclasses.replace(ev, message=shown(ev.message))))
    except Cancelled:
        print(f"fastbioner: cancelled; complete shards are kept in {args.out}, no partial one, and "
              f"the chunks tagged so far; run the same command again to resume", file=sys.stderr)
        return 130
    finally:
        bar.close()
    for line in summary.lines():
        print(shown(line))
    if summary.failures:
        print(f"fastbioner: {len(summary.failures)} input(s) failed (listed in {args.out}/_summary.json); "
              f"the others are done", file=sys.stderr)
        return 1
    return 0

