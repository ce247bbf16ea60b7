#!/usr/bin/env python
"""Each tagger as a whole process, on an idle machine and under a synthetic load, side
by side: the figures of issue 69 (a tagger's default threads must never lose to one
thread when other jobs use the cores, and the fast model must keep up with spaCy's CNN).

Taggers (each ``fastbioner tag`` a new process: imports, model load, tagging, writing):

- ``fast``: the fast model (``--model``, default ``assets/more-models/bc5cdr-cnn-fast-v2``)
  with default settings (threads and precision as the product chooses them);
- ``fast-1``: the same with ``--threads 1``;
- ``default`` (with ``--default-model``): the shipped default model, default settings;
- ``spacy``: spaCy's CNN trained on the same data by ``experiments/spacy_peer.py train``
  (``--spacy-model``), one thread, when spaCy and that model are installed; otherwise
  skipped, and the page says so.

Conditions: ``idle`` (nothing started by this script; the load average the machine had
is recorded beside each figure: a machine other jobs use is not idle, and the page says
"measured on a busy machine") and ``loaded`` (``--busy`` processes of
``python -c 'while True: pass'`` started first, stopped after). Each round runs every
tagger once per condition, the taggers' order reversed every other round, the
conditions alternating, so a change of load hits every tagger alike. Figures: the
median wall time and user+system CPU of the child over the rounds, and each run's.

The table goes into ``docs/research/speed-under-load.md`` between its markers, with
the command and the machine; the JSON into ``benchmarks/results/load.json``.

    python benchmarks/bench_load.py                       # 3 rounds, 2 busy processes
    python benchmarks/bench_load.py --rounds 5 --default-model
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from results_file import RESULTS, write_keeping_earlier

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO.parent / "shared" / "data" / "bc5cdr" / "pubtator" / "CDR_DevelopmentSet.PubTator.txt"
FAST = REPO / "assets" / "more-models" / "bc5cdr-cnn-fast-v2"
PAGE = REPO / "docs" / "research" / "speed-under-load.md"
START, END = "<!-- bench_load:start -->", "<!-- bench_load:end -->"
SPACY_MODEL = (Path(os.environ.get("FASTBIONER_EXPERIMENTS", Path.home() / "fastbioner-experiments"))
               / "spacy-peer" / "model" / "model-best")   # where experiments/spacy_peer.py trains it
BUSY = "while True: pass"

# Tags the documents of a PubTator file with a spaCy model, as a whole process would
# (experiments/spacy_peer.py's timing script: title and abstract as one text).
SPACY_TAGGER = """
import sys, spacy
nlp = spacy.load(sys.argv[1])
texts = []
for block in open(sys.argv[2], encoding="utf-8").read().split("\\n\\n"):
    lines = [l for l in block.splitlines() if "|t|" in l or "|a|" in l]
    if lines:
        texts.append(" ".join(l.split("|", 2)[2] for l in lines))
n = sum(len(doc.ents) for doc in nlp.pipe(texts, batch_size=64))
print(len(texts), n)
"""


def tag_command(docs: Path, out: Path, model: str | None, *extra: str) -> list[str]:
    cmd = [sys.executable, "-m", "fastbioner.cli.main", "tag", str(docs), "--out", str(out),
           "--format", "pubtator", "--quiet", *extra]
    return cmd + (["--model", model] if model else [])


def spacy_ready(model: Path, python: str) -> str | None:
    """Why the spaCy peer cannot run here with ``python`` (None: it can)."""
    if subprocess.run([python, "-c", "import spacy"], capture_output=True).returncode != 0:
        return f"spaCy is not importable by {python} (pip install -e '.[bench]', or --spacy-python)"
    if not (model / "meta.json").is_file():
        return f"no trained spaCy model at {model.name} (python -m experiments.spacy_peer train)"
    return None


def busy_cores(seconds: float = 1.0) -> float | None:
    """The cores other processes kept busy over the next ``seconds`` while this script
    waits (the thread rule's own measure; None where ``/proc/stat`` cannot be read).
    Taken before each idle block: the load average cannot say whether a machine is
    idle here, since it still holds the taggers this script ran a moment ago."""
    from fastbioner.research import busy_elsewhere, cpu_sample

    before = cpu_sample()
    time.sleep(seconds)
    after = cpu_sample()
    if before is None or after is None:
        return None
    return round(busy_elsewhere(before, after), 2)


def run_once(cmd: list[str], env: dict[str, str]) -> dict:
    """Wall seconds, the child's user and system CPU seconds, the load average before,
    and the speed line ``fastbioner tag`` printed (its thread choice)."""
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"failed ({proc.returncode}): {shlex.join(cmd)}\n{err[-2000:]}")
    speed = next((line for line in out.splitlines() if line.startswith("speed:")), "")
    return {"wall": round(wall, 2), "load": round(load, 2), "speed_line": speed}


class Children:
    """CPU seconds of finished children (RUSAGE_CHILDREN grows as each is reaped)."""

    def __init__(self):
        import resource

        self._resource = resource
        self.before = self._now()

    def _now(self) -> float:
        r = self._resource.getrusage(self._resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    def take(self) -> float:
        now = self._now()
        spent, self.before = now - self.before, now
        return round(spent, 2)


def start_load(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(n)]


def stop_load(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait()


def measure(taggers: dict[str, list[str]], rounds: int, busy: int, env: dict[str, str]) -> dict:
    runs: dict[str, dict[str, list[dict]]] = {c: {t: [] for t in taggers} for c in ("idle", "loaded")}
    runs["busy_before_idle"] = []  # type: ignore[assignment]
    clock = Children()
    for r in range(rounds):
        order = list(taggers) if r % 2 == 0 else list(reversed(taggers))
        conditions = ("idle", "loaded") if r % 2 == 0 else ("loaded", "idle")
        for condition in conditions:
            if condition == "idle":
                runs["busy_before_idle"].append(busy_cores())  # type: ignore[arg-type]
            load = start_load(busy) if condition == "loaded" else []
            try:
                if load:
                    time.sleep(2)   # the busy processes running before the first tagger starts
                clock.take()        # not the busy processes' CPU: only the tagger's below
                for name in order:
                    run = run_once(taggers[name], env)
                    run["cpu"] = clock.take()
                    runs[condition][name].append(run)
                    print(f"round {r + 1} {condition:<6} {name:<8} {run['wall']:6.2f} s wall "
                          f"{run['cpu']:6.2f} s CPU (load {run['load']:.1f}) {run['speed_line']}", flush=True)
            finally:
                stop_load(load)
                clock.take()
    return runs


def summary(runs: dict) -> list[dict]:
    rows = []
    for condition in ("idle", "loaded"):
        for name, got in runs[condition].items():
            if not got:
                continue
            rows.append({"tagger": name, "condition": condition,
                         "wall_median": round(statistics.median(r["wall"] for r in got), 2),
                         "cpu_median": round(statistics.median(r["cpu"] for r in got), 2),
                         "walls": [r["wall"] for r in got], "loads": [r["load"] for r in got],
                         "threads": _threads(got[-1]["speed_line"])})
    return rows


def _threads(speed_line: str) -> str:
    """The thread choice from ``fastbioner tag``'s speed line (``..., 1 thread (2 cores, load 5.1))``)."""
    found = re.search(r"(\d+ threads?(?: \([^()]*\))?)\)$", speed_line)
    return found.group(1) if found else "-"


def _idle_note(others: float | None) -> str:
    """What the idle rows were measured beside: the most cores anything kept busy in the
    second before an idle block (nothing of this script's running then)."""
    if others is None:
        return "Whether the machine was idle could not be measured (no /proc/stat)."
    if others >= 0.3:
        return (f"**Measured on a busy machine**: other work kept up to {others:.1f} cores busy in the second "
                f"before an idle block; rerun on a quiet one.")
    return f"Idle: at most {others:.2f} cores busy in the second before each idle block."


def _portable(args: list[str]) -> list[str]:
    """The command as the page records it: spaCy's own Python named by its role, not by
    this machine's path."""
    out = list(args)
    for i, arg in enumerate(out[:-1]):
        if arg == "--spacy-python":
            out[i + 1] = "SPACY_VENV/bin/python"
    return out


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [f"Measured {meta['date']} on {meta['machine']}, {meta['documents']}; "
             f"{meta['rounds']} rounds, loaded = {meta['busy']} busy processes. {meta['note']}", "",
             f"    {meta['command']}", "",
             "| tagger | condition | wall, median (each run) | CPU, median | load average at start | threads |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        walls = ", ".join(f"{w:.1f}" for w in row["walls"])
        loads = f"{min(row['loads']):.1f}-{max(row['loads']):.1f}"
        lines.append(f"| {row['tagger']} | {row['condition']} | **{row['wall_median']:.1f} s** ({walls}) | "
                     f"{row['cpu_median']:.1f} s | {loads} | {row['threads']} |")
    if meta.get("skipped"):
        lines += ["", f"Not measured: {meta['skipped']}."]
    return "\n".join(lines)


def write_page(table: str, page: Path = PAGE) -> None:
    text = page.read_text(encoding="utf-8")
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    page.write_text(f"{head}{START}\n{table}\n{END}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--docs", type=Path, default=DOCS, help="PubTator documents to tag (the BC5CDR devel set)")
    p.add_argument("--model", default=str(FAST), help="the fast model (registry name or folder)")
    p.add_argument("--default-model", action="store_true", help="also the shipped default model (slow)")
    p.add_argument("--spacy-model", type=Path, default=SPACY_MODEL, help="spaCy's trained CNN")
    # spaCy 3.7 wants numpy below 2, which the product's scikit-learn/scipy may not take:
    # its own environment keeps both working.
    p.add_argument("--spacy-python", default=sys.executable,
                   help="the Python that runs spaCy (default: this one)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--busy", type=int, default=2, help="busy processes of the loaded condition")
    p.add_argument("--no-page", action="store_true", help="print the table, write no docs page")
    args = p.parse_args(argv)
    from fastbioner import cpu_model_name
    if not args.docs.is_file():
        raise SystemExit(f"no documents at {args.docs}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        x for x in (str(REPO / "core"), str(REPO), os.environ.get("PYTHONPATH")) if x)}
    env.pop("OMP_NUM_THREADS", None)   # the product's own choice is what is measured
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        taggers = {"fast": tag_command(args.docs, out / "fast.txt", args.model),
                   "fast-1": tag_command(args.docs, out / "fast1.txt", args.model, "--threads", "1")}
        if args.default_model:
            taggers["default"] = tag_command(args.docs, out / "default.txt", None)
        skipped = spacy_ready(args.spacy_model, args.spacy_python)
        if skipped is None:
            taggers["spacy"] = [args.spacy_python, "-c", SPACY_TAGGER, str(args.spacy_model), str(args.docs)]
        else:
            print(f"spaCy peer skipped: {skipped}", file=sys.stderr)
        for cmd in taggers.values():   # untimed: registers a model on first use, warms the file cache
            subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        runs = measure(taggers, args.rounds, args.busy, env)
    rows = summary(runs)
    measured = [b for b in runs["busy_before_idle"] if b is not None]
    others = max(measured) if measured else None
    meta = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
            "machine": f"{cpu_model_name() or platform.machine()}, {len(os.sched_getaffinity(0))} cores",
            "documents": f"{args.docs.name} (whole file)", "rounds": args.rounds, "busy": args.busy,
            "command": "python benchmarks/bench_load.py " + shlex.join(_portable(argv if argv is not None
                                                                                  else sys.argv[1:])),
            "note": _idle_note(others),
            "skipped": f"spaCy's CNN: {skipped}" if skipped else ""}
    table = markdown(rows, meta)
    print(table)
    write_keeping_earlier(RESULTS / "load.json", {**meta, "rows": rows, "runs": runs})
    if not args.no_page:
        write_page(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
