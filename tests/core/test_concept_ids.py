"""Concept (MeSH) ids: edited by a curator, kept through relabel and re-tagging, and
carried by the formats that hold them (PubTator, BioC, JSONL) there and back."""

from __future__ import annotations

import pytest

from fastbioner.curate import curation
from fastbioner.io.documents import Document, Source, Span
from fastbioner.io.formats import read_documents, write_documents


def _document() -> Document:
    doc = Document.from_parts("7", "Lithium carbonate and heart failure.",
                              [(None, "Rats given lithium died; nothing else happened.")])
    text = doc.text

    def at(word: str, label: str, **kw) -> Span:
        i = text.rindex(word)
        return Span(i, i + len(word), label, **kw)

    doc.spans = [at("Lithium carbonate", "Chemical", concept_id="D016651"),          # gold with an id
                 at("heart failure", "Disease", source=Source.CURATOR, concept_id="D006333|D009203"),  # composite
                 at("lithium", "Chemical", source=Source.MODEL, score=0.75),       # a suggestion: none
                 at("Rats", "Species", source=Source.CURATOR, concept_id="-1")]    # NCBI disease's "no id"
    return doc


def _ids(doc: Document) -> list[tuple[str, str, str | None]]:
    return sorted((doc.span_text(s), s.label, s.concept_id) for s in doc.spans)


@pytest.mark.parametrize("fmt", ["pubtator", "bioc", "jsonl"])
def test_concept_ids_round_trip(tmp_path, fmt):
    doc = _document()
    # An id a curator just typed into the entity table goes out and comes back too.
    edited = curation.set_concept_id(doc.spans, doc.spans[2], "D008094")
    doc.spans = edited
    path = tmp_path / f"out.{fmt}"
    write_documents([doc], path, fmt)
    (back,) = read_documents(path, fmt)
    assert _ids(back) == _ids(doc)
    assert ("lithium", "Chemical", "D008094") in _ids(back)
    # Written again, the file is the same: nothing is lost or invented on the way.
    again = tmp_path / f"again.{fmt}"
    write_documents([back], again, fmt)
    assert again.read_text(encoding="utf-8") == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", ["pubtator", "bioc", "jsonl"])
def test_a_cleared_concept_id_stays_cleared(tmp_path, fmt):
    doc = _document()
    doc.spans = curation.set_concept_id(doc.spans, doc.spans[0], "  ")
    path = tmp_path / f"out.{fmt}"
    write_documents([doc], path, fmt)
    (back,) = read_documents(path, fmt)
    assert ("Lithium carbonate", "Chemical", None) in _ids(back)


def test_set_concept_id_is_the_curators_and_refuses_spaces():
    doc = _document()
    suggestion = doc.spans[2]
    spans = curation.set_concept_id(doc.spans, suggestion, " D008094 ")
    assert suggestion.with_(concept_id="D008094", source=Source.CURATOR) in spans and suggestion not in spans
    assert curation.set_concept_id(spans, spans[0], "D016651") == spans  # unchanged id: unchanged spans
    with pytest.raises(ValueError, match="no spaces"):
        curation.set_concept_id(doc.spans, suggestion, "D00 8094")


def test_relabel_and_retagging_keep_concept_ids():
    doc = _document()
    gold, heart = doc.spans[0], doc.spans[1]
    relabelled = curation.relabel_span(doc.spans, heart, "Chemical")
    assert heart.with_(label="Chemical") in relabelled
    # Re-tagging: the model suggests the same mentions, without ids; the gold and the
    # curated spans stay with theirs.
    suggestions = [Span(gold.start, gold.end, "Chemical", Source.MODEL, 0.9),
                   Span(heart.start, heart.end, "Disease", Source.MODEL, 0.8)]
    merged = curation.merge_model_spans(doc.spans, suggestions)
    assert gold in merged and heart in merged
    # Even when re-tagging replaces the curated spans, the same mention keeps its id.
    replaced = curation.merge_model_spans(doc.spans, suggestions, replace_curated=True)
    again = next(s for s in replaced if (s.start, s.end) == (heart.start, heart.end))
    assert again.source is Source.MODEL and again.concept_id == "D006333|D009203"
    assert gold in replaced
