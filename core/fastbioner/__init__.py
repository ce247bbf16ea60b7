"""FastBioNER: biomedical NER with teacher fine-tuning and knowledge distillation.

The core library. It never imports Qt: the desktop app (``fastbioner_gui``) is a
thin layer over it, and the CLI (``fastbioner``) is another.
"""

__version__ = "0.1.0"
