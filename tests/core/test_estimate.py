"""Run-time estimates (fastbioner.train.estimate): a few real steps of a teacher or
distillation run, extrapolated; nothing is registered, several teachers are timed on
a sample, devel scoring follows the run's context. Asserted on counts and on how the
measured parts add up, never on their size."""

import pytest

from fastbioner.base.config import TeacherConfig, TrainingConfig
from fastbioner.train.distill.runner import distill
from fastbioner.base.jobs import Cancelled, CancelToken, JobState
from tests.core.distill_setup import SENTENCES, config, fresh_registry, registry_leftovers
from tests.tiny_models import write_documents

pytestmark = pytest.mark.usefixtures("one_thread")


def test_run_time_estimate_measures_a_few_steps_and_registers_nothing(trained, tmp_path):
    from fastbioner.train.estimate import estimate_run

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    cfg = config(bio, epochs=3, teacher_cache="memory")
    events = []
    estimate = estimate_run(cfg, registry=registry, steps=3, on_event=events.append)
    real = distill(cfg, "real", registry=registry)
    assert estimate.steps == real.training.total_steps == 9 and estimate.measured_steps == 3
    assert estimate.evaluations == 3  # devel scored at each epoch's end
    # The parts the estimate adds up (their sizes are measured, so only their presence
    # and the sum are asserted: a teacher pass is counted for a distillation).
    assert estimate.teacher_seconds != 0 and estimate.step_seconds != 0
    parts = estimate.setup_seconds + estimate.step_seconds * estimate.steps + estimate.teacher_seconds \
        + estimate.evaluation_seconds
    assert estimate.total_seconds == pytest.approx(parts)
    assert "measured from 3 steps" in estimate.describe()
    # The teacher cache the run built, sized before it (the probe runs the teacher live).
    assert estimate.cache_bytes == real.teacher_cache["bytes"] > 0 and estimate.cache_place == "memory"
    assert f"the teacher cache takes {real.teacher_cache['bytes'] / 2**20:.0f} MiB of memory" in estimate.describe()
    assert [e.name for e in registry.list()] == ["real", "tiny-teacher"]  # the probe left nothing
    assert registry_leftovers(registry) == []
    steps = [e.step for e in events if e.stage == "estimate"]
    assert steps[-1] == 3 and events[-1].state is JobState.DONE
    longer = estimate_run(config(bio, epochs=6, dev=False), registry=registry, steps=2)
    assert longer.steps == 18 and longer.evaluations == 0  # counts, not measured seconds


def test_run_time_estimate_of_several_teachers_times_them_on_a_sample(trained, tmp_path, monkeypatch):
    """Several teachers each tag all the training text before a run's first step; the
    estimate times them on a sample of sentences instead of making those passes, and
    counts the first teacher's cache pass only for a method that reads it."""
    import fastbioner.train.distill.ensemble as ensemble
    import fastbioner.train.distill.runner as runner
    import fastbioner.train.estimate as estimating
    from fastbioner.train.estimate import estimate_run

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    full_passes, sampled = [], []
    monkeypatch.setattr(runner, "word_logits", lambda *a, **k: full_passes.append(a) or pytest.fail("full pass"))
    real_word_logits = ensemble.word_logits
    monkeypatch.setattr(ensemble, "word_logits",
                        lambda model, tok, labels, words, *a: sampled.append(len(words))
                        or real_word_logits(model, tok, labels, words, *a))
    ratios, real_costs = [], estimating._relative_teacher_costs
    monkeypatch.setattr(estimating, "_relative_teacher_costs",
                        lambda *a, **k: ratios.append(real_costs(*a, **k)) or ratios[-1])
    estimates = {method: estimate_run(config(bio, method, epochs=2, teacher_cache="memory",
                                             extra_teachers=["tiny-teacher"]), registry=registry, steps=2)
                 for method in ("hinton", "fastbioner")}
    assert full_passes == []
    assert len(sampled) == 12  # per estimate, each of the 2 teachers warmed, then timed twice on the sample
    assert [len(r) for r in ratios] == [2, 2] and [r[0] for r in ratios] == [1.0, 1.0]  # each against the first
    for e in estimates.values():
        assert e.teachers == 2 and "soft labels of 2 teachers" in e.describe()
        assert e.total_seconds == pytest.approx(e.setup_seconds + e.step_seconds * e.steps + e.teacher_seconds
                                                + e.ensemble_seconds + e.evaluation_seconds)
    assert estimates["hinton"].teacher_seconds == 0  # soft labels from the teachers' passes, no cache
    # fastbioner's hidden and attention terms read the first teacher's cache: its pass is
    # counted, and the teachers' soft-label passes are that pass scaled by their ratios.
    fast = estimates["fastbioner"]
    assert fast.ensemble_seconds == pytest.approx(sum(ratios[1]) * fast.teacher_seconds)
    single = estimate_run(config(bio, "hinton", epochs=2, teacher_cache="memory"), registry=registry, steps=2)
    assert single.ensemble_seconds == 0 and single.teachers == 1 and "soft labels" not in single.describe()
    assert len(ratios) == 2  # one teacher: nothing sampled


def test_run_time_estimate_of_a_teacher_run_and_its_cancel(trained, tmp_path):
    from fastbioner.train.estimate import estimate_run

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    base = registry.get("tiny-teacher").path
    cfg = TeacherConfig(base_model=str(base), train_files=[str(bio)], dev_file=str(bio),
                        training=TrainingConfig(epochs=2, batch_size=5))
    estimate = estimate_run(cfg, registry=registry, steps=2)
    assert estimate.steps == 6 and estimate.teacher_seconds == 0 and estimate.evaluations == 2
    token = CancelToken()

    def cancel_on_first_step(e):
        if e.stage == "estimate" and e.step >= 1:
            token.cancel()

    with pytest.raises(Cancelled):
        estimate_run(cfg, registry=registry, steps=3, on_event=cancel_on_first_step, cancel=token)
    assert [e.name for e in registry.list()] == ["tiny-teacher"]


def test_run_time_estimate_scores_devel_by_the_windows_of_packed_context(trained, tmp_path):
    """With packed context devel is scored in a window per document, not per sentence:
    the estimate's scoring scales to those windows."""
    from fastbioner.train.estimate import estimate_run

    registry = fresh_registry(trained, tmp_path)
    docs = write_documents(tmp_path / "docs.conll", SENTENCES)
    base = registry.get("tiny-teacher").path
    runs = {}
    for context in ("sentence", "packed"):
        cfg = TeacherConfig(base_model=str(base), train_files=[str(docs)], dev_file=str(docs),
                            training=TrainingConfig(epochs=2, batch_size=2))
        cfg.encoding.context = context
        runs[context] = estimate_run(cfg, registry=registry, steps=2)
    windows = {"sentence": 15, "packed": 3}  # 15 sentences in 3 documents of one window each
    for context, e in runs.items():
        assert e.evaluations == 2
        assert e.evaluation_seconds == pytest.approx(2 * windows[context] / 2 * e.step_seconds / 3)


def test_cli_estimate_prints_the_run_time_and_trains_nothing(trained, tmp_path, monkeypatch, capsys):
    from fastbioner.cli.main import main

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    monkeypatch.setenv("FASTBIONER_HOME", str(registry.root.parent))
    (registry.root.parent / "models").symlink_to(registry.root)
    code = main(["distill", "--teacher", "tiny-teacher", "--train", str(bio), "--dev", str(bio), "--layers", "2",
                 "--epochs", "2", "--batch-size", "5", "--name", "later", "--estimate", "3", "--quiet"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "estimated run time: about" in out.out and "6 steps" in out.out and "measured from 3 steps" in out.out
    assert not registry.exists("later")


def test_run_time_estimate_says_when_the_teacher_cache_would_not_fit_on_the_disk(trained, tmp_path, monkeypatch):
    """A cache kept on disk is sized against the models folder's free space: a run that
    would stop at its DiskSpaceError is told so by its estimate, with what to do; a run
    without a cache (or a method that reads no teacher) says nothing of one."""
    import fastbioner.train.estimate as estimating
    from fastbioner.train.estimate import estimate_run

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    roomy = estimate_run(config(bio, epochs=2, teacher_cache="disk"), registry=registry, steps=2)
    assert roomy.cache_place == "disk" and roomy.cache_bytes > 0 and roomy.disk_free_bytes > 0
    assert "on disk (" in roomy.describe() and "more than the disk" not in roomy.describe()
    monkeypatch.setattr(estimating, "_free_bytes", lambda folder: 2**29)  # a disk with 512 MiB left
    full = estimate_run(config(bio, epochs=2, teacher_cache="shared"), registry=registry, steps=2)
    assert full.cache_place == "shared" and full.cache_bytes == roomy.cache_bytes
    assert "more than the disk can take" in full.describe() and "--teacher-cache none" in full.describe()
    for cfg in (config(bio, epochs=2, teacher_cache="none"), config(bio, "og", epochs=2, teacher_cache="disk")):
        bare = estimate_run(cfg, registry=registry, steps=2)
        assert bare.cache_bytes == 0 and "teacher cache" not in bare.describe()
    assert registry_leftovers(registry) == []


def test_run_time_estimate_finds_the_registered_models_a_student_is_made_from(trained, tmp_path, monkeypatch):
    """A student started from a registered model, or a small student over a registered
    model's embeddings, names it by its registry name: the probe (which registers into a
    scratch registry) must still find it there, not ask the Hugging Face hub for it."""
    from fastbioner.train.distill.config import StudentConfig
    from fastbioner.train.estimate import estimate_run

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a name the probe does not find fails at once
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    for student in (StudentConfig(source="tiny-teacher", layers=1),
                    StudentConfig(source="cnn", embeddings="tiny-teacher", conv_width=16, conv_layers=2)):
        estimate = estimate_run(config(bio, "pkd", epochs=2, student=student, teacher_cache="memory"),
                                registry=registry, steps=2)
        assert estimate.steps == 6 and estimate.cache_bytes > 0  # 15 sentences in batches of 5, 2 epochs
    assert [e.name for e in registry.list()] == ["tiny-teacher"] and registry_leftovers(registry) == []


def test_the_live_teachers_time_leaves_each_measured_step_on_its_own():
    """The teacher's seconds are taken out of the step they were spent in: calibration's
    calls before the first step are not a timed step's, a step of several micro-batches
    holds several calls, a step may make none (a schedule's weight on the teacher's terms
    at 0), and the first step's slow call (lazy initialisation) stays with the first step,
    which the estimate leaves out (it once counted against every step and left a CNN
    under MPNet a step of 0.00 s)."""
    from fastbioner.train.estimate import _teacher_per_step

    ends = [10.0, 20.0, 30.0, 40.0]  # when each measured step ended
    calibration, first = [(1.0, 0.5), (2.0, 0.5)], [(3.0, 9.0)]
    assert _teacher_per_step(calibration + first + [(11.0, 1.0), (21.0, 1.1), (31.0, 0.9)], ends) == \
        [10.0, 1.0, 1.1, 0.9]
    assert _teacher_per_step([(3.0, 4.0), (12.0, 0.5), (15.0, 0.5), (22.0, 0.6), (25.0, 0.4)], ends[:3]) == \
        [4.0, 1.0, 1.0]
    assert _teacher_per_step([(3.0, 4.0), (12.0, 0.5)], ends) == [4.0, 0.5, 0.0, 0.0]  # phi at 0: no calls
    assert _teacher_per_step([], ends[:3]) == [0.0, 0.0, 0.0]  # no live teacher (og, a teacher run)


def test_a_live_teachers_calls_are_timed_for_the_estimate_but_not_saved_with_the_model(trained, tmp_path):
    """The per-call seconds the estimate reads come with the run's result; the model's
    manifest keeps only the total (a long run would otherwise save a number a step)."""
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    result = distill(config(bio, epochs=2, dev=False, teacher_cache="none"), "live", registry=registry)
    # One call a step while the schedule still weighs the teacher's terms (fastbioner's phi reaches 0).
    assert 0 < len(result.teacher_calls) <= result.training.steps == 6
    saved = registry.get("live").manifest.training["teacher_cache"]
    assert saved["mode"] == "none" and "teacher_seconds" in saved and "teacher_calls" not in saved
    assert sum(s for _, s in result.teacher_calls) == pytest.approx(saved["teacher_seconds"])


def test_an_estimate_measured_on_a_busy_machine_says_it_may_be_low():
    from fastbioner.train.estimate import RunEstimate

    def estimate(load):
        return RunEstimate(120.0, 5.0, 0.5, 200, 0.0, 0.0, 0, 9, load=load, cores=2)

    assert not estimate(1.5).busy and "busy" not in estimate(1.5).describe()
    busy = estimate(8.6)
    assert busy.busy and "busy while measuring (load 8.6 on 2 cores), so the figure may be low" in busy.describe()
