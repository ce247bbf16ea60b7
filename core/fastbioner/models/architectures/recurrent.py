"""The recurrent student: BiGRU (or BiLSTM) over wordpiece embeddings, optional CRF.

After the BERT+CRF to BiGRU+CRF paper: the embeddings start as a copy of the
teacher's wordpiece embeddings (same tokenizer, so every token-level soft label
lines up), a bidirectional recurrent layer reads the sentence, a linear layer gives
one score per label at every subword. With a CRF the scores of the first subword of
each word are the CRF's emissions, so transitions are between word labels.

It is a Hugging Face ``PreTrainedModel`` registered under the model type
``fastbioner-rnn``: ``save_pretrained`` writes safetensors and ``config.json``, and
``AutoModelForTokenClassification.from_pretrained`` loads it once this module is
imported (no remote code: the class is ours, not the folder's). Building one from a
teacher is the distillation package's job (:func:`fastbioner.train.distill.students.recurrent_student`).
"""

from __future__ import annotations

import torch
from torch import nn
from fastbioner.models import hf  # noqa: F401  (transformers imported whole first: see hf)
from transformers import AutoConfig, AutoModelForTokenClassification, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import TokenClassifierOutput

from fastbioner.models.architectures.crf import CRF, first_subword_decode, first_subword_nll, label_count


class RecurrentTaggerConfig(PretrainedConfig):
    model_type = "fastbioner-rnn"

    def __init__(self, vocab_size: int = 30522, embedding_size: int = 768, hidden_size: int = 256,
                 num_layers: int = 1, cell: str = "gru", use_crf: bool = True, dropout: float = 0.1,
                 pad_token_id: int = 0, **kwargs):
        if cell not in ("gru", "lstm"):
            raise ValueError(f"cell must be gru or lstm, not {cell!r}")
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.hidden_size = hidden_size  # per direction
        # num_hidden_layers is what the registry and reports read for "layers".
        self.num_hidden_layers = num_layers
        self.cell = cell
        self.use_crf = use_crf
        self.dropout = dropout
        # The config class's __init__ takes any keyword (transformers wraps it so); its
        # annotated signature names only its dataclass fields.
        super().__init__(pad_token_id=pad_token_id, **kwargs)  # type: ignore[call-arg]


class RecurrentTagger(PreTrainedModel):
    config_class = RecurrentTaggerConfig
    base_model_prefix = "rnn"
    main_input_name = "input_ids"

    def __init__(self, config: RecurrentTaggerConfig):
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.embedding_size,
                                       padding_idx=config.pad_token_id)
        cell = nn.GRU if config.cell == "gru" else nn.LSTM
        self.rnn = cell(config.embedding_size, config.hidden_size, num_layers=config.num_hidden_layers,
                        batch_first=True, bidirectional=True,
                        dropout=config.dropout if config.num_hidden_layers > 1 else 0.0)
        self.dropout = nn.Dropout(config.dropout)
        num_labels = label_count(config.num_labels)
        self.classifier = nn.Linear(2 * config.hidden_size, num_labels)
        self.crf = CRF(num_labels) if config.use_crf else None
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        # Embeddings are copied from the teacher after construction; the rest keeps
        # torch's own initialisation, which suits recurrent layers.
        pass

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings

    def set_input_embeddings(self, value: nn.Module) -> None:
        if not isinstance(value, nn.Embedding):
            raise TypeError(f"the recurrent tagger's embeddings are an nn.Embedding, not {type(value).__name__}")
        self.embeddings = value

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                labels: torch.Tensor | None = None, **kwargs) -> TokenClassifierOutput:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        lengths = attention_mask.sum(1).clamp(min=1).cpu()
        x = self.dropout(self.embeddings(input_ids))
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=input_ids.shape[1])
        logits = self.classifier(self.dropout(out))
        loss = self.gold_loss(logits, labels) if labels is not None else None
        return TokenClassifierOutput(loss=loss, logits=logits)

    def gold_loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return first_subword_nll(self.crf, logits, labels)

    def decode(self, logits: torch.Tensor, label_mask: torch.Tensor) -> list[list[int]]:
        return first_subword_decode(self.crf, logits, label_mask)


AutoConfig.register(RecurrentTaggerConfig.model_type, RecurrentTaggerConfig, exist_ok=True)
AutoModelForTokenClassification.register(RecurrentTaggerConfig, RecurrentTagger, exist_ok=True)
