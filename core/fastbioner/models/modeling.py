"""Loading and saving Hugging Face models safely.

Weights load from safetensors only (a ``pytorch_model.bin`` is a pickle and can run
code, so it is refused, never opened); ``trust_remote_code`` is always off; a folder
with missing, corrupt or incomplete weights raises :class:`ModelError` with one
clear line. A model reference is a local folder or, for a user with network, a
Hugging Face model id.

This is the transformers side, which training, distillation and fine-tuning always
use; which code runs a folder for tagging (the light engine or this) is decided in one
place, :mod:`fastbioner.models.loading`.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from fastbioner.base.errors import ModelError
from fastbioner.models import checks
from fastbioner.models.architectures import register_architectures
from fastbioner.models.folder import safetensors_files

# torch and transformers are imported inside the functions that use them: registering,
# listing and reading a folder's labels need neither.

if TYPE_CHECKING:
    import torch

HEAD_NAMES = ("classifier", "score")  # token-classification heads a base model lacks
# The project's own taggers (fastbioner.models.architectures): complete taggers, head included, whose
# class names do not follow transformers' "...ForTokenClassification".
OWN_TAGGER_ARCHITECTURES = ("ConvTagger", "RecurrentTagger", "TransformerCRFTagger")


def pick_device(spec: str | torch.device | None = "auto") -> torch.device:
    """``auto`` (or None): CUDA when present, else CPU; otherwise the named device."""
    import torch  # here, not at the top: light commands (models list, --help) need no torch

    if isinstance(spec, torch.device):
        return spec
    if spec is None or spec in ("", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(spec)
    except RuntimeError:
        raise ModelError(f"unknown device {spec!r} (use auto, cpu, cuda or cuda:N)") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ModelError(f"device {spec!r} asked for, but no CUDA device is available")
    return device


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Hide transformers' load reports (e.g. "newly initialized classifier", which is
    expected when a head is added to a base model); real failures still raise."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    bars_were_off = hf_logging.is_progress_bar_enabled() is False
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if not bars_were_off:
            hf_logging.enable_progress_bar()


def check_weights(folder: str | Path, check_manifest: bool = True):
    """A local model folder must hold a config within the documented limits and sound
    safetensors weights that fit it (and a manifest naming its labels, when there is
    one): :func:`fastbioner.models.checks.check_model_folder`, the one check every load,
    import and install goes through before anything is allocated."""
    return checks.check_model_folder(folder, check_manifest=check_manifest)


def is_local_reference(ref: str | Path) -> bool:
    p = Path(ref)
    return p.exists() or str(ref).startswith((".", "/", "~")) or p.is_absolute()


def transformers_api():
    """The ``transformers`` package, imported completely before any thread uses it
    (:mod:`fastbioner.models.hf` says why)."""
    from fastbioner.models import hf

    return hf.transformers


def load_tokenizer(ref: str | Path):
    """A fast tokenizer (needed to map subwords back to words)."""
    AutoTokenizer = transformers_api().AutoTokenizer

    if is_local_reference(ref) and not Path(ref).is_dir():
        raise ModelError(f"{ref}: no such model folder")
    try:
        with _quiet_transformers():
            tok = AutoTokenizer.from_pretrained(str(ref), use_fast=True, trust_remote_code=False)
    except BaseException as exc:
        if not (isinstance(exc, Exception) or type(exc).__name__ == "PanicException"):
            raise
        reason = str(exc).splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"{ref}: cannot load the tokenizer ({reason})") from None
    if not getattr(tok, "is_fast", False):
        raise ModelError(f"{ref}: the tokenizer has no fast (Rust) version, which is needed to map "
                         f"subwords to words")
    return tok


def tagger_labels(ref: str | Path) -> list[str] | None:
    """The labels ``ref`` tags with when its config names a token-classification
    model (a trained tagger, head included); None for a base encoder or a config that
    cannot be read (loading the model then says why)."""
    AutoConfig = transformers_api().AutoConfig

    register_architectures()
    try:
        with _quiet_transformers():
            config = AutoConfig.from_pretrained(str(ref), trust_remote_code=False)
    except Exception:
        return None
    if not any(a.endswith("ForTokenClassification") or a in OWN_TAGGER_ARCHITECTURES
               for a in (config.architectures or [])):
        return None
    id2label = config.id2label or {}
    return [id2label[i] for i in range(len(id2label))]


def load_token_classifier(ref: str | Path, labels: Sequence[str] | None = None,
                          device: str | torch.device | None = "cpu", **kwargs: Any):
    """A token classifier from a folder or model id.

    With ``labels`` the model gets a fresh tagging head for them (fine-tuning a base
    encoder); without, the folder must be a complete tagger (its head included).
    Extra ``kwargs`` go to ``from_pretrained`` (e.g. ``attn_implementation="eager"``).
    """
    import torch

    AutoModelForTokenClassification = transformers_api().AutoModelForTokenClassification

    register_architectures()  # a folder may hold one of the project's own model types
    if is_local_reference(ref):
        check_weights(ref)
    options: dict[str, Any] = dict(use_safetensors=True, trust_remote_code=False,
                                   dtype=torch.float32, output_loading_info=True)
    if labels is not None:
        labels = list(labels)
        options.update(num_labels=len(labels), id2label=dict(enumerate(labels)),
                       label2id={l: i for i, l in enumerate(labels)}, ignore_mismatched_sizes=True)
    options.update(kwargs)
    try:
        with _quiet_transformers():
            model, info = AutoModelForTokenClassification.from_pretrained(str(ref), **options)
    except Exception as exc:
        raise ModelError(f"{ref}: cannot load the model ({str(exc).splitlines()[0][:200]})") from None
    missing = [k for k in info.get("missing_keys", [])
               if labels is None or not any(h in k for h in HEAD_NAMES)]
    if missing:
        shown = ", ".join(sorted(missing)[:3]) + (", ..." if len(missing) > 3 else "")
        raise ModelError(f"{ref}: incomplete weights, {len(missing)} tensor(s) missing ({shown})")
    return model.to(pick_device(device))


def model_labels(model) -> list[str]:
    id2label = model.config.id2label
    return [id2label[i] for i in range(len(id2label))]


def model_shape(model) -> dict[str, Any]:
    """Layers, width and parameter count, as the manifest records them."""
    cfg = model.config
    return {
        "model_type": getattr(cfg, "model_type", ""),
        "layers": getattr(cfg, "num_hidden_layers", None),
        "width": getattr(cfg, "hidden_size", None),
        "parameters": sum(p.numel() for p in model.parameters()),
    }


def save_model(model, tokenizer, folder: str | Path) -> Path:
    """``save_pretrained`` (safetensors) of the model and its tokenizer into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with _quiet_transformers():
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    if not safetensors_files(folder):  # an older transformers could fall back to a pickle
        raise ModelError(f"{folder}: the model was not saved as safetensors")
    return folder

