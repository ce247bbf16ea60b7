"""Run under torchrun by tests/core/test_distributed.py: trains a tiny dropout-free
token classifier with the project's Trainer and writes this rank's final weights.

    python -m torch.distributed.run --standalone --nproc_per_node=2 ddp_worker.py MODEL BIO OUT BATCH ACCUM
"""

import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

from fastbioner.train import distributed
from fastbioner.base.config import TrainingConfig
from fastbioner.models.encoding import WindowBatches, WordEncoder
from fastbioner.models.losses import CrossEntropy
from fastbioner.models.modeling import load_token_classifier, load_tokenizer, model_labels
from fastbioner.io.formats import read_tagged_files
from fastbioner.train.teacher import TokenClassificationObjective
from fastbioner.train.training import Trainer


def main() -> None:
    model_dir, bio, out, batch, accum = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    torch.set_num_threads(1)
    distributed.init_from_env()
    model = load_token_classifier(model_dir)
    tokenizer = load_tokenizer(model_dir)
    sentences = read_tagged_files([bio])
    encoder = WordEncoder(tokenizer, model_labels(model), max_length=32)
    windows = encoder.encode([s.words for s in sentences], [s.tags for s in sentences])
    config = TrainingConfig(epochs=2, batch_size=batch, grad_accum_steps=accum, learning_rate=5e-3,
                            warmup_ratio=0.0, seed=3, device="cpu")
    trainer = Trainer({"model": model}, TokenClassificationObjective(model, CrossEntropy()),
                      WindowBatches(encoder, windows, batch, seed=3), config)
    for _ in trainer.steps():
        pass
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(out / f"rank{distributed.rank()}-of-{distributed.world_size()}.safetensors"))
    (out / f"steps{distributed.rank()}").write_text(str(trainer.state.step))
    distributed.leave()
    distributed.exit_process(0)


if __name__ == "__main__":
    main()
