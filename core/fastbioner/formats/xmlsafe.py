"""Parsing untrusted XML: no entity expansion, no external fetches (defusedxml), and
errors as one line naming the file and line."""

from __future__ import annotations

import gzip
import re
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path
from typing import IO, Iterator

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from ..errors import InputError
from ..fileio import read_text


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


def parse_xml(path: str | Path) -> XmlFile:
    """Parse an XML file. Truncated or malformed XML, entity declarations (billion
    laughs) and external references raise :class:`InputError`."""
    path = Path(path)
    text = read_text(path)
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


def open_binary(path: str | Path) -> IO[bytes]:
    """A file's bytes, decompressed on the fly when its name ends in ``.gz`` (PubMed's
    baseline and update files are gzipped). Raises :class:`InputError` for a folder or
    a missing file."""
    path = Path(path)
    if path.is_dir():
        raise InputError("is a directory, expected a file", path)
    try:
        return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path) from None


def iterparse_xml(path: str | Path, events: tuple[str, ...] = ("start", "end")
                  ) -> Iterator[tuple[str, ET.Element]]:
    """``(event, element)`` pairs of an XML file (``.gz`` read through gzip) parsed as it
    is read, so memory stays bounded if the caller clears what it has used. Safe as
    :func:`parse_xml` (no entity expansion, no external references); a malformed,
    truncated or refused file raises :class:`InputError` naming the file and line when
    the parser reaches the problem (what came before has been yielded)."""
    path = Path(path)
    with open_binary(path) as fh:
        try:
            yield from SafeET.iterparse(fh, events=events)
        except ET.ParseError as exc:
            line = exc.position[0] if getattr(exc, "position", None) else None
            reason = str(exc).split(":")[0]
            if "no element found" in reason:
                if _blank(path):
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


def _blank(path: Path) -> bool:
    try:
        with open_binary(path) as fh:
            return not fh.read(4096).strip()
    except (OSError, EOFError, zlib.error, InputError):
        return False


def text_of(element: ET.Element | None) -> str:
    """All text inside an element, inline markup (``<i>``, ``<sup>``) flattened."""
    return "" if element is None else "".join(element.itertext())


# Characters XML 1.0 cannot hold (control characters, lone surrogates, U+FFFE/U+FFFF);
# a carriage return it can, but a reader turns it into a line feed, so it is refused
# too rather than read back as another character.
_NOT_XML = re.compile("[^\t\n\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def check_xml_chars(element: ET.Element, doc_id: str, path: str | Path, fmt: str) -> None:
    """InputError naming the document and the field (element, or infon key) when any
    text or attribute under ``element`` holds a character XML cannot hold."""
    from .checks import refuse_chars

    def walk(el: ET.Element, trail: str) -> None:
        name = f"infon {el.get('key')!r}" if el.tag == "infon" else (f"{trail}/{el.tag}" if trail else el.tag)
        for attr, value in el.attrib.items():
            refuse_chars(value, f"{name} attribute {attr!r}", doc_id, path, _NOT_XML, fmt)
        if el.text:
            refuse_chars(el.text, name, doc_id, path, _NOT_XML, fmt)
        for child in el:
            walk(child, name if el.tag != "infon" else trail)

    walk(element, "")


def write_xml(root: ET.Element, fh: IO[str], doctype: str | None = None) -> None:
    """Pretty-print ``root`` to an open text file, with an XML declaration."""
    ET.indent(root)
    fh.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    if doctype:
        fh.write(doctype + "\n")
    fh.write(ET.tostring(root, encoding="unicode"))
    fh.write("\n")
