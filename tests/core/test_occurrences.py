"""Annotate all occurrences: finding every identical string (case rule, whole tokens)
and what accepting, adding, relabelling or rejecting all of them does, with the
preview counts that are shown before it happens."""

import pytest

from fastbioner.io.documents import Document, Source, Span
from fastbioner.curate.occurrences import (
    ACCEPT, ADD, EXACT, IGNORE_CASE, RELABEL, REJECT, Rule, apply_rule, find_occurrences, preview,
)

TEXT = "Lithium toxicity. lithium and LITHIUM; lithiumchloride. Lithium\nlevel high."


def _at(text, word, nth=0):
    start = -1
    for _ in range(nth + 1):
        start = text.index(word, start + 1)
    return start, start + len(word)


def test_case_rule_and_whole_tokens_decide_what_is_identical():
    exact = find_occurrences(TEXT, "Lithium", EXACT, whole_tokens=True)
    assert [TEXT[s:e] for s, e in exact] == ["Lithium", "Lithium"]
    folded = find_occurrences(TEXT, "lithium", IGNORE_CASE, whole_tokens=True)
    assert [TEXT[s:e] for s, e in folded] == ["Lithium", "lithium", "LITHIUM", "Lithium"]
    # Inside "lithiumchloride" only when whole tokens are not asked for.
    loose = find_occurrences(TEXT, "lithium", IGNORE_CASE, whole_tokens=False)
    assert len(loose) == 5 and _at(TEXT, "lithiumchloride")[0] in [s for s, _ in loose]
    # White space in the phrase matches any white space (a line break too).
    assert [TEXT[s:e] for s, e in find_occurrences(TEXT, "Lithium level", EXACT)] == ["Lithium\nlevel"]


def test_the_whole_token_rule_is_the_tokenizers():
    from fastbioner.curate.curation import token_bounds

    text = "Na+/K+ ATPase; 5-HT_3 and α-tocopherol (αT), lithium2 lithium_x x-lithium lithium."
    for phrase in ["lithium", "T", "Na", "K+", "α", "HT", "tocopherol", "3", "x"]:
        for case in (EXACT, IGNORE_CASE):
            assert find_occurrences(text, phrase, case) == \
                find_occurrences(text, phrase, case, tokens=token_bounds(text)), phrase


def _doc():
    doc = Document("1", TEXT)
    s0, s1, s2, s3 = (_at(TEXT, "Lithium"), _at(TEXT, "lithium"), _at(TEXT, "LITHIUM"), _at(TEXT, "Lithium", 1))
    doc.spans = [Span(*s0, "Chemical", Source.GOLD, concept_id="D008094"),
                 Span(*s1, "Chemical", Source.MODEL, 0.8),
                 Span(*s2, "Chemical", Source.MODEL, 0.6),
                 Span(*s3, "Disease", Source.MODEL, 0.4),          # another label: not the same mention
                 Span(*_at(TEXT, "toxicity"), "Disease", Source.MODEL, 0.9)]
    return doc


def test_accept_all_accepts_matching_suggestions_only_and_gives_them_the_id():
    doc = _doc()
    out = apply_rule(doc, Rule("lithium", "Chemical", ACCEPT, concept_id="D008094", case=IGNORE_CASE))
    assert out.accepted == 2 and out.added == 0
    chem = [s for s in out.spans if s.label == "Chemical"]
    assert all(s.source is not Source.MODEL for s in chem)
    assert {s.concept_id for s in chem} == {"D008094"}
    # The Disease suggestion on "Lithium" and the other suggestion are untouched.
    assert [s for s in out.spans if s.label == "Disease"] == [s for s in doc.spans if s.label == "Disease"]
    # Exact case: only "lithium" as written (the gold "Lithium" is no suggestion).
    assert apply_rule(doc, Rule("lithium", "Chemical", ACCEPT)).accepted == 1


def test_add_marks_every_occurrence_skips_decided_ones_and_overrides_suggestions():
    doc = _doc()
    del doc.spans[2]  # no suggestion on "LITHIUM"; a curator's wider span there instead
    doc.spans.append(Span(*_at(TEXT, "LITHIUM;"), "Chemical", Source.CURATOR))
    out = apply_rule(doc, Rule("Lithium", "Chemical", ADD, case=IGNORE_CASE, concept_id="D008094"))
    # "Lithium" gold: nothing to do; "lithium": suggestion accepted; "LITHIUM": inside the
    # curator's wider span, skipped; second "Lithium": the Disease suggestion gives way.
    assert (out.accepted, out.added, out.skipped) == (1, 1, 1)
    second = _at(TEXT, "Lithium", 1)
    assert Span(*second, "Chemical", Source.CURATOR, concept_id="D008094") in out.spans
    assert not any(s.label == "Disease" and (s.start, s.end) == second for s in out.spans)
    assert len(doc.spans) == 5 and sum(s.source is Source.MODEL for s in doc.spans) == 3  # unchanged


def test_relabel_all_and_reject_all_keep_to_text_and_label():
    doc = _doc()
    out = apply_rule(doc, Rule("lithium", "Chemical", RELABEL, new_label="Disease", case=IGNORE_CASE))
    assert out.relabelled == 3  # gold and both suggestions: the curator now owns them
    assert sum(1 for s in out.spans if s.label == "Disease" and s.source is Source.CURATOR) == 3
    out = apply_rule(doc, Rule("lithium", "Chemical", REJECT, case=IGNORE_CASE))
    assert out.rejected_now == 2 and len(out.rejected) == 2
    assert [s for s in out.spans if s.label == "Chemical"] == [doc.spans[0]]  # gold stays


def test_project_preview_counts_what_apply_does():
    docs = [_doc(), Document("2", "No mention here."), _doc()]
    rule = Rule("lithium", "Chemical", ACCEPT, case=IGNORE_CASE)
    got = preview([(d, []) for d in docs], rule)
    assert sorted(got.outcomes) == [0, 2] and got.documents == 2
    assert got.total("accepted") == 4 == got.changes
    assert got.describe() == "Accepts 4 suggestions in 2 documents"
    assert preview([(docs[1], [])], rule).describe() == "Changes nothing"
    skipped = preview([(d, []) for d in docs[:1]], Rule("toxicity", "Disease", ADD))
    assert skipped.describe() == "Accepts 1 suggestion in 1 document"


def test_bad_rules_are_refused():
    with pytest.raises(ValueError):
        Rule("x", "Chemical", RELABEL)
    with pytest.raises(ValueError):
        Rule("  ", "Chemical", ACCEPT)
    with pytest.raises(ValueError):
        Rule("x", "Chemical", "delete")
