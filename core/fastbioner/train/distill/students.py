"""Building students: from the teacher's own layers, from another pretrained
encoder, or the small students built here: recurrent
(:mod:`fastbioner.models.architectures.recurrent`) and convolutional
(:mod:`fastbioner.models.architectures.convolutional`).

Layer mapping (the paper's uniform mapping): student layer ``j`` (1-based) learns
from, and when built from the teacher starts as, teacher layer ``j * m / n``. When
``n`` does not divide ``m`` the position is rounded to the nearest layer, ties to
the deeper one (``floor(j * m / n + 1/2)``): 12 -> 5 takes 2, 5, 7, 10, 12 and
7 -> 3 takes 2, 5, 7. The last student layer always meets the last teacher layer,
and because consecutive positions are at least one layer apart the mapped layers
are distinct and increasing.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import torch
from torch import nn
from fastbioner.models import hf  # noqa: F401  (transformers imported whole first: see hf)
from transformers import PreTrainedModel

from fastbioner.base.errors import FastBioNERError
from fastbioner.models.architectures.convolutional import ConvTagger, ConvTaggerConfig
from fastbioner.models.architectures.recurrent import RecurrentTagger, RecurrentTaggerConfig


def uniform_layer_map(teacher_layers: int, student_layers: int) -> list[int]:
    """Teacher layer (1-based) for each student layer 1..n; see the module docstring."""
    m, n = teacher_layers, student_layers
    if n < 1 or m < 1:
        raise ValueError("layer counts must be at least 1")
    if n > m:
        raise FastBioNERError(f"a student of {n} layers cannot be mapped onto a teacher of {m}")
    # Exact fractions so the rounding never depends on floating point.
    return [int(Fraction(j * m, n) + Fraction(1, 2)) for j in range(1, n + 1)]


def layer_list(model: nn.Module) -> tuple[nn.Module, str, nn.ModuleList]:
    """The encoder's list of transformer layers, with its parent and attribute name.

    Found as the ModuleList of ``config.num_hidden_layers`` blocks (BERT, RoBERTa,
    MPNet, ELECTRA: ``encoder.layer``; DistilBERT: ``transformer.layer``)."""
    config: Any = model.config  # a transformers config (nn.Module types attributes as tensors or modules)
    count = config.num_hidden_layers
    for parent in model.modules():
        for name, child in parent.named_children():
            if isinstance(child, nn.ModuleList) and len(child) == count and name in ("layer", "layers"):
                return parent, name, child
    raise FastBioNERError(f"cannot find the transformer layers of a {type(model).__name__}")


def _set_layer_count(model: nn.Module, layers: int) -> None:
    """The new layer count everywhere a configuration keeps it: the model's, and for
    a model wrapping an encoder (the CRF tagger) the encoder's and its saved copy."""
    config: Any = model.config  # a transformers config (nn.Module types attributes as tensors or modules)
    config.num_hidden_layers = layers
    inner = getattr(model, getattr(model, "base_model_prefix", ""), None)
    if inner is not None and inner is not model and hasattr(getattr(inner, "config", None), "num_hidden_layers"):
        inner.config.num_hidden_layers = layers
    if isinstance(getattr(config, "encoder", None), dict):
        config.encoder["num_hidden_layers"] = layers


def student_from_teacher(teacher: PreTrainedModel, layers: int) -> PreTrainedModel:
    """Same architecture and width as ``teacher``, keeping only the mapped layers.

    Everything outside the layer stack is copied unchanged: embeddings, tagging
    head, and model-wide parts such as MPNet's relative position bias (shared by all
    layers, stored in ``encoder.relative_attention_bias``)."""
    teacher_layers = teacher.config.num_hidden_layers
    mapping = uniform_layer_map(teacher_layers, layers)
    student = copy.deepcopy(teacher)
    parent, name, stack = layer_list(student)
    kept = nn.ModuleList([stack[i - 1] for i in mapping])
    for new_index, block in enumerate(kept):
        for module in block.modules():
            if hasattr(module, "layer_idx"):  # used by caches only, but keep it true
                attention: Any = module  # an attribute of transformers' own, not a tensor or module
                attention.layer_idx = new_index
    setattr(parent, name, kept)
    _set_layer_count(student, layers)
    for p in student.parameters():
        p.requires_grad_(True)
    student.train()
    return student


def truncate_layers(model: PreTrainedModel, layers: int) -> PreTrainedModel:
    """Keep the first ``layers`` transformer layers of ``model`` (in place)."""
    total = model.config.num_hidden_layers
    if layers > total:
        raise FastBioNERError(f"the encoder has {total} layers; cannot keep {layers}")
    if layers < total:
        parent, name, stack = layer_list(model)
        setattr(parent, name, nn.ModuleList(list(stack)[:layers]))
        _set_layer_count(model, layers)
    return model


def hidden_width(model: nn.Module) -> int:
    config: Any = model.config  # a transformers config (nn.Module types attributes as tensors or modules)
    return getattr(config, "hidden_size", None) or config.dim


def projection_for(student: nn.Module, teacher: nn.Module) -> nn.Linear | None:
    """W_h mapping student hidden states to the teacher's width, or None when the
    widths are equal (then the states are compared as they are)."""
    ds, dt = hidden_width(student), hidden_width(teacher)
    if ds == dt:
        return None
    proj = nn.Linear(ds, dt)
    nn.init.xavier_uniform_(proj.weight)
    nn.init.zeros_(proj.bias)
    return proj


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def freeze(model: nn.Module) -> nn.Module:
    """The teacher: eval mode (no dropout, so cached outputs equal fresh ones), no grads."""
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def same_labels(student: nn.Module, teacher: nn.Module) -> None:
    s, t = _label_names(student), _label_names(teacher)
    if s != t:
        raise FastBioNERError(f"student labels {s} differ from the teacher's {t}")


@torch.no_grad()
def copy_head(student: PreTrainedModel, teacher: PreTrainedModel) -> bool:
    """Copy the teacher's tagging head into the student when their widths match
    (a student from another encoder of the same width starts from the teacher's
    decision layer); returns whether it did."""
    s_head, t_head = getattr(student, "classifier", None), getattr(teacher, "classifier", None)
    if not isinstance(s_head, nn.Linear) or not isinstance(t_head, nn.Linear):
        return False
    if s_head.weight.shape != t_head.weight.shape:
        return False
    s_head.weight.copy_(t_head.weight)
    s_head.bias.copy_(t_head.bias)
    return True


def order_head(student: PreTrainedModel, labels: list[str]) -> None:
    """Put a trained tagger's head rows (and its label maps) in ``labels``' order, the
    teacher's: the same label set may be numbered differently by another run."""
    own = _label_names(student)
    if own == labels:
        return
    head: Any = student.classifier  # the tagging head, an nn.Linear in every kind of tagger here
    rows = torch.tensor([own.index(label) for label in labels])
    with torch.no_grad():
        head.weight.copy_(head.weight[rows].clone())
        head.bias.copy_(head.bias[rows].clone())
    student.config.id2label = dict(enumerate(labels))
    student.config.label2id = {label: i for i, label in enumerate(labels)}


def _label_names(model: nn.Module) -> list[str]:
    """The model's labels in id order (a loaded config keys ``id2label`` by int)."""
    config: Any = model.config  # a transformers config (nn.Module types attributes as tensors or modules)
    id2label: dict[Any, str] = config.id2label or {}
    return [id2label[i] for i in range(len(id2label))]


def _start_embeddings(teacher: PreTrainedModel, source: PreTrainedModel | None) -> tuple[torch.Tensor, int]:
    """The wordpiece embeddings (and padding id) a small student starts from: the
    teacher's, or another model's (whose tokenizer the student then uses)."""
    model = source if source is not None else teacher
    pad = model.config.pad_token_id
    table: Any = model.get_input_embeddings()  # an nn.Embedding (typed as any module)
    return table.weight.detach(), pad if pad is not None else 0


def _labels(teacher: PreTrainedModel) -> dict:
    return {"id2label": dict(teacher.config.id2label or {}), "label2id": dict(teacher.config.label2id or {})}


def recurrent_student(teacher: PreTrainedModel, hidden_size: int = 256, num_layers: int = 1,
                      cell: str = "gru", use_crf: bool = True, dropout: float = 0.1,
                      embeddings_from: PreTrainedModel | None = None) -> RecurrentTagger:
    """A recurrent tagger whose wordpiece embeddings are a copy of ``teacher``'s (or
    of ``embeddings_from``'s: the student then uses that model's tokenizer), with the
    teacher's labels."""
    source, pad = _start_embeddings(teacher, embeddings_from)
    config = RecurrentTaggerConfig(
        vocab_size=source.shape[0], embedding_size=source.shape[1], hidden_size=hidden_size,
        num_layers=num_layers, cell=cell, use_crf=use_crf, dropout=dropout, pad_token_id=pad, **_labels(teacher))
    model = RecurrentTagger(config)
    with torch.no_grad():
        model.embeddings.weight.copy_(source)
    return model


def convolutional_student(teacher: PreTrainedModel, width: int = 256, layers: int = 4, kernel_size: int = 3,
                          use_crf: bool = True, dropout: float = 0.1,
                          embeddings_from: PreTrainedModel | None = None) -> ConvTagger:
    """A convolutional tagger (:mod:`fastbioner.models.architectures.convolution`) starting from the
    wordpiece embeddings of ``teacher`` or ``embeddings_from``, with the teacher's labels."""
    source, pad = _start_embeddings(teacher, embeddings_from)
    config = ConvTaggerConfig(
        vocab_size=source.shape[0], embedding_size=source.shape[1], hidden_size=width, num_layers=layers,
        kernel_size=kernel_size, use_crf=use_crf, dropout=dropout, pad_token_id=pad, **_labels(teacher))
    model = ConvTagger(config)
    with torch.no_grad():
        model.get_input_embeddings().weight.copy_(source)
    return model
