"""Corpus-scale tagging (all of PubMed): Parquet shards, one per input file, tagged by
the project's one :class:`~fastbioner.inference.Tagger` on this machine (``local``) or
on a Ray cluster (``ray``, the optional ``scale`` extra, imported only when chosen).

- :mod:`.updates`: PubMed's update semantics (deleted and revised citations);
- :mod:`.work`: what both engines run (a shard's job, reading its kept documents);
- :mod:`.shards`: rows, Parquet schema, atomic shard writing, resume fingerprints;
- :mod:`.local`, :mod:`.ray_engine`: the engines;
- :mod:`.corpus`: the job (``tag_corpus``) and its summary.

The names below are imported on first use, so that a Ray reading task, which imports
:mod:`.work`, does not load torch.
"""

from __future__ import annotations

__all__ = ["CorpusOptions", "CorpusSummary", "tag_corpus"]


def __getattr__(name: str):
    if name in __all__:
        from . import corpus

        return getattr(corpus, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
