"""A tiny tagger that has really learnt something, for the inference tests.

It is trained in a few seconds on random word sequences where a word's tag depends
only on the word (case-insensitively): the chemicals and diseases below, and "heart
failure" as a two-word disease. So the tests know exactly which entities a text
holds, and can check the engine's offsets, windows and stitching against that
truth instead of against its own output.
"""

from __future__ import annotations

import random
from pathlib import Path

from tiny_models import make_tiny_model

CHEMICALS = ["cocaine", "lithium", "aspirin", "naloxone", "clonidine", "ibuprofen"]
DISEASES = ["hypertension", "seizures", "hepatitis", "nephrotoxicity", "cancer"]
OTHER = ("the of and in with to a was were is by for patients induced dose mg kg treatment "
         "effect caused blood pressure rats after no").split()
# Punctuation and symbols the texts of the tests put between words (always O).
NOISE = [",", "(", ")", "-", "/", ";", ".", "%", "1", "\u03b1", "\u03b2", "\u00b2", "\u00e9", "\U0001d6fc"]
LABELS = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]

TYPE_OF = {**{w: "Chemical" for w in CHEMICALS}, **{w: "Disease" for w in DISEASES}, "heart failure": "Disease"}

_trained: dict[str, Path] = {}


def random_tagged_sentence(rng: random.Random, low: int = 3, high: int = 25) -> tuple[list[str], list[str]]:
    words: list[str] = []
    tags: list[str] = []
    for _ in range(rng.randint(low, high)):
        r = rng.random()
        if r < 0.15:
            words.append(rng.choice(CHEMICALS))
            tags.append("B-Chemical")
        elif r < 0.30:
            words.append(rng.choice(DISEASES))
            tags.append("B-Disease")
        elif r < 0.36:
            words += ["heart", "failure"]
            tags += ["B-Disease", "I-Disease"]
        elif r < 0.5:
            words.append(rng.choice(NOISE))
            tags.append("O")
        else:
            words.append(rng.choice(OTHER))
            tags.append("O")
    words = [w.upper() if rng.random() < 0.2 else w for w in words]
    return words, tags


def trained_tagger_folder(base: Path, steps: int = 60, seed: int = 0) -> Path:
    """The trained model's folder (trained once per test session)."""
    key = f"{steps}-{seed}"
    if key in _trained:
        return _trained[key]
    import torch

    from fastbioner.models.encoding import WordEncoder
    from fastbioner.models.modeling import load_token_classifier, load_tokenizer, save_model

    folder = make_tiny_model(Path(base) / f"trained-{key}", LABELS, hidden=32, intermediate=64)
    model = load_token_classifier(folder)
    tokenizer = load_tokenizer(folder)
    encoder = WordEncoder(tokenizer, LABELS, max_length=64)
    rng = random.Random(seed)
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    model.train()
    for _ in range(steps):
        batch = [random_tagged_sentence(rng) for _ in range(32)]
        windows = encoder.encode([b[0] for b in batch], [b[1] for b in batch])
        inputs = encoder.collate(windows)
        loss = model(**inputs.model_inputs(), labels=inputs.labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    save_model(model, tokenizer, folder)
    _trained[key] = folder
    return folder


def planted_text(rng: random.Random, n_words: int, separators: list[str]) -> tuple[str, set]:
    """Text of random words joined by random separators; returns the text and the
    (start, end, type) of every entity in it."""
    text, truth = "", set()
    for _ in range(n_words):
        r = rng.random()
        if r < 0.2:
            word = rng.choice(CHEMICALS + DISEASES)
        elif r < 0.25:
            word = "heart failure"
        else:
            word = rng.choice(OTHER)
        word = word.upper() if rng.random() < 0.3 else word.capitalize() if rng.random() < 0.3 else word
        if text:
            text += rng.choice(separators)
        if word.lower() in TYPE_OF:
            truth.add((len(text), len(text) + len(word), TYPE_OF[word.lower()]))
        text += word
    return text, truth
