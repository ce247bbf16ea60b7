"""The objective: terms weighted by the method's schedule, the teacher consulted
only while a teacher term has weight, unlabelled rows kept out of the gold term and
weighted by the teacher's confidence in the soft term."""

import pytest
import torch

from fastbioner.train.distill.alignment import DistillBatch
from fastbioner.train.distill.losses import confidence_weights, soft_label_loss
from fastbioner.train.distill.methods import MethodConfig
from fastbioner.train.distill.objective import DistillationObjective
from fastbioner.train.distill.students import freeze, student_from_teacher, uniform_layer_map
from fastbioner.train.distill.teacher_cache import LiveTeacher, teacher_needs
from fastbioner.models.encoding import WordEncoder
from fastbioner.models.losses import CrossEntropy
from fastbioner.models.modeling import load_token_classifier, load_tokenizer, model_labels
from tests.tiny_models import make_tiny_model

WORDS = [["naloxone", "reverses", "hypertension"], ["lithium", "toxicity"]]
TAGS = [["B-Chemical", "O", "B-Disease"], ["B-Chemical", "B-Disease"]]


@pytest.fixture
def setup(tmp_path):
    folder = make_tiny_model(tmp_path / "t", layers=4)
    teacher = freeze(load_token_classifier(folder))
    tok = load_tokenizer(folder)
    enc = WordEncoder(tok, model_labels(teacher))
    batch = enc.collate(enc.encode(WORDS, TAGS))
    student = student_from_teacher(teacher, 2).eval()
    return teacher, student, batch


class CountingTeacher(LiveTeacher):
    calls = 0

    def outputs(self, batch):
        self.calls += 1
        return super().outputs(batch)


def objective_for(teacher, student, method="fastbioner", **overrides):
    m = MethodConfig(name=method, **overrides).to_method()
    mapping = uniform_layer_map(4, 2)
    source = CountingTeacher(teacher, teacher_needs(m, mapping, student, teacher, "scores"))
    return DistillationObjective(student, m, source, mapping, CrossEntropy()), source


def test_weights_follow_phi_and_the_teacher_rests_once_phi_is_zero(setup):
    teacher, student, batch = setup
    objective, source = objective_for(teacher, student)
    unlabeled = torch.zeros(2, dtype=torch.bool)
    loss, terms = objective(DistillBatch(batch, batch, unlabeled), 0, 100)
    phi = terms["phi"]
    expected = phi * terms["soft"] + (1 - phi) * terms["gold"] + phi * (terms["hidden"] + terms["attention"])
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    assert source.calls == 1
    loss, terms = objective(DistillBatch(batch, batch, unlabeled), 70, 100)  # s = (1 - b) G
    assert set(terms) == {"gold", "loss", "phi"} and terms["phi"] == 0.0
    assert terms["loss"] == pytest.approx(loss.item())
    assert loss.item() == pytest.approx(terms["gold"])
    assert source.calls == 1  # not consulted


def test_dropped_terms_and_constant_schedule(setup):
    teacher, student, batch = setup
    objective, _ = objective_for(teacher, student, drop_terms=["attention"], schedule="constant", alpha=0.25)
    loss, terms = objective(DistillBatch(batch, batch, torch.zeros(2, dtype=torch.bool)), 99, 100)
    assert set(terms) == {"soft", "gold", "hidden", "loss", "phi"} and terms["phi"] == 0.25
    assert loss.item() == pytest.approx(0.25 * (terms["soft"] + terms["hidden"]) + 0.75 * terms["gold"], rel=1e-5)


def test_unlabelled_rows_skip_the_gold_term_and_weigh_soft_labels_by_confidence(setup):
    teacher, student, batch = setup
    objective, _ = objective_for(teacher, student, method="hinton")
    unlabeled = torch.tensor([False, True])
    _, terms = objective(DistillBatch(batch, batch, unlabeled), 0, 10)
    with torch.no_grad():
        s_logits = student(**batch.model_inputs()).logits
        t_logits = teacher(**batch.model_inputs()).logits
    labelled_only = batch.labels.clone()
    labelled_only[1] = -100
    assert terms["gold"] == pytest.approx(CrossEntropy()(s_logits, labelled_only).item(), rel=1e-5)
    mask = batch.labels != -100
    weights = torch.ones(mask.shape)
    weights[1] = confidence_weights(t_logits)[1]
    expected = soft_label_loss(s_logits, t_logits, mask, 2.0, True, weights)
    assert terms["soft"] == pytest.approx(expected.item(), rel=1e-5)
    assert expected < soft_label_loss(s_logits, t_logits, mask, 2.0, True)  # confidence < 1 lowers it
