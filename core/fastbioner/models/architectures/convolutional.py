"""The convolutional student as a Hugging Face model (model type ``fastbioner-cnn``):
:class:`fastbioner.models.architectures.convolution.ConvNet` with the interface training,
distillation and the registry use.

``save_pretrained`` writes safetensors and ``config.json``;
``AutoModelForTokenClassification.from_pretrained`` loads it once this module is
imported (no remote code: the class is ours, not the folder's). The light engine
(:mod:`fastbioner.models.light.small`) loads the same folder without transformers. Building
one for distillation is :func:`fastbioner.train.distill.students.convolutional_student`.
"""

from __future__ import annotations

import torch
from torch import nn
from fastbioner.models import hf  # noqa: F401  (transformers imported whole first: see hf)
from transformers import AutoConfig, AutoModelForTokenClassification, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import TokenClassifierOutput

from fastbioner.models.architectures.convolution import ConvNet, ConvShape, Int8Embedding
from fastbioner.models.architectures.crf import first_subword_decode, first_subword_nll, label_count

MODEL_TYPE = "fastbioner-cnn"


class ConvTaggerConfig(PretrainedConfig):
    model_type = MODEL_TYPE

    def __init__(self, vocab_size: int = 30522, embedding_size: int = 768, hidden_size: int = 256,
                 num_layers: int = 4, kernel_size: int = 3, use_crf: bool = True, dropout: float = 0.1,
                 pad_token_id: int = 0, project_embeddings: bool = True, embedding_storage: str = "float",
                 **kwargs):
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.hidden_size = hidden_size
        # num_hidden_layers is what the registry and reports read for "layers".
        self.num_hidden_layers = num_layers
        self.kernel_size = kernel_size
        self.use_crf = use_crf
        self.dropout = dropout
        self.project_embeddings = project_embeddings
        self.embedding_storage = embedding_storage
        # The config class's __init__ takes any keyword (transformers wraps it so); its
        # annotated signature names only its dataclass fields.
        super().__init__(pad_token_id=pad_token_id, **kwargs)  # type: ignore[call-arg]

    def shape(self) -> ConvShape:
        return ConvShape(vocab_size=self.vocab_size, embedding_size=self.embedding_size,
                         hidden_size=self.hidden_size, num_layers=self.num_hidden_layers,
                         kernel_size=self.kernel_size, num_labels=label_count(self.num_labels), use_crf=self.use_crf,
                         pad_token_id=self.pad_token_id if self.pad_token_id is not None else 0,
                         dropout=self.dropout, project_embeddings=self.project_embeddings,
                         embedding_storage=self.embedding_storage)


class ConvTagger(PreTrainedModel):
    config_class = ConvTaggerConfig
    base_model_prefix = "net"
    main_input_name = "input_ids"

    def __init__(self, config: ConvTaggerConfig):
        super().__init__(config)
        self.net = ConvNet(config.shape())
        self.post_init()

    @property
    def crf(self):
        """The CRF (or None), as the other CRF taggers expose it; its weights live under ``net.crf``."""
        return self.net.crf

    def _init_weights(self, module: nn.Module) -> None:
        # Embeddings are copied from a source model after construction; the rest keeps
        # torch's own initialisation.
        pass

    def get_input_embeddings(self) -> nn.Embedding | Int8Embedding:
        return self.net.embeddings

    def set_input_embeddings(self, value: nn.Module) -> None:
        if not isinstance(value, (nn.Embedding, Int8Embedding)):
            raise TypeError(f"the convolutional tagger's embeddings are a table, not {type(value).__name__}")
        self.net.embeddings = value

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                labels: torch.Tensor | None = None, output_hidden_states: bool = False,
                **kwargs) -> TokenClassifierOutput:
        logits, states = self.net.logits_and_states(input_ids, attention_mask, keep_states=output_hidden_states)
        loss = self.gold_loss(logits, labels) if labels is not None else None
        return TokenClassifierOutput(loss=loss, logits=logits,
                                     hidden_states=tuple(states) if output_hidden_states else None)

    def gold_loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return first_subword_nll(self.net.crf, logits, labels)

    def decode(self, logits: torch.Tensor, label_mask: torch.Tensor) -> list[list[int]]:
        return first_subword_decode(self.net.crf, logits, label_mask)


AutoConfig.register(ConvTaggerConfig.model_type, ConvTaggerConfig, exist_ok=True)
AutoModelForTokenClassification.register(ConvTaggerConfig, ConvTagger, exist_ok=True)
