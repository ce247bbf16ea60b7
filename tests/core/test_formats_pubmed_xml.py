"""PubMed XML (efetch): several articles, structured abstracts, no abstract, markup."""

from __future__ import annotations

import pytest

from fastbioner.errors import InputError
from fastbioner.formats import pubmed_xml

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
