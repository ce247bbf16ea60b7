"""Annotate all occurrences: one curator decision about a mention (accept it, add it,
relabel it, reject it) applied to every identical string of a document or of a whole
project, as pure functions the app calls (and shows a preview count of) before it
changes anything.

What "identical" means is the :class:`Rule`'s: the same characters (``exact``) or the
same characters whatever their case (``ignore case``); runs of white space always
match any white space (a mention across a line break is the same mention); with
``whole_tokens`` an occurrence must start and end on token boundaries of the project's
tokenizer, so "lithium" is not found inside "lithiumchloride".

The decisions:

- ``accept``: every model suggestion with that text and label becomes accepted
  (places where the model suggested nothing are left alone);
- ``add``: every occurrence becomes an entity of the label: an identical suggestion
  is accepted, a suggestion overlapping it gives way (as adding a span does), an
  occurrence already covered by a gold or accepted entity of another extent or label
  is skipped (a curator's or the corpus's decision stands) and counted as such;
- ``relabel``: every entity (gold, accepted or suggested) with that text and label
  gets the new label and becomes the curator's;
- ``reject``: every suggestion with that text and label is dropped and remembered as
  rejected, so re-tagging does not offer it again. Gold and accepted entities stay.

An accepted or added entity without a concept id takes the rule's ``concept_id``
(the mention's own id, or the dictionary's proposal): the same string names the same
concept within a project.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from fastbioner.curate import curation
from fastbioner.io.documents import Document, Source, Span
from fastbioner.io.text import WORD_CHAR

EXACT = "exact"
IGNORE_CASE = "ignore case"
CASE_RULES = (EXACT, IGNORE_CASE)

ACCEPT, ADD, RELABEL, REJECT = "accept", "add", "relabel", "reject"
ACTIONS = (ACCEPT, ADD, RELABEL, REJECT)


@dataclass(frozen=True)
class Rule:
    """One decision to apply to every occurrence of ``text`` labelled ``label``."""

    text: str
    label: str
    action: str
    new_label: str | None = None     # relabel: the label given
    concept_id: str | None = None    # accept / add: the id an entity without one takes
    case: str = EXACT
    whole_tokens: bool = True

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown action {self.action!r} (one of {', '.join(ACTIONS)})")
        if self.case not in CASE_RULES:
            raise ValueError(f"unknown case rule {self.case!r} (one of {', '.join(CASE_RULES)})")
        if self.action == RELABEL and not self.new_label:
            raise ValueError("relabel needs the new label")
        if not self.text.strip():
            raise ValueError("an occurrence needs some text")


@dataclass
class DocOutcome:
    """What a rule does to one document: its new spans and rejected suggestions, and
    counts for the preview."""

    spans: list[Span]
    rejected: list[Span]
    accepted: int = 0
    added: int = 0
    relabelled: int = 0
    rejected_now: int = 0
    skipped: int = 0

    @property
    def changes(self) -> int:
        return self.accepted + self.added + self.relabelled + self.rejected_now


@dataclass
class Preview:
    """The totals of a rule over the documents it would change (``outcomes`` keeps the
    index of each document in the list it was given)."""

    outcomes: dict[int, DocOutcome] = field(default_factory=dict)
    occurrences: int = 0    # places the text was found (matching entities included)

    def total(self, what: str) -> int:
        return sum(getattr(o, what) for o in self.outcomes.values())

    @property
    def changes(self) -> int:
        return sum(o.changes for o in self.outcomes.values())

    @property
    def documents(self) -> int:
        return len(self.outcomes)

    def describe(self) -> str:
        """The preview line the app shows before applying."""
        parts = []
        for what, verb in (("accepted", "accepts"), ("added", "adds"), ("relabelled", "relabels"),
                           ("rejected_now", "rejects")):
            n = self.total(what)
            if n:
                parts.append(f"{verb} {n} entit{'y' if n == 1 else 'ies'}" if what in ("added", "relabelled")
                             else f"{verb} {n} suggestion{'s' if n != 1 else ''}")
        skipped = self.total("skipped")
        docs = self.documents
        text = (", ".join(parts) + f" in {docs} document{'s' if docs != 1 else ''}") if parts else "changes nothing"
        if skipped:
            text += (f"; {skipped} occurrence{'s are' if skipped != 1 else ' is'} skipped "
                     "(another gold or accepted entity is there)")
        return text[:1].upper() + text[1:]


def _pattern(phrase: str, case: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in phrase.split()]
    return re.compile(r"\s+".join(parts), re.IGNORECASE if case == IGNORE_CASE else 0)


def same_text(a: str, b: str, case: str = EXACT) -> bool:
    """Whether two mention texts are identical under the case rule (white space runs
    compared as one space)."""
    a, b = " ".join(a.split()), " ".join(b.split())
    return a == b if case == EXACT else a.casefold() == b.casefold()


def find_occurrences(text: str, phrase: str, case: str = EXACT, whole_tokens: bool = True,
                     tokens: Sequence[tuple[int, int]] | None = None) -> list[tuple[int, int]]:
    """(start, end) of every occurrence of ``phrase`` in ``text``, in text order, never
    overlapping. ``tokens`` are the text's token bounds (computed when not given)."""
    if not phrase.split():
        return []
    found = [(m.start(), m.end()) for m in _pattern(phrase, case).finditer(text)]
    if not whole_tokens:
        return found
    if tokens is None:  # the tokenizer's rule, checked at each match only (a project is big)
        return [(s, e) for s, e in found if _token_edge(text, s) and _token_edge(text, e)]
    starts = {s for s, _ in tokens}
    ends = {e for _, e in tokens}
    return [(s, e) for s, e in found if s in starts and e in ends]


# The project's tokens (fastbioner.io.text.TOKEN_RE) are runs of letters and digits, or
# one other character: an offset is a token edge unless it falls inside such a run.
_WORD_CHAR = WORD_CHAR  # a combining mark is part of its word, as in the tokenizer


def _token_edge(text: str, i: int) -> bool:
    return i <= 0 or i >= len(text) or not (_WORD_CHAR.match(text[i - 1]) and _WORD_CHAR.match(text[i]))


def _matching(doc: Document, span: Span, rule: Rule) -> bool:
    return span.label == rule.label and same_text(doc.span_text(span), rule.text, rule.case)


def _with_id(span: Span, concept_id: str | None) -> Span:
    return span.with_(concept_id=concept_id) if span.concept_id is None and concept_id else span


def apply_rule(doc: Document, rule: Rule, rejected: Sequence[Span] = ()) -> DocOutcome:
    """The document's spans and rejected suggestions after ``rule`` (``doc`` is not
    changed)."""
    spans = list(doc.spans)
    out = DocOutcome(spans, list(rejected))
    if rule.action in (ACCEPT, REJECT, RELABEL):
        hits = [s for s in spans if _matching(doc, s, rule)]
        if rule.action == ACCEPT:
            chosen = [s for s in hits if s.source is Source.MODEL]
            out.spans = [_with_id(s.with_(source=Source.CURATOR), rule.concept_id) if s in chosen else s
                         for s in spans]
            out.accepted = len(chosen)
        elif rule.action == REJECT:
            chosen = [s for s in hits if s.source is Source.MODEL]
            out.rejected = curation.rejected_after(rejected, spans, chosen)
            out.spans = curation.reject_suggestions(spans, chosen)
            out.rejected_now = len(chosen)
        else:
            new_label = rule.new_label
            assert new_label is not None  # a relabel rule names its label (checked when it is made)
            chosen = [s for s in hits if s.label != new_label]
            for s in chosen:
                out.spans = curation.relabel_span(out.spans, s, new_label)
            out.relabelled = len(chosen)
        return out
    # add: every occurrence in the text becomes an entity of the label.
    for start, end in find_occurrences(doc.text, rule.text, rule.case, rule.whole_tokens):
        here = [s for s in out.spans if s.start == start and s.end == end and s.label == rule.label]
        if here:
            pending = [s for s in here if s.source is Source.MODEL]
            out.spans = [_with_id(s.with_(source=Source.CURATOR), rule.concept_id) if s in pending else s
                         for s in out.spans]
            out.accepted += len(pending)
            continue
        if any(s.source is not Source.MODEL and s.start < end and start < s.end for s in out.spans):
            out.skipped += 1
            continue
        out.spans = curation.add_span(out.spans, Span(start, end, rule.label, Source.CURATOR,
                                                      concept_id=rule.concept_id))
        out.added += 1
    return out


def count_occurrences(doc: Document, rule: Rule) -> int:
    """Places the rule looks at in ``doc``: matching entities (accept, relabel, reject)
    or occurrences of the text (add)."""
    if rule.action == ADD:
        return len(find_occurrences(doc.text, rule.text, rule.case, rule.whole_tokens))
    return sum(1 for s in doc.spans if _matching(doc, s, rule))


def preview(docs: Iterable[tuple[Document, Sequence[Span]]], rule: Rule) -> Preview:
    """The rule over ``docs`` (each with its rejected suggestions): the outcome of every
    document it changes (or skips an occurrence of), keyed by its position in ``docs``.
    Applying is writing those outcomes back, so the preview count is what happens."""
    result = Preview()
    for i, (doc, rejected) in enumerate(docs):
        if not _may_occur(doc, rule):
            continue
        result.occurrences += count_occurrences(doc, rule)
        outcome = apply_rule(doc, rule, rejected)
        if outcome.changes or outcome.skipped:
            result.outcomes[i] = outcome
    return result


def _may_occur(doc: Document, rule: Rule) -> bool:
    # A cheap filter before tokenizing a whole project: the first word must be there.
    first = rule.text.split()[0]
    return (first in doc.text) if rule.case == EXACT else (first.casefold() in doc.text.casefold())
