"""The document model every other module speaks: documents, passages, spans,
sentences and tokens, all with character offsets into ``Document.text``.

Offsets are Python string indices (code points), end exclusive. A document's
text is the concatenation of its passages as laid out by ``passages`` (PubTator's
convention: title, a space, then the abstract), so an offset means the same thing
in every format.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Iterable


class Source(str, Enum):
    """Who put a span there. Curated spans are never overwritten by re-tagging."""

    GOLD = "gold"
    MODEL = "model"
    CURATOR = "curator"


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    label: str
    source: Source = Source.GOLD
    score: float | None = None
    concept_id: str | None = None
    # Which annotator the span came from, where two curators' versions were adjudicated
    # (None: not recorded). Held by JSONL, project files and BioC; PubTator and BIO drop it.
    annotator: str | None = None

    def __post_init__(self) -> None:
        if self.start < 0 or self.end < self.start:
            raise ValueError(f"bad span offsets {self.start}..{self.end}")
        if not isinstance(self.source, Source):
            object.__setattr__(self, "source", Source(self.source))

    def text_in(self, text: str) -> str:
        return text[self.start:self.end]

    def overlaps(self, other: "Span") -> bool:
        return self.start < other.end and other.start < self.end

    def with_(self, **changes: Any) -> "Span":
        return replace(self, **changes)


@dataclass(frozen=True)
class Passage:
    """A contiguous part of the text: ``kind`` is ``title``, ``abstract`` or
    ``section``; ``label`` is a structured abstract's section label (BACKGROUND, ...)."""

    start: int
    end: int
    kind: str = "abstract"
    label: str | None = None


@dataclass(frozen=True)
class Token:
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Sentence:
    start: int
    end: int
    tokens: tuple[Token, ...]

    @property
    def words(self) -> list[str]:
        return [t.text for t in self.tokens]


@dataclass
class Document:
    id: str
    text: str
    passages: list[Passage] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    # Relation lines (PubTator ``PMID<TAB>CID<TAB>a<TAB>b``) kept verbatim as tuples.
    relations: list[tuple[str, ...]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.passages and self.text:
            self.passages = [Passage(0, len(self.text), "abstract")]

    @classmethod
    def from_parts(cls, id: str, title: str | None, sections: Iterable[tuple[str | None, str]] = (),
                   **kwargs: Any) -> "Document":
        """Lay out a title and (label, text) sections the PubTator way: parts joined by
        one space, each part its own passage."""
        text = ""
        passages: list[Passage] = []
        if title:
            passages.append(Passage(0, len(title), "title"))
            text = title
        for label, body in sections:
            if not body:
                continue
            if text:
                text += " "
            passages.append(Passage(len(text), len(text) + len(body), "abstract", label))
            text += body
        return cls(id=id, text=text, passages=passages, **kwargs)

    @property
    def title(self) -> str:
        for p in self.passages:
            if p.kind == "title":
                return self.text[p.start:p.end]
        return ""

    @property
    def abstract(self) -> str:
        parts = [p for p in self.passages if p.kind != "title"]
        if not parts:
            return ""
        return self.text[parts[0].start:parts[-1].end]

    def span_text(self, span: Span) -> str:
        return self.text[span.start:span.end]

    def spans_by(self, *sources: Source) -> list[Span]:
        wanted = set(sources)
        return [s for s in self.spans if s.source in wanted]

    def sorted_spans(self) -> list[Span]:
        return sorted(self.spans, key=lambda s: (s.start, -s.end, s.label))

    def labels(self) -> list[str]:
        return sorted({s.label for s in self.spans})
