"""DRET on model folders: reads the target and the sources (Hugging Face ids, folders,
registered models, WordPiece vocabularies), runs the surgery of
:mod:`fastbioner.models.transfer` and writes a base encoder: its tokenizer with the
merged vocabulary, its weights in safetensors, ``transfer.json`` (the per-source table
and the diagnostics) and a manifest of kind ``encoder`` holding the same report.

Only WordPiece tokenizers take part: a token is a string of the target's vocabulary
only when both split text the same way (``##`` continuations); a BPE or SentencePiece
source is refused rather than merged into nonsense.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from fastbioner.base.errors import ModelError
from fastbioner.io.fileio import write_text
from fastbioner.models.folder import safetensors_files
from fastbioner.models.manifest import MANIFEST, Manifest, now_iso, write_manifest
from fastbioner.models.modeling import _quiet_transformers, is_local_reference, load_tokenizer, transformers_api
from fastbioner.models.transfer import CONTINUATION, Source, TransferResult, transfer

REPORT = "transfer.json"
_BERT_SPECIALS = frozenset({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
# The word-embedding tensor of an encoder's safetensors (BERT, MPNet, RoBERTa, DistilBERT,
# a CRF tagger's encoder), read without building the model.
_WORD_EMBEDDINGS = re.compile(r"(^|\.)word_embeddings\.weight$")


def is_vocabulary_folder(ref: str | Path) -> bool:
    """A WordPiece vocabulary without weights (``fastbioner train-vocabulary``'s output,
    or any folder or file holding a ``vocab.txt`` and no ``config.json``)."""
    path = Path(ref).expanduser()
    if path.is_file():
        return path.name.endswith(".txt")
    return path.is_dir() and (path / "vocab.txt").is_file() and not (path / "config.json").is_file()


def _read_vocab_txt(path: Path) -> dict[str, int]:
    vocab: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        token = line.rstrip("\n")
        if token and token not in vocab:
            vocab[token] = len(vocab)
    return vocab


def _backend(tokenizer) -> dict[str, Any]:
    return json.loads(tokenizer.backend_tokenizer.to_str())


def _check_wordpiece(tokenizer, ref: str | Path) -> None:
    kind = _backend(tokenizer).get("model", {}).get("type")
    if kind != "WordPiece":
        raise ModelError(f"{ref}: its tokenizer is {kind or 'not WordPiece'}; DRET merges WordPiece "
                         f"vocabularies only (BERT, MPNet, MiniLM and their biomedical kin)")


def _specials(tokenizer) -> frozenset[str]:
    added = [t.content for t in tokenizer.backend_tokenizer.get_added_tokens_decoder().values()]
    return frozenset({*tokenizer.all_special_tokens, *added})


def _embedding_matrix(ref: str | Path) -> np.ndarray:
    """The input (word) embedding matrix of a model folder, from its safetensors; a
    Hugging Face id is loaded whole (from its cache, or downloaded)."""
    path = Path(ref).expanduser()
    if path.is_dir():
        from safetensors import safe_open

        for file in safetensors_files(path):
            with safe_open(str(file), framework="numpy") as f:
                for key in f.keys():
                    if _WORD_EMBEDDINGS.search(key):
                        return f.get_tensor(key).astype(np.float32)
        raise ModelError(f"{ref}: no word embedding matrix (…word_embeddings.weight) in its safetensors")
    return _load_encoder(ref).get_input_embeddings().weight.detach().float().numpy()


def _load_encoder(ref: str | Path):
    AutoModel = transformers_api().AutoModel
    try:
        with _quiet_transformers():
            return AutoModel.from_pretrained(str(ref), use_safetensors=True, trust_remote_code=False)
    except Exception as exc:
        raise ModelError(f"{ref}: cannot load it as an encoder ({str(exc).splitlines()[0][:200]})") from None


def model_folder(ref: str, registry=None) -> str:
    """A registry name's folder; a folder or a hub id as given."""
    if is_local_reference(ref) or "/" in ref:
        return ref
    from fastbioner.models.registry import Registry

    try:
        return str((registry or Registry()).resolve(ref).path)
    except ModelError:
        return ref


def load_source(ref: str, registry=None) -> Source:
    """A source: a vocabulary (folder or ``vocab.txt``) or a model (id, folder, registry name)."""
    if is_vocabulary_folder(ref):
        path = Path(ref).expanduser()
        vocab = _read_vocab_txt(path if path.is_file() else path / "vocab.txt")
        specials = frozenset(t for t in vocab if t in _BERT_SPECIALS or re.fullmatch(r"\[[A-Za-z_]+\d*\]", t))
        return Source(str(ref), vocab, None, specials)
    folder = model_folder(ref, registry)
    tokenizer = load_tokenizer(folder)
    _check_wordpiece(tokenizer, ref)
    matrix = _embedding_matrix(folder)
    vocab = {t: i for t, i in tokenizer.get_vocab().items() if i < len(matrix)}
    return Source(str(ref), vocab, matrix, _specials(tokenizer))


def producible(tokenizer):
    """``keep(token)``: whether the target's tokenizer can ever produce ``token`` (its
    normaliser leaves the text as it is and its pre-tokeniser keeps it one word): an
    upper-case token from a cased source never appears after a lower-casing one."""
    backend = tokenizer.backend_tokenizer
    normalizer, pre = backend.normalizer, backend.pre_tokenizer

    def keep(token: str) -> bool:
        text = token[len(CONTINUATION):] if token.startswith(CONTINUATION) and len(token) > 2 else token
        if normalizer is not None and normalizer.normalize_str(text) != text:
            return False
        if pre is not None:
            words = pre.pre_tokenize_str(text)
            return len(words) == 1 and words[0][0] == text
        return " " not in text
    return keep


@dataclass
class TransferOutcome:
    folder: Path
    result: TransferResult
    report: dict[str, Any]


def _grown_tokenizer(tokenizer, new_tokens: Sequence[str], first_id: int, folder: Path):
    """The target's tokenizer with ``new_tokens`` appended to its WordPiece vocabulary at
    ids ``first_id`` ...: saved into ``folder`` and read back. Ids between the vocabulary's
    end and ``first_id`` (an embedding matrix padded past the vocabulary) get placeholders."""
    tokenizer.save_pretrained(folder)
    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    vocab: dict[str, int] = data["model"]["vocab"]
    next_id = max(vocab.values()) + 1
    for k in range(next_id, first_id):
        vocab[f"[dret-unused{k}]"] = k
    for k, token in enumerate(new_tokens):
        vocab[token] = first_id + k
    (folder / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    ordered = sorted(vocab, key=vocab.__getitem__)
    (folder / "vocab.txt").write_text("\n".join(ordered) + "\n", encoding="utf-8")
    grown = load_tokenizer(folder)
    if len(grown.get_vocab()) < first_id + len(new_tokens):
        raise ModelError(f"the merged tokenizer holds {len(grown.get_vocab())} tokens, expected "
                         f"{first_id + len(new_tokens)}")
    return grown


def transfer_embeddings(target: str, sources: Sequence[str], strategy: str, out: str | Path, *,
                        width_map: str = "auto", align: bool = False, seed: int = 0,
                        registry=None, labels: Mapping[str, str] | None = None) -> TransferOutcome:
    """Run DRET and write the base encoder into ``out`` (created; it must not exist).
    ``labels``: what the report and the registry's summary call a source instead of its
    reference (a vocabulary learnt into a temporary folder is named by what it was
    learnt from, not by a folder that is gone once the command ends)."""
    import torch

    out = Path(out)
    if out.exists():
        raise ModelError(f"{out}: already exists; choose another name or remove it")
    target_folder = model_folder(target, registry)
    tokenizer = load_tokenizer(target_folder)
    _check_wordpiece(tokenizer, target)
    model = _load_encoder(target_folder)
    old = model.get_input_embeddings().weight.detach().float().numpy()
    target_vocab = {t: i for t, i in tokenizer.get_vocab().items() if i < len(old)}
    loaded = [load_source(s, registry) for s in sources]
    for src in loaded:
        src.name = (labels or {}).get(src.name, src.name)
    init_std = float(getattr(model.config, "initializer_range", 0.02) or 0.02)
    result = transfer(target_vocab, old, loaded, strategy, target_specials=_specials(tokenizer),
                      width_map=width_map, align=align, keep=producible(tokenizer), init_std=init_std, seed=seed)
    report = {"target": str(target), "strategy": strategy, "width_map": width_map, "align": align, "seed": seed,
              "vocabulary": {"before": len(target_vocab), "after": len(target_vocab) + len(result.new_tokens),
                             "embedding_rows": int(result.embeddings.shape[0])},
              "sources": result.table, "diagnostics": result.diagnostics}
    staging = Path(tempfile.mkdtemp(prefix=".dret-", dir=out.parent if out.parent.exists() else None))
    try:
        _grown_tokenizer(tokenizer, result.new_tokens, result.first_id, staging)
        model.resize_token_embeddings(int(result.embeddings.shape[0]), mean_resizing=False)
        with torch.no_grad():
            model.get_input_embeddings().weight.copy_(torch.from_numpy(result.embeddings))
        with _quiet_transformers():
            model.save_pretrained(staging, safe_serialization=True)
        write_text(staging / REPORT, json.dumps(report, indent=2) + "\n")
        config = model.config
        manifest = Manifest(name=out.name, kind="encoder", summary=f"base encoder: {target} with DRET "
                            f"({strategy}) from {', '.join(src.name for src in loaded)}", base_model=str(target),
                            model_type=getattr(config, "model_type", ""),
                            layers=getattr(config, "num_hidden_layers", None),
                            width=getattr(config, "hidden_size", None),
                            parameters=int(sum(p.numel() for p in model.parameters())),
                            config={"transfer": report}, created=now_iso())
        write_manifest(staging, manifest)
        out.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(out)
    except BaseException:
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
        raise
    return TransferOutcome(out, result, report)


def transfer_report(folder: str | Path) -> dict[str, Any] | None:
    """The DRET report beside a base encoder (None when it was not made by a transfer)."""
    path = Path(folder) / REPORT
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


__all__ = ["MANIFEST", "REPORT", "TransferOutcome", "is_vocabulary_folder", "load_source", "model_folder", "producible",
           "transfer_embeddings", "transfer_report"]
