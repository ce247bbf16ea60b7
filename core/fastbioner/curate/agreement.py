"""Agreement between annotators of the same documents: mention-level precision,
recall and F1 of one annotator against a reference, token-level Cohen's kappa over
BIO tags, Fleiss' kappa for three or more, and the differences listed by kind.

The measures work on span lists and on documents (so the CLI's ``agree`` and the
app's compare-and-adjudicate flow score the same way); :func:`match_documents` pairs
the documents of two annotators' files, also those whose texts differ only in white
space that a format could not hold (:func:`align_white_space`). Mentions are matched by
sorting and sweeping (:mod:`fastbioner.curate.span_match`), in time near-linear in them.

Mentions are ``(start, end, label)``: a mention listed twice counts once, and nested
or overlapping mentions all count (a span format holds them). ``exact`` matching
wants the same offsets and type; ``overlap`` matching counts a mention as found when
the other side has an overlapping mention of the same type (precision counts B's
mentions so found, recall A's). With exact matching on documents read from BIO files,
the figures are seqeval's strict IOB2 ones on the same tags.

Kappa is over the documents' BIO view: each document split into tokens by the project
tokenizer and tagged from its spans by the longest-first rule of
:func:`fastbioner.io.labels.spans_to_tags` (what a BIO export would write), so a pair
read from BIO files is scored on exactly the tags of the files.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

from fastbioner.base.errors import InputError
from fastbioner.io.labels import document_tagged_sentences
from fastbioner.curate.span_match import overlap_found, overlapping_pairs
from fastbioner.io.documents import Document, Span

MATCHES = ("exact", "overlap")

# Kinds of difference, in the order they are listed.
ONLY_A, ONLY_B, OTHER_LABEL, OTHER_BOUNDARY = "only_a", "only_b", "label", "boundary"
KINDS = (ONLY_A, ONLY_B, OTHER_LABEL, OTHER_BOUNDARY)
KIND_NAMES = {ONLY_A: "only in A", ONLY_B: "only in B", OTHER_LABEL: "same span, other label",
              OTHER_BOUNDARY: "overlapping, other boundaries"}

Mention = tuple[int, int, str]


def mention(span: Span) -> Mention:
    return (span.start, span.end, span.label)


@dataclass
class Counts:
    """Mentions of A and of B, and how many of each the other side matched. With
    exact matching ``matched_a == matched_b`` (the true positives)."""

    n_a: int = 0
    n_b: int = 0
    matched_a: int = 0
    matched_b: int = 0

    def __iadd__(self, other: "Counts") -> "Counts":
        self.n_a += other.n_a
        self.n_b += other.n_b
        self.matched_a += other.matched_a
        self.matched_b += other.matched_b
        return self

    # Neither side marking anything is full agreement (1); one side marking nothing
    # gives 0 where a ratio is undefined, as seqeval's zero_division=0 does.
    @property
    def precision(self) -> float:
        if self.n_b == 0:
            return 1.0 if self.n_a == 0 else 0.0
        return self.matched_b / self.n_b

    @property
    def recall(self) -> float:
        if self.n_a == 0:
            return 1.0 if self.n_b == 0 else 0.0
        return self.matched_a / self.n_a

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def to_dict(self) -> dict:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1,
                "a": self.n_a, "b": self.n_b, "matched_a": self.matched_a, "matched_b": self.matched_b}


@dataclass(frozen=True)
class Difference:
    """One difference between A and B in a document: ``a`` and/or ``b`` (the other
    None for ``only_a`` / ``only_b``)."""

    doc_id: str
    kind: str
    a: Span | None
    b: Span | None

    @property
    def start(self) -> int:
        return min(s.start for s in (self.a, self.b) if s is not None)


@dataclass
class SpanAgreement:
    """Agreement on one document (or any two span lists over the same text)."""

    per_type: dict[str, Counts]
    overall: Counts
    differences: list[Difference]


def _dedup(spans: Iterable[Span]) -> list[Span]:
    """One span per mention (the first listed), in text order."""
    seen: dict[Mention, Span] = {}
    for s in spans:
        seen.setdefault(mention(s), s)
    return sorted(seen.values(), key=lambda s: (s.start, -s.end, s.label))


def compare_spans(a: Iterable[Span], b: Iterable[Span], match: str = "exact", doc_id: str = "") -> SpanAgreement:
    """Precision/recall/F1 of ``b`` against ``a`` per type and overall, and the
    differences (always found by exact comparison: what adjudication walks)."""
    if match not in MATCHES:
        raise ValueError(f"match must be one of {', '.join(MATCHES)}, not {match!r}")
    a, b = _dedup(a), _dedup(b)
    if match == "exact":
        set_a, set_b = {mention(s) for s in a}, {mention(s) for s in b}
        found_a, found_b = [mention(s) in set_b for s in a], [mention(s) in set_a for s in b]
    else:
        found_a, found_b = overlap_found(a, b), overlap_found(b, a)
    per_type: dict[str, Counts] = {}
    for s, found in zip(a, found_a):
        c = per_type.setdefault(s.label, Counts())
        c.n_a += 1
        c.matched_a += found
    for s, found in zip(b, found_b):
        c = per_type.setdefault(s.label, Counts())
        c.n_b += 1
        c.matched_b += found
    overall = Counts()
    for c in per_type.values():
        overall += c
    return SpanAgreement(dict(sorted(per_type.items())), overall, differences(a, b, doc_id))


def differences(a: Sequence[Span], b: Sequence[Span], doc_id: str = "") -> list[Difference]:
    """Mentions not in both, paired up: the same offsets with another label first,
    then overlapping mentions with other boundaries (largest overlap first, the same
    label preferred), each mention in at most one pair; the rest are only in A or
    only in B. In text order."""
    set_a, set_b = {mention(s) for s in a}, {mention(s) for s in b}
    left_a = [s for s in _dedup(a) if mention(s) not in set_b]
    left_b = [s for s in _dedup(b) if mention(s) not in set_a]
    out: list[Difference] = []
    # Same offsets, other label: each of A's (in text order) with the first of B's still
    # unpaired at those offsets.
    at: dict[tuple[int, int], deque[int]] = {}
    for j, o in enumerate(left_b):
        at.setdefault((o.start, o.end), deque()).append(j)
    paired_a: set[int] = set()
    paired_b: set[int] = set()
    for i, s in enumerate(left_a):
        waiting = at.get((s.start, s.end))
        if waiting:
            j = waiting.popleft()
            out.append(Difference(doc_id, OTHER_LABEL, s, left_b[j]))
            paired_a.add(i)
            paired_b.add(j)
    left_a = [s for i, s in enumerate(left_a) if i not in paired_a]
    left_b = [o for j, o in enumerate(left_b) if j not in paired_b]
    # Overlapping pairs ranked; the sweep finds them without trying every pair.
    pairs = sorted(((min(left_a[i].end, left_b[j].end) - max(left_a[i].start, left_b[j].start),
                     left_a[i].label == left_b[j].label, -left_a[i].start, -left_b[j].start, i, j)
                    for i, j in overlapping_pairs(left_a, left_b, doc_id)), reverse=True)
    used_a, used_b = set(), set()
    for *_, i, j in pairs:
        if i in used_a or j in used_b:
            continue
        used_a.add(i)
        used_b.add(j)
        out.append(Difference(doc_id, OTHER_BOUNDARY, left_a[i], left_b[j]))
    out.extend(Difference(doc_id, ONLY_A, s, None) for i, s in enumerate(left_a) if i not in used_a)
    out.extend(Difference(doc_id, ONLY_B, None, o) for j, o in enumerate(left_b) if j not in used_b)
    return sorted(out, key=lambda d: (d.start, KINDS.index(d.kind)))


# Token tags and kappa ------------------------------------------------------------------
def token_tags(doc: Document, spans: Iterable[Span] | None = None) -> list[str]:
    """The IOB2 tag of every token of ``doc`` from ``spans`` (default: the document's),
    as a BIO export writes them."""
    view = doc if spans is None else replace(doc, spans=list(spans))
    return [t for s in document_tagged_sentences(view, "IOB2").sentences for t in s.tags]


def cohen_kappa(tags_a: Sequence[str], tags_b: Sequence[str]) -> float:
    """Cohen's kappa of two label sequences (unweighted). Two identical constant
    sequences, where kappa's chance term leaves 0/0, score 1."""
    if len(tags_a) != len(tags_b):
        raise ValueError(f"{len(tags_a)} tags against {len(tags_b)}")
    n = len(tags_a)
    if n == 0:
        return 1.0
    observed = sum(x == y for x, y in zip(tags_a, tags_b)) / n
    ca, cb = Counter(tags_a), Counter(tags_b)
    expected = sum(ca[k] * cb[k] for k in ca) / (n * n)
    if expected >= 1.0:
        return 1.0 if observed >= 1.0 else 0.0
    return (observed - expected) / (1.0 - expected)


def fleiss_kappa(rows: Sequence[Sequence[str]]) -> float:
    """Fleiss' kappa: ``rows`` holds, per item (token), the label each of the same
    number of raters gave. Items all rated alike in one category score 1."""
    if not rows:
        return 1.0
    raters = len(rows[0])
    if raters < 2 or any(len(r) != raters for r in rows):
        raise ValueError("every item needs the same number (two or more) of ratings")
    n_items = len(rows)
    totals: Counter = Counter()
    agreement = 0.0
    for r in rows:
        c = Counter(r)
        totals.update(c)
        agreement += (sum(v * v for v in c.values()) - raters) / (raters * (raters - 1))
    p_bar = agreement / n_items
    p_e = sum((v / (n_items * raters)) ** 2 for v in totals.values())
    if p_e >= 1.0:
        return 1.0 if p_bar >= 1.0 else 0.0
    return (p_bar - p_e) / (1.0 - p_e)


# Documents of two files ------------------------------------------------------------------
@dataclass
class Matching:
    """Documents of A and B paired: ``pairs`` (same id, or same position, and the same
    text, or by id a text differing only in white space: :func:`align_white_space`),
    and what could not be compared."""

    pairs: list[tuple[Document, Document]] = field(default_factory=list)
    text_differs: list[str] = field(default_factory=list)
    only_in_a: list[str] = field(default_factory=list)
    only_in_b: list[str] = field(default_factory=list)
    by_position: bool = False
    # Paired although their texts differ in white space (B's mentions moved onto A's text).
    aligned: list[str] = field(default_factory=list)


def _without_docstart(docs: Sequence[Document]) -> bool:
    """Read from a BIO file without -DOCSTART- lines: one document per sentence block,
    ids made from the line numbers, so they are matched by position."""
    return bool(docs) and all("conll_docstart" in d.metadata and d.metadata["conll_docstart"] is None for d in docs)


def _by_id(docs: Sequence[Document], name: str) -> dict[str, Document]:
    out: dict[str, Document] = {}
    for d in docs:
        if d.id in out:
            raise InputError(f"document {d.id} appears twice: each annotator's file must hold each "
                             "document once", name)
        out[d.id] = d
    return out


def match_documents(docs_a: Sequence[Document], docs_b: Sequence[Document], name_a: str = "A",
                    name_b: str = "B") -> Matching:
    """Pair A's documents with B's: by position when both come from BIO files without
    ``-DOCSTART-`` (which must then hold as many sentences, with the same tokens), else
    by id. A pair whose text differs is reported, not compared, unless matched by id
    and differing only in white space (then B's document in the pair is B's mentions on
    A's text, and its id is in ``aligned``)."""
    m = Matching()
    if _without_docstart(docs_a) and _without_docstart(docs_b):
        if len(docs_a) != len(docs_b):
            raise InputError(f"{len(docs_b)} sentences but {name_a} has {len(docs_a)}: BIO files without "
                             "-DOCSTART- are matched sentence by sentence and must hold the same sentences",
                             name_b)
        m.by_position = True
        for left, right in zip(docs_a, docs_b):
            (m.pairs.append((left, right)) if left.text == right.text else m.text_differs.append(left.id))
        return m
    a, b = _by_id(docs_a, name_a), _by_id(docs_b, name_b)
    for doc_id, da in a.items():
        db = b.get(doc_id)
        if db is None:
            m.only_in_a.append(doc_id)
        elif da.text == db.text:
            m.pairs.append((da, db))
        elif (moved := align_white_space(da, db)) is not None:
            m.pairs.append((da, moved))
            m.aligned.append(doc_id)
        else:
            m.text_differs.append(doc_id)
    m.only_in_b = [i for i in b if i not in a]
    return m


def _non_space(text: str) -> str:
    return "".join(text.split())


def align_white_space(a: Document, b: Document) -> Document | None:
    """``b`` with its mentions moved onto ``a``'s text, when the two texts differ only in
    white space (str.isspace: spaces, tabs, line breaks; where they fall and how many);
    else None.

    That is what a format cannot hold: PubTator writes a document without a title
    with a leading space (every offset one further), tabs and line breaks as spaces, and
    the title and abstract one space apart; a CoNLL/BIO file keeps tokens, not the space
    between them. A mention keeps its first and last non-space character: its edges in
    ``a`` are those characters' places there (a mention of white space alone becomes a
    zero-length one where it stood)."""
    if _non_space(a.text) != _non_space(b.text):
        return None
    # Where each non-space character of A stands, and how many of B's come before each offset.
    places = [i for i, ch in enumerate(a.text) if not ch.isspace()]
    places.append(len(a.text))
    before = [0]
    for ch in b.text:
        before.append(before[-1] + (not ch.isspace()))

    def moved(span: Span) -> Span:
        first, stop = before[span.start], before[span.end]
        start = places[first]
        end = places[stop - 1] + 1 if stop > first else start
        return span.with_(start=start, end=end)

    return replace(b, text=a.text, passages=list(a.passages), spans=[moved(s) for s in b.spans])


@dataclass
class PairAgreement:
    """A against B over their matched documents."""

    name_a: str
    name_b: str
    match: str
    per_type: dict[str, Counts]
    overall: Counts
    kappa: float
    tokens: int
    differences: list[Difference]
    matching: Matching
    per_document: dict[str, Counts] = field(default_factory=dict)

    def difference_counts(self) -> dict[str, int]:
        c = Counter(d.kind for d in self.differences)
        return {k: c.get(k, 0) for k in KINDS}

    def to_dict(self) -> dict:
        return {
            "a": self.name_a, "b": self.name_b, "match": self.match,
            "per_type": {t: c.to_dict() for t, c in self.per_type.items()},
            "overall": self.overall.to_dict(),
            "kappa": self.kappa, "tokens": self.tokens,
            "differences": self.difference_counts(),
            "documents": {"compared": len(self.matching.pairs), "matched_by": "position" if
                          self.matching.by_position else "id",
                          "text_differs": self.matching.text_differs,
                          "aligned_white_space": self.matching.aligned,
                          "only_in_a": self.matching.only_in_a, "only_in_b": self.matching.only_in_b},
            "per_document": {d: c.to_dict() for d, c in self.per_document.items()},
            "difference_list": [self._difference_dict(d) for d in self.differences],
        }

    def _difference_dict(self, d: Difference) -> dict:
        def one(s: Span | None) -> dict | None:
            return None if s is None else {"start": s.start, "end": s.end, "label": s.label}
        return {"document": d.doc_id, "kind": d.kind, "a": one(d.a), "b": one(d.b)}


def compare_documents(matching: Matching, match: str = "exact", name_a: str = "A",
                      name_b: str = "B") -> PairAgreement:
    """The figures of B against A over ``matching``'s pairs."""
    per_type: dict[str, Counts] = {}
    overall = Counts()
    diffs: list[Difference] = []
    tags_a: list[str] = []
    tags_b: list[str] = []
    per_document: dict[str, Counts] = {}
    for da, db in matching.pairs:
        got = compare_spans(da.spans, db.spans, match, da.id)
        for t, c in got.per_type.items():
            per_type.setdefault(t, Counts()).__iadd__(c)
        overall += got.overall
        per_document[da.id] = got.overall
        diffs.extend(got.differences)
        ta, tb = token_tags(da), token_tags(db)
        if len(ta) != len(tb):  # same text, same tokenizer: cannot differ
            raise AssertionError(f"document {da.id}: {len(ta)} tokens against {len(tb)}")
        tags_a.extend(ta)
        tags_b.extend(tb)
    return PairAgreement(name_a, name_b, match, dict(sorted(per_type.items())), overall,
                         cohen_kappa(tags_a, tags_b), len(tags_a), diffs, matching, per_document)


def fleiss_over(docs: Sequence[Sequence[Document]], names: Sequence[str]) -> tuple[float, int, int]:
    """Fleiss' kappa over the token tags of documents that every file holds with the
    same text (matched as :func:`match_documents` matches A with each other file).
    Returns (kappa, tokens, documents)."""
    reference = docs[0]
    matchings = [match_documents(reference, other, names[0], name) for other, name in zip(docs[1:], names[1:])]
    # The reference's documents compared with every other file, by identity.
    common = None
    partner: list[dict[int, Document]] = []
    for m in matchings:
        got = {id(a): b for a, b in m.pairs}
        partner.append(got)
        common = set(got) if common is None else common & set(got)
    rows: list[tuple[str, ...]] = []
    n_docs = 0
    for doc in reference:
        if common is None or id(doc) not in common:
            continue
        n_docs += 1
        columns = [token_tags(doc)] + [token_tags(p[id(doc)]) for p in partner]
        rows.extend(zip(*columns))
    return fleiss_kappa(rows), len(rows), n_docs
