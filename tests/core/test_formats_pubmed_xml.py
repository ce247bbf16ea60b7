"""PubMed XML (efetch): several articles, structured abstracts, no abstract, markup."""

from __future__ import annotations

import pytest

from fastbioner.base.errors import InputError
from fastbioner.io.formats import pubmed_xml

EFETCH = """<?xml version="1.0" ?>
<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2019//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_190101.dtd">
<PubmedArticleSet>
<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">111</PMID>
<Article><Journal><JournalIssue><PubDate><Year>2011</Year></PubDate></JournalIssue><Title>J Tox</Title></Journal>
<ArticleTitle>Lithium and the <i>newborn</i> heart.</ArticleTitle>
<ELocationID EIdType="doi" ValidYN="Y">10.1/x</ELocationID>
<Abstract>
<AbstractText Label="BACKGROUND" NlmCategory="BACKGROUND">Lithium is
 toxic.</AbstractText>
<AbstractText Label="RESULTS" NlmCategory="RESULTS">Levels of Na<sup>+</sup> rose.</AbstractText>
</Abstract></Article></MedlineCitation></PubmedArticle>
<PubmedArticle><MedlineCitation><PMID Version="1">222</PMID><Article>
<ArticleTitle>A letter without abstract.</ArticleTitle></Article></MedlineCitation></PubmedArticle>
</PubmedArticleSet>
"""


def write(tmp_path, text, name="e.xml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_articles_sections_and_metadata(tmp_path):
    first, second = pubmed_xml.read(write(tmp_path, EFETCH))
    assert first.id == "111"
    assert first.title == "Lithium and the newborn heart."
    assert first.text == "Lithium and the newborn heart. Lithium is toxic. Levels of Na+ rose."
    assert [(p.kind, p.label, first.text[p.start:p.end]) for p in first.passages] == [
        ("title", None, "Lithium and the newborn heart."),
        ("abstract", "BACKGROUND", "Lithium is toxic."), ("abstract", "RESULTS", "Levels of Na+ rose.")]
    assert first.metadata == {"journal": "J Tox", "year": "2011", "doi": "10.1/x",
                              "nlm_categories": ["BACKGROUND", "RESULTS"]}
    assert second.text == "A letter without abstract." and second.abstract == ""


def test_round_trip(tmp_path):
    docs = list(pubmed_xml.read(write(tmp_path, EFETCH)))
    out = tmp_path / "o.pubmed.xml"
    report = pubmed_xml.write(docs, out)
    assert list(pubmed_xml.read(out)) == docs
    assert report.documents == 2


def test_missing_pmid_and_truncation(tmp_path):
    with pytest.raises(InputError, match="has no <PMID>"):
        list(pubmed_xml.read(write(tmp_path, EFETCH.replace('<PMID Version="1">222</PMID>', ""))))
    with pytest.raises(InputError, match=r"e\.xml:\d+: not well-formed XML"):
        list(pubmed_xml.read(write(tmp_path, EFETCH[:-40])))


# -- streaming, gzip and DeleteCitation (PubMed's baseline and update files) -----------

UPDATE = """<?xml version="1.0" ?>
<PubmedArticleSet>
<PubmedArticle><MedlineCitation><PMID Version="2">111</PMID><Article>
<ArticleTitle>Lithium and the heart, revised.</ArticleTitle>
<Abstract><AbstractText>Lithium is toxic.</AbstractText></Abstract></Article>
<CommentsCorrectionsList><CommentsCorrections RefType="Cites"><PMID Version="1">999</PMID>
</CommentsCorrections></CommentsCorrectionsList></MedlineCitation></PubmedArticle>
<DeleteCitation><PMID Version="1">222</PMID><PMID Version="1">333</PMID></DeleteCitation>
</PubmedArticleSet>
"""


def gzipped(tmp_path, text, name="pubmed25n0002.xml.gz"):
    import gzip

    path = tmp_path / name
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(text)
    return path


def test_gzipped_update_file_reports_its_deleted_pmids(tmp_path):
    from fastbioner.io.formats import guess_format, read_documents

    path = gzipped(tmp_path, UPDATE)
    assert guess_format(path) == "pubmed"
    reader = read_documents(path)
    docs = list(reader)
    # The record's own PMID, not the one of a citation it carries.
    assert [(d.id, d.text) for d in docs] == [("111", "Lithium and the heart, revised. Lithium is toxic.")]
    assert reader.deleted == ["222", "333"]
    # A plain .xml reads the same.
    plain = pubmed_xml.read(write(tmp_path, UPDATE, "u.xml"))
    assert list(plain) == docs and plain.deleted == ["222", "333"]


def test_reading_streams_article_by_article(tmp_path):
    # The first article arrives before the parser has reached the broken end of the
    # file: nothing waits for the whole file, then the error names the file and line.
    articles = "".join(f"<PubmedArticle><MedlineCitation><PMID>{i}</PMID><Article><ArticleTitle>T {i}."
                       f"</ArticleTitle></Article></MedlineCitation></PubmedArticle>\n" for i in range(3000))
    path = gzipped(tmp_path, f"<PubmedArticleSet>\n{articles}<PubmedArticle><Oops></PubmedArticleSet>\n",
                   "big.xml.gz")
    reader = pubmed_xml.read(path)
    assert next(reader).id == "0"
    with pytest.raises(InputError, match=r"big\.xml\.gz:3002: not well-formed XML: mismatched tag"):
        list(reader)


def test_bad_gzip_and_empty_files(tmp_path):
    path = gzipped(tmp_path, EFETCH, "t.xml.gz")
    path.write_bytes(path.read_bytes()[:60])
    with pytest.raises(InputError, match=r"t\.xml\.gz: gzip data ends early"):
        list(pubmed_xml.read(path))
    fake = tmp_path / "f.xml.gz"
    fake.write_text(EFETCH, encoding="utf-8")
    with pytest.raises(InputError, match=r"f\.xml\.gz: not valid gzip data"):
        list(pubmed_xml.read(fake))
    with pytest.raises(InputError, match="empty file"):
        list(pubmed_xml.read(write(tmp_path, "\n  \n", "empty.xml")))


def test_entities_are_refused_while_streaming(tmp_path):
    bomb = ('<?xml version="1.0"?><!DOCTYPE PubmedArticleSet [<!ENTITY a "aaaa">]>'
            "<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID>1</PMID><Article>"
            "<ArticleTitle>&a;</ArticleTitle></Article></MedlineCitation></PubmedArticle></PubmedArticleSet>")
    with pytest.raises(InputError, match="entity declarations"):
        list(pubmed_xml.read(gzipped(tmp_path, bomb, "bomb.xml.gz")))


def test_gzipped_round_trip_and_other_formats_refuse_gzip(tmp_path):
    from fastbioner.io.formats import read_documents

    docs = list(pubmed_xml.read(write(tmp_path, EFETCH)))
    out = tmp_path / "o.xml.gz"
    pubmed_xml.write(docs, out)
    assert list(read_documents(out)) == docs
    with pytest.raises(InputError, match="gzipped input is read for PubMed XML only"):
        read_documents(out, "bioc")


def test_an_id_that_would_not_read_back_is_refused_and_nothing_written(tmp_path):
    """The reader strips a <PMID> and needs one, so the writer refuses white space in
    an id, or none (found by the round-trip property test: "0\\t" came back as "0")."""
    from fastbioner.io.documents import Document

    for bad in ("0\t", " 12", "1 2", ""):
        out = tmp_path / "out.xml"
        with pytest.raises(InputError, match="PubMed XML"):
            pubmed_xml.write([Document(bad, "Title.")], out)
        assert not out.exists()
    pubmed_xml.write([Document("123", "Title.")], tmp_path / "ok.xml")
    assert [d.id for d in pubmed_xml.read(tmp_path / "ok.xml")] == ["123"]
