"""BioC XML: ``collection / document / passage / annotation`` with document-level
offsets (``location offset= length=``).

Mapping to the document model:

- passages: ``infon type`` -> ``Passage.kind`` (``title``, ``abstract`` ...),
  ``infon section`` -> ``Passage.label``; the document text puts each passage's text
  at its offset (gaps filled with spaces, as PubTator lays title and abstract out);
- annotations with one location become spans: ``infon type`` -> label, ``MESH`` /
  ``identifier`` -> concept id, ``source``, ``score`` and ``annotator`` infons -> source, score and
  the annotator adjudication recorded (written back, so BioC keeps everything a span holds); other infons
  (``CompositeRole``) are kept in ``metadata["bioc_infons"]`` keyed by
  ``"start:end:label"``;
- annotations with several locations (discontinuous mentions) cannot be one span:
  they are kept whole in ``metadata["bioc_discontinuous"]`` and written back as they were;
- relations: ``(relation type, argument ids ...)`` in ``Document.relations`` (the
  PubTator shape, ``("CID", chemical, disease)``), their infon keys in
  ``metadata["bioc_relation_keys"]``;
- document-level infons -> ``metadata["bioc_infons_doc"]``.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterable, Iterator

from fastbioner.io.documents import Document, Passage, Source, Span
from fastbioner.base.errors import InputError
from fastbioner.io.fileio import atomic_write
from fastbioner.io.formats.limits import DEFAULT_LIMITS, ReadLimits
from fastbioner.io.formats.report import WriteReport
from fastbioner.io.formats.xmlsafe import XmlFile, check_xml_chars, parse_xml, write_xml_stream

NAME = "bioc"
EXTENSIONS = (".bioc.xml", ".bioc")
ROOT_TAG = "collection"

_CONCEPT_KEYS = ("MESH", "identifier", "Identifier", "concept_id")
_SPAN_KEYS = {"type", "source", "score", "annotator", *_CONCEPT_KEYS}
_SOURCES = tuple(s.value for s in Source)


def _infons(el: ET.Element) -> dict[str, str]:
    return {i.get("key", ""): (i.text or "") for i in el.findall("infon")}


def _int(el: ET.Element | None, attr: str | None, xml: XmlFile, what: str, *where: str) -> int:
    raw = (el.get(attr) if attr else el.text) if el is not None else None
    try:
        return int((raw or "").strip())
    except ValueError:
        raise xml.error(f"{what} {raw!r} is not a number", *where) from None


def _document(el: ET.Element, xml: XmlFile) -> Document:
    doc_id = (el.findtext("id") or "").strip()
    if not doc_id:
        raise xml.error("a BioC <document> has no <id>")
    here = f"<id>{doc_id}</id>"
    parts: list[tuple[int, str, dict[str, str]]] = []
    for p in el.findall("passage"):
        parts.append((_int(p.find("offset"), None, xml, f"document {doc_id}: passage offset", here, "<offset>"),
                      p.findtext("text") or "", _infons(p)))
    text = ""
    passages = []
    for offset, body, infons in sorted(parts, key=lambda t: t[0]):
        if offset < 0 or offset > len(xml.text):
            # Gaps are filled with spaces: an offset past the file's own length would
            # build a text of any size (3,000,000,000 spaces) from a few bytes.
            raise xml.error(f"document {doc_id}: passage offset {offset} is "
                            f"{'negative' if offset < 0 else 'beyond the length of the file'}",
                            here, f"<offset>{offset}<")
        if offset < len(text):
            raise xml.error(f"document {doc_id}: passage at offset {offset} overlaps the one before",
                            here, f"<offset>{offset}<")
        text += " " * (offset - len(text)) + body
        if body:
            passages.append(Passage(offset, offset + len(body), infons.get("type", "abstract"),
                                    infons.get("section") or None))
    doc = Document(id=doc_id, text=text, passages=passages)
    if infons_doc := _infons(el):
        doc.metadata["bioc_infons_doc"] = infons_doc
    for ann in el.iter("annotation"):
        _annotation(doc, ann, xml, here)
    for rel in el.findall("relation"):
        infons = _infons(rel)
        kind = infons.pop("relation", infons.pop("type", ""))
        doc.relations.append((kind, *infons.values()))
        doc.metadata.setdefault("bioc_relation_keys", []).append(list(infons))
    return doc


def _annotation(doc: Document, ann: ET.Element, xml: XmlFile, here: str) -> None:
    infons = _infons(ann)
    where = (here, f"<annotation id='{ann.get('id')}'")
    locations = [(_int(loc, "offset", xml, f"document {doc.id}: annotation offset", *where),
                  _int(loc, "length", xml, f"document {doc.id}: annotation length", *where))
                 for loc in ann.findall("location")]
    label = infons.get("type", "")
    for start, length in locations:
        if start < 0 or length < 0 or start + length > len(doc.text):
            raise xml.error(f"document {doc.id}: annotation {ann.get('id')!r} has offsets "
                            f"{start}..{start + length} outside the text ({len(doc.text)} characters)",
                            *where)
    if len(locations) != 1:
        doc.metadata.setdefault("bioc_discontinuous", []).append(
            {"infons": infons, "locations": [list(x) for x in locations], "text": ann.findtext("text") or ""})
        return
    start, length = locations[0]
    end = start + length
    if not label.strip():
        raise xml.error(f"document {doc.id}: annotation {ann.get('id')!r} has no type", *where)
    written = ann.findtext("text")
    if written is not None and written.strip() != doc.text[start:end].strip():
        raise xml.error(f"document {doc.id}: annotation {ann.get('id')!r} text {written!r} does not "
                        f"match the text at {start}..{end} ({doc.text[start:end]!r})", *where)
    concept = next((infons[k] for k in _CONCEPT_KEYS if k in infons), None)
    score = None
    if infons.get("score", "").strip():
        try:
            score = float(infons["score"])
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise xml.error(f"document {doc.id}: annotation {ann.get('id')!r} score {infons['score']!r:.40} "
                            f"is not a finite number", *where)
    source = infons.get("source", "gold")
    if source not in _SOURCES:
        raise xml.error(f"document {doc.id}: annotation {ann.get('id')!r} source {source!r:.40} is not one "
                        f"of {', '.join(_SOURCES)}", *where)
    annotator = infons.get("annotator") or None
    doc.spans.append(Span(start, end, label, Source(source), score, concept, annotator))
    rest = {k: v for k, v in infons.items() if k not in _SPAN_KEYS}
    if rest:
        doc.metadata.setdefault("bioc_infons", {})[f"{start}:{end}:{label}"] = rest


def read(path: str | Path, limits: ReadLimits | None = None) -> Iterator[Document]:
    """Documents of a BioC XML collection, read whole: a file over
    ``limits.max_whole_file_bytes`` is refused (docs/reference/limits.md)."""
    limits = limits or DEFAULT_LIMITS
    xml = parse_xml(path, limits.max_whole_file_bytes)
    if xml.root.tag != ROOT_TAG:
        raise InputError(f"not BioC XML: the root element is <{xml.root.tag}>, expected <collection>", path)
    for el in xml.root.findall("document"):
        doc = _document(el, xml)
        if len(doc.text) > limits.max_document_chars:
            raise xml.error(f"document {doc.id}: a text of {len(doc.text):,} characters, over the "
                            f"{limits.max_document_chars:,} one document may hold (see docs/reference/limits.md)",
                            f"<id>{doc.id}</id>")
        yield doc


def _infon(parent: ET.Element, key: str, value: str) -> None:
    ET.SubElement(parent, "infon", key=key).text = value


def _document_element(doc: Document) -> ET.Element:
    el = ET.Element("document")
    ET.SubElement(el, "id").text = doc.id
    for key, value in (doc.metadata.get("bioc_infons_doc") or {}).items():
        _infon(el, key, value)
    passages = doc.passages or [Passage(0, len(doc.text), "abstract")]
    p_elements = []
    for p in passages:
        pe = ET.SubElement(el, "passage")
        _infon(pe, "type", p.kind)
        if p.label:
            _infon(pe, "section", p.label)
        ET.SubElement(pe, "offset").text = str(p.start)
        ET.SubElement(pe, "text").text = doc.text[p.start:p.end]
        p_elements.append((p, pe))
    extra = doc.metadata.get("bioc_infons") or {}
    for n, span in enumerate(doc.spans):
        # An annotation goes in the passage that holds its start (the first one if none does).
        holder = next((pe for p, pe in p_elements if p.start <= span.start < p.end), p_elements[0][1])
        ae = ET.SubElement(holder, "annotation", id=str(n))
        _infon(ae, "type", span.label)
        for key, value in extra.get(f"{span.start}:{span.end}:{span.label}", {}).items():
            _infon(ae, key, value)
        if span.concept_id is not None:
            _infon(ae, "MESH", span.concept_id)
        if span.source is not Source.GOLD:
            _infon(ae, "source", span.source.value)
        if span.score is not None:
            _infon(ae, "score", repr(span.score))
        if span.annotator is not None:
            _infon(ae, "annotator", span.annotator)
        ET.SubElement(ae, "location", offset=str(span.start), length=str(span.end - span.start))
        ET.SubElement(ae, "text").text = doc.text[span.start:span.end]
    for n, disc in enumerate(doc.metadata.get("bioc_discontinuous") or [], len(doc.spans)):
        ae = ET.SubElement(p_elements[0][1], "annotation", id=str(n))
        for key, value in disc["infons"].items():
            _infon(ae, key, value)
        for offset, length in disc["locations"]:
            ET.SubElement(ae, "location", offset=str(offset), length=str(length))
        ET.SubElement(ae, "text").text = disc["text"]
    keys = doc.metadata.get("bioc_relation_keys") or []
    for n, rel in enumerate(doc.relations):
        re_ = ET.SubElement(el, "relation", id=f"R{n}")
        _infon(re_, "relation", str(rel[0]))
        names = keys[n] if n < len(keys) and len(keys[n]) == len(rel) - 1 else (
            ["Chemical", "Disease"] if rel[0] == "CID" and len(rel) == 3 else [f"arg{i}" for i in range(1, len(rel))])
        for key, value in zip(names, rel[1:]):
            _infon(re_, key, str(value))
    return el


def write(docs: Iterable[Document], path: str | Path, source: str = "FastBioNER") -> WriteReport:
    """Write documents as one BioC XML collection."""
    report = WriteReport(path=str(path), format=NAME)

    def children() -> Iterator[ET.Element]:
        for tag, text in (("source", source), ("date", ""), ("key", "BioC.key")):
            el = ET.Element(tag)
            el.text = text
            yield el
        for doc in docs:
            if not doc.id.strip() or doc.id != doc.id.strip():
                raise InputError(f"document {doc.id!r}: an id that is empty or has white space around it, "
                                 f"which BioC XML cannot hold (its reader strips it)", path)
            for span in doc.spans:
                if not span.label.strip():
                    raise InputError(f"document {doc.id}: a span with an empty label, which BioC XML cannot "
                                     f"hold", path)
            report.add(doc)
            el = _document_element(doc)
            check_xml_chars(el, doc.id, path, "BioC XML")
            yield el

    # Written as the documents come (one in memory), complete or absent.
    with atomic_write(path) as fh:
        write_xml_stream(fh, ROOT_TAG, children(), "<!DOCTYPE collection SYSTEM 'BioC.dtd'>")
    return report
