"""FastBioNER: biomedical NER with teacher fine-tuning and knowledge distillation.

The core library. It never imports Qt: the desktop app (``fastbioner_gui``) is a
thin layer over it, and the CLI (``fastbioner``) is another.

The public API is this package's namespace (documented in
``docs/reference/python-api.md``)::

    import fastbioner
    docs = list(fastbioner.read_documents("abstracts.pubtator"))
    tagger = fastbioner.Tagger.load(fastbioner.default_model().name)
    fastbioner.write_documents(tagger.annotate(docs), "tagged.jsonl")

Every name is imported on first use (PEP 562 ``__getattr__``), not by ``import
fastbioner``: ``fastbioner --help`` imports no torch, and tagging never loads the
training or distillation modules. Deeper modules stay importable, but only the names
below are promised to stay where they are. The repository's research and benchmark code
reaches a few more through ``fastbioner.research`` (not promised to users).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> the module that defines it. Grouped as the reference page is.
_EXPORTS: dict[str, str] = {
    # documents and formats
    "Document": "fastbioner.io.documents",
    "Passage": "fastbioner.io.documents",
    "Span": "fastbioner.io.documents",
    "Source": "fastbioner.io.documents",
    "read_documents": "fastbioner.io.formats",
    "write_documents": "fastbioner.io.formats",
    "read_any": "fastbioner.io.formats",
    "export_documents": "fastbioner.curate.export",
    "ExportSettings": "fastbioner.curate.export",
    "document_tagged_sentences": "fastbioner.io.labels",
    "fetch_pubmed": "fastbioner.net.fetch",
    # tagging and scoring
    "load": "fastbioner.infer.load",
    "Tagger": "fastbioner.infer.inference",
    "TaggerConfig": "fastbioner.infer.inference",
    "tag_files": "fastbioner.infer.tagging",
    "evaluate_model": "fastbioner.infer.evaluation",
    # models
    "Registry": "fastbioner.models.registry",
    "ModelEntry": "fastbioner.models.registry",
    "default_model": "fastbioner.models.shipped",
    "shipped_model_folder": "fastbioner.models.shipped",
    "read_manifest": "fastbioner.models.manifest",
    "write_manifest": "fastbioner.models.manifest",
    # training: a teacher, a student, a reviewed fine-tune
    "TeacherConfig": "fastbioner.base.config",
    "TrainingConfig": "fastbioner.base.config",
    "EncodingConfig": "fastbioner.base.config",
    "train_teacher": "fastbioner.train.teacher",
    "DistillConfig": "fastbioner.train.distill.config",
    "StudentConfig": "fastbioner.train.distill.config",
    "MethodConfig": "fastbioner.train.distill.methods",
    "FineTuneConfig": "fastbioner.train.finetune_config",
    "fine_tune": "fastbioner.train.finetune",
    "fine_tune_then_distill": "fastbioner.train.guided",
    "recipe": "fastbioner.train.guided",
    "RECIPES": "fastbioner.train.guided",
    "default_method": "fastbioner.train.distill.config",
    # the vocabulary of distillation settings (what a dialog offers)
    "METHODS": "fastbioner.train.distill.methods",
    "TERM_NAMES": "fastbioner.train.distill.methods",
    "MATCHING_TERMS": "fastbioner.train.distill.methods",
    "ATTENTION_FORMS": "fastbioner.train.distill.methods",
    "SMALL_SOURCES": "fastbioner.train.distill.config",
    "COMBINATIONS": "fastbioner.base.config",
    "teacher_layers_methods_summary": "fastbioner.train.distill.config",
    # watching runs from outside and recording them (a tool that runs the commands)
    "checkpoint_progress": "fastbioner.train.run_progress",
    "cpu_model_name": "fastbioner.base.cpu",
    # jobs and errors
    "CancelToken": "fastbioner.base.jobs",
    "Cancelled": "fastbioner.base.jobs",
    "ProgressEvent": "fastbioner.base.jobs",
    "FastBioNERError": "fastbioner.base.errors",
    "InputError": "fastbioner.base.errors",
    "ModelError": "fastbioner.base.errors",
    "InputWarning": "fastbioner.base.errors",
}
# ``distill`` is the subpackage's name, so the distillation call is exported under
# another one (``fastbioner.train.distill`` stays the package).
_RENAMED: dict[str, tuple[str, str]] = {
    "distill_student": ("fastbioner.train.distill.runner", "distill"),
}

__all__ = ["__version__", *_EXPORTS, *_RENAMED]

if TYPE_CHECKING:
    # The same names for type checkers and editors, which do not run __getattr__
    # (tests/core/test_public_api.py keeps this block equal to _EXPORTS and _RENAMED).
    from fastbioner.base.config import COMBINATIONS, EncodingConfig, TeacherConfig, TrainingConfig
    from fastbioner.base.cpu import cpu_model_name
    from fastbioner.base.errors import FastBioNERError, InputError, InputWarning, ModelError
    from fastbioner.base.jobs import CancelToken, Cancelled, ProgressEvent
    from fastbioner.curate.export import ExportSettings, export_documents
    from fastbioner.infer.evaluation import evaluate_model
    from fastbioner.infer.inference import Tagger, TaggerConfig
    from fastbioner.infer.load import load
    from fastbioner.infer.tagging import tag_files
    from fastbioner.io.documents import Document, Passage, Source, Span
    from fastbioner.io.formats import read_any, read_documents, write_documents
    from fastbioner.io.labels import document_tagged_sentences
    from fastbioner.models.manifest import read_manifest, write_manifest
    from fastbioner.models.registry import ModelEntry, Registry
    from fastbioner.models.shipped import default_model, shipped_model_folder
    from fastbioner.net.fetch import fetch_pubmed
    from fastbioner.train.distill.config import (
        SMALL_SOURCES, DistillConfig, StudentConfig, default_method, teacher_layers_methods_summary,
    )
    from fastbioner.train.distill.methods import ATTENTION_FORMS, MATCHING_TERMS, METHODS, TERM_NAMES, MethodConfig
    from fastbioner.train.distill.runner import distill as distill_student
    from fastbioner.train.finetune import fine_tune
    from fastbioner.train.finetune_config import FineTuneConfig
    from fastbioner.train.guided import RECIPES, fine_tune_then_distill, recipe
    from fastbioner.train.run_progress import checkpoint_progress
    from fastbioner.train.teacher import train_teacher


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module, attr = _EXPORTS[name], name
    elif name in _RENAMED:
        module, attr = _RENAMED[name]
    else:
        raise AttributeError(f"module 'fastbioner' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
