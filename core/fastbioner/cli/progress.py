"""A terminal progress bar driven by the job protocol, and Ctrl-C as a clean cancel."""

from __future__ import annotations

import contextlib
import signal
import sys
from typing import Any, Callable, Iterator

from tqdm import tqdm

from fastbioner.base.jobs import CancelToken, Cancelled, JobState, ProgressEvent
from fastbioner.cli.output import echo, echo_lines, report_skipped, warn


class ProgressBar:
    """``on_event`` for a job: one tqdm bar per stage, losses and metrics as postfix."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self._bar: tqdm | None = None
        self._stage: str | None = None

    def __call__(self, event: ProgressEvent) -> None:
        if self.quiet:
            return
        if event.stage != self._stage or self._bar is None:
            self.close()
            self._stage = event.stage
            # initial: a resumed job starts at its step, so the rate counts only new steps
            self._bar = tqdm(total=event.total or None, desc=event.stage, unit="step",
                             initial=event.step, file=sys.stderr, dynamic_ncols=True, leave=True)
        bar = self._bar
        if event.total and bar.total != event.total:
            bar.total = event.total
        bar.n = event.step
        post = {k: f"{v:.4g}" for k, v in event.losses.items()}
        for k, v in event.metrics.items():
            if isinstance(v, (int, float)):
                post[k] = f"{v:.4g}"
        if post:
            bar.set_postfix(post, refresh=False)
        bar.refresh()
        if event.finished:
            self.close()
            # A failure is the command's error line, printed once by main (not here too).
            if event.message and event.message != "done" and event.state is not JobState.FAILED:
                echo(event.message, err=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@contextlib.contextmanager
def ctrl_c_cancels(token: CancelToken) -> Iterator[CancelToken]:
    """While inside, the first Ctrl-C sets ``token`` (the job stops at its next
    check and cleans up); a second one interrupts at once."""
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum, frame):
        if token.cancelled:
            signal.signal(signal.SIGINT, previous)
            raise KeyboardInterrupt
        print("\nCancelling (press Ctrl-C again to abort)...", file=sys.stderr)
        token.cancel()

    try:
        signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield token
        return
    try:
        yield token
    finally:
        signal.signal(signal.SIGINT, previous)


def run_writing_job(out, quiet: bool, work: Callable[[ProgressBar, CancelToken], Any]) -> int:
    """Run a command's job that writes ``out`` (``work(on_event, cancel)``, returning a
    summary with ``lines()``) under a progress bar, the first Ctrl-C cancelling it:
    prints the summary and returns the exit status (130 when cancelled: nothing written)."""
    token = CancelToken()
    bar = ProgressBar(quiet=quiet)
    try:
        with ctrl_c_cancels(token):
            summary = work(bar, token)
    except Cancelled:
        echo(f"fastbioner: cancelled; {out} not written", err=True)
        return 130
    finally:
        bar.close()
    # What the summary says of its input (an input given twice, a file of a folder left
    # out) goes to stderr, as every command says it; ids and names escaped.
    for note in getattr(summary, "notes", ()):
        warn(note)
    status = report_skipped(getattr(summary, "errors", ()))
    echo_lines(summary.lines())
    return status
