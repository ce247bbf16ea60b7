"""A transformer encoder with a CRF head: the tagging head scores each subword's
labels, and a linear-chain CRF over the first subword of each word picks the best
label sequence (Viterbi) and trains on the sequence's likelihood.

Any Hugging Face encoder serves (``AutoModel``): BERT, MPNet, BioBERT ... Its
configuration is kept inside this model's (``config.encoder``), so the folder reloads
with ``AutoModelForTokenClassification`` once :mod:`fastbioner.models.architectures` has registered
the model type, with no remote code. The tagger decodes it through ``decode``, as it
does the recurrent CRF student.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from torch import nn
from fastbioner.models import hf  # noqa: F401  (transformers imported whole first: see hf)
from transformers import AutoConfig, AutoModel, AutoModelForTokenClassification, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import TokenClassifierOutput

from fastbioner.models.architectures.crf import CRF, first_subword_decode, first_subword_nll, label_count


class TransformerCRFConfig(PretrainedConfig):
    model_type = "fastbioner-transformer-crf"

    def __init__(self, encoder: dict[str, Any] | None = None, classifier_dropout: float = 0.1, **kwargs):
        self.encoder = dict(encoder or {})
        self.classifier_dropout = classifier_dropout
        # What the registry and the reports read ("layers", "width").
        self.num_hidden_layers = self.encoder.get("num_hidden_layers")
        self.hidden_size = self.encoder.get("hidden_size")
        self.num_attention_heads = self.encoder.get("num_attention_heads")
        super().__init__(**kwargs)


class TransformerCRFTagger(PreTrainedModel):
    config_class = TransformerCRFConfig
    base_model_prefix = "encoder"
    main_input_name = "input_ids"

    def __init__(self, config: TransformerCRFConfig):
        super().__init__(config)
        encoder_config = AutoConfig.for_model(**config.encoder)
        try:  # no pooler: tagging reads every position, never the pooled [CLS]
            self.encoder = AutoModel.from_config(encoder_config, add_pooling_layer=False)
        except TypeError:
            self.encoder = AutoModel.from_config(encoder_config)
        self.dropout = nn.Dropout(config.classifier_dropout)
        num_labels = label_count(config.num_labels)
        self.classifier = nn.Linear(encoder_config.hidden_size, num_labels)
        self.crf = CRF(num_labels)
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        # The encoder comes pretrained (from_encoder) or from saved weights; the head
        # keeps torch's own initialisation, the CRF starts at zero transitions.
        pass

    def get_input_embeddings(self) -> nn.Module:
        return self.encoder.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.encoder.set_input_embeddings(value)

    @classmethod
    def from_encoder(cls, ref: str, labels: Sequence[str]) -> "TransformerCRFTagger":
        """A CRF tagger over the pretrained encoder ``ref`` (folder or model id; no
        remote code, safetensors only), with a fresh head for ``labels``."""
        base = AutoModel.from_pretrained(str(ref), use_safetensors=True, trust_remote_code=False,
                                         dtype=torch.float32)
        config = TransformerCRFConfig(encoder=base.config.to_dict(), num_labels=len(labels),
                                      id2label=dict(enumerate(labels)),
                                      label2id={l: i for i, l in enumerate(labels)})
        model = cls(config)
        missing, _unexpected = model.encoder.load_state_dict(base.state_dict(), strict=False)
        real_missing = [k for k in missing if "pooler" not in k]
        if real_missing:
            raise ValueError(f"{ref}: encoder weights missing ({', '.join(real_missing[:3])})")
        return model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                labels: torch.Tensor | None = None, output_hidden_states: bool | None = None,
                output_attentions: bool | None = None, **kwargs) -> TokenClassifierOutput:
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                           output_hidden_states=output_hidden_states, output_attentions=output_attentions)
        logits = self.classifier(self.dropout(out.last_hidden_state))
        loss = self.gold_loss(logits, labels) if labels is not None else None
        return TokenClassifierOutput(loss=loss, logits=logits, hidden_states=out.hidden_states,
                                     attentions=out.attentions)

    def gold_loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """CRF negative log-likelihood over the labelled positions (first subwords)."""
        return first_subword_nll(self.crf, logits, labels)

    def decode(self, logits: torch.Tensor, label_mask: torch.Tensor) -> list[list[int]]:
        """Viterbi labels of each labelled position (the first subword of each word)."""
        return first_subword_decode(self.crf, logits, label_mask)


AutoConfig.register(TransformerCRFConfig.model_type, TransformerCRFConfig, exist_ok=True)
AutoModelForTokenClassification.register(TransformerCRFConfig, TransformerCRFTagger, exist_ok=True)
