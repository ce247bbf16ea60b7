"""Product benchmarks (speed, start-up, scale) and the results files of both these and
the research area (``results/``). Scripts that import a sibling run from the repository
root as ``python -m benchmarks.NAME``."""
