"""Filling a light-engine model from a folder's safetensors weights (a pickle is
never opened)."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import torch
from safetensors.torch import load_file
from torch import nn

from fastbioner.base.errors import ModelError
from fastbioner.models.folder import safetensors_files
from fastbioner.models.light import Unsupported

M = TypeVar("M", bound=nn.Module)


def load_weights(folder: Path, model: M) -> M:
    """``model`` (built on the CPU from config.json) with the folder's weights, in
    float32, eval mode, without gradients.

    :class:`Unsupported` without safetensors weights (transformers' loader then says
    why: pickled weights are refused there); :class:`ModelError` for corrupt,
    incomplete or misshapen weights. Keys the model lacks are ignored, as
    transformers ignores them."""
    files = safetensors_files(folder)
    if not files:
        raise Unsupported("no safetensors weights")
    state: dict[str, torch.Tensor] = {}
    for path in files:
        try:
            state.update(load_file(str(path)))
        except Exception as exc:  # safetensors raises several types for a bad file
            raise ModelError(f"{path}: corrupt weights ({str(exc).splitlines()[0][:120]})") from None
    # Built on the CPU, its random initialisation then overwritten: a tenth of a second,
    # where building on the meta device would import torch._dynamo (seconds). Copying
    # into its float32 parameters casts the file's tensors (compacted models ship
    # float16) as the transformers loader does.
    try:
        missing = model.load_state_dict(state, strict=False).missing_keys
    except RuntimeError as exc:  # a tensor of another shape than config.json says
        raise ModelError(f"{folder}: cannot load the model ({str(exc).splitlines()[-1].strip()[:200]})") from None
    if missing:
        shown = ", ".join(sorted(missing)[:3]) + (", ..." if len(missing) > 3 else "")
        raise ModelError(f"{folder}: incomplete weights, {len(missing)} tensor(s) missing ({shown})")
    return model.requires_grad_(False).eval()
