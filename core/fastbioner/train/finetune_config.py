"""The settings of ``fastbioner fine-tune`` (continue training a model on reviewed
documents), saved whole in the new model's manifest. Kept apart from the job
(:mod:`fastbioner.train.finetune`) so that the app's dialog reads the defaults without
importing torch.

Defaults are sized for minutes on a laptop: measured on NCBI-disease (100 reviewed
abstracts, devel only; the runs and their figures are in docs/research/curator-loop.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from fastbioner.base.config import ConfigError, Settings, TrainingConfig, opt

# The peak learning rate when none is given, by kind of model (fastbioner.models.loading.model_kind).
# Measured on NCBI-disease devel (docs/research/curator-loop.md, "Choosing the defaults"), 100
# reviewed abstracts: for the transformer student 3e-4 led 1e-4 at every epoch (80.22
# against 79.16 Disease F1 after 6); the convolutional student, whose weights are few
# and whose embedding table is frozen, learnt little at 3e-4 (64.73) and most at 3e-3
# (70.02 and 68.79 for seeds 13 and 14, against 69.09 and 68.75 at 1e-3, 67.89 at 1e-2).
TRANSFORMER_LEARNING_RATE = 3e-4
SMALL_MODEL_LEARNING_RATE = 3e-3  # convolutional and recurrent students (recurrent: not measured)
SMALL_MODEL_KINDS = ("cnn", "recurrent")


def default_learning_rate(kind: str) -> float:
    """The peak learning rate for a model of ``kind`` when the settings leave it open."""
    return SMALL_MODEL_LEARNING_RATE if kind in SMALL_MODEL_KINDS else TRANSFORMER_LEARNING_RATE


def _training() -> TrainingConfig:
    # learning_rate None: decided by the kind of model once it is known (default_learning_rate).
    # 4 epochs: one update of 100 abstracts took 93 s on two idle cores. The run ends with
    # its last weights: a held-back slice of 5-10 documents is too small to choose among
    # epochs (on NCBI devel, the weights it chose scored 79.49, 78.90 and 74.92 after 4, 5
    # and 6 epochs; the last weights 79.28, 79.33 and 78.34), but it still stops a run that
    # stops gaining on it.
    return TrainingConfig(epochs=4, learning_rate=None, batch_size=16, seed=13,  # type: ignore[arg-type]
                          early_stopping_patience=2, keep_weights="last")


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
    holdout_share: float = opt(0.1, "share of the reviewed documents held back when there is no --dev",
                               flag="--holdout", metavar="SHARE")
    holdout_min: int = opt(5, "held back at least this many documents (with fewer than twice as many, none "
                              "are held back)", metavar="DOCS")
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


def held_back_count(documents: int, share: float = 0.1, minimum: int = 5) -> int:
    """Documents held back for early stopping when there is no devel file: ``share``
    of them, at least ``minimum``; none when fewer than ``2 * minimum`` (a model
    would then learn from too few)."""
    if documents < 2 * minimum:
        return 0
    return max(minimum, round(documents * share))
