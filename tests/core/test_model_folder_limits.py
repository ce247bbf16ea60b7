"""Hostile model folders, a user folder that cannot be written, leftovers and signals
(issue 52, items 1, 3, 5 and 6).

Every bad config.json, manifest, weights file or tokenizer gives one line naming the
user's file at fault and a non-zero exit from ``models import``, ``models show`` and
``tag --model``, before anything is allocated, and registers nothing."""

from __future__ import annotations

import errno
import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fastbioner.models import registry as registry_module
from fastbioner.cli.main import main
from fastbioner.base.errors import InputError, ModelError
from fastbioner.models.checks import LIMITS, check_model_folder
from fastbioner.models.registry import Registry
from fastbioner.models.manifest import MANIFEST
from tiny_models import make_tiny_model

REPO = Path(__file__).resolve().parents[2]
LABELS = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture
def src(tiny_folder, tmp_path):
    folder = tmp_path / "hostile"
    shutil.copytree(tiny_folder, folder)
    return folder


def edit_config(folder: Path, drop_labels: bool = False, **changes) -> None:
    config = json.loads((folder / "config.json").read_text())
    if drop_labels:
        config.pop("id2label", None)
        config.pop("label2id", None)
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))


def refused_everywhere(folder: Path, blamed: Path, words: str, capsys, tmp_path) -> None:
    """``models import``, ``models show`` and ``tag --model`` each exit 2 with one line
    naming ``blamed`` and holding ``words``; nothing is registered, no staging folder
    and no output is left."""
    text = tmp_path / "in.txt"
    text.write_text("Cocaine induced seizures in rats.\n")
    out = tmp_path / "out.jsonl"
    for argv in (["models", "import", str(folder), "--name", "hostile"], ["models", "show", str(folder)],
                 ["tag", str(text), "--model", str(folder), "--out", str(out), "--format", "jsonl", "--quiet"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert err.startswith(f"fastbioner: error: {blamed}: "), err
        assert words in err, err
        assert ".staging" not in err
    reg = Registry()
    assert reg.list() == [] and reg.problems() == []
    assert not reg.root.exists() or [p.name for p in reg.root.iterdir() if p.name != ".lock"] == []
    assert not out.exists()


CONFIGS = [
    # (config.json changes, words of the message)
    (dict(drop_labels=True, num_labels=1_000_000_000), "num_labels 1,000,000,000 is outside the limits 1 .. 1,000"),
    (dict(num_hidden_layers=1_000_000), "num_hidden_layers 1,000,000 is outside the limits"),
    (dict(hidden_size="big"), "'hidden_size' must be a whole number, got \"big\""),
    (dict(hidden_size=1e9), "'hidden_size' must be a whole number, got 1000000000.0"),
    (dict(hidden_size=1_000_000_000), "hidden_size 1,000,000,000 is outside the limits"),
    (dict(vocab_size=10**12), "vocab_size 1,000,000,000,000 is outside the limits"),
    (dict(layer_norm_eps="tiny"), "'layer_norm_eps' must be a positive number below 1, got \"tiny\""),
    (dict(layer_norm_eps=-1), "'layer_norm_eps' must be a positive number below 1"),
    (dict(id2label={"zero": "O", "1": "B-Chemical"}), "'id2label' key \"zero\" is not a label number"),
    (dict(id2label=LABELS), "'id2label' must be an object mapping"),
    (dict(num_attention_heads=0), "num_attention_heads 0 is outside the limits 1 .. 256"),
    (dict(num_attention_heads=5), "hidden_size 32 is not a multiple of num_attention_heads 5"),
    (dict(max_position_embeddings=-5), "max_position_embeddings -5 is outside the limits"),
    (dict(num_labels=7), "num_labels 7 disagrees with the 5 labels of 'id2label'"),
    # Within every limit, but far more numbers than the 25,000 the weights hold.
    (dict(hidden_size=2048, num_attention_heads=16, num_hidden_layers=8), "but its weights hold 25,413 numbers"),
    (dict(hidden_size=8192, num_attention_heads=64, num_hidden_layers=64), "over the limit of 2,000,000,000"),
]


@pytest.mark.parametrize("changes, words", CONFIGS, ids=[str(c) for c, _ in CONFIGS])
def test_a_config_out_of_bounds_is_one_line_naming_config_json(src, changes, words, capsys, tmp_path):
    edit_config(src, **changes)
    refused_everywhere(src, src / "config.json", words, capsys, tmp_path)


def test_a_truncated_weights_file_is_refused_before_reading_a_tensor(src, capsys, tmp_path):
    weights = src / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    refused_everywhere(src, weights, "corrupt weights (truncated: the tensors need", capsys, tmp_path)


def test_a_header_declaring_2_to_the_62_bytes_is_checked_against_the_file_size(src, capsys, tmp_path):
    weights = src / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(struct.pack("<Q", 2**62) + data[8:])
    refused_everywhere(src, weights, f"the header declares {2**62:,} bytes; the file holds {len(data):,}",
                       capsys, tmp_path)


@pytest.mark.parametrize("manifest, words", [
    ('{"kind": "teacher", "project_version": "' + "9" * 5000 + '"}', "'project_version' must be a version"),
    ('{"kind": "teacher", "manifest_format": "one"}', "'manifest_format' must be a whole number from 1, got \"one\""),
    ('{"kind": "teacher", "manifest_format": null}', "'manifest_format' must be a whole number from 1, got null"),
    ('{"kind": "teacher", "manifest_format": 1e400}', "'manifest_format' must be a whole number from 1, got inf"),
    (json.dumps({"kind": "teacher", "labels": ["O", "B-Gene", "I-Gene"]}),
     "its labels (O, B-Gene, I-Gene) are not those of the model's head in config.json (O, B-Chemical"),
], ids=["version-5000-digits", "format-one", "format-null", "format-1e400", "labels-not-the-head's"])
def test_a_bad_manifest_is_one_line_naming_it(src, manifest, words, capsys, tmp_path):
    (src / MANIFEST).write_text(manifest)
    refused_everywhere(src, src / MANIFEST, words, capsys, tmp_path)


def test_a_random_bytes_tokenizer_is_one_line_and_registers_nothing(src, capsys, tmp_path):
    (src / "tokenizer.json").write_bytes(os.urandom(4096).replace(b"{", b"x"))
    text = tmp_path / "in.txt"
    text.write_text("Cocaine induced seizures.\n")
    for argv in (["models", "import", str(src)],
                 ["tag", str(text), "--model", str(src), "--out", str(tmp_path / "o.jsonl"), "--format", "jsonl"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and ".staging" not in err
        assert err.startswith(f"fastbioner: error: {src}") and "cannot load the tokenizer" in err
    assert Registry().list() == []


def test_an_import_error_found_in_the_copy_names_the_users_folder(src):
    """The tokenizer is tried on the staged copy: the message names the user's folder
    (the copy is deleted by then), and the config is not blamed on the tokenizer."""
    (src / "tokenizer.json").unlink()
    (src / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    with pytest.raises(ModelError) as caught:
        Registry().import_folder(src)
    assert str(caught.value).startswith(f"{src}: the tokenizer knows too little")
    assert ".staging" not in str(caught.value)


def test_the_shipped_and_tiny_models_pass_and_the_limits_hold_them(tiny_folder):
    checked = check_model_folder(tiny_folder)
    assert checked.labels == LABELS and checked.parameters == 25_413
    from fastbioner.models.shipped import more_model_folders, shipped_model_folder

    for folder in [shipped_model_folder(), *more_model_folders()]:
        if (folder / "config.json").is_file():
            checked = check_model_folder(folder)
            assert "O" in checked.labels and checked.parameters > 0
    assert LIMITS["num_labels"] == (1, 1_000)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS bounds memory maps on Linux")
def test_a_billion_labels_stay_within_a_3_gb_address_space(src, tmp_path):
    """The issue's case: ``num_labels: 1000000000`` and no id2label reached a 3 GB cap
    with a MemoryError. Now refused before anything is built, under that cap."""
    edit_config(src, drop_labels=True, num_labels=1_000_000_000)
    text = tmp_path / "in.txt"
    text.write_text("Cocaine.\n")
    script = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
        from fastbioner.cli.main import main
        sys.exit(main(["tag", {str(text)!r}, "--model", {str(src)!r}, "--out", {str(tmp_path / 'o.jsonl')!r},
                       "--format", "jsonl", "--quiet"]))
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO)])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    assert "num_labels 1,000,000,000 is outside the limits" in done.stderr


# -- a user folder that cannot be written (item 5) -----------------------------------


def test_a_home_that_is_a_regular_file_gives_one_line_from_models_import(src, private_user_data, monkeypatch,
                                                                         capsys, tmp_path):
    home = tmp_path / "home-file"
    home.write_text("a file")
    monkeypatch.setenv("FASTBIONER_HOME", str(home))
    assert main(["models", "import", str(src)]) == 2
    err = capsys.readouterr().err
    assert err == (f"fastbioner: error: {home / 'models'}: cannot save models there (Not a directory); "
                   f"set FASTBIONER_HOME to a folder you can write\n")
    assert home.read_text() == "a file"


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_a_full_or_read_only_registry_gives_one_line_and_leaves_nothing(src, monkeypatch, capsys, code):
    real_copy = shutil.copyfileobj

    def failing_copy(source, dest, *args):
        if code == errno.ENOSPC and Path(dest.name).name == "model.safetensors":
            raise OSError(code, os.strerror(code))
        return real_copy(source, dest, *args)

    monkeypatch.setattr(shutil, "copyfileobj", failing_copy)
    if code == errno.EROFS:
        def read_only(*args, **kwargs):
            raise OSError(code, os.strerror(code))

        monkeypatch.setattr(registry_module.tempfile, "mkdtemp", read_only)
    assert main(["models", "import", str(src)]) == 2
    err = capsys.readouterr().err
    reg = Registry()
    assert err == (f"fastbioner: error: {reg.root}: cannot save models there ({os.strerror(code)}); "
                   f"set FASTBIONER_HOME to a folder you can write\n")
    assert reg.list() == [] and [p.name for p in reg.root.iterdir() if p.name != ".lock"] == []


def test_tag_uses_the_shipped_model_when_the_home_cannot_be_written(tiny_folder, monkeypatch, capsys, tmp_path):
    home = tmp_path / "home-file"
    home.write_text("a file")
    monkeypatch.setenv("FASTBIONER_HOME", str(home))
    monkeypatch.setenv("FASTBIONER_DEFAULT_MODEL", str(tiny_folder))
    text = tmp_path / "in.txt"
    text.write_text("Cocaine induced seizures in rats.\n")
    out = tmp_path / "out.jsonl"
    assert main(["tag", str(text), "--out", str(out), "--format", "jsonl", "--quiet"]) == 0
    assert json.loads(out.read_text().splitlines()[0])["text"] == "Cocaine induced seizures in rats."
    assert "error" not in capsys.readouterr().err
    assert home.read_text() == "a file"


# -- leftovers and signals (item 6) -------------------------------------------------


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    return int(done.stdout)


def test_stale_staging_folders_are_swept_and_live_ones_stay(src):
    reg = Registry()
    reg.root.mkdir(parents=True)
    dead = reg.root / f".staging-{_dead_pid()}-abc123"   # left by kill -9 during an import
    live = reg.root / f".staging-{os.getppid()}-def456"  # an import running in another process
    legacy_old = reg.root / ".staging-k2j4h5g6"          # an older version's, two days old
    legacy_new = reg.root / ".staging-m3n4b5v6"          # an older version's, maybe still running
    trash_old = reg.root / ".trash-q1w2e3r4"
    for folder in (dead, live, legacy_old, legacy_new, trash_old):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"\0" * 1000)
    for folder in (legacy_old, trash_old):
        past = time.time() - 2 * 86400
        os.utime(folder, (past, past))
    reg.import_folder(src, name="fresh")
    left = sorted(p.name for p in reg.root.iterdir() if p.name != ".lock")
    assert left == sorted([live.name, legacy_new.name, "fresh"])


def test_sigterm_while_torch_is_imported_exits_143_without_a_traceback(tmp_path):
    """The signal arrives while ``import torch`` runs (a submodule being imported):
    torch is left half initialised, and the exit path must not import it again."""
    text = tmp_path / "in.txt"
    text.write_text("Cocaine.\n")
    script = textwrap.dedent(f"""
        import os, signal, sys

        class SignalDuringImport:
            def find_spec(self, name, path=None, target=None):
                if name == "torch.distributed.rpc":
                    sys.meta_path.remove(self)
                    print("importing torch", file=sys.stderr, flush=True)
                    os.kill(os.getpid(), signal.SIGTERM)
                return None

        sys.meta_path.insert(0, SignalDuringImport())
        sys.argv = ["fastbioner", "tag", {str(text)!r}, "--out", {str(tmp_path / 'o.jsonl')!r},
                    "--format", "jsonl", "--quiet"]
        from fastbioner.cli.main import run_and_exit
        run_and_exit()
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO)])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert "importing torch" in done.stderr  # the signal came during the import
    assert done.returncode == 143, done.stderr[-2000:]
    assert "terminated by signal 15" in done.stderr
    assert "Traceback" not in done.stderr and "AttributeError" not in done.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_a_fifo_is_not_a_project(tmp_path):
    from fastbioner.curate.project import load_project

    fifo = tmp_path / "pipe.fbproj"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        load_project(fifo)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="zombies are told apart through /proc")
def test_a_staging_folder_of_a_killed_process_not_yet_reaped_is_swept(src):
    """kill -9 during an import whose parent has not waited for it yet (a zombie): it
    answers kill(pid, 0) but will never finish its import."""
    import signal

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        reg = Registry()
        reg.root.mkdir(parents=True)
        left = reg.root / f".staging-{child.pid}-abc123"
        left.mkdir()
        child.send_signal(signal.SIGKILL)
        while not Path(f"/proc/{child.pid}/stat").read_bytes().rsplit(b")", 1)[1].startswith(b" Z"):
            time.sleep(0.05)  # until the kernel has made it a zombie (no clock asserted)
        reg.import_folder(src, name="fresh")
        assert sorted(p.name for p in reg.root.iterdir() if p.name != ".lock") == ["fresh"]
    finally:
        child.kill()
        child.wait()
