"""How much one input may hold before a reader refuses it (docs/reference/limits.md).

Readers stream their files, so a file's size alone never exhausts memory; what
could is one unit that must be held whole: a line, a document, a PubMed record, a
file read whole. Each has a limit here, far above what real corpora hold (a PubMed
abstract is a few thousand characters, a full-text article rarely over a million), so
that a small hostile file (a gzip of one 4 GB ``<AbstractText>``, a 2 GB line)
stops with one line naming the file instead of taking all the memory.

Readers take ``limits=`` (tests lower them to stay quick); :data:`DEFAULT_LIMITS`
otherwise.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

MiB = 1 << 20


@dataclass(frozen=True)
class ReadLimits:
    """The limits, each a whole number of at least 1 (formats sit below the settings
    layer, so this is a plain dataclass: ``ReadLimits(max_line_bytes=1 << 20)``)."""

    # One line of a line-based format (a JSONL document, a PubTator title or
    # abstract), in bytes as stored.
    max_line_bytes: int = 64 * MiB
    # Tab-separated columns of one line (PubTator mention and relation lines, CoNLL
    # token lines): a line of 64 million tabs would otherwise be 64 million fields.
    max_columns: int = 64
    # One document's text, in characters, in every format. Tagging a document of
    # 10,000,000 characters (one-letter words) aborted at a 3 GB memory cap.
    max_document_chars: int = 2_000_000
    # Spans and relations of one document (PubTator mention lines, BioC annotations).
    max_annotations: int = 1_000_000
    # Formats read whole (BioC XML: its parse takes about ten times the file), in bytes.
    max_whole_file_bytes: int = 64 * MiB
    # PubMed XML: the bytes (after gunzip) of one top-level element (a record, a
    # <DeleteCitation>) or of the text between two of them ...
    max_xml_record_bytes: int = 64 * MiB
    # ... the bytes without an element starting or ending: one text node, attribute,
    # comment or DTD (expat rescans an unfinished token on every block it is fed, so
    # time would grow with the square of its size) ...
    max_xml_token_bytes: int = 8 * MiB
    # ... the elements inside one top-level element ...
    max_xml_record_elements: int = 200_000
    # ... the top-level elements that are not records (<DeleteCitation> and
    # anything unknown, which is skipped) ...
    max_xml_other_elements: int = 10_000
    # ... and the PMIDs all of a file's <DeleteCitation> blocks withdraw.
    max_deleted_pmids: int = 5_000_000
    # Reading a folder holds each file's documents so that a bad file is left out
    # whole; past this much text (characters) a file is checked to its end, then
    # read again as a stream instead.
    max_held_chars: int = 50_000_000

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")


DEFAULT_LIMITS = ReadLimits()


def size_text(n: int) -> str:
    """``64 MiB`` / ``262,144 bytes``: a byte limit as a message says it."""
    return f"{n // MiB} MiB" if n >= MiB and n % MiB == 0 else f"{n:,} bytes"
