"""Packed context: each document read as one word sequence, windowed like a long
sentence.

Document context (``context="document"``) builds one window per sentence and fills
it with the neighbouring sentences: every subword is read about as many times as
a window holds sentences (six to seven on BC5CDR abstracts). Packed context
(``context="packed"``) joins the consecutive sentences of a document (title and
abstract) into one word sequence and lets :class:`~fastbioner.models.encoding.WordEncoder`
cut it into windows of ``max_length`` subwords overlapping by ``window_overlap``,
as it does any long sentence: each word is labelled and stitched once, from the
window where it is most central, and the cost stays about that of sentence
context (plus the overlaps).

A :class:`Layout` remembers which original sentences make each joined sequence, so
that what is stitched per joined sequence is split back to one list per original
sentence: callers see the sentences they passed in, whatever the context.
Sentences without a document key (None) stay sequences of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from fastbioner.base.config import CONTEXTS
from fastbioner.models.encoding import Window, WordEncoder, document_runs


@dataclass(frozen=True)
class Layout:
    """Per joined sequence, the word counts of the original sentences it is made
    of, in order (sentences are never reordered, so the position of each original
    sentence follows from the counts)."""

    parts: tuple[tuple[int, ...], ...]

    @classmethod
    def single(cls, sentences: Sequence[Sequence[Any]]) -> "Layout":
        """Each sentence a sequence of its own (sentence and document context)."""
        return cls(tuple((len(s),) for s in sentences))

    @property
    def sequences(self) -> int:
        return len(self.parts)

    @property
    def sentences(self) -> int:
        return sum(len(p) for p in self.parts)

    def first_sentences(self) -> list[int]:
        """The index of the first original sentence of each joined sequence."""
        out, n = [], 0
        for p in self.parts:
            out.append(n)
            n += len(p)
        return out

    def split(self, values: Sequence[Sequence[Any]]) -> list[list[Any]]:
        """Per-word ``values`` of each joined sequence back to one list per original
        sentence."""
        if len(values) != len(self.parts):
            raise ValueError(f"{len(values)} value lists for {len(self.parts)} sequences")
        if len(self.parts) == self.sentences:  # nothing joined (sentence context, the usual case)
            return [list(row) for row in values]
        out: list[list[Any]] = []
        for row, lengths in zip(values, self.parts):
            if len(row) != sum(lengths):
                raise ValueError(f"{len(row)} values for a sequence of {sum(lengths)} words")
            start = 0
            for n in lengths:
                out.append(list(row[start:start + n]))
                start += n
        return out


def merge(sentences: Sequence[Sequence[str]], tags: Sequence[Sequence[str]] | None,
          documents: Sequence[Any]) -> tuple[list[list[str]], list[list[str]] | None, Layout]:
    """Join each run of consecutive sentences with the same document key (not None)
    into one word sequence (and its tags likewise): ``(words, tags, layout)``."""
    if len(documents) != len(sentences):
        raise ValueError(f"{len(documents)} document keys for {len(sentences)} sentences")
    if tags is not None and len(tags) != len(sentences):
        raise ValueError(f"{len(tags)} tag sequences for {len(sentences)} sentences")
    runs = document_runs(documents)
    words_out: list[list[str]] = []
    tags_out: list[list[str]] | None = [] if tags is not None else None
    parts: list[tuple[int, ...]] = []
    i = 0
    while i < len(sentences):
        first, last = runs[i] or (i, i + 1)
        words_out.append([w for s in range(first, last) for w in sentences[s]])
        if tags_out is not None and tags is not None:
            tags_out.append([t for s in range(first, last) for t in tags[s]])
        parts.append(tuple(len(sentences[s]) for s in range(first, last)))
        i = last
    return words_out, tags_out, Layout(tuple(parts))


def encode(encoder: WordEncoder, context: str, sentences: Sequence[Sequence[str]],
           tags: Sequence[Sequence[str]] | None = None,
           documents: Sequence[Any] | None = None) -> tuple[list[Window], Layout, Sequence[Sequence[str]]]:
    """Windows of ``sentences`` as ``context`` reads them, the layout that maps what is
    stitched from them back to the sentences, and the word sequences the windows
    index (``Window.sentence`` is an index into these). Without ``documents`` every
    context reads each sentence alone."""
    if context not in CONTEXTS:
        raise ValueError(f"context must be one of {', '.join(CONTEXTS)}, not {context!r}")
    if context == "packed" and documents is not None:
        words, merged_tags, layout = merge(sentences, tags, documents)
        return encoder.encode(words, merged_tags), layout, words
    windows = encoder.encode(sentences, tags, documents if context == "document" else None)
    return windows, Layout.single(sentences), list(sentences)


def stitch(windows: Sequence[Window], values: Sequence[Sequence[Any]], layout: Layout,
           fill: Any = None) -> list[list[Any]]:
    """:meth:`WordEncoder.stitch` over the joined sequences, split back to one value
    per word of each original sentence."""
    return layout.split(WordEncoder.stitch(windows, values, layout.sequences, fill=fill))
