"""How unsure a model is of a document: the figure the review queue sorts by.

Per word the tagger keeps the probability of the tag it chose (a softmax marginal;
a CRF model's emission softmax at its Viterbi tag). From those:

- ``expected_errors``: the sum over the document's words of ``1 - p``, the number
  of words the model expects to have tagged wrongly. This is the figure the queue
  ranks by (``FIGURE``).
- ``per_token``: the same divided by the words (expected error rate), which does
  not favour long documents.
- ``lowest_span``: ``1 -`` the lowest entity score of the document (0 without
  entities); blind to the entities the model missed.

Why the sum: on devel corpora with the shipped model
(``experiments/uncertainty_figures.py``, figures in docs/research/curator-loop.md) it orders
documents by their real number of wrong words and wrong entities better than the
per-word rate or the lowest entity score, and a curator's time and the training
signal a document gives both grow with its errors, not with its error rate. It
does favour long abstracts: that is knowingly so (a long abstract with many
uncertain words is worth more of a review), and ``rank`` prints the word count
beside it so a curator sees why.

The figure goes into each tagged document's metadata under ``METADATA_KEY``, where
the app reads it to sort documents.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence

FIGURE = "expected_errors"
METADATA_KEY = "uncertainty"


@dataclass(frozen=True)
class DocumentUncertainty:
    expected_errors: float   # sum over words of 1 - p(chosen tag)
    tokens: int              # words (word tokens) of the document
    per_token: float         # expected_errors / tokens
    lowest_span: float       # 1 - the lowest entity score (0 without entities)

    @property
    def value(self) -> float:
        """The figure the queue ranks by."""
        return getattr(self, FIGURE)

    def to_metadata(self) -> dict[str, Any]:
        """As stored in ``Document.metadata[METADATA_KEY]`` (rounded: a file diff
        should not show float noise)."""
        d = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}
        return {"figure": FIGURE, "value": d[FIGURE], **d}


def document_uncertainty(word_scores: Iterable[Sequence[float]],
                         span_scores: Iterable[float | None] = ()) -> DocumentUncertainty:
    """The figures of one document from the probability of the chosen tag of each
    word (one sequence per sentence) and its entities' scores."""
    tokens, expected = 0, 0.0
    for sentence in word_scores:
        tokens += len(sentence)
        expected += sum(1.0 - float(p) for p in sentence)
    expected = max(0.0, expected)
    spans = [float(s) for s in span_scores if s is not None]
    lowest = 1.0 - min(spans) if spans else 0.0
    return DocumentUncertainty(expected, tokens, expected / tokens if tokens else 0.0, max(0.0, lowest))


def stored_uncertainty(metadata: dict[str, Any]) -> float | None:
    """The ranking figure a tagged document's metadata holds, or None (not tagged,
    or tagged before the figure existed)."""
    entry = (metadata or {}).get(METADATA_KEY)
    if isinstance(entry, dict) and isinstance(entry.get("value"), (int, float)):
        return float(entry["value"])
    return None
