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
from typing import Any

__version__ = "0.1.0"

# name -> the module that defines it. Grouped as the reference page is.
_EXPORTS: dict[str, str] = {
    # documents and formats
    "Document": "fastbioner.documents",
    "Passage": "fastbioner.documents",
    "Span": "fastbioner.documents",
    "Source": "fastbioner.documents",
    "read_documents": "fastbioner.formats",
    "write_documents": "fastbioner.formats",
    "read_any": "fastbioner.formats",
    "export_documents": "fastbioner.export",
    "ExportSettings": "fastbioner.export",
    "document_tagged_sentences": "fastbioner.labels",
    "fetch_pubmed": "fastbioner.fetch",
    # tagging and scoring
    "Tagger": "fastbioner.inference",
    "TaggerConfig": "fastbioner.inference",
    "tag_files": "fastbioner.tagging",
    "evaluate_model": "fastbioner.evaluation",
    # models
    "Registry": "fastbioner.registry",
    "ModelEntry": "fastbioner.registry",
    "default_model": "fastbioner.defaults",
    "shipped_model_folder": "fastbioner.defaults",
    "read_manifest": "fastbioner.registry",
    "write_manifest": "fastbioner.registry",
    # training: a teacher, a student, a reviewed fine-tune
    "TeacherConfig": "fastbioner.config",
    "TrainingConfig": "fastbioner.config",
    "EncodingConfig": "fastbioner.config",
    "train_teacher": "fastbioner.teacher",
    "DistillConfig": "fastbioner.distill.config",
    "StudentConfig": "fastbioner.distill.config",
    "MethodConfig": "fastbioner.distill.methods",
    "FineTuneConfig": "fastbioner.finetune_config",
    "fine_tune": "fastbioner.finetune",
    "fine_tune_then_distill": "fastbioner.guided",
    "recipe": "fastbioner.guided",
    "RECIPES": "fastbioner.guided",
    "default_method": "fastbioner.distill.config",
    # the vocabulary of distillation settings (what a dialog offers)
    "METHODS": "fastbioner.distill.methods",
    "TERM_NAMES": "fastbioner.distill.methods",
    "MATCHING_TERMS": "fastbioner.distill.methods",
    "ATTENTION_FORMS": "fastbioner.distill.methods",
    "SMALL_SOURCES": "fastbioner.distill.config",
    "COMBINATIONS": "fastbioner.config",
    "teacher_layers_methods_summary": "fastbioner.distill.config",
    # watching runs from outside and recording them (a tool that runs the commands)
    "checkpoint_progress": "fastbioner.run_progress",
    "cpu_model_name": "fastbioner.cpu",
    # jobs and errors
    "CancelToken": "fastbioner.jobs",
    "Cancelled": "fastbioner.jobs",
    "ProgressEvent": "fastbioner.jobs",
    "FastBioNERError": "fastbioner.errors",
    "InputError": "fastbioner.errors",
    "ModelError": "fastbioner.errors",
    "InputWarning": "fastbioner.errors",
}
# ``distill`` is the subpackage's name, so the distillation call is exported under
# another one (``fastbioner.distill`` stays the package).
_RENAMED: dict[str, tuple[str, str]] = {
    "distill_student": ("fastbioner.distill.runner", "distill"),
}

__all__ = ["__version__", *_EXPORTS, *_RENAMED]


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
