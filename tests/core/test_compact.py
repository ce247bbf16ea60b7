"""Trimming the vocabulary and halving the weights must not change what the model
sees or predicts on text from the corpus it was trimmed for."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForTokenClassification, AutoTokenizer

from fastbioner.models.compact import compact_model
from fastbioner.base.errors import ModelError
from fastbioner.base.jobs import CancelToken, Cancelled
from tiny_models import make_tiny_model

CORPUS = ["Cocaine induced seizures in rats.", "Lithium carbonate toxicity and renal failure.",
          "Naloxone reversed the effect of clonidine on blood pressure."]


def _logits(folder, text, dtype=torch.float32):
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForTokenClassification.from_pretrained(folder, dtype=dtype).eval()
    enc = tok(text, return_tensors="pt")
    with torch.inference_mode():
        return tok.convert_ids_to_tokens(enc["input_ids"][0]), model(**enc).logits.float()


def test_trimmed_model_tokenizes_and_predicts_as_before(tmp_path):
    src = make_tiny_model(tmp_path / "src")
    report = compact_model(src, tmp_path / "small", CORPUS)
    assert report.vocab_after < report.vocab_before
    assert report.changed_segmentations == 0
    assert report.bytes_after < report.bytes_before
    for text in CORPUS:
        pieces_a, logits_a = _logits(src, text)
        pieces_b, logits_b = _logits(tmp_path / "small", text)
        assert pieces_a == pieces_b
        # fp16 storage: same predictions, logits equal to half-precision rounding.
        assert torch.equal(logits_a.argmax(-1), logits_b.argmax(-1))
        assert torch.allclose(logits_a, logits_b, atol=2e-2)


def test_unseen_words_still_tokenize_without_unk(tmp_path):
    src = make_tiny_model(tmp_path / "src")
    compact_model(src, tmp_path / "small", CORPUS)
    tok = AutoTokenizer.from_pretrained(tmp_path / "small")
    pieces = tok.tokenize("ibuprofen hepatitis")  # in the vocabulary, not in the corpus
    assert "[UNK]" not in pieces
    assert "".join(p.removeprefix("##") for p in pieces) == "ibuprofenhepatitis"


def test_refuses_existing_destination_and_leaves_nothing_on_cancel(tmp_path):
    src = make_tiny_model(tmp_path / "src")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "model.safetensors").write_bytes(b"someone else's")
    with pytest.raises(ModelError):
        compact_model(src, tmp_path / "taken", CORPUS)
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        compact_model(src, tmp_path / "small", CORPUS, cancel=token)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src", "taken"]


def test_cli_compact_registers_a_smaller_model_with_its_provenance(tmp_path, capsys):
    from fastbioner.cli.main import main
    from fastbioner.models.registry import Registry

    registry = Registry()
    registry.import_folder(make_tiny_model(tmp_path / "src"), name="tiny")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(CORPUS) + "\n", encoding="utf-8")
    assert main(["compact", "tiny", "--corpus", str(corpus), "--name", "tiny-small", "--quiet"]) == 0
    small = registry.get("tiny-small")
    assert small.manifest.compression["compacted_from"] == "tiny"
    vocab = small.manifest.compression["vocabulary"]
    assert vocab["vocab_after"] < vocab["vocab_before"]
    assert small.manifest.size_bytes < registry.get("tiny").manifest.size_bytes
    assert any(d["role"] == "vocabulary" for d in small.manifest.training_data)
    assert "registered tiny-small" in capsys.readouterr().out


def test_compaction_and_corpus_stats_end_with_a_final_event(tmp_path):
    """Every long operation follows the job protocol: its last event says how it
    ended (the app's jobs panel and the CLI's bar close on it)."""
    from fastbioner.io.corpus_stats import corpus_stats
    from fastbioner.io.documents import Document
    from fastbioner.base.jobs import Cancelled, CancelToken, JobState

    src = make_tiny_model(tmp_path / "m")
    events = []
    compact_model(src, tmp_path / "small", CORPUS, on_event=events.append)
    assert events[-1].state is JobState.DONE and all(e.state is JobState.RUNNING for e in events[:-1])
    events = []
    corpus_stats([Document(str(i), "Cocaine caused seizures.") for i in range(3)], on_event=events.append)
    assert events[-1].state is JobState.DONE
    token = CancelToken()
    token.cancel()
    events = []
    with pytest.raises(Cancelled):
        corpus_stats([Document("1", "x")], on_event=events.append, cancel=token)
    assert events[-1].state is JobState.CANCELLED


def _conv_student(tmp_path, width=8):
    """A tiny convolutional student over a tiny model's embeddings (16 wide), its CRF
    and scores made non-trivial."""
    from fastbioner.train.distill.students import convolutional_student
    from fastbioner.models.modeling import load_token_classifier, load_tokenizer, save_model

    teacher_folder = make_tiny_model(tmp_path / "t")
    student = convolutional_student(load_token_classifier(teacher_folder), width=width, layers=2).eval()
    torch.manual_seed(0)
    with torch.no_grad():
        student.crf.transitions.normal_()
        student.net.project.bias.normal_()
    return save_model(student, load_tokenizer(teacher_folder), tmp_path / "cnn")


def _light_logits(folder, text):
    from fastbioner.models.light.small import load_conv_classifier
    from fastbioner.models.loading import token_logits

    tok = AutoTokenizer.from_pretrained(folder)
    enc = tok(text, return_tensors="pt")
    with torch.inference_mode():
        return token_logits(load_conv_classifier(folder), enc["input_ids"], enc["attention_mask"])


def test_convolutional_student_keeps_its_whole_vocabulary_in_int8(tmp_path):
    """The whole vocabulary survives (unseen words read as in training); the projection
    folds into the table and the table is stored in int8, and both engines score as the
    original did, to int8 rounding."""
    import json

    from safetensors.torch import load_file

    src = _conv_student(tmp_path)
    report = compact_model(src, tmp_path / "small", None, int8_embeddings=True)
    assert report.vocabulary_kept and report.vocab_after == report.vocab_before
    assert report.projection_folded and report.embedding_storage == "int8"
    config = json.loads((tmp_path / "small" / "config.json").read_text())
    assert config["project_embeddings"] is False and config["embedding_size"] == 8
    state = load_file(str(tmp_path / "small" / "model.safetensors"))
    assert state["net.embeddings.weight"].dtype == torch.int8
    assert state["net.embeddings.weight"].shape == (report.vocab_before, 8)
    assert "net.project.weight" not in state
    for text in [*CORPUS, "ibuprofen hepatitis"]:
        pieces_a, logits_a = _logits(src, text)
        pieces_b, logits_b = _logits(tmp_path / "small", text)
        assert pieces_a == pieces_b
        assert torch.allclose(logits_a, logits_b, atol=5e-2)
        assert torch.allclose(_light_logits(tmp_path / "small", text), logits_b, atol=1e-5)


def test_folding_the_projection_is_exact_and_int8_is_refused_for_transformers(tmp_path):
    src = _conv_student(tmp_path)
    report = compact_model(src, tmp_path / "folded", CORPUS, dtype=torch.float32)
    assert report.projection_folded and report.embedding_storage == "float"
    for text in CORPUS:
        assert torch.allclose(_logits(src, text)[1], _logits(tmp_path / "folded", text)[1], atol=1e-5)
    with pytest.raises(ModelError, match="convolutional student only"):
        compact_model(make_tiny_model(tmp_path / "bert"), tmp_path / "no", None, int8_embeddings=True)
    assert not (tmp_path / "no").exists()


def test_cli_compact_keeps_the_vocabulary_of_a_convolutional_student(tmp_path, capsys):
    from fastbioner.cli.main import main
    from fastbioner.models.registry import Registry

    registry = Registry()
    registry.import_folder(_conv_student(tmp_path), name="cnn")
    assert main(["compact", "cnn", "--keep-vocabulary", "--int8-embeddings", "--name", "cnn-small",
                 "--quiet"]) == 0
    small = registry.get("cnn-small")
    vocab = small.manifest.compression["vocabulary"]
    assert vocab["vocabulary_kept"] and vocab["embedding_storage"] == "int8"
    assert "embedding table in int8" in capsys.readouterr().out


@pytest.mark.parametrize("content", [bytes(range(256)) * 8, b'{"model": "WordPiece"}',
                                     b'{"model": {"type": "WordPiece", "vocab": {"a": "zero"}}}', b"[1, 2]"])
def test_a_tokenizer_file_that_is_not_a_wordpiece_tokenizer_is_one_line(tmp_path, capsys, content):
    """Random bytes or a wrong shape in tokenizer.json (a folder given to compact by
    path) are refused naming the folder or the file, nothing written, no traceback."""
    from fastbioner.cli.main import main

    src = make_tiny_model(tmp_path / "src")
    (src / "tokenizer.json").write_bytes(content)
    with pytest.raises(ModelError, match="tokenizer"):
        compact_model(src, tmp_path / "small", CORPUS)
    assert not (tmp_path / "small").exists()
    assert main(["compact", str(src), "--keep-vocabulary", "--name", "small", "--quiet"]) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "tokenizer" in err


def test_compact_checks_the_folder_before_reading_weights(tmp_path):
    """A truncated model.safetensors is refused by the one folder check, naming it."""
    src = make_tiny_model(tmp_path / "src")
    weights = src / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    with pytest.raises(ModelError, match="model.safetensors"):
        compact_model(src, tmp_path / "small", None)
