"""The inference engine: documents in, entity spans out, with character offsets
exact against the original text.

Offsets never come from the subword tokenizer (which lower-cases, strips accents,
drops control characters): the text is cut into word tokens with offsets by
:mod:`fastbioner.io.text`, the model predicts one tag per word (read from the word's
first subword, windows of long sentences stitched by :mod:`fastbioner.models.encoding`),
and a span runs from its first word's start to its last word's end.

Decisions a caller may rely on:

- Invalid tag sequences are repaired the one way the whole library does
  (:func:`fastbioner.io.labels.repair_iob2`): an ``I-X`` that does not continue an ``X``
  entity begins one.
- A word's probability is the softmax probability of its chosen tag at its first
  subword (in float32 whatever the precision). An entity's ``score`` is the mean of
  its words' probabilities (:func:`fastbioner.io.labels.tags_to_spans`). For a CRF
  student the tags are the Viterbi path and the probabilities its emissions'
  softmax.
- A word the subword tokenizer turns into nothing (a lone control or zero-width
  character) is tagged ``O``.
- Speed: all sentences of a call are encoded in one tokenizer call, sorted by
  length and cut into batches of at most ``token_budget`` padded positions (and
  where a cut saves more padding than a batch costs), run under
  ``torch.inference_mode`` in the chosen precision (:mod:`fastbioner.models.precision`).
- :meth:`Tagger.load` runs a plain BERT folder without importing transformers
  (:mod:`fastbioner.models.loading` decides from the folder), with the same logits and
  subwords, so the same spans.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch

from fastbioner.models import packing
from fastbioner.base.config import CONTEXTS, ConfigError, EncodingConfig, Settings
from fastbioner.base.defaults import table
from fastbioner.io.documents import Document, Sentence, Source, Span
from fastbioner.models.encoding import WordEncoder, first_subword_mask, word_index_array
from fastbioner.base.errors import ModelError
from fastbioner.base import threads
from fastbioner.base.jobs import CancelToken
from fastbioner.io.labels import check_tags, detect_scheme, repair_iob2, split_tag, tags_to_spans, to_iob2
from fastbioner.models.loading import ENGINES, load_for_tagging, token_logits
from fastbioner.models.modeling import model_labels, pick_device
from fastbioner.models.precision import apply_precision, checks_from_manifest, choose_precision, default_token_budget
from fastbioner.io.text import document_sentences
from fastbioner.infer.uncertainty import METADATA_KEY, DocumentUncertainty, document_uncertainty
from fastbioner.models.registry import Registry


@dataclass
class TaggerConfig(Settings):
    """How to run a model; saved beside speed figures so they can be reproduced."""

    device: str = "auto"            # auto (CUDA when present), cpu, cuda, cuda:N
    precision: str = "auto"         # auto, fp32, bf16, fp16, int8 (see fastbioner.models.precision)
    threads: int | None = None      # torch intra-op threads; None: the cores less what other work keeps busy
                                    # (fastbioner.base.threads), chosen once per process
    max_length: int | None = None   # subwords per window, special tokens included; None: the
                                    # model's training setting (manifest), else EncodingConfig's
    window_overlap: int | None = None  # subwords shared by consecutive windows of a long sentence (or a
                                       # packed document); None: the model's training setting, else
                                       # EncodingConfig's
    token_budget: int | None = None  # padded subword positions per batch (rows x longest row);
                                     # None: the best measured for the device and precision
    max_batch_size: int = table().section("tagging")["max_batch_size"]  # rows per batch, whatever the budget
                                                                         # allows
    context: str | None = None      # sentence | document | packed; None: the model's training setting
                                    # (manifest)
    engine: str = "auto"            # auto (the folder decides: plain BERT and CNN students without
                                    # transformers, see fastbioner.models.loading), transformers

    def validate(self) -> None:
        if self.threads is not None and self.threads < 1:
            raise ConfigError("threads must be at least 1")
        if self.max_length is not None and self.max_length < 8:
            raise ConfigError("max_length must be at least 8 subwords")
        if self.window_overlap is not None and self.window_overlap < 0:
            raise ConfigError("window_overlap must not be negative")
        if (self.token_budget is not None and self.token_budget < 1) or self.max_batch_size < 1:
            raise ConfigError("token_budget and max_batch_size must be at least 1")
        if self.engine not in ENGINES:
            raise ConfigError(f"engine must be one of {', '.join(ENGINES)}")
        if self.context is not None and self.context not in CONTEXTS:
            raise ConfigError(f"context must be one of {', '.join(CONTEXTS)}")


@dataclass(frozen=True)
class WordTags:
    """One sentence's prediction: a repaired IOB2 tag and a probability per word."""

    tags: list[str]
    scores: list[float]


# What one more batch costs beyond its padded positions, in positions, on a CPU: a
# forward call's fixed work (some 150 small ops for a 6-layer model). Splitting a
# batch pays when it saves more padding than this. On a GPU a call's fixed cost (its
# kernel launches) is worth thousands of positions, so batches there are not cut.
BATCH_OVERHEAD_POSITIONS = 32


def token_budget_batches(lengths: Sequence[int], token_budget: int, max_rows: int,
                         overhead: int | None = BATCH_OVERHEAD_POSITIONS) -> list[list[int]]:
    """Indices sorted longest first and cut greedily so that rows x longest row stays
    within ``token_budget`` (a row longer than the budget goes alone): the cost of a
    batch stays about constant whatever the sentence lengths. Each batch is then cut
    where that saves more padded positions than ``overhead`` per extra batch: one
    abstract's sentences (19 to 57 subwords, say) fill one batch within the budget,
    padded to 1.7 times their length, and the model's matrix products scale with
    the padded positions (:func:`least_padding`). ``overhead`` None: no such cuts."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        width = lengths[current[0]] if current else lengths[i]
        if current and ((len(current) + 1) * width > token_budget or len(current) >= max_rows):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    if overhead is None:
        return batches
    return [part for batch in batches for part in least_padding(batch, lengths, overhead)]


def padding_cut_overhead(device) -> int | None:
    """The ``overhead`` of :func:`token_budget_batches` on ``device``."""
    return BATCH_OVERHEAD_POSITIONS if device.type == "cpu" else None


def least_padding(batch: list[int], lengths: Sequence[int], overhead: int) -> list[list[int]]:
    """``batch`` (indices, longest first) cut into runs that minimise padded positions
    plus ``overhead`` per run (an exact dynamic programme over the cut points)."""
    n = len(batch)
    width = np.array([lengths[i] for i in batch], dtype=np.int64)
    if n < 2 or n * int(width[0]) - int(width.sum()) <= overhead:  # too little padding to pay for a cut
        return [batch]
    best = np.zeros(n + 1, dtype=np.int64)   # best[j]: the cheapest cut of the first j rows
    cut = np.zeros(n + 1, dtype=np.int64)    # where its last run starts
    starts = np.arange(n)
    for j in range(1, n + 1):
        # a last run of rows i..j-1 is padded to width[i] (rows are longest first)
        cost = best[:j] + (j - starts[:j]) * width[:j] + overhead
        cut[j] = int(cost.argmin())
        best[j] = cost[cut[j]]
    runs, j = [], n
    while j > 0:
        runs.append(batch[cut[j]:j])
        j = int(cut[j])
    return runs[::-1]


# Batch-invariant batching (:func:`invariant_batches`): a window's padded width is its
# length rounded up to a multiple of this many subwords, and a batch has at least this
# many positions (rows x width; all-padding rows added), since a matrix product of fewer
# rows runs another kernel: on this project's AVX-512 Xeon, a float32 Linear of under 16
# rows gave other last bits than one of 16 to 8,192 rows, which all agreed.
INVARIANT_WIDTH_STEP = 8
INVARIANT_MIN_POSITIONS = 64


def invariant_batches(lengths: Sequence[int], token_budget: int, max_rows: int, max_width: int,
                      step: int = INVARIANT_WIDTH_STEP) -> tuple[list[list[int]], list[int]]:
    """Batches, and the width each is padded to, such that a window's numbers depend on
    the window alone: its padded width is its own length rounded up to ``step`` (at
    most ``max_width``), and it is batched only with windows of that width. Measured in
    float32 on a CPU: the number of rows in a batch did not change a row's result once
    the batch had enough positions (:data:`INVARIANT_MIN_POSITIONS`, which the caller
    pads to), the padded width did (a transformer's attention sums over it in another
    order). Rows per batch: as many as the token budget allows at that width."""
    by_width: dict[int, list[int]] = {}
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        width = min(-(-lengths[i] // step) * step, max(max_width, lengths[i]))
        by_width.setdefault(width, []).append(i)
    batches: list[list[int]] = []
    widths: list[int] = []
    for width, idx in by_width.items():
        rows = max(1, min(max_rows, token_budget // width))
        for k in range(0, len(idx), rows):
            batches.append(idx[k:k + rows])
            widths.append(width)
    return batches, widths


def _pad(windows: Sequence, pad_id: int, width: int | None = None, rows: int = 0
         ) -> tuple[torch.Tensor, torch.Tensor]:
    """input_ids and attention_mask for a batch, padded to ``width`` (default: its longest
    window) and to at least ``rows`` rows (all padding); the inference path needs nothing
    else, so it skips the training collate's per-position bookkeeping (a measurable share
    of a small model's time)."""
    width = width or max(len(w) for w in windows)
    rows = max(rows, len(windows))
    ids = np.full((rows, width), pad_id, dtype=np.int64)
    mask = np.zeros((rows, width), dtype=np.int64)
    for r, w in enumerate(windows):
        ids[r, :len(w)] = w.input_ids
        mask[r, :len(w)] = 1
    return torch.from_numpy(ids), torch.from_numpy(mask)


def read_labels(model, where: str) -> tuple[list[str], str]:
    """The model's labels and tagging scheme; a model whose labels are not tags
    (``LABEL_0`` ..., or no ``O``) cannot give spans and is refused with one line."""
    labels = model_labels(model)
    try:
        for label in labels:
            split_tag(label)
    except ValueError:
        shown = ", ".join(labels[:6]) + (", ..." if len(labels) > 6 else "")
        raise ModelError(f"{where}: the model's labels are not BIO tags ({shown}); expected O, "
                         f"B-<type>, I-<type> (or IOBES)") from None
    if "O" not in labels:
        raise ModelError(f"{where}: the model has no O label, so it cannot tag text outside entities")
    scheme = detect_scheme(labels)
    if check_tags(labels, scheme) is not None:
        raise ModelError(f"{where}: the model's labels mix tagging schemes ({', '.join(labels)})")
    return labels, scheme


def scoring_tagger(model, tokenizer, max_length: int, window_overlap: int, context: str = "sentence") -> "Tagger":
    """A Tagger over a model being trained, for devel scoring: on the model's own
    device, at float32, windowed (and with the context) the model is trained with."""
    device = next(model.parameters()).device
    return Tagger(model, tokenizer, TaggerConfig(device=str(device), precision="fp32", max_length=max_length,
                                                 window_overlap=window_overlap, context=context))


def tags_from_ids(label_ids: Sequence[int] | np.ndarray, labels: Sequence[str], scheme: str) -> list[str]:
    """Repaired IOB2 tags of a sentence's per-word label ids into ``labels`` (a model's,
    in its ``scheme``)."""
    tags, _ = repair_iob2(to_iob2([labels[int(i)] for i in label_ids], scheme))
    return tags


class Tagger:
    """A token classifier ready to tag: load with :meth:`load`, then :meth:`tag`."""

    # True: windows batched by :func:`invariant_batches`, so that in float32 on a CPU a
    # document's numbers do not depend on the documents tagged with it (``tag-corpus``
    # sets it there; other modes tag one document per call, see :mod:`fastbioner.scale.shards`).
    batch_invariant = False

    def __init__(self, model, tokenizer, config: TaggerConfig | None = None, *, name: str = "",
                 folder: Path | None = None, manifest: dict[str, Any] | None = None):
        self.config = config or TaggerConfig()
        self.config.validate()
        self.name = name
        self.folder = folder
        self.manifest = manifest or {}
        where = str(folder or name or "model")
        self.labels, self.scheme = read_labels(model, where)
        self.thread_choice = threads.choose(self.config.threads)
        torch.set_num_threads(self.thread_choice.threads)
        self.device = pick_device(self.config.device)
        self.precision = choose_precision(self.config.precision, self.device,
                                          checks_from_manifest(self.manifest))
        self.model = apply_precision(model, self.precision, self.device)
        self.token_budget = self.config.token_budget or default_token_budget(self.device, self.precision)
        self.tokenizer = tokenizer
        trained_encoding = (self.manifest.get("config") or {}).get("encoding") or {}
        max_length = min(self.config.max_length or trained_encoding.get("max_length") or EncodingConfig.max_length,
                         position_limit(model))
        # A packed-context model cuts every document into windows: read them as it was trained.
        overlap = self.config.window_overlap
        if overlap is None:
            overlap = trained_encoding.get("window_overlap", EncodingConfig.window_overlap)
        self.encoder = WordEncoder(tokenizer, self.labels, max_length=max_length, overlap=overlap)
        self._o = self.labels.index("O")
        self._decode: Callable[..., Any] | None = getattr(self.model, "decode", None)  # CRF students decode jointly
        trained_context = ((self.manifest.get("config") or {}).get("encoding") or {}).get("context")
        self.context = self.config.context or trained_context or "sentence"

    @classmethod
    def load(cls, name_or_folder: str | Path, config: TaggerConfig | None = None) -> "Tagger":
        """From a registry name or a model folder (safetensors only, no remote code),
        by the engine the folder calls for (:mod:`fastbioner.models.loading`)."""
        folder, name, manifest = resolve_model(name_or_folder)
        model, tokenizer = load_for_tagging(folder, (config or TaggerConfig()).engine)
        return cls(model, tokenizer, config, name=name, folder=folder, manifest=manifest)

    @property
    def entity_types(self) -> list[str]:
        return sorted({split_tag(l)[1] for l in self.labels if l != "O"})

    def describe(self) -> dict[str, Any]:
        """What runs: for summaries and speed records."""
        return {"model": self.name or str(self.folder or ""), "device": str(self.device),
                "precision": self.precision.value, "threads": torch.get_num_threads(),
                "thread_choice": str(self.thread_choice),
                "token_budget": self.token_budget}

    # -- words -------------------------------------------------------------------

    def predict_words(self, sentences: Sequence[Sequence[str]], cancel: CancelToken | None = None,
                      on_batch: Callable[[int, int], None] | None = None,
                      documents: Sequence[Any] | None = None) -> list[WordTags]:
        """One repaired IOB2 tag and probability per word of each sentence: the one
        way words get labels (tagging, evaluation, training-time scoring and the
        benchmarks all come here), with CRF decoding where the model has a CRF.
        ``on_batch(done, total)`` follows the batches; ``documents`` (a key per
        sentence) gives a model trained with document or packed context its documents."""
        rows_of = self._argmax_rows if self._decode is None else self._viterbi_rows
        stitched = self._word_rows(sentences, documents, cancel, on_batch, rows_of,
                                   fill=np.array([self._o, 1.0], dtype=np.float32))
        out = []
        for words, rows in zip(sentences, stitched):
            if not words:
                out.append(WordTags([], []))
                continue
            out.append(WordTags(self.tags_of([r[0] for r in rows]), [float(r[1]) for r in rows]))
        return out

    def word_probabilities(self, sentences: Sequence[Sequence[str]], cancel: CancelToken | None = None,
                           on_batch: Callable[[int, int], None] | None = None,
                           documents: Sequence[Any] | None = None) -> list[np.ndarray]:
        """Each sentence's label distribution per word, ``(words, labels)`` in
        :attr:`labels`' order: the softmax of the logits at each word's first subword,
        windowed and with the context as :meth:`predict_words` reads them (a CRF
        model's emissions, not its joint decoding). For combining several models word
        by word (:func:`fastbioner.infer.label_ensembles.combined_labels`)."""
        def probability_rows(logits: torch.Tensor, windows: Sequence) -> list[np.ndarray]:
            probs = logits.float().softmax(-1).cpu().numpy()
            return [probs[r, :len(w)] for r, w in enumerate(windows)]

        fill = np.zeros(len(self.labels), dtype=np.float32)
        fill[self._o] = 1.0
        stitched = self._word_rows(sentences, documents, cancel, on_batch, probability_rows, fill=fill)
        width = len(self.labels)
        return [np.stack(rows).astype(np.float32) if rows else np.zeros((0, width), np.float32)
                for rows in stitched]

    def _word_rows(self, sentences: Sequence[Sequence[str]], documents: Sequence[Any] | None,
                   cancel: CancelToken | None, on_batch: Callable[[int, int], None] | None,
                   rows_of: Callable[[torch.Tensor, Sequence], list[np.ndarray]], fill: np.ndarray
                   ) -> list[list[np.ndarray]]:
        """The one pass over a model's windows: encoded with the context, batched by
        token budget, ``rows_of(logits, windows)`` giving each window's rows (one per
        subword), stitched back to one row per word of each sentence."""
        windows, layout, _ = packing.encode(self.encoder, self.context, sentences, documents=documents)
        values: list[Any] = [None] * len(windows)
        lengths = [len(w) for w in windows]
        widths: Sequence[int | None]
        if self.batch_invariant:
            batches, widths = invariant_batches(lengths, self.token_budget, self.config.max_batch_size,
                                                self.encoder.max_length)
        else:
            batches = token_budget_batches(lengths, self.token_budget, self.config.max_batch_size,
                                           padding_cut_overhead(self.device))
            widths = [None] * len(batches)
        with torch.inference_mode():
            for b, idx in enumerate(batches, 1):
                if cancel is not None:
                    cancel.check()
                if on_batch is not None:
                    on_batch(b, len(batches))
                group = [windows[i] for i in idx]
                width = widths[b - 1]
                rows = -(-INVARIANT_MIN_POSITIONS // width) if width else 0
                ids, mask = (t.to(self.device) for t in _pad(group, self.encoder.pad_id, width, rows))
                logits = token_logits(self.model, ids, mask)[:len(group)]
                for row, i in zip(rows_of(logits, group), idx):
                    values[i] = row
        return packing.stitch(windows, values, layout, fill=fill)

    def tags_of(self, label_ids: Sequence[int]) -> list[str]:
        """Repaired IOB2 tags of a sentence's per-word label ids (this model's labels)."""
        return tags_from_ids(label_ids, self.labels, self.scheme)

    @staticmethod
    def _argmax_rows(logits: torch.Tensor, windows: Sequence) -> list[np.ndarray]:
        """Per window, an array (positions, 2) of [label id, probability]."""
        best, ids = logits.float().softmax(-1).max(-1)
        both = torch.stack((ids.float(), best), -1).cpu().numpy()
        return [both[r, :len(w)] for r, w in enumerate(windows)]

    def _viterbi_rows(self, logits: torch.Tensor, windows: Sequence) -> list[np.ndarray]:
        """As :meth:`_argmax_rows`, with the ids of the model's joint (CRF) decoding
        over each row's first subwords (every other position keeps ``O``)."""
        first = first_subword_mask(word_index_array(windows, logits.shape[1]))
        decode = self._decode
        assert decode is not None  # chosen for a model that decodes only
        paths = decode(logits.float(), torch.from_numpy(first).to(logits.device))
        probs = logits.float().softmax(-1).cpu().numpy()
        ids = np.full(first.shape, self._o, dtype=np.int64)
        # A path labels its row's first subwords in order, which is the order
        # np.nonzero lists them in: one scatter for the whole batch.
        rows, cols = np.nonzero(first)
        ids[rows, cols] = np.fromiter((t for path in paths for t in path), dtype=np.int64, count=len(rows))
        best = np.take_along_axis(probs, ids[..., None], axis=-1)[..., 0]
        both = np.stack((ids.astype(np.float32), best), -1)
        return [both[r, :len(w)] for r, w in enumerate(windows)]

    def word_predictor(self):
        """This tagger as :func:`fastbioner.infer.evaluation.evaluate_model`'s ``predictor``
        (words in, repaired IOB2 tags out), so scores come from the engine's path."""
        def predict(sentences: Sequence[Sequence[str]], reporter, documents: Sequence | None = None
                    ) -> list[list[str]]:
            return [p.tags for p in self.predict_words(sentences, reporter.cancel, documents=documents)]
        return predict

    # -- documents -----------------------------------------------------------------

    def tag_sentences(self, sentences: Sequence[Sentence], cancel: CancelToken | None = None,
                      documents: Sequence[Any] | None = None) -> list[list[Span]]:
        return self._tag_sentences(sentences, cancel, documents)[0]

    def _tag_sentences(self, sentences: Sequence[Sentence], cancel: CancelToken | None = None,
                       documents: Sequence[Any] | None = None,
                       on_batch: Callable[[int, int], None] | None = None
                       ) -> tuple[list[list[Span]], list[WordTags]]:
        preds = self.predict_words([s.words for s in sentences], cancel, on_batch, documents=documents)
        return [tags_to_spans(s, p.tags, Source.MODEL, p.scores) for s, p in zip(sentences, preds)], preds

    def tag(self, docs: Iterable[Document], cancel: CancelToken | None = None,
            on_batch: Callable[[int, int], None] | None = None) -> list[list[Span]]:
        """Model spans of each document (its existing spans are not looked at).
        All sentences of all ``docs`` are batched together: pass documents in chunks
        (tens to hundreds) for speed with bounded memory. ``on_batch(done, total)``
        follows the batches of the call (progress within a long document)."""
        return self._run(list(docs), cancel, on_batch)[0]

    def tag_with_uncertainty(self, docs: Iterable[Document], cancel: CancelToken | None = None,
                             on_batch: Callable[[int, int], None] | None = None
                             ) -> tuple[list[list[Span]], list[DocumentUncertainty]]:
        """:meth:`tag` and, per document, how unsure the model is of it (the app
        records the figure in each document's metadata and sorts by it)."""
        spans, _, unsure = self._run(list(docs), cancel, on_batch)
        return spans, unsure

    def annotate(self, docs: Iterable[Document], keep: Iterable[Source] = (Source.CURATOR,),
                 cancel: CancelToken | None = None) -> list[Document]:
        """Copies of ``docs`` whose spans are the kept ones (a curator's, by default:
        re-tagging never overwrites them) plus the model's spans that overlap none of
        them."""
        return self.tag_chunk(docs, keep, cancel).documents

    def tag_chunk(self, docs: Iterable[Document], keep: Iterable[Source] = (Source.CURATOR,),
                  cancel: CancelToken | None = None) -> "TaggedChunk":
        """:meth:`annotate` with the counts a job reports (sentences, word tokens)."""
        docs = list(docs)
        keep = set(keep)
        spans, sentences, uncertainty = self._run(docs, cancel)
        out = []
        for doc, predicted, unsure in zip(docs, spans, uncertainty):
            kept = [s for s in doc.spans if s.source in keep]
            new = [s for s in predicted if not any(s.overlaps(k) for k in kept)]
            # The document's uncertainty (fastbioner.infer.uncertainty) travels in its metadata,
            # where the app sorts by it and `fastbioner rank` reads it.
            out.append(Document(doc.id, doc.text, list(doc.passages),
                                sorted(kept + new, key=lambda s: (s.start, -s.end, s.label)),
                                {**doc.metadata, METADATA_KEY: unsure.to_metadata()}, list(doc.relations)))
        return TaggedChunk(out, len(sentences), sum(len(s.tokens) for s in sentences), uncertainty)

    def uncertainty(self, docs: Iterable[Document], cancel: CancelToken | None = None
                    ) -> list[DocumentUncertainty]:
        """How unsure the model is of each document (:mod:`fastbioner.infer.uncertainty`);
        the documents' own spans play no part."""
        return self._run(list(docs), cancel)[2]

    def _run(self, docs: list[Document], cancel: CancelToken | None,
             on_batch: Callable[[int, int], None] | None = None
             ) -> tuple[list[list[Span]], list[Sentence], list[DocumentUncertainty]]:
        per_doc = [document_sentences(d) for d in docs]
        flat = [s for sents in per_doc for s in sents]
        # Each passage (title, abstract) of a document reads the others as context.
        keys = [i for i, sents in enumerate(per_doc) for _ in sents]
        spans, preds = self._tag_sentences(flat, cancel, documents=keys, on_batch=on_batch)
        out, unsure, k = [], [], 0
        for sents in per_doc:
            doc_spans = [sp for sent_spans in spans[k:k + len(sents)] for sp in sent_spans]
            out.append(doc_spans)
            unsure.append(document_uncertainty((p.scores for p in preds[k:k + len(sents)]),
                                               (sp.score for sp in doc_spans)))
            k += len(sents)
        return out, flat, unsure


@dataclass(frozen=True)
class TaggedChunk:
    documents: list[Document]
    sentences: int
    tokens: int
    uncertainty: list[DocumentUncertainty] = field(default_factory=list)  # per document, in order


def position_limit(model) -> int:
    """Subwords the model's position embeddings allow (RoBERTa-style models reserve
    a couple of positions for padding offsets); recurrent models have no limit."""
    limit = getattr(model.config, "max_position_embeddings", None)
    if not limit:
        return 1_000_000
    if getattr(model.config, "model_type", "") in ("roberta", "xlm-roberta", "mpnet", "camembert"):
        return limit - 2
    return limit


def resolve_model(name_or_folder: str | Path) -> tuple[Path, str, dict[str, Any]]:
    """(folder, name, manifest) of a registry name or a model folder."""
    entry = Registry().resolve(name_or_folder)
    return Path(entry.path), entry.name, entry.manifest.to_dict()
