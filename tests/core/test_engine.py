"""The engine choice (:mod:`fastbioner.models.loading`): a plain BERT folder tags through the
light engine with exactly the spans transformers gives, from the Tagger and from
``fastbioner tag``, without importing transformers; anything else, or a forced
choice, loads with transformers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fastbioner
from fastbioner.cli.main import main
from fastbioner.base.config import ConfigError
from fastbioner.io.documents import Document
from fastbioner.base.errors import FastBioNERError
from fastbioner.infer.inference import Tagger, TaggerConfig
from fastbioner.models.loading import ENGINE_VARIABLE
from fastbioner.models.precision import cpu_has_int8
from tiny_models import make_tiny_model, make_tiny_mpnet

TEXTS = [
    "Cocaine-induced seizures and heart failure in rats treated with lithium carbonate.",
    "LITHIUM\u00a0and Cocaine\x07caused \u03b1-hypertension ; heart\u2009FAILURE\u200bin rats (10 mg/kg).",
    # Long enough to need several windows of the tiny models' 64 subwords.
    " ".join(["Naloxone reversed the clonidine effect, but aspirin caused nephrotoxicity and hepatitis."] * 8),
    "Na\u00efve patients; ibuprofen-associated renal failure. Acute toxicity after 3 doses.",
]
CONFIGS = {"default": {}, "windows": dict(max_length=24, window_overlap=8),
           "document context": dict(context="document"), "int8": dict(precision="int8"),
           # each text's sentences joined, cut into windows across sentence ends
           "packed context": dict(context="packed", max_length=24, window_overlap=8)}


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("bert"), seed=5)


@pytest.fixture(scope="module")
def cnn_folder(tmp_path_factory, bert_folder):
    """A convolutional student over the tiny BERT's embeddings, with a CRF whose
    transitions matter (random, not the zeros it starts with)."""
    import torch

    from fastbioner.train.distill.students import convolutional_student
    from fastbioner.models.modeling import load_token_classifier, load_tokenizer, save_model

    torch.manual_seed(2)
    student = convolutional_student(load_token_classifier(bert_folder), width=16, layers=2, kernel_size=3)
    with torch.no_grad():
        student.crf.transitions.normal_()
        student.net.classifier.weight.normal_()
    folder = tmp_path_factory.mktemp("cnn") / "model"
    save_model(student, load_tokenizer(bert_folder), folder)
    return folder


@pytest.fixture(params=["bert", "cnn"])
def light_folder(request, bert_folder, cnn_folder):
    """Each architecture the light engine runs."""
    return {"bert": bert_folder, "cnn": cnn_folder}[request.param]


LIGHT_CLASSES = {"BertForTokenClassification": "BertTokenClassifier", "ConvTagger": "ConvTokenClassifier"}


def spans(tagger: Tagger) -> list[list[tuple]]:
    docs = [Document(f"d{i}", text) for i, text in enumerate(TEXTS)]
    return [[(s.start, s.end, s.label, s.score) for s in found] for found in tagger.tag(docs)]


def assert_same_spans(light: list[list[tuple]], theirs: list[list[tuple]]) -> None:
    assert [[s[:3] for s in doc] for doc in light] == [[s[:3] for s in doc] for doc in theirs]
    scores = [(a[3], b[3]) for x, y in zip(light, theirs) for a, b in zip(x, y)]
    assert all(abs(a - b) < 1e-5 for a, b in scores)
    assert sum(len(doc) for doc in theirs) >= 4  # the comparison has something to compare


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_the_light_engine_tags_exactly_as_transformers(light_folder, config):
    options = {"precision": "fp32", "threads": 1, **CONFIGS[config]}
    if options["precision"] == "int8" and not cpu_has_int8():
        pytest.skip("no int8 engine in this torch build")
    light = Tagger.load(light_folder, TaggerConfig(**options))
    theirs = Tagger.load(light_folder, TaggerConfig(**options, engine="transformers"))
    assert type(light.model).__name__ == LIGHT_CLASSES[type(theirs.model).__name__]
    assert_same_spans(spans(light), spans(theirs))


def test_fastbioner_tag_gives_the_same_output_either_way(light_folder, tmp_path, monkeypatch):
    source = tmp_path / "in.pubtator"
    source.write_text("".join(f"{i}|t|{t[:40]}\n{i}|a|{t}\n\n" for i, t in enumerate(TEXTS)), encoding="utf-8")
    found = {}
    for engine in ("auto", "transformers"):
        monkeypatch.setenv(ENGINE_VARIABLE, engine)
        out = tmp_path / f"{engine}.jsonl"
        assert main(["tag", str(source), "--model", str(light_folder), "--out", str(out), "--format", "jsonl",
                     "--threads", "1", "--precision", "fp32", "--quiet"]) == 0
        docs = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        found[engine] = [[(s["start"], s["end"], s["label"], s["score"]) for s in d["spans"]] for d in docs]
    assert_same_spans(found["auto"], found["transformers"])


def test_other_architectures_load_with_transformers(tmp_path):
    tagger = Tagger.load(make_tiny_mpnet(tmp_path), TaggerConfig(precision="fp32"))
    assert type(tagger.model).__name__ == "MPNetForTokenClassification"
    assert tagger.tag([Document("d", TEXTS[0])])  # it tags (whatever an untrained model finds)


def test_a_bad_engine_setting_is_refused(bert_folder, monkeypatch):
    with pytest.raises(ConfigError, match="engine"):
        TaggerConfig(engine="light").validate()
    monkeypatch.setenv(ENGINE_VARIABLE, "fast")
    with pytest.raises(FastBioNERError, match=ENGINE_VARIABLE):
        Tagger.load(bert_folder)


PROBE = """
import sys
from fastbioner.cli.main import main
code = main(sys.argv[1:])
print(f"CODE:{code} TRANSFORMERS:{'transformers' in sys.modules}")
"""


@pytest.mark.parametrize("engine, imported", [("auto", False), ("transformers", True)])
def test_tagging_a_light_folder_never_imports_transformers(light_folder, tmp_path, engine, imported):
    """In a fresh process, as a user runs it; forcing transformers shows the probe sees the import."""
    source = tmp_path / "in.pubtator"
    source.write_text(f"1|t|{TEXTS[0]}\n1|a|{TEXTS[1]}\n\n", encoding="utf-8")
    code = str(Path(fastbioner.__file__).resolve().parents[1])  # this checkout's library, not an installed one
    env = {**os.environ, "FASTBIONER_HOME": str(tmp_path / "home"), ENGINE_VARIABLE: engine,
           "PYTHONPATH": os.pathsep.join(filter(None, [code, os.environ.get("PYTHONPATH")]))}
    args = ["tag", str(source), "--model", str(light_folder), "--out", str(tmp_path / "out.jsonl"), "--format",
            "jsonl", "--threads", "1", "--quiet"]
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env,
                          timeout=300)
    assert f"CODE:0 TRANSFORMERS:{imported}" in proc.stdout, (proc.stdout[-500:], proc.stderr[-1000:])


def test_evaluate_scores_a_light_folder_without_importing_transformers(light_folder, tmp_path):
    """`fastbioner evaluate` runs the engine tagging runs: the same scores, no transformers import."""
    devel = tmp_path / "devel.tsv"
    devel.write_text("Cocaine\tB-Chemical\ninduced\tO\nseizures\tB-Disease\n.\tO\n\n"
                     "Lithium\tB-Chemical\ntoxicity\tB-Disease\n\n", encoding="utf-8")
    code = str(Path(fastbioner.__file__).resolve().parents[1])
    env = {**os.environ, "FASTBIONER_HOME": str(tmp_path / "home"),
           "PYTHONPATH": os.pathsep.join(filter(None, [code, os.environ.get("PYTHONPATH")]))}
    env.pop(ENGINE_VARIABLE, None)
    args = ["evaluate", str(light_folder), str(devel), "--threads", "1", "--quiet", "--json", str(tmp_path / "s.json")]
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, timeout=300)
    assert "CODE:0 TRANSFORMERS:False" in proc.stdout, (proc.stdout[-500:], proc.stderr[-1000:])
    with_transformers = subprocess.run([sys.executable, "-c", PROBE, *args[:-1], str(tmp_path / "t.json")],
                                       capture_output=True, text=True, timeout=300,
                                       env={**env, ENGINE_VARIABLE: "transformers"})
    assert "CODE:0 TRANSFORMERS:True" in with_transformers.stdout
    light, theirs = (json.loads((tmp_path / f).read_text()) for f in ("s.json", "t.json"))
    assert light["f1"] == pytest.approx(theirs["f1"]) and light["support"] == theirs["support"] == 4
