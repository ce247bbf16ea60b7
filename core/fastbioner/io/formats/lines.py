"""A text file's lines as a stream, for the line-based readers (PubTator, JSONL,
MEDLINE, CoNLL, plain text): memory holds one line, never the file, and a pipe or
``/dev/stdin`` is read once as it comes.

The lines are what :func:`fastbioner.io.fileio.read_text` would give, numbered the same
way (a UTF-8 BOM dropped, CRLF and a lone CR read as line breaks); problems are one
:class:`~fastbioner.base.errors.InputError` naming the file and line: not UTF-8 (UTF-16
and UTF-32 text, with or without a byte-order mark, told apart and refused with how
to convert it), or a line over :attr:`ReadLimits.max_line_bytes`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from fastbioner.base.errors import InputError
from fastbioner.io.fileio import encoding_problem, open_input
from fastbioner.io.formats.limits import DEFAULT_LIMITS, ReadLimits, size_text


def text_lines(path: str | Path, limits: ReadLimits | None = None) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` for every line of ``path``, without its line break."""
    path = Path(path)
    cap = (limits or DEFAULT_LIMITS).max_line_bytes
    with open_input(path) as fh:
        try:
            head = fh.peek(4096)[:4096]
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", path) from None
        problem = encoding_problem(head)
        if problem:
            raise InputError(problem, path)
        lineno, offset, first = 0, 0, True
        while True:
            try:
                raw = fh.readline(cap + 1)
            except OSError as exc:
                raise InputError(f"cannot read: {exc.strerror or exc}", path, lineno + 1) from None
            if not raw:
                return
            ended = raw.endswith(b"\n")
            body = raw[:-1] if ended else raw
            if len(body) > cap:
                raise InputError(f"line longer than {size_text(cap)} (a limit, see docs/reference/limits.md): "
                                 f"not a text file of this format?", path, lineno + 1)
            base = offset
            offset += len(raw)
            if first:
                first = False
                if body.startswith(b"\xef\xbb\xbf"):
                    body, base = body[3:], 3
            if ended and body.endswith(b"\r"):
                body = body[:-1]
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not UTF-8 text (byte 0x{body[exc.start]:02x} at offset {base + exc.start})",
                                 path, lineno + 1 + body.count(b"\r", 0, exc.start)) from None
            # A lone CR is a line break too (old Mac files), as read_text reads it.
            for part in text.split("\r") if "\r" in text else (text,):
                lineno += 1
                yield lineno, part
