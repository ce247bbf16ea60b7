"""A plain BERT token classifier's config.json, read without transformers.

:func:`read_config` accepts exactly what :mod:`fastbioner.light.bert` computes like
transformers' ``BertForTokenClassification`` (absolute positions, exact GELU, an
encoder only) and raises :class:`~fastbioner.light.Unsupported` for anything else.
It needs no torch, so the registry can describe such a folder cheaply too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import Unsupported

# transformers' BertConfig defaults, for keys a config.json leaves out.
BERT_DEFAULTS = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                 "intermediate_size": 3072, "max_position_embeddings": 512, "type_vocab_size": 2,
                 "layer_norm_eps": 1e-12, "hidden_act": "gelu", "position_embedding_type": "absolute"}


@dataclass(frozen=True)
class BertClassifierConfig:
    """The model's shape, and what the tagger, the precision code and the reports
    read from ``model.config`` (labels, model type, position limit, layers, width)."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    type_vocab_size: int
    layer_norm_eps: float
    id2label: dict[int, str]
    model_type: str = "bert"

    @property
    def num_labels(self) -> int:
        return len(self.id2label)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "BertClassifierConfig":
        """From config.json's contents; :class:`Unsupported` unless it describes a plain
        BERT token classifier."""
        if raw.get("model_type") != "bert" or raw.get("architectures") != ["BertForTokenClassification"]:
            raise Unsupported(f"not a plain BERT token classifier (model_type {raw.get('model_type')!r}, "
                              f"architectures {raw.get('architectures')!r})")
        values = {**BERT_DEFAULTS, **{k: v for k, v in raw.items() if k in BERT_DEFAULTS and v is not None}}
        if values["hidden_act"] != "gelu":
            raise Unsupported(f"activation {values['hidden_act']!r} (only gelu is built in)")
        if values["position_embedding_type"] != "absolute" or raw.get("is_decoder"):
            raise Unsupported("relative positions or a decoder")
        # As transformers reads it: JSON keys are strings; no labels means LABEL_0 ...
        id2label = {int(k): str(v) for k, v in (raw.get("id2label") or {}).items()}
        id2label = id2label or {i: f"LABEL_{i}" for i in range(int(raw.get("num_labels", 2)))}
        return cls(vocab_size=int(values["vocab_size"]), hidden_size=int(values["hidden_size"]),
                   num_hidden_layers=int(values["num_hidden_layers"]),
                   num_attention_heads=int(values["num_attention_heads"]),
                   intermediate_size=int(values["intermediate_size"]),
                   max_position_embeddings=int(values["max_position_embeddings"]),
                   type_vocab_size=int(values["type_vocab_size"]), layer_norm_eps=float(values["layer_norm_eps"]),
                   id2label=id2label)


def read_config(folder: str | Path) -> BertClassifierConfig:
    """The folder's config.json as a plain BERT token classifier, else :class:`Unsupported`
    (a missing or unreadable file too: transformers' loader then reports it)."""
    try:
        raw = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise Unsupported(f"config.json unreadable ({exc})") from None
    if not isinstance(raw, dict):
        raise Unsupported("config.json is not an object")
    return BertClassifierConfig.from_dict(raw)
