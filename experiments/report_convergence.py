"""Section 9 of docs/research/benchmarks.md: devel F1 through training for the rows run with
several seeds (the top rows of tables 1 and 2, and the ablations of table 4 given
their seeds), so that whether a student converged
shows rather than being assumed. Each run's results carry its devel scorings
(``history``: F1 at every ``--eval-every`` step); per row this section gives the mean
over seeds of the F1 at the end of each epoch, what the last epoch added, where the
best scoring fell, and how far the last scoring lies below the best. A plot of the
mean curves (with each row's spread over seeds) when matplotlib is here."""

from __future__ import annotations

from pathlib import Path

from .report_format import pct

TABLES = (1, 2, 4)  # table 4: the ablations given the triple's seeds (the phi-schedule variants)
B_DEFAULT = 0.3  # --b's default (fastbioner.train.distill.schedules.ScheduleConfig)
PLOT = "benchmarks-convergence.png"


def epoch_scores(run: dict) -> list[float | None]:
    """F1 at the last scoring of each epoch (None for an epoch with no scoring)."""
    epochs, steps = run.get("epochs"), run.get("steps")
    history = sorted(run.get("history") or [], key=lambda h: h["step"])
    if not epochs or not steps or not history:
        return []
    per_epoch = steps / epochs
    out: list[float | None] = []
    for k in range(1, int(epochs) + 1):
        inside = [h["f1"] for h in history if (k - 1) * per_epoch < h["step"] <= k * per_epoch + 1e-9]
        out.append(inside[-1] if inside else None)
    return out


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def seeded_rows(rows, results: dict) -> list[tuple]:
    """(row, its runs that kept their devel scorings) for the rows of tables 1, 2 and 4
    meant to run with several seeds, in the tables' order; rows not run are left out."""
    out = []
    for r in rows:
        if r.table not in TABLES or len(r.seeds) < 2:
            continue
        runs = [x for x in (results.get(r.id) or {}).get("runs", []) if x.get("history")]
        if runs:
            out.append((r, runs))
    return out


def gold_only_from(run: dict) -> float | None:
    """The epoch from which FastBioNER's dynamic phi is 0, so the run trains on gold
    labels alone (phi(s) = max(1 - exp(s/G + b - 1), 0) is 0 from s = (1 - b) G on);
    None for other methods and for a constant schedule. Read from the run's command."""
    args = (run.get("command") or "").split()
    constant = "--schedule" in args and args[args.index("--schedule") + 1] != "dynamic"
    if run.get("method") != "fastbioner" or constant:
        return None
    b = float(args[args.index("--b") + 1]) if "--b" in args else B_DEFAULT
    return (1 - b) * run["epochs"] if run.get("epochs") else None


def group_of(row, runs: list[dict]) -> str:
    layers = runs[0].get("layers")
    return f"{row.dataset}, {layers} layers" if layers else row.dataset


def convergence_table(seeded: list[tuple]) -> list[str]:
    if not seeded:
        return []
    n_epochs = max(len(epoch_scores(x)) for _, runs in seeded for x in runs)
    out = ["| row | seeds | " + " | ".join(f"epoch {k}" for k in range(1, n_epochs + 1)) +
           " | last epoch's gain | best scoring at (epoch) | last below best |",
           "|" + "---|" * (n_epochs + 5)]
    for r, runs in seeded:
        per_run = [epoch_scores(x) for x in runs]
        means = [_mean(s[k] if k < len(s) else None for s in per_run) for k in range(n_epochs)]
        filled = [m for m in means if m is not None]
        gain = f"{100 * (filled[-1] - filled[-2]):+.2f}" if len(filled) >= 2 else "–"
        best_at, below = [], []
        for x in runs:
            scores = [h["f1"] for h in sorted(x["history"], key=lambda h: h["step"])]
            best = max(x["history"], key=lambda h: h["f1"])
            best_at.append(f"{best['step'] * x['epochs'] / x['steps']:.1f}")
            below.append(100 * (max(scores) - scores[-1]))
        out.append(f"| `{r.id}` | {', '.join(str(x['seed']) for x in runs)} | "
                   + " | ".join(pct(m) for m in means) +
                   f" | {gain} | {', '.join(best_at)} | {_mean(below):.2f} |")
    return out


def plot_curves(seeded: list[tuple], png: Path) -> None:
    """One panel per dataset and depth: each row's mean devel F1 over its seeds
    against the epoch, shaded between its lowest and highest seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[str, list[tuple]] = {}
    for r, runs in seeded:
        groups.setdefault(group_of(r, runs), []).append((r, runs))
    fig, axes = plt.subplots(1, len(groups), figsize=(5.5 * len(groups), 4), squeeze=False)
    for ax, (name, members) in zip(axes[0], groups.items()):
        for r, runs in members:
            steps = sorted({h["step"] for x in runs for h in x["history"]})
            by_step = [[h["f1"] for x in runs for h in x["history"] if h["step"] == s] for s in steps]
            per_epoch = runs[0]["steps"] / runs[0]["epochs"]
            xs = [s / per_epoch for s in steps]
            ax.plot(xs, [100 * sum(v) / len(v) for v in by_step], label=f"{r.id.split('/')[-1]} (n={len(runs)})")
            band = ax.fill_between(xs, [100 * min(v) for v in by_step], [100 * max(v) for v in by_step], alpha=0.2)
            handover = gold_only_from(runs[0])
            if handover is not None:  # where phi reaches 0
                ax.axvline(handover, color=band.get_facecolor()[0], alpha=0.6, linestyle=":")
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.set_ylabel("devel F1")
        ax.set_ylim(bottom=70)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


def convergence_section(rows, results: dict, png: Path, plotting: bool = True) -> list[str]:
    """``results``: the aggregated results (each row's ``runs`` per seed)."""
    seeded = seeded_rows(rows, results)
    if not seeded:
        return ["No row with several seeds has run yet."]
    out = ["Devel F1 at the end of each epoch (the epoch's last scoring), mean over the seeds run; "
           "*last epoch's gain* is what the final epoch added to that mean (near zero or below: the "
           "run had levelled off); *best scoring at* is where each seed's kept weights came from; "
           "*last below best* is how far the last scoring lies below the best (mean over seeds, "
           "points). These are the scorings made while training: a row trained with `--cpu-bf16` scored "
           "devel in bf16 there, so its figures can differ from the tables' (the kept weights scored "
           "again in fp32) by a few hundredths.", ""]
    out += convergence_table(seeded)
    handovers = [(r.id, at, runs[0]["epochs"]) for r, runs in seeded
                 if (at := gold_only_from(runs[0])) is not None]
    if handovers:
        out += ["", "FastBioNER's phi reaches 0 (soft labels and matching terms off; gold labels alone, as "
                "`og` trains) at " + "; ".join(f"epoch {at:.1f} of {n} for `{rid}`" for rid, at, n in handovers)
                + " (dotted lines in the plot)."]
    if plotting:
        plot_curves(seeded, png)
        out += ["", f"![devel F1 through training, mean over seeds, shaded between the lowest and highest "
                f"seed]({png.name})"]
    else:
        out += ["", "_The plot needs matplotlib (`pip install -e \".[bench]\"`)._"]
    return out
