"""Section 11 of docs/research/benchmarks.md: how hard each loss term pulls on a student, at the
start and once trained (``experiments/term_pull.py``), beside the row's devel F1. A
term's pull is its weighted gradient norm over the student's parameters: what it adds
to the update before the update is clipped. The section sets the methods' pulls side by
side so "why does this method lead here" is read from measurements, not guessed."""

from __future__ import annotations

import json
from pathlib import Path

from .paths import TERM_PULL
from .report_format import NOT_RUN, f1_cell, pct

PULL = TERM_PULL
COMMAND = "FASTBIONER_HOME=~/fastbioner-experiments/home python -m experiments.term_pull ROW ... [--trained]"
TERM_ORDER = ("soft", "gold", "hidden", "hidden-norm", "attention", "embedding", "prob-mse", "logit-mse")
LABEL_TERMS = ("soft", "gold")


def load_pull(path: Path = PULL) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def matching_over_gold(entry: dict) -> float | None:
    """The pull of every term that is not a label term, over the gold term's."""
    matching = [v for t, v in (entry.get("vs_gold") or {}).items() if t not in LABEL_TERMS]
    return sum(matching) if matching else None


def where_the_pull_is(entry: dict) -> str:
    """Which matching term carries the pull: one holding at least 90% of it, or the
    terms it is shared between."""
    vs = {t: v for t, v in entry["vs_gold"].items() if t not in LABEL_TERMS}
    top = max(vs, key=vs.get)
    if vs[top] >= 0.9 * sum(vs.values()):
        return f"{'all' if len(vs) == 1 else 'nearly all'} {top}"
    return "shared by " + " and ".join(vs)


def _devel(entry: dict, results: dict) -> str:
    """The row's devel F1 (mean over seeds); a trained student's own seed's."""
    r = results.get(entry["row"])
    if not r or r.get("f1") is None:
        return NOT_RUN
    if entry.get("seed") is not None:
        own = [x for x in r.get("runs") or [] if x.get("seed") == entry["seed"]]
        return pct(own[0].get("f1")) + f" (seed {entry['seed']})" if own else NOT_RUN
    return f1_cell(r)


def pull_section(pull: dict | None, results: dict) -> list[str]:
    entries = (pull or {}).get("entries") or {}
    if not entries:
        return [f"Not measured yet: `{COMMAND}`."]
    terms = [t for t in TERM_ORDER if any(t in e["terms"] for e in entries.values())]
    clip = next(iter(entries.values())).get("clip")
    out = [f"Each row's own distillation flags on the first {next(iter(entries.values()))['batches']} batches of "
           f"`train.tsv`, before any step (`{COMMAND}`; each measurement's `experiments/loss_scales.py` command is in "
           "`experiments/results/term_pull.json`). A cell is the term's pull: its weighted gradient norm over the "
           "student's parameters (mean over the batches), with its multiple of the gold term's in brackets; a "
           "calibrated row is measured with its calibration applied, as it trains. *Trained*: the row's registered "
           "student as training left it, on the same batches. \"Update · labels\": the cosine of the whole update "
           f"with the label terms' update (1: the step goes where the labels send it). Training clips the whole "
           f"update to norm {clip:g}, so a pull far above that sets the step's direction on its own.", "",
           "| row | layers | student | devel F1 | " + " | ".join(terms) + " | matching ÷ gold | update · labels |",
           "|---|---|---|---|" + "---|" * len(terms) + "---|---|"]

    def cell(e: dict, t: str) -> str:
        if t not in e["terms"]:
            return "–"
        return f"{e['pull'][t]:.3g} ({e['vs_gold'][t]:.3g}x)" if e.get("vs_gold") else f"{e['pull'][t]:.3g}"

    ordered = sorted(entries.values(), key=lambda e: (-(e.get("layers") or 0), e["row"], e["student"] != "start",
                                                      e["student"]))
    for e in ordered:
        m = matching_over_gold(e)
        cos = e.get("label_cosine")
        out.append(f"| `{e['row']}` | {e.get('layers') or '–'} | "
                   f"{'start' if e['student'] == 'start' else 'trained: `' + e['student'] + '`'} | "
                   f"{_devel(e, results)} | " + " | ".join(cell(e, t) for t in terms)
                   + f" | {'–' if m is None else f'{m:.3g}x'} | {'–' if cos is None else f'{cos:.2f}'} |")
    out += ["", *reading(entries, results)]
    return out


def reading(entries: dict, results: dict) -> list[str]:
    """What the table says, computed: the rows by how hard their matching terms pull
    at the start, against their order on devel; and the trained students' pull."""
    lines = []
    for layers in sorted({e.get("layers") or 0 for e in entries.values()}, reverse=True):
        lines += depth_reading([e for e in entries.values() if (e.get("layers") or 0) == layers], results,
                               f"At {layers} layers" if layers else "At the student's depth")
    return [" ".join(lines)] if lines else []


def depth_reading(entries: list[dict], results: dict, where: str) -> list[str]:
    start = [e for e in entries if e["student"] == "start" and matching_over_gold(e)]

    def devel_mean(row_id: str) -> float | None:
        return (results.get(row_id) or {}).get("f1")

    ranked = [(e, devel_mean(e["row"])) for e in start]
    ranked = [(e, d) for e, d in ranked if d is not None]
    lines = []
    if len(ranked) >= 2:
        by_pull = sorted(ranked, key=lambda ed: -matching_over_gold(ed[0]))
        lines.append(f"{where}, at the start the matching terms pull, over the gold term: "
                     + "; ".join(f"`{e['row']}` {matching_over_gold(e):.3g}x, {where_the_pull_is(e)} "
                                 f"(devel {pct(d)})" for e, d in by_pull)
                     + ".")
        best = max(ranked, key=lambda ed: ed[1])
        hardest = by_pull[0]
        if best[0]["row"] == hardest[0]["row"]:
            pulls = [round(matching_over_gold(e), 2) for e, _ in by_pull]
            follows = (len(set(pulls)) == len(pulls) and [e["row"] for e, _ in by_pull]
                       == [e["row"] for e, _ in sorted(ranked, key=lambda ed: -ed[1])])
            lines.append(f"The row that leads on devel among these, `{best[0]['row']}`, is the one whose matching "
                         "pull is strongest" + (", and the others follow their pull." if follows else
                                                "; pull alone does not order the others (" +
                                                ("rows pulling alike differ on devel" if len(set(pulls)) < len(pulls)
                                                 else "what the terms match, and how, matters as well") + ")."))
    starts = {e["row"]: e for e in entries if e["student"] == "start"}
    for e in sorted((e for e in entries if e["student"] != "start"), key=lambda e: e["student"]):
        s = starts.get(e["row"])
        if s and matching_over_gold(s) and matching_over_gold(e):
            lines.append(f"`{e['student']}` (trained, `{e['row']}`): its matching terms still pull "
                         f"{matching_over_gold(e):.3g}x the gold term (at the start {matching_over_gold(s):.3g}x); "
                         "the terms' values: " + ", ".join(f"{t} {s['value'][t]:.3g} → {e['value'][t]:.3g}"
                                                          for t in e["terms"]) + ".")
    return lines
