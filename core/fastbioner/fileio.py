"""Reading text files with clear errors, and writing them atomically."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator

from .errors import InputError


def read_text(path: str | Path) -> str:
    """Read a UTF-8 text file (a BOM is dropped, CRLF and CR become LF).

    Raises :class:`InputError` naming the file, and the line of the first bad byte,
    for a directory, a missing file or bytes that are not UTF-8.
    """
    path = Path(path)
    if path.is_dir():
        raise InputError("is a directory, expected a file", path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                         path, line) from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to a temporary file beside ``path`` and rename it into place only when the
    block ends without error: the output is complete or absent, never half-written."""
    path = Path(path)
    if path.is_dir():
        raise InputError("is a directory, expected a file to write", path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        kwargs = {"encoding": encoding, "newline": ""} if "b" not in mode else {}
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
