"""How long the experiment queue expects a run to take (from its own row's recorded
walls, else the longest of its shape; a resumed run by its own pace), and the
finish-by time that starts only the runs that can end before it. No run is started:
the starter is replaced."""

from __future__ import annotations

import json
import os

import pytest

from experiments.tests.bench_scripts import load
from experiments.tests.queue_helpers import latest_checkpoint


def _distill_job(row, seed, epochs="6"):
    return {"row": row, "seed": seed, "model": f"{row}-s{seed}", "commit": "abc", "requires": [],
            "state": "pending", "attempts": 0,
            "args": ["distill", "--train", "t.tsv", "--layers", "3", "--epochs", epochs, "--cpu-bf16",
                     "--seed", str(seed)]}


def _recorded(row, seed, wall, epochs="6"):
    command = (f"fastbioner distill --train t.tsv --layers 3 --epochs {epochs} --cpu-bf16 --name {row}-{seed} "
               f"--seed {seed}")
    return {row: {str(seed): {"command": command, "wall_seconds": wall}}}


def test_a_runs_expected_length_comes_from_its_own_row_else_the_longest_of_its_shape(tmp_path, monkeypatch):
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    expected = queue.queue_runner.expected_seconds
    results = {**_recorded("x/og-3", 13, 2400.0), **_recorded("x/hinton-3", 13, 3000.0),
               **_recorded("x/og-3-ep3", 13, 900.0, epochs="3")}
    results["x/og-3"]["14"] = {**results["x/og-3"]["13"], "wall_seconds": 2600.0}
    assert expected(_distill_job("x/og-3", 15), results) == pytest.approx(2500.0)   # its own seeds' mean
    assert expected(_distill_job("x/og-3", 15), results, ran=1000.0) == pytest.approx(1500.0)  # running
    assert expected(_distill_job("x/pkd-3", 13), results) == pytest.approx(3000.0)  # 3 layers, 6 epochs
    assert expected(_distill_job("x/pkd-3", 13, epochs="12"), results) is None       # nothing like it ran
    # A run resumed from a checkpoint three quarters through has a quarter left.
    latest = latest_checkpoint(queue, _distill_job("x/og-3", 15))
    latest.mkdir(parents=True)
    (latest / "state.json").write_text(json.dumps({"state": {"step": 1500, "total_steps": 2000}}))
    assert expected(_distill_job("x/og-3", 15), results) == pytest.approx(625.0)
    # Running, it goes by its own pace: 1500 of 2000 steps in 600 s leaves 200 s (a run
    # given two threads is faster than the walls recorded at one).
    assert expected(_distill_job("x/og-3", 15), results, ran=600.0) == pytest.approx(200.0)


def test_a_resumed_runs_time_left_goes_by_this_attempts_pace_between_its_checkpoints(tmp_path, monkeypatch):
    """A run resumed from its step-300 checkpoint, whose earlier attempt had run 960 s
    (steps past 300 lost with it): its time left is measured from this attempt's
    steps, stamped when each checkpoint was written, not the whole running time over the
    checkpoint's step (which counted the lost steps and grew between checkpoints)."""
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    runner = queue.queue_runner
    job = {**_distill_job("x/og-3", 13), "state": "running"}
    latest = latest_checkpoint(queue, job)
    latest.mkdir(parents=True)

    def checkpoint(step, written):
        (latest / "state.json").write_text(json.dumps({"state": {"step": step, "total_steps": 1000}}))
        os.utime(latest / "state.json", (written, written))

    def poll(now):
        last = job["ticked"]
        runner.tick(job, now)
        runner.mark_progress(job, now, last)

    checkpoint(300, 0.0)
    job.update(run_seconds=960.0, pace_from=[300, 960.0], started=1000.0, ticked=1000.0)
    poll(1200.0)
    assert "pace_to" not in job  # no new checkpoint yet: nothing of this attempt's pace is known
    checkpoint(400, 1290.0)
    poll(1305.0)  # seen 15 s after it was written
    assert job["run_seconds"] == 1265.0 and job["pace_to"] == [400, 1250.0]
    # 100 steps in 290 s: 600 left take 1740 s, of which the 15 s since the checkpoint have run.
    assert runner.expected_seconds(job, {}, ran=1265.0) == pytest.approx(1725.0)
    poll(1400.0)  # the estimate falls as the run goes on between checkpoints, and does not grow
    assert runner.expected_seconds(job, {}, ran=job["run_seconds"]) == pytest.approx(1630.0)


def test_a_job_added_again_after_a_drop_is_given_the_time_its_checkpoint_leaves(tmp_path, monkeypatch):
    """``drop --stop`` then ``add`` resumes a run from its checkpoint with its clock at 0:
    three minutes into the new attempt, with half the steps left, it has about half the
    recorded wall to go, not three minutes' worth over the whole checkpoint (the estimate
    finish-by trusts)."""
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    runner = queue.queue_runner
    job = {**_distill_job("x/og-3", 15), "state": "running", "run_seconds": 0.0, "pace_from": [6000, 0.0]}
    latest = latest_checkpoint(queue, job)
    latest.mkdir(parents=True)
    (latest / "state.json").write_text(json.dumps({"state": {"step": 6500, "total_steps": 12000}}))
    results = _recorded("x/og-3", 13, 3000.0)
    assert runner.expected_seconds(job, results, ran=180.0) == pytest.approx(3000.0 * 0.5 - 180.0)
    # A job resumed without a drop keeps its clock: the same share, less this attempt's run.
    job.update(run_seconds=2000.0, pace_from=[6000, 2000.0])
    assert runner.expected_seconds(job, results, ran=2180.0) == pytest.approx(3000.0 * 0.5 - 180.0)


def _a_short_run_recorded_and_a_long_one_queued():
    """Results holding a 3-layer run of 40 minutes and a 6-layer one of 80 (seed 14), and
    the 6-layer row's seed-13 job: (results, job)."""
    results = {**_recorded("x/og-3", 13, 2400.0)}
    long_job = _distill_job("x/og-6", 13)
    long_job["args"][long_job["args"].index("--layers") + 1] = "6"
    results["x/og-6"] = {"14": {"command": "fastbioner " + " ".join(long_job["args"][:-1]) + " 14",
                                "wall_seconds": 4800.0}}
    return results, long_job


def test_before_the_finish_by_time_only_runs_that_can_end_by_then_start(tmp_path, monkeypatch, capsys):
    """The block ends in 50 minutes: the 6-layer run queued first (80 minutes) would be
    lost with the machine, so the core goes to the 3-layer run queued after it; the
    long one waits, pending, for the next block."""
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    results, long_job = _a_short_run_recorded_and_a_long_one_queued()
    monkeypatch.setattr(queue.runs, "load_results", lambda *a, **k: results)
    started = []
    monkeypatch.setattr(queue.queue_runner, "start_job", lambda job, threads=1: started.append(job["row"]) or 4242)
    monkeypatch.setattr(queue.qs, "alive", lambda pid: pid == 4242)
    (tmp_path / "queue.json").write_text(json.dumps({"jobs": [long_job, _distill_job("x/og-3", 14)]}))
    assert queue.main(["finish-by", "+50"]) == 0
    queue.queue_runner.step(2)
    assert started == ["x/og-3"]
    jobs = json.loads((tmp_path / "queue.json").read_text())["jobs"]
    assert [(j["row"], j["state"]) for j in jobs] == [("x/og-6", "pending"), ("x/og-3", "running")]
    capsys.readouterr()
    queue.status()
    assert "about 80 min to run (does not fit before the finish-by time)" in capsys.readouterr().out
    # Without a finish-by time the queue's order holds again.
    assert queue.main(["finish-by", "off"]) == 0
    queue.queue_runner.step(2)
    assert started == ["x/og-3", "x/og-6"]


def test_a_machine_faster_than_the_recorded_walls_fits_more_runs_before_the_finish_by_time(tmp_path, monkeypatch,
                                                                                            capsys):
    """The 3-layer run recorded at 40 minutes ends here in 20: this machine runs at half
    the recorded walls, so with 50 minutes left the 6-layer run recorded at 80 starts
    (about 40 here); a run resumed from a checkpoint, or given two threads, is no
    measure of the machine and leaves the pace alone."""
    queue = load("experiment_queue")
    runner = queue.queue_runner
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    results, long_job = _a_short_run_recorded_and_a_long_one_queued()
    monkeypatch.setattr(queue.runs, "load_results", lambda *a, **k: results)
    monkeypatch.setattr(runner, "record", lambda job, wall: 0.8)
    live = {4242}
    started = []
    monkeypatch.setattr(runner, "start_job", lambda job, threads=1: started.append(job["row"]) or 4242)
    monkeypatch.setattr(queue.qs, "alive", lambda pid: pid in live)
    made = set()
    monkeypatch.setattr(queue.qs, "registered", lambda model: model in made)
    (tmp_path / "queue.json").write_text(json.dumps({"jobs": [_distill_job("x/og-3", 14), long_job]}))
    assert queue.main(["finish-by", "+50"]) == 0
    runner.step(1)   # one slot: the 3-layer run starts, expected to take 40 minutes
    jobs = json.loads((tmp_path / "queue.json").read_text())["jobs"]
    assert started == ["x/og-3"] and jobs[0]["expected_seconds"] == 2400.0 and jobs[0]["from_scratch"]
    jobs[0]["run_seconds"], jobs[0]["started"] = 1190.0, queue.time.time() - 1190.0
    jobs[0]["ticked"] = queue.time.time() - 10.0
    (tmp_path / "queue.json").write_text(json.dumps({"jobs": jobs}))
    live.clear()     # it ended after 20 minutes, its model registered
    made.add("x/og-3-s14")
    runner.step(1)
    state = json.loads((tmp_path / "queue.json").read_text())
    assert state["pace"] == [pytest.approx(0.5, abs=0.01)]
    assert started == ["x/og-3", "x/og-6"]
    capsys.readouterr()
    queue.status()
    assert "runs here take 0.50x the recorded walls" in capsys.readouterr().out
    # A wall recorded on this kind of CPU is this machine's already: not scaled again,
    # and preferred to the row's walls from elsewhere.
    here = runner.this_cpu()
    assert runner.expected_seconds(_distill_job("x/og-6", 15), results, pace=0.5) == pytest.approx(2400.0)
    results["x/og-6"]["15"] = {**results["x/og-6"]["14"], "wall_seconds": 2000.0, "cpu": here}
    assert runner.expected_seconds(_distill_job("x/og-6", 16), results, pace=0.5) == pytest.approx(2000.0)
    assert runner.recorded_wall(_distill_job("x/og-6", 16), results, here) == (2000.0, True)
    # The samples that say nothing of the machine are left out.
    state = {"pace": [0.5]}
    runner.add_pace_sample(state, {"expected_seconds": 100.0, "threads": 2, "from_scratch": True}, 30.0)
    runner.add_pace_sample(state, {"expected_seconds": 100.0, "threads": 1, "from_scratch": False}, 30.0)
    runner.add_pace_sample(state, {"expected_seconds": None, "threads": 1, "from_scratch": True}, 30.0)
    assert state["pace"] == [0.5] and runner.machine_pace({}) == 1.0


def test_finish_by_reads_a_clock_time_as_its_next_occurrence():
    queue = load("experiment_queue")
    now = queue.time.mktime((2026, 12, 3, 15, 0, 0, 0, 0, -1))
    assert queue.parse_finish_by("17:55", now) - now == pytest.approx((2 * 60 + 55) * 60)
    assert queue.parse_finish_by("09:00", now) - now == pytest.approx(18 * 3600)  # tomorrow morning
    assert queue.parse_finish_by("+90", now) - now == pytest.approx(5400)
    assert queue.parse_finish_by("off", now) is None


def test_starting_clears_a_finish_by_time_that_has_passed(tmp_path, monkeypatch):
    """A block's end left set would hold every job of the next block: `start` clears it."""
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    monkeypatch.setattr(queue.qs, "runner_pid", lambda: 4242)   # a runner is up: nothing is launched
    queue.qs.set_finish_by(queue.time.time() - 60)
    assert queue.main(["start"]) == 0
    assert queue.qs.finish_by() is None
    queue.qs.set_finish_by(queue.time.time() + 3600)              # a time still ahead stays
    assert queue.main(["start"]) == 0
    assert queue.qs.finish_by() is not None


def test_a_student_from_a_registered_base_is_timed_by_a_student_from_an_encoder_of_its_shape(tmp_path, monkeypatch):
    """A DRET base (MiniLM with a larger vocabulary, registered by a job of the queue) has
    no row of its own recorded: its student is timed by the student recorded from the
    MiniLM folder (6 layers, 384 wide), not started blind before the finish-by time, and
    not by a 12-layer student's record."""
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    runner = queue.queue_runner

    def encoder(folder, layers, width):
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps(
            {"model_type": "bert", "num_hidden_layers": layers, "hidden_size": width, "vocab_size": 30522}))
        return str(folder)

    minilm = encoder(tmp_path / "bases" / "minilm", 6, 384)
    mpnet = encoder(tmp_path / "bases" / "mpnet", 12, 768)

    def student(row, seed, start):
        return {"row": row, "seed": seed, "model": f"{row}-s{seed}", "commit": "abc", "requires": [],
                "state": "pending", "attempts": 0,
                "args": ["distill", "--train", "t.tsv", "--student-from", start, "--epochs", "6", "--seed", str(seed)]}

    def recorded(row, start, wall):
        return {row: {"13": {"command": "fastbioner " + " ".join(student(row, 13, start)["args"]),
                             "wall_seconds": wall}}}

    results = {**recorded("x/minilm", minilm, 1800.0), **recorded("x/mpnet", mpnet, 5400.0)}
    merged = student("x/dret-merge", 13, "dret-minilm-merge")
    assert runner.expected_seconds(merged, results) is None  # not built yet: nothing to go by
    encoder(tmp_path / "home" / "models" / "dret-minilm-merge", 6, 384)
    assert runner.expected_seconds(merged, results) == pytest.approx(1800.0)
    assert runner.expected_seconds(student("x/other", 13, "cnn"), results) is None
