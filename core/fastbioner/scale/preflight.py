"""What a corpus run settles before it starts: its inputs expanded and put in PubMed's
order, object-store paths refused, the output folder claimed for this run alone, and
the torch threads it takes when none are given. Kept apart from the run itself
(:mod:`.corpus`), which plans, tags and writes."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from filelock import FileLock, Timeout

from fastbioner.base.errors import InputError
from fastbioner.base.threads import default_threads  # noqa: F401 - a corpus run's threads (issue 69)
from fastbioner.io.formats import format_for_path
from fastbioner.scale.shards import pubmed_file_number
from fastbioner.scale.state import STATE_DIR


def refuse_object_store(value: str | Path, what: str) -> None:
    """``s3://``, ``gs://`` ... are not folders here: one line, before anything is made
    (a local folder named ``s3:`` would otherwise be created)."""
    text = str(value)
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise InputError(f"object-store {what} ({scheme}://) are not supported: tag into a local or "
                         f"mounted folder, then copy it (e.g. aws s3 sync)", text)


def expand_inputs(inputs: Sequence[str | Path]) -> list[str]:
    """Files as given, folders as their document files sorted by name; hidden files
    skipped. PubMed files are put in file-number order (oldest first, update files
    after the baseline whatever order the folders were given in); other files keep
    the order given, after them."""
    out: list[str] = []
    for item in inputs:
        refuse_object_store(item, "inputs")
        p = Path(item)
        if p.is_dir():
            out.extend(str(f) for f in sorted(p.rglob("*"))
                       if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts)
                       and format_for_path(f) is not None)
        elif p.is_file():
            out.append(str(p))
        else:
            raise InputError("no such file", p)
    seen: set[str] = set()
    unique = []
    for name in out:  # once each
        real = os.path.realpath(name)
        if real not in seen:
            seen.add(real)
            unique.append(name)
    out = unique
    # (0, 0) never comes into play: the files without a number are left out here
    numbered = sorted((p for p in out if pubmed_file_number(p) is not None),
                      key=lambda p: pubmed_file_number(p) or (0, 0))
    return numbered + [p for p in out if pubmed_file_number(p) is None]


@contextmanager
def folder_lock(out_dir: Path) -> Iterator[None]:
    """One run per folder at a time: a second is refused with one line (the system's
    lock, released when a process dies, so a crash never leaves it held)."""
    lock_dir = out_dir / STATE_DIR
    try:
        lock_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the folder: {exc.strerror or exc}", out_dir) from None
    lock = FileLock(lock_dir / "lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise InputError("another tag-corpus run is updating this folder; wait for it to end",
                         out_dir) from None
    try:
        yield
    finally:
        lock.release()
