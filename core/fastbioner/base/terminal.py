"""Text made safe for a terminal: the one place that decides what a command may print
of what came from outside (a document id, a label, a file name, a model folder's
manifest, a server's reply).

A terminal acts on control characters: ESC starts a colour change, a cursor move or a
cleared screen, OSC (ESC ] ... BEL) sets the window title or a hyperlink, BEL rings,
and the bidirectional marks (U+202E ...) reorder what follows on screen so that a
name reads as another. :func:`shown` writes each of them as an escape sequence
(``\\x1b``, ``\\u202e``) instead, so the user sees that they are there and nothing
acts on them. Printable text of any script is left alone.
"""

from __future__ import annotations

import os
import re

# C0 and C1 controls, DEL, and the marks that reorder text on screen (Arabic letter
# mark, LRM/RLM, the embeddings and overrides, the isolates), plus the line and
# paragraph separators that end a line in some terminals.
_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(value: object, limit: int | None = None) -> str:
    """``value`` as text fit to print: every control character (line breaks and tabs
    included) and every bidirectional mark escaped; cut to ``limit`` characters
    (``…`` added) when given. Paths and bytes are decoded as the file system does."""
    if isinstance(value, (bytes, os.PathLike)):
        text = os.fsdecode(value)
    else:
        text = value if isinstance(value, str) else str(value)
    # A lone surrogate (an undecodable byte of a file name) cannot be encoded on output.
    text = text.encode("utf-8", "backslashreplace").decode("utf-8") if _has_surrogate(text) else text
    text = _CONTROL_RE.sub(_escape, text)
    return text if limit is None or len(text) <= limit else text[:limit] + "…"


def shown_lines(text: str) -> str:
    """A message of several lines (``\\n`` between them, put there by the program)
    with each line passed through :func:`shown`: the line breaks stay, anything else
    a terminal would act on is escaped."""
    return "\n".join(shown(line) for line in str(text).split("\n"))


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
