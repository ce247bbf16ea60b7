"""Property-based tests of every reader and writer (issue 13).

Readers: any bytes give documents or :class:`InputError`, nothing else (no other
exception, no document whose offsets fall outside its text). The bytes are drawn
both at random and from fragments of each format (lines, tags, offsets, odd
characters), which reach far deeper into a reader than random bytes do.

Writers: what a writer accepts reads back as the same documents (as far as the
format holds them); what it refuses is an :class:`InputError` and no file.
"""

from __future__ import annotations

import json
import math
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fastbioner.io.documents import Document, Source, Span
from fastbioner.base.errors import InputError
from fastbioner.io.formats import FORMATS, bioc, conll, jsonl, medline, plain, pubmed_xml, pubtator

EXAMPLES = settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow,
                                                             HealthCheck.function_scoped_fixture])
# Round trips build whole documents per example: fewer of them keep the suite quick.
ROUND_TRIPS = settings(EXAMPLES, max_examples=100)
WORK = Path(tempfile.mkdtemp(prefix="fastbioner-properties-"))

# -- fragments ---------------------------------------------------------------------------

ODD = ["", " ", "\t", "\x00", "\x07", "\x1b", "\u2028", "\ufeff", "é", "𝛼", "|", "<", "&", "\\", '"',
       "-DOCSTART-", "\ud7ff", "\ufffd"]
# Fragments drawn whole (one draw each): drawing text a character at a time is most of
# the time a property test takes.
POOL = ODD + ["Cocaine", "induced seizures", "a b", " x ", "0", "7", "-1", "1e400", "B-X", "O", "Chemical",
              "D003042", "x\ty", "y\nz", "\r", "<i>", "]]>", "&amp;", "\ud800", "\U0001f600", "٣", "ﬁ", "\x85",
              "PMID- 1", "|t|", "|a|", "\t\t", "-DOCSTART- 5"]
words = st.text(alphabet=st.sampled_from("abcXYZ019 .,-|\t()é𝛼<>&\"'"), max_size=6)
odd_text = st.one_of(st.sampled_from(POOL), st.tuples(st.sampled_from(POOL), st.sampled_from(POOL)).map("".join),
                     words)
numbers = st.one_of(st.integers(-3, 60), st.sampled_from([3_000_000_000, 10**40, -(10**20)])).map(str) | \
    st.sampled_from(["1e400", "1.5", "x", "", " 3", "٣", "NaN", "-0", "+4"])
ids = st.sampled_from(["1", "2", "10", "a b", " ", "", "1|t", "x\ty"])
labels = st.sampled_from(["Chemical", "Disease", "", " ", "B-X", "O", "a b", "X\tY"])


def lines_file(line: st.SearchStrategy) -> st.SearchStrategy[bytes]:
    joined = st.lists(line, max_size=6).map("\n".join)
    return st.one_of(st.binary(max_size=200), joined.map(lambda t: t.encode("utf-8", "surrogatepass")),
                     st.tuples(joined, st.binary(max_size=4), st.integers(0, 400))
                     .map(lambda x: _splice(x[0].encode("utf-8", "surrogatepass"), x[1], x[2])))


def _splice(data: bytes, insert: bytes, at: int) -> bytes:
    at = min(at, len(data))
    return data[:at] + insert + data[at:]


PUBTATOR_LINE = st.one_of(
    st.tuples(ids, st.sampled_from("ta"), odd_text).map(lambda t: f"{t[0]}|{t[1]}|{t[2]}"),
    st.tuples(ids, numbers, numbers, odd_text, labels, odd_text).map("\t".join),
    st.tuples(ids, st.sampled_from(["CID", "5", "-5"]), odd_text, odd_text).map("\t".join),
    st.just(""), odd_text)

CONLL_LINE = st.one_of(
    st.tuples(st.sampled_from(["Cocaine", "a", "-", "x y", "", "é"]),
              st.sampled_from(["O", "B-Chemical", "I-Chemical", "E-X", "S-X", "B-", "X", "I-Disease", ""]))
    .map("\t".join),
    st.tuples(odd_text, odd_text, st.sampled_from(["O", "B-X"])).map("\t".join),
    st.sampled_from(["", "-DOCSTART- 1", "-DOCSTART-\t(2)", "-DOCSTART- -X- -X- O"]), odd_text)

MEDLINE_LINE = st.one_of(
    st.tuples(st.sampled_from(["PMID", "TI  ", "AB  ", "AU  ", "X", "ZZZZZ"]), odd_text)
        .map(lambda t: f"{t[0]}- {t[1]}"),
    odd_text.map(lambda t: "      " + t), st.just(""), odd_text)

FIELD = st.sampled_from(["id", "text", "passages", "spans", "relations", "metadata", "start", "end", "label",
                         "source", "score", "concept_id", "kind", "conll_columns", "bioc_infons"])
JSON_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 10**30), st.floats(allow_nan=False), odd_text),
    lambda inner: st.one_of(st.lists(inner, max_size=2), st.dictionaries(FIELD, inner, max_size=2)),
    max_leaves=3)
JSON_DOC = st.fixed_dictionaries(
    {"id": st.one_of(ids, JSON_VALUE), "text": st.one_of(odd_text, JSON_VALUE)},
    optional={"passages": st.lists(st.dictionaries(FIELD, st.integers(-2, 30) | JSON_VALUE, max_size=3), max_size=2),
              "spans": st.lists(st.dictionaries(FIELD, st.integers(-2, 30) | labels | JSON_VALUE, max_size=4),
                                max_size=2),
              "relations": JSON_VALUE, "metadata": st.dictionaries(FIELD, JSON_VALUE, max_size=2)})
JSONL_LINE = st.one_of(JSON_DOC.map(lambda d: json.dumps(d, ensure_ascii=False)),
                       JSON_VALUE.map(lambda d: json.dumps(d)), odd_text,
                       st.sampled_from(["[" * 3000, '{"id": "1", "text": "\\ud800"}', '{"id": 1e999}', "NaN"]))

infon = st.tuples(st.sampled_from(["type", "score", "source", "MESH", "section", "relation", "x"]), odd_text) \
    .map(lambda t: f"<infon key='{t[0]}'>{_xml(t[1])}</infon>")


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;")


annotation = st.tuples(st.lists(infon, max_size=2),
                       st.lists(st.tuples(numbers, numbers), min_size=1, max_size=2), odd_text) \
    .map(lambda t: "<annotation id='1'>" + "".join(t[0]) + "".join(
        f"<location offset='{_xml(o)}' length='{_xml(n)}'/>" for o, n in t[1])
        + f"<text>{_xml(t[2])}</text></annotation>")
passage = st.tuples(st.lists(infon, max_size=2), numbers, odd_text, st.lists(annotation, max_size=2)) \
    .map(lambda t: f"<passage>{''.join(t[0])}<offset>{_xml(t[1])}</offset><text>{_xml(t[2])}</text>"
                   f"{''.join(t[3])}</passage>")
bioc_doc = st.tuples(ids, st.lists(passage, max_size=2), st.lists(infon, max_size=2)) \
    .map(lambda t: f"<document><id>{_xml(t[0])}</id>{''.join(t[1])}<relation id='R'>{''.join(t[2])}</relation>"
                   f"</document>")
BIOC_FILE = st.one_of(
    st.lists(bioc_doc, max_size=2).map(lambda d: f"<collection><source/>{''.join(d)}</collection>"),
    st.sampled_from(["<collection>", "<other/>", "<!DOCTYPE x [<!ENTITY a 'b'>]><collection>&a;</collection>",
                     "<collection><document><id>1</id><passage><offset>0</offset><text>&#0;</text></passage>"
                     "</document></collection>", ""]))
article = st.tuples(st.sampled_from(["1", "", " 2 "]), odd_text, st.lists(st.tuples(odd_text, odd_text), max_size=3)) \
    .map(lambda t: f"<PubmedArticle><MedlineCitation><PMID>{_xml(t[0])}</PMID><Article><ArticleTitle>{_xml(t[1])}"
                   f"</ArticleTitle><Abstract>" + "".join(
                       f"<AbstractText Label='{_xml(lab)}'>{_xml(body)}</AbstractText>" for lab, body in t[2])
                   + "</Abstract></Article></MedlineCitation></PubmedArticle>")
PUBMED_FILE = st.one_of(st.lists(article, max_size=3).map(
                            lambda a: f"<PubmedArticleSet>{''.join(a)}</PubmedArticleSet>"),
                        article, st.just("<PubmedArticleSet><PubmedArticle/></PubmedArticleSet>"))


def xml_file(doc: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    encoded = doc.map(lambda t: t.encode("utf-8", "surrogatepass"))
    return st.one_of(st.binary(max_size=200), encoded,
                     st.tuples(encoded, st.binary(max_size=3), st.integers(0, 300)).map(lambda x: _splice(*x)))


INPUTS = {
    "pubtator": lines_file(PUBTATOR_LINE),
    "conll": lines_file(CONLL_LINE),
    "medline": lines_file(MEDLINE_LINE),
    "jsonl": lines_file(JSONL_LINE),
    "text": lines_file(odd_text),
    "bioc": xml_file(BIOC_FILE),
    "pubmed": xml_file(PUBMED_FILE),
}


def check_document(doc: Document) -> None:
    """What a reader promises about each document it gives."""
    assert isinstance(doc, Document) and isinstance(doc.id, str) and isinstance(doc.text, str)
    for item in [*doc.passages, *doc.spans]:
        assert 0 <= item.start <= item.end <= len(doc.text)
    for span in doc.spans:
        assert isinstance(span.label, str) and span.label.strip()
        assert isinstance(span.source, Source)
        assert span.score is None or math.isfinite(span.score)
        assert span.concept_id is None or isinstance(span.concept_id, str)
    for rel in doc.relations:
        assert all(isinstance(x, str) for x in rel)
    json.dumps(jsonl.document_to_dict(doc), allow_nan=False)  # and it can be written losslessly


def read_bytes(fmt: str, data: bytes) -> list[Document] | InputError:
    path = WORK / f"in.{fmt}"
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return list(FORMATS[fmt].read(path))
        except InputError as exc:
            assert str(exc).startswith(str(path)), "an input error names the file"
            return exc


@pytest.mark.parametrize("fmt", sorted(INPUTS))
def test_any_bytes_give_documents_or_an_input_error(fmt):
    @EXAMPLES
    @given(INPUTS[fmt])
    def prop(data: bytes) -> None:
        result = read_bytes(fmt, data)
        if not isinstance(result, InputError):
            for doc in result:
                check_document(doc)

    prop()


# -- write then read ---------------------------------------------------------------------

safe_chars = st.one_of(st.sampled_from("abcdefXYZ0123456789 .,;:-()[]/'\"&<>|"),
                       st.characters(max_codepoint=0x3FF, blacklist_categories=("Cs", "Cc")),
                       st.sampled_from("𝛼éß\u00a0\u2009ﬁ"))
safe_text = st.text(alphabet=safe_chars, min_size=1, max_size=20).filter(lambda t: t.strip() == t and t)
token_label = st.text(alphabet=st.characters(whitelist_categories=("Lu", "Ll", "Nd")), min_size=1, max_size=8)
concept = st.none() | st.text(alphabet="DC0123456789|-", min_size=1, max_size=8)


@st.composite
def documents(draw, sources=tuple(Source), scores=True, relations=True) -> Document:
    doc_id = draw(st.text(alphabet="0123456789abcXYZ_", min_size=1, max_size=8))
    title = draw(safe_text)
    sections = draw(st.lists(st.tuples(st.none() | token_label, safe_text), min_size=0, max_size=2))
    doc = Document.from_parts(doc_id, title, sections)
    n = len(doc.text)
    spans = []
    for _ in range(draw(st.integers(0, 4))):
        start = draw(st.integers(0, n - 1))
        end = draw(st.integers(start + 1, min(n, start + 15)))
        assume(doc.text[start:end].strip())
        score = draw(st.none() | st.floats(0, 1)) if scores else None
        spans.append(Span(start, end, draw(token_label), draw(st.sampled_from(sources)), score, draw(concept)))
    doc.spans = spans
    if relations:
        doc.relations = draw(st.lists(st.tuples(st.sampled_from(["CID", "Treats"]), token_label, token_label),
                                      max_size=2))
    return doc


@pytest.fixture(autouse=True)
def no_fsync(monkeypatch):
    """Thousands of tiny files in a temporary folder: their durability is not under
    test, and fsync is most of the time a write takes."""
    monkeypatch.setattr("fastbioner.io.fileio.os.fsync", lambda fd: None)


def write_read(module, docs, name):
    path = WORK / name
    module.write(docs, path)
    return list(module.read(path))


@ROUND_TRIPS
@given(st.lists(documents(), min_size=1, max_size=3))
def test_jsonl_round_trip_is_exact(docs):
    assert write_read(jsonl, docs, "rt.jsonl") == docs


@ROUND_TRIPS
@given(st.lists(documents(), min_size=1, max_size=3))
def test_bioc_round_trip_keeps_text_passages_spans_and_relations(docs):
    back = write_read(bioc, docs, "rt.bioc.xml")  # annotations are grouped by passage: order aside
    assert [(d.id, d.text, d.passages, d.sorted_spans(), d.relations) for d in back] == \
        [(d.id, d.text, d.passages, d.sorted_spans(), d.relations) for d in docs]


@ROUND_TRIPS
@given(st.lists(documents(sources=(Source.GOLD,), scores=False), min_size=1, max_size=3))
def test_pubtator_round_trip_keeps_text_spans_and_relations(docs):
    back = write_read(pubtator, docs, "rt.pubtator")  # mentions come back in offset order
    assert [(d.id, d.text, d.spans, d.relations) for d in back] == [
        (d.id, d.text, sorted(d.spans, key=lambda s: (s.start, s.end)), d.relations) for d in docs]


@ROUND_TRIPS
@given(st.lists(documents(relations=False), min_size=1, max_size=3))
def test_pubmed_and_medline_round_trips_keep_id_title_and_abstract(docs):
    for module, name in ((pubmed_xml, "rt.pubmed.xml"), (medline, "rt.medline")):
        back = write_read(module, docs, name)
        assert [(d.id, " ".join(d.title.split()), " ".join(d.abstract.split())) for d in back] == \
            [(d.id, " ".join(d.title.split()), " ".join(d.abstract.split())) for d in docs]


@ROUND_TRIPS
@given(st.lists(st.lists(st.tuples(st.text(alphabet="abcdeXYZ0123", min_size=1, max_size=6),
                                   st.sampled_from(["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"])),
                         min_size=1, max_size=6), min_size=1, max_size=4))
def test_conll_documents_round_trip_exactly(sentences):
    path = WORK / "rt.conll"  # ids come from the file's name (no -DOCSTART- lines)
    path.write_text("".join("".join(f"{w}\t{t}\n" for w, t in s) + "\n" for s in sentences), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        docs = list(conll.read(path))
        assert write_read(conll, docs, "rt.conll") == docs  # the same name: the same ids


@ROUND_TRIPS
@given(st.lists(safe_text, min_size=1, max_size=4))
def test_plain_text_round_trip_keeps_every_block(blocks):
    docs = [Document(f"x:{i}", text) for i, text in enumerate(blocks)]
    assert [d.text for d in write_read(plain, docs, "rt.txt")] == blocks


@ROUND_TRIPS
@given(st.lists(documents(), min_size=1, max_size=2), st.sampled_from(sorted(FORMATS)),
       st.sampled_from(["\x00", "\t", "\n", "\x1b", "|", " "]), st.sampled_from(["id", "label", "concept"]))
def test_a_writer_writes_what_reads_back_or_refuses_and_writes_nothing(docs, fmt, char, field):
    """Poison one field of one document: the writer refuses it (InputError, no file) or
    the file reads back."""
    assume(docs)
    doc = docs[0]
    if field == "id":
        doc.id = doc.id[:2] + char + doc.id[2:]
    elif doc.spans:
        span = doc.spans[0]
        doc.spans[0] = span.with_(label=span.label + char) if field == "label" else span.with_(
            concept_id=(span.concept_id or "") + char)
    module = FORMATS[fmt]
    path = WORK / f"poison-{fmt}"
    path.unlink(missing_ok=True)
    try:
        module.write(docs, path)
    except InputError:
        assert not path.exists()
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = list(module.read(path))
    if fmt in ("jsonl", "bioc"):
        assert [(d.id, d.sorted_spans()) for d in back] == [(d.id, d.sorted_spans()) for d in docs]
    elif fmt == "pubtator":  # mentions in offset order
        assert [(d.id, [(s.label, s.concept_id) for s in d.spans]) for d in back] == \
            [(d.id, [(s.label, s.concept_id) for s in sorted(d.spans, key=lambda s: (s.start, s.end))])
             for d in docs]
    elif fmt in ("pubmed", "medline"):
        assert [d.id for d in back] == [d.id for d in docs]
