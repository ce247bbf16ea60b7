"""Mention replacement: more labelled text for a student, made from the training data.

A copy of a labelled document keeps every word outside the entities and replaces each
entity, with probability ``rate``, by another mention of the same type seen in the
training data (Dai & Adel 2020, "An analysis of simple data augmentation for named
entity recognition"). The gold tags stay right by construction (a Chemical is swapped
for a Chemical), and the teacher still gives its soft labels on the new text, so a
student sees the contexts it learns from with names it would otherwise meet once.

Choices, each for a reason:
- One mention is replaced by the same other mention everywhere in its document: an
  abstract that names "cocaine" five times names its stand-in five times, so a document
  read whole (packed context) stays coherent. An abbreviation is a mention of its own
  and gets a stand-in of its own ("doxorubicin (DOX)" may become "cisplatin (L-NAME)").
- The stand-in is drawn from the distinct names of the type, not weighted by how often
  each occurs: the point is the names the student rarely sees.
- A copy in which nothing was replaced is left out (it would only repeat the original).
- The draws come from their own generator seeded by the run's seed, so a resumed run
  (and its fingerprint) sees the same text.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Sequence

from fastbioner.models.encoding import document_runs
from fastbioner.io.labels import TaggedSentence, iob2_chunks

# Marks an augmented copy's document id, so it is never read with its original.
COPY_MARK = "#mention-replacement-"


def mention_pool(sentences: Sequence[TaggedSentence]) -> dict[str, list[tuple[str, ...]]]:
    """The distinct mentions (word tuples) of each entity type, in the order first met."""
    pool: dict[str, dict[tuple[str, ...], None]] = {}
    for s in sentences:
        for typ, a, b in iob2_chunks(s.tags):
            pool.setdefault(typ, {})[tuple(s.words[a:b])] = None
    return {typ: list(names) for typ, names in pool.items()}


def replace_mentions(sentences: Sequence[TaggedSentence], copies: int, rate: float,
                     seed: int) -> list[TaggedSentence]:
    """``copies`` mention-replaced copies of the documents of ``sentences`` (sentences
    of one ``doc_id`` in a row form a document; a sentence without one is a document
    of its own), copy by copy, documents in their order; IOB2 tags."""
    if copies <= 0 or not sentences:
        return []
    rng = random.Random(seed)
    pool = mention_pool(sentences)
    position = {typ: {name: i for i, name in enumerate(names)} for typ, names in pool.items()}
    documents = _documents(sentences)
    out: list[TaggedSentence] = []
    for copy in range(1, copies + 1):
        for document in documents:
            stand_ins: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}
            new, changed = [], False
            for s in document:
                words: list[str] = []
                tags: list[str] = []
                start = 0
                for typ, a, b in iob2_chunks(s.tags):
                    name = tuple(s.words[a:b])
                    key = (typ, name)
                    if key not in stand_ins:
                        stand_ins[key] = _other(pool[typ], position[typ][name], rng) \
                            if rng.random() < rate else name
                    stand_in = stand_ins[key]
                    changed |= stand_in != name
                    words += s.words[start:a] + stand_in
                    tags += list(s.tags[start:a]) + [f"B-{typ}"] + [f"I-{typ}"] * (len(stand_in) - 1)
                    start = b
                words += s.words[start:]
                tags += s.tags[start:]
                doc_id = None if s.doc_id is None else f"{s.doc_id}{COPY_MARK}{copy}"
                new.append(replace(s, words=tuple(words), tags=tuple(tags), doc_id=doc_id,
                                   extra=()))
            if changed:
                out.extend(new)
    return out


def _documents(sentences: Sequence[TaggedSentence]) -> list[list[TaggedSentence]]:
    """Runs of sentences sharing a document id (as packed context joins them); each
    id-less sentence alone."""
    runs = document_runs([s.doc_id for s in sentences])
    out, i = [], 0
    while i < len(sentences):
        first, last = runs[i] or (i, i + 1)
        out.append(list(sentences[first:last]))
        i = last
    return out


def _other(names: list[tuple[str, ...]], own: int, rng: random.Random) -> tuple[str, ...]:
    """A name of ``names`` other than the one at ``own`` (itself when it is the only one)."""
    if len(names) < 2:
        return names[own]
    pick = rng.randrange(len(names) - 1)
    return names[pick if pick < own else pick + 1]
