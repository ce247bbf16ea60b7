"""Students with another tokenizer: the same wordpieces under other ids pass the
per-batch subword check (and learn word-level soft labels); other wordpieces fail
it with a clear message."""

import pytest
import torch
from transformers import BertConfig, BertModel, BertTokenizerFast

from fastbioner.train.distill.alignment import SubwordAligner, same_vocabulary
from fastbioner.train.distill.data import PairedBatches, encode
from fastbioner.train.distill.methods import MethodConfig
from fastbioner.train.distill.objective import DistillationObjective, ObjectiveParts
from fastbioner.train.distill.students import projection_for, truncate_layers, uniform_layer_map
from fastbioner.train.distill.teacher_cache import LiveTeacher, teacher_needs
from fastbioner.models.encoding import WordEncoder
from fastbioner.base.errors import FastBioNERError
from fastbioner.models.losses import CrossEntropy
from fastbioner.models.modeling import load_token_classifier, load_tokenizer, model_labels
from tests.tiny_models import _vocab, make_tiny_model

SENTENCES = [(["naloxone", "reverses", "hypertension"], ["B-Chemical", "O", "B-Disease"]),
             (["lithium", "carbonate", "toxicity"], ["B-Chemical", "I-Chemical", "B-Disease"])]


def encoder_with_vocab(folder, vocab, hidden=16, layers=2):
    """A tiny BERT encoder whose tokenizer has exactly ``vocab``."""
    folder.mkdir(parents=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tok = BertTokenizerFast(vocab=str(folder / "vocab.txt"), do_lower_case=True, model_max_length=64)
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(vocab), hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
              ).save_pretrained(folder)
    return folder


@pytest.fixture
def teacher(tmp_path):
    folder = make_tiny_model(tmp_path / "teacher", layers=4)
    return load_token_classifier(folder).eval(), load_tokenizer(folder)


def shifted_vocab():
    """Same wordpieces, every id moved by 4 (as MPNet's ids are MiniLM's + 4)."""
    return ["<s>", "<pad>", "</s>", "<unk>"] + _vocab()


def other_vocab():
    """Without 'naloxone' and 'hypertension': they split into other pieces."""
    return [t for t in _vocab() if t not in ("naloxone", "hypertension")]


def batches_for(teacher_tok, student_tok, labels):
    data = encode(WordEncoder(teacher_tok, labels), WordEncoder(student_tok, labels), SENTENCES)
    return list(PairedBatches(data, 2).epoch(0))


def test_same_wordpieces_under_other_ids_pass_the_check(tmp_path, teacher):
    t_model, t_tok = teacher
    s_tok = load_tokenizer(encoder_with_vocab(tmp_path / "s", shifted_vocab()))
    assert not same_vocabulary(t_tok, s_tok)
    (batch,) = batches_for(t_tok, s_tok, model_labels(t_model))
    assert not torch.equal(batch.teacher.input_ids, batch.student.input_ids)
    SubwordAligner(t_tok, s_tok).check(batch.teacher, batch.student)  # no error


def test_other_wordpieces_fail_the_check_naming_the_sentence(tmp_path, teacher):
    t_model, t_tok = teacher
    s_tok = load_tokenizer(encoder_with_vocab(tmp_path / "s", other_vocab()))
    (batch,) = batches_for(t_tok, s_tok, model_labels(t_model))
    with pytest.raises(FastBioNERError, match=r"training sequence 1 \(a sentence, or a whole document with "
                       r"--context packed\) .*other subwords.*--method hinton.*hidden,attention"):
        SubwordAligner(t_tok, s_tok).check(batch.teacher, batch.student)


def _objective(t_model, student, method, aligner):
    mapping = uniform_layer_map(t_model.config.num_hidden_layers, student.config.num_hidden_layers)
    m = MethodConfig(name=method).to_method()
    needs = teacher_needs(m, mapping, student, t_model, "scores")
    parts = ObjectiveParts(projection_for(student, t_model), None)
    return DistillationObjective(student, m, LiveTeacher(t_model, needs), mapping, CrossEntropy(), parts,
                                 aligner=aligner)


def test_token_level_terms_fail_clearly_on_other_wordpieces_but_soft_labels_work(tmp_path, teacher):
    t_model, t_tok = teacher
    labels = model_labels(t_model)
    folder = encoder_with_vocab(tmp_path / "s", other_vocab())
    student = load_token_classifier(folder, labels=labels)
    s_tok = load_tokenizer(folder)
    (batch,) = batches_for(t_tok, s_tok, labels)
    aligner = SubwordAligner(t_tok, s_tok)
    for method in ("fastbioner", "pkd"):  # pkd: the default of a convolutional student too
        with pytest.raises(FastBioNERError, match="other subwords.*hidden-norm"):
            _objective(t_model, student, method, aligner)(batch, 0, 10)
    # Word-level soft labels need only the same words.
    loss, terms = _objective(t_model, student, "hinton", aligner)(batch, 0, 10)
    assert terms["soft"] > 0 and torch.isfinite(loss)
    loss.backward()
    assert student.classifier.weight.grad is not None


def _narrower_student_objective(tmp_path, teacher, method):
    """A 2-layer student 16 wide (the teacher: 32) with the same wordpieces under
    shifted ids, its objective under ``method`` and one batch."""
    t_model, t_tok = teacher
    labels = model_labels(t_model)
    folder = encoder_with_vocab(tmp_path / "s", shifted_vocab(), hidden=16, layers=3)
    student = truncate_layers(load_token_classifier(folder, labels=labels), 2)
    s_tok = load_tokenizer(folder)
    (batch,) = batches_for(t_tok, s_tok, labels)
    return _objective(t_model, student, method, SubwordAligner(t_tok, s_tok)), batch


def test_narrower_student_with_shifted_ids_learns_every_term(tmp_path, teacher):
    objective, batch = _narrower_student_objective(tmp_path, teacher, "fastbioner")
    assert objective.parts.hidden_projection.in_features == 16  # W_h: 16 -> 32
    loss, terms = objective(batch, 0, 10)
    assert set(terms) == {"soft", "gold", "hidden", "attention", "loss", "phi"}
    loss.backward()
    assert objective.parts.hidden_projection.weight.grad is not None


@pytest.mark.shared_data
def test_minilm_and_mpnet_cut_bc5cdr_into_the_same_subwords(shared_data):
    """The pairing the distillation issue relies on: an all-MiniLM-L6-v2 student under
    an all-mpnet-base-v2 teacher sees the same subwords under other ids."""
    from pathlib import Path

    from fastbioner.io.formats.conll import read_tagged_sentences

    bases = Path.home() / ".cache" / "fastbioner" / "base-models"
    mpnet, minilm = bases / "all-mpnet-base-v2", bases / "all-MiniLM-L6-v2"
    if not (mpnet.is_dir() and minilm.is_dir()):
        pytest.skip("base encoders not installed (../tools/base-models)")
    sentences = read_tagged_sentences(shared_data / "bc5cdr" / "iob" / "train.tsv")[:300]
    labels = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    t_tok, s_tok = load_tokenizer(mpnet), load_tokenizer(minilm)
    data = encode(WordEncoder(t_tok, labels), WordEncoder(s_tok, labels),
                  [(s.words, s.tags) for s in sentences])
    aligner = SubwordAligner(t_tok, s_tok)
    for batch in PairedBatches(data, 32).epoch(0):
        assert not torch.equal(batch.teacher.input_ids, batch.student.input_ids)
        aligner.check(batch.teacher, batch.student)


def test_narrower_student_under_pkd_matches_normalised_hidden_states_through_w_h(tmp_path, teacher):
    """The pkd-style objective for a student of another width (the MiniLM student of
    an MPNet teacher): the normalised hidden-state distance goes through W_h, every
    mapped layer pair counts, and W_h learns from it."""
    objective, batch = _narrower_student_objective(tmp_path, teacher, "pkd")
    assert objective.parts.hidden_projection.in_features == 16  # W_h: 16 -> 32
    loss, terms = objective(batch, 0, 10)
    assert set(terms) == {"soft", "gold", "hidden-norm", "loss", "phi"}
    # 2 - 2 cos per mapped layer: between 0 and 4 for each of the student's 2 layers.
    assert 0 < terms["hidden-norm"] <= 4 * 2
    loss.backward()
    assert objective.parts.hidden_projection.weight.grad is not None
    assert objective.parts.hidden_projection.weight.grad.abs().sum() > 0
    # Scaling W_h's output changes nothing: the term compares directions only.
    with torch.no_grad():
        objective.parts.hidden_projection.weight.mul_(3.0)
        objective.parts.hidden_projection.bias.mul_(3.0)
    _, scaled = objective(batch, 0, 10)
    assert scaled["hidden-norm"] == pytest.approx(terms["hidden-norm"], rel=1e-4)
