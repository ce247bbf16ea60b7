"""``fastbioner convert IN OUT`` and ``fastbioner stats FILE...``."""

from __future__ import annotations

import argparse
import contextlib
import warnings
from pathlib import Path
from typing import Iterator

from fastbioner.io.corpus_stats import corpus_stats
from fastbioner.io.documents import Document
from fastbioner.base.errors import InputError, InputWarning
from fastbioner.io.fileio import check_not_an_input
from fastbioner.io.formats import (
    ALIASES,
    FORMATS,
    distinct_inputs,
    format_module,
    guess_format,
    read_any,
    read_documents,
    write_documents,
)
from fastbioner.io.labels import SCHEMES
from fastbioner.cli.output import echo, echo_lines, report_skipped, warn

_FORMAT_NAMES = sorted([*FORMATS, *(a for a, t in ALIASES.items() if t)])


def register(subparsers: argparse._SubParsersAction) -> None:
    conv = subparsers.add_parser(
        "convert", help="convert documents between formats",
        description="Convert between CoNLL/BIO, PubTator, BioC XML, PubMed XML, MEDLINE, JSONL and "
                    "plain text. Formats are guessed from the file names (and content) when not given. "
                    "IN may be a folder: every document file in it is read, bad files are reported.")
    conv.add_argument("input", metavar="IN", help="input file or folder")
    conv.add_argument("output", metavar="OUT", help="output file (written completely or not at all)")
    conv.add_argument("--from", dest="src", metavar="FMT", choices=_FORMAT_NAMES, help="input format")
    conv.add_argument("--to", dest="dst", metavar="FMT", choices=_FORMAT_NAMES, help="output format")
    conv.add_argument("--scheme", default="IOB2", type=str.upper, choices=SCHEMES,
                      help="tagging scheme of BIO output (default IOB2)")
    conv.add_argument("--in-scheme", default="auto",
                      help="tagging scheme of BIO input: IOB1, IOB2, IOBES or auto (default)")
    conv.add_argument("--on-invalid", default="repair", choices=["repair", "error", "keep"],
                      help="invalid BIO input (I- after O): repair with a warning (default), stop, or keep")
    conv.add_argument("--map-label", action="append", default=[], metavar="OLD=NEW",
                      help="rename an entity type, e.g. SpecificDisease=Disease (repeatable)")
    conv.set_defaults(func=run_convert)

    stats = subparsers.add_parser(
        "stats", help="count documents, sentences, tokens and entities",
        description="Count documents, sentences, tokens, entities per type, and spans a BIO export "
                    "cannot hold (off token boundaries, overlapping).")
    stats.add_argument("files", nargs="+", metavar="FILE", help="document files or folders")
    stats.add_argument("--from", dest="src", metavar="FMT", choices=_FORMAT_NAMES, help="input format")
    stats.set_defaults(func=run_stats)


@contextlib.contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """Input warnings print as one line each (no Python source line under them)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InputWarning)
        yield
    for w in caught:
        if issubclass(w.category, InputWarning):
            warn(w.message)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def _label_map(pairs: list[str]) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old or not new:
            raise InputError(f"--map-label expects OLD=NEW, got {pair!r}")
        mapping[old] = new
    return mapping


def _renamed(docs: Iterator[Document], mapping: dict[str, str]) -> Iterator[Document]:
    for doc in docs:
        if mapping:
            doc.spans = [s.with_(label=mapping.get(s.label, s.label)) for s in doc.spans]
        yield doc


def _read(path: Path, fmt: str | None, errors: list[InputError], deleted: list[str] | None = None,
          **options) -> Iterator[Document]:
    """Documents of a file or folder; per-file errors of a folder into ``errors``, and the
    PMIDs that PubMed update files withdraw (``<DeleteCitation>``) into ``deleted``."""
    reader = read_any([path], fmt, **options) if path.is_dir() \
        else read_documents(path, fmt, **options)
    yield from reader
    errors.extend(getattr(reader, "errors", ()))
    if deleted is not None:
        deleted.extend(getattr(reader, "deleted", ()))


def _not_empty(docs: Iterator[Document], src: Path) -> Iterator[Document]:
    """The documents; InputError at the end when there were none, raised inside the
    writer so that no empty output (which no reader takes back) is left."""
    n = 0
    for doc in docs:
        n += 1
        yield doc
    if n == 0:
        raise InputError("no documents found; nothing written", src)


def run_convert(args: argparse.Namespace) -> int:
    src, out = Path(args.input), Path(args.output)
    check_not_an_input(out, [src])  # nor inside a folder read: `convert in/ in/a.pubtator` is refused
    options = {}
    errors: list[InputError] = []
    deleted: list[str] = []
    with _warnings_as_lines():
        reading_conll = (format_module(args.src).NAME == "conll" if args.src
                         else src.is_file() and guess_format(src) == "conll")
        if reading_conll:
            options = {"on_invalid": args.on_invalid, "scheme": args.in_scheme}
        docs = _not_empty(_renamed(_read(src, args.src, errors, deleted, **options),
                                   _label_map(args.map_label)), src)
        write_options = {"scheme": args.scheme} if _writes_conll(out, args.dst) else {}
        try:
            report = write_documents(docs, out, args.dst, **write_options)
        finally:  # the files skipped are said even when nothing could be written
            status = report_skipped(errors)
    echo(report.summary())
    if deleted:
        listed = ", ".join(deleted[:10]) + (", ..." if len(deleted) > 10 else "")
        echo(f"{len(deleted)} PMID(s) deleted by <DeleteCitation> (a PubMed update file withdraws "
             f"citations of earlier files; tag-corpus drops them across files): {listed}")
    for doc_id, span in report.off_boundary[:20]:
        echo(f"  off token boundaries: document {doc_id}, {span.label} at {span.start}..{span.end}", err=True)
    if len(report.off_boundary) > 20:
        echo(f"  ... and {len(report.off_boundary) - 20} more", err=True)
    return status


def _writes_conll(path: Path, fmt: str | None) -> bool:
    name = format_module(fmt).NAME if fmt else guess_format(path, for_writing=True)
    return name == "conll"


def run_stats(args: argparse.Namespace) -> int:
    errors: list[InputError] = []
    files, twice = distinct_inputs(args.files)
    for path in twice:
        warn(f"{path} given twice (or inside a folder given): counted once")
    with _warnings_as_lines():
        def docs() -> Iterator[Document]:
            for name in files:
                yield from _read(Path(name), args.src, errors)
        stats = corpus_stats(docs())
    status = report_skipped(errors)
    echo_lines(stats.lines())
    return status
