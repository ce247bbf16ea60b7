"""The config.json of the models the light engine runs, read without transformers.

:func:`read_config` accepts exactly what :mod:`fastbioner.models.light.bert` computes like
transformers' ``BertForTokenClassification`` (absolute positions, exact GELU, an
encoder only) and raises :class:`~fastbioner.models.light.Unsupported` for anything else;
:func:`read_light_config` also accepts the convolutional student
(:mod:`fastbioner.models.light.small`). Nothing here needs torch, so the registry can
describe such a folder cheaply too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastbioner.models.light import Unsupported

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


# fastbioner.models.architectures.convolutional.MODEL_TYPE, without importing transformers
CONV_MODEL_TYPE = "fastbioner-cnn"


@dataclass(frozen=True)
class ConvClassifierConfig:
    """A convolutional student's shape (config.json as
    :class:`fastbioner.models.architectures.convolutional.ConvTaggerConfig` writes it) and what the
    tagger reads from ``model.config``."""

    vocab_size: int
    embedding_size: int
    hidden_size: int
    num_hidden_layers: int
    kernel_size: int
    use_crf: bool
    pad_token_id: int
    id2label: dict[int, str]
    project_embeddings: bool = True
    embedding_storage: str = "float"
    model_type: str = CONV_MODEL_TYPE
    max_position_embeddings: None = None  # no position embeddings: windows of any length

    @property
    def num_labels(self) -> int:
        return len(self.id2label)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "ConvClassifierConfig":
        if raw.get("model_type") != CONV_MODEL_TYPE:
            raise Unsupported(f"not a convolutional tagger (model_type {raw.get('model_type')!r})")
        id2label = {int(k): str(v) for k, v in (raw.get("id2label") or {}).items()}
        try:
            config = cls(vocab_size=int(raw["vocab_size"]), embedding_size=int(raw["embedding_size"]),
                         hidden_size=int(raw["hidden_size"]), num_hidden_layers=int(raw["num_hidden_layers"]),
                         kernel_size=int(raw["kernel_size"]), use_crf=bool(raw.get("use_crf", True)),
                         pad_token_id=int(raw.get("pad_token_id") or 0), id2label=id2label,
                         project_embeddings=bool(raw.get("project_embeddings", True)),
                         embedding_storage=str(raw.get("embedding_storage", "float")))
        except (KeyError, TypeError, ValueError) as exc:
            raise Unsupported(f"config.json does not describe a convolutional tagger ({exc!r})") from None
        if not id2label:
            raise Unsupported("no labels in config.json")
        return config


def _raw(folder: str | Path) -> dict[str, Any]:
    try:
        raw = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise Unsupported(f"config.json unreadable ({exc})") from None
    if not isinstance(raw, dict):
        raise Unsupported("config.json is not an object")
    return raw


def read_config(folder: str | Path) -> BertClassifierConfig:
    """The folder's config.json as a plain BERT token classifier, else :class:`Unsupported`
    (a missing or unreadable file too: transformers' loader then reports it)."""
    return BertClassifierConfig.from_dict(_raw(folder))


def read_light_config(folder: str | Path) -> BertClassifierConfig | ConvClassifierConfig:
    """The folder's config.json as any model the light engine runs, else :class:`Unsupported`."""
    raw = _raw(folder)
    if raw.get("model_type") == CONV_MODEL_TYPE:
        return ConvClassifierConfig.from_dict(raw)
    return BertClassifierConfig.from_dict(raw)
