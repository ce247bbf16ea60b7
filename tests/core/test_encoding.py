"""Words to subwords and back: label alignment, windows, batching."""

from __future__ import annotations

import pytest
import torch

from fastbioner.models.encoding import (
    IGNORE_INDEX, LengthGroupedBatches, WindowBatches, WordEncoder, length_sorted_batches,
)
from tiny_models import make_tiny_tokenizer

LABELS = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return make_tiny_tokenizer(tmp_path_factory.mktemp("tok"))


def _subwords(tokenizer, word):
    return tokenizer.tokenize(word)


def test_first_subword_alignment_labels_only_first_piece(tokenizer):
    # "nephrotoxicityx" is not in the tiny vocabulary: it splits into several pieces.
    words = ["cocaine", "nephrotoxicityx", "in", "rats"]
    tags = ["B-Chemical", "B-Disease", "O", "O"]
    pieces = len(_subwords(tokenizer, words[1]))
    assert pieces > 1
    enc = WordEncoder(tokenizer, LABELS, label_mode="first")
    (w,) = enc.encode([words], [tags])
    assert w.input_ids[0] == tokenizer.cls_token_id and w.input_ids[-1] == tokenizer.sep_token_id
    disease = [lab for lab, wid in zip(w.labels, w.word_ids) if wid == 1]
    assert disease == [LABELS.index("B-Disease")] + [IGNORE_INDEX] * (pieces - 1)
    assert w.labels[0] == IGNORE_INDEX and w.labels[-1] == IGNORE_INDEX
    labelled = [l for l in w.labels if l != IGNORE_INDEX]
    assert labelled == [LABELS.index(t) for t in tags]


def test_label_propagation_gives_every_piece_a_valid_iob2_label(tokenizer):
    words = ["xqzlithium", "toxicity"]
    tags = ["B-Chemical", "B-Disease"]
    enc = WordEncoder(tokenizer, LABELS, label_mode="all")
    (w,) = enc.encode([words], [tags])
    chem = [LABELS[l] for l, wid in zip(w.labels, w.word_ids) if wid == 0]
    assert len(chem) > 1
    assert chem == ["B-Chemical"] + ["I-Chemical"] * (len(chem) - 1)
    assert all(l != IGNORE_INDEX for l, wid in zip(w.labels, w.word_ids) if wid is not None)


def test_unknown_tag_is_a_clear_error(tokenizer):
    enc = WordEncoder(tokenizer, LABELS)
    with pytest.raises(ValueError, match="B-Gene"):
        enc.encode([["a", "b"]], [["O", "B-Gene"]])


def _long_sentence(n):
    vocab = ["the", "cocaine", "xqzinduced", "heart", "failure", "in", "rats", "with", "lithium"]
    return [vocab[i % len(vocab)] for i in range(n)]


@pytest.mark.parametrize("n_words", [1, 7, 40, 113])
def test_windows_round_trip_every_word_exactly_once(tokenizer, n_words):
    words = _long_sentence(n_words)
    tags = ["B-Chemical" if w in ("cocaine", "lithium") else "O" for w in words]
    enc = WordEncoder(tokenizer, LABELS, max_length=16, overlap=4)
    windows = enc.encode([words, ["rats"]], [tags, ["O"]])
    assert all(len(w) <= 16 for w in windows)
    mine = [w for w in windows if w.sentence == 0]
    if n_words > 10:
        assert len(mine) > 1, "a long sentence must be split, not truncated"
    # Each word is owned by exactly one window and every word is covered.
    owned = sorted(word for w in mine for word in w.owned_words)
    assert owned == list(range(n_words))
    # Stitching the word ids read at the owned positions gives back each word's index.
    values = [w.word_ids for w in windows]
    stitched = enc.stitch(windows, values, 2)
    assert stitched == [list(range(n_words)), [0]]


def test_stitching_takes_the_most_central_window(tokenizer):
    words = ["the"] * 30  # one subword per word
    enc = WordEncoder(tokenizer, LABELS, max_length=12, overlap=4)  # 10 words per window
    windows = enc.encode([words])
    for w in windows:
        content = [i for i, x in enumerate(w.word_ids) if x is not None]
        first, last = content[0], content[-1]
        for word, pos in zip(w.owned_words, w.owned_positions):
            centrality = min(pos - first, last - pos)
            for other in windows:
                if other is w or word not in other.word_ids:
                    continue
                p = other.word_ids.index(word)
                c = [i for i, x in enumerate(other.word_ids) if x is not None]
                assert min(p - c[0], c[-1] - p) <= centrality


def test_word_longer_than_a_window_keeps_its_first_subword(tokenizer):
    giant = "x" * 40 + "q"  # single characters: about 40 pieces
    words = ["the", giant, "rats"]
    enc = WordEncoder(tokenizer, LABELS, max_length=12, overlap=2)
    windows = enc.encode([words], [["O", "B-Disease", "O"]])
    assert all(len(w) <= 12 for w in windows)
    stitched = enc.stitch(windows, [w.word_ids for w in windows], 1)
    assert stitched == [[0, 1, 2]]


def test_empty_sentence_and_word_without_subwords(tokenizer):
    enc = WordEncoder(tokenizer, LABELS)
    windows = enc.encode([[], ["the", "\u200b", "rats"]])
    assert [w.sentence for w in windows] == [1]
    out = enc.stitch(windows, [w.word_ids for w in windows], 2, fill="none")
    assert out == [[], [0, "none", 2]]


def test_collate_pads_to_the_longest_window_of_the_batch(tokenizer):
    enc = WordEncoder(tokenizer, LABELS)
    windows = enc.encode([["the"], ["the", "heart", "failure", "in", "rats"]],
                         [["O"], ["O", "B-Disease", "I-Disease", "O", "O"]])
    batch = enc.collate(windows)
    assert batch.input_ids.shape == (2, len(windows[1]))
    assert batch.attention_mask.sum(1).tolist() == [len(windows[0]), len(windows[1])]
    assert (batch.input_ids[0, len(windows[0]):] == tokenizer.pad_token_id).all()
    assert (batch.labels[0, len(windows[0]):] == IGNORE_INDEX).all()
    assert batch.first_subword.sum().item() == 6
    assert batch.word_index[1].tolist()[:3] == [-1, 0, 1]


def test_length_grouped_batches_are_seeded_and_grouped():
    lengths = [i % 97 + 1 for i in range(1000)]
    sampler = LengthGroupedBatches(lengths, batch_size=8, seed=3, pool=10)
    a, b = sampler.batches(0), sampler.batches(0)
    assert a == b, "the same (seed, epoch) gives the same batches"
    assert sampler.batches(1) != a
    assert LengthGroupedBatches(lengths, 8, seed=4, pool=10).batches(0) != a
    assert sorted(i for batch in a for i in batch) == list(range(1000))
    assert len(a) == len(sampler) == 125
    # Batches are much more uniform in length than random ones.
    spread = sum(max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in a) / len(a)
    assert spread < 20


def test_inference_batches_sorted_longest_first():
    batches = length_sorted_batches([3, 9, 1, 7, 5], 2)
    assert batches == [[1, 3], [4, 0], [2]]


def test_window_batches_yield_collated_batches(tokenizer):
    enc = WordEncoder(tokenizer, LABELS)
    sents = [["the"] * (i + 1) for i in range(10)]
    windows = enc.encode(sents, [["O"] * len(s) for s in sents])
    source = WindowBatches(enc, windows, batch_size=4, seed=0)
    batches = list(source.epoch(0))
    assert len(batches) == len(source) == 3
    assert sorted(i for b in batches for i in b.indices) == list(range(10))
    assert all(isinstance(b.input_ids, torch.Tensor) and b.labels is not None for b in batches)
    # What a step costs, known before it runs (the run-time estimate weighs steps by it).
    assert source.padded_sizes(0) == [b.input_ids.numel() for b in batches]
    assert source.padded_sizes(1) == [b.input_ids.numel() for b in source.epoch(1)]


def test_document_context_surrounds_a_sentence_without_changing_its_labels():
    """With document keys, a sentence is read with its neighbours (nearest first, as
    far as the window allows); the context carries no label and stitching still
    gives each word its own sentence's prediction."""
    from fastbioner.models.encoding import WordEncoder
    from tests.tiny_models import make_tiny_tokenizer

    tok = make_tiny_tokenizer(_tmp() / "tok")
    labels = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    sentences = [["cocaine", "caused", "seizures"], ["naloxone", "was", "given"], ["the", "rats", "died"],
                 ["aspirin", "and", "pain"]]
    tags = [["B-Chemical", "O", "B-Disease"], ["B-Chemical", "O", "O"],
            ["O", "O", "O"], ["B-Chemical", "O", "B-Disease"]]
    plain = WordEncoder(tok, labels, max_length=64).encode(sentences, tags)
    enc = WordEncoder(tok, labels, max_length=64)
    ctx = enc.encode(sentences, tags, documents=["a", "a", "a", "b"])
    assert [w.sentence for w in ctx] == [0, 1, 2, 3]
    # sentence 1 reads 0 before it and 2 after it; sentence 3 is alone in its document
    assert len(ctx[1]) > len(plain[1]) and len(ctx[3]) == len(plain[3])
    for a, b in zip(plain, ctx):
        assert [l for l in a.labels if l != -100] == [l for l in b.labels if l != -100]
        assert a.owned_words == b.owned_words
        assert [b.input_ids[k] for k in b.owned_positions] == [a.input_ids[k] for k in a.owned_positions]
        assert sum(w is not None for w in b.word_ids) == sum(w is not None for w in a.word_ids)
    # a tight window keeps the sentence whole and trims the context
    tight = WordEncoder(tok, labels, max_length=len(plain[1]) + 2).encode(sentences, tags, documents=["a"] * 3 + ["b"])
    assert len(tight[1]) == len(plain[1]) + 2
    assert [l for l in tight[1].labels if l != -100] == [l for l in plain[1].labels if l != -100]


def _tmp():
    import tempfile
    from pathlib import Path

    return Path(tempfile.mkdtemp(prefix="fastbioner-enc-"))


def _owners_by_every_window(starts, ranges):
    """The rule as first written (each word against every window): the reference."""
    owner = {}
    for k in starts:
        best, best_score = -1, -1
        for r, (a, b) in enumerate(ranges):
            if a <= k < b and min(k - a, b - 1 - k) > best_score:
                best, best_score = r, min(k - a, b - 1 - k)
        owner[k] = best
    return owner


@pytest.mark.parametrize("seed", range(5))
def test_owners_visit_only_the_words_inside_each_window_with_the_same_result(seed):
    """The most-central-window rule, computed per window over its own words (so a
    sentence of 200,000 words is not words x windows), picks what the rule does."""
    import random

    rnd = random.Random(seed)
    starts = sorted(rnd.sample(range(2000), 600))
    ranges, a = [], 0
    while a < 2000:
        b = min(2000, a + rnd.randrange(5, 60))
        ranges.append((a, b))
        a = max(a + 1, b - rnd.randrange(0, 10))
    assert WordEncoder._owners(starts, [], ranges) == _owners_by_every_window(starts, ranges)


def test_a_sentence_of_fifty_thousand_words_is_windowed_word_for_word(tokenizer):
    """One very long sentence (a file of numbers, one a line) is split into windows that
    own each word once, in order (the split is linear in its length)."""
    words = [str(i) for i in range(50_000)]
    enc = WordEncoder(tokenizer, LABELS, max_length=64, overlap=8)
    windows = enc.encode([words])
    owned = [word for w in windows for word in w.owned_words]
    assert sorted(owned) == list(range(50_000)) and len(windows) > 1000
