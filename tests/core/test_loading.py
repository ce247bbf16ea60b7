"""One way to load a model (:mod:`fastbioner.models.loading`): the folder's config.json says
which code runs it, no environment variable needed, and every load passes the one
folder check (:func:`fastbioner.models.checks.check_model_folder`) first."""

from __future__ import annotations

import json

import pytest

from fastbioner.models.encoding import SubwordTokenizer
from fastbioner.base.errors import ModelError
from fastbioner.infer.inference import Tagger, TaggerConfig
from fastbioner.models.loading import (
    CNN_MODEL_TYPE, ENGINE_VARIABLE, RNN_MODEL_TYPE, TRANSFORMER_CRF_MODEL_TYPE, load_for_tagging, model_kind,
)
from tiny_models import make_tiny_encoder, make_tiny_model, make_tiny_mpnet


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("bert"), seed=3)


def _config_only(folder, **config):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def test_the_folder_says_which_kind_it_holds(bert_folder, tmp_path):
    assert model_kind(bert_folder) == "bert"
    assert model_kind(make_tiny_mpnet(tmp_path / "mpnet")) == "transformer"
    assert model_kind(make_tiny_encoder(tmp_path / "encoder")) == "transformer"  # a base model: no head
    assert model_kind(_config_only(tmp_path / "cnn", model_type=CNN_MODEL_TYPE)) == "cnn"
    assert model_kind(_config_only(tmp_path / "rnn", model_type=RNN_MODEL_TYPE)) == "recurrent"
    assert model_kind(_config_only(tmp_path / "crf", model_type=TRANSFORMER_CRF_MODEL_TYPE)) == "transformer-crf"
    # a BERT with another head is no plain token classifier
    assert model_kind(_config_only(tmp_path / "mlm", model_type="bert", architectures=["BertForMaskedLM"])) \
        == "transformer"
    assert model_kind("someone/some-model") == "transformer"  # a hub id
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json", encoding="utf-8")
    assert model_kind(broken) == "transformer"  # transformers' loader then says what is wrong


def test_the_kinds_name_the_architectures_model_types():
    """The loader reads model types without importing transformers; they must be the
    ones the project's architectures write into config.json."""
    from fastbioner.models.architectures.convolutional import ConvTaggerConfig
    from fastbioner.models.architectures.recurrent import RecurrentTaggerConfig
    from fastbioner.models.architectures.transformer_crf import TransformerCRFConfig

    assert (ConvTaggerConfig.model_type, RecurrentTaggerConfig.model_type, TransformerCRFConfig.model_type) == \
        (CNN_MODEL_TYPE, RNN_MODEL_TYPE, TRANSFORMER_CRF_MODEL_TYPE)


def test_no_environment_variable_is_needed(bert_folder, monkeypatch):
    monkeypatch.delenv(ENGINE_VARIABLE, raising=False)
    tagger = Tagger.load(bert_folder, TaggerConfig(precision="fp32"))
    assert type(tagger.model).__module__ == "fastbioner.models.light.bert"
    assert isinstance(tagger.tokenizer, SubwordTokenizer)  # tokenizers' own Tokenizer, no transformers object
    forced = Tagger.load(bert_folder, TaggerConfig(precision="fp32", engine="transformers"))
    assert type(forced.model).__name__ == "BertForTokenClassification"


@pytest.mark.parametrize("engine", ["auto", "transformers"])
def test_every_load_passes_the_folder_check(bert_folder, monkeypatch, engine):
    """check_model_folder is the single gate: whichever engine runs the folder, its
    refusal stops the load before anything is built."""
    import fastbioner.models.checks as model_checks

    def refuse(folder, check_manifest=True):
        raise ModelError(f"{folder}: refused by the folder check")

    monkeypatch.setattr(model_checks, "check_model_folder", refuse)
    with pytest.raises(ModelError, match="refused by the folder check"):
        load_for_tagging(bert_folder, engine)
