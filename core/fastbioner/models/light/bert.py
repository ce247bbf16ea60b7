"""A BERT token classifier for inference in plain torch.

It computes what transformers' ``BertForTokenClassification`` computes in eval mode
(word + position + token-type embeddings and LayerNorm, encoder layers of masked
self-attention, GELU feed-forward and LayerNorm, a linear head), from the same
folder: ``config.json`` for the shape, safetensors for the weights (a pickle is
never opened). Module and parameter names mirror transformers', so a checkpoint's
keys load as they are. It runs only what the tagger needs: no dropout, no
gradients, one segment (token type 0), no pooler.

A folder whose configuration asks for anything else (another architecture,
activation or position scheme, see :mod:`fastbioner.models.light.config`) raises
:class:`~fastbioner.models.light.Unsupported`.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from fastbioner.base.errors import ModelError
from fastbioner.models.light.config import BertClassifierConfig, read_config
from fastbioner.models.light.weights import load_weights


class Embeddings(nn.Module):
    def __init__(self, c: BertClassifierConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        # Added in transformers' order (word + type, then position), so the sums round alike.
        h = self.word_embeddings(input_ids) + self.token_type_embeddings.weight[0]
        return self.LayerNorm(h + self.position_embeddings(positions))


class SelfAttention(nn.Module):
    def __init__(self, c: BertClassifierConfig):
        super().__init__()
        if c.hidden_size % c.num_attention_heads:
            raise ModelError(f"hidden size {c.hidden_size} is not a multiple of {c.num_attention_heads} heads")
        self.heads = c.num_attention_heads
        self.query = nn.Linear(c.hidden_size, c.hidden_size)
        self.key = nn.Linear(c.hidden_size, c.hidden_size)
        self.value = nn.Linear(c.hidden_size, c.hidden_size)

    def forward(self, h: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        b, n, _ = h.shape

        def heads(x: torch.Tensor) -> torch.Tensor:
            return x.view(b, n, self.heads, -1).transpose(1, 2)

        # The fused kernel transformers also uses by default; its scale is 1/sqrt(head size).
        ctx = F.scaled_dot_product_attention(heads(self.query(h)), heads(self.key(h)), heads(self.value(h)),
                                             attn_mask=mask)
        return ctx.transpose(1, 2).reshape(b, n, -1)


class AddNorm(nn.Module):
    """A projection added to the sublayer's input, then LayerNorm."""

    def __init__(self, fan_in: int, c: BertClassifierConfig):
        super().__init__()
        self.dense = nn.Linear(fan_in, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dense(x) + residual)


class Attention(nn.Module):
    def __init__(self, c: BertClassifierConfig):
        super().__init__()
        self.self = SelfAttention(c)
        self.output = AddNorm(c.hidden_size, c)

    def forward(self, h: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        return self.output(self.self(h, mask), h)


class Intermediate(nn.Module):
    def __init__(self, c: BertClassifierConfig):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.intermediate_size)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.dense(h))  # exact (erf) GELU, transformers' "gelu"


class Layer(nn.Module):
    def __init__(self, c: BertClassifierConfig):
        super().__init__()
        self.attention = Attention(c)
        self.intermediate = Intermediate(c)
        self.output = AddNorm(c.intermediate_size, c)

    def forward(self, h: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        h = self.attention(h, mask)
        return self.output(self.intermediate(h), h)


class Encoder(nn.Module):
    def __init__(self, c: BertClassifierConfig):
        super().__init__()
        self.layer = nn.ModuleList(Layer(c) for _ in range(c.num_hidden_layers))


class Bert(nn.Module):
    def __init__(self, c: BertClassifierConfig):
        super().__init__()
        self.embeddings = Embeddings(c)
        self.encoder = Encoder(c)


class BertTokenClassifier(nn.Module):
    """``model(input_ids=..., attention_mask=...)`` is the logits tensor (batch x
    positions x labels); :func:`fastbioner.models.loading.token_logits` reads either engine's
    output."""

    def __init__(self, config: BertClassifierConfig):
        super().__init__()
        self.config = config
        self.bert = Bert(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        # True where a key may be attended to; broadcast over heads and query positions.
        mask = None if attention_mask is None else attention_mask.bool()[:, None, None, :]
        h = self.bert.embeddings(input_ids)
        for layer in self.bert.encoder.layer:
            h = layer(h, mask)
        return self.classifier(h)


def load_bert_classifier(folder: str | Path, config: BertClassifierConfig | None = None) -> BertTokenClassifier:
    """The folder's model in float32, in eval mode, on the CPU.

    :class:`Unsupported` when the folder is not a plain BERT token classifier with
    safetensors weights; :class:`ModelError` when it is one but its weights are
    corrupt, incomplete or of another shape."""
    folder = Path(folder)
    # Checkpoint keys this model lacks (a pooler) are ignored, as transformers ignores them.
    return load_weights(folder, BertTokenClassifier(config or read_config(folder)))
