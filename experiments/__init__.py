"""The research area: the paper tables' runs (``runs.toml``), the queue that runs them,
the report generators that write ``docs/research/benchmarks.md`` and the scripts that built the
shipped models, and their results (``results/``, named in ``paths.py``). Outside the
product: it uses the library through ``import fastbioner`` (its public names),
``fastbioner.research`` and the ``fastbioner`` command, and nothing in ``core/`` or the
app imports it. Run its modules from the repository root: ``python -m experiments.NAME``."""
