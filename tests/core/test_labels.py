"""Tagging schemes, repair, label sets, and spans <-> tags."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastbioner.io.documents import Document, Source, Span
from fastbioner.io.labels import (
    bio_labels, detect_scheme, document_tagged_sentences, entity_types, from_iob2, iob2_chunks,
    repair_iob2, spans_to_tags, split_tag, tags_to_spans, to_iob2,
)
from fastbioner.io.text import split_sentences

IOB2 = ["B-Chem", "I-Chem", "O", "B-Dis", "B-Dis", "I-Dis", "O", "B-Chem"]
IOB1 = ["I-Chem", "I-Chem", "O", "I-Dis", "B-Dis", "I-Dis", "O", "I-Chem"]
IOBES = ["B-Chem", "E-Chem", "O", "S-Dis", "B-Dis", "E-Dis", "O", "S-Chem"]


@pytest.mark.parametrize("scheme,tags", [("IOB1", IOB1), ("IOBES", IOBES), ("IOB2", IOB2), ("bio", IOB2)])
def test_schemes_convert_both_ways(scheme, tags):
    assert to_iob2(tags, scheme) == IOB2
    assert from_iob2(IOB2, scheme) == tags


def test_repair_turns_stray_inside_tags_into_beginnings():
    tags, n = repair_iob2(["I-Chem", "O", "I-Dis", "B-Chem", "I-Dis", "I-Dis"])
    assert tags == ["B-Chem", "O", "B-Dis", "B-Chem", "B-Dis", "I-Dis"]
    assert n == 3
    assert repair_iob2(IOB2) == (IOB2, 0)


def test_unknown_tags_are_rejected():
    for bad in ["X", "B-", "B_Chem", "Chemical", ""]:
        with pytest.raises(ValueError, match="unknown tag"):
            split_tag(bad)
    assert split_tag("B-Gene-or-protein") == ("B", "Gene-or-protein")


def test_detect_scheme():
    assert detect_scheme(IOBES) == "IOBES"
    assert detect_scheme(IOB2) == "IOB2"


def test_label_sets_are_stable_whatever_the_input_order():
    assert entity_types(["O", "I-Disease", "B-Chemical", "Disease"]) == ["Chemical", "Disease"]
    assert bio_labels(["Disease", "Chemical"]) == ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    assert bio_labels(["B-Disease", "Chemical", "I-Chemical"]) == bio_labels(["Chemical", "Disease"])
    assert bio_labels(["X"], "IOBES") == ["O", "B-X", "I-X", "E-X", "S-X"]


tag_lists = st.lists(st.sampled_from(["O", "B-A", "I-A", "B-B", "I-B"]), max_size=30)


@given(tag_lists)
def test_repaired_sequences_survive_every_scheme(tags):
    valid, _ = repair_iob2(tags)
    for scheme in ("IOB1", "IOBES"):
        assert to_iob2(from_iob2(valid, scheme), scheme) == valid
    assert iob2_chunks(valid) == iob2_chunks(tags)  # repair does not change the entities


TEXT = "Lithium carbonate toxicity in a newborn with 5-HT3 receptor block."


def sentence():
    (s,) = split_sentences(TEXT)
    return s


def test_spans_to_tags_and_back_with_character_offsets():
    s = sentence()
    spans = [Span(0, 17, "Chemical"), Span(18, 26, "Disease")]
    tags, left_out, off = spans_to_tags(s, spans)
    assert tags[:4] == ["B-Chemical", "I-Chemical", "B-Disease", "O"]
    assert left_out == [] and off == []
    back = tags_to_spans(s, tags, label_source=Source.GOLD)
    assert back == spans
    assert [TEXT[b.start:b.end] for b in back] == ["Lithium carbonate", "toxicity"]


def test_overlapping_spans_longest_first_and_reported():
    s = sentence()
    long = Span(0, 26, "Disease")        # "Lithium carbonate toxicity"
    inner = Span(0, 7, "Chemical")       # "Lithium"
    other = Span(8, 26, "Disease")       # "carbonate toxicity"
    tags, left_out, off = spans_to_tags(s, [inner, long, other])
    assert tags[:3] == ["B-Disease", "I-Disease", "I-Disease"]
    assert set(left_out) == {inner, other}
    assert off == []


def test_spans_off_token_boundaries_are_reported_not_tagged():
    s = sentence()
    partial = Span(TEXT.index("5-HT3"), TEXT.index("5-HT3") + 4, "Chemical")  # "5-HT" inside "HT3"
    tags, left_out, off = spans_to_tags(s, [partial])
    assert off == [partial] and left_out == []
    assert set(tags) == {"O"}


def test_tags_to_spans_scores_and_iobes():
    s = sentence()
    tags = ["S-Chemical", "O", "B-Disease", "E-Disease"] + ["O"] * (len(s.tokens) - 4)
    spans = tags_to_spans(s, tags, scores=[0.9, 0.1, 0.6, 0.8] + [0.0] * (len(s.tokens) - 4), scheme="IOBES")
    assert [(TEXT[x.start:x.end], x.label, x.source) for x in spans] == [
        ("Lithium", "Chemical", Source.MODEL), ("toxicity in", "Disease", Source.MODEL)]
    assert spans[1].score == pytest.approx(0.7)
    with pytest.raises(ValueError, match="tags for"):
        tags_to_spans(s, ["O"])


def test_document_view_counts_spans_across_passages_as_off_boundary():
    doc = Document.from_parts("1", "Cocaine toxicity.", [(None, "Seizures followed. Naloxone helped.")])
    crossing = Span(8, 26, "Disease")  # "toxicity. Seizures": title into abstract
    doc.spans = [Span(0, 7, "Chemical"), crossing, Span(37, 45, "Chemical", Source.MODEL)]
    view = document_tagged_sentences(doc)
    assert [s.words[0] for s in view.sentences] == ["Cocaine", "Seizures", "Naloxone"]
    assert view.off_boundary == [crossing]
    assert view.n_spans_written == 2
    gold_only = document_tagged_sentences(doc, sources=[Source.GOLD])
    assert gold_only.sentences[2].tags == ("O", "O", "O")
