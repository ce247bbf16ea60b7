"""Section 10 of docs/research/benchmarks.md: students and their teacher scored on the text they
trained on, beside their devel F1. ``experiments/train_fit.py`` scores them on the
training file (against its gold tags); per depth the report sets the rows' order on
train against their order on devel, so a claim that a method "fits less" or
"generalises less" is checked rather than assumed. Train F1 measures fit to the gold
tags, not capacity: a distilled student also learns the teacher's soft labels."""

from __future__ import annotations

import json
from statistics import fmean as _mean
from pathlib import Path

from .paths import TRAIN_FIT
from .report_format import build_before, pct

FIT = TRAIN_FIT
COMMAND = "FASTBIONER_HOME=~/fastbioner-experiments/home python -m experiments.train_fit ROW ... --threads 1"


def load_fit(path: Path = FIT) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _signed(x: float) -> str:
    return f"{100 * x:+.2f}".replace("-", "\u2212")


def scorings(teacher: dict) -> list[dict]:
    """A model's scorings on train, oldest build first: the current one and those of
    earlier builds (``train_fit.py`` keeps them under ``earlier`` when it rescores a
    rebuilt model)."""
    return sorted([teacher, *(teacher.get("earlier") or [])], key=lambda b: b.get("devel_finished") or "")


def build_learnt_from(teacher: dict | None, student: dict) -> dict | None:
    """The scoring of the teacher build the student learnt from: the last build
    finished before the student's run (as the report's other sections place a student
    against a rebuilt teacher); the oldest when none is dated before it."""
    if teacher is None:
        return None
    done = student.get("devel_finished")
    if not done:
        return teacher
    builds = scorings(teacher)
    return build_before(builds, done, key="devel_finished")


def fit_section(fit: dict | None) -> list[str]:
    models = (fit or {}).get("models") or {}
    if not models:
        return [f"Not measured yet: `{COMMAND}`."]
    parents = {m.get("parent") for m in models.values()}
    teachers = {name: m for name, m in models.items() if name in parents}
    students = {name: m for name, m in models.items() if name not in teachers}
    files = sorted({m["file"] for m in models.values()})
    out = [f"Each model scored on the file it trained on ({', '.join(f'`{f}`' for f in files)}; "
           f"`{COMMAND}`, each model's own `fastbioner evaluate` command in `experiments/results/train_fit.json`) "
           "beside its devel F1 as its row records it. \"Against teacher\": the student's F1 minus that of "
           "the teacher build it learnt from (the last finished before the student's run), scored the same way.", "",
           "| model | row, seed | layers | train F1 | devel F1 | train - devel | train F1 against teacher | "
           "devel F1 against teacher |", "|---|---|---|---|---|---|---|---|"]

    def against(m: dict, key: str) -> float | None:
        t = build_learnt_from(teachers.get(m.get("parent")), m)
        if t is None or t.get(key) is None or m.get(key) is None:
            return None
        return m[key] - t[key]

    def cell(x: float | None, signed: bool = False) -> str:
        return "–" if x is None else (_signed(x) if signed else pct(x))

    # A teacher rebuilt on a replaced machine is one line per build, each its own scoring.
    lines = []
    for name, t in sorted(teachers.items()):
        several = len(scorings(t)) > 1
        lines += [(f"`{name}`" + (f" (build of {(b.get('devel_finished') or '?')[:10]})" if several else ""), b, False)
                  for b in scorings(t)]
    lines += [(f"`{name}`", m, True) for name, m in sorted(
        students.items(), key=lambda kv: (-(kv[1].get("layers") or 0), kv[1].get("row") or "", kv[0]))]
    for label, m, student in lines:
        gap = m["train_f1"] - m["devel_f1"] if m.get("devel_f1") is not None else None
        out.append(f"| {label} | `{m.get('row')}`, {m.get('seed')} | {m.get('layers') or '–'} | "
                   f"{pct(m['train_f1'])} | {pct(m.get('devel_f1'))} | {cell(gap)} | "
                   f"{cell(against(m, 'train_f1'), True) if student else ''} | "
                   f"{cell(against(m, 'devel_f1'), True) if student else ''} |")

    # Per row: the means over its seeds scored, then what they say.
    by_row: dict[str, list[dict]] = {}
    for m in students.values():
        by_row.setdefault(m.get("row") or "?", []).append(m)
    summary = []
    for row_id, ms in sorted(by_row.items(), key=lambda kv: (-(kv[1][0].get("layers") or 0), kv[0])):
        tb = [b for b in (against(m, "train_f1") for m in ms) if b is not None]
        db = [b for b in (against(m, "devel_f1") for m in ms) if b is not None]
        if tb and db:
            summary.append(f"`{row_id}` (n={len(ms)}): {_signed(_mean(tb))} against its teacher on train, "
                           f"{_signed(_mean(db))} on devel")
    if summary:
        out += ["", "Means per row: " + "; ".join(summary) + "."]
    # Where the gap below the teacher opens, said only when the numbers leave one reading:
    # a student that fits the training text's gold tags at least as well as its teacher
    # and still scores lower on devel lost the points on unseen text.
    pairs = [(against(m, "train_f1"), against(m, "devel_f1")) for m in students.values()]
    pairs = [(t, d) for t, d in pairs if t is not None and d is not None]
    if pairs and all(t >= 0 > d for t, d in pairs):
        out += ["", f"Every student scored ({len(pairs)}) fits the gold tags of the text it trained on at least "
                f"as well as its teacher ({_signed(min(t for t, _ in pairs))} to {_signed(max(t for t, _ in pairs))}) "
                f"and scores below it on devel ({_signed(max(d for _, d in pairs))} to "
                f"{_signed(min(d for _, d in pairs))}): their gap below the teacher is not there on the training "
                "text; it opens on unseen text, so fitting the training text more closely cannot close it."]
    # Rows of the same depth set against each other: is the order on the text they
    # trained on the order on devel? Train F1 is scored against the gold tags, and a
    # distilled student also learns the teacher's soft labels, so fitting the gold tags
    # more closely is not by itself a better student: the comparison says which it was.
    by_depth: dict[int, list[tuple[str, float, float]]] = {}
    for row_id, ms in by_row.items():
        if ms[0].get("layers") and all(m.get("devel_f1") is not None for m in ms):
            by_depth.setdefault(ms[0]["layers"], []).append(
                (row_id, _mean([m["train_f1"] for m in ms]), _mean([m["devel_f1"] for m in ms])))
    for layers, entries in sorted(by_depth.items(), reverse=True):
        if len(entries) < 2:
            continue
        by_train = sorted(entries, key=lambda e: -e[1])
        by_devel = sorted(entries, key=lambda e: -e[2])
        same = [e[0] for e in by_train] == [e[0] for e in by_devel]
        out.append("")
        out.append(f"At {layers} layers (means over the seeds scored) the order on train is "
                   + " > ".join(f"`{e[0]}` {pct(e[1])}" for e in by_train) + "; on devel "
                   + " > ".join(f"`{e[0]}` {pct(e[2])}" for e in by_devel) + ": "
                   + ("the same order, so here the row that fits the training text more closely also scores "
                      "higher on unseen text." if same else
                      "not the same order, so fitting the gold tags of the training text more closely did not "
                      "make the better student here."))
        best = by_devel[0]
        for row_id, train, devel in by_devel[1:]:
            dt = best[1] - train
            out.append(f"`{row_id}` scores {pct(best[2] - devel)} below `{best[0]}` on devel "
                       f"and fits train {pct(abs(dt))} {'less' if dt >= 0 else 'more'}.")
    return out
