"""Small documents the app's tests build (no files needed)."""

from __future__ import annotations

from fastbioner.io.documents import Document, Source, Span

TITLE = "Lithium carbonate toxicity in a newborn infant."
ABSTRACT = "A newborn with heart failure and a high serum lithium level is described."


def make_document(doc_id: str = "6794356") -> Document:
    doc = Document.from_parts(doc_id, TITLE, [("BACKGROUND", ABSTRACT)])
    text = doc.text
    doc.spans = [Span(0, 17, "Chemical", concept_id="D016651"),
                 Span(18, 26, "Disease"),
                 Span(text.index("heart failure"), text.index("heart failure") + 13, "Disease", Source.MODEL, 0.91),
                 Span(text.index("lithium level"), text.index("lithium level") + 7, "Chemical", Source.MODEL, 0.3)]
    return doc


def make_documents() -> list[Document]:
    other = Document.from_parts("1000", "Cocaine induced seizures in rats.", [(None, "Seizures were frequent.")])
    other.spans = [Span(0, 7, "Chemical"), Span(16, 24, "Disease")]
    return [make_document(), other, Document.from_parts("2000", "Aspirin and pain.", [(None, "No entity here.")])]
