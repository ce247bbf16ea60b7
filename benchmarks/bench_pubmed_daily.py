"""What keeping a folder of PubMed shards up to date costs: the baseline's throughput
and memory over the whole run, a run with nothing to do, and a daily update.
Writes ``benchmarks/results/pubmed_daily.json``.

The corpus: real abstracts (BC5CDR training and development sets in ``../shared/data``,
1,000 abstracts; past the first thousand, each repeats an abstract under a new PMID with
the first sentence of another appended, so no two texts are the same and lengths keep
varying) written as gzipped PubMed baseline-style
files, ``--files`` of ``--per-file`` documents; then one update file that revises
``--revise`` PMIDs spread over the baseline files (new text), adds ``--add`` new ones
and deletes ``--delete``, as PubMed's daily files do.

Three runs into one folder, local engine:

1. the baseline (every document tagged): documents/s, tokens/s, and the process's
   resident memory sampled as it goes (at each tenth of the documents, and the peak);
2. the same inputs again (nothing to tag; inputs recognised by size and hash);
3. the update file alone (the folder remembers its baseline): documents tagged,
   seconds, rows superseded and deleted.

    python benchmarks/bench_pubmed_daily.py                                   # small: 2 x 500
    python benchmarks/bench_pubmed_daily.py --files 4 --per-file 30000        # >= 100k documents
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "bc5cdr" / "pubtator"
if __package__:  # python -m benchmarks.NAME
    from .results_file import RESULTS as RESULTS_FOLDER
else:  # python benchmarks/NAME.py: Python puts this folder first on the path
    from results_file import RESULTS as RESULTS_FOLDER
RESULTS = RESULTS_FOLDER / "pubmed_daily.json"


def rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def source_abstracts() -> list:
    from fastbioner import read_documents

    docs = []
    for name in ("CDR_TrainingSet.PubTator.txt", "CDR_DevelopmentSet.PubTator.txt"):
        if (SHARED / name).is_file():
            docs.extend(read_documents(SHARED / name))
    if not docs:
        raise SystemExit(f"{SHARED} is absent: this benchmark needs the shared BC5CDR abstracts")
    return docs


def first_sentence(text: str) -> str:
    end = text.find(". ")
    return text if end < 0 else text[:end + 1]


def document(sources: list, i: int, pmid: int, revised: bool = False):
    """The ``i``-th document: abstract ``i`` of the sources; past the first pass over them,
    with the first sentence of another abstract appended (chosen by ``i`` and the pass),
    so that lengths and sentence mixes keep changing as in real PubMed and no two
    documents share a text: the tagger keeps meeting input shapes it has not seen."""
    from fastbioner import Document

    source, passes = sources[i % len(sources)], i // len(sources)
    abstract = source.abstract
    if passes:
        abstract += " " + first_sentence(sources[(i * 7 + passes * 131) % len(sources)].abstract)
    abstract += " This citation was revised." if revised else ""
    return Document.from_parts(str(pmid), source.title, [(None, abstract)])


def write_pubmed(path: Path, docs: list, deleted: list[int] = ()) -> Path:
    from fastbioner import write_documents

    write_documents(docs, path, "pubmed")
    if deleted:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            text = fh.read()
        block = "".join(f'<PMID Version="1">{p}</PMID>' for p in deleted)
        text = text.replace("</PubmedArticleSet>", f"<DeleteCitation>{block}</DeleteCitation>\n</PubmedArticleSet>")
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    return path


class Sampler:
    """Resident memory every ``every`` seconds, with the documents tagged by then."""

    def __init__(self, every: float = 0.5):
        self.every, self.documents, self.samples = every, 0, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.samples.append((self.documents, rss_mb()))

    def on_event(self, event) -> None:
        if event.stage == "tag" and event.step:
            self.documents = event.step

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append((self.documents, rss_mb()))


def run(paths, out, model, config, options, sample: bool = False) -> tuple[dict, list]:
    from fastbioner.research import tag_corpus

    t0 = time.perf_counter()
    if sample:
        with Sampler() as sampler:
            s = tag_corpus(paths, out, model, config, options, on_event=sampler.on_event)
        samples = sampler.samples
    else:
        s, samples = tag_corpus(paths, out, model, config, options), []
    seconds = time.perf_counter() - t0
    row = {"run_seconds": round(seconds, 2), "tagging_seconds": round(s.tagging_seconds, 2),
           "startup_seconds": round(s.startup_seconds, 2), "inputs_given": s.inputs_given,
           "inputs_parsed": s.inputs_parsed, "documents_tagged": s.documents_tagged,
           "documents_unchanged": s.documents_kept, "documents_in_folder": s.documents,
           "tokens_tagged": s.tokens_tagged, "tokens_per_s": round(s.tokens_per_s, 1),
           "documents_per_s": round(s.documents_tagged / s.tagging_seconds, 1) if s.tagging_seconds else 0.0,
           "removed_now": s.removed_now, "failures": s.failures, "device": s.device,
           "shards_written": sum(x["status"] == "written" for x in s.shards)}
    return row, samples


def memory_profile(samples: list, total: int) -> dict:
    """RSS (MB) when each tenth of the documents had been tagged, and the peak."""
    marks = {}
    for tenth in range(1, 11):
        want = total * tenth // 10
        got = [mb for docs, mb in samples if docs >= want]
        if got:
            marks[str(want)] = round(got[0], 1)
    peak = max(samples, key=lambda x: x[1], default=(0, 0.0))
    # The series, at most about 200 points (each the largest of its stretch of samples):
    # where the peak falls (parsing before the first document, a shard's end) shows.
    step = max(1, len(samples) // 200)
    series = [max(samples[i:i + step], key=lambda x: x[1]) for i in range(0, len(samples), step)]
    return {"rss_mb_at_documents": marks, "peak_rss_mb": round(peak[1], 1), "peak_at_documents": peak[0],
            "rss_series": [[d, round(mb, 1)] for d, mb in series]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="registry name or folder (default: the shipped default)")
    ap.add_argument("--precision", default="auto")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: tag-corpus's own)")
    ap.add_argument("--files", type=int, default=2)
    ap.add_argument("--per-file", type=int, default=500)
    ap.add_argument("--revise", type=int, default=120)
    ap.add_argument("--add", type=int, default=20)
    ap.add_argument("--delete", type=int, default=5)
    ap.add_argument("--chunk", type=int, default=64)
    ap.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    from fastbioner import TaggerConfig
    from fastbioner.research import CorpusOptions, model_to_tag

    model = model_to_tag(args.model)
    sources = source_abstracts()
    total = args.files * args.per_file
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="bench-pubmed-daily-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        baseline = [write_pubmed(workdir / f"pubmed25n{k + 1:04d}.xml.gz",
                                 [document(sources, i, 1_000_000 + i)
                                  for i in range(k * args.per_file, (k + 1) * args.per_file)])
                    for k in range(args.files)]
        step = max(1, total // max(1, args.revise))
        revised = [document(sources, i, 1_000_000 + i, revised=True)
                   for i in range(0, total, step)][:args.revise]
        added = [document(sources, total + i, 2_000_000 + i) for i in range(args.add)]
        deleted = [1_000_000 + total - 1 - 7 * i for i in range(args.delete)]
        update = write_pubmed(workdir / f"pubmed25n{args.files + 1:04d}.xml.gz", revised + added, deleted)
        write_seconds = time.perf_counter() - t0
        config = TaggerConfig(precision=args.precision, threads=args.threads)
        options = CorpusOptions(chunk_documents=args.chunk)
        out = workdir / "shards"
        shutil.rmtree(out, ignore_errors=True)
        first, samples = run(baseline, out, model, config, options, sample=True)
        first.update(memory_profile(samples, first["documents_tagged"]))
        print(f"baseline: {first['documents_tagged']:,} documents in {first['tagging_seconds']:.1f} s = "
              f"{first['documents_per_s']:,.1f} documents/s, {first['tokens_per_s']:,.0f} tokens/s "
              f"({first['device'].get('precision')}, {first['device'].get('threads')} thread(s)); "
              f"RSS peak {first['peak_rss_mb']:,.0f} MB (after {first['peak_at_documents']:,} documents); "
              f"by documents: {first['rss_mb_at_documents']}")
        again, _ = run(baseline, out, model, config, options)
        print(f"again, nothing to do: {again['run_seconds']:.2f} s, {again['inputs_parsed']} input(s) parsed, "
              f"{again['documents_tagged']} tagged")
        daily, _ = run([update], out, model, config, options)
        print(f"update alone ({len(revised)} revised, {len(added)} added, {len(deleted)} deleted): "
              f"{daily['documents_tagged']} document(s) tagged, {daily['shards_written']} shard(s) written, "
              f"{daily['run_seconds']:.2f} s in all; removed {daily['removed_now']}; "
              f"{daily['documents_in_folder']:,} documents in the folder")
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    result = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU core(s)",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "note": "measured on this machine while other jobs shared its cores",
        "model": model, "corpus": f"{len(sources)} real BC5CDR abstracts under new PMIDs (past the first pass with "
                                   f"another's first sentence appended), "
                                   f"{args.files} file(s) of {args.per_file}",
        "files_written_seconds": round(write_seconds, 1), "chunk": args.chunk,
        "update": {"revised": len(revised), "added": len(added), "deleted": len(deleted)},
        "baseline": first, "nothing_to_do": again, "daily_update": daily,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
