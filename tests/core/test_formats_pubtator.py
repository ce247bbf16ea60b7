"""PubTator: text layout, mentions with concept ids, relations, offset checks."""

from __future__ import annotations

import pytest

from fastbioner.io.documents import Document, Passage, Span
from fastbioner.base.errors import InputError
from fastbioner.io.formats import pubtator

TITLE = "Lithium carbonate toxicity in a newborn."
ABSTRACT = "A newborn with tricuspid regurgitation had a high serum lithium level."
PUBTATOR = (
    f"111|t|{TITLE}\n111|a|{ABSTRACT}\n"
    "111\t0\t17\tLithium carbonate\tChemical\tD016651\n"
    "111\t18\t26\tLithium carbonate toxicity\tDisease\tD064420\n"
    "111\t56\t79\ttricuspid regurgitation\tDisease\tD014262\tcomposite|parts\n"
    "111\tCID\tD016651\tD064420\n\n"
    "222|t|No abstract here.\n222|a|\n\n"
)


def write(tmp_path, text, name="p.pubtator"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def fixed(text):
    # the second mention line above deliberately names the wrong text; fix it for the happy path
    return text.replace("\tLithium carbonate toxicity\tDisease", "\ttoxicity\tDisease")


def test_read_layout_mentions_and_relations(tmp_path):
    docs = list(pubtator.read(write(tmp_path, fixed(PUBTATOR))))
    doc = docs[0]
    assert doc.id == "111" and doc.title == TITLE and doc.abstract == ABSTRACT
    assert doc.text == f"{TITLE} {ABSTRACT}"
    assert doc.passages == [Passage(0, len(TITLE), "title"), Passage(len(TITLE) + 1, len(doc.text), "abstract")]
    assert [(doc.span_text(s), s.label, s.concept_id) for s in doc.spans] == [
        ("Lithium carbonate", "Chemical", "D016651"), ("toxicity", "Disease", "D064420"),
        ("tricuspid regurgitation", "Disease", "D014262")]
    assert doc.relations == [("CID", "D016651", "D064420")]
    assert docs[1].text == "No abstract here." and docs[1].abstract == ""


def test_round_trip_is_exact(tmp_path):
    src = write(tmp_path, fixed(PUBTATOR))
    docs = list(pubtator.read(src))
    out = tmp_path / "out.pubtator"
    pubtator.write(docs, out)
    assert out.read_text() == src.read_text()
    assert list(pubtator.read(out)) == docs


def test_mismatched_offsets_name_the_line(tmp_path):
    with pytest.raises(InputError, match=r"p\.pubtator:4: mention text 'Lithium carbonate toxicity' does not match"):
        list(pubtator.read(write(tmp_path, PUBTATOR)))
    outside = fixed(PUBTATOR).replace("111\t56\t79", "111\t56\t790")
    with pytest.raises(InputError, match=r":5: mention offsets 56\.\.790 fall outside"):
        list(pubtator.read(write(tmp_path, outside)))


def test_lines_outside_a_document_and_garbage(tmp_path):
    with pytest.raises(InputError, match=r":1: line belongs to no document"):
        list(pubtator.read(write(tmp_path, "111\t0\t3\tabc\tX\n")))
    with pytest.raises(InputError, match=r":2: cannot read this PubTator line"):
        list(pubtator.read(write(tmp_path, "1|t|Title\n1\t5\n")))
    with pytest.raises(InputError, match="empty file"):
        list(pubtator.read(write(tmp_path, "\n")))


def test_documents_from_other_layouts_are_written_with_consistent_offsets(tmp_path):
    # No title, text split by a new line: PubTator needs "title abstract" on two lines.
    doc = Document("9", "Cocaine kills.\nRats died.", [Passage(0, 14, "sentence"), Passage(15, 25, "sentence")],
                   spans=[Span(0, 7, "Chemical"), Span(20, 24, "Disease")])
    out = tmp_path / "o.pubtator"
    pubtator.write([doc], out)
    (back,) = pubtator.read(out)
    assert [back.span_text(s) for s in back.spans] == ["Cocaine", "died"]


def test_mentions_are_written_in_offset_order_with_six_columns(tmp_path):
    """A curator's added entity (appended to the spans) is written in its place, and a
    mention without a concept id keeps an empty sixth column, read back as no id."""
    doc = Document("7", "Cocaine seizures in rats.", [Passage(0, 25, "title")],
                   spans=[Span(8, 16, "Disease", concept_id="D012640"), Span(20, 24, "Species")])
    doc.spans.append(Span(0, 7, "Chemical"))  # added last, first in the text
    out = tmp_path / "o.pubtator"
    pubtator.write([doc], out)
    mentions = [line.split("\t") for line in out.read_text().splitlines() if "\t" in line]
    assert [m[1:3] for m in mentions] == [["0", "7"], ["8", "16"], ["20", "24"]]
    assert [len(m) for m in mentions] == [6, 6, 6]
    assert [m[5] for m in mentions] == ["", "D012640", ""]
    (back,) = pubtator.read(out)
    assert back.spans == sorted(doc.spans, key=lambda s: s.start)
    assert [s.concept_id for s in back.spans] == [None, "D012640", None]
