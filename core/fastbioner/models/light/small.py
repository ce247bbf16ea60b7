"""The convolutional student (model type ``fastbioner-cnn``) for inference without
transformers: config.json gives the shape, safetensors the weights, and the very
network training used (:class:`fastbioner.models.architectures.convolution.ConvNet`) computes the
scores, so both engines give the same logits. The CRF decodes as in training.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from fastbioner.models.architectures.convolution import ConvNet, ConvShape
from fastbioner.models.architectures.crf import first_subword_decode
from fastbioner.models.light.config import ConvClassifierConfig, read_light_config
from fastbioner.models.light import Unsupported
from fastbioner.models.light.weights import load_weights


class ConvTokenClassifier(nn.Module):
    """``model(input_ids=..., attention_mask=...)`` is the logits tensor, as
    :class:`fastbioner.models.light.bert.BertTokenClassifier`'s; ``model.decode(...)`` is the
    CRF's decoding, as the transformers-side model's."""

    def __init__(self, config: ConvClassifierConfig):
        super().__init__()
        self.config = config
        self.net = ConvNet(ConvShape(
            vocab_size=config.vocab_size, embedding_size=config.embedding_size, hidden_size=config.hidden_size,
            num_layers=config.num_hidden_layers, kernel_size=config.kernel_size, num_labels=config.num_labels,
            use_crf=config.use_crf, pad_token_id=config.pad_token_id, dropout=0.0,
            project_embeddings=config.project_embeddings, embedding_storage=config.embedding_storage))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **_) -> torch.Tensor:
        return self.net.logits(input_ids, attention_mask)

    def decode(self, logits: torch.Tensor, label_mask: torch.Tensor) -> list[list[int]]:
        return first_subword_decode(self.net.crf, logits, label_mask)


def load_conv_classifier(folder: str | Path, config: ConvClassifierConfig | None = None) -> ConvTokenClassifier:
    """The folder's convolutional tagger in float32, eval mode, on the CPU;
    :class:`Unsupported` for another kind of folder, ModelError for broken weights.
    ``config``: its config.json, when the caller has read it already."""
    light = config or read_light_config(folder)
    if not isinstance(light, ConvClassifierConfig):
        raise Unsupported(f"not a convolutional tagger (model_type {light.model_type!r})")
    try:
        model = ConvTokenClassifier(light)
    except ValueError as exc:  # an even kernel, a zero size
        raise Unsupported(f"config.json: {exc}") from None
    return load_weights(Path(folder), model)
