"""CoNLL / BIO: one token per line (``token<TAB>tag``, other columns kept between
them), a blank line between sentences, ``-DOCSTART-`` lines between documents.

Two views of the same file:

- :func:`read_tagged_sentences` gives sentences of words and IOB2 tags, what a
  trainer needs;
- :func:`read` / :func:`write` give documents. A document's text is its tokens
  joined by single spaces, its sentences joined by newlines, and each sentence is a
  ``Passage(kind="sentence")`` (which :func:`fastbioner.io.text.document_sentences`
  splits at spaces rather than re-tokenizing), so BIO -> documents -> BIO is exact.
  A ``-DOCSTART-`` line opens a document whose id is the line's text after the
  marker; a file without them gives one document per sentence block, with id
  ``<file stem>:<line>``.

Invalid tag sequences (``I-`` after ``O`` or after another type) are handled as the
caller chooses: ``on_invalid="repair"`` (default: the ``I-`` opens an entity, one
:class:`~fastbioner.base.errors.InputWarning` per file names the lines), ``"error"``
(:class:`~fastbioner.base.errors.InputError` at the first such line) or ``"keep"``.
An unknown tag (``X``, ``B-``) is always an error naming file and line.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Literal

from fastbioner.io.documents import Document, Passage, Source
from fastbioner.base.errors import InputError, InputWarning
from fastbioner.io.fileio import atomic_write
from fastbioner.io.labels import (
    TaggedSentence, detect_scheme, document_tagged_sentences, from_iob2, invalid_iob2_positions,
    normalize_scheme, repair_iob2, split_tag, tags_to_spans, to_iob2,
)
from fastbioner.io.text import sentences_in_passage
from fastbioner.io.formats.checks import refuse_chars
from fastbioner.io.formats.limits import DEFAULT_LIMITS, ReadLimits
from fastbioner.io.formats.lines import text_lines
from fastbioner.io.formats.report import WriteReport

NAME = "conll"
EXTENSIONS = (".conll", ".bio", ".iob", ".tsv", ".conllu")
DOCSTART = "-DOCSTART-"

OnInvalid = Literal["repair", "error", "keep"]

__all__ = ["TaggedSentence", "read_tagged_sentences", "read", "write", "sentences_to_document"]


@dataclass
class _Block:
    """A sentence as it stands in the file, before scheme conversion."""

    words: list[str]
    tags: list[str]
    extra: list[tuple[str, ...]]
    lines: list[int]


def _items(path: Path, limits: ReadLimits) -> Iterator[tuple[str, tuple[str, int] | _Block]]:
    """``("header", (docstart line, line number))`` and ``("block", _Block)`` in file
    order, read as a stream: memory holds one sentence, and a document (a
    ``-DOCSTART-`` group, or a sentence in a file without them) may hold at most
    ``limits.max_document_chars`` characters."""
    cur: _Block | None = None
    headers = 0
    doc_chars = 0
    for lineno, line in text_lines(path, limits):
        if not line.strip():
            if cur is not None:
                yield "block", cur
                cur = None
            if not headers:  # each sentence is a document of its own
                doc_chars = 0
            continue
        if line.startswith(DOCSTART):
            if cur is not None:
                yield "block", cur
                cur = None
            headers += 1
            doc_chars = 0
            yield "header", (line, lineno)
            continue
        cols = line.split("\t", limits.max_columns) if "\t" in line else line.split(None, limits.max_columns)
        if len(cols) > limits.max_columns:
            raise InputError(f"more than {limits.max_columns} columns (a limit, see docs/reference/limits.md)",
                             path, lineno)
        if len(cols) < 2:
            raise InputError(f"expected a token and a tag separated by a tab, got {line[:60]!r}",
                             path, lineno)
        tag = cols[-1].strip()
        try:
            split_tag(tag)
        except ValueError as exc:
            raise InputError(str(exc), path, lineno) from None
        if cur is None:
            cur = _Block([], [], [], [])
        word = cols[0]
        if not word or any(c.isspace() for c in word):
            raise InputError(f"token {word!r} is empty or contains white space", path, lineno)
        doc_chars += len(word) + 1
        if doc_chars > limits.max_document_chars:
            raise InputError(f"a document of more than {limits.max_document_chars:,} characters (a limit, see "
                             f"docs/reference/limits.md): split it with -DOCSTART- lines or blank lines", path, lineno)
        cur.words.append(word)
        cur.tags.append(tag)
        cur.extra.append(tuple(cols[1:-1]))
        cur.lines.append(lineno)
    if cur is not None:
        yield "block", cur


class _Converter:
    """IOB2 tags for each block as it comes, repaired (one warning at the end, from
    :meth:`finish`), rejected or kept. ``auto`` reads IOB2 until the first ``E-`` or
    ``S-`` tag, IOBES from there: the blocks before it hold only B/I/O tags, which
    both schemes read alike, so this streams and still equals detecting the scheme
    over the whole file first."""

    def __init__(self, path: Path, scheme: str, on_invalid: OnInvalid):
        if on_invalid not in ("repair", "error", "keep"):
            raise ValueError(f"on_invalid must be 'repair', 'error' or 'keep', not {on_invalid!r}")
        self.path, self.on_invalid = path, on_invalid
        self.auto = scheme.lower() == "auto"
        self.scheme = "IOB2" if self.auto else normalize_scheme(scheme)
        self.bad_count = 0
        self.bad_first: list[int] = []  # the first few lines, for the warning

    def tags(self, block: _Block) -> list[str]:
        if self.auto and self.scheme == "IOB2" and detect_scheme(block.tags) == "IOBES":
            self.scheme = "IOBES"
        scheme = self.scheme
        allowed = "BIES" if scheme == "IOBES" else "BI"
        for tag, lineno in zip(block.tags, block.lines):
            if tag[0] not in allowed and tag != "O":
                raise InputError(f"tag {tag!r} is not allowed in {scheme}", self.path, lineno)
        tags = to_iob2(block.tags, scheme)
        bad = invalid_iob2_positions(tags)
        if bad:
            if self.on_invalid == "error":
                i = bad[0]
                raise InputError(f"invalid {scheme} sequence: {block.tags[i]!r} does not continue an "
                                 f"entity of its type", self.path, block.lines[i])
            self.bad_count += len(bad)
            self.bad_first.extend(block.lines[i] for i in bad[:max(0, 6 - len(self.bad_first))])
            if self.on_invalid == "repair":
                tags, _ = repair_iob2(tags)
        return tags

    def finish(self) -> None:
        if self.bad_count and self.on_invalid == "repair":
            shown = ", ".join(map(str, self.bad_first[:5])) + (", ..." if self.bad_count > 5 else "")
            warnings.warn(InputWarning(f"repaired {self.bad_count} I- tag(s) that did not continue an "
                                       f"entity (they now open one): lines {shown}", self.path,
                                       self.bad_first[0]), stacklevel=3)


def read_tagged_sentences(path: str | Path, on_invalid: OnInvalid = "repair",
                          scheme: str = "auto", limits: ReadLimits | None = None) -> list[TaggedSentence]:
    """Sentences of words and IOB2 tags from a CoNLL/BIO file.

    ``scheme`` is the file's scheme (``IOB1``, ``IOB2``, ``IOBES``) or ``auto``
    (IOBES if any ``E-``/``S-`` tag occurs, else IOB2; an IOB1 file read as IOB2 with
    repair comes out right). Middle columns are kept in ``TaggedSentence.extra``.
    """
    path = Path(path)
    conv = _Converter(path, scheme, on_invalid)
    out: list[TaggedSentence] = []
    header: str | None = None
    seen = False
    for _kind, item in _items(path, limits or DEFAULT_LIMITS):
        seen = True
        if not isinstance(item, _Block):  # a header
            header = item[0]
            continue
        block = item
        out.append(TaggedSentence(tuple(block.words), tuple(conv.tags(block)), block.lines[0], _extra(block),
                                  _doc_id(header) if header is not None else None))
    if not out:  # a trainer needs sentences
        raise InputError("no token lines" if seen else "empty file: no token lines", path)
    conv.finish()
    return out


def _extra(block: _Block) -> tuple[tuple[str, ...], ...]:
    return tuple(block.extra) if any(block.extra) else ()


def _doc_id(header: str) -> str:
    """``-DOCSTART- (12345)``, ``-DOCSTART-\\t12345``, ``-DOCSTART- -X- -X- O`` -> id."""
    rest = [w.strip("()") for w in re.split(r"\s+", header[len(DOCSTART):].strip())]
    rest = [w for w in rest if w and w not in ("-X-", "O")]
    return rest[0] if rest else ""


def sentences_to_document(doc_id: str, sentences: Iterable[TaggedSentence],
                          source: Source = Source.GOLD) -> Document:
    """A document whose text is the sentences' words joined by spaces (sentences by
    newlines), one ``sentence`` passage per sentence, spans from the tags."""
    text_parts: list[str] = []
    passages: list[Passage] = []
    pos = 0
    sents = list(sentences)
    for s in sents:
        body = " ".join(s.words)
        passages.append(Passage(pos, pos + len(body), "sentence"))
        text_parts.append(body)
        pos += len(body) + 1
    doc = Document(id=doc_id, text="\n".join(text_parts), passages=passages)
    for passage, s in zip(passages, sents):
        (sentence,) = sentences_in_passage(doc.text, passage)
        doc.spans.extend(tags_to_spans(sentence, s.tags, source))
    if any(s.extra for s in sents):
        doc.metadata["conll_columns"] = [[list(cols) for cols in s.extra] or [[]] * len(s.words)
                                         for s in sents]
    return doc


def read(path: str | Path, on_invalid: OnInvalid = "repair", scheme: str = "auto",
         limits: ReadLimits | None = None) -> Iterator[Document]:
    """Documents from a CoNLL/BIO file (see the module text for the layout), read as
    a stream: one document in memory."""
    path = Path(path)
    conv = _Converter(path, scheme, on_invalid)
    header: tuple[str, int] | None = None
    sents: list[TaggedSentence] = []
    seen = False
    for _kind, item in _items(path, limits or DEFAULT_LIMITS):
        seen = True
        if not isinstance(item, _Block):  # a header
            if header is not None:
                yield _docstart_document(path, header, sents)
            header, sents = item, []
            continue
        block = item
        sent = TaggedSentence(tuple(block.words), tuple(conv.tags(block)), block.lines[0], _extra(block))
        if header is None:
            doc = sentences_to_document(f"{path.stem}:{sent.line}", [sent])
            doc.metadata["conll_docstart"] = None  # written back without one
            yield doc
        else:
            sents.append(sent)
    if header is not None:
        yield _docstart_document(path, header, sents)
    if not seen:  # -DOCSTART- lines alone are documents without text
        raise InputError("empty file: no token lines", path)
    conv.finish()


def _docstart_document(path: Path, header: tuple[str, int], sents: list[TaggedSentence]) -> Document:
    doc = sentences_to_document(_doc_id(header[0]) or f"{path.stem}:{header[1]}", sents)
    doc.metadata["conll_docstart"] = header[0]
    return doc


_WHITE_SPACE = re.compile(r"\s")


def _check_writable(doc: Document, header: str | None, path: str | Path) -> None:
    """Refuse what a CoNLL file cannot hold: white space in an id it writes or in a
    label (a tag is one column), a tab or line break in a kept column."""
    if header is not None:
        if header == f"{DOCSTART} {doc.id}":
            refuse_chars(doc.id, "id", doc.id, path, _WHITE_SPACE, NAME, empty=False)
        refuse_chars(header, "-DOCSTART- line", doc.id, path, "\n\r", NAME)
    for span in doc.spans:
        refuse_chars(span.label, "a span's label", doc.id, path, _WHITE_SPACE, NAME, empty=False)
    for sentence in doc.metadata.get("conll_columns") or []:
        for cols in sentence:
            for col in cols:
                refuse_chars(col, "a kept column", doc.id, path, "\t\n\r", NAME)


def write(docs: Iterable[Document], path: str | Path, scheme: str = "IOB2",
          sources: Iterable[Source | str] | None = None, docstart: bool | None = None) -> WriteReport:
    """Write documents as CoNLL/BIO: every block (sentence or ``-DOCSTART-`` line)
    followed by a blank line.

    Each document is split into sentences (:func:`fastbioner.io.text.document_sentences`)
    and tagged from its spans (``sources``: which spans, default all) by the
    longest-first rule of :func:`fastbioner.io.labels.spans_to_tags`; the report counts
    the spans that rule left out and those off token boundaries. ``docstart``: True
    writes a ``-DOCSTART- <id>`` line before every document, False none; by default
    every document gets one except those read from a CoNLL file without them, so such
    a file round-trips exactly.
    """
    scheme = normalize_scheme(scheme)
    sources = None if sources is None else list(sources)
    report = WriteReport(path=str(path), format=NAME)
    with atomic_write(path) as fh:
        for doc in docs:
            header = doc.metadata.get("conll_docstart", f"{DOCSTART} {doc.id}")
            if docstart is not None:
                header = (header or f"{DOCSTART} {doc.id}") if docstart else None
            _check_writable(doc, header, path)
            tagged = document_tagged_sentences(doc, "IOB2", sources)
            report.add(doc, tagged, holds_annotators=False)
            if header:
                fh.write(header + "\n\n")
            columns = doc.metadata.get("conll_columns") or []
            for k, sent in enumerate(tagged.sentences):
                extra = columns[k] if k < len(columns) and len(columns[k]) == len(sent.words) else None
                for j, (word, tag) in enumerate(zip(sent.words, from_iob2(sent.tags, scheme))):
                    mid = "".join(c + "\t" for c in extra[j]) if extra else ""
                    fh.write(f"{word}\t{mid}{tag}\n")
                fh.write("\n")
    return report
