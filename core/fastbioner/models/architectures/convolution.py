"""The convolutional student's network, in plain torch: wordpiece embeddings, a
projection to the working width, a stack of residual window convolutions, a linear
layer of label scores, an optional CRF.

It is the cheapest tagger the project trains: each block looks at a subword and its
neighbours (``kernel_size`` positions) through one matrix product, with no
recurrence to wait on and no attention, so a sentence costs a few hundred thousand
multiply-adds per subword (a 3-layer 384-wide transformer costs about 5 million).
The design follows spaCy's CNN tagger (its ``MaxoutWindowEncoder``): a stack of
windows widens what each position sees by ``kernel_size - 1`` subwords per block.

The same :class:`ConvNet` runs inside the trainable Hugging Face model
(:class:`fastbioner.models.architectures.convolutional.ConvTagger`) and in the light inference
engine (:mod:`fastbioner.models.light.small`), which loads it without transformers; so the
two cannot compute different things. Nothing here imports transformers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from fastbioner.models.architectures.crf import CRF


EMBEDDING_STORAGE = ("float", "int8")  # ConvShape.embedding_storage


@dataclass(frozen=True)
class ConvShape:
    """Everything that fixes the network's tensors (config.json holds the same keys)."""

    vocab_size: int
    embedding_size: int
    hidden_size: int
    num_layers: int
    kernel_size: int
    num_labels: int
    use_crf: bool = True
    pad_token_id: int = 0
    dropout: float = 0.1
    # False once compaction has folded the projection into the embedding table (then
    # embedding_size == hidden_size): the same function, one matrix product fewer.
    project_embeddings: bool = True
    # "int8": the table is stored as int8 rows with a scale each (compaction, for
    # shipping a whole vocabulary small); "float": an ordinary trainable table.
    embedding_storage: str = "float"

    def validate(self) -> None:
        if self.kernel_size < 1 or self.kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd (a window centred on each subword), not {self.kernel_size}")
        if min(self.hidden_size, self.num_layers, self.embedding_size, self.vocab_size) < 1:
            raise ValueError("sizes and layer count must be at least 1")
        if not self.project_embeddings and self.embedding_size != self.hidden_size:
            raise ValueError(f"without a projection the embeddings must be hidden_size wide "
                             f"({self.embedding_size} != {self.hidden_size})")
        if self.embedding_storage not in EMBEDDING_STORAGE:
            raise ValueError(f"embedding_storage must be one of {', '.join(EMBEDDING_STORAGE)}, "
                             f"not {self.embedding_storage!r}")

    def to_dict(self) -> dict:
        return asdict(self)


class Int8Embedding(nn.Module):
    """A frozen embedding table stored as int8, each row with its own scale (its largest
    magnitude / 127): a quarter of float32's bytes, an eighth of the error budget a
    tagger notices. A lookup dequantizes only the rows it reads."""

    weight: torch.Tensor  # buffers (register_buffer): saved with the weights, never trained
    scale: torch.Tensor

    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.register_buffer("weight", torch.zeros(num_embeddings, embedding_dim, dtype=torch.int8))
        self.register_buffer("scale", torch.ones(num_embeddings, 1))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.weight[input_ids].to(self.scale.dtype) * self.scale[input_ids]

    @staticmethod
    def quantize(table: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(int8 rows, float32 scales of shape (rows, 1)) for a float table."""
        table = table.float()
        scale = table.abs().amax(dim=1, keepdim=True).clamp_min(1e-12) / 127.0
        return torch.round(table / scale).clamp(-127, 127).to(torch.int8), scale


def windows(h: torch.Tensor, kernel_size: int) -> torch.Tensor:
    """(B, T, W) -> (B, T, kernel_size * W): each position's neighbours side by side,
    zeros beyond either end (so a window at a sentence's edge sees nothing outside)."""
    if kernel_size == 1:
        return h
    half = kernel_size // 2
    padded = F.pad(h, (0, 0, half, half))
    t = h.shape[1]
    # A matrix product over the concatenated window is markedly faster on CPUs than
    # torch's Conv1d for these widths, and the weights are an ordinary Linear.
    return torch.cat([padded[:, i:i + t] for i in range(kernel_size)], dim=-1)


class ConvBlock(nn.Module):
    """h + dropout(GELU(LayerNorm(Linear(window of h)))): residual, so a deeper stack
    starts close to a shallower one."""

    def __init__(self, width: int, kernel_size: int, dropout: float):
        super().__init__()
        self.kernel_size = kernel_size
        self.conv = nn.Linear(kernel_size * width, width)
        self.norm = nn.LayerNorm(width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, h: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        # Padding is zeroed before every window, so a sentence's scores do not depend
        # on what it was batched with.
        h = h * keep
        if (torch.is_grad_enabled() or type(self.conv) is not nn.Linear or self.kernel_size == 1
                or self.conv.weight.dtype != torch.float32):
            z = self.conv(windows(h, self.kernel_size))
        else:
            z = self._shifted(h)
        return h + self.dropout(F.gelu(self.norm(z)))

    def _shifted(self, h: torch.Tensor) -> torch.Tensor:
        """The same product without the window's copies (inference): each neighbour's
        part of the weights applied to every position in one product, whose slices are
        then added at their offsets. Building the window (a pad and a concatenation,
        three times the block's input) was a sixth of the block's time on a CPU; this
        is the same arithmetic summed in another order (differences near 1e-6). In float32
        only: in bfloat16 the product is cheap and the additions are not (300 products of
        a 20 x 60 batch took 0.25 s this way against 0.21 s with the window, on one Xeon core)."""
        k, width = self.kernel_size, h.shape[-1]
        out = self.conv.weight.shape[0]
        weight = self.conv.weight.view(out, k, width).transpose(0, 1).reshape(k * out, width)
        z = F.linear(h, weight).unflatten(-1, (k, out))       # (B, T, k, out)
        half, t = k // 2, h.shape[1]
        y = z[:, :, half].clone() if self.conv.bias is None else z[:, :, half] + self.conv.bias
        for i in range(k):
            s = i - half       # window slot i reads position p + s
            if s < 0 and t > -s:
                y[:, -s:] += z[:, :t + s, i]
            elif s > 0 and t > s:
                y[:, :t - s] += z[:, s:, i]
        return y


class ConvNet(nn.Module):
    def __init__(self, shape: ConvShape):
        super().__init__()
        shape.validate()
        self.shape = shape
        self.embeddings: nn.Embedding | Int8Embedding
        if shape.embedding_storage == "int8":
            self.embeddings = Int8Embedding(shape.vocab_size, shape.embedding_size)
        else:
            self.embeddings = nn.Embedding(shape.vocab_size, shape.embedding_size, padding_idx=shape.pad_token_id)
        self.project = (nn.Linear(shape.embedding_size, shape.hidden_size) if shape.project_embeddings
                        else nn.Identity())
        self.blocks = nn.ModuleList(ConvBlock(shape.hidden_size, shape.kernel_size, shape.dropout)
                                    for _ in range(shape.num_layers))
        self.dropout = nn.Dropout(shape.dropout)
        self.classifier = nn.Linear(shape.hidden_size, shape.num_labels)
        self.crf = CRF(shape.num_labels) if shape.use_crf else None

    def logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.logits_and_states(input_ids, attention_mask)[0]

    def logits_and_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                          keep_states: bool = False) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The logits, and with ``keep_states`` each block's input and output as a
        transformer's ``hidden_states`` number them (0: the projected embeddings, ``i``:
        block ``i``'s output), which distillation matches to the teacher's layers."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        h = self.project(self.dropout(self.embeddings(input_ids)))
        keep = attention_mask[..., None].to(h.dtype)
        states = [h] if keep_states else []
        for block in self.blocks:
            h = block(h, keep)
            if keep_states:
                states.append(h)
        return self.classifier(self.dropout(h)), states
