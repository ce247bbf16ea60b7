"""Entry point of the ``fastbioner`` console script.

Each subcommand module has ``register(subparsers)`` that adds its parser(s) with
``set_defaults(func=...)``; ``func(args) -> int`` returns the exit status. Errors
the user can act on (:class:`FastBioNERError`) print as one line, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import signal
import sys

from fastbioner import __version__
from fastbioner.base.errors import FastBioNERError
from fastbioner.base.terminal import shown
from fastbioner.base.threads import wait_passively

# Modules in the order their subcommands appear in ``--help``.
COMMAND_MODULES = [
    "fastbioner.cli.convert",   # convert, stats
    "fastbioner.cli.agree",     # agree (annotators' agreement)
    "fastbioner.cli.fetch",     # fetch (PubMed)
    "fastbioner.cli.train",     # train-teacher, evaluate
    "fastbioner.cli.distill",   # distill
    "fastbioner.cli.tag",       # tag
    "fastbioner.cli.tag_corpus",  # tag-corpus
    "fastbioner.cli.rank",      # rank (review queue)
    "fastbioner.cli.finetune",  # fine-tune
    "fastbioner.cli.models",    # models list|show|import|export|delete
    "fastbioner.cli.compact",   # compact
    "fastbioner.cli.transfer",  # transfer-embeddings, train-vocabulary (DRET)
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


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: unwinds like Ctrl-C, so every ``atomic_write`` on the
    way removes its temporary file (the default action would kill the process and leave
    ``.NAME.*.tmp`` behind)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame) -> None:
    for sig in _TERMINATING:  # a second signal must not interrupt the clean-up
        signal.signal(sig, signal.SIG_IGN)
    raise Terminated(signum)


_TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def _shown_path(name: object) -> str:
    """A file name fit for one terminal line: control characters escaped, the middle of
    a very long name elided."""
    text = shown(name)
    return text if len(text) <= 240 else f"{text[:120]}...{text[-100:]}"


def _write_refused(exc: BaseException) -> str | None:
    """The system's refusal to write (a full disk, a quota, a read-only file system) as
    safetensors reports it: a SafetensorError carrying the OS error's text, not an
    OSError, from every command that saves weights (compact, train-teacher, distill,
    fine-tune). Matched by name: this module imports neither safetensors nor torch."""
    if type(exc).__name__ != "SafetensorError":
        return None
    found = re.search(r"I/O error: (.+)", str(exc))
    return found.group(1).strip() if found else None


def main(argv: list[str] | None = None) -> int:
    # Before any command imports torch (OpenMP reads it once, as it loads): threads
    # with nothing to do sleep instead of spinning against other jobs' (issue 69).
    wait_passively()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    previous = {}
    try:
        for sig in _TERMINATING:
            previous[sig] = signal.signal(sig, _terminate)
    except ValueError:  # not the main thread (a caller's thread): leave signals alone
        pass
    try:
        return int(args.func(args) or 0)
    except FastBioNERError as exc:
        print(f"fastbioner: error: {shown(exc)}", file=sys.stderr)  # one line, whatever it quotes
        return 2
    except KeyboardInterrupt:
        print("fastbioner: cancelled", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `fastbioner stats ... | head`: the reader left, nothing to say
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Terminated as exc:
        print(f"fastbioner: terminated by signal {exc.signum}; no partial output left", file=sys.stderr)
        return 128 + exc.signum
    except OSError as exc:
        # A path the system refuses to look up (a name too long, a link loop) reaches
        # pathlib calls all over the commands; one line naming it, not a traceback.
        # Errors without a file name are not the user's paths: they stay tracebacks.
        if exc.filename is None:
            raise
        print(f"fastbioner: error: {_shown_path(exc.filename)}: {shown(exc.strerror or exc)}", file=sys.stderr)
        return 2
    except Exception as exc:
        refused = _write_refused(exc)
        if refused is None:
            raise
        print(f"fastbioner: error: cannot save the model's weights there ({shown(refused)})", file=sys.stderr)
        return 2
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_and_exit() -> None:  # pragma: no cover - the console script and `python -m`
    code = main()
    # A rank of a torchrun job ends without the interpreter's teardown (see exit_process).
    # The exit path imports nothing: a SIGTERM during torch's import leaves torch half
    # initialised, and importing fastbioner.train.distributed (which imports torch) then fails.
    distributed = sys.modules.get("fastbioner.train.distributed")
    if distributed is not None and hasattr(distributed, "exit_process"):
        distributed.exit_process(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    run_and_exit()
