#!/usr/bin/env python
"""Start-up costs a user feels, measured as whole processes and in process.

- ``fastbioner --help`` (target: under 0.5 s; it must not import torch);
- ``fastbioner tag`` on one abstract, whole process (imports, model load, tagging);
- one abstract tagged in process by a loaded Tagger (median of N).

The abstract is, by default, the median-length one of the app's shipped samples
(``assets/samples``: 20 BC5CDR devel abstracts, so it runs without the shared corpora),
a real abstract of typical length (a BC5CDR devel abstract averages 235 word tokens and
tagging time grows with the words); ``--toy`` takes this script's own 40-token
``ABSTRACT`` instead, the one earlier figures were measured on. The JSON records which
and how many word tokens.

Each whole-process figure is the median of ``--repeat`` runs. Absolute times depend
on the machine and its load; run it on a quiet machine and compare figures from the
same run only.

    python benchmarks/bench_startup.py [--model NAME] [--repeat 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ABSTRACT = ("12345|t|Cocaine-induced myocardial infarction in a young adult\n"
            "12345|a|A 24-year-old man developed chest pain and acute myocardial infarction after "
            "intranasal cocaine use. Naloxone was not given; aspirin and nitroglycerin relieved the pain.\n")


def typical_sample():
    """The shipped sample abstract of median length (word tokens), without its
    annotations: a Document."""
    from dataclasses import replace

    from fastbioner import read_documents
    from fastbioner.research import samples_folder, tokenize

    (path,) = sorted(samples_folder().glob("*.pubtator"))
    docs = sorted(read_documents(path), key=lambda d: len(tokenize(d.text)))
    return replace(docs[len(docs) // 2], spans=[], relations=[])


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def compare_cuts(tagger, sample, rounds: int = 30) -> dict:
    """One abstract and the 20 shipped samples tagged in process with the batches cut
    where that saves padding (the CPU's default) and left whole (as on a GPU), alternated
    call by call; medians, and whether the entities agree."""
    import contextlib
    from dataclasses import replace

    from fastbioner import read_documents
    from fastbioner.research import inference_module as inference
    from fastbioner.research import samples_folder

    cut = inference.token_budget_batches

    def whole(lengths, budget, rows, overhead=None):
        return cut(lengths, budget, rows, None)

    @contextlib.contextmanager
    def batching(fn):
        inference.token_budget_batches = fn
        try:
            yield
        finally:
            inference.token_budget_batches = cut

    (path,) = sorted(samples_folder().glob("*.pubtator"))
    samples = [replace(d, spans=[], relations=[]) for d in read_documents(path)]
    out: dict = {}
    for label, docs in (("one_abstract", [sample]), ("samples", samples)):
        times: dict = {"cut": [], "whole": []}
        spans = {}
        for r in range(rounds if label == "one_abstract" else max(5, rounds // 6)):
            for mode, fn in (("cut", cut), ("whole", whole))[::1 if r % 2 == 0 else -1]:
                with batching(fn):
                    t0 = time.perf_counter()
                    tagged = tagger.tag(docs)
                    times[mode].append(time.perf_counter() - t0)
                spans[mode] = [[(s.start, s.end, s.label) for s in doc] for doc in tagged]
        out[label] = {"documents": len(docs), "cut_ms": 1000 * statistics.median(times["cut"]),
                      "whole_ms": 1000 * statistics.median(times["whole"]),
                      "same_entities": spans["cut"] == spans["whole"]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="registry name (default: the shipped default model)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json")
    parser.add_argument("--toy", action="store_true", help="the script's own 40-token abstract")
    parser.add_argument("--compare-cuts", action="store_true",
                        help="also time the in-process tagging with and without the padding cuts of "
                             "token_budget_batches, alternated (the abstract, then the 20 shipped samples)")
    args = parser.parse_args(argv)
    from fastbioner import Document, write_documents
    from fastbioner.research import tokenize

    if args.toy:
        text = ABSTRACT.split("|t|")[1].split("\n")[0] + " " + ABSTRACT.split("|a|")[1].strip()
        sample = Document("12345", text)
    else:
        sample = typical_sample()
    words = len(tokenize(sample.text))
    exe = [sys.executable, "-m", "fastbioner.cli.main"]
    env = dict(os.environ)
    from datetime import datetime, timezone

    from fastbioner import cpu_model_name as cpu_name  # the CPU's model name, as the tables record it
    if __package__:  # python -m benchmarks.NAME
        from .results_file import write_keeping_earlier
    else:  # python benchmarks/NAME.py: Python puts this folder first on the path
        from results_file import write_keeping_earlier

    figures: dict = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                     "cpu": cpu_name(), "threads": args.threads,
                     "python": sys.version.split()[0], "repeat": args.repeat,
                     "abstract": "toy" if args.toy else "median shipped sample", "abstract_words": words}
    with tempfile.TemporaryDirectory() as tmp:
        doc = Path(tmp) / "one.pubtator"
        if args.toy:
            doc.write_text(ABSTRACT, encoding="utf-8")
        else:
            write_documents([sample], doc, "pubtator")
        model = ["--model", args.model] if args.model else []
        tag = [*exe, "tag", str(doc), "--out", str(Path(tmp) / "out.jsonl"), "--format", "jsonl",
               "--threads", str(args.threads), "--quiet", *model]
        timed(tag, env)  # first use registers the default model; not what is timed
        figures["help_seconds"] = statistics.median(timed([*exe, "--help"], env) for _ in range(args.repeat))
        figures["tag_one_abstract_process_seconds"] = statistics.median(timed(tag, env) for _ in range(args.repeat))

        from fastbioner import Tagger, TaggerConfig, default_model

        name = args.model or default_model().name
        tagger = Tagger.load(name, TaggerConfig(threads=args.threads))
        tagger.tag([sample])
        times = []
        for _ in range(max(20, args.repeat)):
            t0 = time.perf_counter()
            tagger.tag([sample])
            times.append(time.perf_counter() - t0)
        figures["tag_one_abstract_in_process_ms"] = 1000 * statistics.median(times)
        if args.compare_cuts:
            figures["padding_cuts"] = compare_cuts(tagger, sample)
        figures["model"] = name
        figures["precision"] = tagger.precision.value if hasattr(tagger.precision, "value") else str(tagger.precision)
    for k, v in figures.items():
        print(f"{k}: {v:.3f}" if isinstance(v, float) else f"{k}: {v}")
    if args.json:  # earlier runs (other days, abstracts, machines) stay, as the README quotes them
        write_keeping_earlier(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
