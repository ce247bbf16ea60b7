"""The inference engine on tiny models: exact offsets whatever the text, repair,
windows of long sentences, bad input."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastbioner.io.documents import Document, Source, Span
from fastbioner.base.errors import ModelError
from fastbioner.infer.inference import Tagger, TaggerConfig, token_budget_batches
from fastbioner.io.labels import invalid_iob2_positions, iob2_chunks
from fastbioner.io.text import document_sentences, tokenize
from inference_models import TYPE_OF, planted_text, trained_tagger_folder
from tiny_models import make_tiny_model

@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return trained_tagger_folder(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="module")
def tagger(trained):
    return Tagger.load(trained, TaggerConfig(precision="fp32"))


@pytest.fixture(scope="module")
def random_tagger(tmp_path_factory):
    """An untrained model: its tag sequences are arbitrary, invalid ones included."""
    folder = make_tiny_model(tmp_path_factory.mktemp("random"), seed=3)
    return Tagger.load(folder, TaggerConfig(precision="fp32"))


# Separators that a subword tokenizer normalises away or changes: non-breaking and
# thin spaces, a control character and a zero-width space (both dropped by BERT's
# normaliser), Greek letters, superscripts, accents, tabs and new lines.
ODD_SEPARATORS = [" ", "  ", "\u00a0", "\u2009", "\t", " \n ", " , ", " (", ") ", "-", "/", " \u03b1 ",
                  " \u00b2 ", "\x07", "\u200b", " \u00e9 ", " ; ", " \u03b2-", " \U0001d6fc "]


def spans_of(tagger, text: str) -> set:
    (spans,) = tagger.tag([Document("d", text)])
    return {(s.start, s.end, s.label) for s in spans}


def test_entities_have_exact_offsets_in_odd_unicode_and_case(tagger):
    text = "LITHIUM\u00a0and Cocaine\x07caused \u03b1-hypertension ; heart\u2009FAILURE\u200bin rats"
    found = {(text[s:e], label) for s, e, label in spans_of(tagger, text)}
    assert found == {("LITHIUM", "Chemical"), ("Cocaine", "Chemical"), ("hypertension", "Disease"),
                     ("heart\u2009FAILURE", "Disease")}


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_words=st.integers(1, 60))
def test_property_spans_slice_the_original_text_to_the_entity(tagger, seed, n_words):
    rng = random.Random(seed)
    text, truth = planted_text(rng, n_words, ODD_SEPARATORS)
    (spans,) = tagger.tag([Document("d", text)])
    for s in spans:
        assert 0 <= s.start < s.end <= len(text)
        assert s.source is Source.MODEL and 0.0 < s.score <= 1.0
        # The slice is the entity as written (its case, its own inner space).
        assert " ".join(text[s.start:s.end].lower().split()) in TYPE_OF
    assert {(s.start, s.end, s.label) for s in spans} == truth


@settings(max_examples=25, deadline=None, derandomize=True)
@given(text=st.text(st.characters(codec="utf-8"), max_size=300))
def test_property_any_text_gives_valid_spans_on_token_boundaries(random_tagger, text):
    """Arbitrary Unicode (controls, surrogates excluded, combining marks, emoji): no
    crash, and every span starts and ends on word-token boundaries of the text."""
    (spans,) = random_tagger.tag([Document("d", text)])
    starts = {t.start for t in tokenize(text)}
    ends = {t.end for t in tokenize(text)}
    for s in spans:
        assert s.start in starts and s.end in ends and s.start < s.end
        assert text[s.start:s.end].strip() == text[s.start:s.end]


def test_invalid_sequences_are_repaired_the_same_way_in_tags_and_spans(random_tagger):
    rng = random.Random(1)
    docs = [Document(str(i), planted_text(rng, 40, [" ", ", "])[0]) for i in range(20)]
    sentences = [s for d in docs for s in document_sentences(d)]
    predictions = random_tagger.predict_words([s.words for s in sentences])
    spans = random_tagger.tag_sentences(sentences)
    assert any(len(p.tags) > 1 for p in predictions)
    for sent, pred, sent_spans in zip(sentences, predictions, spans):
        assert invalid_iob2_positions(pred.tags) == []
        expected = [(sent.tokens[a].start, sent.tokens[b - 1].end, t) for t, a, b in iob2_chunks(pred.tags)]
        assert [(s.start, s.end, s.label) for s in sent_spans] == expected
        # Documented aggregate: an entity's score is the mean of its words' probabilities.
        for (_, a, b), s in zip(iob2_chunks(pred.tags), sent_spans):
            assert s.score == pytest.approx(sum(pred.scores[a:b]) / (b - a))


def test_long_sentence_windows_lose_or_double_no_entity(trained):
    """One sentence of 900 words (no sentence break) through windows of 24 subwords
    overlapping by 8: every planted entity comes back exactly once."""
    tagger = Tagger.load(trained, TaggerConfig(precision="fp32", max_length=24, window_overlap=8))
    rng = random.Random(7)
    text, truth = planted_text(rng, 900, [" ", " , ", " ; "])
    doc = Document("long", text)
    assert len(document_sentences(doc)) == 1
    encoded = tagger.encoder.encode([document_sentences(doc)[0].words])
    assert len(encoded) > 30  # really windowed
    (spans,) = tagger.tag([doc])
    assert len(spans) == len({(s.start, s.end) for s in spans})
    assert {(s.start, s.end, s.label) for s in spans} == truth


def test_200000_character_document(tagger):
    rng = random.Random(3)
    parts, truth, offset = [], set(), 0
    while offset < 200_000:
        sentence, sent_truth = planted_text(rng, 30, [" ", ", "])
        sentence = sentence[0].upper() + sentence[1:] + ". "
        truth |= {(a + offset, b + offset, t) for a, b, t in sent_truth}
        parts.append(sentence)
        offset += len(sentence)
    text = "".join(parts)
    assert len(text) >= 200_000
    assert spans_of(tagger, text) == truth


@pytest.mark.parametrize("text", ["", "   \n\t ", "... ;;; ---", "\x00\x01\x02", "\u200b\u200b",
                                  "\u00b2\u00b3 \u03b1\u03b2\u03b3"])
def test_empty_whitespace_punctuation_and_odd_documents(random_tagger, text):
    (spans,) = random_tagger.tag([Document("d", text)])
    if not text.strip():
        assert spans == []
    for s in spans:
        assert text[s.start:s.end].strip() == text[s.start:s.end] != ""


def test_document_order_and_passages_are_kept(tagger):
    docs = [Document.from_parts(str(i), "Cocaine" if i % 2 else "Rats", [(None, "It caused seizures.")])
            for i in range(7)]
    result = tagger.tag(docs)
    for doc, spans in zip(docs, result):
        labels = [(doc.text[s.start:s.end], s.label) for s in spans]
        expected = ([("Cocaine", "Chemical")] if doc.id in "135" else []) + [("seizures", "Disease")]
        assert labels == expected
    # Title and abstract are tagged separately: no entity crosses the passage break.
    (spans,) = tagger.tag([Document.from_parts("x", "heart", [(None, "failure in rats")])])
    assert all(s.end <= 5 or s.start >= 6 for s in spans)


def test_annotate_keeps_curated_spans_and_drops_old_model_spans(tagger):
    text = "Cocaine caused hypertension in rats"
    curated = Span(15, 27, "Chemical", Source.CURATOR)
    old = Span(0, 7, "Disease", Source.MODEL)
    gold = Span(31, 35, "Disease", Source.GOLD)
    (doc,) = tagger.annotate([Document("d", text, spans=[curated, old, gold])])
    assert [(s.start, s.end, s.label, s.source) for s in doc.spans] == [
        (0, 7, "Chemical", Source.MODEL), (15, 27, "Chemical", Source.CURATOR)]


def test_non_bio_labels_are_refused_with_a_clear_error(tmp_path):
    folder = make_tiny_model(tmp_path / "m", labels=["LABEL_0", "LABEL_1", "LABEL_2"])
    with pytest.raises(ModelError, match="labels are not BIO tags.*LABEL_0"):
        Tagger.load(folder)
    no_o = make_tiny_model(tmp_path / "n", labels=["B-X", "I-X"])
    with pytest.raises(ModelError, match="no O label"):
        Tagger.load(no_o)


def test_iobes_model_gives_valid_spans(tmp_path):
    folder = make_tiny_model(tmp_path / "m", labels=["O", "B-X", "I-X", "E-X", "S-X"], seed=5)
    tagger = Tagger.load(folder)
    text = "the cocaine dose was given to rats with hypertension " * 5
    preds = tagger.predict_words([text.split()])
    assert invalid_iob2_positions(preds[0].tags) == []
    assert all(t == "O" or t[:2] in ("B-", "I-") for t in preds[0].tags)


def test_missing_model_and_pickle_only_folder_are_clear_errors(tmp_path):
    with pytest.raises(ModelError, match="no model named 'nope'"):
        Tagger.load("nope")
    folder = make_tiny_model(tmp_path / "m")
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(ModelError, match="no safetensors weights"):
        Tagger.load(folder)


def test_token_budget_batches_are_sorted_and_bounded():
    rng = random.Random(0)
    lengths = [rng.randint(1, 300) for _ in range(500)]
    batches = token_budget_batches(lengths, token_budget=1024, max_rows=16)
    assert sorted(i for b in batches for i in b) == list(range(500))
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(flat, reverse=True)
    for b in batches:
        assert len(b) <= 16
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 1024
    assert token_budget_batches([5000], 1024, 16) == [[0]]


def test_one_abstracts_sentences_are_cut_where_that_saves_padding():
    """One abstract fits one batch of the budget, but padding its short sentences to
    the longest costs more than a second batch: it is cut, and no cut costs more
    (padded positions plus the overhead per batch) than leaving it whole."""
    from fastbioner.infer.inference import least_padding

    lengths = [32, 57, 19, 36, 30, 33, 27, 35, 32]          # a real abstract's sentences
    batches = token_budget_batches(lengths, token_budget=8192, max_rows=256, overhead=32)

    def cost(bs):
        return sum(len(b) * max(lengths[i] for i in b) + 32 for b in bs)

    assert sorted(i for b in batches for i in b) == list(range(9))
    assert len(batches) > 1 and batches[0] == [1]            # the long sentence alone
    assert cost(batches) < cost([sorted(range(9), key=lambda i: -lengths[i])])
    # exhaustive check of the programme on small cases: no cut of the sorted rows is cheaper
    rng = random.Random(1)
    for _ in range(50):
        ls = sorted((rng.randint(1, 80) for _ in range(rng.randint(1, 8))), reverse=True)
        got = least_padding(list(range(len(ls))), ls, 10)
        assert [i for b in got for i in b] == list(range(len(ls)))
        n = len(ls)
        best = min(sum((e - s) * ls[s] + 10 for s, e in zip((0,) + cuts, cuts + (n,)))
                   for k in range(n) for cuts in itertools.combinations(range(1, n), k))
        assert sum(len(b) * ls[b[0]] + 10 for b in got) == best
    # lengths alike (a sorted corpus batch): left whole
    assert least_padding(list(range(5)), [40, 40, 39, 39, 39], 32) == [list(range(5))]


def test_threads_setting_is_applied(trained):
    import torch

    before = torch.get_num_threads()
    try:
        tagger = Tagger.load(trained, TaggerConfig(precision="fp32", threads=1))
        assert torch.get_num_threads() == 1 and tagger.describe()["threads"] == 1
    finally:
        torch.set_num_threads(before)


def test_crf_student_tags_through_its_own_decoder(trained, tmp_path):
    from fastbioner.train.distill.students import recurrent_student
    from fastbioner.models.modeling import load_token_classifier, load_tokenizer, save_model

    student = recurrent_student(load_token_classifier(trained), hidden_size=16, use_crf=True)
    folder = save_model(student, load_tokenizer(trained), tmp_path / "rnn")
    tagger = Tagger.load(folder, TaggerConfig(precision="fp32"))
    assert tagger._decode is not None
    text = "Cocaine caused hypertension in rats. " * 3
    (spans,) = tagger.tag([Document("d", text)])
    for s in spans:
        assert text[s.start:s.end].strip() == text[s.start:s.end] and 0 < s.score <= 1
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "fastbioner-rnn"


def test_batching_does_not_change_the_entities(trained, tagger):
    """Small batches (much padding-free work) and large ones (padding to the longest
    of many sentences) give the same entities and scores."""
    rng = random.Random(12)
    docs = [Document(str(i), planted_text(rng, rng.randint(1, 80), [" ", ", ", ". "])[0]) for i in range(40)]
    small = Tagger.load(trained, TaggerConfig(precision="fp32", token_budget=64, max_batch_size=3))
    assert small.token_budget == 64 and tagger.token_budget > 64
    for a, b in zip(small.tag(docs), tagger.tag(docs)):
        assert [(s.start, s.end, s.label) for s in a] == [(s.start, s.end, s.label) for s in b]
        assert [s.score for s in a] == pytest.approx([s.score for s in b], abs=1e-5)


def test_a_recurrent_student_evaluates_in_a_fresh_process(trained, tmp_path):
    """`fastbioner evaluate` on a BiGRU+CRF student in a process that has imported
    nothing else: loading a model registers the project's own model types, so no
    earlier import has to have done it."""
    import os
    import subprocess
    import sys

    from fastbioner.train.distill.students import recurrent_student
    from fastbioner.models.modeling import load_token_classifier, load_tokenizer, save_model

    student = recurrent_student(load_token_classifier(trained), hidden_size=16, use_crf=True)
    folder = save_model(student, load_tokenizer(trained), tmp_path / "rnn")
    bio = tmp_path / "dev.tsv"
    bio.write_text("Cocaine\tB-Chemical\ncaused\tO\nhypertension\tB-Disease\n\n", encoding="utf-8")
    env = {**os.environ, "FASTBIONER_HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-m", "fastbioner.cli.main", "evaluate", str(folder), str(bio)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "F1" in proc.stdout or "f1" in proc.stdout



def test_batches_are_cut_for_padding_on_the_cpu_only():
    """A GPU's call costs thousands of positions: there the budget's batches stay whole."""
    import torch

    from fastbioner.infer.inference import BATCH_OVERHEAD_POSITIONS, padding_cut_overhead

    assert padding_cut_overhead(torch.device("cpu")) == BATCH_OVERHEAD_POSITIONS
    assert padding_cut_overhead(torch.device("cuda")) is None
    lengths = [57, 19, 20, 21]
    assert token_budget_batches(lengths, 8192, 256, None) == [[0, 3, 2, 1]]
    assert len(token_budget_batches(lengths, 8192, 256, BATCH_OVERHEAD_POSITIONS)) == 2
