"""The guided path as one job on tiny random models: a bare base encoder is fine-tuned
into a teacher, distilled into a student and the student compacted, both registered,
with one monotonic stream of events; a cancel during distillation keeps the complete
teacher and registers no student; a taken name is refused before any training."""

from __future__ import annotations

import pytest

from fastbioner.base.config import TeacherConfig, TrainingConfig
from fastbioner.train.distill.config import DistillConfig, StudentConfig
from fastbioner.train.distill.methods import MethodConfig
from fastbioner.base.errors import ModelError
from fastbioner.train.guided import fine_tune_then_distill
from fastbioner.base.jobs import Cancelled, CancelToken, JobState
from fastbioner.models.registry import Registry
from tests.core.distill_setup import write_bio
from tests.tiny_models import make_tiny_encoder


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def setup(tmp_path):
    bio = write_bio(tmp_path / "train.tsv")
    base = make_tiny_encoder(tmp_path / "base-encoder", layers=2, hidden=32)
    return Registry(tmp_path / "registry"), bio, base


def _configs(base, bio):
    training = TrainingConfig(epochs=1, batch_size=4, seed=1, device="cpu")
    teacher = TeacherConfig(base_model=str(base), train_files=[str(bio)], dev_file=str(bio), training=training)
    student = DistillConfig(student=StudentConfig(source="teacher", layers=1),
                            method=MethodConfig(name="hinton", temperature=2.0),
                            train_files=[str(bio)], dev_file=str(bio), training=training)
    return teacher, student


def test_a_base_encoder_becomes_a_teacher_then_a_compacted_student_in_one_job(setup):
    registry, bio, base = setup
    teacher, student = _configs(base, bio)
    events = []
    result = fine_tune_then_distill(teacher, "my-teacher", student, "my-student", compact=True, registry=registry,
                                    on_event=events.append)
    assert sorted(e.name for e in registry.list()) == ["my-student", "my-teacher"]
    t, s = registry.get("my-teacher"), registry.get("my-student")
    assert t.manifest.kind == "teacher" and t.manifest.base_model == str(base)
    assert s.manifest.kind == "student" and s.manifest.parent == "my-teacher" and s.manifest.layers == 1
    assert result.fine_tuned and result.teacher == "my-teacher" and result.entry.name == "my-student"
    # Compacted (as asked): half precision, the size stated against the parent and smaller.
    assert result.compaction["dtype"] == "float16" and s.manifest.compression["compacted"]["dtype"] == "float16"
    assert result.size.parent == "my-teacher" and result.size.smaller
    assert result.size.student_bytes == s.manifest.size_bytes
    assert result.size.parent_bytes == t.manifest.size_bytes
    assert "smaller than its teacher" in result.size.describe()
    # The devel scores on the card are the compacted weights' own.
    assert result.report is not None and s.manifest.metrics == result.report.to_dict()
    assert result.teacher_report is not None
    # One progress view: seq strictly increasing over the chain, the stages in order, one end.
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    stages = [e.stage for e in events]
    first = {name: stages.index(name) for name in ("teacher: train", "student: distill", "compact: write")}
    assert first["teacher: train"] < first["student: distill"] < first["compact: write"]
    assert [e.state for e in events if e.finished] == [JobState.DONE] and events[-1].state is JobState.DONE
    for stage in ("teacher: train", "student: distill"):
        steps = [e.step for e in events if e.stage == stage]
        assert steps == sorted(steps) and steps[-1] > 0


def test_by_default_the_student_keeps_full_precision_as_the_table_says(setup):
    """Unless told, the guided path follows the defaults table's compaction rule (the
    CLI's too: docs/research/decisions.md#compaction), which keeps full precision."""
    from fastbioner.train.guided import compact_by_default

    registry, bio, base = setup
    teacher, student = _configs(base, bio)
    assert compact_by_default() is False
    result = fine_tune_then_distill(teacher, "t", student, "s", registry=registry)
    assert result.compaction is None and "compacted" not in registry.get("s").manifest.compression
    assert result.size is not None and result.size.parent == "t"


def test_cancel_during_distillation_keeps_only_the_complete_teacher(setup):
    registry, bio, base = setup
    teacher, student = _configs(base, bio)
    token = CancelToken()
    events = []

    def on_event(event):
        events.append(event)
        if event.stage.startswith("student: "):
            token.cancel()  # the teacher is registered; the student has just begun

    with pytest.raises(Cancelled):
        fine_tune_then_distill(teacher, "t", student, "s", registry=registry, on_event=on_event, cancel=token)
    assert [e.name for e in registry.list()] == ["t"]
    assert events[-1].state is JobState.CANCELLED
    assert not any(p.name.startswith(".staging") for p in registry.root.iterdir())


def test_taken_or_clashing_names_are_refused_before_any_training(setup, tmp_path):
    from tests.tiny_models import make_tiny_model

    registry, bio, base = setup
    teacher, student = _configs(base, bio)
    events = []
    with pytest.raises(ModelError, match="different names"):
        fine_tune_then_distill(teacher, "same", student, "same", registry=registry, on_event=events.append)
    registry.import_folder(make_tiny_model(tmp_path / "other"), "taken", kind="student")
    with pytest.raises(ModelError, match="'taken' already exists"):
        fine_tune_then_distill(teacher, "new-teacher", student, "taken", registry=registry, on_event=events.append)
    assert events == [] and [e.name for e in registry.list()] == ["taken"]


def test_a_convolutional_student_is_compacted_with_its_whole_vocabulary_in_int8(setup):
    """Trimming would cost the convolutional student accuracy on unseen words; the
    guided path keeps every piece and stores the table in int8 instead."""
    from dataclasses import replace

    registry, bio, base = setup
    teacher, student = _configs(base, bio)
    student = replace(student, student=StudentConfig(source="cnn", conv_width=8, conv_layers=1),
                      training=replace(student.training, learning_rate=1e-3))
    result = fine_tune_then_distill(teacher, "t", student, "s", compact=True, registry=registry)
    figures = registry.get("s").manifest.compression["compacted"]
    assert figures["vocabulary_kept"] and figures["vocab_after"] == figures["vocab_before"]
    assert figures["embedding_storage"] == "int8" and figures["projection_folded"]
    assert any("whole vocabulary" in n and "int8" in n for n in result.notes)
    assert result.report is not None and registry.get("s").manifest.metrics == result.report.to_dict()
