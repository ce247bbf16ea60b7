"""Students: uniform layer mapping, students built from the teacher's own layers,
from another encoder (W_h only when widths differ), and the recurrent student."""

import pytest
import torch

from fastbioner.train.distill.capture import capture
from fastbioner.train.distill.students import convolutional_student, recurrent_student
from fastbioner.models.architectures.recurrent import RecurrentTagger
from fastbioner.train.distill.students import (
    projection_for, student_from_teacher, truncate_layers, uniform_layer_map,
)
from fastbioner.base.errors import FastBioNERError
from fastbioner.models.modeling import load_token_classifier, save_model, load_tokenizer
from tests.tiny_models import make_tiny_encoder, make_tiny_model, make_tiny_mpnet


@pytest.mark.parametrize("m, n, expected", [
    (12, 6, [2, 4, 6, 8, 10, 12]),
    (12, 4, [3, 6, 9, 12]),
    (12, 3, [4, 8, 12]),
    (12, 12, list(range(1, 13))),
    (12, 1, [12]),
    # n does not divide m: nearest layer, ties to the deeper one
    (12, 5, [2, 5, 7, 10, 12]),   # 2.4, 4.8, 7.2, 9.6, 12
    (7, 3, [2, 5, 7]),            # 2.33, 4.67, 7
    (6, 4, [2, 3, 5, 6]),         # 1.5 -> 2, 3, 4.5 -> 5, 6
])
def test_uniform_layer_map(m, n, expected):
    assert uniform_layer_map(m, n) == expected


@pytest.mark.parametrize("m", range(1, 25))
def test_layer_map_is_increasing_and_ends_at_the_last_teacher_layer(m):
    for n in range(1, m + 1):
        mapping = uniform_layer_map(m, n)
        assert len(mapping) == n and mapping[-1] == m and mapping[0] >= 1
        assert all(a < b for a, b in zip(mapping, mapping[1:]))


def test_student_deeper_than_teacher_is_refused():
    with pytest.raises(FastBioNERError, match="cannot be mapped"):
        uniform_layer_map(4, 6)


def _layer_tensors(model, prefix: str, index: int) -> dict[str, torch.Tensor]:
    key = f"{prefix}.encoder.layer.{index}."
    return {k[len(key):]: v for k, v in model.state_dict().items() if k.startswith(key)}


@pytest.mark.parametrize("maker, prefix", [(make_tiny_model, "bert"), (make_tiny_mpnet, "mpnet")])
def test_student_from_teacher_holds_exactly_the_mapped_tensors(tmp_path, maker, prefix):
    teacher = load_token_classifier(maker(tmp_path / "t", layers=6))
    student = student_from_teacher(teacher, 4)  # 6 -> 4 takes 2, 3, 5, 6
    assert student.config.num_hidden_layers == 4
    assert len(getattr(student, prefix).encoder.layer) == 4
    for j, m in enumerate([2, 3, 5, 6]):
        s, t = _layer_tensors(student, prefix, j), _layer_tensors(teacher, prefix, m - 1)
        assert s.keys() == t.keys() and all(torch.equal(s[k], t[k]) for k in s)
    s_rest = {k: v for k, v in student.state_dict().items() if ".encoder.layer." not in k}
    t_rest = {k: v for k, v in teacher.state_dict().items() if ".encoder.layer." not in k}
    assert s_rest.keys() == t_rest.keys()
    assert all(torch.equal(s_rest[k], t_rest[k]) for k in s_rest)  # embeddings, head, MPNet bias
    # the student is its own copy: training it leaves the teacher alone
    with torch.no_grad():
        student.classifier.weight.add_(1.0)
    assert not torch.equal(student.classifier.weight, teacher.classifier.weight)


def test_mpnet_student_keeps_the_shared_relative_position_bias(tmp_path):
    teacher = load_token_classifier(make_tiny_mpnet(tmp_path / "t", layers=4))
    student = student_from_teacher(teacher, 2)
    bias = student.mpnet.encoder.relative_attention_bias.weight
    assert bias.abs().sum() > 0
    assert torch.equal(bias, teacher.mpnet.encoder.relative_attention_bias.weight)
    # and it is used: a student of all teacher layers computes what the teacher does
    full = student_from_teacher(teacher, 4).eval()
    teacher.eval()
    ids = torch.tensor([[0, 40, 41, 42, 2]])
    mask = torch.ones_like(ids)
    assert torch.allclose(full(input_ids=ids, attention_mask=mask).logits,
                          teacher(input_ids=ids, attention_mask=mask).logits, atol=1e-6)


def test_saved_student_reloads_with_its_layer_count(tmp_path):
    folder = make_tiny_model(tmp_path / "t", layers=4)
    teacher = load_token_classifier(folder)
    student = student_from_teacher(teacher, 2).eval()
    save_model(student, load_tokenizer(folder), tmp_path / "s")
    again = load_token_classifier(tmp_path / "s").eval()
    assert again.config.num_hidden_layers == 2
    ids = torch.tensor([[2, 40, 41, 3]])
    assert torch.equal(again(input_ids=ids).logits, student(input_ids=ids).logits)


def test_projection_exists_only_when_widths_differ(tmp_path):
    teacher = load_token_classifier(make_tiny_model(tmp_path / "t", hidden=32))
    same = load_token_classifier(make_tiny_model(tmp_path / "s32", hidden=32, layers=1))
    narrow = load_token_classifier(make_tiny_model(tmp_path / "s16", hidden=16, layers=1))
    assert projection_for(same, teacher) is None
    w_h = projection_for(narrow, teacher)
    assert (w_h.in_features, w_h.out_features) == (16, 32)


def test_first_k_layers_of_another_encoder(tmp_path):
    labels = ["O", "B-Disease", "I-Disease"]
    base = make_tiny_encoder(tmp_path / "enc", layers=4, hidden=16)
    full = load_token_classifier(base, labels=labels)
    student = truncate_layers(load_token_classifier(base, labels=labels), 2)
    assert student.config.num_hidden_layers == 2 and len(student.bert.encoder.layer) == 2
    for j in range(2):
        s, t = _layer_tensors(student, "bert", j), _layer_tensors(full, "bert", j)
        assert all(torch.equal(s[k], t[k]) for k in s)
    with pytest.raises(FastBioNERError, match="has 2 layers"):
        truncate_layers(student, 3)


def test_capture_matches_the_models_own_attention_probabilities(tmp_path):
    """The pre-softmax scores caught by hooks are the ones the model softmaxes."""
    model = load_token_classifier(make_tiny_model(tmp_path / "t", layers=2),
                                  attn_implementation="eager").eval()
    ids = torch.tensor([[2, 40, 41, 42, 3, 0], [2, 43, 44, 3, 0, 0]])
    mask = (ids != 0).long()
    scores = capture(model, ids, mask, attention_layers=[1, 2], attention_kind="scores")
    probs = capture(model, ids, mask, hidden_layers=[0, 2], attention_layers=[1, 2], attention_kind="probs")
    neg = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    for i in (1, 2):
        assert torch.allclose((scores.attention[i] + neg).softmax(-1), probs.attention[i], atol=1e-5)
    assert probs.hidden[0].shape == (2, 6, 32)


def test_recurrent_student_starts_from_the_teachers_embeddings(tmp_path):
    folder = make_tiny_model(tmp_path / "t")
    teacher = load_token_classifier(folder)
    student = recurrent_student(teacher, hidden_size=8, cell="gru", use_crf=True)
    assert torch.equal(student.get_input_embeddings().weight, teacher.get_input_embeddings().weight)
    assert student.config.id2label == teacher.config.id2label
    lstm = recurrent_student(teacher, hidden_size=8, cell="lstm", use_crf=False)
    assert isinstance(lstm.rnn, torch.nn.LSTM) and lstm.crf is None


def test_recurrent_student_round_trips_through_the_safe_loader(tmp_path):
    folder = make_tiny_model(tmp_path / "t")
    student = recurrent_student(load_token_classifier(folder), hidden_size=8).eval()
    with torch.no_grad():
        student.crf.transitions.normal_()
    save_model(student, load_tokenizer(folder), tmp_path / "s")
    again = load_token_classifier(tmp_path / "s").eval()
    assert isinstance(again, RecurrentTagger)
    ids = torch.tensor([[2, 40, 41, 3, 0]])
    mask = (ids != 0).long()
    assert torch.equal(again(input_ids=ids, attention_mask=mask).logits,
                       student(input_ids=ids, attention_mask=mask).logits)
    assert torch.equal(again.crf.transitions, student.crf.transitions)


def test_recurrent_student_ignores_padding(tmp_path):
    """A padded row gets the same scores as the same sentence unpadded (packed RNN)."""
    student = recurrent_student(load_token_classifier(make_tiny_model(tmp_path / "t")), hidden_size=8).eval()
    short = torch.tensor([[2, 40, 41, 3]])
    padded = torch.tensor([[2, 40, 41, 3, 0, 0]])
    a = student(input_ids=short, attention_mask=torch.ones_like(short)).logits
    b = student(input_ids=padded, attention_mask=(padded != 0).long()).logits
    assert torch.allclose(a, b[:, :4], atol=1e-6)


def test_convolutional_student_starts_from_the_teachers_embeddings_and_round_trips(tmp_path):
    folder = make_tiny_model(tmp_path / "t")
    teacher = load_token_classifier(folder)
    student = convolutional_student(teacher, width=8, layers=2, kernel_size=3).eval()
    assert torch.equal(student.get_input_embeddings().weight, teacher.get_input_embeddings().weight)
    assert student.config.id2label == teacher.config.id2label
    with torch.no_grad():
        student.crf.transitions.normal_()
    save_model(student, load_tokenizer(folder), tmp_path / "s")
    again = load_token_classifier(tmp_path / "s").eval()
    ids = torch.tensor([[2, 40, 41, 3, 0]])
    mask = (ids != 0).long()
    assert torch.equal(again(input_ids=ids, attention_mask=mask).logits,
                       student(input_ids=ids, attention_mask=mask).logits)
    assert torch.equal(again.crf.transitions, student.crf.transitions)
    assert convolutional_student(teacher, width=8, use_crf=False).crf is None


def test_convolutional_student_ignores_padding_and_sees_only_its_window(tmp_path):
    """Scores do not depend on the padding a sentence is batched with, and a subword's
    scores depend on the subwords within layers x (kernel - 1) / 2 of it, no further."""
    student = convolutional_student(load_token_classifier(make_tiny_model(tmp_path / "t")), width=8,
                                    layers=2, kernel_size=3).eval()
    short = torch.tensor([[2, 40, 41, 42, 43, 44, 45, 3]])
    padded = torch.cat([short, torch.zeros(1, 3, dtype=torch.long)], 1)
    with torch.no_grad():
        a = student(input_ids=short, attention_mask=torch.ones_like(short)).logits
        b = student(input_ids=padded, attention_mask=(padded != 0).long()).logits
        assert torch.allclose(a, b[:, :8], atol=1e-6)
        changed = short.clone()
        changed[0, 6] = 50  # two blocks of window 3 see 2 subwords either side
        c = student(input_ids=changed, attention_mask=torch.ones_like(changed)).logits
    differs = [not torch.allclose(a[0, i], c[0, i]) for i in range(8)]
    assert differs == [False, False, False, False, True, True, True, True]


def _build(source, teacher_folder, tmp_path, layers=None):
    from fastbioner.train.distill.config import StudentConfig
    from fastbioner.train.distill.runner import build_student
    from fastbioner.models.modeling import model_labels
    from fastbioner.models.registry import Registry

    teacher = load_token_classifier(teacher_folder)
    return teacher, build_student(StudentConfig(source=str(source), layers=layers), teacher,
                                  load_tokenizer(teacher_folder), model_labels(teacher), Registry(tmp_path / "reg"))


def test_a_tagger_already_trained_for_the_labels_keeps_its_own_head_in_the_teachers_label_order(tmp_path):
    """Refining a trained student (or a model fine-tuned on the corpus) must not throw its
    head away for the teacher's, and a run that numbered the same labels differently
    must not get its rows crossed."""
    teacher_folder = make_tiny_model(tmp_path / "t", hidden=32)
    order = ["B-Disease", "O", "I-Chemical", "I-Disease", "B-Chemical"]
    source = make_tiny_model(tmp_path / "s", labels=order, hidden=32, layers=2, seed=7)
    teacher, built = _build(source, teacher_folder, tmp_path)
    labels = [teacher.config.id2label[i] for i in range(5)]
    assert labels != order and [built.model.config.id2label[i] for i in range(5)] == labels
    assert "its own tagging head" in built.base
    own = load_token_classifier(source).eval()
    ids = torch.tensor([[2, 40, 41, 42, 3]])
    mask = torch.ones_like(ids)
    with torch.no_grad():
        theirs = own(input_ids=ids, attention_mask=mask).logits[..., [order.index(label) for label in labels]]
        ours = built.model.eval()(input_ids=ids, attention_mask=mask).logits
    assert torch.allclose(ours, theirs, atol=1e-6)
    assert not torch.equal(built.model.classifier.weight, teacher.classifier.weight)


@pytest.mark.parametrize("kind", ["base encoder", "tagger of other labels"])
def test_an_encoder_without_a_head_for_the_labels_starts_from_the_teachers_head(tmp_path, kind):
    teacher_folder = make_tiny_model(tmp_path / "t", hidden=32)
    source = (make_tiny_encoder(tmp_path / "s", hidden=32) if kind == "base encoder"
              else make_tiny_model(tmp_path / "s", labels=["O", "B-Gene", "I-Gene"], hidden=32, seed=7))
    teacher, built = _build(source, teacher_folder, tmp_path, layers=1)
    assert built.model.config.num_hidden_layers == 1 and "its own" not in built.base
    assert torch.equal(built.model.classifier.weight, teacher.classifier.weight)
    assert torch.equal(built.model.classifier.bias, teacher.classifier.bias)
