"""Speed of ``tag-corpus`` on this machine, local and on Ray, and what it implies for all
of PubMed. Writes ``benchmarks/results/scale.json`` (read by benchmark_report.py).

The corpus: real abstracts (the BC5CDR development set in ``../shared/data``, 500
abstracts) written as gzipped PubMed baseline-style files (``--files`` of
``--per-file`` abstracts; the last one deletes a PMID of the first, as update files
do), or, where the shared data is absent, generated text (labelled so). The model:
``--model`` (default: the shipped default model, a real distilled 6-layer MiniLM); a
tiny random one is used, and labelled so, only when that cannot load.

Each configuration tags the same files into a fresh folder and records the tagging
stage's wall time (model loading excluded, reported apart), tokens/s, and tokens/s
per busy worker (tokens over the time the workers spent inside the Tagger):

- ``local``: this process, ``--threads`` torch thread(s);
- ``ray-1`` and ``ray-2``: Ray on this machine with ``num_cpus=--cpus``, 1 and 2 Tagger
  actors (fractional CPUs, one torch thread each).

Memory: the peak, sampled each second, of the proportional set size summed over this
process and every process it started (under Ray: the GCS, the raylet and the actors, all
on this one node), by ``proc_memory.TreeSampler``.

Derived (arithmetic on the measured per-worker figure, nothing else): worker-hours per
million abstracts and the hours all of PubMed (``--pubmed-abstracts``, about 36
million) takes on N workers. GPU figures are not measured here (``"gpu": "unmeasured"``;
benchmarks/gpu_check.sh measures them on a CUDA machine).

    python benchmarks/bench_tag_corpus.py                      # all configurations
    python benchmarks/bench_tag_corpus.py --configs local      # a subset
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "bc5cdr" / "pubtator" / "CDR_DevelopmentSet.PubTator.txt"
if __package__:  # python -m benchmarks.NAME
    from .results_file import RESULTS as RESULTS_FOLDER
else:  # python benchmarks/NAME.py: Python puts this folder first on the path
    from results_file import RESULTS as RESULTS_FOLDER
RESULTS = RESULTS_FOLDER / "scale.json"
WORKER_COUNTS = (1, 8, 64, 512)


def corpus_documents(limit: int) -> tuple[list, str]:
    from fastbioner import Document, read_documents

    if SHARED.is_file():
        docs = list(read_documents(SHARED))[:limit]
        return docs, f"BC5CDR development set ({len(docs)} real PubMed abstracts)"
    rng = random.Random(0)
    words = ("patients treated with lithium developed renal failure and seizures after cocaine "
             "naloxone reversed the hypotension induced by clonidine in rats").split()
    docs = [Document.from_parts(str(9_000_000 + i), " ".join(rng.choices(words, k=12)).capitalize() + ".",
                                [(None, " ".join(rng.choices(words, k=200)).capitalize() + ".")])
            for i in range(limit)]
    return docs, f"generated text ({len(docs)} abstracts; ../shared/data absent)"


def write_files(docs: list, folder: Path, files: int) -> list[Path]:
    """Gzipped PubMed files of consecutive documents; the last deletes the first PMID."""
    from fastbioner import write_documents

    per = -(-len(docs) // files)
    paths = []
    for k in range(files):
        path = folder / f"pubmed25n{k + 1:04d}.xml.gz"
        write_documents(docs[k * per:(k + 1) * per], path, "pubmed")  # text only: PubMed XML holds no spans
        paths.append(path)
    # An update file's DeleteCitation for the first PMID of the first file.
    import gzip

    with gzip.open(paths[-1], "rt", encoding="utf-8") as fh:
        text = fh.read()
    text = text.replace("</PubmedArticleSet>", f"<DeleteCitation><PMID Version=\"1\">{docs[0].id}</PMID>"
                                               f"</DeleteCitation>\n</PubmedArticleSet>")
    with gzip.open(paths[-1], "wt", encoding="utf-8") as fh:
        fh.write(text)
    return paths


def pick_model(name: str | None) -> tuple[str, str]:
    from fastbioner import Tagger

    try:
        if name is None:
            from fastbioner import default_model

            name = default_model().name
        Tagger.load(name)
        return name, "real"
    except Exception as exc:
        import importlib.util  # the tests' tiny model builder, loaded from its file (tests/ is no package)

        spec = importlib.util.spec_from_file_location("tiny_models", REPO / "tests" / "tiny_models.py")
        tiny_models = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tiny_models)
        make_tiny_model = tiny_models.make_tiny_model

        folder = make_tiny_model(Path(tempfile.mkdtemp(prefix="tiny-model-")))
        print(f"model {name!r} unavailable ({exc}); using a TINY RANDOM model: speeds are not a real model's")
        return str(folder), "tiny random (not a real model)"


try:
    from .proc_memory import TreeSampler
except ImportError:  # run as a script: benchmarks/ is sys.path[0]
    from proc_memory import TreeSampler


def run_config(config: str, paths: list[Path], model: str, threads: int, cpus: int, workdir: Path) -> dict:
    from fastbioner import TaggerConfig
    from fastbioner.research import CorpusOptions, tag_corpus

    load_before = [round(x, 2) for x in os.getloadavg()]
    out = workdir / f"out-{config}"
    shutil.rmtree(out, ignore_errors=True)
    ray_init_seconds = None
    if config == "local":
        options = CorpusOptions()
        tagger = TaggerConfig(threads=threads)
    else:
        import ray

        t0 = time.perf_counter()
        ray.init(num_cpus=cpus, include_dashboard=False, logging_level="ERROR")
        ray_init_seconds = time.perf_counter() - t0
        options = CorpusOptions(engine="ray", workers=int(config.split("-")[1]))
        tagger = TaggerConfig(threads=1)
    try:
        with TreeSampler() as memory:  # this process and, under Ray, its GCS, raylet and actors
            t0 = time.perf_counter()
            s = tag_corpus(paths, out, model, tagger, options)
            total = time.perf_counter() - t0
    finally:
        if config != "local":
            import ray

            ray.shutdown()
    row = {"config": config, "engine": s.engine, "workers": s.workers, "documents": s.documents_tagged,
           "tokens": s.tokens_tagged, "tagging_seconds": round(s.tagging_seconds, 2),
           "startup_seconds": round(s.startup_seconds, 2), "run_seconds": round(total, 2),
           "ray_init_seconds": None if ray_init_seconds is None else round(ray_init_seconds, 2),
           "tokens_per_s": round(s.tokens_per_s, 1),
           "tokens_per_s_per_worker": round(s.tokens_per_s_per_worker, 1),
           "device": s.device, "deleted_dropped": s.deleted_dropped,
           "peak_memory_mb": round(memory.peak_mb, 1), "processes_at_peak": memory.peak_processes,
           "load_average_before": load_before, "load_average_after": [round(x, 2) for x in os.getloadavg()]}
    print(f"{config:<7} {s.workers} worker(s): {s.tokens_tagged:,} tokens in {s.tagging_seconds:.1f} s "
          f"= {s.tokens_per_s:,.0f} tokens/s ({s.tokens_per_s_per_worker:,.0f} per busy worker); "
          f"model load {s.startup_seconds:.1f} s" + (f", ray.init {ray_init_seconds:.1f} s" if ray_init_seconds else "")
          + f"; {s.device.get('precision')} on {s.device.get('device')}; peak memory {memory.peak_mb:,.0f} MB "
          f"over {memory.peak_processes} process(es)")
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--per-file", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the local run")
    ap.add_argument("--cpus", type=int, default=2, help="CPUs Ray is given")
    ap.add_argument("--configs", nargs="+", default=["local", "ray-1", "ray-2"])
    ap.add_argument("--pubmed-abstracts", type=float, default=36e6)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    docs, corpus = corpus_documents(args.files * args.per_file)
    model, kind = pick_model(args.model)
    workdir = Path(tempfile.mkdtemp(prefix="bench-tag-corpus-"))
    try:
        paths = write_files(docs, workdir, args.files)
        runs = [run_config(c, paths, model, args.threads, args.cpus, workdir) for c in args.configs]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    tokens_per_abstract = runs[0]["tokens"] / runs[0]["documents"]
    derived = {}
    for r in runs:
        per_worker = r["tokens_per_s_per_worker"]
        hours_per_million = 1e6 * tokens_per_abstract / per_worker / 3600
        derived[r["config"]] = {
            "worker_hours_per_million_abstracts": round(hours_per_million, 1),
            "pubmed_hours_on_n_workers": {str(n): round(hours_per_million * args.pubmed_abstracts / 1e6 / n, 1)
                                          for n in WORKER_COUNTS},
        }
    result = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU core(s)",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "note": "CPU figures measured on this machine while other jobs shared its cores; "
                "derived figures are arithmetic on the per-worker tokens/s",
        "model": model, "model_kind": kind, "corpus": corpus, "files": args.files,
        "tokens_per_abstract": round(tokens_per_abstract, 1), "pubmed_abstracts": args.pubmed_abstracts,
        "runs": runs, "derived": derived,
        "gpu": "unmeasured",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for c, d in derived.items():
        print(f"{c:<7} {d['worker_hours_per_million_abstracts']:,} worker-hours per million abstracts; all PubMed: "
              + ", ".join(f"{h:,} h on {n}" for n, h in d["pubmed_hours_on_n_workers"].items()))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
