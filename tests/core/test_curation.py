"""The curation rules the app relies on: snapping, edits, suggestions, re-tagging."""

from fastbioner.curate import curation
from fastbioner.io.documents import Document, Source, Span

TEXT = "Lithium carbonate-induced renal failure in rats."


def test_selection_snaps_to_whole_tokens_and_drops_gaps():
    tokens = curation.token_bounds(TEXT)
    # "thium carbon" (inside two words) becomes "Lithium carbonate".
    assert curation.snap_to_tokens(2, 14, tokens) == (0, 17)
    # A hyphen is a token of its own: "-induced" stays three tokens, not the word before.
    start = TEXT.index("induced")
    assert curation.snap_to_tokens(start + 1, start + 3, tokens) == (start, start + 7)
    # Leading and trailing spaces fall away.
    r = TEXT.index("renal")
    assert curation.snap_to_tokens(r - 1, r + 14, tokens) == (r, r + len("renal failure"))
    # Only white space selected: nothing to snap to.
    assert curation.snap_to_tokens(r - 1, r - 1, tokens) == (r - 1, r - 1)


def test_add_relabel_remove_keep_other_spans_and_overlaps():
    gold = Span(0, 17, "Chemical", concept_id="D016651")
    spans = curation.add_span([gold], Span(0, 39, "Disease", Source.MODEL, 0.4))
    added = spans[-1]
    assert added.source is Source.CURATOR and added.score is None
    assert gold in spans  # overlapping mentions are allowed
    # Adding the same mention again does not double it.
    assert len(curation.add_span(spans, Span(0, 39, "Disease"))) == 2
    relabelled = curation.relabel_span(spans, gold, "Disease")
    # The concept id stays through a relabel (a curator fixing the type keeps the id).
    assert Span(0, 17, "Disease", Source.CURATOR, concept_id="D016651") in relabelled and gold not in relabelled
    assert curation.remove_spans(relabelled, [added]) == [Span(0, 17, "Disease", Source.CURATOR,
                                                               concept_id="D016651")]


def test_accept_and_reject_touch_only_model_suggestions():
    gold = Span(0, 17, "Chemical")
    m1 = Span(26, 39, "Disease", Source.MODEL, 0.9)
    m2 = Span(43, 47, "Chemical", Source.MODEL, 0.2)
    one = curation.accept_suggestions([gold, m1, m2], [m1])
    assert one == [gold, m1.with_(source=Source.CURATOR), m2]
    assert curation.accept_suggestions([gold, m1, m2]) == [gold, m1.with_(source=Source.CURATOR),
                                                          m2.with_(source=Source.CURATOR)]
    assert curation.reject_suggestions([gold, m1, m2], [m2]) == [gold, m1]
    assert curation.reject_suggestions([gold, m1, m2]) == [gold]


def test_retagging_never_overwrites_curated_spans_unless_asked():
    curated = Span(26, 39, "Disease", Source.CURATOR)
    gold = Span(0, 17, "Chemical")
    old = Span(43, 47, "Chemical", Source.MODEL, 0.5)
    new = [Span(26, 31, "Chemical", Source.MODEL, 0.8),   # overlaps the curated span
           Span(0, 17, "Chemical", Source.MODEL, 0.9),    # same as gold: adds nothing
           Span(18, 25, "Disease", Source.MODEL, 0.7)]
    merged = curation.merge_model_spans([gold, curated, old], new)
    assert curated in merged and gold in merged
    assert old not in merged  # the model's previous suggestion gave way
    assert [s for s in merged if s.source is Source.MODEL] == [new[2]]
    forced = curation.merge_model_spans([gold, curated, old], new, replace_curated=True)
    assert curated not in forced and new[0] in forced


def test_spans_at_prefers_the_innermost_and_low_confidence_is_for_model_spans():
    outer, inner = Span(0, 39, "Disease"), Span(0, 17, "Chemical")
    assert curation.spans_at([outer, inner], 3) == [inner, outer]
    assert curation.spans_at([outer, inner], 20) == [outer]
    assert curation.is_low_confidence(Span(0, 3, "X", Source.MODEL, 0.2))
    assert not curation.is_low_confidence(Span(0, 3, "X", Source.MODEL, 0.9))
    assert not curation.is_low_confidence(Span(0, 3, "X", Source.GOLD, 0.2))


def test_select_sources_copies_without_touching_the_original():
    doc = Document("1", TEXT, spans=[Span(0, 17, "Chemical"), Span(26, 39, "Disease", Source.MODEL, 0.5)])
    gold_only = curation.select_sources(doc, [Source.GOLD])
    assert gold_only.spans == [Span(0, 17, "Chemical")]
    assert len(doc.spans) == 2 and gold_only.text == doc.text and gold_only.passages == doc.passages


def test_a_boundary_fix_replaces_the_suggestion_it_covers():
    gold = Span(0, 17, "Chemical")
    short = Span(26, 31, "Disease", Source.MODEL, 0.8)        # "renal"
    elsewhere = Span(43, 47, "Chemical", Source.MODEL, 0.4)   # "rats"
    fixed = curation.add_span([gold, short, elsewhere], Span(26, 39, "Disease"))   # "renal failure"
    assert short not in fixed and elsewhere in fixed and gold in fixed
    assert Span(26, 39, "Disease", Source.CURATOR) in fixed
    # of another label too: the curator decided that text
    relabelled = curation.add_span([short], Span(26, 39, "Chemical"))
    assert relabelled == [Span(26, 39, "Chemical", Source.CURATOR)]


def test_resize_moves_one_edge_by_whole_tokens():
    renal = Span(26, 31, "Disease", Source.MODEL, 0.8)          # "renal"
    grown = curation.resize_span([renal], renal, TEXT, "end", 1)
    assert [(TEXT[s.start:s.end], s.source) for s in grown] == [("renal failure", Source.CURATOR)]
    back = curation.resize_span(grown, grown[0], TEXT, "end", -1)
    assert [TEXT[s.start:s.end] for s in back] == ["renal"]
    # never below one token, never past the text
    assert curation.resize_span(back, back[0], TEXT, "end", -1) == back
    left = curation.resize_span(back, back[0], TEXT, "start", -1)
    assert [TEXT[s.start:s.end] for s in left] == ["induced renal"]
    assert [TEXT[s.start:s.end] for s in curation.resize_span(left, left[0], TEXT, "start", 1)] == ["renal"]
    whole = curation.resize_span(back, back[0], TEXT, "start", -100)
    assert TEXT[whole[0].start:whole[0].end] == "Lithium carbonate-induced renal"


def test_entity_states_name_the_review_decision():
    assert [curation.entity_state(Span(0, 1, "X", src)) for src in (Source.GOLD, Source.CURATOR, Source.MODEL)] \
        == ["gold", "accepted", "suggested"]


def test_a_rejected_suggestion_is_not_offered_again():
    m1 = Span(26, 39, "Disease", Source.MODEL, 0.9)
    m2 = Span(43, 47, "Chemical", Source.MODEL, 0.2)
    rejected = curation.rejected_after([], [m1, m2], [m2])
    assert rejected == [m2] and curation.rejected_after(rejected, [m2]) == [m2]  # not doubled
    again = [Span(43, 47, "Chemical", Source.MODEL, 0.3), Span(43, 47, "Disease", Source.MODEL, 0.6)]
    merged = curation.merge_model_spans([m1], again, rejected=rejected)
    assert merged == [again[1]]  # the same mention stays rejected; another label is new
