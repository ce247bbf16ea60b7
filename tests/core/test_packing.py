"""Packed context: a document's sentences joined into one sequence, windowed like a
long sentence, each word owned once, and everything stitched split back to the
original sentences."""

from __future__ import annotations

import pytest

from fastbioner.models import packing
from fastbioner.models.encoding import IGNORE_INDEX, WordEncoder
from tests.tiny_models import make_tiny_tokenizer

LABELS = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
SENTENCES = [
    (["cocaine", "induced", "heart", "failure"], ["B-Chemical", "O", "B-Disease", "I-Disease"]),
    (["lithium", "carbonate", "toxicity", "in", "rats"], ["B-Chemical", "I-Chemical", "B-Disease", "O", "O"]),
    (["naloxone", "and", "clonidine"], ["B-Chemical", "O", "B-Chemical"]),
    (["the", "dose", "was", "increased"], ["O", "O", "O", "O"]),
    (["aspirin", "caused", "renal", "failure"], ["B-Chemical", "O", "B-Disease", "I-Disease"]),
    (["seizures", "after", "cocaine"], ["B-Disease", "O", "B-Chemical"]),
]


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    return make_tiny_tokenizer(tmp_path_factory.mktemp("tok"))


def _documents(n_docs=2, repeat=3):
    """``n_docs`` documents, each of every sentence ``repeat`` times, one key each."""
    words = [list(w) for _ in range(n_docs * repeat) for w, _ in SENTENCES]
    tags = [list(t) for _ in range(n_docs * repeat) for _, t in SENTENCES]
    keys = [d for d in range(n_docs) for _ in range(repeat) for _ in SENTENCES]
    return words, tags, keys


def _owned_once(windows, layout, words):
    """Every word of every original sentence is owned by exactly one window."""
    # per joined sequence, its word index -> (original sentence, word in it)
    where = [[(first + j, k) for j, n in enumerate(parts) for k in range(n)]
             for first, parts in zip(layout.first_sentences(), layout.parts)]
    owned = [[0] * len(w) for w in words]
    for w in windows:
        for word in w.owned_words:
            s, k = where[w.sentence][word]
            owned[s][k] += 1
    return owned == [[1] * len(w) for w in words]


def test_a_packed_document_takes_few_windows_owns_each_word_once_and_splits_back(tok):
    words, tags, keys = _documents()
    enc = WordEncoder(tok, LABELS, max_length=32, overlap=8)
    per_sentence = enc.encode(words, tags, documents=keys)
    windows, layout, sequences = packing.encode(enc, "packed", words, tags, keys)
    assert len(per_sentence) == len(words) == 36
    assert layout.sequences == len(sequences) == 2 and layout.sentences == 36
    # each ~80-subword document in a few overlapping 30-subword windows, not one window per sentence
    assert 2 < len(windows) <= len(per_sentence) // 3
    assert sum(len(w) for w in windows) < sum(len(w) for w in per_sentence) / 3
    assert {w.sentence for w in windows} == {0, 1}
    assert _owned_once(windows, layout, words)
    # The labels at the owned positions, stitched and split back, are the sentences' tags.
    labels = [[LABELS[w.labels[p]] if w.labels[p] != IGNORE_INDEX else None for p in range(len(w))]
              for w in windows]
    assert packing.stitch(windows, labels, layout) == tags
    # Consecutive windows of a document overlap, so a word near a cut reads both sides.
    first_doc = [w for w in windows if w.sentence == 0]
    assert len(first_doc) > 1
    assert set(x for x in first_doc[0].word_ids if x is not None) & set(x for x in first_doc[1].word_ids
                                                                         if x is not None)
    split = layout.split([sequences[0], sequences[1]])
    assert [len(s) for s in split] == [len(w) for w in words] and split == words


def test_a_sentence_longer_than_the_window_inside_a_packed_document(tok):
    long_words = ("lithium carbonate toxicity in rats and the dose was increased after "
                  "naloxone and clonidine in hypertension").split() * 3
    long_tags = ["O"] * len(long_words)
    long_tags[0], long_tags[1] = "B-Chemical", "I-Chemical"
    words = [SENTENCES[0][0], long_words, SENTENCES[2][0]]
    tags = [SENTENCES[0][1], long_tags, SENTENCES[2][1]]
    enc = WordEncoder(tok, LABELS, max_length=24, overlap=6)
    windows, layout, _ = packing.encode(enc, "packed", words, tags, ["d", "d", "d"])
    assert layout.parts == ((4, len(long_words), 3),)
    assert len(windows) >= 4 and all(len(w) <= 24 for w in windows)
    assert _owned_once(windows, layout, words)
    ids = [[LABELS[w.labels[p]] if w.labels[p] != IGNORE_INDEX else None for p in range(len(w))]
           for w in windows]
    assert packing.stitch(windows, ids, layout) == tags
    # each window starts inside the one before (the overlap)
    spans = [(min(x for x in w.word_ids if x is not None), max(x for x in w.word_ids if x is not None))
             for w in windows]
    assert all(b[0] <= a[1] for a, b in zip(spans, spans[1:]))


def test_sentences_without_a_document_are_read_as_in_sentence_context(tok):
    words = [w for w, _ in SENTENCES]
    tags = [t for _, t in SENTENCES]
    enc = WordEncoder(tok, LABELS, max_length=32, overlap=8)
    plain = enc.encode(words, tags)
    keys = ["a", "a", None, None, "b", "b"]
    windows, layout, _ = packing.encode(enc, "packed", words, tags, keys)
    assert layout.parts == ((4, 5), (3,), (4,), (4, 3))
    lone = [w for w in windows if w.sentence in (1, 2)]  # sentences 2 and 3, each alone
    for got, want in zip(lone, plain[2:4]):
        assert (got.input_ids, got.labels, got.owned_words, got.owned_positions) == \
            (want.input_ids, want.labels, want.owned_words, want.owned_positions)
    # no keys at all, or sentence context: the sentences exactly as the encoder reads them
    for context, documents in (("packed", None), ("sentence", keys)):
        same, layout, _ = packing.encode(enc, context, words, tags, documents)
        assert [(w.sentence, w.input_ids, w.labels) for w in same] == \
            [(w.sentence, w.input_ids, w.labels) for w in plain]
        assert layout.parts == tuple((len(w),) for w in words)


def test_merge_keeps_empty_sentences_and_split_refuses_a_wrong_layout():
    words, tags, layout = packing.merge([["a", "b"], [], ["c"], ["d"]], [["O", "O"], [], ["O"], ["O"]],
                                        ["x", "x", "x", "y"])
    assert words == [["a", "b", "c"], ["d"]] and tags == [["O", "O", "O"], ["O"]]
    assert layout.split([[1, 2, 3], [4]]) == [[1, 2], [], [3], [4]]
    with pytest.raises(ValueError):
        layout.split([[1, 2], [4]])
    with pytest.raises(ValueError):
        packing.merge([["a"]], None, ["x", "y"])


def test_distillation_data_packs_labelled_documents_apart_from_unlabelled_text(tok, tmp_path):
    """Labelled documents are joined, unlabelled sentences stay alone and keep their
    flag; a student tokenizer that cuts a document into other windows is refused
    with a message that names the document."""
    from transformers import BertTokenizerFast

    from fastbioner.train.distill.data import encode
    from fastbioner.base.errors import FastBioNERError
    from tests.tiny_models import _vocab

    words, tags, keys = _documents(n_docs=2, repeat=1)
    labelled = list(zip(words, tags))
    unlabeled = [["cocaine", "caused", "seizures"], ["the", "rats", "increased"]]
    enc = WordEncoder(tok, LABELS, max_length=32, overlap=8)
    data = encode(enc, None, labelled, unlabeled, keys, context="packed")
    assert data.sequences == [sum(words[:6], []), sum(words[6:], []), *unlabeled]
    assert data.unlabeled == [w.sentence >= 2 for w in data.teacher_windows] and sum(data.unlabeled) == 2
    assert list(data.label_ids) == [i for w in data.teacher_windows[:-2] for i in w.labels]
    twin = encode(enc, WordEncoder(tok, LABELS, max_length=32, overlap=8), labelled, unlabeled, keys,
                  context="packed")
    assert [w.owned_words for w in twin.student_windows] == [w.owned_words for w in data.teacher_windows]
    # a tokenizer without whole words: every word in characters, so other windows
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(t for t in _vocab() if len(t.lstrip("#")) <= 1 or t.startswith("[")) + "\n",
                     encoding="utf-8")
    chars = BertTokenizerFast(vocab=str(vocab), do_lower_case=True, model_max_length=64)
    with pytest.raises(FastBioNERError, match=r"document of sentences 1-6 of the training data.*--context document"):
        encode(enc, WordEncoder(chars, LABELS, max_length=32, overlap=8), labelled, unlabeled, keys,
               context="packed")


def test_unlabelled_documents_are_packed_on_their_own(tok):
    """Unlabelled text read with its documents (as the distillation reads files): each
    unlabelled abstract is one sequence, like the labelled ones, but never joined to a
    labelled document, not even one with the same id."""
    from fastbioner.train.distill.data import UnlabeledText, encode

    words, tags, keys = _documents(n_docs=2, repeat=1)
    labelled = list(zip(words, tags))
    text = UnlabeledText([["cocaine", "caused", "seizures"], ["the", "rats", "increased"], ["naloxone", "helped"]],
                         [("unlabelled", 1), ("unlabelled", 1), ("unlabelled", 2)])
    enc = WordEncoder(tok, LABELS, max_length=32, overlap=8)
    data = encode(enc, None, labelled, text, keys, context="packed")
    assert data.sequences == [sum(words[:6], []), sum(words[6:], []), text.sentences[0] + text.sentences[1],
                              text.sentences[2]]
    assert [w.sentence for w, flag in zip(data.teacher_windows, data.unlabeled) if flag] == [2, 3]
    assert list(data.label_ids) == [i for w in data.teacher_windows[:-2] for i in w.labels]
    # sentence context reads every sentence alone, whatever the documents
    alone = encode(enc, None, labelled, text, None, context="sentence")
    assert len(alone.sequences) == len(words) + 3 and sum(alone.unlabeled) == 3


def test_reading_unlabelled_files_keeps_their_documents(tmp_path):
    from fastbioner.train.distill.data import read_unlabeled

    path = tmp_path / "abstracts.pubtator"
    path.write_text("1|t|Lithium toxicity.\n1|a|Rats had seizures. Naloxone helped.\n\n"
                    "2|t|Aspirin.\n2|a|Pain went away.\n\n", encoding="utf-8")
    text = read_unlabeled([path])
    assert [len(s) > 0 for s in text.sentences] == [True] * 5
    assert text.documents == [("unlabelled", 1)] * 3 + [("unlabelled", 2)] * 2
    assert len(read_unlabeled([path], limit=2)) == 2
