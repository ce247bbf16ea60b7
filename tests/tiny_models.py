"""Tiny random-initialised models built from a config, so tests download nothing.

``make_tiny_model(folder, labels)`` writes a Hugging Face token-classification model
(safetensors) and a fast WordPiece tokenizer whose vocabulary covers the words of the
tests' fixtures (unknown words still split into characters or [UNK]).
"""

from __future__ import annotations

import string
from pathlib import Path

WORDS = """the of and in with to a was were is by for patients induced disease cancer
tumor tumour heart failure renal acute chronic cocaine lithium carbonate naloxone
clonidine hypertension toxicity seizures rats dose doses mg kg treatment effect
effects caused cause associated blood pressure drug drugs study studies increased
decreased after before no not on at as from or this that these we our results
background methods conclusions aspirin ibuprofen pain nephrotoxicity hepatitis""".split()


def _vocab() -> list[str]:
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = list(string.ascii_lowercase + string.digits + string.punctuation)
    pieces = ["##" + c for c in string.ascii_lowercase + string.digits]
    subwords = ["##s", "##ed", "##ing", "##ity", "##ine", "##ol", "##ide"]
    words = sorted(set(WORDS))
    seen: list[str] = []
    for tok in special + chars + pieces + subwords + words:
        if tok not in seen:
            seen.append(tok)
    return seen


def make_tiny_tokenizer(folder: str | Path):
    from transformers import BertTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(_vocab()) + "\n", encoding="utf-8")
    # transformers 5 takes the vocabulary as `vocab` (a path or a dict).
    tok = BertTokenizerFast(vocab=str(vocab), do_lower_case=True, model_max_length=64)
    tok.save_pretrained(folder)
    return tok


def make_tiny_model(folder: str | Path, labels: list[str] | None = None, layers: int = 2,
                    hidden: int = 32, heads: int = 2, intermediate: int = 64,
                    max_positions: int = 64, seed: int = 0) -> Path:
    """A BERT token classifier small enough to train in seconds on a CPU."""
    import torch
    from transformers import BertConfig, BertForTokenClassification

    labels = labels or ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    folder = Path(folder)
    tok = make_tiny_tokenizer(folder)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tok.get_vocab()), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=intermediate,
                        max_position_embeddings=max_positions,
                        id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)})
    model = BertForTokenClassification(config)
    model.save_pretrained(folder, safe_serialization=True)
    return folder


def make_tiny_encoder(folder: str | Path, layers: int = 2, hidden: int = 32, heads: int = 2,
                      seed: int = 0) -> Path:
    """A bare encoder (no tagging head), as a base model for fine-tuning tests."""
    import torch
    from transformers import BertConfig, BertModel

    folder = Path(folder)
    tok = make_tiny_tokenizer(folder)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tok.get_vocab()), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=hidden * 2,
                        max_position_embeddings=64)
    BertModel(config).save_pretrained(folder, safe_serialization=True)
    return folder


def make_tiny_mpnet(folder: str | Path, labels: list[str] | None = None, layers: int = 2,
                    hidden: int = 32, heads: int = 2, seed: int = 0) -> Path:
    """An MPNet token classifier (relative position bias shared across layers, as in
    all-mpnet-base-v2), with the tiny WordPiece tokenizer."""
    import torch
    from transformers import MPNetConfig, MPNetForTokenClassification

    labels = labels or ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    folder = Path(folder)
    tok = make_tiny_tokenizer(folder)
    torch.manual_seed(seed)
    config = MPNetConfig(vocab_size=len(tok.get_vocab()), hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, intermediate_size=hidden * 2,
                         max_position_embeddings=66, pad_token_id=tok.pad_token_id,
                         id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)})
    model = MPNetForTokenClassification(config)
    with torch.no_grad():  # a visible, non-zero bias, so a test can tell it was kept
        model.mpnet.encoder.relative_attention_bias.weight.normal_(0, 0.5)
    model.save_pretrained(folder, safe_serialization=True)
    return folder


def write_documents(path: Path, sentences, n: int = 3) -> Path:
    """``sentences`` (lists of (word, tag)) repeated as ``n`` -DOCSTART- documents of
    a CoNLL file: training data for document and packed context."""
    blocks = []
    for d in range(n):
        blocks.append(f"-DOCSTART- doc{d}")
        blocks += ["\n".join(f"{w}\t{t}" for w, t in s) for s in sentences]
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return path


def make_tiny_encoder_with_words(folder: str | Path, words: list[str], hidden: int = 32, layers: int = 1,
                                 seed: int = 0, lowercase: bool = True) -> Path:
    """A bare BERT encoder whose WordPiece vocabulary is the usual specials, characters and
    ``##`` characters followed by ``words`` in the order given: models of distinct
    vocabularies (and widths) for the embedding-transfer tests."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    base = _vocab()[:5 + len(string.ascii_lowercase + string.digits + string.punctuation) + 36]
    vocab = list(dict.fromkeys(base + list(words)))
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tok = BertTokenizerFast(vocab=str(folder / "vocab.txt"), do_lower_case=lowercase, model_max_length=64)
    tok.save_pretrained(folder)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(vocab), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
                        intermediate_size=hidden * 2, max_position_embeddings=64)
    BertModel(config).save_pretrained(folder, safe_serialization=True)
    return folder
