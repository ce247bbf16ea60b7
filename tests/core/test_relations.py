"""Relations between a document's concepts: the panel's rows (ids with names), adding
and removing one, relations following a concept-id edit (the rule in
fastbioner.curate.relations), and round trips of edited relations through PubTator, BioC,
JSONL and the project file."""

import pytest

from fastbioner.curate import relations as R
from fastbioner.curate.curation import set_concept_id
from fastbioner.io.documents import Document, Source, Span
from fastbioner.io.formats import bioc, jsonl, pubtator, read_documents
from fastbioner.curate.project import Project, ProjectEntry, load_project, save_project


def _doc():
    doc = Document.from_parts("123", "Cocaine induced seizures.", [(None, "Cocaine and seizure risk; aspirin.")])
    t = doc.text
    doc.spans = [Span(0, 7, "Chemical", concept_id="D003042"),
                 Span(16, 24, "Disease", concept_id="D012640"),
                 Span(t.index("Cocaine", 5), t.index("Cocaine", 5) + 7, "Chemical", concept_id="D003042"),
                 Span(t.index("seizure "), t.index("seizure ") + 7, "Disease", concept_id="D012640"),
                 Span(t.index("aspirin"), t.index("aspirin") + 7, "Chemical", Source.MODEL, 0.9)]
    doc.relations = [("CID", "D003042", "D012640")]
    return doc


def test_rows_name_each_concept_by_its_most_frequent_mention_else_the_dictionary():
    doc = _doc()
    doc.relations.append(("CID", "D001241", "D012640"))
    rows = R.relation_rows(doc, {"D001241": "aspirin"}.get)
    assert [(r.type, r.ids, r.names, r.present) for r in rows] == [
        ("CID", ("D003042", "D012640"), ("Cocaine", "seizures"), (True, True)),
        ("CID", ("D001241", "D012640"), ("aspirin", "seizures"), (False, True))]
    assert R.document_concepts(doc, "Chemical") == {"D003042": "Cocaine"}


def test_add_and_remove_a_relation():
    rels = R.add_relation([], ("CID", "D003042", "D012640"))
    assert R.add_relation(rels, ("CID", "D003042", "D012640")) == rels  # not doubled
    assert R.remove_relation(rels, ("CID", "D003042", "D012640")) == []
    for bad in [("CID", "", "D1"), ("CID",), ("CID", "D 1", "D2"), ("12", "D1", "D2")]:
        with pytest.raises(ValueError):
            R.add_relation(rels, bad)


def test_relations_follow_a_concept_id_edit_once_no_entity_names_the_old_id():
    doc = _doc()
    first = doc.spans[0]
    spans = set_concept_id(doc.spans, first, "D003043")
    # The other "Cocaine" still names D003042: relations stay.
    assert R.follow_concept_edit(spans, doc.relations, "D003042", "D003043") == doc.relations
    spans = set_concept_id(spans, doc.spans[2], "D003043")
    assert R.follow_concept_edit(spans, doc.relations, "D003042", "D003043") == [("CID", "D003043", "D012640")]
    # A cleared id changes no relation; nor does an edit of a composite id that swaps
    # more than one part.
    cleared = [s.with_(concept_id=None) if s.label == "Chemical" else s for s in doc.spans]
    assert R.follow_concept_edit(cleared, doc.relations, "D003042", None) == doc.relations
    assert R.follow_concept_edit([], doc.relations, "D003042|D1", "D2|D3") == doc.relations
    # Renaming onto a relation already there leaves one.
    rels = [("CID", "D003042", "D012640"), ("CID", "D003043", "D012640")]
    assert R.follow_concept_edit([], rels, "D003042", "D003043") == [("CID", "D003043", "D012640")]


def test_set_relations_keeps_bioc_argument_names_with_their_relation():
    doc = _doc()
    doc.relations = [("TREATS", "a", "b"), ("CID", "D003042", "D012640")]
    doc.metadata["bioc_relation_keys"] = [["Drug", "Disease"], ["Chemical", "Disease"]]
    new = R.set_relations(doc, [("CID", "D003042", "D012640"), ("CID", "D1", "D2"), ("TREATS", "a", "b")])
    assert new.metadata["bioc_relation_keys"] == [["Chemical", "Disease"], ["Chemical", "Disease"],
                                                  ["Drug", "Disease"]]
    assert doc.relations[0] == ("TREATS", "a", "b")  # the original is untouched


@pytest.mark.parametrize("module,name", [(pubtator, "d.pubtator"), (bioc, "d.xml"), (jsonl, "d.jsonl")])
def test_edited_relations_round_trip(tmp_path, module, name):
    doc = _doc()
    rels = R.add_relation(doc.relations, ("CID", "D001241", "D012640"))
    rels = R.remove_relation(rels, ("CID", "D003042", "D012640"))
    rels = R.add_relation(rels, ("CID", "D003042", "D006331"))
    edited = R.set_relations(doc, rels)
    module.write([edited], tmp_path / name)
    back = list(read_documents(tmp_path / name))
    assert back[0].relations == [("CID", "D001241", "D012640"), ("CID", "D003042", "D006331")]
    assert sorted((s.start, s.end, s.label, s.concept_id) for s in back[0].spans) == \
        sorted((s.start, s.end, s.label, s.concept_id) for s in edited.spans)
    if module is bioc:  # the arguments keep their names
        assert back[0].metadata["bioc_relation_keys"] == [["Chemical", "Disease"]] * 2


def test_edited_relations_round_trip_through_a_project(tmp_path):
    edited = R.set_relations(_doc(), [("CID", "D003042", "D006331")])
    save_project(Project([ProjectEntry(edited)]), tmp_path / "p.fbproj")
    assert load_project(tmp_path / "p.fbproj").entries[0].document.relations == [("CID", "D003042", "D006331")]
