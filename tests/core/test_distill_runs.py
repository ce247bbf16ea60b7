"""Distillation end to end on tiny random models: every method runs and lowers its
loss, cancel registers nothing, resume finishes the run, unlabelled text takes part
(the teacher cache's own runs: test_teacher_cache_runs.py)."""

import math

import pytest
import torch

from fastbioner.train.distill.config import StudentConfig
from fastbioner.train.distill.methods import METHOD_NAMES, MethodConfig
from fastbioner.train.distill.runner import distill
from fastbioner.base.errors import FastBioNERError
from fastbioner.base.jobs import Cancelled, CancelToken, JobState
from fastbioner.models.modeling import load_token_classifier
from tests.core.distill_setup import SENTENCES, config, fresh_registry, registry_leftovers
from tests.tiny_models import make_tiny_model, write_documents

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_every_method_runs_end_to_end_and_lowers_its_loss(trained, tmp_path, method):
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    events = []
    student = StudentConfig(source="bigru", rnn_hidden=16) if method == "mse-prob" else None
    kw = {"student": student} if student else {}
    result = distill(config(bio, method, epochs=4, dev=False, **kw), f"s-{method}", registry=registry,
                     on_event=events.append)
    logged = {k for e in events if e.stage == "distill" for k in e.losses}
    expected = {t.name for t in MethodConfig(name=method).to_method().terms} | {"loss", "phi"}
    assert logged == expected
    assert events[-1].state is JobState.DONE
    m = result.entry.manifest
    assert m.kind == "student" and m.parent == "tiny-teacher" and m.method == method
    assert m.compression["student_parameters"] < m.compression["teacher_parameters"]
    assert registry.get(f"s-{method}").manifest.layers in (2, 1)
    # The objective, re-evaluated on all training batches at the weights of step 0,
    # is lower after training than before it.
    before, after = result_objective(trained, registry, method, student)
    assert after < before, (method, before, after)


def result_objective(trained, registry, method, student_cfg):
    """Loss of the method's objective (weights of step 0) over every batch, for the
    untrained student and the registered one."""
    from fastbioner.train.distill import runner
    from fastbioner.train.distill.data import PairedBatches, encode
    from fastbioner.train.distill.objective import DistillationObjective, ObjectiveParts
    from fastbioner.train.distill.teacher_cache import LiveTeacher, teacher_needs
    from fastbioner.models.architectures.recurrent import RecurrentTagger
    from fastbioner.models.encoding import WordEncoder
    from fastbioner.models.losses import CrossEntropy
    from fastbioner.models.modeling import load_tokenizer, model_labels
    from fastbioner.train.distill.students import freeze

    _, bio = trained
    t_entry = registry.get("tiny-teacher")
    teacher = freeze(load_token_classifier(t_entry.path))
    tok = load_tokenizer(t_entry.path)
    labels = model_labels(teacher)
    scfg = student_cfg or StudentConfig(source="teacher", layers=2)
    built = runner.build_student(scfg, teacher, tok, labels, registry)
    method_obj = runner.usable_method(MethodConfig(name=method).to_method(), built, [])
    sents = [([w for w, _ in s], [t for _, t in s]) for s in SENTENCES]
    data = encode(WordEncoder(tok, labels), None, sents)
    totals = []
    trained_model = load_token_classifier(registry.get(f"s-{method}").path)
    for model in (built.model, trained_model):
        model.eval()
        b = runner.BuiltStudent(model, tok, built.mapping, "")
        needs = teacher_needs(method_obj, b.mapping, model, teacher, "scores")
        gold = model.gold_loss if isinstance(model, RecurrentTagger) and model.crf else CrossEntropy()
        obj = DistillationObjective(model, method_obj, LiveTeacher(teacher, needs), b.mapping, gold,
                                    ObjectiveParts())
        with torch.no_grad():
            totals.append(sum(float(obj(batch, 0, 10)[0]) for batch in PairedBatches(data, 5).epoch(0)))
    return totals


@pytest.mark.parametrize("stage", ["teacher-cache", "distill", "save"])
def test_cancel_leaves_nothing_registered(trained, tmp_path, stage):
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    token = CancelToken()
    events = []

    def on_event(e):
        events.append(e)
        if e.stage == stage:
            token.cancel()

    with pytest.raises(Cancelled):
        distill(config(bio, teacher_cache="disk"), "s", registry=registry, on_event=on_event, cancel=token)
    assert events[-1].state is JobState.CANCELLED
    assert [e.name for e in registry.list()] == ["tiny-teacher"]
    assert registry_leftovers(registry) == []  # no staging folder, no disk cache


def test_resume_after_cancel_finishes_with_the_planned_steps(trained, tmp_path):
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    token = CancelToken()

    def cancel_at_step_4(e):
        if e.stage == "distill" and e.step >= 4:
            token.cancel()

    cfg = config(bio, epochs=3, dev=False)
    with pytest.raises(Cancelled):
        distill(cfg, "s", registry=registry, on_event=cancel_at_step_4, cancel=token)
    with pytest.raises(FastBioNERError, match="--resume"):
        distill(cfg, "s", registry=registry)
    result = distill(cfg, "s", registry=registry, resume=True)
    assert result.training.resumed_from == 4
    assert result.training.steps == result.training.total_steps == 9  # 15 sentences / 5 x 3 epochs


def test_registered_student_records_devel_scores_and_compression(trained, tmp_path):
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    result = distill(config(bio, epochs=2), "s", registry=registry)
    m = registry.get("s").manifest
    assert set(m.metrics["per_type"]) == {"Chemical", "Disease"}
    assert m.metrics["f1"] == result.report.f1
    c = m.compression
    assert c["teacher"] == "tiny-teacher" and 0 < c["parameter_ratio"] < 1
    assert c["student_size_bytes"] < c["teacher_size_bytes"]
    assert m.training["layer_map"] == [2, 4]
    assert m.config["method"]["name"] == "fastbioner" and m.config["student"]["layers"] == 2
    student = load_token_classifier(registry.get("s").path)
    assert student.config.num_hidden_layers == 2


def test_a_convolutional_student_from_another_models_embeddings_learns_and_tags_on_the_light_engine(
        trained, tmp_path, monkeypatch, capsys):
    """``--student-from cnn --student-embeddings MODEL``: the student starts from that
    model's wordpiece embeddings and keeps its tokenizer; it learns from the teacher's
    soft labels and the gold labels, is registered with its shape in the manifest,
    and tags through the light engine (no transformers) as the tagger loads it."""
    from fastbioner.cli.main import main
    from fastbioner.infer.inference import Tagger, TaggerConfig
    from fastbioner.models.architectures.convolutional import ConvTagger

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    other = make_tiny_model(tmp_path / "other", hidden=24, seed=9)  # another width, the same wordpieces
    monkeypatch.setenv("FASTBIONER_HOME", str(registry.root.parent))
    (registry.root.parent / "models").symlink_to(registry.root)
    code = main(["distill", "--teacher", "tiny-teacher", "--train", str(bio), "--dev", str(bio),
                 "--student-from", "cnn", "--student-embeddings", str(other), "--conv-width", "16",
                 "--conv-layers", "2", "--method", "hinton", "--temperature", "2", "--epochs", "40",
                 "--batch-size", "5", "--name", "cnn-student", "--quiet"])
    out = capsys.readouterr()
    assert code == 0, out.err
    entry = registry.get("cnn-student")
    cfg = entry.manifest.config
    assert cfg["student"]["source"] == "cnn" and cfg["student"]["embeddings"] == str(other)
    assert cfg["training"]["learning_rate"] == 1e-3  # a student trained from scratch starts higher
    model = load_token_classifier(entry.path)
    assert isinstance(model, ConvTagger) and model.config.embedding_size == 24
    assert model.config.hidden_size == 16 and model.config.num_hidden_layers == 2
    assert entry.manifest.metrics["f1"] > 0.8, entry.manifest.metrics  # it learned the tiny corpus
    tagger = Tagger.load(entry.path, TaggerConfig(precision="fp32", threads=1))
    assert type(tagger.model).__name__ == "ConvTokenClassifier"
    words = [[w for w, _ in s] for s in SENTENCES]
    assert [p.tags for p in tagger.predict_words(words)] == \
        [p.tags for p in Tagger.load(entry.path, TaggerConfig(precision="fp32", threads=1,
                                                                engine="transformers")).predict_words(words)]


def test_distillation_with_packed_context_runs_end_to_end(trained, tmp_path):
    """--context packed: each -DOCSTART- document of the training file is one windowed
    sequence for teacher, student and a second teacher's soft labels; each unlabelled
    document (here a paragraph of one sentence) is a sequence of its own; devel is scored per original sentence; the
    student's manifest (and so its tagger) keeps the setting."""
    from fastbioner.infer.inference import Tagger

    registry = fresh_registry(trained, tmp_path)
    docs = write_documents(tmp_path / "docs.conll", SENTENCES)
    text = tmp_path / "abstracts.txt"
    text.write_text("Lithium induced renal failure in rats.\n\nNaloxone reverses hypertension.\n",
                    encoding="utf-8")
    cfg = config(docs, epochs=2, unlabeled_files=[str(text)], extra_teachers=["tiny-teacher"])
    cfg.encoding.context = "packed"
    result = distill(cfg, "s-packed", registry=registry)
    # 3 documents (one window each) + 2 unlabelled sentences: one batch of 5 per epoch,
    # where sentence context makes 17 windows, 4 batches
    assert result.training.total_steps == 2
    assert any("2 teachers" in n for n in result.notes)
    assert result.report.sentences == 15 and set(result.report.per_type) == {"Chemical", "Disease"}
    m = registry.get("s-packed").manifest
    assert m.config["encoding"]["context"] == "packed"
    tagger = Tagger.load(registry.get("s-packed").path)
    assert tagger.context == "packed"
    words = [[w for w, _ in s] for s in SENTENCES]
    got = tagger.predict_words(words, documents=["d"] * len(words))
    assert [len(p.tags) for p in got] == [len(w) for w in words]


def test_unlabelled_text_takes_part_with_confidence_weights(trained, tmp_path):
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    text = tmp_path / "abstracts.txt"
    text.write_text("Lithium induced renal failure in rats.\n\nNaloxone reverses hypertension.\n",
                    encoding="utf-8")
    result = distill(config(bio, epochs=1, dev=False, unlabeled_files=[str(text)]), "s", registry=registry)
    assert any("2 unlabelled sentences" in n for n in result.notes)
    assert result.training.total_steps == 4  # 15 labelled + 2 unlabelled sentences, batches of 5


def test_mention_replaced_copies_train_with_the_labelled_text_and_the_manifest_says_so(trained, tmp_path):
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    result = distill(config(bio, epochs=1, dev=False, mention_copies=1, mention_rate=1.0), "s", registry=registry)
    # every one of the 15 sentences names something: 15 copies, 30 sentences in batches of 5
    assert result.training.total_steps == 6
    assert any("15 mention-replaced training sentences" in n for n in result.notes)
    saved = registry.get("s").manifest.config
    assert (saved["mention_copies"], saved["mention_rate"]) == (1, 1.0)


def test_a_convolutional_student_over_other_subwords_stops_at_once_saying_to_take_hinton(trained, tmp_path,
                                                                                        monkeypatch, capsys):
    """pkd is a convolutional student's default; over the embeddings of an encoder that
    cuts words into other subwords than the teacher's, its hidden term cannot compare
    them: the run stops with one line naming the way out, and registers nothing."""
    from transformers import BertConfig, BertForTokenClassification, BertTokenizerFast

    from fastbioner.cli.main import main
    from tests.core.test_distill_alignment import other_vocab

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    other = tmp_path / "other"  # a tagger whose wordpieces lack "naloxone" and "hypertension"
    other.mkdir()
    (other / "vocab.txt").write_text("\n".join(other_vocab()) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab=str(other / "vocab.txt"), do_lower_case=True, model_max_length=64).save_pretrained(other)
    labels = registry.get("tiny-teacher").manifest.labels
    BertForTokenClassification(BertConfig(
        vocab_size=len(other_vocab()), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64, id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)})).save_pretrained(other)
    monkeypatch.setenv("FASTBIONER_HOME", str(registry.root.parent))
    (registry.root.parent / "models").symlink_to(registry.root)
    args = ["distill", "--teacher", "tiny-teacher", "--train", str(bio), "--student-from", "cnn",
            "--student-embeddings", str(other), "--conv-width", "16", "--conv-layers", "2", "--epochs", "1",
            "--batch-size", "5", "--quiet"]
    assert main([*args, "--name", "by-default"]) != 0
    err = capsys.readouterr().err
    assert "other subwords" in err and "--method hinton" in err and "Traceback" not in err
    assert "by-default" not in [e.name for e in registry.list()]
    assert main([*args, "--name", "by-hinton", "--method", "hinton"]) == 0
    assert registry.get("by-hinton").manifest.method == "hinton"


@pytest.mark.parametrize("method", ["pkd", "fastbioner-cal"])
def test_unlabelled_text_trains_the_matching_terms_too(trained, tmp_path, method):
    """A method that matches hidden states (pkd's normalised distance, FastBioNER's
    hidden and attention MSE) learns them from the unlabelled sentences as well, from
    the shared teacher cache a queue of such runs reads: the hidden-state term logged
    at every step, every term finite, the cache kept."""
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    text = tmp_path / "abstracts.txt"
    text.write_text("Lithium induced renal failure in rats.\n\nNaloxone reverses hypertension.\n",
                    encoding="utf-8")
    cfg = config(bio, method, epochs=1, dev=False, unlabeled_files=[str(text)], teacher_cache="shared")
    events = []
    result = distill(cfg, "s", registry=registry, on_event=events.append)
    assert any("2 unlabelled sentences" in n for n in result.notes)
    hidden = "hidden-norm" if method == "pkd" else "hidden"
    assert hidden in result.entry.manifest.training["terms"]
    steps = [e.losses for e in events if e.stage == "distill" and e.losses]
    assert steps and all(hidden in losses for losses in steps)
    assert all(math.isfinite(v) for losses in steps for v in losses.values())
    assert registry_leftovers(registry) == [".teacher-cache-shared"]  # kept for the next run


def test_a_folder_of_unlabelled_files_takes_part_file_by_file(trained, tmp_path):
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    folder = tmp_path / "pubmed"
    (folder / "more").mkdir(parents=True)
    (folder / "a.txt").write_text("Lithium induced renal failure in rats.\n", encoding="utf-8")
    (folder / "more" / "b.txt").write_text("Naloxone reverses hypertension.\n\nCocaine dose.\n",
                                           encoding="utf-8")
    (folder / ".hidden.txt").write_text("Never read.\n", encoding="utf-8")
    result = distill(config(bio, epochs=1, dev=False, unlabeled_files=[str(folder)]), "s", registry=registry)
    assert any("3 unlabelled sentences" in n for n in result.notes)
    records = [r for r in registry.get("s").manifest.training_data if r["role"] == "unlabeled"]
    assert sorted(r["file"] for r in records) == ["a.txt", "b.txt"]  # each file, with its checksum
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FastBioNERError, match="no sentences") as err:
        distill(config(bio, epochs=1, dev=False, unlabeled_files=[str(empty)]), "t", registry=registry)
    assert "empty" in str(err.value)


def test_cli_distills_and_prints_the_scores(trained, tmp_path, monkeypatch, capsys):
    from fastbioner.cli.main import main

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    monkeypatch.setenv("FASTBIONER_HOME", str(registry.root.parent))
    (registry.root.parent / "models").symlink_to(registry.root)
    code = main(["distill", "--teacher", "tiny-teacher", "--train", str(bio), "--dev", str(bio),
                 "--layers", "2", "--student-from", "teacher", "--method", "fastbioner", "--b", "0.5",
                 "--temperature", "2", "--epochs", "1", "--batch-size", "5", "--name", "cli-student",
                 "--quiet"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "registered cli-student" in out.out and "Chemical" in out.out and "smaller" in out.out
    method = registry.get("cli-student").manifest.config["method"]
    assert method["b"] == 0.5 and method["temperature"] == 2.0
    code = main(["distill", "--teacher", "no-such-teacher", "--train", str(bio), "--name", "x", "--quiet"])
    assert code == 2 and "no-such-teacher" in capsys.readouterr().err


def test_a_cpu_bf16_run_selects_on_bf16_scorings_and_reports_an_fp32_scoring(trained, tmp_path, monkeypatch):
    """--cpu-bf16: the devel scorings during training (which pick the weights) run under
    bf16 autocast; the figures registered come from scoring the picked weights in fp32."""
    from fastbioner.train import runs

    monkeypatch.setattr("fastbioner.train.training.cpu_has_bf16", lambda: True)  # emulated where not native
    calls = []
    real = runs.score_devel

    def spy(*args, bf16=False, **kw):
        report = real(*args, bf16=bf16, **kw)
        calls.append((bf16, report.f1))
        return report

    monkeypatch.setattr(runs, "score_devel", spy)
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    result = distill(config(bio, epochs=2, t={"cpu_bf16": True}), "s", registry=registry)
    assert [c[0] for c in calls] == [True, True, False]  # one scoring an epoch, then the report's
    m = registry.get("s").manifest
    assert m.metrics["f1"] == result.report.f1 == calls[-1][1]
    assert m.config["training"]["cpu_bf16"] is True


def test_a_run_that_diverged_says_so_in_its_notes_and_manifest(trained, tmp_path, monkeypatch):
    """A student whose devel F1 collapsed mid-run (a learning rate too high for its
    depth) keeps its best weights, and the run tells the user what happened and what
    to change, in the notes the CLI prints and the app shows, and in the manifest."""
    from fastbioner.train.distill import runner
    from fastbioner.train.training import diverged_at

    assert diverged_at([{"step": 3, "f1": 0.7}, {"step": 6, "f1": 0.02}, {"step": 9, "f1": 0.6}]) == 6
    assert diverged_at([{"step": 3, "f1": 0.05}, {"step": 6, "f1": 0.02}]) is None  # never learnt: not this
    seen = []

    def collapsed(history, metric="f1"):
        seen.append(list(history))
        return 6

    monkeypatch.setattr(runner, "diverged_at", collapsed)
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    result = distill(config(bio, epochs=2), "s", registry=registry)
    assert seen and seen[0] == result.training.history  # judged on the run's own devel scorings
    note = next(n for n in result.notes if "diverged" in n)
    assert "step 6" in note and "lower learning rate" in note
    assert note in registry.get("s").manifest.to_dict()["training"]["notes"]


def test_the_cli_and_the_guided_path_follow_one_compaction_rule(trained, tmp_path, monkeypatch, capsys):
    """The defaults table says whether a distillation compacts its student; `fastbioner
    distill` and the app's guided path (fine_tune_then_distill with compact=None) read
    the same rule, and --compact / --no-compact override it."""
    from dataclasses import replace

    from fastbioner.base import defaults as defaults_table
    from fastbioner.cli.main import main
    from fastbioner.train.guided import compact_by_default

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    monkeypatch.setenv("FASTBIONER_HOME", str(registry.root.parent))
    (registry.root.parent / "models").symlink_to(registry.root)
    base = ["distill", "--teacher", "tiny-teacher", "--train", str(bio), "--dev", str(bio), "--layers", "2",
            "--method", "hinton", "--epochs", "1", "--batch-size", "5", "--quiet"]
    real = defaults_table.table()
    for says in (False, True):
        monkeypatch.setattr(defaults_table, "table", lambda says=says: replace(real, compact_after_distillation=says))
        assert compact_by_default() is says
        assert main([*base, "--name", f"rule-{says}"]) == 0, capsys.readouterr().err
        assert ("compacted" in registry.get(f"rule-{says}").manifest.compression) is says
    out = capsys.readouterr().out
    assert "compacted rule-True: weights in float16" in out and "compacted rule-False" not in out
    full, compacted = registry.get("rule-False").manifest, registry.get("rule-True").manifest
    assert compacted.size_bytes < full.size_bytes  # float16 and the trimmed vocabulary
    assert compacted.metrics  # the compacted weights were scored on devel again
    assert main([*base, "--name", "told", "--no-compact"]) == 0  # the table says compact; the flag wins
    assert "compacted" not in registry.get("told").manifest.compression


@pytest.mark.parametrize("method", ["pkd", "fastbioner"])
def test_a_convolutional_student_matches_the_teachers_hidden_states_through_w_h(trained, tmp_path, method):
    """A CNN student's blocks stand for layers: their outputs are matched to the
    teacher's hidden states by the uniform layer map, through W_h (its width is not
    the teacher's), with pkd's normalised term or the paper's MSE; only the terms a
    CNN cannot have (attention, embeddings) are dropped, and said so."""
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    events = []
    student = StudentConfig(source="cnn", conv_width=8, conv_layers=2)
    result = distill(config(bio, method, epochs=6, dev=False, student=student), f"cnn-{method}",
                     registry=registry, on_event=events.append)
    term = "hidden-norm" if method == "pkd" else "hidden"
    values = [e.losses[term] for e in events if e.stage == "distill" and term in e.losses]
    assert values and values[-1] < values[0], values  # the blocks moved towards the teacher's layers
    training = result.entry.manifest.training
    teacher_layers = load_token_classifier(registry.get("tiny-teacher").path).config.num_hidden_layers
    from fastbioner.train.distill.students import uniform_layer_map
    assert training["layer_map"] == uniform_layer_map(teacher_layers, 2)
    assert term in training["terms"] and "attention" not in training["terms"]
    dropped = [n for n in training["notes"] if "term(s) dropped" in n]
    assert dropped == ([] if method == "pkd" else
                       ["ConvTagger: no attention or embedding output to match, so attention term(s) dropped"])


def test_a_convolutional_student_learns_from_whole_documents_with_packed_context(trained, tmp_path):
    """--student-from cnn --context packed --method pkd: the teacher's windows are whole
    documents and so are the CNN's (its blocks matched to the teacher's layers on them);
    its manifest keeps the setting, so its tagger reads a file's documents whole too."""
    from fastbioner.infer.inference import Tagger

    registry = fresh_registry(trained, tmp_path)
    docs = write_documents(tmp_path / "docs.conll", SENTENCES)
    cfg = config(docs, "pkd", epochs=2, dev=False, student=StudentConfig(source="cnn", conv_width=8, conv_layers=2))
    cfg.encoding.context = "packed"
    result = distill(cfg, "cnn-packed", registry=registry)
    assert result.training.total_steps == 2  # 3 documents, one window each: one batch an epoch
    assert "hidden-norm" in result.entry.manifest.training["terms"]
    tagger = Tagger.load(registry.get("cnn-packed").path)
    assert tagger.context == "packed"
    words = [[w for w, _ in s] for s in SENTENCES]
    got = tagger.predict_words(words, documents=["d"] * len(words))
    assert [len(p.tags) for p in got] == [len(w) for w in words]
