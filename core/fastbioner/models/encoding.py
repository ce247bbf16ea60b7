"""Words to subwords and back: label alignment, windows for long sentences, batches.

One encoder serves training (labels aligned to subwords), distillation (the same
windows for teacher and student) and inference (many sentences tokenized in one
call of the fast tokenizer, batches sorted by length, predictions stitched back to
exactly one per word).

Label alignment (``label_mode``):

- ``"first"``: a word's label goes on its first subword; the other subwords get
  -100 and are ignored by the loss.
- ``"all"``: label propagation (DRET): every subword carries a label; the
  continuation subwords of a ``B-X`` word get ``I-X`` so the subword sequence stays
  valid IOB2.

Either way a word's prediction is read from its first subword.

Windows: a sentence whose subwords do not fit ``max_length`` (special tokens
included) is split into windows of whole words that overlap by about
``overlap`` subwords; nothing is truncated. Stitching rule: each word's
prediction comes from the window where its first subword is most central, i.e.
where ``min(subwords to the window's left edge, subwords to its right edge)`` is
largest (the earlier window on a tie), so far from the cut it sees the most
context. A single word longer than a whole window is cut inside (its first
subword, which carries its prediction, is always kept). A word the tokenizer
turns into no subword at all (a lone zero-width or control character) has no
prediction; :meth:`WordEncoder.stitch` fills it with the caller's default.
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np
import torch
from tokenizers import Tokenizer

IGNORE_INDEX = -100
LABEL_MODES = ("first", "all")


@dataclass(frozen=True)
class Window:
    """One model input: a whole sentence, or one window of a long one."""

    sentence: int                     # index of the sentence in the encoded list
    input_ids: list[int]
    word_ids: list[int | None]        # word index in the sentence per position (None: special)
    labels: list[int] | None          # per position, IGNORE_INDEX where no label
    owned_words: list[int] = field(default_factory=list)      # words stitched from here
    owned_positions: list[int] = field(default_factory=list)  # their first subword positions
    num_words: int = 0                # words in the whole sentence

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass
class Batch:
    """Padded tensors for a list of windows; ``windows`` and ``indices`` (their
    positions in the encoded list, e.g. to look up a cache) map results back."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    word_index: torch.Tensor          # word index per position, -1 for special/padding
    first_subword: torch.Tensor       # bool: position is the first subword of a word
    labels: torch.Tensor | None
    windows: list[Window]
    indices: list[int]

    def to(self, device: torch.device | str) -> "Batch":
        def move(t: torch.Tensor) -> torch.Tensor:
            return t.to(device, non_blocking=True)
        return Batch(move(self.input_ids), move(self.attention_mask), move(self.word_index),
                     move(self.first_subword), None if self.labels is None else move(self.labels),
                     self.windows, self.indices)

    @property
    def gold(self) -> torch.Tensor:
        """The labels of a batch of labelled windows."""
        if self.labels is None:
            raise ValueError("these windows have no labels")
        return self.labels

    def model_inputs(self) -> dict[str, torch.Tensor]:
        return {"input_ids": self.input_ids, "attention_mask": self.attention_mask}

    def __len__(self) -> int:
        return len(self.windows)


@dataclass(frozen=True)
class SubwordTokenizer:
    """A fast tokenizer as the project uses it: the Rust tokenizer
    (:class:`tokenizers.Tokenizer`, whose ``Encoding`` objects carry subword ids and
    each subword's word id) and the two settings the model's tokenizer files add to
    it. transformers' fast tokenizers are read into one (:func:`subword_tokenizer`);
    the light engine builds one from tokenizer.json without transformers."""

    backend: Any                      # tokenizers.Tokenizer
    pad_id: int | None = None         # None: the tokenizer names no pad token (0 is used)
    max_length: int | None = None     # the tokenizer's length limit; None or a huge sentinel: none known
    split_special_tokens: bool = False  # "[CLS]" in the text is words, not the special token

    def encode_words(self, sentences: Sequence[Sequence[str]], add_special_tokens: bool) -> list[Any]:
        """One ``tokenizers.Encoding`` per sentence of pre-split words, nothing padded
        or truncated: one call into Rust for the whole list (what makes encoding
        cheap), as transformers' fast tokenizer makes it."""
        backend = self.backend
        # transformers switches these per call (it leaves them set for the next caller),
        # so they are checked here, where the Rust tokenizer is shared with it.
        if backend.truncation is not None:
            backend.no_truncation()
        if backend.padding is not None:
            backend.no_padding()
        if backend.encode_special_tokens != self.split_special_tokens:
            backend.encode_special_tokens = self.split_special_tokens
        return backend.encode_batch([list(words) for words in sentences], is_pretokenized=True,
                                    add_special_tokens=add_special_tokens)


def subword_tokenizer(tokenizer) -> SubwordTokenizer:
    """``tokenizer`` as a :class:`SubwordTokenizer`: one already, a
    ``tokenizers.Tokenizer`` (pad id of its ``[PAD]`` token, no known limit) or a
    transformers fast tokenizer (its Rust backend and settings). ValueError for a
    slow (Python) tokenizer, which cannot map subwords back to words."""
    if isinstance(tokenizer, SubwordTokenizer):
        return tokenizer

    if isinstance(tokenizer, Tokenizer):
        return SubwordTokenizer(tokenizer, tokenizer.token_to_id("[PAD]"))
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if not isinstance(backend, Tokenizer):
        raise ValueError("a fast (Rust) tokenizer is required to map subwords to words")
    return SubwordTokenizer(backend, tokenizer.pad_token_id, getattr(tokenizer, "model_max_length", None),
                            bool(getattr(tokenizer, "split_special_tokens", False)))


def _special_affixes(tokenizer: SubwordTokenizer) -> tuple[list[int], list[int]]:
    """The ids a tokenizer puts before and after a single sequence ([CLS] ... [SEP],
    <s> ... </s>, or nothing), read from how it encodes one word."""
    enc = tokenizer.encode_words([["a"]], add_special_tokens=True)[0]
    ids, wids = enc.ids, enc.word_ids
    first = next(i for i, w in enumerate(wids) if w is not None)
    last = max(i for i, w in enumerate(wids) if w is not None)
    return list(ids[:first]), list(ids[last + 1:])


def _model_limit(tokenizer: SubwordTokenizer) -> int:
    limit = tokenizer.max_length
    # Tokenizers without a known limit report a huge sentinel (int(1e30)).
    return int(limit) if isinstance(limit, int) and 0 < limit < 100_000 else 512


def document_runs(documents: Sequence[Any]) -> list[tuple[int, int] | None]:
    """For each sentence, the range [first, last) of the consecutive sentences that
    share its document key; None for a key of None (no document)."""
    out: list[tuple[int, int] | None] = [None] * len(documents)
    i = 0
    while i < len(documents):
        j = i + 1
        while j < len(documents) and documents[j] is not None and documents[j] == documents[i]:
            j += 1
        if documents[i] is not None:
            for k in range(i, j):
                out[k] = (i, j)
        i = j
    return out


def _word_starts(wids: Sequence[int | None]) -> list[tuple[int, int]]:
    """(position, word) of each word's first subword, in order."""
    return [(k, w) for k, w in enumerate(wids) if w is not None and (k == 0 or w != wids[k - 1])]


def first_subword_mask(word_index: np.ndarray) -> np.ndarray:
    """(rows, width) bool from (rows, width) word indices (-1 for special tokens and
    padding): the positions that begin a word, where a word's label and prediction sit."""
    before = np.concatenate([np.full_like(word_index[:, :1], -1), word_index[:, :-1]], axis=1)
    return (word_index >= 0) & (word_index != before)


def word_index_array(windows: Sequence[Window], width: int) -> np.ndarray:
    """(rows, width) word index per position of a padded batch, -1 for special tokens
    and padding."""
    out = np.full((len(windows), width), -1, dtype=np.int64)
    for r, w in enumerate(windows):
        out[r, :len(w.word_ids)] = [-1 if x is None else x for x in w.word_ids]
    return out


class WordEncoder:
    """Encodes word sequences (and optionally IOB2 tags) for a token classifier.

    ``tokenizer``: a transformers fast tokenizer, a ``tokenizers.Tokenizer`` or a
    :class:`SubwordTokenizer`; the subwords and word ids come from the Rust
    tokenizer's ``Encoding`` objects either way, so both engines encode alike."""

    def __init__(self, tokenizer, labels: Sequence[str] | None = None, max_length: int = 256,
                 overlap: int = 32, label_mode: str = "first"):
        tokenizer = subword_tokenizer(tokenizer)  # ValueError for a slow tokenizer
        if label_mode not in LABEL_MODES:
            raise ValueError(f"label_mode must be one of {LABEL_MODES}, not {label_mode!r}")
        self.tokenizer = tokenizer
        self.labels = list(labels) if labels is not None else None
        self.label_to_id = {l: i for i, l in enumerate(self.labels)} if self.labels else {}
        self.label_mode = label_mode
        self.prefix, self.suffix = _special_affixes(tokenizer)
        self.max_length = min(int(max_length), _model_limit(tokenizer))
        self.budget = self.max_length - len(self.prefix) - len(self.suffix)
        if self.budget < 2:
            raise ValueError(f"max_length {max_length} leaves no room for words")
        self.overlap = max(0, min(int(overlap), self.budget // 2))
        self.pad_id = tokenizer.pad_id if tokenizer.pad_id is not None else 0

    # -- encoding -------------------------------------------------------------------

    def encode(self, sentences: Sequence[Sequence[str]],
               tags: Sequence[Sequence[str]] | None = None,
               documents: Sequence[Any] | None = None) -> list[Window]:
        """Windows for every sentence, in sentence order. ``tags`` (IOB2, one per
        word) need ``labels``; a tag outside them raises ValueError.

        ``documents`` (one key per sentence; consecutive sentences with the same key,
        not None, form a document) adds document context: a sentence that fits the
        window is read with its document's neighbouring sentences around it, the
        nearest first, as far as the window allows. Context positions carry no label
        and are not stitched: each word is still labelled once, from its own sentence.
        (Packed context joins a document's sentences before they come here and reads
        them as one long sentence: :mod:`fastbioner.models.packing`.)"""
        if tags is not None:
            if not self.labels:
                raise ValueError("encoding tags needs the encoder's label list")
            if len(tags) != len(sentences):
                raise ValueError(f"{len(tags)} tag sequences for {len(sentences)} sentences")
        windows: list[Window] = []
        nonempty = [i for i, words in enumerate(sentences) if len(words)]
        encodings = self.tokenizer.encode_words([sentences[i] for i in nonempty], add_special_tokens=False)
        subwords = [e.ids for e in encodings]  # read once: a neighbour's ids serve as context again
        row_of = {s: r for r, s in enumerate(nonempty)}
        if documents is not None and len(documents) != len(sentences):
            raise ValueError(f"{len(documents)} document keys for {len(sentences)} sentences")
        spans = document_runs(documents) if documents is not None else None
        for s, words in enumerate(sentences):
            if s not in row_of:  # an empty sentence needs no model input
                continue
            r = row_of[s]
            ids, wids = subwords[r], encodings[r].word_ids
            label_ids = self._subword_labels(tags[s], wids, words) if tags is not None else None
            run = spans[s] if spans is not None else None
            if run is not None and len(ids) <= self.budget:
                first, last = run
                left = [t for o in range(first, s) if o in row_of for t in subwords[row_of[o]]]
                right = [t for o in range(s + 1, last) if o in row_of for t in subwords[row_of[o]]]
                windows.append(self._with_context(s, ids, wids, label_ids, len(words), left, right))
                continue
            windows.extend(self._split(s, ids, wids, label_ids, len(words)))
        return windows

    def _with_context(self, s: int, ids: list[int], wids: list[int | None], label_ids: list[int] | None,
                      num_words: int, left: list[int], right: list[int]) -> Window:
        """The sentence with as much of its document around it as the window holds:
        the room is shared between the two sides, the nearest subwords first."""
        room = self.budget - len(ids)
        take_right = min(len(right), max(room // 2, room - len(left)))
        take_left = min(len(left), room - take_right)
        lctx, rctx = left[len(left) - take_left:], right[:take_right]
        shift = len(lctx)
        owned = [(w, k + shift + len(self.prefix)) for k, w in _word_starts(wids)]
        return self._window(s, lctx + list(ids) + rctx, [None] * shift + list(wids) + [None] * len(rctx),
                            None if label_ids is None else
                            [IGNORE_INDEX] * shift + list(label_ids) + [IGNORE_INDEX] * len(rctx),
                            num_words, owned=owned)

    def _subword_labels(self, tags: Sequence[str], wids: list[int | None],
                        words: Sequence[str]) -> list[int]:
        if len(tags) != len(words):
            raise ValueError(f"{len(tags)} tags for {len(words)} words")
        out = []
        prev = None
        for w in wids:
            if w is None:
                out.append(IGNORE_INDEX)
            elif w != prev:
                out.append(self._label_id(tags[w]))
            elif self.label_mode == "all":
                tag = tags[w]
                out.append(self._label_id("I-" + tag[2:] if tag.startswith("B-") else tag))
            else:
                out.append(IGNORE_INDEX)
            prev = w
        return out

    def _label_id(self, tag: str) -> int:
        try:
            return self.label_to_id[tag]
        except KeyError:
            raise ValueError(f"tag {tag!r} is not among the model's labels "
                             f"({', '.join(self.labels or [])})") from None

    def _split(self, s: int, ids: list[int], wids: list[int | None], label_ids: list[int] | None,
               num_words: int) -> list[Window]:
        n = len(ids)
        firsts = _word_starts(wids)
        starts = [k for k, _ in firsts]
        if n <= self.budget:  # nearly every sentence: one window owns every word (no ranges to weigh)
            p = len(self.prefix)
            return [self._window(s, ids, wids, label_ids, num_words, owned=[(w, k + p) for k, w in firsts])]
        ranges: list[tuple[int, int]] = []
        begin = 0
        while True:
            end = begin + self.budget
            if end >= n:
                ranges.append((begin, n))
                break
            # End on a word boundary; a word longer than the budget is cut inside.
            # (starts is sorted: bisect, so a sentence of 200,000 words is not quadratic.)
            i = bisect.bisect_right(starts, end) - 1
            cut = starts[i] if i >= 0 and starts[i] > begin else end
            ranges.append((begin, cut))
            j = bisect.bisect_left(starts, max(cut - self.overlap, begin + 1))
            nxt = starts[j] if j < len(starts) else n
            if nxt >= n:
                break
            begin = nxt
        owner = self._owners(starts, wids, ranges)
        owned_by: list[list[tuple[int, int]]] = [[] for _ in ranges]
        for k, w in firsts:
            if owner[k] >= 0:
                owned_by[owner[k]].append((w, k - ranges[owner[k]][0] + len(self.prefix)))
        out = []
        for r, (a, b) in enumerate(ranges):
            out.append(self._window(s, ids[a:b], wids[a:b],
                                    label_ids[a:b] if label_ids is not None else None,
                                    num_words, owned=owned_by[r]))
        return out

    @staticmethod
    def _owners(starts: list[int], wids: list[int | None], ranges: list[tuple[int, int]]
                ) -> dict[int, int]:
        """For each word's first subword, the window where it is most central (the
        first such window on a tie). Each window visits only the words inside it, so
        the work is the windows' total length, not words x windows."""
        owner: dict[int, int] = {k: -1 for k in starts}
        best_score: dict[int, int] = {k: -1 for k in starts}
        for r, (a, b) in enumerate(ranges):
            for i in range(bisect.bisect_left(starts, a), bisect.bisect_left(starts, b)):
                k = starts[i]
                score = min(k - a, b - 1 - k)
                if score > best_score[k]:
                    owner[k], best_score[k] = r, score
        return owner

    def _window(self, s: int, ids: list[int], wids: list[int | None], label_ids: list[int] | None,
                num_words: int, owned: Sequence[tuple[int, int]] = ()) -> Window:
        p, q = len(self.prefix), len(self.suffix)
        labels = None
        if label_ids is not None:
            labels = [IGNORE_INDEX] * p + list(label_ids) + [IGNORE_INDEX] * q
        return Window(sentence=s, input_ids=self.prefix + list(ids) + self.suffix,
                      word_ids=[None] * p + list(wids) + [None] * q, labels=labels,
                      owned_words=[w for w, _ in owned], owned_positions=[k for _, k in owned],
                      num_words=num_words)

    # -- batching -------------------------------------------------------------------

    def collate(self, windows: Sequence[Window], indices: Sequence[int] | None = None) -> Batch:
        """Pad to the longest window of this batch only (dynamic padding)."""
        width = max(len(w) for w in windows)
        pad = [width - len(w) for w in windows]
        input_ids = torch.tensor([w.input_ids + [self.pad_id] * p for w, p in zip(windows, pad)],
                                 dtype=torch.long)
        attention = torch.tensor([[1] * len(w) + [0] * p for w, p in zip(windows, pad)], dtype=torch.long)
        index = word_index_array(windows, width)
        word_index, first = torch.from_numpy(index), torch.from_numpy(first_subword_mask(index))
        labels = None
        if all(w.labels is not None for w in windows):
            labels = torch.tensor([(w.labels or []) + [IGNORE_INDEX] * p for w, p in zip(windows, pad)],
                                  dtype=torch.long)
        return Batch(input_ids, attention, word_index, first, labels, list(windows),
                     list(indices) if indices is not None else list(range(len(windows))))

    # -- back to words ------------------------------------------------------------

    @staticmethod
    def stitch(windows: Sequence[Window], values: Sequence[Sequence[Any]], num_sentences: int,
               fill: Any = None) -> list[list[Any]]:
        """Per-position ``values`` of each window (predicted ids, probability rows ...)
        back to one value per word of each sentence, by the stitching rule above.
        Words without a subword get ``fill``."""
        out: list[list[Any]] = [[] for _ in range(num_sentences)]
        for w in windows:
            if not out[w.sentence] and w.num_words:
                out[w.sentence] = [fill] * w.num_words
        for w, vals in zip(windows, values):
            row = out[w.sentence]
            for word, pos in zip(w.owned_words, w.owned_positions):
                row[word] = vals[pos]
        return out


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Inference batches: indices sorted by length (longest first, so a memory
    problem shows at once), cut into batches of ``batch_size``; little padding."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


class LengthGroupedBatches:
    """Training batches of similar length, in a random order that depends only on
    ``(seed, epoch)``: a resumed run sees exactly the batches it would have seen.

    Indices are shuffled, cut into pools of ``pool`` batches, each pool sorted by
    length and cut into batches, and the batch order shuffled again."""

    def __init__(self, lengths: Sequence[int], batch_size: int, seed: int = 0, pool: int = 50,
                 shuffle: bool = True):
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.lengths = list(lengths)
        self.batch_size = batch_size
        self.seed = seed
        self.pool = pool
        self.shuffle = shuffle

    def __len__(self) -> int:
        return (len(self.lengths) + self.batch_size - 1) // self.batch_size

    def batches(self, epoch: int) -> list[list[int]]:
        if not self.shuffle:
            return length_sorted_batches(self.lengths, self.batch_size)
        rng = random.Random(self.seed * 1_000_003 + epoch)
        order = list(range(len(self.lengths)))
        rng.shuffle(order)
        size = self.batch_size * self.pool
        batches: list[list[int]] = []
        for start in range(0, len(order), size):
            chunk = sorted(order[start:start + size], key=lambda i: -self.lengths[i])
            batches.extend(chunk[i:i + self.batch_size] for i in range(0, len(chunk), self.batch_size))
        rng.shuffle(batches)
        return batches

    def padded_sizes(self, epoch: int) -> list[int]:
        """Padded positions of each batch of ``epoch``, in order: what a step costs."""
        return [len(b) * max(self.lengths[i] for i in b) for b in self.batches(epoch)]


class WindowBatches:
    """A training set of windows as the training loop consumes it: ``len()`` batches
    per epoch and ``epoch(e)`` yielding collated :class:`Batch` objects."""

    def __init__(self, encoder: WordEncoder, windows: Sequence[Window], batch_size: int,
                 seed: int = 0, shuffle: bool = True):
        self.encoder = encoder
        self.windows = list(windows)
        self.sampler = LengthGroupedBatches([len(w) for w in self.windows], batch_size, seed,
                                            shuffle=shuffle)

    def __len__(self) -> int:
        return len(self.sampler)

    def epoch(self, epoch: int) -> Iterator[Batch]:
        for idx in self.sampler.batches(epoch):
            yield self.encoder.collate([self.windows[i] for i in idx], idx)

    def padded_sizes(self, epoch: int) -> list[int]:
        return self.sampler.padded_sizes(epoch)
