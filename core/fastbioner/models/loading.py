"""One way to load a model: what a folder holds decides which code runs it.

:func:`model_kind` reads a local folder's ``config.json`` (the file
:func:`fastbioner.models.checks.check_model_folder` has checked, through
:func:`fastbioner.models.modeling.check_weights`, before anything is built from it) without
importing torch or transformers:

- ``bert``: model_type ``bert``, architectures ``["BertForTokenClassification"]``
  (the default model, every student initialised from MiniLM): the light engine
  (:mod:`fastbioner.models.light.bert`);
- ``cnn``: model_type ``fastbioner-cnn``, the convolutional student: the light
  engine (:mod:`fastbioner.models.light.small`);
- ``recurrent``: model_type ``fastbioner-rnn``: transformers
  (:mod:`fastbioner.models.architectures.recurrent`);
- ``transformer-crf``: model_type ``fastbioner-transformer-crf``: transformers
  (:mod:`fastbioner.models.architectures.transformer_crf`);
- ``transformer``: anything else (MPNet ...), and hub ids: transformers.

The light engine also needs safetensors weights and a ``tokenizer.json`` that is
BERT's standard pipeline for its ``tokenizer_config.json``
(:mod:`fastbioner.models.light.tokenizer`); a ``bert`` or ``cnn`` folder that is not
(the light code raises :class:`fastbioner.models.light.Unsupported`) loads with
transformers, with the same logits. Training and distillation always load with
transformers (:func:`fastbioner.models.modeling.load_token_classifier`).

No setting is needed. ``engine="transformers"`` (:class:`fastbioner.infer.inference.TaggerConfig`)
forces transformers for one load; the ``FASTBIONER_ENGINE`` environment variable
(``auto`` or ``transformers``) sets what ``auto`` means for a whole process, so that a
test or a comparison can run the same command both ways.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from fastbioner.base.errors import FastBioNERError, ModelError
from fastbioner.models.architectures import register_architectures
from fastbioner.models.light import Unsupported
from fastbioner.models.light.config import CONV_MODEL_TYPE, read_light_config
from fastbioner.models.modeling import check_weights, load_token_classifier, load_tokenizer, transformers_api

ENGINES = ("auto", "transformers")
ENGINE_VARIABLE = "FASTBIONER_ENGINE"  # forces an engine process-wide: for tests and comparisons

# The project's own model types, as their transformers classes declare them
# (fastbioner.models.architectures.*; those modules import transformers, so they are not imported here).
CNN_MODEL_TYPE = CONV_MODEL_TYPE
RNN_MODEL_TYPE = "fastbioner-rnn"
TRANSFORMER_CRF_MODEL_TYPE = "fastbioner-transformer-crf"
KINDS = ("bert", "cnn", "recurrent", "transformer-crf", "transformer")
LIGHT_KINDS = ("bert", "cnn")  # what the light engine may run (it checks the rest itself)


def _config_json(folder: Path) -> dict[str, Any]:
    """config.json's object, or {} when it is missing or unreadable (the loaders then
    say why, with the file's name)."""
    try:
        raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return raw if isinstance(raw, dict) else {}


def model_kind(ref: str | Path) -> str:
    """One of :data:`KINDS` for a model folder (or ``transformer`` for a hub id)."""
    folder = Path(ref)
    if not folder.is_dir():
        return "transformer"
    raw = _config_json(folder)
    model_type = raw.get("model_type")
    if model_type == CNN_MODEL_TYPE:
        return "cnn"
    if model_type == RNN_MODEL_TYPE:
        return "recurrent"
    if model_type == TRANSFORMER_CRF_MODEL_TYPE:
        return "transformer-crf"
    if model_type == "bert" and raw.get("architectures") == ["BertForTokenClassification"]:
        return "bert"
    return "transformer"


def chosen_engine(engine: str = "auto") -> str:
    """``engine``, with ``auto`` read through :data:`ENGINE_VARIABLE` when it is set."""
    if engine == "auto":
        engine = os.environ.get(ENGINE_VARIABLE) or "auto"
        where = f"{ENGINE_VARIABLE}={engine!r}"
    else:
        where = f"engine {engine!r}"
    if engine not in ENGINES:
        raise FastBioNERError(f"{where}: expected one of {', '.join(ENGINES)}")
    return engine


def load_for_tagging(folder: str | Path, engine: str = "auto"):
    """(model, tokenizer) of a model folder or hub id, on the CPU in float32, ready
    for :class:`fastbioner.infer.inference.Tagger`. A broken folder raises ModelError from
    either engine."""
    engine = chosen_engine(engine)
    local = Path(folder).is_dir()
    if local:
        # config.json, weights and manifest within the documented limits before either
        # engine builds (allocates) anything from them.
        check_weights(folder)
    kind = model_kind(folder)
    if engine == "auto" and kind in LIGHT_KINDS:
        try:
            return _load_light(Path(folder), kind)
        except Unsupported:
            pass  # transformers runs it (or refuses it, with its own message)
    return load_token_classifier(folder, device="cpu"), load_tokenizer(folder)


def _load_light(folder: Path, kind: str):
    """The light engine's model for ``kind`` and its
    :class:`fastbioner.models.encoding.SubwordTokenizer`; :class:`fastbioner.models.light.Unsupported`
    for a folder it does not reproduce exactly."""
    from fastbioner.models.light.bert import load_bert_classifier
    from fastbioner.models.light.small import load_conv_classifier
    from fastbioner.models.light.tokenizer import load_wordpiece_tokenizer

    tokenizer = load_wordpiece_tokenizer(folder)  # first: cheap to refuse, the weights are not
    load = load_conv_classifier if kind == "cnn" else load_bert_classifier
    return load(folder), tokenizer


def token_logits(model, input_ids, attention_mask=None):
    """The logits (batch x positions x labels) of either engine's model: the light
    engine's models return the tensor, transformers' an output object holding it."""
    out = model(input_ids=input_ids, attention_mask=attention_mask)
    return getattr(out, "logits", out)


def folder_config(folder: str | Path) -> tuple[Any, str]:
    """The folder's config and its base model's name (the folder, as AutoConfig reports
    it), for describing a folder in a manifest. What the light engine runs (a plain
    BERT, a convolutional student) is read without transformers, so registering or
    tagging such a folder never imports it; any other goes through AutoConfig. Both
    fill what config.json leaves out with transformers' defaults (id2label LABEL_0 ...)."""
    folder = Path(folder)
    try:
        return read_light_config(folder), str(folder)
    except Unsupported:
        pass

    AutoConfig = transformers_api().AutoConfig  # first imported under a lock (see transformers_api)
    register_architectures()  # the folder may hold one of the project's own model types
    try:
        cfg = AutoConfig.from_pretrained(str(folder), trust_remote_code=False)
    except Exception as exc:
        raise ModelError(f"{folder / 'config.json'}: unreadable ({str(exc).splitlines()[0][:160]})") from None
    return cfg, getattr(cfg, "_name_or_path", "") or ""
