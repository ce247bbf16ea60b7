"""Adjudication rules (``fastbioner.curate.adjudication``) and the annotator a span came from,
kept by JSONL, BioC and project files and dropped, with a note, by PubTator and BIO."""

from __future__ import annotations

import pytest

from fastbioner.curate.adjudication import (
    BOTH, MINE, NEITHER, THEIRS, decide, move_boundary, queue, undecided,
)
from fastbioner.curate.agreement import ONLY_B, OTHER_BOUNDARY, OTHER_LABEL
from fastbioner.io.documents import Document, Source, Span
from fastbioner.io.formats import read_documents, write_documents
from fastbioner.curate.project import Project, load_project, save_project

TEXT = "Acute renal failure after cisplatin and lithium carbonate toxicity."
NAMES = ("alice", "bob")

MINE_SPANS = [Span(0, 19, "Disease"), Span(26, 35, "Chemical", Source.CURATOR),
              Span(40, 47, "Chemical"), Span(58, 66, "Disease", Source.MODEL, 0.9)]   # a pending suggestion
THEIRS_SPANS = [Span(6, 19, "Disease"), Span(26, 35, "Disease"), Span(40, 57, "Chemical"),
                Span(58, 66, "Disease")]


def test_queue_leaves_pending_suggestions_out():
    items = queue(MINE_SPANS, THEIRS_SPANS, "d")
    assert [(i.kind, i.a and i.a.start, i.b and i.b.start) for i in items] == [
        (OTHER_BOUNDARY, 0, 6), (OTHER_LABEL, 26, 26), (OTHER_BOUNDARY, 40, 40), (ONLY_B, None, 58)]


def _mentions(spans):
    return sorted((s.start, s.end, s.label) for s in spans if s.source is not Source.MODEL)


def test_each_choice_and_deciding_again():
    item = queue(MINE_SPANS, THEIRS_SPANS)[0]          # 0..19 mine, 6..19 theirs
    start = undecided(item)
    spans, d = decide(MINE_SPANS, item, start, THEIRS, NAMES)
    assert (6, 19, "Disease") in _mentions(spans) and (0, 19, "Disease") not in _mentions(spans)
    taken = next(s for s in spans if (s.start, s.end) == (6, 19))
    assert (taken.source, taken.annotator) == (Source.CURATOR, "bob")
    spans, d = decide(spans, item, d, BOTH, NAMES)       # decided again: no stray span
    assert {(0, 19, "Disease"), (6, 19, "Disease")} <= set(_mentions(spans))
    assert next(s for s in spans if s.start == 0).annotator == "alice"
    spans, d = decide(spans, item, d, NEITHER, NAMES)
    assert not any(s.end == 19 for s in spans)
    spans, d = decide(spans, item, d, MINE, NAMES)
    assert _mentions(spans) == _mentions(MINE_SPANS)
    # The suggestion stays whatever is decided.
    assert any(s.source is Source.MODEL for s in spans)


def test_only_theirs_taken_and_mine_of_nothing():
    item = queue(MINE_SPANS, THEIRS_SPANS)[-1]          # 58..66 only theirs (mine has it as a suggestion)
    assert item.kind == ONLY_B
    spans, d = decide(MINE_SPANS, item, undecided(item), MINE, NAMES)
    assert _mentions(spans) == _mentions(MINE_SPANS) and d.spans == ()
    spans, d = decide(spans, item, d, THEIRS, NAMES)
    assert (58, 66, "Disease") in _mentions(spans)


def test_their_mention_taken_over_a_pending_suggestion_replaces_it():
    item = queue(MINE_SPANS, THEIRS_SPANS)[-1]          # theirs 58..66; mine has it as a suggestion
    spans, d = decide(MINE_SPANS, item, undecided(item), THEIRS, NAMES)
    there = [s for s in spans if s.start == 58]
    assert [(s.source, s.annotator) for s in there] == [(Source.CURATOR, "bob")]
    spans, d = decide(spans, item, d, MINE, NAMES)      # mine has nothing there: the suggestion is gone
    assert not any(s.start == 58 for s in spans)


def test_move_boundary_of_either_side():
    item = queue(MINE_SPANS, THEIRS_SPANS)[2]           # 40..47 mine, 40..57 theirs
    spans, d = move_boundary(MINE_SPANS, TEXT, item, undecided(item), MINE, "end", 1, NAMES)
    assert (40, 57, "Chemical") in _mentions(spans) and (40, 47, "Chemical") not in _mentions(spans)
    spans, d = move_boundary(spans, TEXT, item, d, MINE, "end", 1, NAMES)   # again: moves further
    assert (40, 66, "Chemical") in _mentions(spans)
    spans, d = move_boundary(spans, TEXT, item, d, THEIRS, "end", -1, NAMES)
    moved = [s for s in spans if s.start == 40]
    assert [(s.end, s.annotator, s.source) for s in moved] == [(47, "bob", Source.CURATOR)]
    assert move_boundary(spans, TEXT, queue(MINE_SPANS, THEIRS_SPANS)[-1], undecided(item), MINE,
                         "end", 1, NAMES) is None       # mine has no span there


# The annotator in files -------------------------------------------------------------------
def _doc():
    return Document("7", TEXT, spans=[Span(0, 19, "Disease", annotator="alice"),
                                      Span(26, 35, "Chemical", Source.CURATOR, annotator="bob"),
                                      Span(40, 57, "Chemical")])


@pytest.mark.parametrize("name", ["a.jsonl", "a.bioc.xml"])
def test_annotator_round_trips_in_jsonl_and_bioc(tmp_path, name):
    report = write_documents([_doc()], tmp_path / name)
    assert report.annotators_not_held == 0
    (back,) = read_documents(tmp_path / name)
    assert [(s.start, s.annotator) for s in back.spans] == [(0, "alice"), (26, "bob"), (40, None)]


def test_annotator_round_trips_in_a_project(tmp_path):
    save_project(Project.of([_doc()]), tmp_path / "p.fbproj")
    (back,) = load_project(tmp_path / "p.fbproj").documents
    assert [s.annotator for s in back.spans] == ["alice", "bob", None]


def test_jsonl_without_annotators_is_written_as_before(tmp_path):
    write_documents([Document("1", "Cocaine.", spans=[Span(0, 7, "Chemical")])], tmp_path / "a.jsonl")
    assert "annotator" not in (tmp_path / "a.jsonl").read_text()


@pytest.mark.parametrize("name", ["a.pubtator", "a.bio"])
def test_pubtator_and_bio_drop_the_annotator_with_a_note(tmp_path, name):
    report = write_documents([_doc()], tmp_path / name)
    assert report.annotators_not_held == 2
    assert "which annotator marked 2 span(s) not written" in report.summary()
    (back,) = read_documents(tmp_path / name)
    assert all(s.annotator is None for s in back.spans)
