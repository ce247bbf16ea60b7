"""Writes docs/research/benchmarks.md from the rows run by paper_tables.py, the speed
figures of bench_inference.py and the spaCy peer's of spacy_peer.py. Pure formatting:
every number comes from a results file (or a model's manifest); a row with no result
is printed as "not yet run"."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from . import report_frontier
from .paths import REPO, SCALE, STREAM, TEACHER_CONTROL, TEACHER_ENSEMBLE
from .paths import SPACY_PEER as SPACY
from .paths import STUDENTS_SPEED as SPEED
from .report_convergence import PLOT as CONVERGENCE_PLOT, convergence_section
from .report_fit import fit_section, load_fit
from .report_pull import load_pull, pull_section
from .report_gpu import gpu_section
from .report_precision import precision_section
from .runs import CALIBRATED_VARIANT
from .report_format import (
    NOT_RUN, converged, f1_cell, mb, millions, minutes, pct, teacher_builds, teacher_f1_for, wall_cell,
)
from .report_standing import PAPER, standing_section
# The frontier's parts, here too for the tests and scripts that read the report as one module.
from .report_frontier import LEGACY_DEFAULT, frontier_points, pareto, spacy_section  # noqa: F401

PLOT = "benchmarks-speed.png"
# The plots need the bench extra; the tables do not (the test suite writes them without it).
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def type_f1(r: dict, typ: str) -> str:
    s = (r.get("per_type") or {}).get(typ)
    return pct(s["f1"]) if s else "–"


def _types(results: dict) -> list[str]:
    return sorted({t for r in results.values() for t in (r.get("per_type") or {})})


def gap_to_teacher(row, res: dict, results: dict, rows) -> str:
    """A student's F1 points below the teacher build it learnt from (its own teacher:
    the packed-context student's is the packed-context teacher); "–" for a teacher row.
    Rows that learnt from different builds of one teacher compare by this as well as
    by their F1."""
    if not row.teacher or res.get("f1") is None:
        return "–"
    teacher_rows = {r.model: r.id for r in rows if not r.per_seed_name}
    teacher_f1 = teacher_f1_for(results.get(teacher_rows.get(row.teacher, "")), res)
    return "–" if teacher_f1 is None else f"{100 * (teacher_f1 - res['f1']):.2f}"


def method_table(rows, results, dataset: str) -> list[str]:
    types = sorted({t for r in rows if r.dataset == dataset and r.id in results
                    for t in results[r.id].get("per_type", {})}) or ["Chemical", "Disease"]
    out = [f"| row | model | P | R | F1 | gap to its teacher | {' | '.join(t + ' F1' for t in types)} | params | "
           f"epochs | best step / steps | wall time |",
           "|" + "---|" * (10 + len(types))]
    for r in rows:
        if r.dataset != dataset or r.table != 1:
            continue
        res = results.get(r.id)
        if res is None:
            out.append(f"| `{r.id}` | {r.title} | {NOT_RUN} |" + " |" * (7 + len(types)))
            continue
        out.append(f"| `{r.id}` | {r.title} | {pct(res['precision'])} | {pct(res['recall'])} | "
                   f"{f1_cell(res)} | {gap_to_teacher(r, res, results, rows)} | "
                   + " | ".join(type_f1(res, t) for t in types) +
                   f" | {millions(res.get('parameters'))} | {res['epochs']} | {converged(res)} | "
                   f"{wall_cell(res)} |")
    return out


def depth_table(rows, results, table: int, dataset: str = "bc5cdr") -> list[str]:
    out = ["| row | student | layers | params | size on disk (MB) | F1 | gap to its teacher (F1 points) | "
           "best step / steps | wall time |",
           "|---|---|---|---|---|---|---|---|---|"]

    # The depth comparison shows the 6-layer rows of table 1 and the recommended
    # variant's 3-layer row (a seeded ablation of table 4) beside its own.
    same_as_table_1 = {f"{dataset}/{m}-6" for m in ("og", "hinton", "fastbioner", "fastbioner-cal", CALIBRATED_VARIANT)}
    same_as_table_1.add(f"{dataset}/{CALIBRATED_VARIANT}-3")
    picked = [r for r in rows if r.dataset == dataset and (r.table == table or
              (table == 2 and r.id in same_as_table_1))]
    for r in picked:
        res = results.get(r.id)
        if res is None:
            out.append(f"| `{r.id}` | {r.title} | {NOT_RUN} | | | | | | |")
            continue
        gap = gap_to_teacher(r, res, results, rows)  # a teacher row has none (see teacher_ablation)
        out.append(f"| `{r.id}` | {r.title} | {res.get('layers') or '–'} | {millions(res.get('parameters'))} | "
                   f"{mb(res.get('size_bytes'))} | {f1_cell(res)} | {gap} | {converged(res)} | "
                   f"{wall_cell(res)} |")
    return out


def ensemble_line(results: dict, base: dict) -> str:
    """The packed teachers combined word by word (``experiments/teacher_ensemble.py``):
    against the table-1 teacher and the best of the teachers combined, each of the
    builds it combined (a teacher rebuilt since makes it stale, and the line says so)."""
    what = ("- the three packed-context teachers (seeds 13-15) combined word by word by the multi-teacher rule "
            "(what the ensemble students `bc5cdr/hinton-minilm-unl-packed-ens` and "
            "`bc5cdr/hinton-minilm6-ft-unl-packed-ens` learn from)")
    if not TEACHER_ENSEMBLE.is_file():
        return f"{what}: {NOT_RUN} (`python -m experiments.teacher_ensemble` once the three teachers have run)."
    ens = json.loads(TEACHER_ENSEMBLE.read_text(encoding="utf-8"))
    teachers = ens.get("teachers") or {}
    stale = [row for row, b in teachers.items()
             if (results.get(row) or {}).get("finished") not in (None, b.get("finished"))]
    best = max((b for b in teachers.values() if b.get("f1") is not None), key=lambda b: b["f1"], default=None)
    line = (f"{what}, by {ens['combination']}: {pct(ens['f1'])} ({100 * (ens['f1'] - base['f1']):+.2f}), Disease "
            f"{pct(ens['per_type'].get('Disease'))}")
    if best is not None:
        line += (f"; the best of the three alone `{best['model']}` {pct(best['f1'])} "
                f"({100 * (ens['f1'] - best['f1']):+.2f})")
    line += f" (`{ens['command']}`)"
    if stale:
        line += f"; {', '.join(f'`{r}`' for r in stale)} rebuilt since: these are the earlier builds' figures"
    return line + "."


def teacher_ablation(rows, results, dataset: str = "bc5cdr") -> list[str]:
    """Issue 12's teacher levers against the teacher of table 1 (sentence context,
    `train.tsv`), on devel: each that has run, and the control that puts both on the
    same devel documents (the table-1 teacher scored on the PubTator devel conversion
    the PubTator-trained teachers select on)."""
    base = results.get(f"{dataset}/teacher")
    if not base:
        return []
    out = [f"Teachers against `{dataset}/teacher` (sentence context, `train.tsv`; devel F1 {pct(base['f1'])}, "
           f"Disease {pct((base.get('per_type') or {}).get('Disease', {}).get('f1'))}):"]
    control = json.loads(TEACHER_CONTROL.read_text(encoding="utf-8")) if TEACHER_CONTROL.is_file() else None
    if control:
        build = next((b for b in teacher_builds(base) if b.get("finished") == control.get("teacher_finished")),
                     None)
        which = "the same teacher" if build is None or build is base else \
            f"the teacher's earlier build (devel F1 {pct(build.get('f1'))}, finished {build['finished']})"
        out.append(f"- control: {which} scored on the PubTator devel documents (`{control['file']}`, "
                   f"converted by `{control['convert']}`): {pct(control['f1'])} (Disease "
                   f"{pct(control['per_type']['Disease'])}; `{control['command']}`): the two devel files "
                   f"score alike, so the PubTator-trained teachers compare with it; their training text is "
                   f"the same 500 abstracts, tokenized and cut into sentences here (the few mentions off "
                   f"token boundaries lost), where `train.tsv` came tokenized.")
    for r in rows:
        if r.dataset != dataset or r.table != 5 or r.per_seed_name or r.id == f"{dataset}/teacher":
            continue
        res = results.get(r.id)
        if res is None or res.get("f1") is None:
            out.append(f"- `{r.id}` ({r.title}): {NOT_RUN}.")
            continue
        disease = (res.get("per_type") or {}).get("Disease", {}).get("f1")
        earlier = ""
        if res.get("earlier") and base.get("earlier"):  # both rebuilt: the earlier pair, built alike too
            old, old_base = teacher_builds(res)[-2], teacher_builds(base)[-2]
            earlier = (f"; their earlier builds: {pct(old.get('f1'))} against {pct(old_base.get('f1'))} "
                       f"({100 * (old['f1'] - old_base['f1']):+.2f})")
        out.append(f"- `{r.id}` ({r.title}): {pct(res['f1'])} ({100 * (res['f1'] - base['f1']):+.2f}), Disease "
                   f"{pct(disease)}; best at {converged(res)}{earlier}.")
    if dataset == "bc5cdr":
        out.append(ensemble_line(results, base))
    return out


def speed_rows(speed: dict | None) -> list[dict]:
    return ((speed or {}).get("students") or {}).get("rows") or []


def speed_section(speed: dict | None) -> list[str]:
    rows = speed_rows(speed)
    if not rows:
        return [f"_{NOT_RUN}: `python benchmarks/bench_inference.py --skip-engine --teacher TEACHER` "
                f"writes `{SPEED.relative_to(REPO)}`._"]
    s = speed["students"]
    out = [f"Measured in one run, interleaved round by round on the same {s['documents']} BC5CDR devel "
           f"abstracts, by `{speed.get('command', 'benchmarks/bench_inference.py')}` "
           f"({speed.get('hardware', 'CPU')}). Ratios are against the teacher at float32 in the same run; "
           "absolute tokens/s on this shared machine are not comparable between runs.", "",
           "| model | precision | params | size on disk (MB) | tokens/s | "
           "ms per abstract | speed vs teacher | time saved | devel F1 |",
           "|---|---|---|---|---|---|---|---|---|"]
    for m in rows:
        x = m["speed_vs_teacher_fp32"]
        f1 = "–" if m.get("devel_f1") is None else pct(m["devel_f1"])
        out.append(f"| {m['model']} | {m['precision']} | {millions(m.get('parameters'))} | "
                   f"{mb(m.get('size_bytes'))} | {m['tokens_per_s']:.0f} | {m['ms_per_abstract']:.1f} | "
                   f"{x:.2f}x | {100 * (1 - 1 / x):.1f}% | {f1} |")
    out += bf16_by_cpu_lines(speed)
    out += ["", f"![speed and size against the teacher]({PLOT})"]
    return out


def bf16_by_cpu_lines(speed: dict) -> list[str]:
    """bfloat16's gain is the CPU's (AMX or AVX512-BF16 run it at different rates): the
    teacher's bf16 ratio here beside that of the last earlier run on another CPU."""
    def teacher_bf16(run: dict) -> float | None:
        s = run.get("students") or {}
        return next((m["speed_vs_teacher_fp32"] for m in s.get("rows") or []
                     if m["model"] == s.get("teacher") and m["precision"] == "bf16"), None)

    here = teacher_bf16(speed)
    other = next((e for e in reversed(speed.get("earlier") or [])
                  if e.get("hardware") != speed.get("hardware") and teacher_bf16(e) is not None), None)
    if here is None or other is None:
        return []
    return ["", f"bfloat16's gain depends on the CPU: here the teacher tags {here:.2f}x faster in bfloat16 than in "
                f"float32; in the last run on {other['hardware']} (kept in the file under `earlier`, started "
                f"{other.get('started', '?')[:10]}), {teacher_bf16(other):.2f}x."]


def paper_comparison(results: dict, speed: dict | None) -> list[str]:
    """The paper's gaps, sizes and speed-ups beside ours: calibrated FastBioNER with the
    paper's phi, and the variant the defaults run (``fastbioner-cal``), each below the
    teacher it learnt from. Speed is the paper-phi row's architecture's: any student with
    its layers and width tags at its speed (the training method changes no weight's
    shape), so the one timed may be another row's or seed's."""

    teacher = results.get("bc5cdr/teacher")
    fp32 = [m for m in speed_rows(speed) if m["precision"] == "fp32"]
    tspeed = {m["model"]: m for m in fp32}

    def timed_like(res: dict) -> dict | None:
        if res["model"] in tspeed:
            return tspeed[res["model"]]
        return next((m for m in fp32 if m.get("kind") == "student" and m.get("parameters") == res.get("parameters")
                     and m.get("layers") == res.get("layers") and m.get("width") == res.get("width")), None)
    out = ["| layers | paper: F1 below BioBERT | paper: smaller | paper: faster | ours: F1 below teacher "
           "(paper's phi) | ours: F1 below teacher (`fastbioner-cal`) | ours: smaller (parameters) | "
           "ours: faster (time saved, float32) |", "|---|---|---|---|---|---|---|---|"]
    for layers, (gap, smaller, faster) in PAPER.items():
        paper_phi = results.get(f"bc5cdr/fastbioner-cal-{layers}")
        recommended = results.get(f"bc5cdr/{CALIBRATED_VARIANT}-{layers}")
        res = paper_phi or recommended
        if res is None or teacher is None:
            out.append(f"| {layers} | {gap:.2f} | {smaller:.2f}% | {faster:.2f}% | {NOT_RUN} | | | |")
            continue
        gaps = [f"{100 * (teacher_f1_for(teacher, r) - r['f1']):.2f}" if r else NOT_RUN
                for r in (paper_phi, recommended)]
        our_small = 100 * (1 - res["parameters"] / teacher["parameters"])
        s = timed_like(res)
        t = tspeed.get(teacher["model"])
        faster_s = (f"{100 * (1 - t['tokens_per_s'] / s['tokens_per_s']):.2f}%" if s and t else NOT_RUN)
        out.append(f"| {layers} | {gap:.2f} | {smaller:.2f}% | {faster:.2f}% | {gaps[0]} | {gaps[1]} | "
                   f"{our_small:.2f}% | {faster_s} |")
    return out


def commands_section(rows, results) -> list[str]:
    out = []
    prerequisites = {req for r in rows for req in r.requires}
    for r in rows:
        res = results.get(r.id)
        if not res:
            out.append(f"- `{r.id}`: {NOT_RUN}; queue it with `python -m experiments.experiment_queue add {r.id}`")
            continue
        for x in res.get("runs") or [res]:
            # A transfer row (DRET) trains nothing: no epochs, and its wall is not kept.
            epochs = (f"{x['epochs']} epoch{'s' if x['epochs'] != 1 else ''}" if x.get("epochs")
                      else "no training")
            same = f", the same run as `{x['same_run_as']}`" if x.get("same_run_as") else ""
            out.append(f"- `{r.id}` seed {x['seed']} ({epochs}, {minutes(x['wall_seconds'])} wall on {x['cpu']}, "
                       f"{x['cores']} cores, commit {x.get('commit') or '–'}, finished {x['finished']}{same}):  \n"
                       f"  `{x['command']}`")
            builds = teacher_builds(x)  # oldest first; listed newest first, after the current one
            for e, following in reversed(list(zip(builds, builds[1:]))):
                # A prerequisite rebuilt on a replaced machine: the rows finished between
                # this build and the next learnt from this earlier model.
                used = (f" (rows finished from then until {following.get('finished', '–')} used it)"
                        if r.id in prerequisites else "")
                out.append(f"  - an earlier build of the same command: F1 {pct(e.get('f1'))}, "
                           f"{minutes(e.get('wall_seconds'))} wall on {e.get('cpu', '–')}, commit "
                           f"{e.get('commit') or '–'}, finished {e.get('finished', '–')}{used}")
    return out


def sweep_table(rows, results, chosen: str | None = None) -> list[str]:
    """Table 0: the students' learning rate, 3-layer students, BC5CDR: a row per
    method, a column per rate (F1, best step / steps), then each method's best rate
    as the results say and the rate the tables use (``chosen``)."""
    cells: dict[str, dict[str, str]] = {}
    best: dict[str, tuple[float, str]] = {}
    scores: dict[str, dict[str, float]] = {}
    rates: list[str] = []
    for r in rows:
        if r.table != 0:
            continue
        lr = r.args[r.args.index("--lr") + 1] if "--lr" in r.args else "–"
        label = r.title.split(",")[0]
        rates += [lr] if lr not in rates else []
        res = results.get(r.id)
        if res is None or res.get("f1") is None:
            cells.setdefault(label, {})[lr] = NOT_RUN
            continue
        cells.setdefault(label, {})[lr] = f"{f1_cell(res)} · {converged(res)}"
        scores.setdefault(label, {})[lr] = res["f1"]
        if label not in best or res["f1"] > best[label][0]:
            best[label] = (res["f1"], lr)
    out = ["| method | " + " | ".join(f"lr {lr}" for lr in rates) + " |", "|---" * (len(rates) + 1) + "|"]
    out += [f"| {label} | " + " | ".join(by_lr.get(lr, "–") for lr in rates) + " |"  # –: no such row
            for label, by_lr in cells.items()]
    out.append("")
    out.append("F1 · best step / steps. Highest F1 per method: " + (
        "; ".join(f"{label} at {lr} ({pct(f1)})" for label, (f1, lr) in best.items()) or "none run yet")
        + "." + (f" The tables' students train at {chosen}." if chosen else ""))
    # One rate for every method (a fair comparison): the best mean over the methods
    # run at every rate.
    complete = [label for label, by_lr in scores.items() if all(lr in by_lr for lr in rates)]
    if len(complete) > 1:
        means = {lr: sum(scores[m][lr] for m in complete) / len(complete) for lr in rates}
        top = max(means, key=means.get)
        out[-1] += (f" Mean F1 over {', '.join(complete)} at each rate: "
                    + ", ".join(f"{lr}: {pct(m)}" for lr, m in means.items()) + f"; best at {top}.")
    return out


def plot_speed(speed: dict | None, png: Path) -> bool:
    """Parameters, size and tagging speed of each model (fp32) relative to the teacher."""
    rows = [m for m in speed_rows(speed) if m["precision"] == "fp32"]
    if not rows or not HAVE_MATPLOTLIB:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    teacher = rows[0]
    names = [m["model"] for m in rows]
    series = {"parameters": [m["parameters"] / teacher["parameters"] for m in rows],
              "size on disk": [m["size_bytes"] / teacher["size_bytes"] for m in rows],
              "CPU tagging time (float32)": [1 / m["speed_vs_teacher_fp32"] for m in rows]}
    bf16 = {m["model"]: m for m in speed_rows(speed) if m["precision"] == "bf16"}
    if bf16:  # each model's own bfloat16 run, still against the teacher at float32
        series["CPU tagging time (bfloat16)"] = [1 / bf16[n]["speed_vs_teacher_fp32"] if n in bf16 else 0.0
                                                 for n in names]
    fig, ax = plt.subplots(figsize=(max(9, 0.6 * len(rows) + 3), 4.8), dpi=110)
    width = 0.8 / len(series)
    for i, (label, values) in enumerate(series.items()):
        ax.bar([x + (i - (len(series) - 1) / 2) * width for x in range(len(rows))], values, width, label=label)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xticks(range(len(rows)), names, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("relative to the teacher (float32)")
    ax.set_title("Compression and CPU tagging time against the teacher (lower is better)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)
    return True


def scale_section() -> list[str]:
    """Tagging at PubMed scale: the streaming reader's memory and the tag-corpus
    engines' speed (benchmarks/bench_pubmed_stream.py, benchmarks/bench_tag_corpus.py)."""
    out = []
    if STREAM.is_file():
        st = json.loads(STREAM.read_text(encoding="utf-8"))
        out += [f"Reading a generated baseline-style file of {st['articles']:,} articles ({st['gzipped_mb']} MB "
                f"gzipped, {st['xml_mb']} MB of XML), `benchmarks/bench_pubmed_stream.py`:", "",
                "| reader | seconds | peak resident memory (MB) |", "|---|---|---|"]
        for r in st["runs"]:
            if r["method"] != "import":
                out.append(f"| {r['method']} | {r['seconds']} | {r['peak_rss_mb']} |")
        out.append("")
    if not SCALE.is_file():
        return out + [f"_{NOT_RUN}: `python benchmarks/bench_tag_corpus.py` writes `{SCALE.relative_to(REPO)}`._"]
    sc = json.loads(SCALE.read_text(encoding="utf-8"))
    out += [f"`fastbioner tag-corpus` on {sc['files']} gzipped PubMed files ({sc['corpus']}, "
            f"{sc['tokens_per_abstract']} "
            f"tokens per abstract) with `{sc['model']}`, one torch thread per worker, {sc['machine']}, load average "
            f"{sc['load_average'][0]} while it ran ({sc['date']}); `benchmarks/bench_tag_corpus.py`. {sc['note']}.", "",
            "| engine | workers | tokens/s | tokens/s per worker | model start-up (s) | worker-hours per million "
            "abstracts | all of PubMed on 64 workers (h) | on 512 workers (h) |",
            "|---|---|---|---|---|---|---|---|"]
    for r in sc["runs"]:
        d = (sc.get("derived") or {}).get(r["config"], {})
        hours = d.get("pubmed_hours_on_n_workers", {})
        out.append(f"| {r['engine']} | {r['workers']} | {r['tokens_per_s']:.0f} | "
                   f"{r['tokens_per_s_per_worker']:.0f} | {r['startup_seconds']} | "
                   f"{d.get('worker_hours_per_million_abstracts', '–')} | {hours.get('64', '–')} | "
                   f"{hours.get('512', '–')} |")
    precisions = sorted({(r.get("device") or {}).get("precision") or "unknown" for r in sc["runs"]})
    memory = [f"{r['config']} {r['peak_memory_mb']:,.0f} MB over {r['processes_at_peak']} process"
              + ("es" if r['processes_at_peak'] != 1 else "")
              for r in sc["runs"] if r.get("peak_memory_mb")]
    out += ["", f"These CPU figures were measured in {' and '.join(precisions)} (`--precision auto`'s choice on "
            "this CPU) while other jobs shared the two cores (the load average above): read them as a lower "
            "bound for this CPU, and the PubMed hours as the arithmetic they are."
            + (f" Peak memory (proportional set size of the process and all it started): {'; '.join(memory)}."
               if memory else ""), ""] + gpu_section()
    return out


FRONTIER_PLOT = "benchmarks-frontier.png"


def spacy_results() -> dict:
    return json.loads(SPACY.read_text(encoding="utf-8")) if SPACY.is_file() else {}


def frontier_section(sp: dict, results: dict, png: Path) -> list[str]:
    """The accuracy/speed frontier (:mod:`report_frontier`), plotted when matplotlib is here."""
    return report_frontier.frontier_section(sp, results, png, plotting=HAVE_MATPLOTLIB)


def write_report(rows, results: dict, out: Path, preamble: str = "", archive: dict | None = None,
                 student_lr: str | None = None, grid_lr: str | None = None) -> None:
    speed = json.loads(SPEED.read_text(encoding="utf-8")) if SPEED.is_file() else None
    out.parent.mkdir(parents=True, exist_ok=True)  # the plots are written beside the report
    plot_speed(speed, out.parent / PLOT)
    doc: list[str] = ["# Benchmarks: FastBioNER on this hardware", ""]
    if preamble:
        doc += [preamble, ""]
    doc += ["Every number below comes from a results file written by the command shown beside it "
            "(see *Commands* at the end); rows not yet run say so. Scores are entity-level, strict "
            "IOB2 (seqeval), micro-averaged, on the official **devel** split; models are selected on "
            "devel too (there is no test split in this repository), so these are development "
            "figures, not test figures. Queue any row with `python -m experiments.experiment_queue add ROW`, "
            "then `python -m experiments.paper_tables report`. F1 is the mean over the seeds run, with the "
            "sample standard deviation and the seed count (n) where more than one seed ran; a difference "
            "counts only when it exceeds the spread. Welch's t is shown beside it as a measure of how "
            "firm a lead is: with three seeds a side, a t below about 3 could still be chance "
            "(two-sided 5%: 2.8 to 4.3, by the degrees of freedom).", ""]
    doc += ["## Where FastBioNER stands", "",
            "Computed from the tables below each time the report is written: calibrated FastBioNER "
            "against the best baseline at the same depth (mean F1 over seeds) and against its teacher.",
            ""] + standing_section(results, grid_lr) + [""]
    doc += (["## 0. The students' learning rate (3- and 6-layer students, BC5CDR)", ""]
           + sweep_table(rows, results, student_lr) + [""])
    for ds, name in (("bc5cdr", "BC5CDR (Chemical + Disease)"), ("ncbi", "NCBI-disease")):
        doc += [f"## 1. Methods, 6-layer students of the all-mpnet-base-v2 teacher: {name}", ""]
        doc += method_table(rows, results, ds) + [""]
    doc += ["## 2. Depth and width: students of 6, 4 and 3 layers, MiniLM width, BiGRU (BC5CDR)", ""]
    doc += depth_table(rows, results, 2) + [""]
    doc += ["## 3. Compression and speed (CPU tagging)", ""] + speed_section(speed) + [""]
    doc += ["## 4. Ablations of calibrated FastBioNER (3-layer students, BC5CDR)", ""]
    doc += depth_table(rows, results, 4) + [""]
    doc += ["## 5. The paper's figures beside ours", ""] + paper_comparison(results, speed) + [""]
    doc += ["## 6. Candidates for the default model (BC5CDR): teachers and MiniLM students", ""]
    doc += depth_table(rows, results, 5) + [""]
    doc += teacher_ablation(rows, results) + [""]
    sp = spacy_results()
    doc += spacy_section(sp)
    doc += frontier_section(sp, results, out.parent / FRONTIER_PLOT)
    doc += ["## 7. PubMed at scale", ""] + scale_section() + [""]
    doc += ["## 8. Training in bf16 on the CPU, checked against fp32 (3-layer students, BC5CDR)", ""]
    doc += precision_section(rows, results) + [""]
    doc += ["## 9. Convergence: devel F1 through training (the rows run with several seeds)", ""]
    doc += convergence_section(rows, results, out.parent / CONVERGENCE_PLOT, plotting=HAVE_MATPLOTLIB) + [""]
    doc += ["## 10. Fit on train against devel: where the students' gap below the teacher opens", ""]
    doc += fit_section(load_fit()) + [""]
    doc += ["## 11. How hard each loss term pulls: at the start and once trained (BC5CDR)", ""]
    doc += pull_section(load_pull(), results) + [""]
    doc += ["## Commands", ""] + commands_section(rows, results) + [""]
    if archive:
        doc += ["## Earlier: one-epoch rows (sessions 1 and 2)", "",
                "Each student trained 1 epoch (285 steps), devel scored once at its end, FastBioNER at T = 1 "
                "against hinton's T = 2, the teacher trained 2 epochs (devel F1 below); kept in "
                "`experiments/results/paper_rows_1epoch.json` with their commands. The tables above replace them.",
                "", "| row | epochs | F1 |", "|---|---|---|"]
        for row_id in sorted(archive):
            r = archive[row_id]
            doc.append(f"| `{row_id}` | {r.get('epochs')} | {pct(r.get('f1'))} |")
        doc.append("")
    tmp = out.with_suffix(".tmp")
    tmp.write_text("\n".join(doc), encoding="utf-8")
    tmp.replace(out)
