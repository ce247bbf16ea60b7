"""Settling two annotators' differences, as pure functions over span lists (the app
keeps the results on its undo stack; the rules live here, like curation's).

"Mine" is the document as the curator has it: gold, accepted and added entities,
never pending model suggestions. "Theirs" is another curator's version of the same
document. Their differences (:func:`fastbioner.curate.agreement.differences`) form a queue;
each item is decided once (and may be decided again): keep mine, take theirs, keep
both, drop both, or keep one side with its boundary moved by whole tokens.

An item's decision replaces the spans the item put in the document with the chosen
ones, so deciding again (or undoing) never leaves a stray span. Spans taken from a
side record which annotator they came from (``Span.annotator``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from fastbioner.curate.agreement import Difference, compare_spans, mention
from fastbioner.curate.curation import resize_span
from fastbioner.io.documents import Source, Span

MINE, THEIRS, BOTH, NEITHER = "mine", "theirs", "both", "neither"
CHOICES = (MINE, THEIRS, BOTH, NEITHER)
# The item's result is one side's span with its boundary moved ("mine-boundary" ...).
BOUNDARY = "-boundary"
CHOICE_NAMES = {MINE: "kept mine", THEIRS: "took theirs", BOTH: "kept both", NEITHER: "dropped both",
                MINE + BOUNDARY: "mine, boundary moved", THEIRS + BOUNDARY: "theirs, boundary moved"}


def mine_spans(spans: Iterable[Span]) -> list[Span]:
    """What counts as the curator's version: everything but pending suggestions."""
    return [s for s in spans if s.source is not Source.MODEL]


def queue(mine: Iterable[Span], theirs: Iterable[Span], doc_id: str = "") -> list[Difference]:
    """The differences to settle, in text order (pending suggestions on either side
    left out)."""
    return compare_spans(mine_spans(mine), mine_spans(theirs), "exact", doc_id).differences


@dataclass(frozen=True)
class Decision:
    """How an item was settled and the spans it put in the document."""

    choice: str
    spans: tuple[Span, ...]


def undecided(item: Difference) -> Decision:
    """An item before any decision: mine's span (if any) is in the document."""
    return Decision("", (item.a,) if item.a is not None else ())


def _taken(span: Span, annotator: str, theirs: bool) -> Span:
    if theirs:  # another curator's mention taken in is now this curator's decision
        return span.with_(source=Source.CURATOR, score=None, annotator=span.annotator or annotator)
    return span.with_(annotator=span.annotator or annotator)


def _apply(spans: Sequence[Span], before: Decision, after: Decision) -> list[Span]:
    """Replace what ``before`` put in the document with ``after``'s spans. A pending
    suggestion overlapping a span newly brought in gives way to it, as it does to a
    span a curator adds (:func:`fastbioner.curate.curation.add_span`)."""
    gone = {mention(s) for s in before.spans}
    kept = [s for s in spans if not (s.source is not Source.MODEL and mention(s) in gone)]
    have = {mention(s) for s in kept if s.source is not Source.MODEL}
    added = [s for s in after.spans if mention(s) not in have]
    new = [s for s in added if mention(s) not in gone]
    kept = [s for s in kept if not (s.source is Source.MODEL and any(s.overlaps(n) for n in new))]
    return sorted(kept + added, key=lambda s: (s.start, -s.end, s.label, s.source.value))


def decide(spans: Sequence[Span], item: Difference, before: Decision, choice: str,
           names: tuple[str, str] = ("mine", "theirs")) -> tuple[list[Span], Decision]:
    """The document's spans once ``item`` (decided as ``before``) is settled by
    ``choice``, and the new decision. A choice naming a side the item lacks (take
    theirs of a mention only mine has) leaves that side out."""
    if choice not in CHOICES:
        raise ValueError(f"choice must be one of {', '.join(CHOICES)}, not {choice!r}")
    chosen: list[Span] = []
    if choice in (MINE, BOTH) and item.a is not None:
        chosen.append(_taken(item.a, names[0], theirs=False))
    if choice in (THEIRS, BOTH) and item.b is not None:
        chosen.append(_taken(item.b, names[1], theirs=True))
    after = Decision(choice, tuple(chosen))
    return _apply(spans, before, after), after


def move_boundary(spans: Sequence[Span], text: str, item: Difference, before: Decision, side: str,
                  edge: str, tokens: int, names: tuple[str, str] = ("mine", "theirs")
                  ) -> tuple[list[Span], Decision] | None:
    """Keep ``side``'s span (``mine`` or ``theirs``) with one edge (``start`` or
    ``end``) moved by whole tokens (positive: right), the other side dropped. Moving
    again moves the span already moved. None when the side has no span or nothing
    would change."""
    if side not in (MINE, THEIRS):
        raise ValueError(f"side must be {MINE!r} or {THEIRS!r}, not {side!r}")
    base = before.spans[0] if before.choice == side + BOUNDARY and before.spans else (
        item.a if side == MINE else item.b)
    if base is None:
        return None
    base = _taken(base, names[0] if side == MINE else names[1], theirs=side == THEIRS)
    moved = resize_span([base], base, text, edge, tokens)
    new = moved[0] if moved else base
    if mention(new) == mention(base) and before.choice == side + BOUNDARY:
        return None
    after = Decision(side + BOUNDARY, (new,))
    return _apply(spans, before, after), after
