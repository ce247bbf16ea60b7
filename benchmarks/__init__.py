"""Product benchmarks (speed, start-up, scale) and their results files (``results/``,
named in ``results_file.py``; the research area's results are under
``experiments/results/``). Scripts that import a sibling run from the repository root
as ``python -m benchmarks.NAME``."""
