"""The comparison behind Compare and adjudicate (:mod:`fastbioner_gui.adjudication`):
another curator's version of the open documents, the differences to settle in each,
the decisions taken so far, and each document's agreement, kept true to the documents.

The comparison follows the documents: after any edit of a compared document its
agreement is measured again, and after an edit that is not a decision (a mention added
by hand, All occurrences, a tagging run) its differences are found again too, the
decisions of the differences that remain kept. Decisions are keyed by what they
decide (the difference's kind and spans), not by its place in the queue, so undo
finds them after the queue was found again. The first comparison, and a document with
many mentions, are matched in a background job (a 6,000-mention document froze the
window for seconds); until its result is in, the document's cell is marked out of date.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from fastbioner.base.errors import FastBioNERError
from fastbioner.curate import adjudication as rules
from fastbioner.curate.agreement import Counts, Difference, SpanAgreement, compare_spans, match_documents
from fastbioner.curate.project import DocStatus
from fastbioner.io.documents import Document, Span

from .jobs import QUIET_KIND
from .models.workspace import Workspace
from .undo import DocState, SpanChange, SpansCommand, state_of, status_after_edit

if TYPE_CHECKING:  # pragma: no cover
    from .jobs import JobManager

# Mentions (mine and theirs together) up to which a document is compared again at once,
# in the GUI thread (well under a frame); a bigger one is compared in a job.
AT_ONCE = 2000
Spans = tuple[Span, ...]
Key = tuple[int, tuple]  # (workspace row, what the decision decides: see signature)


def signature(item: Difference) -> tuple:
    """A difference as a decision is keyed: its kind and both spans."""
    def where(s: Span | None):
        return None if s is None else (s.start, s.end, s.label)
    return item.kind, where(item.a), where(item.b)


def mine_of(doc: Document) -> Spans:
    return tuple(rules.mine_spans(doc.spans))


@dataclass
class Comparison:
    """What a comparison job found: per workspace row, the spans compared (mine, theirs)
    and their agreement; and their documents that could not be compared."""

    rows: dict[int, tuple[str, Spans, Spans, SpanAgreement]] = field(default_factory=dict)
    not_compared: list[str] = field(default_factory=list)


def comparison_job(mine: list[Document], theirs: list[Document], source: str):
    """Match ``theirs`` to ``mine`` (copies of the open documents, row by row) and compare
    each pair, in a worker thread."""
    def job(on_event, cancel):
        matching = match_documents(mine, theirs, "the open documents", source)
        if not matching.pairs:
            raise FastBioNERError(f"{source}: none of its documents is open here (matched by id)"
                                  + (f"; {len(matching.text_differs)} share an id but not the text"
                                     if matching.text_differs else ""))
        rows = {id(d): i for i, d in enumerate(mine)}
        out = Comparison(not_compared=matching.text_differs + matching.only_in_b)
        for a, b in matching.pairs:
            cancel.check()
            spans_a, spans_b = tuple(rules.mine_spans(a.spans)), tuple(rules.mine_spans(b.spans))
            out.rows[rows[id(a)]] = (a.id, spans_a, spans_b, compare_spans(spans_a, spans_b, "exact", a.id))
        return out
    return job


def recompare_job(work: list[tuple[int, str, Spans, Spans]]):
    def job(on_event, cancel):
        out = {}
        for row, doc_id, mine, theirs in work:
            cancel.check()
            out[row] = compare_spans(mine, theirs, "exact", doc_id)
        return out
    return job


class AdjudicationSession(QObject):
    """Another curator's version of the open documents, the differences to settle in
    each, and the decisions taken so far (changed only through :class:`DecisionCommand`,
    so undo restores them with the spans)."""

    changed = Signal(int)   # a row's comparison or decisions changed; -1: a new comparison (or none)

    def __init__(self, workspace: Workspace, stack, jobs: JobManager | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.stack = stack
        self.jobs = jobs
        self._deciding: int | None = None   # the row a decision command is changing now
        self._job = None
        self.clear()
        workspace.documentsChanged.connect(self._documents_changed)

    def clear(self) -> None:
        # Each comparison is a generation: a decision still on the undo stack from an
        # earlier one restores its spans when undone, never this one's decisions.
        self.generation = getattr(self, "generation", 0) + 1
        self.source = ""
        self.names = ("mine", "theirs")
        self.items: dict[int, list[Difference]] = {}
        self.agreement: dict[int, Counts] = {}
        self.first_agreement: dict[int, Counts] = {}   # at the comparison, for the tooltip
        self.decisions: dict[Key, rules.Decision] = {}
        self.not_compared: list[str] = []   # their documents not open here, or with another text
        self.theirs: dict[int, Spans] = {}
        self.doc_ids: dict[int, str] = {}
        self.seen: dict[int, Spans] = {}    # mine, as last measured
        self.stale: dict[int, bool] = {}    # rows being compared again: True when their queue is too
        self.changed.emit(-1)

    @property
    def active(self) -> bool:
        return bool(self.source)

    # Comparing ---------------------------------------------------------------------
    def start(self, theirs: list[Document], source: str, names: tuple[str, str]) -> str:
        """Compare the open documents with ``theirs`` at once (matched by id, or by position
        for BIO sentences); returns a one-line summary. An error when nothing matches."""
        return self.apply(comparison_job(self.snapshot(), theirs, source)(None, _NEVER), source, names)

    def snapshot(self) -> list[Document]:
        """Copies of the open documents (their spans as they are now) for a worker thread."""
        return [replace(self.workspace.document(r), spans=list(self.workspace.document(r).spans))
                for r in range(len(self.workspace))]

    def apply(self, comparison: Comparison, source: str, names: tuple[str, str]) -> str:
        """A comparison job's result; a document edited while it ran is compared again."""
        self.clear()
        self.source, self.names = source, names
        self.not_compared = comparison.not_compared
        for row, (doc_id, mine, theirs, got) in comparison.rows.items():
            if row >= len(self.workspace):
                continue
            self.doc_ids[row], self.theirs[row], self.seen[row] = doc_id, theirs, mine
            self.items[row], self.agreement[row] = got.differences, got.overall
            self.first_agreement[row] = got.overall
        self.changed.emit(-1)
        self._documents_changed(0, len(self.workspace) - 1)
        return self.summary()

    def _documents_changed(self, first: int, last: int) -> None:
        if not self.active:
            return
        for row in range(first, last + 1):
            if row not in self.theirs or row >= len(self.workspace):
                continue
            mine = mine_of(self.workspace.document(row))
            if mine == self.seen[row]:
                continue   # a status or a pending suggestion changed: nothing compared did
            # A decision changes the agreement; any other edit the differences too.
            queue_too = self._deciding != row or self.stale.get(row, False)
            self.seen[row] = mine
            if len(mine) + len(self.theirs[row]) <= AT_ONCE or self.jobs is None:
                self._compared(row, compare_spans(mine, self.theirs[row], "exact", self.doc_ids[row]), queue_too)
            else:
                self.stale[row] = queue_too
                self.changed.emit(row)
                self._recompare()

    def _recompare(self) -> None:
        if self._job is not None and self._job.running:
            return   # its end starts the next one
        work = [(row, self.doc_ids[row], self.seen[row], self.theirs[row]) for row in self.stale]
        if not work:
            return
        generation = self.generation
        job = self.jobs.start("Compare again", recompare_job(work), kind=QUIET_KIND)
        self._job = job
        job.succeeded.connect(lambda got: self._recompared(got, work, generation))
        job.finished.connect(self._recompare_next)

    def _recompared(self, got: dict, work: list, generation: int) -> None:
        if generation != self.generation:
            return
        for row, _doc_id, mine, _theirs in work:
            if row in self.stale and self.seen.get(row) == mine:   # not edited since: true now
                self._compared(row, got[row], self.stale.pop(row))

    def _recompare_next(self) -> None:
        self._job = None
        if self.stale:
            self._recompare()

    def _compared(self, row: int, got: SpanAgreement, queue_too: bool) -> None:
        self.agreement[row] = got.overall
        if queue_too:
            self.items[row] = got.differences
            kept = {signature(d) for d in got.differences}
            # A decided difference the edit removed is gone with it.
            self.decisions = {k: d for k, d in self.decisions.items() if k[0] != row or k[1] in kept}
        self.changed.emit(row)

    # Reading -------------------------------------------------------------------
    def key(self, row: int, index: int) -> Key:
        return row, signature(self.items[row][index])

    def decision(self, row: int, index: int) -> rules.Decision:
        return self.decisions.get(self.key(row, index)) or rules.undecided(self.items[row][index])

    def left(self, row: int) -> int:
        return sum((row, signature(d)) not in self.decisions for d in self.items.get(row, ()))

    def total_left(self) -> int:
        return sum(self.left(row) for row in self.items)

    def overall(self) -> Counts:
        out = Counts()
        for c in self.agreement.values():
            out += c
        return out

    def summary(self) -> str:
        c = self.overall()
        n = sum(len(v) for v in self.items.values())
        text = (f"{self.names[1]} against {self.names[0]}: F1 {c.f1:.4f} (P {c.precision:.4f}, R {c.recall:.4f}) "
                f"over {len(self.items)} document(s); {self.total_left()} of {n} difference(s) left")
        if self.stale:
            text += f"; {len(self.stale)} document(s) being compared again after an edit"
        if self.not_compared:
            text += f"; {len(self.not_compared)} of their document(s) not compared (not open, or another text)"
        return text

    def cell(self, row: int) -> tuple[str, float, str] | None:
        """The documents panel's agreement cell: text, sort value, tooltip."""
        c = self.agreement.get(row)
        if c is None:
            return None
        if row in self.stale:
            return (f"{c.f1:.2f} …", c.f1, "Edited since it was compared: being compared again")
        left = self.left(row)
        first = self.first_agreement.get(row)
        then = f"; {first.f1:.4f} when compared" if first is not None and first.f1 != c.f1 else ""
        tip = (f"F1 of {self.names[1]} against {self.names[0]} as it stands: {c.f1:.4f} (P {c.precision:.4f}, "
               f"R {c.recall:.4f}; {c.n_a} and {c.n_b} mentions{then}); {left} of {len(self.items[row])} "
               "difference(s) left to decide")
        return (f"{c.f1:.2f}" + (f" ({left})" if left else " ✓"), c.f1, tip)

    def next_row(self, after: int) -> int:
        """The next row (going round) with differences left, else -1."""
        rows = sorted(r for r in self.items if self.left(r))
        return next((r for r in rows if r > after), rows[0] if rows else -1)

    # Deciding ------------------------------------------------------------------
    def decide(self, row: int, index: int, choice: str) -> bool:
        spans = self.workspace.document(row).spans
        new, after = rules.decide(spans, self.items[row][index], self.decision(row, index), choice, self.names)
        return self._push(row, index, new, after, f"Adjudicate: {rules.CHOICE_NAMES[choice]}")

    def move_boundary(self, row: int, index: int, side: str, edge: str, tokens: int) -> bool:
        doc = self.workspace.document(row)
        got = rules.move_boundary(doc.spans, doc.text, self.items[row][index], self.decision(row, index),
                                  side, edge, tokens, self.names)
        if got is None:
            return False
        return self._push(row, index, *got, f"Adjudicate: {side}'s {edge} moved")

    def _push(self, row: int, index: int, spans: list[Span], after: rules.Decision, text: str) -> bool:
        key = self.key(row, index)
        before_state = state_of(self.workspace, row)
        done = {k for k in self.decisions if k[0] == row} | {key}
        # The last difference decided makes the document's reviewed version.
        settled = all((row, signature(d)) in done for d in self.items[row])
        status = DocStatus.REVIEWED if settled else status_after_edit(before_state.status)
        after_state = DocState(tuple(spans), status, before_state.tagged_by, before_state.rejected)
        self.stack.push(DecisionCommand(self, SpanChange(row, before_state, after_state), key,
                                        self.decisions.get(key), after, text))
        return True

    def _set(self, key: Key, decision: rules.Decision | None, generation: int) -> bool:
        """Record a decision (None: none); whether it belongs to the queue as it is (a
        decision of an earlier comparison, or of a difference an edit removed, does not)."""
        if generation != self.generation:
            return False
        if decision is None:
            self.decisions.pop(key, None)
        else:
            self.decisions[key] = decision
        self.changed.emit(key[0])
        row, what = key
        return any(signature(d) == what for d in self.items.get(row, ()))


class _Never:
    """A cancel token that is never set (a comparison run at once, in the GUI thread)."""

    def check(self) -> None:
        return None


_NEVER = _Never()


class DecisionCommand(SpansCommand):
    """One decision: the document's spans and status, and the decision, before and after.
    While it changes the spans, the session measures the agreement again but keeps the
    queue (a decision settles a difference; it does not start a new comparison), unless
    the difference is no longer in the queue."""

    def __init__(self, session: AdjudicationSession, change: SpanChange, key: Key,
                 before: rules.Decision | None, after: rules.Decision, text: str):
        super().__init__(session.workspace, [change], text)
        self.session, self.key, self.before, self.after = session, key, before, after
        self.generation = session.generation

    def _with_decision(self, decision: rules.Decision | None, change) -> None:
        in_queue = self.session._set(self.key, decision, self.generation)
        self.session._deciding = self.key[0] if in_queue else None
        try:
            change()
        finally:
            self.session._deciding = None

    def redo(self) -> None:
        self._with_decision(self.after, super().redo)

    def undo(self) -> None:
        self._with_decision(self.before, super().undo)
