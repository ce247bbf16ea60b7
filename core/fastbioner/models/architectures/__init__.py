"""Every architecture the project can ship: Hugging Face transformer token
classifiers (loaded as they are), a transformer encoder with a CRF head
(:mod:`fastbioner.models.architectures.transformer_crf`), the recurrent tagger with its CRF
(:mod:`fastbioner.models.architectures.recurrent`) and the convolutional tagger
(:mod:`fastbioner.models.architectures.convolutional`). Loading a model
(:func:`fastbioner.models.modeling.load_token_classifier`) registers ours with transformers
first, so any process can load any kind of student; the distillation package only
builds and trains them. Which kind a folder holds, and so which code tags with it, is
decided by :func:`fastbioner.models.loading.model_kind`.
"""

from __future__ import annotations


def register_architectures() -> None:
    """Make transformers' Auto classes know the project's own model types."""
    from fastbioner.models.architectures import convolutional, recurrent, transformer_crf  # noqa: F401  (they register on import)
