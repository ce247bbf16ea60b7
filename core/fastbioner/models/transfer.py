"""DRET's embedding surgery on plain matrices: the vocabularies of several sources merged
into a target's, the new tokens' starting vectors, the shared tokens' replacement and the
checks of what moved (docs/explanation/dret.md says what each stage is for).

Nothing here loads a model: :mod:`fastbioner.models.transfer_model` reads the folders and
writes the result; this module takes token -> id mappings and embedding matrices, so a
test can check every rule on matrices it wrote by hand.

The stages (the paper's numbering):

- ``merge`` (1.x): the sources' tokens the target lacks are appended, in source order
  and each source's id order, once; their vectors start random (normal, the encoder's
  initialiser range); the target's own rows are kept bit for bit.
- ``average`` (2.0): a new token starts from the mean of the model sources' vectors for it.
- ``priority`` (3.0): sources ranked as given; every token takes the vector of the
  highest-ranked model source that has it, the target's own shared tokens included
  (they are replaced); tokens no source has keep the target's row (or start random).

A source of another width than the target (or any source with ``align``) is first
mapped into the target's space by a linear map fitted on the tokens both have
(:func:`fit_width_map`). A vocabulary-only source (a WordPiece vocabulary trained on the
curator's text) brings tokens without vectors: under ``average`` and ``priority`` such a
token starts from its pieces (how the model sources' vocabularies split it), under
``merge`` at random.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

STRATEGIES = ("merge", "average", "priority")
WIDTH_MAPS = ("auto", "lstsq", "procrustes")
CONTINUATION = "##"
# Shared tokens held back to score a width map (the rest fit it), and the cap on the
# tokens whose pairwise distances are compared (n^2 / 2 distances).
HOLDOUT_SHARE = 0.1
PAIRWISE_SAMPLE = 1500


@dataclass
class Source:
    """A source: its tokens (token -> row of ``embeddings``) and, for a model, its input
    embedding matrix; ``embeddings`` None for a vocabulary-only source."""

    name: str
    vocab: dict[str, int]
    embeddings: np.ndarray | None = None
    specials: frozenset[str] = frozenset()

    @property
    def has_vectors(self) -> bool:
        return self.embeddings is not None


@dataclass
class WidthMap:
    """``x @ matrix`` maps a source row into the target's space. ``heldout``: per method,
    the relative error ||XW - Y|| / ||Y|| and the mean cosine of XW with Y on the held-out
    shared tokens, measured for both methods whichever was chosen."""

    method: str
    matrix: np.ndarray
    heldout: dict[str, dict[str, float]] = field(default_factory=dict)
    fitted_on: int = 0

    def apply(self, x: np.ndarray) -> np.ndarray:
        return x @ self.matrix

    def describe(self) -> dict[str, Any]:
        return {"method": self.method, "shape": list(self.matrix.shape), "fitted_on": self.fitted_on,
                "heldout": self.heldout}


@dataclass
class TransferResult:
    embeddings: np.ndarray                # the new input embedding matrix (float32)
    new_tokens: list[str]                 # appended to the target's vocabulary, in id order
    first_id: int                         # the id of new_tokens[0]
    table: list[dict[str, Any]]           # per source: shared, added, initialised, replaced
    diagnostics: dict[str, Any]
    origin: dict[str, str] = field(default_factory=dict)  # new or replaced token -> where its vector came from


def _least_squares(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.linalg.lstsq(x, y, rcond=None)[0]


def _procrustes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The scaled (semi-)orthogonal W minimising ||s x W - y||: W = U V^T from the SVD of
    x^T y, s the least-squares scale. Distances between tokens are kept up to s."""
    u, s, vt = np.linalg.svd(x.T @ y, full_matrices=False)
    w = u @ vt
    scale = float(s.sum() / max((x * x).sum(), 1e-12))
    return w * scale


_FITS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {"lstsq": _least_squares,
                                                                     "procrustes": _procrustes}


def _scores(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> dict[str, float]:
    pred = x @ w
    error = float(np.linalg.norm(pred - y)) / max(float(np.linalg.norm(y)), 1e-12)
    return {"relative_error": round(error, 6), "cosine": round(float(_row_cosines(pred, y).mean()), 6)}


def fit_width_map(x: np.ndarray, y: np.ndarray, method: str = "auto", *, seed: int = 0) -> WidthMap:
    """The linear map from ``x`` (shared tokens' source rows) to ``y`` (their target rows).
    Both methods are fitted on 90% of the rows and scored on the other 10%; ``auto`` keeps
    the one of lower held-out error, refitted on all rows."""
    if method not in WIDTH_MAPS:
        raise ValueError(f"width map must be one of {', '.join(WIDTH_MAPS)}")
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = len(x)
    if n < 2:
        raise ValueError("a width map needs at least 2 shared tokens")
    order = np.random.default_rng(seed).permutation(n)
    held = max(1, int(round(n * HOLDOUT_SHARE)))
    test, fit = order[:held], order[held:]
    heldout = {name: _scores(x[test], y[test], f(x[fit], y[fit])) for name, f in _FITS.items()}
    chosen = method if method != "auto" else min(heldout, key=lambda m: heldout[m]["relative_error"])
    return WidthMap(chosen, _FITS[chosen](x, y).astype(np.float32), heldout, n)


def _row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    return (a * b).sum(axis=1) / np.maximum(na * nb, 1e-12)


def wordpiece(word: str, vocab: dict[str, int] | set[str], *, continuation: bool = False,
              prefix: str = CONTINUATION) -> list[str] | None:
    """``word`` split as a WordPiece tokenizer with ``vocab`` splits it (longest match
    first, ``prefix`` on every piece after the first, and on the first when
    ``continuation``); None when a part of it matches nothing (the tokenizer's [UNK])."""
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end]
            if start > 0 or continuation:
                piece = prefix + piece
            if piece in vocab:
                break
            end -= 1
        if end == start:
            return None
        pieces.append(piece)
        start = end
    return pieces or None


def merge_vocabularies(target: dict[str, int], sources: Sequence[Source],
                       keep: Callable[[str], bool] | None = None) -> list[tuple[str, int]]:
    """The tokens to append: each source's tokens, in source order and that source's id
    order, that the target lacks and no earlier source gave; a source's special tokens
    never (``[CLS]``, ``<s>``). ``keep`` drops tokens the target's tokenizer could never
    produce (an upper-case token for a lower-casing tokenizer). Returns ``(token, index
    of the source that first had it)``."""
    seen = set(target)
    out: list[tuple[str, int]] = []
    for i, src in enumerate(sources):
        for token, _ in sorted(src.vocab.items(), key=lambda kv: kv[1]):
            if token in seen or token in src.specials or (keep is not None and not keep(token)):
                continue
            seen.add(token)
            out.append((token, i))
    return out


def _surface(token: str, prefix: str) -> tuple[str, bool]:
    return (token[len(prefix):], True) if token.startswith(prefix) and len(token) > len(prefix) else (token, False)


class _Provider:
    """A model (a source mapped into the target's space, or the target itself) whose
    vocabulary splits a new token into pieces with vectors."""

    def __init__(self, name: str, vocab: dict[str, int], rows: np.ndarray, prefix: str):
        self.name, self.vocab, self.rows, self.prefix = name, vocab, rows, prefix

    def pieces_vector(self, token: str) -> np.ndarray | None:
        word, cont = _surface(token, self.prefix)
        pieces = wordpiece(word, self.vocab, continuation=cont, prefix=self.prefix)
        if not pieces:
            return None
        return self.rows[[self.vocab[p] for p in pieces]].mean(axis=0)


def transfer(target_vocab: dict[str, int], target_embeddings: np.ndarray, sources: Sequence[Source],
             strategy: str, *, target_specials: frozenset[str] = frozenset(), width_map: str = "auto",
             align: bool = False, keep: Callable[[str], bool] | None = None, init_std: float = 0.02,
             seed: int = 0, prefix: str = CONTINUATION) -> TransferResult:
    """The new embedding matrix of the target, its vocabulary grown by the sources' tokens
    (see the module docstring for the strategies). ``target_embeddings`` has a row per id
    of ``target_vocab`` (it may have more: padding rows); new ids start after its last row."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}")
    old = np.asarray(target_embeddings, dtype=np.float32)
    width = old.shape[1]
    rng = np.random.default_rng(seed)

    # Each model source in the target's space.
    mapped: dict[int, np.ndarray] = {}
    maps: dict[int, WidthMap] = {}
    shared: dict[int, list[str]] = {}
    for i, src in enumerate(sources):
        common = [t for t in src.vocab if t in target_vocab and t not in src.specials and t not in target_specials]
        shared[i] = common
        if src.embeddings is None:
            continue
        rows = np.asarray(src.embeddings, dtype=np.float32)
        if rows.shape[1] != width or align:
            if len(common) < 2:
                raise ValueError(f"{src.name}: shares {len(common)} tokens with the target; a map into its "
                                 f"space needs more")
            x = rows[[src.vocab[t] for t in common]]
            y = old[[target_vocab[t] for t in common]]
            maps[i] = fit_width_map(x, y, width_map, seed=seed)
            rows = maps[i].apply(rows).astype(np.float32)
        mapped[i] = rows

    added = merge_vocabularies(target_vocab, sources, keep)
    first_id = old.shape[0]
    new = np.concatenate([old, rng.normal(0.0, init_std, (len(added), width)).astype(np.float32)])
    origin: dict[str, str] = {}
    initialised = [0] * len(sources)
    replaced = [0] * len(sources)
    providers = [_Provider(sources[i].name, sources[i].vocab, mapped[i], prefix) for i in mapped]
    providers.append(_Provider("target", target_vocab, old, prefix))

    for k, (token, _) in enumerate(added):
        row = first_id + k
        if strategy == "merge":
            origin[token] = "random"
            continue
        having = [i for i in mapped if token in sources[i].vocab]
        if having:
            use = having if strategy == "average" else having[:1]
            new[row] = np.mean([mapped[i][sources[i].vocab[token]] for i in use], axis=0)
            for i in use:
                initialised[i] += 1
            origin[token] = "+".join(sources[i].name for i in use)
            continue
        vectors = []
        for p in providers:
            v = p.pieces_vector(token)
            if v is not None:
                vectors.append((p.name, v))
                if strategy == "priority":
                    break
        if vectors:
            new[row] = np.mean([v for _, v in vectors], axis=0)
            origin[token] = "pieces:" + "+".join(n for n, _ in vectors)
        else:
            origin[token] = "random"

    if strategy == "priority":
        for token, tid in target_vocab.items():
            if token in target_specials:
                continue
            for i in mapped:
                src = sources[i]
                if token in src.vocab and token not in src.specials:
                    new[tid] = mapped[i][src.vocab[token]]
                    replaced[i] += 1
                    origin[token] = src.name
                    break

    first_source = [0] * len(sources)
    for _, i in added:
        first_source[i] += 1
    table = [{"source": src.name, "kind": "model" if src.has_vectors else "vocabulary",
              "vocabulary": len(src.vocab), "shared": len(shared[i]), "added": first_source[i],
              "initialised": initialised[i], "replaced": replaced[i],
              **({"width_map": maps[i].describe()} if i in maps else {})}
             for i, src in enumerate(sources)]
    diagnostics = embedding_diagnostics(old, new, target_vocab, sources, mapped, shared, seed=seed)
    diagnostics["new_tokens"] = {
        "count": len(added),
        "random": sum(1 for t, _ in added if origin.get(t) == "random"),
        "from_pieces": sum(1 for t, _ in added if origin.get(t, "").startswith("pieces:")),
        "mean_norm": round(float(np.linalg.norm(new[first_id:], axis=1).mean()), 4) if added else None,
        "target_mean_norm": round(float(np.linalg.norm(old[sorted(target_vocab.values())], axis=1).mean()), 4),
    }
    return TransferResult(new, [t for t, _ in added], first_id, table, diagnostics, origin)


def _pairwise_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of the pairwise Euclidean distances among the rows of ``a``
    with those among the same rows of ``b``: 1 when the geometry is kept up to scale."""
    def distances(m: np.ndarray) -> np.ndarray:
        sq = (m * m).sum(axis=1)
        d = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * m @ m.T, 0.0))
        return d[np.triu_indices(len(m), 1)]
    da, db = distances(a.astype(np.float64)), distances(b.astype(np.float64))
    if len(da) < 2 or da.std() == 0 or db.std() == 0:
        return 1.0 if np.allclose(da, db) else 0.0
    return float(np.corrcoef(da, db)[0, 1])


def embedding_diagnostics(old: np.ndarray, new: np.ndarray, target_vocab: dict[str, int],
                          sources: Sequence[Source], mapped: dict[int, np.ndarray],
                          shared: dict[int, list[str]], *, seed: int = 0) -> dict[str, Any]:
    """What the transfer did to the target's own tokens (cosine of each row with its old
    self, shift ||new - old||, rows unchanged, pairwise distances kept) and, per model
    source, how close its (mapped) vectors of the shared tokens lie to the target's."""
    ids = np.array(sorted(target_vocab.values()))
    cos = _row_cosines(new[ids], old[ids])
    shift = np.linalg.norm(new[ids] - old[ids], axis=1)
    norms = np.linalg.norm(old[ids], axis=1)
    sample = np.random.default_rng(seed).permutation(ids)[:PAIRWISE_SAMPLE]
    out: dict[str, Any] = {"target_tokens": {
        "count": int(len(ids)), "unchanged": int((shift == 0).sum()),
        "mean_cosine": round(float(cos.mean()), 6), "min_cosine": round(float(cos.min()), 6),
        "mean_shift": round(float(shift.mean()), 6),
        "mean_relative_shift": round(float((shift / np.maximum(norms, 1e-12)).mean()), 6),
        "pairwise_distance_correlation": round(_pairwise_correlation(old[sample], new[sample]), 6)}}
    per_source = []
    for i, rows in mapped.items():
        src, common = sources[i], shared[i]
        if not common:
            per_source.append({"source": src.name, "shared": 0})
            continue
        take = np.random.default_rng(seed).permutation(len(common))[:PAIRWISE_SAMPLE]
        picked = [common[j] for j in take]
        s = rows[[src.vocab[t] for t in common]]
        t = old[[target_vocab[t] for t in common]]
        c = _row_cosines(s, t)
        per_source.append({
            "source": src.name, "shared": len(common),
            "mean_cosine_to_target": round(float(c.mean()), 6),
            "mean_shift_from_target": round(float(np.linalg.norm(s - t, axis=1).mean()), 6),
            "pairwise_distance_correlation": round(_pairwise_correlation(
                old[[target_vocab[t] for t in picked]], rows[[src.vocab[t] for t in picked]]), 6)})
    out["sources"] = per_source
    return out
