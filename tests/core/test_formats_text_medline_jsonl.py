"""MEDLINE text, plain text and JSONL."""

from __future__ import annotations

import json

import pytest

from fastbioner.io.documents import Document, Passage, Source, Span
from fastbioner.base.errors import InputError
from fastbioner.io.formats import jsonl, medline, plain

MEDLINE = """PMID- 111
OWN - NLM
TI  - Lithium toxicity in a
      newborn.
AB  - BACKGROUND: Lithium is toxic. RESULTS: It
      was.
AU  - Smith J
AU  - Doe A

PMID- 222
TI  - Title only.
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_medline_fields_continuations_and_round_trip(tmp_path):
    first, second = medline.read(write(tmp_path, "m.nbib", MEDLINE))
    assert first.id == "111" and first.title == "Lithium toxicity in a newborn."
    assert first.abstract == "BACKGROUND: Lithium is toxic. RESULTS: It was."
    assert first.metadata["medline"] == [["OWN", "NLM"], ["AU", "Smith J"], ["AU", "Doe A"]]
    assert second.text == "Title only."
    out = tmp_path / "o.nbib"
    medline.write([first, second], out)
    assert list(medline.read(out)) == [first, second]


def test_medline_errors_name_the_line(tmp_path):
    with pytest.raises(InputError, match=r"m\.nbib:3: not a MEDLINE field line"):
        list(medline.read(write(tmp_path, "m.nbib", "PMID- 1\nTI  - x\nthis is not a field\n")))
    with pytest.raises(InputError, match=r"m\.nbib:1: MEDLINE record without a PMID"):
        list(medline.read(write(tmp_path, "m.nbib", "TI  - x\n")))


def test_plain_text_blocks(tmp_path):
    text = "First abstract.\nSecond line of it.\n\n\n  Second abstract.  \n"
    docs = list(plain.read(write(tmp_path, "a.txt", text)))
    assert [(d.id, d.text) for d in docs] == [("a:1", "First abstract.\nSecond line of it."),
                                              ("a:5", "Second abstract.")]
    out = tmp_path / "o.txt"
    report = plain.write(docs + [Document("x", "Para one.\n\nPara two.", spans=[Span(0, 4, "X")])], out)
    assert [d.text for d in plain.read(out)][2] == "Para one.\nPara two."
    assert report.spans_not_held == 1 and "1 span(s) not written" in report.summary()


def full_document():
    doc = Document.from_parts("7", "Cocaine toxicity.", [("RESULTS", "Seizures, ünïcode — ok.")],
                              metadata={"journal": "J", "tags": ["a", 1], "nested": {"k": None}})
    doc.spans = [Span(0, 7, "Chemical", Source.GOLD, None, "D003042"),
                 Span(0, 16, "Disease", Source.MODEL, 0.25),
                 Span(18, 26, "Disease", Source.CURATOR)]
    doc.relations = [("CID", "D003042", "D0001")]
    return doc


def test_jsonl_is_lossless(tmp_path):
    docs = [full_document(), Document("8", "")]
    out = tmp_path / "d.jsonl"
    jsonl.write(docs, out)
    assert list(jsonl.read(out)) == docs
    assert "ünïcode" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize("line,message", [
    ('{"id": "1"', "not valid JSON"),
    ('{"text": "abc"}', "required key 'id'"),
    ('[1, 2]', "must be a JSON object, got a list"),
    ('{"id": "1", "text": "abc", "spans": [{"start": 1, "end": 9, "label": "X"}]}', "outside the text"),
    ('{"id": "1", "text": "abc", "spans": [{"start": 0, "end": 1, "label": "X", "source": "robot"}]}',
     "spans\\[0\\]\\.source must be one of gold, model, curator, got 'robot'"),
])
def test_jsonl_bad_lines_name_the_line(tmp_path, line, message):
    good = json.dumps(jsonl.document_to_dict(full_document()))
    path = write(tmp_path, "b.jsonl", good + "\n\n" + line + "\n")
    with pytest.raises(InputError, match=rf"b\.jsonl:3: .*{message}"):
        list(jsonl.read(path))


def test_jsonl_refuses_metadata_it_cannot_write_and_leaves_no_file(tmp_path):
    doc = Document("1", "x", [Passage(0, 1)], metadata={"bad": object()})
    out = tmp_path / "x.jsonl"
    with pytest.raises(InputError, match="document 1: cannot be written as JSON"):
        jsonl.write([full_document(), doc], out)
    assert not out.exists() and list(tmp_path.iterdir()) == []
