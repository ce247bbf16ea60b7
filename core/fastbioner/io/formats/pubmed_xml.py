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

Files are read as a stream (``.xml``, or ``.xml.gz`` as PubMed's baseline and update
files come), article by article with bounded memory; ``<DeleteCitation>`` blocks are
read and their PMIDs reported (:class:`PubmedReader`).
"""

from __future__ import annotations

import gzip
import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterable, Iterator

from fastbioner.io.documents import Document
from fastbioner.base.errors import InputError
from fastbioner.io.fileio import atomic_write
from fastbioner.io.formats.checks import refuse_chars
from fastbioner.io.formats.report import WriteReport
from fastbioner.io.formats.limits import DEFAULT_LIMITS, ReadLimits
from fastbioner.io.formats.xmlsafe import ByteBudget, check_xml_chars, iterparse_xml, text_of, write_xml_stream

NAME = "pubmed"
EXTENSIONS = (".pubmed.xml", ".xml.gz")
ROOT_TAG = "PubmedArticleSet"
_RECORDS = ("PubmedArticle", "PubmedBookArticle")
_DELETE = "DeleteCitation"


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


def _record(record: ET.Element, pmid: str) -> Document:
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


class PubmedReader:
    """The articles of one PubMed XML file (``.xml`` or ``.xml.gz``), one at a time.

    The file is parsed as it is read and every top-level element (a record, a
    ``<DeleteCitation>``, anything else, which is skipped) is dropped once it has
    been used, so memory stays bounded whatever the file's size (a 30,000-article
    baseline file parsed whole takes over 1 GB). What one top-level element may hold
    is limited (``limits``, :class:`~fastbioner.io.formats.limits.ReadLimits`: its bytes,
    its elements, a document's text), and so is the number of top-level elements
    that are not records: a small gzip of one 4 GB ``<AbstractText>`` or of 750
    million empty elements is refused with one line, not read into memory.

    ``deleted`` lists the PMIDs of the file's ``<DeleteCitation>`` blocks (update
    files carry them: citations an earlier file held that PubMed has withdrawn); it
    is complete once the iterator is exhausted. Dropping those PMIDs from earlier
    files is the caller's business (:mod:`fastbioner.scale.updates`), since a reader
    sees one file."""

    def __init__(self, path: str | Path, limits: ReadLimits | None = None):
        self.path = Path(path)
        self.limits = limits or DEFAULT_LIMITS
        self.deleted: list[str] = []
        self._records = self._read()

    def __iter__(self) -> "PubmedReader":
        return self

    def __next__(self) -> Document:
        return next(self._records)

    def _read(self) -> Iterator[Document]:
        limits = self.limits
        budget: list[ByteBudget] = []
        root: ET.Element | None = None
        depth = 0  # of the element just started or ended (the root is 1)
        seen = others = inside = 0
        last_pmid = None

        def where(tag: str) -> str:
            after = f", the one after PMID {last_pmid}" if last_pmid else ""
            return f"a <{tag}> (top-level element {seen + others + 1}{after})"

        for event, elem in iterparse_xml(self.path, budget=limits.max_xml_record_bytes, on_open=budget.append,
                                         token_budget=limits.max_xml_token_bytes):
            budget[0].event()
            if event == "start":
                depth += 1
                if root is None:
                    root = elem
                    if root.tag not in (ROOT_TAG, *_RECORDS):
                        raise InputError(f"not PubMed XML: the root element is <{root.tag}>, "
                                         f"expected <{ROOT_TAG}>", self.path)
                    budget[0].what = f"<{root.tag}>" if root.tag in _RECORDS else f"the XML after <{root.tag}>"
                    continue
                if depth == 2 and root.tag == ROOT_TAG:  # a top-level element begins: counted anew
                    budget[0].mark()
                    budget[0].what = where(elem.tag)
                    inside = 0
                inside += 1
                if inside > limits.max_xml_record_elements:
                    raise InputError(f"{where(_top_tag(root, elem))} holds more than "
                                     f"{limits.max_xml_record_elements:,} elements "
                                     "(a limit, see docs/reference/limits.md)",
                                     self.path)
                continue
            depth -= 1
            # Records are the root's children (or the root itself, for a file of one
            # record); a record nested deeper would be part of another one.
            top = depth == 1 or (depth == 0 and elem is root)
            if not top:
                continue
            if elem.tag in _RECORDS:
                pmid = (elem.findtext(".//PMID") or "").strip()
                if not pmid:
                    after = f", the one after PMID {last_pmid}" if last_pmid else ""
                    raise InputError(f"a <{elem.tag}> has no <PMID> (record {seen + 1}{after})", self.path)
                seen += 1
                doc = _record(elem, pmid)
                if len(doc.text) > limits.max_document_chars:
                    raise InputError(f"PMID {pmid}: a text of {len(doc.text):,} characters, over the "
                                     f"{limits.max_document_chars:,} one document may hold "
                                     "(see docs/reference/limits.md)",
                                     self.path)
                last_pmid = pmid
                _forget(root, elem)
                yield doc
            elif depth == 1:
                # Anything else at the top is used (DeleteCitation) or skipped, and
                # dropped either way: kept, 750 million empty ones fill any memory.
                others += 1
                if others > limits.max_xml_other_elements:
                    raise InputError(f"more than {limits.max_xml_other_elements:,} top-level elements that are "
                                     "not records (a limit, see docs/reference/limits.md): not a PubMed file?",
                                     self.path)
                if elem.tag == _DELETE:
                    self.deleted.extend(p.text.strip() for p in elem.iter("PMID") if p.text and p.text.strip())
                    if len(self.deleted) > limits.max_deleted_pmids:
                        raise InputError(f"<{_DELETE}> blocks withdraw more than {limits.max_deleted_pmids:,} "
                                         f"PMIDs (a limit, see docs/reference/limits.md)", self.path)
                _forget(root, elem)
            if depth == 1:
                budget[0].mark()
                after = f" (PMID {last_pmid})" if elem.tag in _RECORDS else ""
                budget[0].what = f"the XML after top-level element {seen + others}{after}"


def _top_tag(root: ET.Element, elem: ET.Element) -> str:
    """The tag of the top-level element being read (the last child the root holds)."""
    return root[-1].tag if len(root) else elem.tag


def _forget(root: ET.Element | None, elem: ET.Element) -> None:
    """Drop what has been read: bounded memory is the point of streaming. Clearing
    the root also drops records the parser has built ahead; their own end events
    still deliver them whole (the parser holds them until then)."""
    elem.clear()
    if root is not None and root is not elem:  # None only before the first start event
        root.clear()


def read(path: str | Path, limits: ReadLimits | None = None) -> PubmedReader:
    """One document per article of a PubMed XML file (``.xml`` or ``.xml.gz``), read as
    a stream; the returned iterator's ``deleted`` lists the file's deleted PMIDs."""
    return PubmedReader(path, limits)


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
    """Write documents as a ``PubmedArticleSet`` (text, sections and metadata; no spans),
    gzipped when the name ends in ``.gz``."""
    report = WriteReport(path=str(path), format=NAME)

    def articles() -> Iterator[ET.Element]:
        for doc in docs:
            report.add(doc, holds_spans=False)
            # The reader strips a <PMID> and needs one: an id with white space or none
            # would not read back as written.
            refuse_chars(doc.id, "id", doc.id, path, re.compile(r"\s"), "PubMed XML", empty=False)
            el = _article(doc)
            check_xml_chars(el, doc.id, path, "PubMed XML")
            yield el

    # Written as the documents come (one in memory), complete or absent.
    if str(path).lower().endswith(".gz"):
        with atomic_write(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, \
                io.TextIOWrapper(gz, encoding="utf-8", newline="") as text:
            write_xml_stream(text, ROOT_TAG, articles())
    else:
        with atomic_write(path) as fh:
            write_xml_stream(fh, ROOT_TAG, articles())
    return report
