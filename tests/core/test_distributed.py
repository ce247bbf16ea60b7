"""Training on several processes (torchrun, gloo on the CPU): both ranks end with
the same weights, and they are the weights one process reaches on the same global
batches (two micro-batches per step); `fastbioner train-teacher` under torchrun
registers one model."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.tiny_models import make_tiny_model

HERE = Path(__file__).resolve().parent
SENTENCES = [
    [("naloxone", "B-Chemical"), ("reverses", "O"), ("hypertension", "B-Disease")],
    [("lithium", "B-Chemical"), ("carbonate", "I-Chemical"), ("induced", "O"), ("renal", "B-Disease"),
     ("failure", "I-Disease")],
    [("the", "O"), ("cocaine", "B-Chemical"), ("dose", "O"), ("was", "O"), ("increased", "O")],
    [("aspirin", "B-Chemical"), ("caused", "O"), ("acute", "B-Disease"), ("nephrotoxicity", "I-Disease")],
]

pytestmark = pytest.mark.skipif(not torch.distributed.is_available(), reason="torch without distributed")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("ddp")
    model = make_tiny_model(root / "model", seed=5)
    config = json.loads((model / "config.json").read_text())
    # No dropout: the runs differ only in how the batches are spread over processes.
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, classifier_dropout=0.0)
    (model / "config.json").write_text(json.dumps(config))
    bio = root / "train.tsv"
    blocks = ["\n".join(f"{w}\t{t}" for w, t in s) for s in SENTENCES] * 4  # 16 sentences: 4 batches of 4
    bio.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return root, model, bio


def _env():
    repo = HERE.parents[1]
    path = os.pathsep.join([str(repo / "core"), str(repo), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path}


def _torchrun(n: int, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}",
                           *args], capture_output=True, text=True, env=_env(), timeout=timeout)


def test_two_ranks_match_each_other_and_one_process_on_the_same_global_batches(setup):
    root, model, bio = setup
    worker = str(HERE / "ddp_worker.py")
    two = _torchrun(2, worker, str(model), str(bio), str(root / "two"), "4", "1")
    assert two.returncode == 0, two.stderr[-3000:]
    one = subprocess.run([sys.executable, worker, str(model), str(bio), str(root / "one"), "4", "2"],
                         capture_output=True, text=True, env=_env(), timeout=600)
    assert one.returncode == 0, one.stderr[-3000:]
    r0 = load_file(root / "two" / "rank0-of-2.safetensors")
    r1 = load_file(root / "two" / "rank1-of-2.safetensors")
    single = load_file(root / "one" / "rank0-of-1.safetensors")
    start = load_file(model / "model.safetensors")
    assert (root / "two" / "steps0").read_text() == (root / "two" / "steps1").read_text() == \
        (root / "one" / "steps0").read_text() == "4"  # 2 epochs of 2 steps everywhere
    for name in r0:
        assert torch.equal(r0[name], r1[name]), f"ranks differ in {name}"
        assert torch.allclose(r0[name], single[name], atol=1e-5, rtol=1e-4), f"{name}: two processes != one"
    assert any(not torch.allclose(r0[n], start[n]) for n in r0 if n in start)  # it did train


def test_train_teacher_under_torchrun_registers_one_model(setup, tmp_path):
    root, model, bio = setup
    env = _env()
    env["FASTBIONER_HOME"] = str(tmp_path / "home")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                           "-m", "fastbioner.cli.main", "train-teacher", "--base", str(model), "--train", str(bio),
                           "--dev", str(bio), "--name", "ddp-teacher", "--epochs", "1", "--batch-size", "4",
                           "--lr", "5e-3", "--device", "cpu", "--threads", "1", "--quiet"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("registered ddp-teacher") == 1 and "trained on 2 processes" in proc.stdout
    manifest = json.loads((tmp_path / "home" / "models" / "ddp-teacher" / "fastbioner.json").read_text())
    assert manifest["training"]["steps"] == 2  # 4 batches shared by 2 ranks


def test_leave_destroys_the_process_group_so_the_process_exits_cleanly(tmp_path):
    from fastbioner.train import distributed

    torch.distributed.init_process_group("gloo", rank=0, world_size=1, init_method=f"file://{tmp_path / 'rdv'}")
    assert distributed.initialised() and distributed.world_size() == 1
    distributed.leave()
    assert not distributed.initialised()
    distributed.leave()  # a second call (or one without a group) does nothing
