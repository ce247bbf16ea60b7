"""Bad, hostile and odd input (issue 13): every example a user reported is refused
with one line naming the file and line, or written without a word lost; never a
traceback, never output that cannot be read back."""

from __future__ import annotations

import json

import pytest

from fastbioner.cli.main import main
from fastbioner.io.documents import Document, Passage, Span
from fastbioner.base.errors import InputError
from fastbioner.io.formats import bioc, conll, jsonl, pubmed_xml, pubtator, read_any

GOOD = {"id": "1", "text": "Cocaine seizures.",
        "passages": [{"start": 0, "end": 17, "kind": "abstract", "label": None}],
        "spans": [{"start": 0, "end": 7, "label": "Chemical", "source": "gold", "score": None,
                   "concept_id": "D003042"}],
        "relations": [["CID", "D003042", "D012640"]], "metadata": {}}


def bioc_file(tmp_path, annotation_infons="", offset="0", name="c.bioc.xml"):
    text = ("<?xml version='1.0' encoding='UTF-8'?>\n<collection><source>x</source>\n"
            "<document><id>9</id>\n"
            f"<passage><infon key='type'>abstract</infon><offset>{offset}</offset><text>Cocaine seizures.</text>\n"
            f"<annotation id='1'><infon key='type'>Chemical</infon>{annotation_infons}\n"
            f"<location offset='{offset}' length='7'/><text>Cocaine</text></annotation>\n"
            "</passage></document></collection>\n")
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def jsonl_file(tmp_path, line: str, name="d.jsonl"):
    path = tmp_path / name
    path.write_text(json.dumps(GOOD) + "\n" + line + "\n", encoding="utf-8")
    return path


def with_(**changes) -> str:
    obj = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        if "." in key:
            outer, inner = key.split(".")
            obj[outer][0][inner] = value
        else:
            obj[key] = value
    return json.dumps(obj)


# -- BioC ------------------------------------------------------------------------------

@pytest.mark.parametrize("infons, message", [
    ("<infon key='score'>high</infon>", r"annotation '1' score 'high' is not a finite number"),
    ("<infon key='score'>inf</infon>", r"annotation '1' score 'inf' is not a finite number"),
    ("<infon key='source'>human</infon>", r"annotation '1' source 'human' is not one of gold, model, curator"),
])
def test_bioc_bad_infon_values_name_file_and_line(tmp_path, infons, message):
    with pytest.raises(InputError, match=rf"c\.bioc\.xml:5: document 9: {message}"):
        list(bioc.read(bioc_file(tmp_path, infons)))


@pytest.mark.parametrize("offset", ["3000000000", "100000000000", "-5"])
def test_bioc_passage_offsets_beyond_the_file_are_refused_without_building_the_text(tmp_path, offset):
    with pytest.raises(InputError, match=rf"c\.bioc\.xml:4: document 9: passage offset {offset} is"):
        list(bioc.read(bioc_file(tmp_path, offset=offset)))


# -- JSONL -----------------------------------------------------------------------------

@pytest.mark.parametrize("line, message", [
    (with_(**{"spans.start": 1e400}).replace("Infinity", "1e400"), r"number 1e400 is out of range"),
    (with_(**{"spans.score": 1}).replace('"score": 1', '"score": 1e999'), r"number 1e999 is out of range"),
    (with_(**{"spans.score": 1}).replace('"score": 1', '"score": NaN'), r"NaN is not a number"),
    ("[" * 5000 + "]" * 5000, r"nested deeper than 64 levels"),
    (with_(metadata={"a": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[
        ]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}),
     r"nested deeper than 64 levels"),
    (with_(text="Cocaine seizures\\ud800").replace("\\\\ud800", "\\ud800"), r"lone surrogate \(\\ud800\)"),
    (with_(**{"spans.concept_id": 123}), r"spans\[0\]\.concept_id must be a string or null, got a number 123"),
    (with_(**{"spans.label": None}), r"spans\[0\]\.label must be a non-empty string, got null"),
    (with_(**{"spans.source": "human"}), r"spans\[0\]\.source must be one of gold, model, curator, got 'human'"),
    (with_(**{"spans.start": "0"}), r"spans\[0\]\.start must be a whole number, got a string '0'"),
    (with_(**{"spans.start": 1.5}), r"spans\[0\]\.start must be a whole number"),
    (with_(**{"spans.start": True}), r"spans\[0\]\.start must be a whole number, got a boolean"),
    (with_(**{"passages.label": {"x": 1}}), r"passages\[0\]\.label must be a string or null, got an object"),
    (with_(passages=[{"start": 0, "end": 10}, {"start": 5, "end": 17}]), r"passages overlap \(0\.\.10 and 5\.\.17\)"),
    (with_(relations=["CID"]), r"relations\[0\] must be a list of strings"),
    (with_(relations=[["CID", 5]]), r"relations\[0\] must be a list of strings"),
    (with_(metadata={"conll_columns": 5}), r"metadata\['conll_columns'\] must be a list, got a number 5"),
    (with_(metadata={"bioc_infons": [1]}), r"metadata\['bioc_infons'\] must be an object, got a list"),
    (with_(metadata={"pubtator_columns": {"0:7:Chemical": [1]}}), r"metadata\['pubtator_columns'\]"),
    (with_(metadata={"conll_docstart": "not a docstart"}), r"must be a '-DOCSTART-' line"),
    (with_(metadata=[1]), r"metadata must be an object, got a list"),
    (with_(id=None), r"'id' must be a string, got null"),
])
def test_jsonl_fields_of_the_wrong_type_or_range_name_file_and_line(tmp_path, line, message):
    with pytest.raises(InputError, match=rf"d\.jsonl:2: .*{message}"):
        list(jsonl.read(jsonl_file(tmp_path, line)))


def test_a_lone_surrogate_never_reaches_the_tagger(tmp_path):
    from fastbioner.infer.tagging import count_documents

    path = jsonl_file(tmp_path, '{"id": "2", "text": "abc \\ud800 def"}')
    # ``tag`` reads every input through this before a model sees a word.
    with pytest.raises(InputError, match=r"d\.jsonl:2: bad document: a string holds a lone surrogate \(\\ud800\)"):
        count_documents([path])


# -- PubTator --------------------------------------------------------------------------

def test_a_pubtator_mention_with_a_negative_offset_is_an_error_not_a_relation(tmp_path):
    path = tmp_path / "n.pubtator"
    path.write_text("1|t|Cocaine.\n1|a|Seizures.\n1\t-5\t7\tCocaine\tChemical\tD1\n\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"n\.pubtator:3: mention offsets -5\.\.7 fall outside"):
        list(pubtator.read(path))


# -- writers refuse what their format cannot hold ----------------------------------------

def _doc(doc_id="1", text="Cocaine seizures.", label="Chemical", concept="D1"):
    return Document(doc_id, text, [Passage(0, len(text))], [Span(0, 7, label, concept_id=concept)])


@pytest.mark.parametrize("module, name, doc, message", [
    (bioc, "o.bioc.xml", _doc(text="Cocaine\x00 seizures."), r"document 1: document/passage/text .* holds a NUL"),
    (bioc, "o.bioc.xml", _doc(text="Cocaine\x07 seizures."), r"holds the character U\+0007, which BioC XML"),
    (bioc, "o.bioc.xml", _doc(label="Chem\x01"), r"document 1: infon 'type' .* holds the character U\+0001"),
    (pubmed_xml, "o.pubmed.xml", _doc(text="Cocaine\x1b seizures."), r"holds the character U\+001B, which PubMed XML"),
    (pubtator, "o.pubtator", _doc(doc_id="1\n2"), r"document 1\n2: id '1\\n2' holds a line break"),
    (pubtator, "o.pubtator", _doc(doc_id="1\t2"), r"id '1\\t2' holds a tab, which pubtator cannot hold"),
    (pubtator, "o.pubtator", _doc(label="Chem\tical"), r"a span's label 'Chem\\tical' holds a tab"),
    (pubtator, "o.pubtator", _doc(concept="D1\nD2"), r"a span's concept id 'D1\\nD2' holds a line break"),
    (conll, "o.conll", _doc(doc_id="a\nb"), r"document a\nb: id 'a\\nb' holds a line break, which conll"),
    (conll, "o.conll", _doc(label="Chem\tical"), r"a span's label 'Chem\\tical' holds a tab, which conll"),
])
def test_writers_refuse_characters_their_format_cannot_hold_naming_document_and_field(
        tmp_path, module, name, doc, message):
    out = tmp_path / name
    with pytest.raises(InputError, match=rf"{name}: .*{message}"):
        module.write([doc], out)
    assert list(tmp_path.iterdir()) == []  # no output, no temporary file


def test_what_the_writers_accept_reads_back(tmp_path):
    doc = _doc(text="Cocaine\tseizures\nand more.")  # tabs and line breaks inside the text itself
    for module, name in ((bioc, "o.bioc.xml"), (pubtator, "o.pubtator"), (jsonl, "o.jsonl")):
        module.write([doc], tmp_path / name)
        (back,) = module.read(tmp_path / name)
        assert back.spans[0].label == "Chemical" and back.spans[0].concept_id == "D1"
        assert back.span_text(back.spans[0]) == "Cocaine"
        assert back.text.split() == doc.text.split()


# -- folders -----------------------------------------------------------------------------

PUBTATOR = "{n}|t|Cocaine.\n{n}|a|Seizures.\n{n}\t0\t7\tCocaine\tChemical\tD1\n\n"


def folder_with_a_bad_file(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for n in (1, 2, 3):
        (folder / f"{n}.pubtator").write_text(PUBTATOR.format(n=n), encoding="utf-8")
    bioc_file(folder, "<infon key='score'>high</infon>", name="bad.bioc.xml")
    return folder


def test_stats_of_a_folder_reports_the_bad_file_and_counts_the_others(tmp_path, capsys):
    folder = folder_with_a_bad_file(tmp_path)
    assert main(["stats", str(folder)]) == 1
    out, err = capsys.readouterr()
    assert "documents: 3" in out.splitlines()
    assert err.strip().splitlines() == [
        f"fastbioner: error: {folder / 'bad.bioc.xml'}:5: document 9: annotation '1' score 'high' is not a "
        f"finite number (file skipped)"]


def test_any_exception_a_reader_raises_is_one_files_error(tmp_path, monkeypatch):
    folder = folder_with_a_bad_file(tmp_path)

    def broken(path, **options):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(bioc, "read", broken)
    batch = read_any([folder])
    assert [d.id for d in batch] == ["1", "2", "3"]
    assert [str(e) for e in batch.errors] == [
        f"{folder / 'bad.bioc.xml'}: cannot read this file (RecursionError: maximum recursion depth exceeded)"]


def test_converting_a_folder_into_itself_is_refused(tmp_path, capsys):
    """The output inside the folder read would replace an input or be read back by the
    next run (issue 70): refused in one line; beside the folder it is written."""
    folder = folder_with_a_bad_file(tmp_path)
    assert main(["convert", str(folder), str(folder / "all.jsonl")]) == 2
    assert "lies inside the input folder" in capsys.readouterr().err
    assert not (folder / "all.jsonl").exists()
    out = tmp_path / "all.jsonl"
    for _ in range(3):
        assert main(["convert", str(folder), str(out)]) == 1  # 1: the bad file was skipped
        assert "wrote 3 document(s)" in capsys.readouterr().out
        assert len(out.read_text(encoding="utf-8").splitlines()) == 3


def test_tag_refuses_to_write_onto_its_input_as_convert_does(tmp_path, capsys):
    src = tmp_path / "x.pubtator"
    src.write_text(PUBTATOR.format(n=1), encoding="utf-8")
    before = src.read_bytes()
    (tmp_path / "link.pubtator").symlink_to(src)
    for out in (src, tmp_path / "link.pubtator", tmp_path / "." / "x.pubtator"):
        assert main(["tag", str(src), "--out", str(out), "--format", "pubtator", "--quiet"]) == 2
        assert "output would overwrite the input" in capsys.readouterr().err
        assert main(["convert", str(src), str(out)]) == 2
        assert "output would overwrite the input" in capsys.readouterr().err
    assert src.read_bytes() == before


def test_a_discontinuous_mention_outside_the_text_is_refused_on_reading(tmp_path):
    line = with_(metadata={"bioc_discontinuous": [{"infons": {"type": "X"}, "locations": [[0, 99]], "text": "x"}]})
    with pytest.raises(InputError, match=r"d\.jsonl:2: .*bioc_discontinuous'\]\[0\]: offsets 0\.\.99 fall outside"):
        list(jsonl.read(jsonl_file(tmp_path, line)))


def test_convert_never_writes_an_empty_file_no_reader_takes_back(tmp_path, capsys):
    src = tmp_path / "empty.pubmed.xml"
    src.write_text("<PubmedArticleSet></PubmedArticleSet>", encoding="utf-8")
    for out in ("o.jsonl", "o.pubtator", "o.conll", "o.bioc.xml"):
        assert main(["convert", str(src), str(tmp_path / out)]) == 2
        assert capsys.readouterr().err.strip() == f"fastbioner: error: {src}: no documents found; nothing written"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.pubmed.xml"]


def test_documents_without_text_round_trip_through_conll(tmp_path):
    docs = [Document("1", ""), Document("2", "Cocaine.")]
    conll.write(docs, tmp_path / "o.conll")
    back = list(conll.read(tmp_path / "o.conll"))
    assert [(d.id, d.text) for d in back] == [("1", ""), ("2", "Cocaine .")]
