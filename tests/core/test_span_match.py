"""The sort-and-sweep matchers of ``fastbioner.curate.span_match`` give what comparing
every mention with every other one gave (the quadratic code they replaced, kept here
as the reference), on random small annotations with duplicates, nesting, zero-length
mentions and shared offsets; and two annotators' texts that differ only in white
space a format could not hold are compared, not dropped."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastbioner.base.errors import InputError
from fastbioner.cli.main import main
from fastbioner.curate.agreement import (
    KINDS, ONLY_A, ONLY_B, OTHER_BOUNDARY, OTHER_LABEL, Counts, Difference, align_white_space, compare_spans,
    match_documents, mention,
)
from fastbioner.curate.span_match import overlapping_pairs
from fastbioner.io.documents import Document, Source, Span
from fastbioner.io.formats import read_documents, write_documents


# The all-pairs reference (the code before the sweep) ------------------------------------
def _dedup(spans):
    seen = {}
    for s in spans:
        seen.setdefault(mention(s), s)
    return sorted(seen.values(), key=lambda s: (s.start, -s.end, s.label))


def reference_counts(a, b, match):
    a, b = _dedup(a), _dedup(b)
    set_a, set_b = {mention(s) for s in a}, {mention(s) for s in b}
    per_type: dict[str, Counts] = {}
    for s in a:
        c = per_type.setdefault(s.label, Counts())
        c.n_a += 1
        c.matched_a += (mention(s) in set_b if match == "exact"
                        else any(o.label == s.label and o.overlaps(s) for o in b))
    for s in b:
        c = per_type.setdefault(s.label, Counts())
        c.n_b += 1
        c.matched_b += (mention(s) in set_a if match == "exact"
                        else any(o.label == s.label and o.overlaps(s) for o in a))
    return dict(sorted(per_type.items()))


def reference_differences(a, b, doc_id=""):
    set_a, set_b = {mention(s) for s in a}, {mention(s) for s in b}
    left_a = [s for s in _dedup(a) if mention(s) not in set_b]
    left_b = [s for s in _dedup(b) if mention(s) not in set_a]
    out = []
    for s in list(left_a):
        other = next((o for o in left_b if (o.start, o.end) == (s.start, s.end)), None)
        if other is not None:
            out.append(Difference(doc_id, OTHER_LABEL, s, other))
            left_a.remove(s)
            left_b.remove(other)
    pairs = sorted(((min(s.end, o.end) - max(s.start, o.start), s.label == o.label, -s.start, -o.start, i, j)
                    for i, s in enumerate(left_a) for j, o in enumerate(left_b) if s.overlaps(o)),
                   reverse=True)
    used_a, used_b = set(), set()
    for *_, i, j in pairs:
        if i in used_a or j in used_b:
            continue
        used_a.add(i)
        used_b.add(j)
        out.append(Difference(doc_id, OTHER_BOUNDARY, left_a[i], left_b[j]))
    out.extend(Difference(doc_id, ONLY_A, s, None) for i, s in enumerate(left_a) if i not in used_a)
    out.extend(Difference(doc_id, ONLY_B, None, o) for j, o in enumerate(left_b) if j not in used_b)
    return sorted(out, key=lambda d: (d.start, KINDS.index(d.kind)))


@st.composite
def spans(draw, length=30):
    """Mentions on a short text: few labels and offsets, so that duplicates, nested,
    crossing, shared-offset and zero-length mentions all come up."""
    start = draw(st.integers(0, length))
    end = draw(st.integers(start, min(length, start + draw(st.sampled_from([0, 1, 3, 8, 30])))))
    return Span(start, end, draw(st.sampled_from("XYZ")), source=draw(st.sampled_from(list(Source))))


annotations = st.lists(spans(), max_size=14)


@settings(max_examples=400, deadline=None)
@given(a=annotations, b=annotations, match=st.sampled_from(["exact", "overlap"]))
def test_the_sweep_gives_what_comparing_every_pair_gave(a, b, match):
    got = compare_spans(a, b, match, "d")
    assert got.per_type == reference_counts(a, b, match)
    assert got.differences == reference_differences(a, b, "d")
    assert sum(c.n_a for c in got.per_type.values()) == got.overall.n_a


@settings(max_examples=200, deadline=None)
@given(a=annotations, b=annotations)
def test_overlapping_pairs_are_every_overlapping_pair_once(a, b):
    got = overlapping_pairs(a, b)
    assert Counter(got) == Counter((i, j) for i, x in enumerate(a) for j, y in enumerate(b) if x.overlaps(y))


def test_mentions_nested_by_the_thousand_are_refused_in_one_line_not_left_to_fill_memory():
    a = [Span(0, 1000 - i, "X") for i in range(50)]
    b = [Span(i, 1000, "X") for i in range(1, 50)]
    assert len(overlapping_pairs(a, b)) == 50 * 49
    with pytest.raises(InputError, match="document d7: over 1,000 pairs of overlapping mentions"):
        overlapping_pairs(a, b, "d7", limit=1000)


def test_many_mentions_a_side_are_compared_without_trying_every_pair():
    # 20,000 a side, every kind of difference; all pairs would be 4e8 comparisons.
    a, b = [], []
    for k in range(20_000):
        s = 10 * k
        a.append(Span(s, s + 4, "X"))
        b.append([Span(s, s + 4, "X"), Span(s, s + 4, "Y"), Span(s + 1, s + 6, "X"), Span(s + 7, s + 8, "X")][k % 4])
    got = compare_spans(a, b, "overlap")
    assert (got.overall.matched_a, got.overall.matched_b) == (10_000, 10_000)
    kinds = Counter(d.kind for d in got.differences)
    assert kinds == {OTHER_LABEL: 5000, OTHER_BOUNDARY: 5000, ONLY_A: 5000, ONLY_B: 5000}


# Texts that differ only in white space ----------------------------------------------------
def test_a_title_less_document_back_from_pubtator_is_compared_with_its_source(tmp_path):
    # PubTator writes a document without a title as an empty title line: read back, its
    # text starts with a space and every offset is one further.
    source = Document("7", "Cisplatin\tcaused renal\nfailure.", spans=[Span(0, 9, "Chemical"), Span(17, 30, "Disease")])
    write_documents([source], tmp_path / "s.jsonl")
    tagged = Document("7", source.text, spans=[Span(0, 9, "Chemical"), Span(23, 30, "Disease")])
    write_documents([tagged], tmp_path / "t.pubtator")
    back = list(read_documents(tmp_path / "t.pubtator"))[0]
    assert back.text != source.text
    m = match_documents([source], [back])
    assert m.aligned == ["7"] and not m.text_differs
    (_, moved), = m.pairs
    assert [(s.start, s.end) for s in moved.spans] == [(0, 9), (23, 30)] and moved.text == source.text
    got = compare_spans(source.spans, moved.spans)
    assert (got.overall.matched_a, [d.kind for d in got.differences]) == (1, [OTHER_BOUNDARY])


def test_a_conll_export_is_compared_with_its_source(tmp_path, capsys):
    source = Document("12", "Lithium-induced  nephropathy (LIN), rare.\n\nSecond one.",
                      spans=[Span(0, 7, "Chemical"), Span(17, 28, "Disease"), Span(30, 33, "Disease")])
    write_documents([source], tmp_path / "a.jsonl")
    write_documents([source], tmp_path / "b.bio")
    assert list(read_documents(tmp_path / "b.bio"))[0].text != source.text
    assert main(["agree", str(tmp_path / "a.jsonl"), str(tmp_path / "b.bio")]) == 0
    out = capsys.readouterr().out
    assert "overall   P 1.0000  R 1.0000  F1 1.0000  (A 3, B 3)" in out and "kappa 1.0000" in out
    assert "1 document(s) compared with their white space aligned: 12" in out


def test_other_characters_still_make_the_text_differ():
    a = Document("1", "renal failure", spans=[Span(0, 5, "X")])
    assert align_white_space(a, Document("1", "renal  failures")) is None
    assert align_white_space(a, Document("1", "Renal failure")) is None
    m = match_documents([a], [Document("1", "renal-failure")])
    assert m.text_differs == ["1"] and not m.pairs


def test_mentions_edged_with_white_space_keep_their_first_and_last_characters():
    a = Document("1", "a bc d")
    b = Document("1", " a  bc\td ", spans=[Span(0, 3, "X"), Span(3, 7, "Y"), Span(3, 4, "Z"), Span(8, 9, "W")])
    moved = align_white_space(a, b)
    assert [(s.start, s.end, s.label) for s in moved.spans] == [(0, 1, "X"), (2, 4, "Y"), (2, 2, "Z"), (6, 6, "W")]
