"""Which code runs a model for tagging: the light engine (:mod:`fastbioner.light`,
no transformers import, seconds less to start) or transformers.

``auto`` takes the light engine for a local folder that holds a plain BERT token
classifier (config.json: model_type ``bert``, architectures
``["BertForTokenClassification"]``) or a convolutional student (``fastbioner-cnn``),
with safetensors weights and a standard BERT tokenizer.json: the shipped default
model, the MiniLM students and convolutional students over MiniLM's embeddings.
Everything else (MPNet, CRF transformer and recurrent students, other tokenizers, hub
ids) loads with transformers, as training and distillation always do. ``transformers`` forces the
latter; the ``FASTBIONER_ENGINE`` environment variable sets what ``auto`` means for a
whole process (to compare the two from the command line).
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import FastBioNERError
from .light import Unsupported
from .modeling import check_weights, load_token_classifier, load_tokenizer

ENGINES = ("auto", "transformers")
ENGINE_VARIABLE = "FASTBIONER_ENGINE"


def chosen_engine(engine: str = "auto") -> str:
    """``engine``, with ``auto`` read through the environment variable."""
    if engine == "auto":
        engine = os.environ.get(ENGINE_VARIABLE) or "auto"
        where = f"{ENGINE_VARIABLE}={engine!r}"
    else:
        where = f"engine {engine!r}"
    if engine not in ENGINES:
        raise FastBioNERError(f"{where}: expected one of {', '.join(ENGINES)}")
    return engine


def load_for_tagging(folder: str | Path, engine: str = "auto"):
    """(model, tokenizer) of a model folder, on the CPU in float32, ready for
    :class:`fastbioner.inference.Tagger`. A broken folder raises ModelError from
    either engine."""
    engine = chosen_engine(engine)
    if Path(folder).is_dir():
        # config.json, weights and manifest within the documented limits before either
        # engine builds (allocates) anything from them.
        check_weights(folder)
    if engine == "auto" and Path(folder).is_dir():
        from .light.bert import load_bert_classifier
        from .light.config import ConvClassifierConfig, read_light_config
        from .light.small import load_conv_classifier
        from .light.tokenizer import load_wordpiece_tokenizer

        try:
            # The tokenizer first: it is cheap to refuse, the weights are not.
            tokenizer = load_wordpiece_tokenizer(folder)
            config = read_light_config(folder)  # read once, and it says which network to build
            load = load_conv_classifier if isinstance(config, ConvClassifierConfig) else load_bert_classifier
            return load(folder, config), tokenizer
        except Unsupported:
            pass  # transformers runs it (or refuses it, with its own message)
    return load_token_classifier(folder, device="cpu"), load_tokenizer(folder)
