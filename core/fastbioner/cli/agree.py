"""``fastbioner agree A B [C ...]``: how far annotators of the same documents agree.

A light command: it reads files and counts, never importing torch or transformers.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fastbioner.curate.agreement import (
    KIND_NAMES,
    KINDS,
    MATCHES,
    PairAgreement,
    compare_documents,
    fleiss_over,
    match_documents,
)
from fastbioner.io.documents import Document
from fastbioner.base.errors import InputError
from fastbioner.io.fileio import check_not_an_input, output_target, write_json_record
from fastbioner.io.formats import read_documents
from fastbioner.cli.output import echo


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "agree", help="agreement between annotators of the same documents",
        description="Compare each annotator's version of the same documents with the reference A: "
                    "mention-level precision, recall and F1 of B against A per type and overall, "
                    "token-level Cohen's kappa over the BIO tags, and the differences by kind; with "
                    "three or more files, Fleiss' kappa too. Documents are matched by id (by position "
                    "for BIO files without -DOCSTART-); documents whose text differs are reported, "
                    "not compared. Any format the project reads.")
    p.add_argument("files", nargs="+", metavar="FILE", help="A (the reference), then B, C ...")
    p.add_argument("--match", default="exact", choices=MATCHES,
                   help="exact: same start, end and type (default); overlap: overlapping, same type")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the figures as JSON")
    p.set_defaults(func=run_agree)


def _read(path: str) -> list[Document]:
    if Path(path).is_dir():
        raise InputError("is a folder: give each annotator's file", path)
    docs = list(read_documents(path))
    if not docs:
        raise InputError("no documents", path)
    return docs


def pair_lines(pair: PairAgreement) -> list[str]:
    """The text a pair prints: per type, overall, kappa, the differences."""
    m = pair.matching
    lines = [f"{pair.name_b} against {pair.name_a} ({pair.match} match; {len(m.pairs)} document(s) compared"
             f"{', by position' if m.by_position else ''})"]
    width = max([len("overall"), *map(len, pair.per_type)])
    for typ, c in pair.per_type.items():
        lines.append(f"{typ:<{width}}  P {c.precision:.4f}  R {c.recall:.4f}  F1 {c.f1:.4f}"
                     f"  (A {c.n_a}, B {c.n_b})")
    c = pair.overall
    lines.append(f"{'overall':<{width}}  P {c.precision:.4f}  R {c.recall:.4f}  F1 {c.f1:.4f}"
                 f"  (A {c.n_a}, B {c.n_b})")
    lines.append(f"kappa {pair.kappa:.4f}  (Cohen's, over the BIO tags of {pair.tokens} tokens)")
    counts = pair.difference_counts()
    lines.append("disagreements: " + ", ".join(f"{KIND_NAMES[k]} {counts[k]}" for k in KINDS))
    for what, ids in (("compared with their white space aligned", m.aligned),
                      ("not compared, their text differs", m.text_differs),
                      (f"only in {pair.name_a}", m.only_in_a), (f"only in {pair.name_b}", m.only_in_b)):
        if ids:
            shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
            lines.append(f"{len(ids)} document(s) {what}: {shown}")
    return lines


def run_agree(args: argparse.Namespace) -> int:
    if len(args.files) < 2:
        raise InputError("agree needs two files or more: A (the reference) and B ...")
    if args.json:
        check_not_an_input(Path(args.json), [Path(f) for f in args.files])
        output_target(args.json)
    docs = [_read(f) for f in args.files]
    a_name = args.files[0]
    pairs = []
    for name, other in zip(args.files[1:], docs[1:]):
        matching = match_documents(docs[0], other, a_name, name)
        if not matching.pairs:
            why = (f"; {len(matching.text_differs)} share an id but not the text" if matching.text_differs
                   else "")
            raise InputError(f"no document in common with {a_name} (matched by id){why}", name)
        pairs.append(compare_documents(matching, args.match, a_name, name))
    out: list[str] = []
    for pair in pairs:
        out.extend(pair_lines(pair))
        out.append("")
    fleiss = None
    if len(docs) > 2:
        kappa, tokens, n_docs = fleiss_over(docs, args.files)
        fleiss = {"kappa": kappa, "tokens": tokens, "documents": n_docs, "annotators": len(docs)}
        out.append(f"Fleiss' kappa {kappa:.4f}  ({len(docs)} annotators, {tokens} tokens of {n_docs} "
                   f"document(s) all files hold)")
    echo("\n".join(out).rstrip("\n"))  # ids and types come from the files: escaped
    if args.json:
        record = {"files": args.files, "match": args.match, "pairs": [p.to_dict() for p in pairs],
                  "fleiss": fleiss}
        write_json_record(args.json, record)
    return 0
