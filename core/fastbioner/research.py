"""What the repository's own measuring code reaches beyond the public API.

The research area (``experiments/``), the product benchmarks (``benchmarks/``) and the
maintainers' scripts (``scripts/``) import the library as ``fastbioner`` (the public
names, ``fastbioner.__all__``) and this module, never a module path of the library
(``tests/core/test_research_apart.py`` holds them to it). These names are not promised
to users: they are the calls a benchmark times, the internals a study measures (the
distillation terms' scales, the padding cuts) and the helpers that print tables. They
may change with the code they measure; when they do, this table is the one place to
change. Each name is imported on first use, as the package's own names are, so
``import fastbioner.research`` loads nothing else.

Not in ``fastbioner.__all__`` and not re-exported by the package: ``from fastbioner
import diverged_at`` fails, ``from fastbioner.research import diverged_at`` works.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the module that defines it. Grouped by what needs it.
_EXPORTS: dict[str, str] = {
    # recording and reporting runs (experiments/: the queue, the report, the model cards)
    "diverged_at": "fastbioner.train.run_progress",
    "cpu_flags_say_bf16": "fastbioner.models.precision",
    "loss_points_text": "fastbioner.models.precision",
    "rebuild_command": "fastbioner.cli.rebuild",
    "Precision": "fastbioner.models.precision",
    "auto_precision": "fastbioner.models.precision",
    "checks_from_manifest": "fastbioner.models.precision",
    "hardware_name": "fastbioner.models.precision",
    "MAX_F1_LOSS_POINTS": "fastbioner.models.precision",
    # whether a machine is idle (benchmarks/bench_load.py: the thread rule's own measure)
    "cpu_sample": "fastbioner.base.threads",
    "busy_elsewhere": "fastbioner.base.threads",
    # timing tagging (benchmarks/bench_inference.py is `fastbioner benchmark` and more)
    "devel_f1": "fastbioner.infer.speed",
    "interleaved_timing": "fastbioner.infer.speed",
    "mode_records": "fastbioner.infer.speed",
    "precision_taggers": "fastbioner.infer.speed",
    "record_speed": "fastbioner.infer.speed",
    "span_agreement": "fastbioner.infer.speed",
    "speed_record": "fastbioner.infer.speed",
    "load_token_classifier": "fastbioner.models.modeling",
    "load_tokenizer": "fastbioner.models.modeling",
    "pick_device": "fastbioner.models.modeling",
    "document_sentences": "fastbioner.io.text",
    "tokenize": "fastbioner.io.text",
    "samples_folder": "fastbioner.models.shipped",
    "model_to_tag": "fastbioner.models.shipped",
    # the product calls a benchmark runs in process (the CLI's tag-corpus and --estimate)
    "tag_corpus": "fastbioner.scale",
    "CorpusOptions": "fastbioner.scale",
    "estimate_run": "fastbioner.train.estimate",
    # the review queue's order (experiments/simulated_curator.py)
    "RankedDocument": "fastbioner.infer.ranking",
    "order_key": "fastbioner.infer.ranking",
    # the concept dictionary's build (scripts/build_concept_dictionary.py)
    "ConceptDictionary": "fastbioner.curate.concepts",
    "concept_parts": "fastbioner.curate.concepts",
    "same_concept": "fastbioner.curate.concepts",
    # the distillation terms measured at the first batches (experiments/loss_scales.py)
    "calibrate": "fastbioner.train.distill.calibration",
    "fit_projections": "fastbioner.train.distill.calibration",
    "measure_terms": "fastbioner.train.distill.calibration",
    "Calibration": "fastbioner.train.distill.calibration",
    "capture": "fastbioner.train.distill.capture",
    "PairedBatches": "fastbioner.train.distill.data",
    "attention_mse": "fastbioner.train.distill.losses",
    "batches_total": "fastbioner.train.distill.runner",
    "prepare_run": "fastbioner.train.distill.runner",
    "ProgressReporter": "fastbioner.base.jobs",
    "linear_warmup_decay": "fastbioner.train.training",
    "move_to": "fastbioner.train.training",
}
# Names that would be ambiguous here, exported under clearer ones: name -> (module, attribute).
_RENAMED: dict[str, tuple[str, str]] = {
    "register_distill_flags": ("fastbioner.cli.distill", "register"),
    "distill_config_from_args": ("fastbioner.cli.distill", "config_from_args"),
}
# Whole modules, for the one benchmark that swaps a function inside one to time the
# alternative (bench_startup.py --compare-cuts: tagging's batches cut or left whole).
_MODULES: dict[str, str] = {
    "inference_module": "fastbioner.infer.inference",
}

__all__ = [*_EXPORTS, *_RENAMED, *_MODULES]


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    elif name in _EXPORTS or name in _RENAMED:
        module, attr = _RENAMED.get(name) or (_EXPORTS[name], name)
        value = getattr(importlib.import_module(module), attr)
    else:
        raise AttributeError(f"module 'fastbioner.research' has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
