"""Which part of a model a parameter belongs to, for DRET's fine-tuning knobs
(:class:`fastbioner.base.config.TrainingConfig`: ``freeze_embeddings``,
``embedding_lr_scale``, ``layer_lr_decay``, ``head_lr_scale``): the shared training loop
gives each part its own peak rate through the optimiser's parameter groups.

The parts, found by structure rather than by model class:

- embeddings: the module holding the input (token) embedding matrix when it is an
  ``...embeddings`` block (BERT's word, position and type embeddings and their
  LayerNorm), else the matrix alone (a recurrent or convolutional student);
- layers: the ``layer``/``layers`` list of ``config.num_hidden_layers`` blocks (BERT,
  MPNet, DistilBERT, the CRF tagger's encoder), lowest first;
- head: the top-level ``classifier`` and ``crf``;
- the rest (a pooler, a student's convolutions or recurrent cells): the peak rate.
"""

from __future__ import annotations

from torch import nn

from fastbioner.base.config import TrainingConfig
from fastbioner.base.errors import FastBioNERError

HEAD_MODULES = ("classifier", "crf")


def _input_embeddings(model: nn.Module) -> nn.Module | None:
    get = getattr(model, "get_input_embeddings", None)
    if get is None:
        return None
    try:
        return get()
    except (NotImplementedError, AttributeError):
        return None


def embedding_parameters(model: nn.Module) -> list[nn.Parameter]:
    matrix = _input_embeddings(model)
    if matrix is None:
        return []
    for name, module in model.named_modules():
        if module is matrix:
            parent_name = name.rsplit(".", 1)[0] if "." in name else ""
            parent = model.get_submodule(parent_name) if parent_name else None
            if parent is not None and parent_name.rsplit(".", 1)[-1] == "embeddings":
                return list(parent.parameters())
            break
    return list(matrix.parameters())


def layer_blocks(model: nn.Module) -> list[nn.Module]:
    count = getattr(getattr(model, "config", None), "num_hidden_layers", None)
    for parent in model.modules():
        for name, child in parent.named_children():
            if isinstance(child, nn.ModuleList) and name in ("layer", "layers") and len(child) == count:
                return list(child)
    return []


def head_parameters(model: nn.Module) -> list[nn.Parameter]:
    return [p for name in HEAD_MODULES if isinstance(getattr(model, name, None), nn.Module)
            for p in getattr(model, name).parameters()]


def knobs_used(config: TrainingConfig) -> bool:
    return (config.freeze_embeddings or config.embedding_lr_scale != 1.0 or config.layer_lr_decay != 1.0
            or config.head_lr_scale != 1.0)


def freeze_embeddings(model: nn.Module) -> None:
    """The input (token) embedding matrix stops learning: the transferred vectors stay."""
    matrix = _input_embeddings(model)
    if matrix is None:
        raise FastBioNERError(f"--freeze-embeddings: a {type(model).__name__} has no input embeddings")
    matrix.requires_grad_(False)


def rate_scales(model: nn.Module, config: TrainingConfig) -> dict[int, float]:
    """``id(parameter) -> factor`` of the peak rate, for the parameters whose factor is
    not 1: layer i of L at ``layer_lr_decay ** (L - 1 - i)``, the embeddings at
    ``embedding_lr_scale * layer_lr_decay ** L`` (one step below the lowest layer), the
    head at ``head_lr_scale``."""
    scales: dict[int, float] = {}
    blocks = layer_blocks(model)
    decay, n = config.layer_lr_decay, len(blocks)
    if decay != 1.0 and not blocks:
        raise FastBioNERError(f"--layer-lr-decay: a {type(model).__name__} has no transformer layers")
    for i, block in enumerate(blocks):
        for p in block.parameters():
            scales[id(p)] = decay ** (n - 1 - i)
    for p in embedding_parameters(model):
        scales[id(p)] = config.embedding_lr_scale * decay ** n
    for p in head_parameters(model):
        scales[id(p)] = config.head_lr_scale
    return {k: v for k, v in scales.items() if v != 1.0}
