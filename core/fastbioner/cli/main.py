"""Entry point of the ``fastbioner`` console script.

Each subcommand module has ``register(subparsers)`` that adds its parser(s) with
``set_defaults(func=...)``; ``func(args) -> int`` returns the exit status. Errors
the user can act on (:class:`FastBioNERError`) print as one line, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .. import __version__
from ..errors import FastBioNERError

# Modules in the order their subcommands appear in ``--help``.
COMMAND_MODULES = [
    "fastbioner.cli.convert",   # convert, stats
    "fastbioner.cli.fetch",     # fetch (PubMed)
    "fastbioner.cli.train",     # train-teacher, evaluate
    "fastbioner.cli.distill",   # distill
    "fastbioner.cli.tag",       # tag
    "fastbioner.cli.tag_corpus",  # tag-corpus
    "fastbioner.cli.models",    # models list|show|import|export|delete
    "fastbioner.cli.compact",   # compact
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastbioner",
        description="Biomedical NER: convert corpora, fine-tune teachers, distil students, tag text.")
    parser.add_argument("--version", action="version", version=f"fastbioner {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # a command group not built yet
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except FastBioNERError as exc:
        print(f"fastbioner: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fastbioner: cancelled", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
