"""Label sets and tagging schemes: IOB1 / IOB2 / IOBES conversion and repair, and
the mapping between character-offset spans and per-token tags.

IOB2 (``B-`` opens every entity, ``I-`` continues it) is the one scheme the rest of
the library speaks; other schemes are converted at the edges (reading and writing
files). Tags are strings ``"O"`` or ``"<P>-<Type>"`` with ``P`` in ``B I E S``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from fastbioner.io.documents import Document, Sentence, Source, Span
from fastbioner.io.text import document_sentences

SCHEMES = ("IOB1", "IOB2", "IOBES")


@dataclass(frozen=True)
class TaggedSentence:
    """Words and their IOB2 tags. ``line``: 1-based line of the first token in the
    file it was read from (0 when made from a document); ``extra``: per token, the
    columns a CoNLL file had between token and tag; ``doc_id``: the ``-DOCSTART-`` id."""

    words: tuple[str, ...]
    tags: tuple[str, ...]
    line: int = 0
    extra: tuple[tuple[str, ...], ...] = ()
    doc_id: str | None = None


@dataclass
class DocumentTags:
    """A document's BIO view: its sentences with tags, and the spans the view lost."""

    sentences: list[TaggedSentence] = field(default_factory=list)
    left_out: list[Span] = field(default_factory=list)
    off_boundary: list[Span] = field(default_factory=list)
    n_spans_written: int = 0
_ALIASES = {"IOB1": "IOB1", "IOB": "IOB1", "IOB2": "IOB2", "BIO": "IOB2",
            "IOBES": "IOBES", "BIOES": "IOBES", "BILOU": "IOBES"}
_PREFIXES = {"IOB1": "BI", "IOB2": "BI", "IOBES": "BIES"}


def normalize_scheme(scheme: str) -> str:
    """``"bio"`` -> ``"IOB2"``, ``"bioes"`` -> ``"IOBES"``; ValueError for anything else."""
    try:
        return _ALIASES[scheme.strip().upper()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown tagging scheme {scheme!r} (expected one of {', '.join(SCHEMES)})") from None


def split_tag(tag: str) -> tuple[str, str]:
    """``"B-Chemical"`` -> ``("B", "Chemical")``; ``"O"`` -> ``("O", "")``.

    Raises ValueError for a tag that is neither ``O`` nor ``<B|I|E|S>-<type>``.
    The type may itself contain hyphens (``B-Gene-or-protein``)."""
    if tag == "O":
        return "O", ""
    if len(tag) > 2 and tag[1] == "-" and tag[0] in "BIES":
        return tag[0], tag[2:]
    raise ValueError(f"unknown tag {tag!r} (expected O or B-/I-/E-/S- followed by a type)")


def check_tags(tags: Sequence[str], scheme: str = "IOB2") -> int | None:
    """Index of the first tag that the scheme does not allow (by its prefix), else None."""
    allowed = _PREFIXES[normalize_scheme(scheme)]
    for i, tag in enumerate(tags):
        prefix, _ = split_tag(tag)
        if prefix != "O" and prefix not in allowed:
            return i
    return None


def detect_scheme(tags: Iterable[str]) -> str:
    """IOBES when any ``E-``/``S-`` tag occurs, else IOB2. (IOB1 cannot be told apart
    from IOB2 that needs repair, and repairing IOB2 reads IOB1 correctly anyway.)"""
    for tag in tags:
        if tag[:2] in ("E-", "S-"):
            return "IOBES"
    return "IOB2"


def invalid_iob2_positions(tags: Sequence[str]) -> list[int]:
    """Indices of ``I-`` tags that do not continue an entity of their type (after
    ``O``, at the start, or after another type): the positions :func:`repair_iob2` fixes."""
    bad = []
    prev_type = ""
    for i, tag in enumerate(tags):
        prefix, typ = split_tag(tag)
        if prefix == "I" and typ != prev_type:
            bad.append(i)
        prev_type = typ
    return bad


def repair_iob2(tags: Sequence[str]) -> tuple[list[str], int]:
    """Make an IOB2 sequence valid: an ``I-X`` after ``O``, at the start, or after
    another type begins a new entity (becomes ``B-X``). Returns (tags, n_repaired)."""
    out = list(tags)
    bad = invalid_iob2_positions(out)
    for i in bad:
        out[i] = "B-" + out[i][2:]
    return out, len(bad)


def to_iob2(tags: Sequence[str], scheme: str) -> list[str]:
    """Convert a tag sequence from ``scheme`` to IOB2. Invalid IOB2/IOBES sequences
    pass through unrepaired (see :func:`repair_iob2`)."""
    scheme = normalize_scheme(scheme)
    if scheme == "IOB2":
        return list(tags)
    out = []
    prev_type = ""
    for tag in tags:
        prefix, typ = split_tag(tag)
        if scheme == "IOB1":
            # In IOB1, I- opens an entity unless it continues one of the same type;
            # B- appears only between two adjacent entities of the same type.
            if prefix == "I" and typ != prev_type:
                prefix = "B"
        elif prefix == "S":
            prefix = "B"
        elif prefix == "E":
            prefix = "I"
        out.append("O" if prefix == "O" else f"{prefix}-{typ}")
        prev_type = typ
    return out


def from_iob2(tags: Sequence[str], scheme: str) -> list[str]:
    """Convert a valid IOB2 sequence to ``scheme``."""
    scheme = normalize_scheme(scheme)
    if scheme == "IOB2":
        return list(tags)
    parsed = [split_tag(t) for t in tags]
    out = []
    for i, (prefix, typ) in enumerate(parsed):
        if prefix == "O":
            out.append("O")
            continue
        if scheme == "IOB1":
            prev_type = parsed[i - 1][1] if i else ""
            # B- survives only where the entity directly follows one of the same type.
            prefix = "B" if prefix == "B" and prev_type == typ else "I"
        else:
            nxt = parsed[i + 1] if i + 1 < len(parsed) else ("O", "")
            continues = nxt[0] == "I" and nxt[1] == typ
            if prefix == "B":
                prefix = "B" if continues else "S"
            else:
                prefix = "I" if continues else "E"
        out.append(f"{prefix}-{typ}")
    return out


def entity_types(tags_or_labels: Iterable[str]) -> list[str]:
    """Sorted entity types named by tags (``B-Chemical``) or by bare labels (``Chemical``)."""
    types = set()
    for item in tags_or_labels:
        if item == "O" or not item:
            continue
        if len(item) > 2 and item[1] == "-" and item[0] in "BIES":
            types.add(item[2:])
        else:
            types.add(item)
    return sorted(types)


def bio_labels(types: Iterable[str], scheme: str = "IOB2") -> list[str]:
    """The label list a model is trained on: ``["O", "B-X", "I-X", ...]`` with types
    sorted, so the same types always give the same label ids."""
    prefixes = "BIES" if normalize_scheme(scheme) == "IOBES" else "BI"
    labels = ["O"]
    for typ in entity_types(types):
        labels.extend(f"{p}-{typ}" for p in prefixes)
    return labels


def iob2_chunks(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Entities of an IOB2 sequence as ``(type, first_token, last_token + 1)``. An
    ``I-`` that does not continue an entity opens one (the repair rule)."""
    chunks: list[tuple[str, int, int]] = []
    cur_type, cur_start = "", -1
    for i, tag in enumerate(tags):
        prefix, typ = split_tag(tag)
        if prefix == "I" and typ == cur_type:
            continue
        if cur_type:
            chunks.append((cur_type, cur_start, i))
        cur_type, cur_start = (typ, i) if prefix != "O" else ("", -1)
    if cur_type:
        chunks.append((cur_type, cur_start, len(tags)))
    return chunks


def spans_to_tags(sentence: Sentence, spans: Iterable[Span], scheme: str = "IOB2"
                  ) -> tuple[list[str], list[Span], list[Span]]:
    """Tag one sentence's tokens from character spans.

    Returns ``(tags, left_out, off_boundary)``:

    - ``off_boundary``: spans inside the sentence whose start or end falls inside a
      token (they cannot be expressed per token); they are not tagged.
    - ``left_out``: spans on token boundaries that overlap a span already placed.
      The rule: spans are placed longest first (more tokens first; then earlier
      start, then label), and a span that would share a token with a placed one is
      left out. Nested and overlapping spans stay in the document; only the BIO
      view loses them, and the caller reports how many.

    Spans outside the sentence (not overlapping ``[sentence.start, sentence.end)``)
    are ignored; a span that crosses the sentence's edge counts as off boundary.
    """
    tokens = sentence.tokens
    n = len(tokens)
    starts = {t.start: i for i, t in enumerate(tokens)}
    ends = {t.end: i for i, t in enumerate(tokens)}
    off_boundary: list[Span] = []
    placeable: list[tuple[int, int, Span]] = []
    for span in spans:
        if span.start == span.end:
            if sentence.start <= span.start < sentence.end:
                off_boundary.append(span)
            continue
        if span.end <= sentence.start or span.start >= sentence.end:
            continue
        first, last = starts.get(span.start), ends.get(span.end)
        if first is None or last is None or last < first:
            off_boundary.append(span)
        else:
            placeable.append((first, last + 1, span))
    placeable.sort(key=lambda p: (-(p[1] - p[0]), p[0], p[2].label))
    owner: list[str] = [""] * n
    placed: list[tuple[int, int, str]] = []
    left_out: list[Span] = []
    for first, stop, span in placeable:
        if any(owner[i] for i in range(first, stop)):
            left_out.append(span)
            continue
        for i in range(first, stop):
            owner[i] = span.label
        placed.append((first, stop, span.label))
    tags = ["O"] * n
    for first, stop, label in placed:
        tags[first] = f"B-{label}"
        for i in range(first + 1, stop):
            tags[i] = f"I-{label}"
    return from_iob2(tags, scheme), left_out, off_boundary


def tags_to_spans(sentence: Sentence, tags: Sequence[str], label_source: Source | str = Source.MODEL,
                  scores: Sequence[float] | None = None, scheme: str = "IOB2") -> list[Span]:
    """Spans with character offsets for one sentence's tags (invalid ``I-`` tags open
    an entity, as :func:`repair_iob2` would). With per-token ``scores``, a span's
    score is the mean over its tokens."""
    if len(tags) != len(sentence.tokens):
        raise ValueError(f"{len(tags)} tags for {len(sentence.tokens)} tokens")
    tags = to_iob2(tags, scheme)
    source = Source(label_source)
    spans = []
    for typ, first, stop in iob2_chunks(tags):
        score = None
        if scores is not None:
            score = float(sum(scores[first:stop]) / (stop - first))
        spans.append(Span(sentence.tokens[first].start, sentence.tokens[stop - 1].end, typ,
                          source, score))
    return spans


def document_tagged_sentences(doc: Document, scheme: str = "IOB2",
                              sources: Iterable[Source | str] | None = None) -> DocumentTags:
    """Sentences of ``doc`` tagged from its spans (all, or only those from ``sources``)
    by :func:`spans_to_tags`, with the spans the BIO view had to leave out. A span that
    is not inside exactly one sentence (it crosses a sentence or passage boundary, or
    lies in white space) counts as off boundary."""
    wanted = None if sources is None else {Source(s) for s in sources}
    sentences = document_sentences(doc)
    starts = [s.start for s in sentences]
    per_sentence: list[list[Span]] = [[] for _ in sentences]
    out = DocumentTags()
    for span in doc.spans:
        if wanted is not None and span.source not in wanted:
            continue
        i = bisect.bisect_right(starts, span.start) - 1
        if i >= 0 and span.end <= sentences[i].end and span.start < sentences[i].end:
            per_sentence[i].append(span)
        else:
            out.off_boundary.append(span)
    for sent, spans in zip(sentences, per_sentence):
        tags, left_out, off = spans_to_tags(sent, spans, scheme)
        out.sentences.append(TaggedSentence(tuple(sent.words), tuple(tags)))
        out.left_out.extend(left_out)
        out.off_boundary.extend(off)
        out.n_spans_written += len(spans) - len(left_out) - len(off)
    return out
