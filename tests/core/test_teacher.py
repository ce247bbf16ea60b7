"""Teacher fine-tuning as a job, on a tiny random encoder: registration and its
manifest, cancel, resume."""

from __future__ import annotations

import json

import pytest

from fastbioner.base.config import EncodingConfig, LossConfig, TeacherConfig, TrainingConfig
from fastbioner.base.errors import ModelError
from fastbioner.base.jobs import Cancelled, CancelToken, JobState
from fastbioner.models.modeling import load_token_classifier
from fastbioner.models.registry import Registry
from fastbioner.models.manifest import file_sha256
from fastbioner.train.runs import checkpoint_folder
from fastbioner.train.teacher import train_teacher
from tiny_models import make_tiny_encoder, write_documents

SENTENCES = [
    [("cocaine", "B-Chemical"), ("induced", "O"), ("heart", "B-Disease"), ("failure", "I-Disease")],
    [("lithium", "B-Chemical"), ("carbonate", "I-Chemical"), ("toxicity", "B-Disease"), ("in", "O"),
     ("rats", "O")],
    [("naloxone", "B-Chemical"), ("and", "O"), ("clonidine", "B-Chemical"), ("in", "O"),
     ("hypertension", "B-Disease")],
    [("the", "O"), ("dose", "O"), ("was", "O"), ("increased", "O")],
    [("aspirin", "B-Chemical"), ("caused", "O"), ("renal", "B-Disease"), ("failure", "I-Disease")],
    [("seizures", "B-Disease"), ("after", "O"), ("cocaine", "B-Chemical")],
]


def write_bio(path, sentences):
    path.write_text("\n\n".join("\n".join(f"{w}\t{t}" for w, t in s) for s in sentences) + "\n",
                    encoding="utf-8")
    return path


@pytest.fixture
def data(tmp_path):
    train_a = write_bio(tmp_path / "train_a.tsv", SENTENCES * 3)
    train_b = write_bio(tmp_path / "train_b.tsv", SENTENCES[:3])
    dev = write_bio(tmp_path / "dev.tsv", SENTENCES)
    return train_a, train_b, dev


@pytest.fixture(scope="module")
def encoder_folder(tmp_path_factory):
    return make_tiny_encoder(tmp_path_factory.mktemp("base") / "encoder")


def make_config(encoder_folder, files, dev, **training):
    params = dict(epochs=2, batch_size=4, learning_rate=5e-3, device="cpu", seed=7)
    params.update(training)
    return TeacherConfig(base_model=str(encoder_folder), train_files=[str(f) for f in files],
                         dev_file=str(dev), training=TrainingConfig(**params),
                         encoding=EncodingConfig(max_length=32))


def test_train_teacher_registers_a_model_with_a_full_manifest(encoder_folder, data):
    train_a, train_b, dev = data
    events = []
    result = train_teacher(make_config(encoder_folder, [train_a, train_b], dev), "teach",
                           on_event=events.append)
    assert events[-1].state is JobState.DONE
    entry = Registry().get("teach")
    m = entry.manifest
    assert m.kind == "teacher" and m.base_model == str(encoder_folder)
    assert m.labels == ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    assert (m.layers, m.width) == (2, 32) and m.parameters > 0 and m.size_bytes > 0
    # the resolved settings, with the training files by name (their checksums beside)
    expected = make_config(encoder_folder, [train_a, train_b], dev)
    expected.train_files = [train_a.name, train_b.name]
    expected.dev_file = dev.name
    assert TeacherConfig.from_dict(m.config) == expected
    assert str(train_a.parent) not in json.dumps(m.config) and "null" not in json.dumps(m.config)
    assert [(d["file"], d["role"], d["sha256"]) for d in m.training_data] == [
        (train_a.name, "train", file_sha256(train_a)), (train_b.name, "train", file_sha256(train_b)),
        (dev.name, "dev", file_sha256(dev))]
    assert set(m.metrics["per_type"]) == {"Chemical", "Disease"}
    assert m.metrics["f1"] == result.report.f1 == result.training.best_metrics["f1"]
    assert m.training["steps"] == result.training.total_steps == 2 * 6  # 21 sentences, batch 4
    assert len(m.training["epoch_seconds"]) == 2
    assert not checkpoint_folder(Registry(), "teach").exists()
    model = load_token_classifier(entry.path)
    assert model.config.id2label[3] == "B-Disease"
    with pytest.raises(ModelError, match="already exists"):
        train_teacher(make_config(encoder_folder, [train_a], dev), "teach")


@pytest.mark.parametrize("loss", ["weighted-ce", "focal"])
def test_loss_options_train(encoder_folder, data, loss):
    train_a, _, dev = data
    config = make_config(encoder_folder, [train_a], dev, epochs=1)
    config.loss = LossConfig(kind=loss)
    events = []
    train_teacher(config, f"t-{loss}", on_event=events.append)
    losses = [e.losses["loss"] for e in events if e.stage == "train" and e.losses]
    assert losses and all(l >= 0 for l in losses)
    assert Registry().get(f"t-{loss}").manifest.config["loss"]["kind"] == loss


def test_cancel_after_the_first_event_registers_nothing(encoder_folder, data):
    train_a, _, dev = data
    token = CancelToken()
    events = []

    def on_event(e):
        events.append(e)
        token.cancel()

    with pytest.raises(Cancelled):
        train_teacher(make_config(encoder_folder, [train_a], dev), "never", on_event=on_event, cancel=token)
    reg = Registry()
    assert reg.list() == [] and not (reg.root / "never").exists()
    leftovers = [p for p in reg.root.iterdir() if p.name.startswith(".staging")] if reg.root.exists() else []
    assert leftovers == []
    assert events[-1].state is JobState.CANCELLED


def test_resume_after_cancel_reaches_the_same_step_count(encoder_folder, data):
    train_a, _, dev = data
    config = make_config(encoder_folder, [train_a], dev, epochs=3)
    token = CancelToken()

    def on_event(e):
        if e.stage == "train" and e.step == 5:
            token.cancel()

    with pytest.raises(Cancelled):
        train_teacher(config, "res", on_event=on_event, cancel=token)
    assert Registry().list() == []
    with pytest.raises(ModelError, match="--resume"):
        train_teacher(config, "res")
    events = []
    result = train_teacher(config, "res", resume=True, on_event=events.append)
    first = next(e for e in events if e.stage == "train")
    assert first.step == 5 and result.training.resumed_from == 5
    assert result.training.steps == result.training.total_steps == 3 * 5  # 18 sentences, batch 4
    assert Registry().get("res").manifest.training["resumed_from"] == 5


def test_a_teacher_trained_with_document_context_reads_documents(encoder_folder, tmp_path):
    """--context document: the training file's -DOCSTART- documents give each
    sentence its neighbours; the setting is saved, devel is scored with the same
    context, the tagger takes it from the manifest; a file without documents is
    refused with a clear message."""
    from fastbioner.io.documents import Document
    from fastbioner.base.errors import InputError
    from fastbioner.infer.inference import Tagger

    conll = write_documents(tmp_path / "docs.conll", SENTENCES)
    cfg = make_config(encoder_folder, [conll], conll, epochs=1)
    cfg.encoding.context = "document"
    result = train_teacher(cfg, "ctx")
    manifest = Registry().get("ctx").manifest
    assert manifest.config["encoding"]["context"] == "document" and result.report is not None
    tagger = Tagger.load("ctx")
    assert tagger.context == "document"
    (spans,) = tagger.tag([Document("1", "Cocaine caused seizures. Naloxone reversed hypertension.")])
    assert all(0 <= s.start < s.end for s in spans)
    flat = make_config(encoder_folder, [tmp_path / "flat.tsv"], conll, epochs=1)
    write_bio(tmp_path / "flat.tsv", SENTENCES)
    flat.encoding.context = "document"
    with pytest.raises(InputError, match="DOCSTART"):
        train_teacher(flat, "flat")


def test_a_teacher_trained_with_packed_context_reads_each_document_as_one_sequence(encoder_folder, tmp_path):
    """--context packed: each -DOCSTART- document is one windowed sequence in training
    and devel scoring; the manifest records it, the tagger takes it from there and
    still answers per original sentence."""
    from fastbioner.io.documents import Document
    from fastbioner.infer.inference import Tagger, TaggerConfig

    conll = write_documents(tmp_path / "docs.conll", SENTENCES)
    cfg = make_config(encoder_folder, [conll], conll, epochs=1)
    cfg.encoding.context = "packed"
    cfg.encoding.window_overlap = 8
    result = train_teacher(cfg, "packed")
    manifest = Registry().get("packed").manifest
    assert manifest.config["encoding"]["context"] == "packed" and result.report is not None
    # 3 documents of ~30 subwords, windows of 32: a handful of windows, not 18 (one per
    # sentence), so an epoch of batches of 4 takes fewer steps than the 5 of sentence context
    assert result.training.total_steps < 5
    assert result.report.sentences == 18  # devel scored per original sentence
    tagger = Tagger.load("packed")
    assert tagger.context == "packed"
    # every document is cut into windows: the tagger cuts them as training did, unless told
    assert tagger.encoder.overlap == 8
    assert Tagger.load("packed", TaggerConfig(window_overlap=4)).encoder.overlap == 4
    # the speed record's devel F1 reads the documents as evaluate does
    from fastbioner.infer.evaluation import evaluate_model
    from fastbioner.infer.speed import devel_f1

    packed_f1 = devel_f1(Tagger.load("packed", TaggerConfig(precision="fp32")), conll)
    assert packed_f1 == pytest.approx(evaluate_model("packed", conll).f1)
    # ... and so does evaluation through a tagger's own predictor
    via_tagger = evaluate_model("packed", conll, predictor=Tagger.load("packed").word_predictor())
    assert via_tagger.f1 == pytest.approx(packed_f1)
    (spans,) = tagger.tag([Document("1", "Cocaine caused seizures. Naloxone reversed hypertension in rats.")])
    assert all(0 <= s.start < s.end for s in spans)
    words = [[w for w, _ in s] for s in SENTENCES] * 2
    keys = ["a"] * len(SENTENCES) + [None] * len(SENTENCES)
    for context in ("packed", "sentence"):
        got = Tagger.load("packed", TaggerConfig(context=context)).predict_words(words, documents=keys)
        assert [len(p.tags) for p in got] == [len(p.scores) for p in got] == [len(w) for w in words]
    from fastbioner.io.text import document_sentences
    doc = Document("2", "Lithium carbonate toxicity in rats. The dose was increased. Aspirin caused pain.")
    sentences = document_sentences(doc)
    per_sentence = tagger.tag_sentences(sentences, documents=[0] * len(sentences))
    assert len(sentences) == 3 and len(per_sentence) == 3
    assert all(sentence.start <= sp.start < sp.end <= sentence.end
               for sentence, spans in zip(sentences, per_sentence) for sp in spans)


def test_a_crf_head_teacher_trains_reloads_and_decodes_with_viterbi(encoder_folder, data, tmp_path):
    """--head crf: the encoder gets a linear head and a CRF over the words, trains on
    the sequence likelihood, reloads from its folder (safetensors, no remote code) in
    a fresh process, tags through the CRF's decoder, and a student can take its layers."""
    import os
    import subprocess
    import sys

    from fastbioner.train.distill.config import DistillConfig, StudentConfig
    from fastbioner.train.distill.methods import MethodConfig
    from fastbioner.train.distill.runner import distill
    from fastbioner.io.documents import Document
    from fastbioner.infer.inference import Tagger

    train_a, _, dev = data
    cfg = make_config(encoder_folder, [train_a], dev, epochs=2)
    cfg.head = "crf"
    result = train_teacher(cfg, "crf-teacher")
    entry = Registry().get("crf-teacher")
    assert entry.manifest.config["head"] == "crf" and result.report is not None
    tagger = Tagger.load("crf-teacher")
    assert tagger._decode is not None  # Viterbi, not the argmax
    (spans,) = tagger.tag([Document("1", "Cocaine caused seizures in rats.")])
    assert all(s.end > s.start for s in spans)
    env = {**os.environ}
    proc = subprocess.run([sys.executable, "-m", "fastbioner.cli.main", "evaluate", str(entry.path), str(dev)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    student = distill(DistillConfig(teacher="crf-teacher", student=StudentConfig(source="teacher", layers=1),
                                    method=MethodConfig(name="hinton"), train_files=[str(train_a)],
                                    training=TrainingConfig(epochs=1, batch_size=4, learning_rate=5e-3,
                                                            device="cpu")), "crf-student")
    assert student.entry.manifest.layers == 1
    small = Tagger.load("crf-student")
    assert small._decode is not None and small.model.config.encoder["num_hidden_layers"] == 1


def test_the_same_seed_gives_the_same_weights(encoder_folder, data, tmp_path):
    """Two fine-tunings with one seed end with identical weights (the new tagging head
    is initialised after the seed is set), and another seed gives other weights."""
    import torch
    from safetensors.torch import load_file

    train_a, _, dev = data
    weights = {}
    for name, seed in (("s7a", 7), ("s7b", 7), ("s8", 8)):
        train_teacher(make_config(encoder_folder, [train_a], dev, epochs=1, seed=seed), name)
        weights[name] = load_file(Registry().get(name).path / "model.safetensors")
    assert weights["s7a"].keys() == weights["s7b"].keys()
    assert all(torch.equal(weights["s7a"][k], weights["s7b"][k]) for k in weights["s7a"])
    assert any(not torch.equal(weights["s7a"][k], weights["s8"][k]) for k in weights["s7a"])
