"""PubMed XML as NCBI E-utilities ``efetch`` returns it: a ``PubmedArticleSet`` of
``PubmedArticle`` (and ``PubmedBookArticle``) records, each with a PMID, an
``ArticleTitle`` and an ``Abstract`` of one or more ``AbstractText`` sections,
structured ones carrying a ``Label`` (BACKGROUND, METHODS ...).

The document is laid out as PubTator does (title, a space, the abstract); each
section is its own passage with its label in ``Passage.label`` (the label itself is
not part of the text). A record without an abstract is a title-only document.
Inline markup (``<i>``, ``<sup>``) is flattened to its text. Kept as metadata:
journal, year, DOI and each section's ``NlmCategory``. PubMed XML holds no
entity spans; the writer writes the text, passages and that metadata back.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterable, Iterator

from ..documents import Document
from ..errors import InputError
from ..fileio import atomic_write
from .report import WriteReport
from .xmlsafe import XmlFile, check_xml_chars, parse_xml, text_of, write_xml

NAME = "pubmed"
EXTENSIONS = (".pubmed.xml",)
ROOT_TAG = "PubmedArticleSet"
_RECORDS = ("PubmedArticle", "PubmedBookArticle")


def _metadata(record: ET.Element) -> dict[str, object]:
    meta: dict[str, object] = {}
    journal = record.findtext(".//Journal/Title")
    year = record.findtext(".//JournalIssue/PubDate/Year") or record.findtext(".//PubDate/Year")
    doi = next((e.text for e in record.iter("ELocationID") if e.get("EIdType") == "doi"), None)
    if doi is None:
        doi = next((e.text for e in record.iter("ArticleId") if e.get("IdType") == "doi"), None)
    for key, value in (("journal", journal), ("year", year), ("doi", doi)):
        if value:
            meta[key] = value.strip()
    return meta


def _record(record: ET.Element, xml: XmlFile) -> Document:
    pmid = (record.findtext(".//PMID") or "").strip()
    if not pmid:
        raise xml.error(f"a <{record.tag}> has no <PMID>", f"<{record.tag}>")
    title_el = record.find(".//ArticleTitle")
    if title_el is None:
        title_el = record.find(".//BookTitle")
    title = " ".join(text_of(title_el).split())
    sections: list[tuple[str | None, str]] = []
    categories: list[str | None] = []
    abstract = record.find(".//Abstract")
    for part in abstract.findall("AbstractText") if abstract is not None else []:
        body = " ".join(text_of(part).split())
        if body:
            sections.append((part.get("Label") or None, body))
            categories.append(part.get("NlmCategory"))
    doc = Document.from_parts(pmid, title, sections, metadata=_metadata(record))
    if any(categories):
        doc.metadata["nlm_categories"] = categories
    return doc


def read(path: str | Path) -> Iterator[Document]:
    """One document per article of a PubMed XML file."""
    xml = parse_xml(path)
    if xml.root.tag not in (ROOT_TAG, *_RECORDS):
        raise InputError(f"not PubMed XML: the root element is <{xml.root.tag}>, expected "
                         f"<{ROOT_TAG}>", path)
    records = [xml.root] if xml.root.tag in _RECORDS else [r for r in xml.root if r.tag in _RECORDS]
    for record in records:
        yield _record(record, xml)


def _article(doc: Document) -> ET.Element:
    rec = ET.Element("PubmedArticle")
    cit = ET.SubElement(rec, "MedlineCitation", Status="MEDLINE", Owner="NLM")
    ET.SubElement(cit, "PMID", Version="1").text = doc.id
    art = ET.SubElement(cit, "Article", PubModel="Print")
    meta = doc.metadata
    if meta.get("journal") or meta.get("year"):
        journal = ET.SubElement(art, "Journal")
        if meta.get("year"):
            issue = ET.SubElement(journal, "JournalIssue", CitedMedium="Internet")
            ET.SubElement(ET.SubElement(issue, "PubDate"), "Year").text = str(meta["year"])
        if meta.get("journal"):
            ET.SubElement(journal, "Title").text = str(meta["journal"])
    ET.SubElement(art, "ArticleTitle").text = doc.title
    if meta.get("doi"):
        ET.SubElement(art, "ELocationID", EIdType="doi", ValidYN="Y").text = str(meta["doi"])
    body = [p for p in doc.passages if p.kind != "title"]
    if body:
        abstract = ET.SubElement(art, "Abstract")
        categories = meta.get("nlm_categories") or []
        for i, p in enumerate(body):
            attrs = {"Label": p.label} if p.label else {}
            if i < len(categories) and categories[i]:
                attrs["NlmCategory"] = str(categories[i])
            ET.SubElement(abstract, "AbstractText", attrs).text = doc.text[p.start:p.end]
    return rec


def write(docs: Iterable[Document], path: str | Path) -> WriteReport:
    """Write documents as a ``PubmedArticleSet`` (text, sections and metadata; no spans)."""
    report = WriteReport(path=str(path), format=NAME)
    root = ET.Element(ROOT_TAG)
    for doc in docs:
        report.add(doc, holds_spans=False)
        el = _article(doc)
        check_xml_chars(el, doc.id, path, "PubMed XML")
        root.append(el)
    with atomic_write(path) as fh:
        write_xml(root, fh)
    return report
