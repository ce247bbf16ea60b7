"""The light tagging engine: plain BERT token classifiers run without transformers.

Importing transformers' model classes and its tokenizer costs seconds, more than
tagging an abstract; the shipped default model and every student initialised from
MiniLM are plain ``BertForTokenClassification`` models, which a few dozen lines of
torch (:mod:`fastbioner.models.light.bert`) and the ``tokenizers`` library
(:mod:`fastbioner.models.light.tokenizer`) run with the same logits and the same subwords.
:mod:`fastbioner.models.loading` picks this engine where it applies; training, distillation
and every other architecture keep transformers.
"""

from __future__ import annotations


class Unsupported(Exception):
    """The folder is not one the light engine reproduces exactly (another model type,
    a custom head, a tokenizer with other settings ...); the message says why, and the
    caller falls back to transformers. A folder that is broken raises
    :class:`fastbioner.base.errors.ModelError` instead."""
