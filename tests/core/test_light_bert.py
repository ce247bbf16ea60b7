"""The light engine's BERT (:mod:`fastbioner.models.light.bert`) against transformers'
``BertForTokenClassification`` on the same weights: the same logits, with padding,
in every precision mode; what the tagger reads from a model; folders it refuses."""

from __future__ import annotations

import copy
import json

import pytest
import torch

from fastbioner.base.errors import ModelError
from fastbioner.infer.inference import position_limit
from fastbioner.models.light import Unsupported
from fastbioner.models.light.bert import load_bert_classifier
from fastbioner.models.light.config import read_config
from fastbioner.models.loading import token_logits
from fastbioner.models.modeling import load_token_classifier, model_labels, model_shape
from fastbioner.models.precision import Precision, apply_precision, cpu_has_int8
from tiny_models import make_tiny_encoder, make_tiny_model, make_tiny_mpnet

VOCAB = 60
# Several shapes: one head, several heads, an odd head size, a single token type.
SHAPES = {
    "1x16": dict(layers=1, hidden=16, heads=1, intermediate=32, labels=3),
    "2x32": dict(layers=2, hidden=32, heads=4, intermediate=48, labels=5),
    "3x48": dict(layers=3, hidden=48, heads=3, intermediate=96, labels=7, positions=40, types=1),
}


def save_bert(folder, layers, hidden, heads, intermediate, labels, positions=64, types=2, seed=0,
              half=False):
    """A random BertForTokenClassification saved as safetensors; every weight is
    perturbed, so a LayerNorm left at its initial ones and zeros, or two swapped
    ones, would show."""
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(seed)
    names = ["O"] + [f"{p}-T{i}" for i in range((labels - 1) // 2) for p in "BI"]
    config = BertConfig(vocab_size=VOCAB, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=intermediate, max_position_embeddings=positions, type_vocab_size=types,
                        id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)})
    model = BertForTokenClassification(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    (model.half() if half else model).save_pretrained(folder, safe_serialization=True)
    return folder


def batch(rows: int = 4, width: int = 23, seed: int = 1):
    """Ids and a mask with rows of different lengths (one of length 1), padded with 0."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (rows, width), generator=g)
    lengths = [width, width - 7, 1, width // 2][:rows]
    mask = torch.zeros(rows, width, dtype=torch.long)
    for r, n in enumerate(lengths):
        mask[r, :n] = 1
    return ids.masked_fill(mask == 0, 0), mask


def logits(model, ids, mask=None):
    with torch.inference_mode():
        return token_logits(model, ids, mask).float()


@pytest.fixture(scope="module", params=sorted(SHAPES))
def folder(request, tmp_path_factory):
    return save_bert(tmp_path_factory.mktemp(f"bert-{request.param}"), **SHAPES[request.param])


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_same_logits_as_transformers_with_padding(folder, attention):
    light = load_bert_classifier(folder)
    theirs = load_token_classifier(folder, attn_implementation=attention).eval()
    ids, mask = batch()
    torch.testing.assert_close(logits(light, ids, mask), logits(theirs, ids, mask), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(logits(light, ids), logits(theirs, ids), atol=1e-5, rtol=1e-5)


def test_padding_does_not_change_a_rows_logits(folder):
    light = load_bert_classifier(folder)
    ids, mask = batch()
    n = int(mask[1].sum())
    alone = logits(light, ids[1:2, :n], mask[1:2, :n])
    torch.testing.assert_close(logits(light, ids, mask)[1:2, :n], alone, atol=1e-5, rtol=1e-5)


def test_float16_weights_load_in_float32_like_transformers(tmp_path):
    folder = save_bert(tmp_path, **SHAPES["2x32"], half=True)
    light = load_bert_classifier(folder)
    theirs = load_token_classifier(folder).eval()
    assert {p.dtype for p in light.parameters()} == {torch.float32}
    ids, mask = batch()
    torch.testing.assert_close(logits(light, ids, mask), logits(theirs, ids, mask), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mode", [Precision.BF16, Precision.INT8])
def test_precision_modes_apply_and_agree_with_transformers(folder, mode):
    if mode is Precision.INT8 and not cpu_has_int8():
        pytest.skip("no int8 engine in this torch build")
    cpu = torch.device("cpu")
    light = apply_precision(load_bert_classifier(folder), mode, cpu)
    theirs = apply_precision(load_token_classifier(folder), mode, cpu)
    if mode is Precision.INT8:
        # q, k, v, the attention's output and the feed-forward input of each layer, and the
        # head run in int8; the feed-forward output projection (outliers in its input) stays float.
        for model in (light, theirs):
            quantised = {n for n, m in model.named_modules()
                         if isinstance(m, torch.ao.nn.quantized.dynamic.Linear)}
            kept = {n for n, m in model.named_modules() if type(m) is torch.nn.Linear}
            assert len(quantised) == 5 * light.config.num_hidden_layers + 1
            assert len(kept) == light.config.num_hidden_layers
            assert all(n.endswith(".output.dense") and ".attention." not in n for n in kept)
    else:
        assert {p.dtype for p in light.parameters()} == {torch.bfloat16}
    ids, mask = batch()
    valid = mask.bool()
    ours, ref = logits(light, ids, mask)[valid], logits(theirs, ids, mask)[valid]
    tolerance = 1e-4 if mode is Precision.INT8 else 0.05
    torch.testing.assert_close(ours, ref, atol=tolerance, rtol=tolerance)


def test_a_deep_copy_runs_alone(folder):
    """The benchmark copies one loaded model per precision mode."""
    light = load_bert_classifier(folder)
    ids, mask = batch()
    before = logits(light, ids, mask)
    twin = apply_precision(copy.deepcopy(light), Precision.BF16, torch.device("cpu"))
    logits(twin, ids, mask)
    assert torch.equal(logits(light, ids, mask), before)


def test_exposes_what_the_tagger_and_the_reports_read(folder):
    light = load_bert_classifier(folder)
    theirs = load_token_classifier(folder)
    assert model_labels(light) == model_labels(theirs)
    assert model_shape(light) == model_shape(theirs)
    assert position_limit(light) == position_limit(theirs)
    assert light.config.num_labels == theirs.config.num_labels
    assert not light.training and not any(p.requires_grad for p in light.parameters())


def _edit_config(folder, **changes):
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config))


@pytest.mark.parametrize("changes", [{"hidden_act": "gelu_new"}, {"position_embedding_type": "relative_key"},
                                     {"is_decoder": True}, {"architectures": ["BertForMaskedLM"]},
                                     {"model_type": "roberta"}])
def test_configs_it_does_not_reproduce_are_refused(tmp_path, changes):
    folder = make_tiny_model(tmp_path)
    _edit_config(folder, **changes)
    with pytest.raises(Unsupported):
        load_bert_classifier(folder)


@pytest.mark.parametrize("make", [make_tiny_mpnet, make_tiny_encoder])
def test_other_architectures_are_refused(tmp_path, make):
    with pytest.raises(Unsupported):
        read_config(make(tmp_path))


def test_a_folder_without_safetensors_is_left_to_transformers(tmp_path):
    folder = make_tiny_model(tmp_path)
    (folder / "model.safetensors").unlink()
    with pytest.raises(Unsupported):
        load_bert_classifier(folder)


def test_missing_corrupt_or_misshapen_weights_raise_model_errors(tmp_path):
    from safetensors.torch import load_file, save_file

    folder = make_tiny_model(tmp_path / "missing")
    weights = folder / "model.safetensors"
    state = load_file(str(weights))
    del state["classifier.weight"]
    save_file(state, str(weights))
    with pytest.raises(ModelError, match="incomplete weights.*classifier.weight"):
        load_bert_classifier(folder)

    folder = make_tiny_model(tmp_path / "corrupt")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    with pytest.raises(ModelError, match="corrupt weights"):
        load_bert_classifier(folder)

    folder = make_tiny_model(tmp_path / "shape")
    _edit_config(folder, id2label={"0": "O", "1": "B-X", "2": "I-X"})
    with pytest.raises(ModelError, match="cannot load the model"):
        load_bert_classifier(folder)
