"""Corpus-scale tagging (all of PubMed, every day): a folder of Parquet shards, one per
input file, whose published snapshot (``current``) always holds exactly the current
documents, tagged by the project's one :class:`~fastbioner.infer.inference.Tagger` on
this machine (``local``) or on a Ray cluster (``ray``, the optional ``scale`` extra,
imported only when chosen). A run tags only the documents whose text or model changed.

- :mod:`.updates`: PubMed's update semantics (deleted and revised citations);
- :mod:`.work`: what both engines run (parsing an input once into a spool; the model's files);
- :mod:`.shards`: rows, Parquet schema, batch-invariant tagging, shard writing;
- :mod:`.view`: the snapshot readers see (``current``), published in one step;
- :mod:`.state`: what the folder remembers (inputs, scans, checkpoints) and where rows are;
- :mod:`.local`, :mod:`.ray_engine`: the engines;
- :mod:`.preflight`: what a run settles first (inputs in PubMed's order, the folder's lock,
  object stores refused, threads);
- :mod:`.corpus`: the job (``tag_corpus``) and its summary.

The names below are imported on first use, so that a Ray parsing task, which imports
:mod:`.work`, does not load torch.
"""

from __future__ import annotations

__all__ = ["CorpusOptions", "CorpusSummary", "tag_corpus"]


def __getattr__(name: str):
    if name in __all__:
        from fastbioner.scale import corpus

        return getattr(corpus, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
