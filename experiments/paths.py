"""Where the research area's files are: the one module that names them (every other
module of ``experiments/`` imports its paths from here).

What the research writes lives under ``experiments/results/``, beside the code that
writes it; the product's benchmarks (``benchmarks/``: tagging speed, start-up, scale,
the GPU check) keep theirs in ``benchmarks/results/``, written there by those scripts
(``benchmarks/results_file.py`` names that folder for them), and the report only reads
them."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# The research's own results (written by the modules named beside each).
RESULTS = REPO / "experiments" / "results"
PAPER_ROWS = RESULTS / "paper_rows.json"                  # paper_results (the queue records each run)
PAPER_ROWS_1EPOCH = RESULTS / "paper_rows_1epoch.json"    # the one-epoch rows, archived (the report quotes them)
FINAL_BUILDS = RESULTS / "final_builds.json"              # final_build
TEACHER_ENSEMBLE = RESULTS / "teacher_ensemble.json"      # teacher_ensemble
TEACHER_CONTROL = RESULTS / "teacher_on_pubtator_devel.json"  # a teacher scored on whole abstracts (by hand)
TERM_PULL = RESULTS / "term_pull.json"                    # term_pull
TRAIN_FIT = RESULTS / "train_fit.json"                    # train_fit
TRAINING_PRECISION = RESULTS / "training_precision.json"  # bench_training_precision
SPACY_PEER = RESULTS / "spacy_peer.json"                  # spacy_peer
CURATOR_LOOP = RESULTS / "curator_loop.json"              # simulated_curator
NEVER_WORSE = RESULTS / "never_worse.json"                # never_worse (issue 65)

# The product benchmarks' results that the report reads (written by benchmarks/).
BENCHMARK_RESULTS = REPO / "benchmarks" / "results"
STUDENTS_SPEED = BENCHMARK_RESULTS / "students-speed.json"  # bench_inference.py --students
SCALE = BENCHMARK_RESULTS / "scale.json"                    # bench_tag_corpus.py
STREAM = BENCHMARK_RESULTS / "pubmed-stream.json"           # bench_pubmed_stream.py
GPU = BENCHMARK_RESULTS / "gpu"                             # gpu_check.sh

# What the research writes into the documentation: generated pages, never a user guide.
REPORT = REPO / "docs" / "research" / "benchmarks.md"      # paper_tables report
CURATOR_PAGE = REPO / "docs" / "research" / "curator-loop.md"  # simulated_curator --render (its table)
CURATOR_PLOT = REPO / "docs" / "research" / "curator-loop.svg"  # simulated_curator --render (its plot)
