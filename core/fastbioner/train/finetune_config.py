"""The settings of ``fastbioner fine-tune`` (continue training a model on reviewed
documents), saved whole in the new model's manifest. Kept apart from the job
(:mod:`fastbioner.train.finetune`) so that the app's dialog reads the defaults without
importing torch.

Defaults are sized for minutes on a laptop; they are the ``[fine-tune]`` section of
the defaults table (fastbioner/base/defaults.toml), whose decision records in
docs/research/decisions.md give the runs that chose them (NCBI-disease, 100 reviewed abstracts,
devel only).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from fastbioner.base.config import ConfigError, Settings, TrainingConfig, opt
from fastbioner.base.defaults import table

_FINE_TUNE = table().section("fine-tune")

# The peak learning rate when none is given, by kind of model (fastbioner.models.loading.model_kind):
# a transformer's, and a convolutional or recurrent student's.
TRANSFORMER_LEARNING_RATE: float = _FINE_TUNE["learning_rate_transformer"]
SMALL_MODEL_LEARNING_RATE: float = _FINE_TUNE["learning_rate_small"]
SMALL_MODEL_KINDS = ("cnn", "recurrent")


def default_learning_rate(kind: str) -> float:
    """The peak learning rate for a model of ``kind`` when the settings leave it open."""
    return SMALL_MODEL_LEARNING_RATE if kind in SMALL_MODEL_KINDS else TRANSFORMER_LEARNING_RATE


def _training() -> TrainingConfig:
    # learning_rate None: decided by the kind of model once it is known (default_learning_rate).
    # The run ends with its last weights (keep_weights), yet its held-back slice still stops
    # a run that stops gaining on it (early_stopping_patience).
    return TrainingConfig(epochs=_FINE_TUNE["epochs"], learning_rate=None,  # type: ignore[arg-type]
                          batch_size=_FINE_TUNE["batch_size"], seed=_FINE_TUNE["seed"],
                          early_stopping_patience=_FINE_TUNE["early_stopping_patience"],
                          keep_weights=_FINE_TUNE["keep_weights"])


@dataclass
class FineTuneConfig(Settings):
    train_files: list[str] = opt(help="reviewed documents: BIO/CoNLL, PubTator, BioC or JSONL (their entities "
                                      "are the truth)", flag="--train", factory=list, metavar="FILE",
                                 kind="paths")
    dev_file: str | None = opt(None, "annotated file for early stopping and the before/after scores; without "
                                     "it, a share of the reviewed documents is held back for them",
                               flag="--dev", metavar="FILE", kind="path")
    drop_other_labels: bool = opt(False, "make the reviewed labels the whole label set (default: the model's "
                                         "labels the reviewed documents do not annotate are kept, by learning "
                                         "the starting model's own predictions for them on the same text)")
    holdout_share: float = opt(_FINE_TUNE["holdout_share"], "share of the reviewed documents held back when there "
                                                            "is no --dev", flag="--holdout", metavar="SHARE")
    holdout_min: int = opt(_FINE_TUNE["holdout_min"], "held back at least this many documents (with fewer than "
                                                      "twice as many, none are held back)", metavar="DOCS")
    distill_docs: float = opt(_FINE_TUNE["distill_docs"], "distil the starting model on every type, its share of "
                                                          "each word's target K/(K+N) for N trained documents "
                                                          "(0: off; only the types the reviews leave out are "
                                                          "kept)", metavar="K")
    l2sp: float = opt(_FINE_TUNE["l2sp"], "pull the weights toward the starting ones by this times their squared "
                                          "distance (L2-SP; 0: off)", metavar="ALPHA")
    lr_docs: float = opt(_FINE_TUNE["lr_docs"], "size the learning rate to the data: with N trained documents "
                                                "fewer than K, the rate is scaled by N/K (0: off)", metavar="K")
    keep_worse: bool = opt(False, "register the result even when it scores worse than the starting model on the "
                                  "held-back documents (or --dev) beyond doubt (its bootstrap interval of after "
                                  "minus before below zero)")
    split_file: str | None = opt(None, "a file that remembers which reviewed documents were held back and trained "
                                       "on, so later updates never redraw them (written; the app keeps one per "
                                       "project)", flag="--split", metavar="FILE", kind="path")
    freeze_layers: int = opt(0, "keep the embeddings and the lowest N transformer layers fixed (0: train all)",
                             metavar="N")
    training: TrainingConfig = field(default_factory=_training)

    def validate(self) -> None:
        if not self.train_files:
            raise ConfigError("at least one file of reviewed documents is required (--train)")
        if not 0 <= self.holdout_share < 1:
            raise ConfigError("holdout_share must be in [0, 1)")
        if self.holdout_min < 1:
            raise ConfigError("holdout_min must be at least 1")
        if self.distill_docs < 0 or self.distill_docs != self.distill_docs:
            raise ConfigError("distill_docs must not be negative")
        if self.lr_docs < 0 or self.lr_docs != self.lr_docs:
            raise ConfigError("lr_docs must not be negative")
        if self.l2sp < 0 or self.l2sp != self.l2sp:
            raise ConfigError("l2sp must not be negative")
        if self.freeze_layers < 0:
            raise ConfigError("freeze_layers must not be negative")
        training = self.training
        if training.learning_rate is None:  # left to the model's kind: any default passes
            training = replace(training, learning_rate=TRANSFORMER_LEARNING_RATE)
        training.validate()

    def for_model(self, kind: str) -> "FineTuneConfig":
        """These settings with an open learning rate decided for a model of ``kind``."""
        if self.training.learning_rate is not None:
            return self
        return replace(self, training=replace(self.training, learning_rate=default_learning_rate(kind)))


def held_back_count(documents: int, share: float = _FINE_TUNE["holdout_share"],
                    minimum: int = _FINE_TUNE["holdout_min"]) -> int:
    """Documents held back for early stopping when there is no devel file: ``share``
    of them, at least ``minimum``; none when fewer than ``2 * minimum`` (a model
    would then learn from too few)."""
    if documents < 2 * minimum:
        return 0
    return max(minimum, round(documents * share))
