#!/usr/bin/env python
"""A simulated curator teaching the shipped model a guideline it has never seen
(NCBI-disease): review N abstracts of the pool (their gold annotations stand in for
the curator's corrections), fine-tune, score on the devel file. Two ways to pick
what to review, three seeds each:

- ``random``: the first N of the pool shuffled by the seed;
- ``queue``: ``rank``, review, fine-tune, re-rank: the shipped model ranks the pool
  (fastbioner.infer.ranking's order), the curator reviews the top of it, the model is
  fine-tuned on everything reviewed so far (from the shipped model, with
  fine-tune's defaults), the new model ranks what is left, and so on up to N.

Each fine-tune is ``fastbioner fine-tune SHIPPED --train reviewed.conll --name X``
with its defaults (no --dev: a tenth held back), run in-process; the score is
``fastbioner evaluate X devel.tsv``'s Disease F1 (strict IOB2). Results go to a JSON
file, one record per (strategy, seed, size), written after each so a long run can
be stopped and continued (records already there are skipped); ``--render`` writes the
table and the plot into the research page (``paths.CURATOR_PAGE``, between its markers,
and ``paths.CURATOR_PLOT``), never into a user guide.

    OMP_NUM_THREADS=1 python -m experiments.simulated_curator --seeds 13 14 15 \\
        --sizes 25 50 100 200 --threads 2            # the whole curve (hours on 2 cores)
    OMP_NUM_THREADS=1 python -m experiments.simulated_curator --seeds 13 --sizes 25 50 --threads 1
    python -m experiments.simulated_curator --render  # table and plot from the results

Never a test: it trains dozens of models.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

from . import runs
from .paths import CURATOR_LOOP as RESULTS
from .paths import CURATOR_PAGE as DOC_PAGE
from .paths import CURATOR_PLOT as PLOT

DATA = runs.DATA / "ncbi-disease"
POOL = DATA / "pubtator" / "NCBItrainset_corpus.txt"
DEVEL = DATA / "iob" / "devel.tsv"
NCBI_TYPES = ("SpecificDisease", "DiseaseClass", "Modifier", "CompositeMention")
TABLE_START, TABLE_END = "<!-- simulated-curator-table -->", "<!-- /simulated-curator-table -->"


def read_pool(path: Path):
    from fastbioner import read_documents

    docs = list(read_documents(path))
    for d in docs:  # as `convert --map-label SpecificDisease=Disease ...` does
        d.spans = [s.with_(label="Disease") if s.label in NCBI_TYPES else s for s in d.spans]
    return docs


def rank_positions(model_ref: str, docs, positions: list[int], threads: int) -> list[int]:
    """``positions`` of ``docs`` in the queue's order under ``model_ref``."""
    from fastbioner import Tagger, TaggerConfig
    from fastbioner.research import RankedDocument, order_key

    tagger = Tagger.load(model_ref, TaggerConfig(threads=threads, precision="fp32"))
    scored = []
    for start in range(0, len(positions), 64):
        chunk = positions[start:start + 64]
        for p, u in zip(chunk, tagger.uncertainty([docs[p] for p in chunk])):
            scored.append(RankedDocument(docs[p].id, p, u))
    return [r.position for r in sorted(scored, key=order_key)]


def update(start: str, docs, chosen: list[int], seed: int, threads: int, registry, name: str, work: Path):
    """fine-tune ``start`` on the chosen documents; (result, wall seconds)."""
    from fastbioner import FineTuneConfig, fine_tune, write_documents

    train = work / f"{name}.conll"
    write_documents([docs[p] for p in chosen], train)
    config = FineTuneConfig(train_files=[str(train)])
    config.training.seed = seed
    config.training.threads = threads
    t0 = time.monotonic()
    result = fine_tune(start, config, name, registry=registry)
    return result, time.monotonic() - t0


def settings() -> dict:
    """fine-tune's defaults this run used (they may change after it)."""
    from fastbioner import FineTuneConfig

    c = FineTuneConfig().for_model("bert")  # the shipped default model's kind
    return {"epochs": c.training.epochs, "learning_rate": c.training.learning_rate,
            "batch_size": c.training.batch_size, "patience": c.training.early_stopping_patience,
            "freeze_layers": c.freeze_layers, "keep_weights": c.training.keep_weights}


def score(registry, name: str, threads: int) -> dict:
    import torch

    from fastbioner import evaluate_model

    torch.set_num_threads(threads)
    report = evaluate_model(str(registry.get(name).path), DEVEL, registry=registry)
    disease = report.per_type.get("Disease")
    return {"f1_disease": round(100 * disease.f1, 2), "precision_disease": round(100 * disease.precision, 2),
            "recall_disease": round(100 * disease.recall, 2)}


def load_results() -> dict:
    if RESULTS.is_file():
        return json.loads(RESULTS.read_text(encoding="utf-8"))
    return {"pool": "../shared/data/ncbi-disease/pubtator/NCBItrainset_corpus.txt",
            "devel": "../shared/data/ncbi-disease/iob/devel.tsv", "runs": []}


def save_results(results: dict) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    tmp.replace(RESULTS)


def done(results: dict, strategy: str, seed: int, size: int) -> bool:
    """Whether this update already ran with fine-tune's current defaults (a run with
    other settings is kept, and shown apart)."""
    now = settings()
    return any(r["strategy"] == strategy and r["seed"] == seed and r["size"] == size
               and r.get("settings") and {"keep_weights": "best", **r["settings"]} == now for r in results["runs"])


def label(record: dict) -> str:
    s = record.get("settings")
    if not s:
        return "not recorded"
    # Records from before keep_weights existed kept the best held-back score's weights.
    return f"lr {s['learning_rate']:g}, {s['epochs']} epochs, {s.get('keep_weights', 'best')} weights"


def run(args) -> None:
    from fastbioner import Registry, shipped_model_folder

    docs = read_pool(POOL)
    start = str(shipped_model_folder())
    results = load_results()
    command = "python -m experiments.simulated_curator " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    sizes = sorted(args.sizes)
    with tempfile.TemporaryDirectory(prefix="curator-") as tmp:
        work = Path(tmp)
        registry = Registry(work / "models")
        for seed in args.seeds:
            for strategy in args.strategies:
                if all(done(results, strategy, seed, n) for n in sizes):
                    continue
                reviewed: list[int] = []
                current = start
                order = list(range(len(docs)))
                random.Random(seed).shuffle(order)
                for n in sizes:
                    if strategy == "random":
                        reviewed = order[:n]
                    else:  # the queue: rank what is left with the latest model, review its top
                        left = [p for p in range(len(docs)) if p not in set(reviewed)]
                        reviewed = reviewed + rank_positions(current, docs, left, args.threads)[:n - len(reviewed)]
                    name = f"{strategy}-s{seed}-n{n}"
                    if done(results, strategy, seed, n) and strategy == "random":
                        continue
                    result, seconds = update(start, docs, reviewed, seed, args.threads, registry, name, work)
                    current = str(registry.get(name).path)
                    if done(results, strategy, seed, n):
                        continue  # a queue run re-made this round's model to rank the next
                    record = {"strategy": strategy, "seed": seed, "size": n, **score(registry, name, args.threads),
                              "update_seconds": round(seconds, 1),
                              "training_seconds": round(result.training.seconds, 1),
                              "steps": result.training.steps, "held_back": result.held_back,
                              "settings": settings(),
                              "threads": args.threads, "load_average": round(os.getloadavg()[0], 2),
                              "reviewed_tokens": sum(len(docs[p].text.split()) for p in reviewed),
                              "command": command}
                    results["runs"].append(record)
                    save_results(results)
                    print(json.dumps(record), flush=True)


def summary(results: dict, settings_label: str) -> dict:
    table: dict = {}
    for r in results["runs"]:
        if label(r) == settings_label:
            table.setdefault((r["size"], r["strategy"]), []).append(r)
    return table


def render(results: dict) -> None:
    labels = list(dict.fromkeys(label(r) for r in results["runs"]))
    rows = ["| fine-tune settings | reviewed abstracts | random: Disease F1 | queue: Disease F1 | queue - random | "
            "update time (random / queue) | seeds |", "|---|---|---|---|---|---|---|"]
    for settings_label in labels:
        rows += table_rows(summary(results, settings_label), settings_label)
    commands = sorted({r["command"] for r in results["runs"]})
    block = "\n".join([TABLE_START, *rows, "", "Commands that produced these rows:", "",
                       *[f"    {c}" for c in commands], TABLE_END])
    text = DOC_PAGE.read_text(encoding="utf-8")
    head, _, rest = text.partition(TABLE_START)
    _, _, tail = rest.partition(TABLE_END)
    DOC_PAGE.write_text(head + block + tail, encoding="utf-8")
    # The plot: the updates with the current defaults when there are any, else the latest settings run.
    current = label({"settings": settings()})
    shown = current if current in labels else (labels[-1] if labels else current)
    table = summary(results, shown)
    PLOT.write_text(svg(table, sorted({s for s, _ in table}), shown), encoding="utf-8")


def table_rows(table: dict, settings_label: str) -> list[str]:
    sizes = sorted({s for s, _ in table})
    rows = []

    def cell(runs):
        if not runs:
            return "not run", None
        f1 = [r["f1_disease"] for r in runs]
        sd = f" ± {statistics.stdev(f1):.2f}" if len(f1) > 1 else ""
        return f"{statistics.mean(f1):.2f}{sd}", statistics.mean(f1)

    for n in sizes:
        rand, queue = table.get((n, "random"), []), table.get((n, "queue"), [])
        (rt, rm), (qt, qm) = cell(rand), cell(queue)
        diff = f"{qm - rm:+.2f}" if rm is not None and qm is not None else ""
        times = " / ".join(f"{statistics.mean(r['update_seconds'] for r in runs):.0f} s" if runs else "-"
                           for runs in (rand, queue))
        seeds = sorted({r["seed"] for r in rand + queue})
        rows.append(f"| {settings_label} | {n} | {rt} | {qt} | {diff} | {times} | {', '.join(map(str, seeds))} |")
    return rows


def svg(table: dict, sizes: list[int], title: str = "") -> str:
    """A small line plot (no plotting library needed): Disease F1 against reviewed
    abstracts, one line per strategy (mean of the seeds run), each seed a dot."""
    w, h, left, bottom, top, right = 520, 320, 56, 40, 20, 110
    points = [r["f1_disease"] for runs in table.values() for r in runs]
    if not points or not sizes:
        return '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>\n'
    lo, hi = min(points) - 1, max(points) + 1
    xmax = max(sizes)
    x = lambda n: left + (w - left - right) * n / xmax  # noqa: E731
    y = lambda f: h - bottom - (h - top - bottom) * (f - lo) / (hi - lo)  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
           f'font-size="11">', f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>',
           f'<text x="{(w - right + left) / 2}" y="{h - 8}" text-anchor="middle">abstracts reviewed</text>',
           f'<text x="14" y="{(h - bottom + top) / 2}" transform="rotate(-90 14 {(h - bottom + top) / 2})" '
           f'text-anchor="middle">Disease F1 (NCBI devel)</text>',
           f'<text x="{left}" y="{top - 6}">fine-tune {title}</text>']
    for n in sizes:
        out.append(f'<text x="{x(n):.1f}" y="{h - bottom + 14}" text-anchor="middle">{n}</text>')
    for k in range(5):
        f = lo + (hi - lo) * k / 4
        out.append(f'<text x="{left - 4}" y="{y(f) + 4:.1f}" text-anchor="end">{f:.1f}</text>')
    for i, (strategy, colour) in enumerate((("random", "#888888"), ("queue", "#1f77b4"))):
        means = [(n, statistics.mean(r["f1_disease"] for r in table[(n, strategy)]))
                 for n in sizes if table.get((n, strategy))]
        if means:
            path = " ".join(f"{x(n):.1f},{y(f):.1f}" for n, f in means)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for n in sizes:
            for r in table.get((n, strategy), []):
                out.append(f'<circle cx="{x(n):.1f}" cy="{y(r["f1_disease"]):.1f}" r="3" fill="{colour}"/>')
        out.append(f'<text x="{w - right + 10}" y="{top + 16 * (i + 1)}" fill="{colour}">{strategy}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[25, 50, 100, 200])
    p.add_argument("--seeds", type=int, nargs="+", default=[13, 14, 15])
    p.add_argument("--strategies", nargs="+", default=["random", "queue"], choices=["random", "queue"])
    p.add_argument("--threads", type=int, default=1, help="torch threads (1 on a shared machine)")
    p.add_argument("--render", action="store_true", help="only write the docs table and plot from the results")
    args = p.parse_args()
    if not args.render:
        if not POOL.is_file() or not DEVEL.is_file():
            print(f"needs {POOL} and {DEVEL}", file=sys.stderr)
            return 1
        run(args)
    render(load_results())
    return 0


if __name__ == "__main__":
    sys.exit(main())
