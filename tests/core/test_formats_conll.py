"""CoNLL/BIO: tagged sentences for trainers, documents, schemes, repair, round trips."""

from __future__ import annotations

import warnings

import pytest

from fastbioner.io.documents import Document, Source, Span
from fastbioner.base.errors import InputError, InputWarning
from fastbioner.io.formats import conll

BIO = ("Lithium\tB-Chemical\ncarbonate\tI-Chemical\ntoxicity\tB-Disease\n.\tO\n\n"
       "Naloxone\tB-Chemical\nhelped\tO\n.\tO\n\n")


def write(tmp_path, text, name="c.conll"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    return path


def test_tagged_sentences_with_lines(tmp_path):
    sents = conll.read_tagged_sentences(write(tmp_path, BIO))
    assert [s.words for s in sents] == [("Lithium", "carbonate", "toxicity", "."), ("Naloxone", "helped", ".")]
    assert sents[0].tags == ("B-Chemical", "I-Chemical", "B-Disease", "O")
    assert [s.line for s in sents] == [1, 6]


def test_invalid_sequences_repaired_with_one_warning_naming_lines(tmp_path):
    path = write(tmp_path, "a\tI-X\nb\tO\nc\tI-Y\n\nd\tB-X\ne\tI-Y\n")
    with pytest.warns(InputWarning, match=r"c\.conll:1: repaired 3 .*lines 1, 3, 6"):
        sents = conll.read_tagged_sentences(path)
    assert [s.tags for s in sents] == [("B-X", "O", "B-Y"), ("B-X", "B-Y")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = conll.read_tagged_sentences(path, on_invalid="keep")
    assert kept[0].tags == ("I-X", "O", "I-Y")
    with pytest.raises(InputError, match=r"c\.conll:1: invalid IOB2 sequence"):
        conll.read_tagged_sentences(path, on_invalid="error")


@pytest.mark.parametrize("text,line,message", [
    ("a\tB-X\nb\tFOO\n", 2, "unknown tag 'FOO'"),
    ("a\tB-X\nlonely\n", 2, "expected a token and a tag"),
    ("a\tB-X\nb\tS-X\n", 2, "not allowed in IOB2"),
])
def test_bad_lines_name_file_and_line(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(InputError, match=rf"c\.conll:{line}: .*{message}"):
        conll.read_tagged_sentences(path, scheme="IOB2")


def test_schemes_are_read_and_written(tmp_path):
    iobes = write(tmp_path, "Lithium\tB-Chemical\ncarbonate\tE-Chemical\ntoxicity\tS-Disease\n\n", "e.conll")
    (s,) = conll.read_tagged_sentences(iobes)  # auto-detected
    assert s.tags == ("B-Chemical", "I-Chemical", "B-Disease")
    iob1 = write(tmp_path, "a\tI-X\nb\tB-X\nc\tI-X\n\n", "i1.conll")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # IOB1 read as IOB1 needs no repair
        (s1,) = conll.read_tagged_sentences(iob1, scheme="IOB1")
    assert s1.tags == ("B-X", "B-X", "I-X")
    out = tmp_path / "out.conll"
    conll.write(conll.read(iobes), out, scheme="IOBES")
    assert out.read_text() == iobes.read_text()


def test_other_columns_and_docstart_survive_a_round_trip(tmp_path):
    text = ("-DOCSTART- 111\n\nLithium\tNN\tB-Chemical\nworks\tVB\tO\n\n"
            "-DOCSTART- 222\n\nSeizures\tNNS\tB-Disease\n\nstopped\tVBD\tO\n\n")
    path = write(tmp_path, text)
    docs = list(conll.read(path))
    assert [d.id for d in docs] == ["111", "222"]
    assert docs[1].text == "Seizures\nstopped"
    assert [(docs[1].span_text(s), s.label) for s in docs[1].spans] == [("Seizures", "Disease")]
    sents = conll.read_tagged_sentences(path)
    assert sents[0].extra == (("NN",), ("VB",)) and sents[0].doc_id == "111"
    out = tmp_path / "out.conll"
    report = conll.write(docs, out)
    assert out.read_text() == text
    assert report.documents == 2 and report.sentences == 3 and report.spans == 2


def test_file_without_docstart_round_trips_exactly(tmp_path):
    path = write(tmp_path, BIO)
    docs = list(conll.read(path))
    assert [d.id for d in docs] == ["c:1", "c:6"]
    out = tmp_path / "out.conll"
    conll.write(docs, out)
    assert out.read_text() == BIO


def test_documents_are_written_with_sentences_and_a_report(tmp_path):
    doc = Document.from_parts("42", "Cocaine toxicity.", [(None, "Seizures and 5-HT3 block were seen.")])
    text = doc.text
    doc.spans = [Span(0, 7, "Chemical"), Span(0, 16, "Disease"),
                 Span(text.index("5-HT3"), text.index("5-HT3") + 4, "Chemical"),
                 Span(text.index("Seizures"), text.index("Seizures") + 8, "Disease", Source.MODEL, 0.9)]
    out = tmp_path / "d.conll"
    report = conll.write([doc], out)
    assert out.read_text().split("\n\n")[:3] == [
        "-DOCSTART- 42", "Cocaine\tB-Disease\ntoxicity\tI-Disease\n.\tO",
        "Seizures\tB-Disease\nand\tO\n5\tO\n-\tO\nHT3\tO\nblock\tO\nwere\tO\nseen\tO\n.\tO"]
    assert len(report.left_out) == 1 and len(report.off_boundary) == 1
    assert "1 span(s) off token boundaries" in report.summary()
    gold_only = tmp_path / "g.conll"
    conll.write([doc], gold_only, sources=[Source.GOLD], docstart=False)
    assert "Seizures\tO" in gold_only.read_text() and "DOCSTART" not in gold_only.read_text()


def test_crlf_bom_and_empty_files(tmp_path):
    path = tmp_path / "w.conll"
    path.write_bytes(b"\xef\xbb\xbfLithium\tB-Chemical\r\n.\tO\r\n\r\n")
    (s,) = conll.read_tagged_sentences(path)
    assert s.words == ("Lithium", ".")
    empty = write(tmp_path, "\n\n", "empty.conll")
    with pytest.raises(InputError, match="empty.conll: empty file"):
        conll.read_tagged_sentences(empty)
