"""Loss terms: each is zero when the student is an exact copy of the teacher, and
behaves as its paper defines it otherwise; the CRF against brute force."""

import itertools

import pytest
import torch

from fastbioner.train.distill.capture import capture, prepare_for_capture
from fastbioner.models.architectures.crf import CRF
from fastbioner.models.architectures.positions import first_positions, gather_positions
from fastbioner.train.distill.losses import (
    attention_mse, confidence_weights, hidden_mse, logit_mse,
    normalized_hidden_mse, prob_mse, soft_label_loss,
)
from fastbioner.train.distill.students import student_from_teacher
from fastbioner.models.modeling import load_token_classifier
from tests.tiny_models import make_tiny_model, make_tiny_mpnet

IDS = torch.tensor([[2, 40, 41, 42, 43, 3], [2, 44, 45, 3, 0, 0]])
MASK = (IDS != 0).long()
LABELLED = torch.tensor([[0, 1, 1, 0, 1, 0], [0, 1, 1, 0, 0, 0]], dtype=torch.bool)


@pytest.mark.parametrize("maker", [make_tiny_model, make_tiny_mpnet])
@pytest.mark.parametrize("kind", ["scores", "probs"])
def test_every_term_is_zero_for_an_exact_copy(tmp_path, maker, kind):
    teacher = load_token_classifier(maker(tmp_path / "t", layers=3)).eval()
    student = student_from_teacher(teacher, 3).eval()  # 3 of 3 layers: an exact copy
    for m in (teacher, student):
        prepare_for_capture(m, kind)
    layers = [0, 1, 2, 3]
    t = capture(teacher, IDS, MASK, layers, layers[1:], kind)
    s = capture(student, IDS, MASK, layers, layers[1:], kind)
    real = MASK.bool()
    zero = dict(abs=1e-6)
    assert soft_label_loss(s.logits, t.logits, LABELLED, temperature=2.0).item() == pytest.approx(0, **zero)
    assert prob_mse(s.logits, t.logits, LABELLED).item() == pytest.approx(0, **zero)
    assert logit_mse(s.logits, t.logits, LABELLED).item() == pytest.approx(0, **zero)
    for j in layers:
        assert hidden_mse(s.hidden[j], t.hidden[j], real).item() == pytest.approx(0, **zero)
        assert normalized_hidden_mse(s.hidden[j], t.hidden[j], real).item() == pytest.approx(0, **zero)
    for j in layers[1:]:
        assert attention_mse(s.attention[j], t.attention[j], real).item() == pytest.approx(0, **zero)


def test_terms_are_positive_for_a_different_student(tmp_path):
    teacher = load_token_classifier(make_tiny_model(tmp_path / "t", layers=2, seed=0)).eval()
    other = load_token_classifier(make_tiny_model(tmp_path / "o", layers=2, seed=1)).eval()
    t = capture(teacher, IDS, MASK, [1, 2], [1, 2])
    s = capture(other, IDS, MASK, [1, 2], [1, 2])
    real = MASK.bool()
    assert soft_label_loss(s.logits, t.logits, LABELLED) > 0
    assert hidden_mse(s.hidden[2], t.hidden[2], real) > 0
    assert attention_mse(s.attention[1], t.attention[1], real) > 0


def test_soft_label_loss_is_cross_entropy_minus_teacher_entropy():
    torch.manual_seed(0)
    s, t = torch.randn(2, 4, 5), torch.randn(2, 4, 5)
    mask = torch.ones(2, 4, dtype=torch.bool)
    p_t = t.softmax(-1)
    ce = -(p_t * s.log_softmax(-1)).sum(-1).mean()
    entropy = -(p_t * p_t.log()).sum(-1).mean()
    assert soft_label_loss(s, t, mask, 1.0).item() == pytest.approx((ce - entropy).item(), rel=1e-5)
    # temperature softens both sides; T^2 scaling is optional
    t3 = soft_label_loss(s, t, mask, 3.0, scale_by_t2=False)
    assert soft_label_loss(s, t, mask, 3.0).item() == pytest.approx(9 * t3.item(), rel=1e-5)


def test_terms_ignore_positions_outside_their_mask():
    torch.manual_seed(0)
    s, t = torch.randn(1, 4, 3), torch.randn(1, 4, 3)
    mask = torch.tensor([[True, True, False, False]])
    s2 = s.clone()
    s2[0, 2:] += 100.0  # wild values where no label is: must change nothing
    for fn in (soft_label_loss, prob_mse, logit_mse):
        assert fn(s, t, mask).item() == pytest.approx(fn(s2, t, mask).item())
    h_s, h_t = torch.randn(1, 4, 6), torch.randn(1, 4, 6)
    h_s2 = h_s.clone()
    h_s2[0, 3] = 50.0
    assert hidden_mse(h_s, h_t, mask) == hidden_mse(h_s2, h_t, mask)
    a_s, a_t = torch.randn(1, 2, 4, 4), torch.randn(1, 2, 4, 4)
    a_s2 = a_s.clone()
    a_s2[0, :, 3, :] = 9.0
    a_s2[0, :, :, 2] = 9.0
    assert attention_mse(a_s, a_t, mask) == attention_mse(a_s2, a_t, mask)


def test_empty_mask_gives_zero_that_still_backpropagates():
    s = torch.randn(1, 3, 4, requires_grad=True)
    loss = soft_label_loss(s, torch.randn(1, 3, 4), torch.zeros(1, 3, dtype=torch.bool))
    assert loss.item() == 0.0
    loss.backward()
    assert s.grad is not None


def test_attention_with_other_head_counts_compares_head_averages():
    torch.manual_seed(0)
    teacher = torch.randn(2, 4, 5, 5)
    mask = torch.ones(2, 5, dtype=torch.bool)
    student = teacher.mean(1, keepdim=True).expand(2, 2, 5, 5)  # 2 heads, same average
    assert attention_mse(student, teacher, mask).item() == pytest.approx(0.0, abs=1e-6)
    assert attention_mse(student, teacher.mean(1, keepdim=True), mask).item() == pytest.approx(0.0, abs=1e-6)


def test_hidden_mse_applies_the_projection():
    proj = torch.nn.Linear(3, 6, bias=False)
    h_s = torch.randn(1, 2, 3)
    h_t = proj(h_s).detach()
    assert hidden_mse(h_s, h_t, torch.ones(1, 2, dtype=torch.bool), proj).item() == pytest.approx(0, abs=1e-7)


def test_confidence_weight_is_squared_top_probability():
    logits = torch.log(torch.tensor([[[0.7, 0.2, 0.1], [0.4, 0.3, 0.3]]]))
    assert torch.allclose(confidence_weights(logits), torch.tensor([[0.49, 0.16]]))


def test_first_positions_gathers_labelled_positions_in_order():
    labels = torch.tensor([[-100, 3, -100, 1, -100], [-100, 2, -100, -100, -100]])
    index, valid = first_positions(labels)
    assert valid.tolist() == [[True, True], [True, False]]
    values = torch.arange(10).view(2, 5)
    assert gather_positions(values, index)[valid].tolist() == [1, 3, 6]


def _brute_force(crf: CRF, emissions: torch.Tensor) -> tuple[torch.Tensor, list[int]]:
    k, n = crf.num_tags, emissions.shape[0]
    scores = {}
    for path in itertools.product(range(k), repeat=n):
        s = crf.start[path[0]] + crf.end[path[-1]] + sum(emissions[i, path[i]] for i in range(n))
        s = s + sum(crf.transitions[path[i - 1], path[i]] for i in range(1, n))
        scores[path] = s
    log_z = torch.logsumexp(torch.stack(list(scores.values())), 0)
    return log_z, list(max(scores, key=lambda p: scores[p]))


def test_crf_likelihood_and_viterbi_match_brute_force():
    torch.manual_seed(0)
    crf = CRF(3)
    with torch.no_grad():
        for p in crf.parameters():
            p.normal_()
    emissions = torch.randn(2, 4, 3)
    mask = torch.tensor([[True] * 4, [True, True, True, False]])
    tags = torch.tensor([[0, 2, 1, 1], [2, 2, 0, 0]])
    expected_nll, expected_paths = [], []
    for row, length in enumerate([4, 3]):
        e = emissions[row, :length]
        log_z, best = _brute_force(crf, e)
        path = tags[row, :length].tolist()
        gold = crf.start[path[0]] + crf.end[path[-1]] + sum(e[i, path[i]] for i in range(length)) \
            + sum(crf.transitions[path[i - 1], path[i]] for i in range(1, length))
        expected_nll.append(log_z - gold)
        expected_paths.append(best)
    assert crf.nll(emissions, tags, mask).item() == pytest.approx(torch.stack(expected_nll).mean().item(), rel=1e-5)
    assert crf.decode(emissions, mask) == expected_paths


def test_viterbi_decodes_a_batch_of_mixed_lengths_as_each_row_alone():
    """Rows of every length (an empty one too) in one batch: each gets the brute-force
    best path of its own real prefix, whatever its padding holds."""
    torch.manual_seed(1)
    crf = CRF(3)
    with torch.no_grad():
        for p in crf.parameters():
            p.normal_()
    lengths = [4, 1, 3, 0, 2, 4]
    emissions = torch.randn(len(lengths), 4, 3) * 2
    mask = torch.arange(4)[None, :] < torch.tensor(lengths)[:, None]
    expected = [_brute_force(crf, emissions[i, :n])[1] if n else [] for i, n in enumerate(lengths)]
    assert crf.decode(emissions, mask) == expected
