"""One forward pass that returns what the distillation losses need from a model:
logits, the hidden states of chosen layers and their attention maps.

Attention maps come in two kinds:

- ``scores`` (default): the paper's A = QK^T / sqrt(d_k) before softmax. Hugging
  Face never returns these, so forward hooks on each chosen layer's query and key
  projections capture Q and K and the scores are computed here. This works with any
  attention implementation (sdpa included), so the forward pass stays fast. MPNet
  adds a relative position bias to the scores inside attention; it is the same
  tensor for teacher and student (copied, never mapped), so it is left out and only
  the learned QK^T part is matched.
- ``probs``: the attention probabilities after softmax, as Hugging Face returns them
  with ``output_attentions=True``; that needs the eager attention implementation,
  which :func:`prepare_for_capture` switches on.

Layers are numbered as in ``hidden_states``: 0 is the embeddings' output, ``i`` the
output of transformer layer ``i``; attention of layer ``i`` is that layer's own.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import torch
from torch import nn

from fastbioner.base.errors import FastBioNERError
from fastbioner.train.distill.students import layer_list

ATTENTION_KINDS = ("scores", "probs")
_QUERY_NAMES = ("query", "q", "q_lin", "q_proj")
_KEY_NAMES = ("key", "k", "k_lin", "k_proj")


@dataclass
class Captured:
    logits: torch.Tensor
    hidden: dict[int, torch.Tensor] = field(default_factory=dict)
    attention: dict[int, torch.Tensor] = field(default_factory=dict)


def _find_linear(block: nn.Module, names: tuple[str, ...]) -> nn.Linear:
    for name, module in block.named_modules():
        if name.rsplit(".", 1)[-1] in names and isinstance(module, nn.Linear):
            return module
    raise FastBioNERError(f"cannot find the attention projections ({'/'.join(names)}) "
                          f"in a {type(block).__name__}; use --attention probs or a method "
                          "without attention matching")


def heads_of(model: nn.Module) -> int:
    config: Any = model.config  # a transformers config (nn.Module types attributes as tensors or modules)
    return getattr(config, "num_attention_heads", None) or config.n_heads


def prepare_for_capture(model: nn.Module, attention_kind: str | None) -> None:
    """Switch to eager attention when probabilities are to be captured."""
    if attention_kind == "probs" and hasattr(model, "set_attn_implementation"):
        if getattr(model.config, "_attn_implementation", "eager") != "eager":
            switch: Any = model.set_attn_implementation  # a transformers model's method
            switch("eager")


@contextlib.contextmanager
def _qk_hooks(model: nn.Module, layers: list[int], store: dict[int, list]) -> Iterator[None]:
    _, _, stack = layer_list(model)
    handles = []
    for i in layers:
        block = stack[i - 1]
        for slot, names in ((0, _QUERY_NAMES), (1, _KEY_NAMES)):
            def hook(_mod, _inp, out, i=i, slot=slot):
                store.setdefault(i, [None, None])[slot] = out
            handles.append(_find_linear(block, names).register_forward_hook(hook))
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def _scores(q: torch.Tensor, k: torch.Tensor, heads: int) -> torch.Tensor:
    b, l, d = q.shape
    dk = d // heads
    q = q.view(b, l, heads, dk).transpose(1, 2)
    k = k.view(b, l, heads, dk).transpose(1, 2)
    return torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dk)


def capture(model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
            hidden_layers: Sequence[int] = (), attention_layers: Sequence[int] = (),
            attention_kind: str = "scores") -> Captured:
    """Run ``model`` once; ``hidden_layers`` and ``attention_layers`` use the
    numbering of the module docstring (attention layers start at 1)."""
    if attention_kind not in ATTENTION_KINDS:
        raise ValueError(f"attention kind must be one of {ATTENTION_KINDS}")
    hidden_layers, attention_layers = list(hidden_layers), list(attention_layers)
    want_probs = bool(attention_layers) and attention_kind == "probs"
    qk: dict[int, list] = {}
    inner = getattr(model, "module", model)  # hooks go inside a DDP wrapper; the wrapper runs it
    hooks = _qk_hooks(inner, attention_layers, qk) if attention_layers and not want_probs \
        else contextlib.nullcontext()
    kwargs = {}
    if hidden_layers:
        kwargs["output_hidden_states"] = True
    if want_probs:
        kwargs["output_attentions"] = True
    with hooks:
        out = model(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
    result = Captured(logits=out.logits)
    for i in hidden_layers:
        result.hidden[i] = out.hidden_states[i]
    if want_probs:
        if not out.attentions:
            raise FastBioNERError(f"a {type(inner).__name__} returned no attention probabilities")
        for i in attention_layers:
            result.attention[i] = out.attentions[i - 1]
    else:
        heads = heads_of(inner) if attention_layers else 0
        for i in attention_layers:
            q, k = qk[i]
            result.attention[i] = _scores(q, k, heads)
    return result
