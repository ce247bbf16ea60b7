"""``fastbioner tag`` (tag documents with a model) and ``fastbioner benchmark``
(measure a model's tagging speed per precision mode and record it in its manifest)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fastbioner.base.errors import InputError
from fastbioner.io.documents import Document
from fastbioner.io.fileio import check_input, check_not_an_input, output_target, write_json_record
from fastbioner.base.jobs import CancelToken, Cancelled
from fastbioner.base.defaults import table
from fastbioner.io.formats import read_documents
from fastbioner.models.precision import MAX_F1_LOSS_POINTS, PRECISION_CHOICES, loss_points_text
from fastbioner.cli.output import warn
from fastbioner.cli.progress import ProgressBar, ctrl_c_cancels, run_writing_job
from fastbioner.models.registry import Registry
from fastbioner.models.shipped import model_to_tag

# The Tagger and the benchmark (torch) are imported when a command runs: --help starts without them.

OUTPUT_FORMATS = ("conll", "pubtator", "bioc", "jsonl")


def _run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda, cuda:N (%(default)s)")
    p.add_argument("--precision", default="auto", choices=PRECISION_CHOICES,
                   help=f"auto: the fastest mode whose recorded check lost at most {MAX_F1_LOSS_POINTS:g} devel "
                        "F1 against fp32 (fp32 when none was checked); or a mode by name (%(default)s)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="CPU threads (default: the cores less what other work keeps busy, at least 1)")
    p.add_argument("--token-budget", type=int, default=None, metavar="N",
                   help="padded subword positions per batch")


def register(subparsers: argparse._SubParsersAction) -> None:
    t = subparsers.add_parser(
        "tag", help="tag Disease/Chemical mentions in documents",
        description="Tag every document of INPUT files with a model and write them to --out. Spans "
                    "already in the input are replaced by the model's, except curated ones. "
                    "Ctrl-C cancels cleanly (no partial output).")
    t.add_argument("inputs", nargs="+", metavar="INPUT", help="input file(s); format from the extension")
    t.add_argument("--input-format", default=None, metavar="FMT", help="input format, if not by extension")
    t.add_argument("--model", default=None, metavar="NAME",
                   help="registry name or model folder (default: the shipped default model)")
    t.add_argument("--out", required=True, metavar="FILE")
    t.add_argument("--format", required=True, choices=OUTPUT_FORMATS, dest="out_format")
    t.add_argument("--chunk", type=int, default=table().section("tagging")["chunk"], metavar="DOCS",
                   help="documents tagged together (memory is bounded by this) (%(default)s)")
    _run_options(t)
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=tag_command)

    b = subparsers.add_parser(
        "benchmark", help="measure a model's tagging speed and precision modes; record them",
        description="Tag the same documents in fp32 and every reduced precision this machine offers; "
                    "print tokens/s, ms per abstract and entity agreement with fp32 (and devel F1 with "
                    "--devel), and write them into the model's manifest (registered models).")
    b.add_argument("model", metavar="MODEL", help="registry name or model folder")
    b.add_argument("--docs", required=True, metavar="FILE", help="documents to time (e.g. PubTator abstracts)")
    b.add_argument("--limit", type=int, default=None, metavar="N", help="first N documents only")
    b.add_argument("--devel", default=None, metavar="BIO",
                   help="BIO devel file: F1 per mode (without it, --precision auto may take a mode whose "
                        f"entities agree with fp32's on at least {100 - MAX_F1_LOSS_POINTS:g}%% (F1), which bounds "
                        f"its loss at {MAX_F1_LOSS_POINTS:g} points: the check for a model that trained on devel)")
    b.add_argument("--modes", nargs="+", default=None, choices=PRECISION_CHOICES[1:],
                   help="modes to measure (default: all this device offers)")
    _run_options(b)
    b.add_argument("--no-record", action="store_true", help="do not write the manifest")
    b.add_argument("--json", default=None, metavar="OUT", help="also write the record as JSON")
    b.add_argument("--quiet", action="store_true")
    b.set_defaults(func=benchmark_command)


def check_chunk(chunk: int) -> None:
    """``--chunk`` of tag and rank: documents held together, at least one (0 or a
    negative number was read as 1 before: now refused, as every bad number is)."""
    if chunk < 1:
        raise InputError(f"--chunk must be at least 1 document, not {chunk}")


def _tagger_config(args: argparse.Namespace, precision: str | None = None):
    from fastbioner.infer.inference import TaggerConfig

    fields = {"device": args.device, "precision": precision or args.precision, "threads": args.threads}
    if args.token_budget:
        fields["token_budget"] = args.token_budget
    return TaggerConfig(**fields)


def tag_command(args: argparse.Namespace) -> int:
    from fastbioner.infer.inference import Tagger
    from fastbioner.infer.tagging import tag_files

    from fastbioner.io.formats import distinct_inputs

    check_chunk(args.chunk)
    inputs, twice = distinct_inputs(args.inputs)
    for path in twice:
        warn(f"{path} given twice: tagged once")
    for path in inputs:
        check_input(path)  # missing, a folder, /dev/zero: said before the model loads
    check_not_an_input(Path(args.out), [Path(p) for p in args.inputs])
    output_target(args.out)  # a path that cannot be written says so before the model loads
    model = model_to_tag(args.model)
    config = _tagger_config(args)
    config.validate()
    tagger = Tagger.load(model, config)
    return run_writing_job(args.out, args.quiet, lambda bar, token: tag_files(
        tagger, inputs, args.out, args.out_format, input_format=args.input_format,
        chunk_documents=args.chunk, on_event=bar, cancel=token))


def benchmark_command(args: argparse.Namespace) -> int:
    from fastbioner.infer.speed import benchmark_model, record_speed

    docs: list[Document] = []
    for doc in read_documents(args.docs):
        if args.limit is not None and len(docs) >= args.limit:
            break
        docs.append(doc)
    if not docs:
        raise InputError("no documents to time", args.docs)
    token = CancelToken()
    bar = ProgressBar(quiet=args.quiet)
    try:
        with ctrl_c_cancels(token):
            record = benchmark_model(args.model, docs, args.devel, config=_tagger_config(args, "fp32"),
                                     modes=args.modes, on_event=bar, cancel=token)
    except Cancelled:
        print("fastbioner: cancelled; nothing recorded", file=sys.stderr)
        return 130
    finally:
        bar.close()
    print(f"{record['documents']} documents on {record['hardware']}, {record['threads']} thread(s)")
    print(f"{'mode':<6}{'tokens/s':>11}{'ms/abstract':>13}{'agreement':>11}{'devel F1':>10}{'F1 lost':>9}"
          f"  default?")
    for mode, m in record["modes"].items():
        f1 = f"{m['f1']:.4f}" if m.get("f1") is not None else "-"
        lost = loss_points_text(m.get("f1_loss_points"))
        if m.get("f1_loss_points") is None and m.get("f1_loss_bound") is not None:
            lost = f"<={m['f1_loss_bound']:.2f}"  # no gold: what its agreement with fp32 allows
        ok = "yes" if mode == record["precision"] else ("allowed" if m["default_allowed"] else "no")
        print(f"{mode:<6}{m['tokens_per_s']:>11,.0f}{m['ms_per_abstract']:>13.1f}{m['agreement']:>11.4f}"
              f"{f1:>10}{lost:>9}  {ok}")
    print(f"auto picks {record['precision']}")
    registry = Registry()
    entry = registry.resolve(args.model)
    if not args.no_record:
        if entry.registered:
            written = record_speed(entry.name, record, registry)
            print(f"recorded in the manifest of {entry.name}")
            for mode, check in written["modes"].items():
                if mode not in record["modes"]:
                    print(f"kept its earlier {mode} check ({check.get('hardware', '?')}, {check.get('date', '?')}, "
                          f"F1 lost {check.get('f1_loss_points', '?')}); --precision auto runs "
                          f"{written['precision']} here")
        else:
            print(f"{args.model} is not a registry model: nothing recorded (import it first)")
    if args.json:
        write_json_record(args.json, record)
    return 0
