"""BioC XML: passages at offsets, annotations with infons, relations, safe parsing."""

from __future__ import annotations

import pytest

from fastbioner.io.documents import Document, Source, Span
from fastbioner.base.errors import InputError
from fastbioner.io.formats import bioc

BIOC = """<?xml version='1.0' encoding='UTF-8'?><!DOCTYPE collection SYSTEM 'BioC.dtd'>
<collection><source>PubTator</source><date/><key/>
<document><id>111</id>
<passage><infon key="type">title</infon><offset>0</offset><text>Cocaine toxicity.</text>
<annotation id='0'><infon key="type">Chemical</infon><infon key="MESH">D003042</infon>
<location offset='0' length='7' /><text>Cocaine</text></annotation>
</passage>
<passage><infon key="type">abstract</infon><infon key="section">METHODS</infon><offset>18</offset>
<text>Cardiovascular and respiratory depression.</text>
<annotation id='1'><infon key="type">Disease</infon><infon key="CompositeRole">CompositeMention</infon>
<infon key="MESH">D002318|D012131</infon><location offset='18' length='41' />
<text>Cardiovascular and respiratory depression</text></annotation>
<annotation id='2'><infon key="type">Disease</infon><infon key="CompositeRole">IndividualMention</infon>
<location offset='18' length='14' /><location offset='49' length='10' /><text>Cardiovascular depression</text>
</annotation>
</passage>
<relation id='R0'><infon key="relation">CID</infon><infon key="Chemical">D003042</infon>
<infon key="Disease">D002318</infon></relation>
</document></collection>
"""


def write(tmp_path, text, name="c.bioc.xml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_read_passages_spans_and_relations(tmp_path):
    (doc,) = bioc.read(write(tmp_path, BIOC))
    assert doc.text == "Cocaine toxicity. Cardiovascular and respiratory depression."
    assert [(p.kind, p.label) for p in doc.passages] == [("title", None), ("abstract", "METHODS")]
    assert [(doc.span_text(s), s.label, s.concept_id) for s in doc.spans] == [
        ("Cocaine", "Chemical", "D003042"),
        ("Cardiovascular and respiratory depression", "Disease", "D002318|D012131")]
    assert doc.relations == [("CID", "D003042", "D002318")]
    (disc,) = doc.metadata["bioc_discontinuous"]
    assert disc["locations"] == [[18, 14], [49, 10]]


def test_round_trip_keeps_everything_a_span_holds(tmp_path):
    (doc,) = bioc.read(write(tmp_path, BIOC))
    doc.spans.append(Span(8, 16, "Disease", Source.MODEL, 0.875))
    out = tmp_path / "o.bioc.xml"
    bioc.write([doc], out)
    (back,) = bioc.read(out)
    # Annotations are grouped by passage in BioC, so only their order may change.
    assert back.sorted_spans() == doc.sorted_spans()
    back.spans = doc.spans
    assert back == doc


def test_documents_without_bioc_metadata_are_written(tmp_path):
    doc = Document.from_parts("5", "Title", [("BACKGROUND", "Aspirin helps.")])
    doc.spans = [Span(6, 13, "Chemical", Source.CURATOR)]
    doc.relations = [("TREATS", "a", "b", "c")]
    out = tmp_path / "n.bioc.xml"
    bioc.write([doc], out)
    (back,) = bioc.read(out)
    assert back == Document(doc.id, doc.text, doc.passages, doc.spans,
                            {"bioc_relation_keys": [["arg1", "arg2", "arg3"]]}, doc.relations)


def test_truncated_xml_names_the_line(tmp_path):
    cut = BIOC[: BIOC.index("<relation")]
    with pytest.raises(InputError, match=r"c\.bioc\.xml:\d+: not well-formed XML: XML ends early"):
        list(bioc.read(write(tmp_path, cut)))


def test_entity_expansion_is_refused(tmp_path):
    bomb = ('<?xml version="1.0"?><!DOCTYPE collection [<!ENTITY a "aaaaaaaaaa">'
            '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><collection>&b;</collection>')
    with pytest.raises(InputError, match="entity declarations"):
        list(bioc.read(write(tmp_path, bomb)))
    external = ('<?xml version="1.0"?><!DOCTYPE collection [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                '<collection>&x;</collection>')
    with pytest.raises(InputError, match="refused"):
        list(bioc.read(write(tmp_path, external)))


def test_bad_annotations_name_the_line(tmp_path):
    bad = BIOC.replace("<location offset='0' length='7' /><text>Cocaine</text>",
                       "<location offset='0' length='7' /><text>Heroin</text>")
    with pytest.raises(InputError, match=r"c\.bioc\.xml:5: document 111: annotation '0' text 'Heroin'"):
        list(bioc.read(write(tmp_path, bad)))
    with pytest.raises(InputError, match="not BioC XML"):
        list(bioc.read(write(tmp_path, "<PubmedArticleSet/>")))
