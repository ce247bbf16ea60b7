"""Parsing untrusted XML: no entity expansion, no external fetches (defusedxml), and
errors as one line naming the file and line."""

from __future__ import annotations

import gzip
import io
import re
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator, cast

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from fastbioner.base.errors import InputError
from fastbioner.io.fileio import open_input, read_text
from fastbioner.io.formats.checks import refuse_chars
from fastbioner.io.formats.limits import size_text


class XmlFile:
    """A parsed XML file that can name the line of a problem found after parsing
    (ElementTree keeps no line numbers, so the line is found by searching the text)."""

    def __init__(self, path: Path, text: str, root: ET.Element):
        self.path, self.text, self.root = path, text, root

    def error(self, message: str, *landmarks: str) -> InputError:
        """An :class:`InputError` at the line where ``landmarks`` occur one after the
        other (for example a document's ``<id>`` then an annotation's ``id=``)."""
        pos, found = 0, None
        for mark in landmarks:
            hit = self.text.find(mark, pos)
            if hit < 0:  # attributes may be quoted either way
                hit = self.text.find(mark.replace("'", '"'), pos)
            if hit < 0:
                break
            pos = found = hit
        line = self.text.count("\n", 0, found) + 1 if found is not None else None
        return InputError(message, self.path, line)


def parse_xml(path: str | Path, max_bytes: int | None = None) -> XmlFile:
    """Parse an XML file (at most ``max_bytes``, see :func:`fastbioner.io.fileio.read_text`).
    Truncated or malformed XML, entity declarations (billion laughs) and external
    references raise :class:`InputError`."""
    path = Path(path)
    text = read_text(path, max_bytes)
    if not text.strip():
        raise InputError("empty file: no XML", path)
    try:
        return XmlFile(path, text, SafeET.fromstring(text))
    except ET.ParseError as exc:
        line = exc.position[0] if getattr(exc, "position", None) else None
        reason = str(exc).split(":")[0]
        if "no element found" in reason:
            reason = "XML ends early (truncated file?)"
        raise InputError(f"not well-formed XML: {reason}", path, line) from None
    except DefusedXmlException as exc:
        raise InputError(f"XML with entity declarations or external references is refused "
                         f"({type(exc).__name__})", path) from None


class _GzipInput(gzip.GzipFile):
    """A gzip stream that closes the file under it too."""

    def close(self) -> None:
        # The file open_binary gave it: typeshed knows only the read or write half.
        raw = cast("IO[bytes] | None", self.fileobj)
        try:
            super().close()
        finally:
            if raw is not None:
                raw.close()


def open_binary(path: str | Path) -> io.BufferedIOBase:
    """A file's bytes, decompressed on the fly when its name ends in ``.gz`` (PubMed's
    baseline and update files are gzipped). Raises :class:`InputError` for a folder,
    a missing file or a device (:func:`fastbioner.io.fileio.open_input`); a pipe is read
    once."""
    path = Path(path)
    raw = open_input(path)
    return _GzipInput(fileobj=raw, mode="rb") if path.name.lower().endswith(".gz") else raw


class ByteBudget:
    """The bytes a parser reads (after gunzip), refused once more than ``limit`` of
    them pass without a :meth:`mark`: what a streaming reader holds between two marks
    (one record, or one giant text node the parser accumulates before any event
    reaches the reader) stays bounded, whatever the file declares. ``what`` is set by
    the reader to name the place in the message.

    ``token_limit``: at most this many bytes without any event (:meth:`event`). One
    attribute, comment or DTD of many megabytes is one token to expat, which scans an
    unfinished token again from its start on every block fed: time grows with its
    square (300 MB took over 90 s), so such a token is cut short instead. Blocks are
    fed 64 KiB at a time (16 KiB would make that rescanning four times as costly)."""

    def __init__(self, fh: io.BufferedIOBase, path: Path, limit: int, token_limit: int | None = None):
        self.fh, self.path, self.limit = fh, path, limit
        self.token_limit = token_limit if token_limit is not None else limit
        self.pos = self.marked = self.evented = 0
        self.what = "the file"
        self.blank = True  # only white space read so far

    def mark(self) -> None:
        self.marked = self.evented = self.pos

    def event(self) -> None:
        self.evented = self.pos

    def read(self, n: int = -1) -> bytes:
        data = self.fh.read(max(n, 1 << 16) if n is not None and n > 0 else 1 << 16)
        self.pos += len(data)
        if self.blank and data.strip():
            self.blank = False
        if self.pos - self.marked > self.limit:
            raise InputError(f"{self.what} holds more than {size_text(self.limit)} of XML (a limit, see "
                             f"docs/reference/limits.md): refused", self.path)
        if self.pos - self.evented > self.token_limit:
            raise InputError(f"{self.what} holds more than {size_text(self.token_limit)} of XML without an "
                             f"element starting or ending (one text, attribute, comment or DTD that large; "
                             f"a limit, see docs/reference/limits.md): refused", self.path)
        return data


def iterparse_xml(path: str | Path, events: tuple[str, ...] = ("start", "end"),
                  budget: int | None = None, on_open: Callable[[ByteBudget], None] | None = None,
                  token_budget: int | None = None) -> Iterator[tuple[str, ET.Element]]:
    """``(event, element)`` pairs of an XML file (``.gz`` read through gzip) parsed as it
    is read, so memory stays bounded if the caller clears what it has used. Safe as
    :func:`parse_xml` (no entity expansion, no external references); a malformed,
    truncated or refused file raises :class:`InputError` naming the file and line when
    the parser reaches the problem (what came before has been yielded).

    ``budget``: at most this many bytes between two marks of the :class:`ByteBudget`
    handed to ``on_open`` (default: the whole file, no limit); ``token_budget``: at
    most this many between two events the caller notes (default: ``budget``)."""
    path = Path(path)
    with open_binary(path) as fh:
        source = ByteBudget(fh, path, budget if budget is not None else 1 << 62, token_budget)
        if on_open is not None:
            on_open(source)
        try:
            yield from SafeET.iterparse(source, events=events)
        except ET.ParseError as exc:
            line = exc.position[0] if getattr(exc, "position", None) else None
            reason = str(exc).split(":")[0]
            if "no element found" in reason:
                if source.blank:
                    raise InputError("empty file: no XML", path) from None
                reason = "XML ends early (truncated file?)"
            raise InputError(f"not well-formed XML: {reason}", path, line) from None
        except DefusedXmlException as exc:
            raise InputError(f"XML with entity declarations or external references is refused "
                             f"({type(exc).__name__})", path) from None
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            reason = "gzip data ends early (truncated file?)" if isinstance(exc, EOFError) else \
                f"not valid gzip data ({exc})"
            raise InputError(reason, path) from None
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", path) from None


def text_of(element: ET.Element | None) -> str:
    """All text inside an element, inline markup (``<i>``, ``<sup>``) flattened."""
    return "" if element is None else "".join(element.itertext())


# Characters XML 1.0 cannot hold (control characters, lone surrogates, U+FFFE/U+FFFF).
# A carriage return it holds as the reference ``&#13;`` (a raw one a reader turns into a
# line feed): write_xml_stream writes it so, and it reads back as itself. One CR in one
# document of a tagged corpus once aborted the whole export.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def check_xml_chars(element: ET.Element, doc_id: str, path: str | Path, fmt: str) -> None:
    """InputError naming the document and the field (element, or infon key) when any
    text or attribute under ``element`` holds a character XML cannot hold."""
    def walk(el: ET.Element, trail: str) -> None:
        name = f"infon {el.get('key')!r}" if el.tag == "infon" else (f"{trail}/{el.tag}" if trail else el.tag)
        for attr, value in el.attrib.items():
            refuse_chars(value, f"{name} attribute {attr!r}", doc_id, path, _NOT_XML, fmt)
        if el.text:
            refuse_chars(el.text, name, doc_id, path, _NOT_XML, fmt)
        for child in el:
            walk(child, name if el.tag != "infon" else trail)

    walk(element, "")


def write_xml_stream(fh: IO[str], root_tag: str, children: Iterable[ET.Element],
                     doctype: str | None = None) -> None:
    """A pretty-printed XML file, with an XML declaration, of a root element holding
    ``children``, written one child at a time as they come: a writer given a stream of documents holds one
    of them, not the whole collection (``tag --format bioc`` of any size)."""
    fh.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    if doctype:
        fh.write(doctype + "\n")
    fh.write(f"<{root_tag}")
    empty = True
    for child in children:
        if empty:
            fh.write(">")
            empty = False
        ET.indent(child, level=1)
        child.tail = None
        # ElementTree writes a CR of an attribute as &#13; but one of text as it is.
        fh.write("\n  " + ET.tostring(child, encoding="unicode").replace("\r", "&#13;"))
    fh.write(" />\n" if empty else f"\n</{root_tag}>\n")
