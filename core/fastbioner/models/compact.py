"""Make a trained model small enough to ship: trim its wordpiece vocabulary to the
pieces a corpus uses and store its weights in half precision.

The word-embedding matrix is most of a small student's weight (30,522 x 384 of
all-MiniLM-L6-v2's 22.7M parameters), and biomedical abstracts use a fraction of
a general vocabulary. Trimming keeps every piece the corpus produces, every
special token and every single-character piece of printable ASCII, so:

* text from the corpus tokenizes to exactly the same pieces as before (WordPiece is
  greedy longest-match-first: if every piece of a word's segmentation survives, the
  same segmentation is found again, since no longer piece was added);
* unseen words still tokenize (into shorter pieces, at worst single characters)
  rather than collapsing to ``[UNK]``.

The result is an ordinary Hugging Face folder: tokenizer.json with the new ids,
config.json with the new ``vocab_size`` and special ids, weights in safetensors.

Trimming costs a small student accuracy on text unlike the corpus: a word split into
shorter pieces than in training reads differently (the convolutional student lost 0.6
F1 on BC5CDR devel, the 6-layer transformer 0.1). So a convolutional student can
instead keep its whole vocabulary, small another way: its projection is folded into
the embedding table (the table becomes ``hidden_size`` wide, 256 instead of 384), and
the table is stored as int8 rows with a scale each (``int8_embeddings``). A 30,522-piece
table then weighs 7.8 MB instead of 23.4 MB in float16.
"""

from __future__ import annotations

import json
import shutil
import string
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer

from fastbioner.base.errors import ModelError
from fastbioner.models.architectures.convolution import Int8Embedding
from fastbioner.models.checks import LIMITS, MAX_TOKENIZER_BYTES, check_model_folder
from fastbioner.models.folder import copy_model_files, read_json_object
from fastbioner.base.jobs import CancelToken, EventCallback, ProgressReporter, run_job
from fastbioner.models.light.config import CONV_MODEL_TYPE

WEIGHTS = "model.safetensors"
CONV_EMBEDDINGS, CONV_PROJECTION = "net.embeddings", "net.project"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


@dataclass(frozen=True)
class CompactionReport:
    vocab_before: int
    vocab_after: int
    parameters_before: int
    parameters_after: int
    bytes_before: int
    bytes_after: int
    dtype: str
    corpus_pieces: int
    # Words of the corpus whose pieces differ after trimming: must be 0 by construction.
    changed_segmentations: int
    vocabulary_kept: bool = False      # no corpus given: every piece kept
    projection_folded: bool = False    # a convolutional student's projection folded into its table
    embedding_storage: str = "float"   # "int8": rows stored as int8 with a scale each

    def to_dict(self) -> dict:
        return asdict(self)


def _printable_pieces(vocab: dict[str, int]) -> set[str]:
    chars = set(string.printable.strip())
    return {p for c in chars for p in (c, "##" + c) if p in vocab}


def _piece_counts(tokenizer, texts: Iterable[str], reporter: ProgressReporter,
                  batch: int = 256) -> tuple[Counter, list[str]]:
    counts: Counter = Counter()
    texts = list(texts)
    reporter.stage("scan corpus", total=len(texts))
    for i in range(0, len(texts), batch):
        reporter.check()
        for enc in tokenizer.encode_batch(texts[i:i + batch], add_special_tokens=False):
            counts.update(enc.ids)
        reporter.emit(step=min(len(texts), i + batch))
    return counts, texts


def keeps_whole_vocabulary(folder: str | Path) -> bool:
    """Whether compaction for shipping should keep the model's whole vocabulary (and
    store its table in int8) rather than trim it: so for a convolutional student, which
    loses more to trimming than a transformer and whose int8 table weighs what a trimmed
    float16 one does."""
    try:
        config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and config.get("model_type") == CONV_MODEL_TYPE


def _fold_projection(state: dict[str, torch.Tensor], config: dict) -> None:
    """A convolutional student's ``project(embeddings(ids))`` as one table lookup:
    row i becomes W e_i + b (exact up to rounding; dropout between them is off when
    tagging). The padding row becomes b, which every block zeroes before reading."""
    table = state[f"{CONV_EMBEDDINGS}.weight"].double()
    weight, bias = state.pop(f"{CONV_PROJECTION}.weight").double(), state.pop(f"{CONV_PROJECTION}.bias").double()
    state[f"{CONV_EMBEDDINGS}.weight"] = (table @ weight.T + bias).float()
    config["embedding_size"] = int(weight.shape[0])
    config["project_embeddings"] = False


def _quantize_embeddings(state: dict[str, torch.Tensor], config: dict) -> None:
    weight, scale = Int8Embedding.quantize(state[f"{CONV_EMBEDDINGS}.weight"])
    state[f"{CONV_EMBEDDINGS}.weight"], state[f"{CONV_EMBEDDINGS}.scale"] = weight, scale
    config["embedding_storage"] = "int8"


def compact_model(src: str | Path, dest: str | Path, corpus: Iterable[str] | None, *,
                  dtype: torch.dtype = torch.float16, min_count: int = 1, int8_embeddings: bool = False,
                  on_event: EventCallback | None = None, cancel: CancelToken | None = None
                  ) -> CompactionReport:
    """Write a trimmed, half-precision copy of the model folder ``src`` to ``dest``.

    ``corpus`` None keeps the whole vocabulary. ``int8_embeddings`` (a convolutional
    student only) folds its projection into the table and stores the table in int8;
    a convolutional student's projection is folded whenever it is compacted.
    ``dest`` must not exist (or be an empty folder, such as a registry staging
    folder); it is built beside itself and renamed into place only when complete.
    Files other than weights and tokenizer are copied as they are.
    """
    src, dest = Path(src), Path(dest)

    def job(reporter: ProgressReporter) -> CompactionReport:
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise ModelError(f"{dest}: already exists")
        tok_path = src / "tokenizer.json"
        if not tok_path.is_file() or not (src / WEIGHTS).is_file():
            raise ModelError(f"{src}: needs tokenizer.json and {WEIGHTS} (a fast tokenizer and safetensors weights)")
        # The one folder check first (config, weights, sizes), then the tokenizer file as
        # untrusted JSON: random bytes or a wrong shape are one line, not a traceback.
        config = check_model_folder(src).config
        tok_json = read_json_object(tok_path, "tokenizer.json", MAX_TOKENIZER_BYTES)
        model = tok_json.get("model")
        if not isinstance(model, dict) or model.get("type") != "WordPiece":
            raise ModelError(f"{src}: only WordPiece vocabularies can be trimmed")
        old_vocab = model.get("vocab")
        if (not isinstance(old_vocab, dict) or not old_vocab
                or not all(type(i) is int and 0 <= i < LIMITS["vocab_size"][1] for i in old_vocab.values())):
            raise ModelError(f"{tok_path}: cannot load the tokenizer (its vocabulary is not pieces numbered 0 and up)")
        old_size = max(old_vocab.values()) + 1
        try:
            tokenizer = Tokenizer.from_file(str(tok_path))
        except Exception as exc:  # the Rust parser's own error type
            raise ModelError(f"{tok_path}: cannot load the tokenizer ({str(exc)[:120]})") from None
        is_conv = config.get("model_type") == CONV_MODEL_TYPE
        if int8_embeddings and not is_conv:
            raise ModelError(f"{src}: int8 embeddings are for the convolutional student only "
                             f"(model type {CONV_MODEL_TYPE}, not {config.get('model_type')!r})")

        id_to_piece = {i: p for p, i in old_vocab.items()}
        if corpus is None:
            counts: Counter[int] = Counter()
            texts: list[str] = []
            kept = sorted(old_vocab.values())
        else:
            counts, texts = _piece_counts(tokenizer, corpus, reporter)
            keep = {id_to_piece[i] for i, n in counts.items() if n >= min_count and i in id_to_piece}
            keep |= _printable_pieces(old_vocab)
            keep |= {t["content"] for t in tok_json.get("added_tokens", [])}
            keep |= {tok_json["model"].get("unk_token", "[UNK]")}
            kept = sorted((old_vocab[p] for p in keep if p in old_vocab))
        remap = {old: new for new, old in enumerate(kept)}
        new_vocab = {id_to_piece[old]: new for old, new in remap.items()}

        reporter.stage("write", total=3)
        state = load_file(str(src / WEIGHTS))
        index = torch.tensor(kept, dtype=torch.long)
        params_before = sum(t.numel() for t in state.values())
        resized = 0
        for name, tensor in list(state.items()):
            if tensor.ndim == 2 and tensor.shape[0] == old_size and "embed" in name:
                state[name] = tensor.index_select(0, index)
                resized += 1
        if not resized:
            raise ModelError(f"{src}: found no word-embedding matrix of {old_size} rows to trim")
        folded = is_conv and config.get("project_embeddings", True) and f"{CONV_PROJECTION}.weight" in state
        if folded:
            _fold_projection(state, config)
        if int8_embeddings and config.get("embedding_storage") != "int8":
            _quantize_embeddings(state, config)
        for name, tensor in state.items():
            if tensor.is_floating_point() and name != f"{CONV_EMBEDDINGS}.scale":  # int8 scales stay float32
                state[name] = tensor.to(dtype).contiguous()
        config["vocab_size"] = len(kept)
        for key in ("pad_token_id", "bos_token_id", "eos_token_id", "sep_token_id", "cls_token_id"):
            if isinstance(config.get(key), int) and config[key] in remap:
                config[key] = remap[config[key]]
        config["torch_dtype"] = str(dtype).replace("torch.", "")
        reporter.emit(step=1)
        reporter.check()

        tok_json["model"]["vocab"] = new_vocab
        for added in tok_json.get("added_tokens", []):
            added["id"] = remap[added["id"]]
        post = tok_json.get("post_processor") or {}
        for processor in post.get("processors", [post]):
            for special in (processor.get("special_tokens") or {}).values():
                special["ids"] = [remap[i] for i in special["ids"]]
            for key in ("sep", "cls"):  # RobertaProcessing / BertProcessing keep [token, id]
                if isinstance(processor.get(key), list):
                    processor[key][1] = remap[processor[key][1]]

        tmp = dest.with_name(f".{dest.name}.partial")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            tmp.mkdir(parents=True)
            # The rest of what a model is (its manifest, its card): never a pickle
            # (pytorch_model.bin, optimizer.pt, training_args.bin) nor a sub-folder.
            copy_model_files(src, tmp, skip=(WEIGHTS, "config.json", *TOKENIZER_FILES))
            save_file(state, str(tmp / WEIGHTS), metadata={"format": "pt"})
            (tmp / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
            (tmp / "tokenizer.json").write_text(json.dumps(tok_json, ensure_ascii=False), encoding="utf-8")
            (tmp / "vocab.txt").write_text("\n".join(id_to_piece[o] for o in kept) + "\n", encoding="utf-8")
            for name in ("tokenizer_config.json", "special_tokens_map.json"):
                if (src / name).is_file():
                    shutil.copy2(src / name, tmp / name)
            reporter.emit(step=2)

            # Same pieces as before for every text of the corpus, by construction; checked.
            trimmed = Tokenizer.from_file(str(tmp / "tokenizer.json"))
            changed = 0
            for i in range(0, len(texts), 256):
                reporter.check()
                a = tokenizer.encode_batch(texts[i:i + 256], add_special_tokens=False)
                b = trimmed.encode_batch(texts[i:i + 256], add_special_tokens=False)
                changed += sum(x.tokens != y.tokens for x, y in zip(a, b))
            reporter.emit(step=3)
            tmp.rename(dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return CompactionReport(
            vocab_before=old_size, vocab_after=len(kept), parameters_before=params_before,
            parameters_after=sum(t.numel() for t in state.values()),
            bytes_before=(src / WEIGHTS).stat().st_size, bytes_after=(dest / WEIGHTS).stat().st_size,
            dtype=config["torch_dtype"], corpus_pieces=sum(counts.values()), changed_segmentations=changed,
            vocabulary_kept=corpus is None, projection_folded=bool(folded),
            embedding_storage=config.get("embedding_storage", "float"))

    return run_job(job, on_event, cancel)  # ends with its final event, as every job does
