"""The issue-12 part of the report: the spaCy peer a CPU user would pick, and the
accuracy/speed frontier the default model is chosen on (every candidate timed beside
spaCy as whole processes, its devel F1 and size from its stored figures, its run or its
manifest). Pure formatting of the records it is given; ``benchmark_report`` reads the
files and says whether to plot."""

from __future__ import annotations

from pathlib import Path

from .report_format import NOT_RUN, mb, minutes, pct

TARGET_F1 = 0.87  # issue 12: the devel F1 a new default model should reach
# What spacy_peer.json called the shipped default before it recorded the default's name.
LEGACY_DEFAULT = "the shipped default"


def timed_models(timing: dict) -> list[dict]:
    """Our models timed against spaCy, in the order timed: the ``models`` list, or the
    single model of a record written before several could be timed."""
    if "models" in timing:
        return timing["models"]
    return [{"model": timing["model"], "seconds": timing["seconds"]["fastbioner"],
             "median_seconds": timing["median_seconds"]["fastbioner"],
             "vs_spacy_speed": timing["fastbioner_vs_spacy_speed"]}]


def spacy_section(sp: dict) -> list[str]:
    """The peer a CPU user would pick: spaCy's CNN NER trained here (experiments/spacy_peer.py)."""
    out = ["### The spaCy peer", ""]
    if not sp:
        return out + [f"_{NOT_RUN}: `python -m experiments.spacy_peer all`._", ""]
    train, score, timing = sp.get("train") or {}, sp.get("score") or {}, sp.get("time")
    if score:
        types = ", ".join(f"{t} {pct(v)}" for t, v in sorted(score.get("per_type_f1", {}).items()))
        config = train.get('config', 'efficiency config')
        out.append(f"spaCy {train.get('spacy', '3.7')} CNN NER ({config}, trained on `train.tsv` here in "
                   f"{minutes(train.get('train_seconds'))}, at most {train.get('max_steps')} steps, stopped by its "
                   f"default patience): devel F1 **{pct(score['devel_f1'])}** ({types}), scored on the BIO tokens "
                   f"as `fastbioner evaluate` scores (`{score.get('command')}`; trained by `{train.get('command')}`).")
    if timing:
        ours = "; ".join(f"`{m['model']}` {m['median_seconds']} s ({m['vs_spacy_speed']:.2f}x spaCy's speed)"
                         for m in timed_models(timing))
        out.append(f"Tagging the {timing['documents']} abstracts as whole processes, {timing['rounds']} alternated "
                   f"rounds: spaCy {timing['median_seconds']['spacy']} s; fastbioner tag with {ours}.")
    else:
        out.append(f"Speed against it (whole processes on the 500 devel abstracts): {NOT_RUN} "
                   f"(`python -m experiments.spacy_peer time`, on a quiet machine).")
    return out + [""]


def recorded_run(name: str, results: dict) -> dict | None:
    """The paper_tables run (one seed's) that registered ``name``, if any."""
    for r in results.values():
        for run in r.get("runs") or [r]:
            if run.get("model") == name:
                return run
    return None


def model_manifest(name: str):
    """The manifest of a timed model: a registry name or a model folder, else the shipped
    default when the name is its (the machine writing the report may never have
    registered it); None when none is found."""
    from fastbioner import FastBioNERError, Registry, read_manifest, shipped_model_folder

    def read(folder: Path):
        try:
            return read_manifest(folder)
        except FastBioNERError:
            return None

    for folder in (Registry().root / name, Path(name).expanduser()):
        if (m := read(folder)) is not None:
            return m
    shipped = read(shipped_model_folder())
    return shipped if shipped is not None and name in (LEGACY_DEFAULT, shipped.name) else None


def model_scores(name: str, results: dict, timed: dict | None = None) -> tuple[float | None, int | None, str]:
    """Devel F1, size on disk and where they come from: the figures stored with its
    times (``spacy_peer.py model-scores``), else the run recorded for the model, else
    its manifest."""
    if timed and timed.get("devel_f1") is not None:
        return timed["devel_f1"], timed.get("size_bytes"), "spacy_peer.json"
    run = recorded_run(name, results)
    if run is not None:
        return run.get("f1"), run.get("size_bytes"), "paper_rows.json"
    m = model_manifest(name)
    if m is not None and m.metrics.get("f1") is not None:
        return m.metrics["f1"], m.size_bytes or None, "manifest"
    return None, None, "–"


def frontier_points(sp: dict, results: dict) -> list[dict]:
    """One point per timed model and one for the spaCy peer: median whole-process
    seconds, speed against spaCy, devel F1 (None when unknown), size and its source."""
    timing = sp["time"]
    points = [{"model": "spaCy CNN (peer)", "seconds": timing["median_seconds"]["spacy"], "speed": 1.0,
               "f1": (sp.get("score") or {}).get("devel_f1"), "size_bytes": None, "source": "spacy_peer.json",
               "peer": True}]
    for m in timed_models(timing):
        f1, size, source = model_scores(m["model"], results, m)
        # A model that ran below float32 (its recorded check let --precision auto pick it) says so.
        label = m["model"] + (f" ({m['precision']})" if m.get("precision") else "")
        # A final build (trained on train + devel) is placed at its train-only twin's devel F1.
        if m.get("scores_of_twin"):
            source = f"its twin {m['scores_of_twin']} ({source})"
            label += " (its twin's F1)"
        points.append({"model": label, "seconds": m["median_seconds"], "speed": m["vs_spacy_speed"],
                       "f1": f1, "size_bytes": size, "source": source, "peer": False})
    return points


def pareto(points: list[dict]) -> set[int]:
    """Indices of the Pareto-optimal points: no other point is at least as fast and as
    accurate and better in one of the two. A point without an F1 cannot be placed."""
    placed = [i for i, p in enumerate(points) if p["f1"] is not None]

    def beats(q: dict, p: dict) -> bool:
        return (q["seconds"] <= p["seconds"] and q["f1"] >= p["f1"]
                and (q["seconds"] < p["seconds"] or q["f1"] > p["f1"]))

    return {i for i in placed if not any(beats(points[j], points[i]) for j in placed if j != i)}


def plot_frontier(points: list[dict], optimal: set[int], documents: str, png: Path, plotting: bool = True) -> bool:
    """Devel F1 against whole-process seconds, the Pareto-optimal points joined as the
    frontier, with the F1 target and spaCy's time as lines."""
    placed = [(i, p) for i, p in enumerate(points) if p["f1"] is not None]
    if not placed or not plotting:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.4), dpi=110)
    for i, p in placed:
        ax.scatter(p["seconds"], 100 * p["f1"], marker="s" if p["peer"] else "o", zorder=3,
                   color="tab:red" if i in optimal else "tab:grey")
        ax.annotate(p["model"], (p["seconds"], 100 * p["f1"]), xytext=(5, 4), textcoords="offset points",
                    fontsize=7)
    front = sorted((points[i] for i in optimal), key=lambda p: p["seconds"])
    # "post": from each frontier point, the best F1 reachable in that time holds until the next one.
    ax.step([p["seconds"] for p in front], [100 * p["f1"] for p in front], where="post", color="tab:red",
            lw=1, label="Pareto frontier (red points)")
    ax.axhline(100 * TARGET_F1, color="tab:green", ls="--", lw=0.8, label=f"target: devel F1 {100 * TARGET_F1:.1f}")
    ax.axvline(points[0]["seconds"], color="tab:blue", ls=":", lw=0.8, label="spaCy's time (square)")
    ax.set_xlim(0, 1.25 * max(p["seconds"] for _, p in placed))  # room for the names on the right
    ax.set_xlabel(f"seconds to tag {documents} as a whole process (median of the rounds)")
    ax.set_ylabel("devel F1 (BC5CDR, strict IOB2)")
    ax.set_title("Accuracy against CPU tagging time: up and left is better")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)
    return True


def frontier_section(sp: dict, results: dict, png: Path, plotting: bool = True) -> list[str]:
    """Issue 12: the default model is picked on a measured accuracy/speed frontier,
    every candidate timed beside spaCy as whole processes on the same abstracts."""
    out = ["### The accuracy/speed frontier", ""]
    timing = sp.get("time")
    if not timing:
        return out + [f"_{NOT_RUN}: `python -m experiments.spacy_peer time --model A --model B ...` (on a quiet "
                      f"machine) times the candidates against spaCy on the 500 devel abstracts._", ""]
    points = frontier_points(sp, results)
    optimal = pareto(points)
    out += [f"Devel F1 against the median wall time of tagging the {timing['documents']} abstracts as whole "
            f"processes ({timing['rounds']} rounds alternated with spaCy, {timing['threads']} threads; "
            f"`{timing.get('command', 'experiments/spacy_peer.py time')}`). A model's F1 and size come from its "
            f"figures stored with its times, else its run in `paper_rows.json`, else its manifest. "
            f"Pareto-optimal: no other point is at least as "
            f"fast and as accurate and better in one; the target is devel F1 {100 * TARGET_F1:.1f} at spaCy's "
            f"time or better.", "",
            "| model | seconds | speed vs spaCy | devel F1 | size on disk (MB) | F1 from | Pareto-optimal |",
            "|---|---|---|---|---|---|---|"]
    for i in sorted(range(len(points)), key=lambda i: points[i]["seconds"]):
        p = points[i]
        out.append(f"| {p['model']} | {p['seconds']} | {p['speed']:.2f}x | {pct(p['f1'])} | {mb(p['size_bytes'])} | "
                   f"{p['source']} | {'**yes**' if i in optimal else ''} |")
    if plot_frontier(points, optimal, f"the {timing['documents']} abstracts", png, plotting):
        out += ["", f"![devel F1 against whole-process tagging time]({png.name})"]
    elif not plotting:
        out += ["", "_The plot needs matplotlib (`pip install -e \".[bench]\"`)._"]
    return out + [""]
