"""Scores against hand-computed values; the one prediction path for words."""

from __future__ import annotations

import math

import pytest
import torch

from fastbioner.evaluation import EvaluationReport, evaluate_model, score_tags
from fastbioner.jobs import Cancelled, CancelToken, JobState
from fastbioner.labels import invalid_iob2_positions
from fastbioner.modeling import load_token_classifier, load_tokenizer
from tiny_models import make_tiny_model

GOLD = [["B-Chemical", "I-Chemical", "O", "B-Disease"], ["O", "B-Disease", "I-Disease", "O"]]
PRED = [["B-Chemical", "I-Chemical", "O", "B-Chemical"], ["O", "B-Disease", "O", "O"]]


def test_entity_scores_match_hand_computation():
    r = score_tags(GOLD, PRED)
    # Gold: Chemical 0-2; Disease 3-4 and 1-3. Predicted: Chemical 0-2 (right),
    # Chemical 3-4 (wrong type), Disease 1-2 (wrong boundary).
    assert r.per_type["Chemical"].precision == pytest.approx(1 / 2)
    assert r.per_type["Chemical"].recall == pytest.approx(1.0)
    assert r.per_type["Chemical"].f1 == pytest.approx(2 / 3)
    assert r.per_type["Chemical"].support == 1
    assert r.per_type["Disease"].f1 == 0.0 and r.per_type["Disease"].support == 2
    assert (r.precision, r.recall, r.f1) == pytest.approx((1 / 3, 1 / 3, 1 / 3))
    assert r.support == 3 and r.sentences == 2


def test_token_scores_match_hand_computation():
    r = score_tags(GOLD, PRED)
    assert r.tokens == 8
    assert r.token_accuracy == pytest.approx(6 / 8)
    # Recall per gold class: B-Chem 1, I-Chem 1, O 1, B-Dis 1/2, I-Dis 0.
    assert r.balanced_accuracy == pytest.approx((1 + 1 + 1 + 0.5 + 0) / 5)
    # Multiclass MCC = (c*s - sum p_k t_k) / sqrt((s^2 - sum p_k^2)(s^2 - sum t_k^2)).
    assert r.mcc == pytest.approx((6 * 8 - 17) / math.sqrt((64 - 22) * (64 - 16)))


def test_strict_mode_does_not_count_an_entity_that_starts_with_i():
    r = score_tags([["B-Disease", "I-Disease"]], [["I-Disease", "I-Disease"]])
    assert r.f1 == 0.0
    assert score_tags([["B-Disease", "I-Disease"]], [["B-Disease", "I-Disease"]]).f1 == 1.0


def test_perfect_and_empty_predictions():
    assert score_tags(GOLD, GOLD).f1 == 1.0
    empty = score_tags(GOLD, [["O"] * 4, ["O"] * 4])
    assert empty.f1 == 0.0 and empty.recall == 0.0 and empty.mcc == 0.0


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="sentence 1"):
        score_tags(GOLD, [PRED[0], PRED[1][:3]])


def test_report_text_and_dict_round_trip():
    r = score_tags(GOLD, PRED)
    again = EvaluationReport.from_dict(r.to_dict())
    assert again == r
    text = r.to_text()
    assert "Chemical" in text and "Disease" in text and "overall" in text and "MCC" in text
    assert r.metrics()["f1_Chemical"] == pytest.approx(2 / 3)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = make_tiny_model(tmp_path_factory.mktemp("eval") / "model", seed=3)
    return folder, load_token_classifier(folder), load_tokenizer(folder)


def _tagger(model, tok, **kw):
    from fastbioner.inference import Tagger, TaggerConfig

    return Tagger(model, tok, TaggerConfig(device="cpu", precision="fp32", **kw))


def test_predictions_read_the_first_subword_of_each_word(tiny):
    """The one prediction path (the Tagger, used by evaluation and training-time
    scoring): each word takes its first subword's label, repaired to valid IOB2."""
    from fastbioner.labels import repair_iob2

    _, model, tok = tiny
    words = ["cocaine", "xqzinduced", "heart", "failure"]
    tags = _tagger(model, tok).predict_words([words])[0].tags
    enc = tok([words], is_split_into_words=True, return_tensors="pt")
    with torch.inference_mode():
        ids = model(**enc).logits.argmax(-1)[0].tolist()
    wids = enc.word_ids(0)
    firsts = [ids[k] for k in range(len(wids)) if wids[k] is not None and (k == 0 or wids[k] != wids[k - 1])]
    assert tags == repair_iob2([model.config.id2label[i] for i in firsts])[0]


def test_predictions_window_long_sentences_and_repair(tiny):
    _, model, tok = tiny
    long = ["cocaine", "induced", "heart", "failure", "in", "rats"] * 20
    out = [p.tags for p in _tagger(model, tok, max_length=16, max_batch_size=2).predict_words(
        [long, [], ["aspirin"]])]
    assert [len(t) for t in out] == [len(long), 0, 1]
    assert all(invalid_iob2_positions(t) == [] for t in out)


def _write_bio(path, sentences):
    path.write_text("\n\n".join("\n".join(f"{w}\t{t}" for w, t in s) for s in sentences) + "\n")
    return path


def test_evaluate_model_on_a_folder_reports_and_ends_done(tiny, tmp_path):
    folder, _, _ = tiny
    bio = _write_bio(tmp_path / "dev.tsv", [[("cocaine", "B-Chemical"), ("toxicity", "B-Disease")],
                                            [("the", "O"), ("rats", "O")]])
    events = []
    report = evaluate_model(folder, bio, on_event=events.append, device="cpu")
    assert report.sentences == 2 and report.tokens == 4 and report.support == 2
    assert report.source["file"] == str(bio)
    assert events[-1].state is JobState.DONE
    assert events[-2].metrics["f1"] == report.f1


def test_evaluate_model_cancel(tiny, tmp_path):
    folder, _, _ = tiny
    bio = _write_bio(tmp_path / "dev.tsv", [[("the", "O")]] * 50)
    token = CancelToken()
    events = []

    def on_event(e):
        events.append(e)
        token.cancel()

    with pytest.raises(Cancelled):
        evaluate_model(folder, bio, batch_size=4, on_event=on_event, cancel=token, device="cpu")
    assert events[-1].state is JobState.CANCELLED
