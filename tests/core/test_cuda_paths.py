"""The CUDA paths: tagging in fp32, bf16 and fp16 on a GPU, corpus tagging on a GPU, and a
short fine-tuning run there. Skipped where torch sees no CUDA device (benchmarks/gpu_check.sh
runs them, with speed figures, on a CUDA machine)."""

from __future__ import annotations

import random

import pytest
import torch

from fastbioner.io.documents import Document
from fastbioner.infer.inference import Tagger, TaggerConfig
from tiny_models import WORDS, make_tiny_encoder, make_tiny_model

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny-cuda"), seed=5)


def documents(n: int = 40) -> list[Document]:
    rng = random.Random(1)
    return [Document.from_parts(str(i), " ".join(rng.choices(WORDS, k=8)) + ".",
                                [(None, " ".join(rng.choices(WORDS, k=60)) + ".")]) for i in range(n)]


def spans(tagger: Tagger, docs):
    return [[(s.start, s.end, s.label) for s in doc_spans] for doc_spans in tagger.tag(docs)]


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_tagging_on_cuda_matches_the_cpu(model, precision):
    docs = documents()
    cpu = spans(Tagger.load(model, TaggerConfig(device="cpu", precision="fp32")), docs)
    gpu_tagger = Tagger.load(model, TaggerConfig(device="cuda", precision=precision))
    assert gpu_tagger.device.type == "cuda" and gpu_tagger.precision.value == precision
    gpu = spans(gpu_tagger, docs)
    same = sum(a == b for a, b in zip(cpu, gpu))
    # fp32 on the GPU gives the CPU's entities; reduced precisions may flip a near tie
    # of this random model, but not most documents.
    assert same == len(docs) if precision == "fp32" else same >= 0.8 * len(docs)


def test_tag_corpus_on_cuda_gives_the_cpu_shards(model, tmp_path):
    from fastbioner.io.formats import write_documents
    from fastbioner.scale import tag_corpus

    src = tmp_path / "docs.jsonl"
    write_documents(documents(), src, "jsonl")
    cpu = tag_corpus([src], tmp_path / "cpu", model, TaggerConfig(device="cpu", precision="fp32"))
    gpu = tag_corpus([src], tmp_path / "gpu", model, TaggerConfig(device="cuda", precision="fp32"))
    assert gpu.device["device"].startswith("cuda")
    import pyarrow.parquet as pq

    a, b = (pq.read_table(d / "current" / "docs.parquet").to_pylist() for d in (tmp_path / "cpu", tmp_path / "gpu"))
    assert [[(s["start"], s["end"], s["label"]) for s in r["spans"]] for r in a] == \
        [[(s["start"], s["end"], s["label"]) for s in r["spans"]] for r in b]
    assert cpu.documents == gpu.documents == 40


def test_fine_tuning_runs_on_cuda(tmp_path, capsys):
    from fastbioner.cli.main import main

    encoder = make_tiny_encoder(tmp_path / "encoder")
    bio = tmp_path / "train.tsv"
    bio.write_text("cocaine\tB-Chemical\ninduced\tO\nheart\tB-Disease\nfailure\tI-Disease\n\n"
                   "lithium\tB-Chemical\ntoxicity\tB-Disease\nin\tO\nrats\tO\n", encoding="utf-8")
    assert main(["train-teacher", "--train", str(bio), "--dev", str(bio), "--base", str(encoder),
                 "--name", "cuda-teacher", "--epochs", "2", "--batch-size", "2", "--device", "cuda",
                 "--quiet"]) == 0
    assert "registered cuda-teacher" in capsys.readouterr().out
