"""``fastbioner fetch``: abstracts from PubMed (NCBI E-utilities) by PMIDs or a query,
written to a file in any format ``convert`` writes."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from fastbioner.base.errors import InputError
from fastbioner.net.fetch import (
    API_KEY_ENV, DEFAULT_MAX_RESULTS, EMAIL_ENV, PATIENCE_SECONDS, URL_ENV, fetch_pubmed, parse_pmids,
)
from fastbioner.io.fileio import output_target, read_text
from fastbioner.io.formats import ALIASES, FORMATS, guess_format, write_documents
from fastbioner.base.jobs import Cancelled, CancelToken
from fastbioner.cli.progress import ProgressBar, ctrl_c_cancels

_FORMAT_NAMES = sorted([*FORMATS, *(a for a, t in ALIASES.items() if t)])


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "fetch", help="fetch PubMed abstracts by PMID or query",
        description="Fetch abstracts from PubMed through NCBI E-utilities (esearch, then efetch in "
                    "batches of 200) and write them to a file. NCBI allows 3 requests a second, 10 "
                    f"with an API key: set {API_KEY_ENV} to use yours, and {EMAIL_ENV} to give NCBI a "
                    f"contact address. {URL_ENV} points at another E-utilities server. A fetch gives up "
                    f"when {PATIENCE_SECONDS:g} s pass without a batch of abstracts arriving, tries "
                    "included (docs/reference/limits.md).")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--pmid", nargs="+", action="extend", metavar="ID",
                        help="PMIDs (repeatable; commas also separate them)")
    source.add_argument("--pmids-file", metavar="FILE",
                        help="a file of PMIDs (one or more a line; # starts a comment)")
    source.add_argument("--query", metavar="QUERY", help='a PubMed query, e.g. "cocaine AND seizures[MeSH]"')
    p.add_argument("--max", type=int, default=DEFAULT_MAX_RESULTS, metavar="N",
                   help=f"with --query: fetch the first N matches (default {DEFAULT_MAX_RESULTS}, at most 10000)")
    p.add_argument("--out", required=True, metavar="FILE", help="output file (written completely or not at all)")
    p.add_argument("--format", dest="fmt", metavar="FMT", choices=_FORMAT_NAMES,
                   help="output format (default: from the file name, e.g. .pubtator, .bioc.xml, .jsonl)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=fetch_command)


def check_out(out: Path) -> None:
    """Fail now, not after the download, when ``out`` cannot be written: a folder, a
    device, a parent that is a file (:func:`output_target`), or a folder that cannot be
    created or written in (tried with a temporary file, removed at once)."""
    target = output_target(out)
    folder = next((p for p in [target.parent, *target.parent.parents] if p.exists()), None)
    if folder is None or not folder.is_dir():
        return  # output_target has said what is wrong with a parent that is a file
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{target.name[:100]}.{os.getpid()}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(f"cannot write in {folder}: {exc.strerror or exc}", out) from None
    os.close(fd)
    os.unlink(probe)


def fetch_command(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if args.fmt is None:  # a bad output name fails now, not after the download
        guess_format(out, for_writing=True)
    check_out(out)
    pmids = None
    if args.pmid is not None:
        pmids = parse_pmids(args.pmid)
    elif args.pmids_file is not None:
        pmids = parse_pmids(read_text(args.pmids_file).splitlines(), args.pmids_file)
    token = CancelToken()
    bar = ProgressBar(quiet=args.quiet)
    try:
        with ctrl_c_cancels(token):
            docs = fetch_pubmed(pmids=pmids, query=args.query, max_results=args.max, on_event=bar, cancel=token)
    except Cancelled:
        print(f"fastbioner: cancelled; {out} not written", file=sys.stderr)
        return 130
    finally:
        bar.close()
    if docs.unasked:
        shown = ", ".join(docs.unasked[:10]) + (f" and {len(docs.unasked) - 10} more" if len(docs.unasked) > 10 else "")
        print(f"fastbioner: warning: the server sent {len(docs.unasked)} record(s) not asked for "
              f"(PMID(s) {shown}); left out", file=sys.stderr)
    if pmids is not None:
        found = {d.id for d in docs}
        missing = [p for p in pmids if p not in found]
        if missing:
            shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
            print(f"fastbioner: warning: {len(missing)} PMID(s) not in PubMed: {shown}", file=sys.stderr)
    if not docs:
        what = "none of the PMIDs is in PubMed" if pmids is not None else f"no PubMed record matches {args.query!r}"
        print(f"fastbioner: error: {what}; {out} not written", file=sys.stderr)
        return 1
    report = write_documents(docs, out, args.fmt)
    print(report.summary())
    return 0
