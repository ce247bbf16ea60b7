"""The rules of curation, as pure functions over span lists: what adding, relabelling,
deleting, accepting and rejecting a span does, how a selection snaps to tokens, and
how a model's new suggestions merge with a document's existing spans.

The app turns gestures into calls of these functions and keeps the results on an
undo stack; it never decides these rules itself, so the CLI, the tests and any other
front end get the same behaviour.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Sequence

from fastbioner.io.documents import Document, Source, Span
from fastbioner.curate.project import DocStatus
from fastbioner.io.text import tokenize  # the biomedical tokenizer of the foundation

# Model spans scoring below this are shown as doubtful.
LOW_CONFIDENCE = 0.5


def snap_to_tokens(start: int, end: int, tokens: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """Widen ``start..end`` to whole tokens: a selection that starts or ends inside a
    token takes the whole token; leading and trailing gaps between tokens are dropped.
    ``tokens`` are (start, end) pairs in text order. A selection that touches no token
    comes back unchanged."""
    if start > end:
        start, end = end, start
    inside = [(s, e) for s, e in tokens if s < end and start < e]
    if not inside:
        return start, end
    return inside[0][0], inside[-1][1]


def token_bounds(text: str) -> list[tuple[int, int]]:
    """Token offsets of ``text`` by the project's tokenizer (the one the BIO formats
    use), so a snapped span always falls on token boundaries of the exports."""
    return [(t.start, t.end) for t in tokenize(text)]


def add_span(spans: Sequence[Span], span: Span) -> list[Span]:
    """Add a curator's span; an identical span (same offsets and label) is not doubled,
    it just becomes the curator's. A model suggestion the new span overlaps gives way
    to it: selecting a wider (or narrower) span over a suggestion is how a curator
    fixes its boundary, and the old suggestion must not stay beside the fix (re-tagging
    drops such suggestions too). Gold and curated spans stay: nested and overlapping
    mentions are allowed in the document."""
    span = span.with_(source=Source.CURATOR, score=None)
    kept = [s for s in spans
            if not _same_mention(s, span) and not (s.source is Source.MODEL and s.overlaps(span))]
    return kept + [span]


def resize_span(spans: Sequence[Span], span: Span, text: str, edge: str, tokens: int) -> list[Span]:
    """Move one edge (``"start"`` or ``"end"``) of ``span`` by whole tokens: positive
    ``tokens`` moves it right, negative left (so ``end, +1`` extends and ``end, -1``
    shrinks). The span becomes the curator's (a boundary fix is a decision) and keeps
    at least one token; a move past the text's first or last token stops there. An
    unchanged span returns ``spans`` unchanged."""
    bounds = token_bounds(text)
    if not bounds or edge not in ("start", "end"):
        return list(spans)
    inside = [k for k, (s, e) in enumerate(bounds) if s < span.end and span.start < e]
    if not inside:
        return list(spans)
    first, last = inside[0], inside[-1]
    start, end = span.start, span.end
    if edge == "start":
        start = bounds[min(max(first + tokens, 0), last)][0]
    else:
        end = bounds[max(min(last + tokens, len(bounds) - 1), first)][1]
    if (start, end) == (span.start, span.end):
        return list(spans)
    new = span.with_(start=start, end=end, source=Source.CURATOR, score=None)
    out = [s for s in spans if s != span and not _same_mention(s, new)
           and not (s.source is Source.MODEL and s.overlaps(new))]
    return sorted(out + [new], key=_order)


# How the entity table names each source in the review workflow.
ENTITY_STATES = {Source.GOLD: "gold", Source.CURATOR: "accepted", Source.MODEL: "suggested"}


def entity_state(span: Span) -> str:
    """``gold`` (came with the data), ``accepted`` (a curator's, or a suggestion a
    curator accepted) or ``suggested`` (a model's, not yet decided). A rejected
    suggestion is removed from the document."""
    return ENTITY_STATES[span.source]


def remove_spans(spans: Sequence[Span], doomed: Iterable[Span]) -> list[Span]:
    doomed = list(doomed)
    return [s for s in spans if s not in doomed]


def relabel_span(spans: Sequence[Span], span: Span, label: str) -> list[Span]:
    """Change a span's label; the curator now owns it. The model's score no longer
    applies and is dropped; the concept id stays (MeSH ids name the concept whatever
    the mention's type, and a curator fixing a type must not lose the id: they edit it
    in the entity table if it is wrong too)."""
    out: list[Span] = []
    new = span.with_(label=label, source=Source.CURATOR, score=None)
    for s in spans:
        if s == span:
            out.append(new)
        elif not _same_mention(s, new):
            out.append(s)
    return out


def normalize_concept_id(text: str | None) -> str | None:
    """A concept id as typed: surrounding white space dropped, empty meaning none.
    White space inside is refused (ValueError): the formats that carry ids (PubTator's
    tab-separated columns, BioC infons) would split or mangle it. Composite ids keep
    their separators (``D006333|D009203``) and NCBI disease's ``-1`` is kept as is."""
    text = (text or "").strip()
    if not text:
        return None
    if any(c.isspace() for c in text):
        raise ValueError(f"a concept id has no spaces: {text!r}")
    return text


def set_concept_id(spans: Sequence[Span], span: Span, concept_id: str | None) -> list[Span]:
    """Give ``span`` a concept id (None or empty clears it); the curator now owns the
    span (an id on a suggestion accepts it, as identifying a mention is a decision).
    An unchanged id returns ``spans`` unchanged."""
    concept_id = normalize_concept_id(concept_id)
    if concept_id == span.concept_id:
        return list(spans)
    new = span.with_(concept_id=concept_id, source=Source.CURATOR)
    return [new if s == span else s for s in spans]


def accept_suggestions(spans: Sequence[Span], which: Iterable[Span] | None = None) -> list[Span]:
    """Model suggestions become curated spans (all of them when ``which`` is None).
    The model's score is kept as a record of how sure it was."""
    chosen = None if which is None else set(which)
    return [s.with_(source=Source.CURATOR)
            if s.source is Source.MODEL and (chosen is None or s in chosen) else s
            for s in spans]


def reject_suggestions(spans: Sequence[Span], which: Iterable[Span] | None = None) -> list[Span]:
    """Drop model suggestions (all of them when ``which`` is None); gold and curated
    spans are never touched."""
    chosen = None if which is None else set(which)
    return [s for s in spans
            if not (s.source is Source.MODEL and (chosen is None or s in chosen))]


def rejected_after(rejected: Sequence[Span], spans: Sequence[Span], which: Iterable[Span] | None = None) -> list[Span]:
    """The rejected suggestions once ``which`` (all suggestions when None) of ``spans``
    are rejected too: what re-tagging must not offer again."""
    chosen = None if which is None else set(which)
    new = [s for s in spans if s.source is Source.MODEL and (chosen is None or s in chosen)]
    out = list(rejected)
    for s in new:
        if not any(_same_mention(s, r) for r in out):
            out.append(s)
    return out


def merge_model_spans(existing: Sequence[Span], suggested: Iterable[Span],
                      replace_curated: bool = False, rejected: Sequence[Span] = ()) -> list[Span]:
    """Re-tagging: the model's previous suggestions give way to its new ones.

    Curated spans stay, and a new suggestion overlapping a curated span is dropped
    (the curator already decided that text) unless ``replace_curated``, which drops
    the curated spans instead. Gold spans stay; a suggestion identical to a gold or
    curated span adds nothing, nor does one a curator rejected (``rejected``).

    A model never identifies concepts, so a suggestion carries no concept id; one
    identical to a curated span that ``replace_curated`` drops takes over that span's
    id (the mention is the same, and the id was the curator's work)."""
    suggested = [s.with_(source=Source.MODEL) for s in suggested]
    kept = [s for s in existing if s.source is not Source.MODEL]
    if replace_curated:
        ids = {(s.start, s.end, s.label): s.concept_id for s in kept
               if s.source is Source.CURATOR and s.concept_id is not None}
        suggested = [s.with_(concept_id=ids.get((s.start, s.end, s.label), s.concept_id)) for s in suggested]
        kept = [s for s in kept if s.source is not Source.CURATOR]
    curated = [s for s in kept if s.source is Source.CURATOR]
    out = list(kept)
    for s in suggested:
        if any(_same_mention(s, k) for k in kept) or any(_same_mention(s, r) for r in rejected):
            continue
        if any(s.overlaps(c) for c in curated):
            continue
        out.append(s)
    return sorted(out, key=_order)


def spans_at(spans: Sequence[Span], offset: int) -> list[Span]:
    """Spans covering character ``offset``, shortest first (the innermost mention is
    the one a click means)."""
    hits = [s for s in spans if s.start <= offset < s.end]
    return sorted(hits, key=lambda s: (s.end - s.start, s.start, s.label))


def is_low_confidence(span: Span, threshold: float = LOW_CONFIDENCE) -> bool:
    return span.source is Source.MODEL and span.score is not None and span.score < threshold


def select_sources(doc: Document, sources: Iterable[Source]) -> Document:
    """A copy of ``doc`` holding only the spans of the given sources (for export)."""
    wanted = set(sources)
    return replace(doc, spans=[s for s in doc.spans if s.source in wanted],
                   passages=list(doc.passages), metadata=dict(doc.metadata),
                   relations=list(doc.relations))


def _same_mention(a: Span, b: Span) -> bool:
    return a.start == b.start and a.end == b.end and a.label == b.label


def _order(s: Span) -> tuple:
    return (s.start, -s.end, s.label, s.source.value)


# -- review status ---------------------------------------------------------------------
# What curating and re-tagging make of a document's review status: the library's rule,
# so the app and any other front end (a script over a project) apply the same one.


def status_after_edit(status: DocStatus) -> DocStatus:
    """A curator's edit puts a document in review; it never marks it reviewed (that is
    a deliberate action), and a reviewed document stays reviewed through a later fix."""
    return status if status is DocStatus.REVIEWED else DocStatus.IN_REVIEW


def status_after_tagging(status: DocStatus, replace_curated: bool = False) -> DocStatus:
    """What tagging with a model makes of a document's status: a document in review or
    reviewed keeps it (its curator's decisions stay) unless the tagging may replace the
    curated spans (then it is a model's suggestions again: tagged); any other document
    is tagged."""
    reviewing = status in (DocStatus.IN_REVIEW, DocStatus.REVIEWED)
    return status if reviewing and not replace_curated else DocStatus.TAGGED
