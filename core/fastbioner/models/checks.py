"""What a model folder must be before anything is built from it.

Every way a folder reaches the project (``tag --model DIR``, ``models import``,
``models show DIR``, a tagging or training load, an install into the registry) goes
through :func:`check_model_folder` (via :func:`fastbioner.models.modeling.check_weights`),
which reads only small files and the safetensors headers, allocates nothing the
folder's size does not bound, imports neither torch nor transformers, and raises
:class:`~fastbioner.base.errors.ModelError` naming the file at fault:

* ``config.json``: a JSON object whose sizes are whole numbers inside
  :data:`LIMITS` (a number of labels of a billion would allocate gigabytes before
  any weight is read), attention heads that divide the width, a positive
  ``layer_norm_eps``, labels (``id2label``) numbered 0 .. n-1 and agreeing with
  ``num_labels``;
* the safetensors files: a header no longer than the file and :data:`MAX_HEADER_BYTES`,
  tensors that fill exactly the data that follows (a truncated file is refused
  before any tensor is read), and at least as many numbers as the config's sizes
  imply (:func:`least_parameters`), so a small folder cannot describe a huge model;
* ``fastbioner.json`` (when present): well typed (:func:`fastbioner.models.manifest.read_manifest`)
  and naming the labels the model's head tags with, in its order.

The limits are documented for users in docs/reference/limits.md.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from fastbioner.base.errors import ModelError
from fastbioner.models.folder import PICKLE_SUFFIXES, read_json_object, safetensors_files
from fastbioner.models.manifest import MANIFEST, read_manifest

# Sizes config.json may give (inclusive), far above any encoder tagger published
# (BERT-large: 24 layers x 1024; XLM-R's vocabulary: 250,002 pieces).
LIMITS: dict[str, tuple[int, int]] = {
    "vocab_size": (1, 1_000_000),
    "hidden_size": (1, 16_384),
    "embedding_size": (1, 16_384),
    "intermediate_size": (1, 65_536),
    "num_hidden_layers": (1, 256),
    "num_attention_heads": (1, 256),
    "max_position_embeddings": (1, 131_072),
    "type_vocab_size": (0, 1_024),
    "num_labels": (1, 1_000),
    "kernel_size": (1, 63),
}
# No more numbers than this, whatever the weights hold (8 GB in float32).
MAX_PARAMETERS = 2_000_000_000
MAX_HEADER_BYTES = 16 * 2**20        # a safetensors header (a 1000-tensor model needs ~100 KB)
MAX_TOKENIZER_BYTES = 512 * 2**20    # tokenizer.json, vocab.txt ... (the largest known: ~20 MB)
MAX_LABEL_CHARS = 200
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "merges.txt", "spiece.model",
                   "sentencepiece.bpe.model", "tokenizer.model", "tokenizer_config.json",
                   "special_tokens_map.json", "added_tokens.json")

# Bytes per element of safetensors' dtypes.
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2, "U16": 2,
               "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
# The students' settings that take one of a few values (fastbioner.models.architectures).
_CHOICES = {"embedding_storage": ("float", "int8"), "cell": ("gru", "lstm")}
# Model types with a table of absolute position embeddings (max_position_embeddings x width).
_POSITION_TABLES = {"bert", "mpnet", "roberta", "xlm-roberta", "camembert", "electra"}
# Defaults transformers fills in for sizes config.json leaves out, by model type
# (the project's students, else BERT's): used only to bound the model's size.
_DEFAULTS = {"fastbioner-cnn": {"vocab_size": 30522, "embedding_size": 768, "hidden_size": 256,
                                "num_hidden_layers": 4},
             "fastbioner-rnn": {"vocab_size": 30522, "embedding_size": 768, "hidden_size": 256,
                                "num_hidden_layers": 1}}
_BERT = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "intermediate_size": 3072,
         "max_position_embeddings": 512}


@dataclass(frozen=True)
class FolderCheck:
    """What the checks read: config.json's contents, the labels the head tags with
    (``id2label`` in order, or ``LABEL_0 ...`` as transformers fills them in) and the
    number of parameters the weights hold."""

    config: dict[str, Any]
    labels: list[str]
    parameters: int


def _describe(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _bad(path: Path, message: str) -> ModelError:
    return ModelError(f"{path}: {message}")


def _is_whole(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def check_config(raw: dict[str, Any], path: Path) -> list[str]:
    """ModelError unless config.json's contents (``raw``) are within :data:`LIMITS`;
    the labels the model tags with."""
    _check_sizes(raw, path, "")
    encoder = raw.get("encoder")  # a transformer with a CRF head nests its encoder's config
    if encoder is not None:
        if not isinstance(encoder, dict):
            raise _bad(path, f"'encoder' must be an object, got {_describe(encoder)}")
        _check_sizes(encoder, path, "encoder.")
    for key in ("model_type", "hidden_act", "position_embedding_type"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise _bad(path, f"{key!r} must be a string, got {_describe(raw[key])}")
    for key, choices in _CHOICES.items():
        if raw.get(key) is not None and raw[key] not in choices:
            raise _bad(path, f"{key!r} must be one of {', '.join(choices)}, got {_describe(raw[key])}")
    for key in ("use_crf", "project_embeddings", "is_decoder"):
        if raw.get(key) is not None and not isinstance(raw[key], bool):
            raise _bad(path, f"{key!r} must be true or false, got {_describe(raw[key])}")
    architectures = raw.get("architectures")
    if architectures is not None and not (isinstance(architectures, list)
                                          and all(isinstance(a, str) for a in architectures)):
        raise _bad(path, f"'architectures' must be a list of names, got {_describe(architectures)}")
    return _labels(raw, path)


def _check_sizes(raw: dict[str, Any], path: Path, prefix: str) -> None:
    for key, (low, high) in LIMITS.items():
        value = raw.get(key)
        if value is None:
            continue  # left out: transformers' default, within the limits
        if not _is_whole(value):
            raise _bad(path, f"{prefix}{key!r} must be a whole number, got {_describe(value)}")
        if not low <= value <= high:
            raise _bad(path, f"{prefix}{key} {value:,} is outside the limits {low:,} .. {high:,} "
                             f"(see docs/reference/limits.md)")
    heads, width = raw.get("num_attention_heads"), raw.get("hidden_size")
    if heads is not None and width is not None and width % heads:
        raise _bad(path, f"{prefix}hidden_size {width} is not a multiple of num_attention_heads {heads}")
    eps = raw.get("layer_norm_eps")
    if eps is not None and not (isinstance(eps, (int, float)) and not isinstance(eps, bool)
                                and math.isfinite(eps) and 0 < eps < 1):
        raise _bad(path, f"{prefix}'layer_norm_eps' must be a positive number below 1, got {_describe(eps)}")
    pad, vocab = raw.get("pad_token_id"), raw.get("vocab_size")
    if pad is not None and (not _is_whole(pad) or pad < 0 or (vocab is not None and pad >= vocab)):
        raise _bad(path, f"{prefix}'pad_token_id' must be a token id below vocab_size, got {_describe(pad)}")


def _labels(raw: dict[str, Any], path: Path) -> list[str]:
    id2label = raw.get("id2label")
    count = raw.get("num_labels")
    if id2label is None:
        n = 2 if count is None else count  # transformers' default: LABEL_0, LABEL_1
        return [f"LABEL_{i}" for i in range(n)]
    if not isinstance(id2label, dict):
        raise _bad(path, f"'id2label' must be an object mapping \"0\", \"1\" ... to labels, "
                         f"got {_describe(id2label)}")
    low, high = LIMITS["num_labels"]
    if not low <= len(id2label) <= high:
        raise _bad(path, f"'id2label' holds {len(id2label):,} labels, outside the limits {low} .. {high}")
    labels: dict[int, str] = {}
    for key, label in id2label.items():
        if not (isinstance(key, str) and key.isascii() and key.isdigit() and len(key) <= 6):
            raise _bad(path, f"'id2label' key {_describe(key)} is not a label number (\"0\", \"1\" ...)")
        if not isinstance(label, str) or not label or len(label) > MAX_LABEL_CHARS:
            raise _bad(path, f"'id2label' {key}: a label must be a non-empty string of at most "
                             f"{MAX_LABEL_CHARS} characters, got {_describe(label)}")
        labels[int(key)] = label
    if sorted(labels) != list(range(len(id2label))):
        raise _bad(path, f"'id2label' must number its labels 0 .. {len(id2label) - 1}, "
                         f"got {', '.join(map(str, sorted(labels)[:8]))}")
    if count is not None and count != len(labels):
        raise _bad(path, f"num_labels {count} disagrees with the {len(labels)} labels of 'id2label'")
    label2id = raw.get("label2id")
    if label2id is not None and not isinstance(label2id, dict):
        raise _bad(path, f"'label2id' must be an object, got {_describe(label2id)}")
    return [labels[i] for i in range(len(labels))]


def least_parameters(raw: dict[str, Any], labels: int) -> int:
    """A lower bound on the number of parameters a model built from config.json holds
    (word embeddings, one width x width matrix and one feed-forward matrix per layer,
    the position table of the types that have one, the head), from sizes already
    checked. The weights must hold at least this many numbers."""
    encoder = raw.get("encoder")
    inner = encoder if isinstance(encoder, dict) else raw
    model_type = inner.get("model_type") or raw.get("model_type") or ""
    defaults = _DEFAULTS.get(model_type, _BERT)

    def size(key: str) -> int:
        value = inner.get(key)
        return value if _is_whole(value) else defaults.get(key, 0)

    width, vocab = size("hidden_size"), size("vocab_size")
    if model_type == "albert":  # ALBERT shares its layers among groups
        groups = inner.get("num_hidden_groups")
        layers = groups if _is_whole(groups) else 1
    else:
        layers = size("num_hidden_layers")
    embedding = min(size("embedding_size") or width, width)
    total = vocab * embedding + layers * width * width + layers * width * size("intermediate_size")
    if model_type in _POSITION_TABLES:
        total += size("max_position_embeddings") * width
    return total + width * labels


def read_safetensors_header(path: Path) -> dict[str, Any]:
    """The header of a safetensors file, checked against the file's size before any
    of it is read: a length past the file's end or :data:`MAX_HEADER_BYTES`, bad JSON,
    tensors that do not fill the data exactly (a truncated file) raise ModelError."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise _bad(path, f"corrupt weights (a file of {size} bytes has no safetensors header)")
            (length,) = struct.unpack("<Q", head)
            if length > size - 8 or length > MAX_HEADER_BYTES:
                raise _bad(path, f"corrupt weights (the header declares {length:,} bytes; the file holds "
                                 f"{size:,} and a header may hold {MAX_HEADER_BYTES:,})")
            raw = fh.read(length)
    except ModelError:
        raise
    except OSError as exc:
        raise _bad(path, f"unreadable weights ({exc.strerror or exc})") from None
    try:
        header = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        raise _bad(path, "corrupt weights (the header is not JSON)") from None
    if not isinstance(header, dict):
        raise _bad(path, "corrupt weights (the header is not a JSON object)")
    data_bytes = size - 8 - length
    spans = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        spans.append(_tensor_span(path, name, info))
    end = 0
    for begin, stop, name in sorted(spans):
        if begin != end:
            raise _bad(path, f"corrupt weights (tensor {name[:60]!r} does not follow the one before it)")
        end = stop
    if end != data_bytes:
        state = "truncated" if end > data_bytes else "longer than its tensors"
        raise _bad(path, f"corrupt weights ({state}: the tensors need {end:,} bytes of data, the file "
                         f"holds {data_bytes:,})")
    return header


def _tensor_span(path: Path, name: str, info: Any) -> tuple[int, int, str]:
    shown = name[:60]
    if not isinstance(info, dict):
        raise _bad(path, f"corrupt weights (tensor {shown!r} is not described by an object)")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if dtype not in DTYPE_BYTES:
        raise _bad(path, f"corrupt weights (tensor {shown!r} has an unknown type {_describe(dtype)})")
    if not (isinstance(shape, list) and all(_is_whole(d) and d >= 0 for d in shape)):
        raise _bad(path, f"corrupt weights (tensor {shown!r} has a bad shape {_describe(shape)})")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_whole(o) and o >= 0 for o in offsets)
            and offsets[0] <= offsets[1]):
        raise _bad(path, f"corrupt weights (tensor {shown!r} has bad offsets {_describe(offsets)})")
    numel = math.prod(shape)
    if numel * DTYPE_BYTES[dtype] != offsets[1] - offsets[0]:
        raise _bad(path, f"corrupt weights (tensor {shown!r}: its shape and its bytes disagree)")
    return offsets[0], offsets[1], name


def tensor_count(header: dict[str, Any]) -> int:
    """How many numbers the tensors of a checked header hold."""
    return sum(math.prod(info["shape"]) for name, info in header.items() if name != "__metadata__")


def check_model_folder(folder: str | Path, check_manifest: bool = True) -> FolderCheck:
    """ModelError, naming the file at fault, unless ``folder`` holds a config.json within
    the limits, sound safetensors weights holding the numbers it implies, tokenizer files
    of a bounded size and (``check_manifest``) a manifest, when there is one, that is
    well typed and names the head's labels."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ModelError(f"{folder}: no such model folder")
    config_path = folder / "config.json"
    if not config_path.exists():
        raise ModelError(f"{folder}: not a model folder (no config.json)")
    raw = read_json_object(config_path, "config.json")
    labels = check_config(raw, config_path)
    files = safetensors_files(folder)
    if not files:
        pickles = [p.name for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES]
        hint = (f" (found {', '.join(pickles)}: pickled weights are never loaded, since they can "
                f"run code; convert them to safetensors)") if pickles else ""
        raise ModelError(f"{folder}: no safetensors weights{hint}")
    parameters = sum(tensor_count(read_safetensors_header(p)) for p in files)
    needed = least_parameters(raw, len(labels))
    if needed > MAX_PARAMETERS:
        raise _bad(config_path, f"describes a model of at least {needed:,} parameters, over the limit of "
                                f"{MAX_PARAMETERS:,} (see docs/reference/limits.md)")
    if needed > parameters:
        raise _bad(config_path, f"describes a model of at least {needed:,} parameters, but its weights "
                                f"hold {parameters:,} numbers (sizes and weights disagree)")
    for name in TOKENIZER_FILES:
        path = folder / name
        try:
            too_big = path.is_file() and path.stat().st_size > MAX_TOKENIZER_BYTES
        except OSError:
            continue
        if too_big:
            raise _bad(path, f"a tokenizer file over the limit of {MAX_TOKENIZER_BYTES:,} bytes")
    if check_manifest:
        check_manifest_labels(folder, labels)
    return FolderCheck(raw, labels, parameters)


def check_manifest_labels(folder: Path, labels: list[str]) -> None:
    """A manifest in ``folder`` must be readable and name the labels the head tags with
    (``models show`` would display the wrong ones otherwise)."""
    if not (folder / MANIFEST).exists():
        return
    manifest = read_manifest(folder)
    if manifest.labels and list(manifest.labels) != labels:
        shown = ", ".join(manifest.labels[:6]) + (" ..." if len(manifest.labels) > 6 else "")
        head = ", ".join(labels[:6]) + (" ..." if len(labels) > 6 else "")
        raise ModelError(f"{folder / MANIFEST}: its labels ({shown}) are not those of the model's head in "
                         f"config.json ({head})")
