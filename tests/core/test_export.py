"""Export: the chosen sources only, one file or one per document with safe unique names,
and the count of overlapping spans BIO could not hold."""

from __future__ import annotations

from fastbioner.io.documents import Document, Source, Span
from fastbioner.curate.export import ExportSettings, export_documents
from fastbioner.io.formats import read_documents


def _docs() -> list[Document]:
    a = Document("12/3", "Lithium carbonate toxicity in rats.")
    a.spans = [Span(0, 7, "Chemical"), Span(0, 17, "Chemical", Source.CURATOR),
               Span(0, 26, "Disease", Source.MODEL, 0.6)]
    b = Document("12/3", "Cocaine seizures.", spans=[Span(0, 7, "Chemical", Source.MODEL, 0.9)])
    return [a, b]


def test_one_file_per_document_with_unique_safe_names(tmp_path):
    everything = (Source.GOLD, Source.MODEL, Source.CURATOR)
    result = export_documents(_docs(), tmp_path / "out", ExportSettings("JSONL (lossless)", everything,
                                                                        per_document=True))
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["12_3-2.jsonl", "12_3.jsonl"]
    assert result.documents == 2 and result.spans == 4
    back = next(read_documents(tmp_path / "out" / "12_3.jsonl"))
    assert back.spans == _docs()[0].spans


def test_sources_are_chosen_and_bio_overlaps_are_counted(tmp_path):
    settings = ExportSettings("BIO / CoNLL (IOB2)", (Source.GOLD, Source.CURATOR))
    result = export_documents(_docs(), tmp_path / "out.conll", settings)
    assert result.left_out == 1  # "Lithium" inside the curated "Lithium carbonate"
    assert "1 overlapping span(s) BIO could not hold" in result.summary()
    back = list(read_documents(tmp_path / "out.conll"))
    assert [(d.span_text(s), s.label) for d in back for s in d.spans] == [("Lithium carbonate", "Chemical")]


def test_the_default_takes_gold_and_accepted_entities_and_names_every_dropped_span(tmp_path):
    doc = Document.from_parts("77", "Title here.", [(None, "Heart failure. Cardiac arrest occurred.")])
    t = doc.text
    crossing = Span(t.index("Heart"), t.index("Cardiac") + 7, "Disease", Source.CURATOR)
    doc.spans = [crossing, Span(t.index("arrest"), t.index("arrest") + 6, "Disease", Source.MODEL, 0.9),
                 Span(t.index("Cardiac"), t.index("arrest") + 6, "Disease"),
                 Span(t.index("arrest"), t.index("arrest") + 6, "Disease", Source.CURATOR)]
    result = export_documents([doc], tmp_path / "out.conll", ExportSettings())
    assert len(result.dropped) == 2
    assert result.dropped[0] == (f"77: 'Heart failure. Cardiac' (Disease, curator, {crossing.start}..{crossing.end}): "
                                 "crosses a sentence end (BIO holds an entity within one sentence)")
    assert result.dropped[1].startswith("77: 'arrest' (Disease, curator,") and "overlaps a longer span" in \
        result.dropped[1]
    back = next(read_documents(tmp_path / "out.conll"))
    assert [back.span_text(s) for s in back.spans] == ["Cardiac arrest"]  # no suggestion slipped in
