"""Scores against hand-computed values; the one prediction path for words."""

from __future__ import annotations

import math

import pytest
import torch

from fastbioner.infer.evaluation import EvaluationReport, evaluate_model, score_tags
from fastbioner.base.jobs import Cancelled, CancelToken, JobState
from fastbioner.io.labels import invalid_iob2_positions
from fastbioner.models.modeling import load_token_classifier, load_tokenizer
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
    from fastbioner.infer.inference import Tagger, TaggerConfig

    return Tagger(model, tok, TaggerConfig(device="cpu", precision="fp32", **kw))


def test_predictions_read_the_first_subword_of_each_word(tiny):
    """The one prediction path (the Tagger, used by evaluation and training-time
    scoring): each word takes its first subword's label, repaired to valid IOB2."""
    from fastbioner.io.labels import repair_iob2

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


def test_word_probabilities_are_the_distributions_predict_words_labels_from(tiny):
    """Per word, a distribution over the model's labels whose top label, repaired, is
    the tag predict_words gives: the two read the same windows and subwords."""
    _, model, tok = tiny
    tagger = _tagger(model, tok, max_length=16)
    sentences = [["cocaine", "induced", "heart", "failure", "in", "rats"] * 5, [], ["aspirin"]]
    probs = tagger.word_probabilities(sentences)
    assert [p.shape for p in probs] == [(30, len(tagger.labels)), (0, len(tagger.labels)), (1, len(tagger.labels))]
    assert all(abs(float(row.sum()) - 1.0) < 1e-4 for p in probs for row in p)
    tags = [p.tags for p in tagger.predict_words(sentences)]
    assert [tagger.tags_of(p.argmax(-1)) for p in probs] == tags


def test_confidence_weighting_lets_a_sure_model_outvote_two_hesitant_ones():
    import numpy as np

    from fastbioner.infer.label_ensembles import combined_labels

    sure = np.array([[0.99, 0.01, 0.0]])
    hesitant = np.array([[0.2, 0.8, 0.0]])
    assert combined_labels([sure, hesitant, hesitant], "mean").tolist() == [1]        # the majority
    assert combined_labels([sure, hesitant, hesitant], "confidence").tolist() == [0]  # the sure one
    assert combined_labels([np.zeros((0, 3))] * 2, "confidence").tolist() == []


def test_a_model_combined_with_itself_scores_as_the_model_alone(tiny, tmp_path):
    folder, _, _ = tiny
    bio = _write_bio(tmp_path / "dev.tsv", [[("cocaine", "B-Chemical"), ("toxicity", "B-Disease")],
                                            [("the", "O"), ("rats", "O"), ("aspirin", "B-Chemical")], []])
    alone = evaluate_model(folder, bio, device="cpu")
    events = []
    both = evaluate_model(folder, bio, device="cpu", ensemble_with=[folder], combination="mean",
                          on_event=events.append)
    assert (both.f1, both.token_accuracy, both.mcc) == (alone.f1, alone.token_accuracy, alone.mcc)
    assert both.source["combination"] == "mean" and both.source["model"].count("+") == 1
    assert any("(2 of 2)" in (e.message or "") for e in events)


def test_models_with_other_labels_are_not_combined(tiny, tmp_path):
    from fastbioner.base.errors import ModelError

    folder, _, _ = tiny
    other = make_tiny_model(tmp_path / "other", labels=["O", "B-Gene", "I-Gene"], seed=4)
    bio = _write_bio(tmp_path / "dev.tsv", [[("cocaine", "B-Chemical")]])
    with pytest.raises(ModelError, match="must share their labels"):
        evaluate_model(folder, bio, device="cpu", ensemble_with=[other])


def test_a_pubtator_file_scores_as_its_conll_conversion(tiny, tmp_path):
    """`fastbioner evaluate MODEL devel.PubTator.txt`: read as a training run reads its
    devel file, so it scores exactly as the file converted to CoNLL first."""
    from fastbioner.cli.main import main

    folder, _, _ = tiny
    pubtator = tmp_path / "dev.pubtator"
    pubtator.write_text("1|t|Cocaine toxicity\n1|a|Seizures followed. Naloxone helped.\n"
                        "1\t0\t7\tCocaine\tChemical\tD003042\n1\t17\t25\tSeizures\tDisease\tD012640\n\n",
                        encoding="utf-8")
    conll = tmp_path / "dev.conll"
    assert main(["convert", str(pubtator), str(conll)]) == 0
    direct, converted = (evaluate_model(folder, f, device="cpu") for f in (pubtator, conll))
    assert direct.sentences == converted.sentences == 3 and direct.support == 2
    assert (direct.f1, direct.token_accuracy) == (converted.f1, converted.token_accuracy)
