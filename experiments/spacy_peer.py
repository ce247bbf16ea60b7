#!/usr/bin/env python
"""The peer a CPU user would pick instead: spaCy's CNN NER, trained here on the same
data, scored the same way and timed against ``fastbioner tag`` side by side.

1. ``train``: converts ``train.tsv`` and ``devel.tsv`` (BIO) to spaCy's DocBin,
   writes spaCy's own default config (``spacy init config -l en -p ner -o
   efficiency``) and trains it with its default settings and a fixed budget
   (``--max-steps``, spaCy's default 20,000, stopping earlier on its default
   patience), selecting on devel as spaCy does.
2. ``score``: devel F1 of the trained model on the BIO tokens (strict IOB2, seqeval,
   as `fastbioner evaluate` scores), overall and per type.
3. ``time``: tags the same abstracts (default: the 500 BC5CDR devel abstracts) as
   whole processes, spaCy and ``fastbioner tag`` with each ``--model`` (repeat it to
   time several; none: the shipped default) alternated round by round ``--rounds``
   times, and reports the median wall time of each and each model's speed against
   spaCy's. The benchmark report plots them against devel F1 (the frontier). The
   experiment queue's models are in its own registry: name it with FASTBIONER_HOME.

Everything lands in ``experiments/results/spacy_peer.json``. spaCy belongs to the
``bench`` extra (``pip install -e ".[bench]"``), never to the core.

    python -m experiments.spacy_peer all --data ../shared/data/bc5cdr --model bc5cdr-minilm-distilled
    python -m experiments.spacy_peer time --rounds 5        # after `train`
    FASTBIONER_HOME=~/fastbioner-experiments/home \\
        python -m experiments.spacy_peer time --model bc5cdr-minilm-distilled --model bc5cdr-hinton-minilm3-ft-s13
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from .paths import REPO
from .paths import SPACY_PEER as RESULTS

WORK = Path(os.environ.get("FASTBIONER_EXPERIMENTS", Path.home() / "fastbioner-experiments")) / "spacy-peer"

# Tags the documents of a PubTator file with a spaCy model, as a whole process would.
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


def read_bio(path: Path) -> list[tuple[list[str], list[str]]]:
    sentences, words, tags = [], [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            if words:
                sentences.append((words, tags))
            words, tags = [], []
            continue
        parts = line.split("\t")
        words.append(parts[0])
        tags.append(parts[-1])
    if words:
        sentences.append((words, tags))
    return sentences


def to_docbin(sentences, out: Path) -> None:
    import spacy
    from spacy.tokens import Doc, DocBin
    from spacy.training import iob_to_biluo, biluo_tags_to_spans

    nlp = spacy.blank("en")
    db = DocBin()
    for words, tags in sentences:
        doc = Doc(nlp.vocab, words=words)
        doc.ents = biluo_tags_to_spans(doc, iob_to_biluo(tags))
        db.add(doc)
    db.to_disk(out)


def train(args) -> dict:
    data = Path(args.data)
    WORK.mkdir(parents=True, exist_ok=True)
    for split in ("train", "devel"):
        to_docbin(read_bio(data / "iob" / f"{split}.tsv"), WORK / f"{split}.spacy")
    config = WORK / "config.cfg"
    subprocess.run([sys.executable, "-m", "spacy", "init", "config", str(config), "-l", "en", "-p", "ner",
                    "-o", "efficiency", "--force"], check=True)
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "spacy", "train", str(config), "--output", str(WORK / "model"),
                    "--paths.train", str(WORK / "train.spacy"), "--paths.dev", str(WORK / "devel.spacy"),
                    "--training.max_steps", str(args.max_steps), "--nlp.batch_size", "256"],
                   check=True, env={**os.environ, "OMP_NUM_THREADS": str(args.threads)})
    import spacy

    return {"train_seconds": round(time.monotonic() - t0, 1), "max_steps": args.max_steps,
            "config": "spacy init config -l en -p ner -o efficiency (defaults)", "spacy": spacy.__version__}


def score(args) -> dict:
    import spacy
    from seqeval.metrics import classification_report, f1_score
    from seqeval.scheme import IOB2
    from spacy.tokens import Doc

    nlp = spacy.load(WORK / "model" / "model-best")
    gold, pred = [], []
    for words, tags in read_bio(Path(args.data) / "iob" / "devel.tsv"):
        doc = nlp(Doc(nlp.vocab, words=words))
        got = ["O"] * len(words)
        for ent in doc.ents:
            got[ent.start] = f"B-{ent.label_}"
            for i in range(ent.start + 1, ent.end):
                got[i] = f"I-{ent.label_}"
        gold.append(tags)
        pred.append(got)
    report = classification_report(gold, pred, mode="strict", scheme=IOB2, output_dict=True)
    return {"devel_f1": f1_score(gold, pred, mode="strict", scheme=IOB2),
            "per_type_f1": {k: v["f1-score"] for k, v in report.items() if k[0].isupper()}}


def shipped_default_name() -> str:
    """The registry name the shipped default registers under: recorded instead of a
    vague "default", since the shipped model changes and its scores are looked up by name."""
    from fastbioner import read_manifest, shipped_model_folder

    return read_manifest(shipped_model_folder()).name or "the shipped default"


def tag_command(docs: Path, out: Path, threads: int, model: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "fastbioner.cli.main", "tag", str(docs), "--out", str(out),
           "--format", "jsonl", "--threads", str(threads), "--quiet"]
    return cmd + (["--model", model] if model else [])


def run_timed(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def alternate(commands: list[list[str]], rounds: int, run) -> list[list[float]]:
    """Seconds of each command per round, the commands run one after the other in
    each round, so a change of load on the machine hits every one of them alike."""
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(rounds):
        for i, cmd in enumerate(commands):
            times[i].append(run(cmd))
    return times


def timing_result(documents: str, rounds: int, threads: int, spacy_seconds: list[float],
                  models: list[str], model_seconds: list[list[float]]) -> dict:
    """The ``time`` record: spaCy's times, then one entry per model of ours, in the
    order timed, each with its speed against spaCy (above 1: faster than spaCy)."""
    spacy_median = statistics.median(spacy_seconds)
    entries = []
    for model, seconds in zip(models, model_seconds, strict=True):
        median = statistics.median(seconds)
        entries.append({"model": model, "seconds": [round(x, 2) for x in seconds],
                        "median_seconds": round(median, 2), "vs_spacy_speed": round(spacy_median / median, 3)})
    return {"documents": documents, "rounds": rounds, "threads": threads,
            "seconds": {"spacy": [round(x, 2) for x in spacy_seconds]},
            "median_seconds": {"spacy": round(spacy_median, 2)}, "models": entries}


def timing(args) -> dict:
    docs = Path(args.data) / "pubtator" / "CDR_DevelopmentSet.PubTator.txt"
    spacy_cmd = [sys.executable, "-c", SPACY_TAGGER, str(WORK / "model" / "model-best"), str(docs)]
    models = args.model or [None]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    with tempfile.TemporaryDirectory() as tmp:
        ours = [tag_command(docs, Path(tmp) / f"t{i}.jsonl", args.threads, m) for i, m in enumerate(models)]
        for cmd in ours:  # untimed: registers the model (the default on first use), warms the file cache
            subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        times = alternate([spacy_cmd, *ours], args.rounds, lambda cmd: run_timed(cmd, env))
    names = [m or shipped_default_name() for m in models]
    return timing_result(docs.name, args.rounds, args.threads, times[0], names, times[1:])


def record_model_scores(timing: dict) -> None:
    """Each timed model's devel F1 (overall and per type) and size on disk, from its
    manifest, stored beside its times: the report's frontier then needs no registry (a
    fresh clone has none of the experiment's models)."""
    from .report_frontier import model_manifest

    for entry in timing.get("models", []):
        m = model_manifest(entry["model"])
        if m is not None and m.metrics.get("f1") is not None:
            entry["devel_f1"] = m.metrics["f1"]
            entry["per_type_f1"] = {t: v["f1"] for t, v in (m.metrics.get("per_type") or {}).items()}
            entry["size_bytes"] = m.size_bytes or None
            # A final build (trained on train + devel) carries its train-only twin's devel
            # scores: said so, as its card says it.
            twin = (m.metrics.get("source") or {}).get("twin")
            if twin:
                entry["scores_of_twin"] = twin
            # `fastbioner tag` ran the precision `--precision auto` picks from the recorded
            # checks (int8 for the fast model): its devel F1 is that mode's, not float32's.
            # The per-type scores stay float32's (a check records the overall F1 only).
            mode = (m.speed or {}).get("precision")
            check = ((m.speed or {}).get("modes") or {}).get(mode) or {}
            if mode and mode != "fp32" and check.get("f1") is not None:
                entry.update(precision=mode, devel_f1=check["f1"], devel_f1_fp32=m.metrics["f1"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=("train", "score", "time", "all", "model-scores"),
                        help="model-scores: store each timed model's devel F1 and size from its manifest "
                             "(again after `fastbioner evaluate MODEL DEVEL --record`)")
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "bc5cdr"))
    parser.add_argument("--model", action="append", help="our model to time, a registry name or folder; "
                        "repeat to time several (default: the shipped default)")
    parser.add_argument("--max-steps", type=int, default=20000, help="spaCy's training budget (its default)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    from fastbioner import cpu_model_name  # the CPU's model name, as the tables record it

    results["machine"] = {"cpu": cpu_model_name(), "cores": os.cpu_count()}
    command = "python -m experiments.spacy_peer " + " ".join(sys.argv[1:] if argv is None else argv)
    # Each step records the command that made it (the steps may run apart).
    if args.step in ("train", "all"):
        if "time" in results:
            # A new peer: the last timing was of the old one, so it joins the earlier
            # timings with that peer's training and score, and the frontier waits for
            # the new peer to be timed (never a timing paired with another model's F1).
            results.setdefault("earlier_times", []).append(
                {**results.pop("time"), "peer": {"train": results.get("train"), "score": results.get("score")}})
        results["train"] = {**train(args), "command": command}
    if args.step in ("score", "all"):
        results["score"] = {**score(args), "command": command}
    if args.step in ("time", "all"):
        # The previous timing is kept, not overwritten: runs on other days (other loads,
        # other code) are the history the README's comparisons quote.
        if "time" in results:
            results.setdefault("earlier_times", []).append(results["time"])
        results["time"] = {**timing(args), "command": command,
                           "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    if args.step in ("time", "all", "model-scores") and "time" in results:
        record_model_scores(results["time"])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
