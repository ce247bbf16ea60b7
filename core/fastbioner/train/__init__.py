"""Training: the shared training loop, teacher fine-tuning, reviewed fine-tunes,
distillation (``distill/``), run bookkeeping (names, checkpoints, resume) and estimates."""
