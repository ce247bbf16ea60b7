"""experiments/build_default_model.py: the chain of commands that made a model, from
its manifests and the recorded runs, and the all-or-nothing replacement of the shipped
folder. Nothing is trained: the subprocesses are replaced."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from experiments.tests.bench_scripts import SPEED, load, register
from fastbioner.base.config import TeacherConfig
from fastbioner.train.distill.config import DistillConfig, StudentConfig
from fastbioner.train.distill.methods import MethodConfig
from fastbioner.models.registry import Registry
from fastbioner.models.manifest import Manifest, write_manifest


# -- build_default_model.py ----------------------------------------------------------

def teacher_config(tmp_path: Path, base: str, epochs: int) -> dict:
    config = TeacherConfig(base_model=base, train_files=[str(tmp_path / "train.tsv")],
                           dev_file=str(tmp_path / "devel.tsv"))
    config.training.epochs, config.training.seed = epochs, 13
    return config.to_dict()


def student_config(tmp_path: Path, source: str) -> dict:
    config = DistillConfig(teacher="t-mpnet", extra_teachers=["t-mpnet-s14"],
                           student=StudentConfig(source=source, layers=None),
                           method=MethodConfig(name="hinton", temperature=2.0, drop_terms=["attention"]),
                           train_files=[str(tmp_path / "train.tsv")], dev_file=str(tmp_path / "devel.tsv"))
    config.training.learning_rate, config.training.epochs = 1e-4, 2
    return config.to_dict()


SCORES = {"precision": 0.8, "recall": 0.9, "f1": 0.847, "support": 30,
          "per_type": {"Chemical": {"precision": 0.9, "recall": 0.9, "f1": 0.9, "support": 20},
                       "Disease": {"precision": 0.6, "recall": 0.9, "f1": 0.72, "support": 10}}}


@pytest.fixture
def chain_registry(tmp_path, monkeypatch):
    """Two teachers (one rebuilt from its manifest, one recorded in paper_rows.json),
    the corpus-fine-tuned MiniLM the student starts from (recorded, but by an earlier
    run of the same name), and the student."""
    tmp_path = tmp_path.resolve()
    build = load("build_default_model")
    register("t-mpnet", kind="teacher", base_model="/bases/mpnet", metrics={"f1": 0.86},
             config=teacher_config(tmp_path, "/bases/mpnet", 2))
    register("t-mpnet-s14", kind="teacher", base_model="/bases/mpnet",
             config=teacher_config(tmp_path, "/bases/mpnet", 3), training={"epoch_seconds": [100.0, 101.0, 99.0]})
    register("minilm-ft", kind="teacher", base_model="/bases/minilm", training={"epoch_seconds": [50.0]},
             config=teacher_config(tmp_path, "/bases/minilm", 3))
    register("student", kind="student", parent="t-mpnet", method="hinton", metrics={"f1": 0.82},
             config=student_config(tmp_path, "minilm-ft"), training={"epoch_seconds": [20.0, 21.0]})
    rows = {"bc5cdr/teacher-s14": {"14": {"model": "t-mpnet-s14", "epoch_seconds": [100.0, 101.0, 99.0],
                                          "command": "fastbioner train-teacher --name t-mpnet-s14 --seed 14"}},
            "bc5cdr/minilm-ft": {"13": {"model": "minilm-ft", "epoch_seconds": [49.0],
                                        "command": "fastbioner train-teacher --name minilm-ft (an earlier run)"}}}
    results = tmp_path / "paper_rows.json"
    results.write_text(json.dumps(rows))
    monkeypatch.setattr(build, "RESULTS", results)
    return build, tmp_path


def parsed_config(command: str) -> dict:
    from fastbioner.cli import distill, train
    from fastbioner.cli.main import build_parser

    argv = shlex.split(command)[1:]
    from_args = distill.config_from_args if argv[0] == "distill" else train.config_from_args
    return from_args(build_parser().parse_args(argv)).to_dict()


def test_chain_follows_teachers_and_the_starting_model(chain_registry):
    build, tmp_path = chain_registry
    chain = build.model_chain("student", build.runs.load_results(build.RESULTS))
    assert [m.name for m in chain] == ["t-mpnet", "t-mpnet-s14", "minilm-ft", "student"]
    by = {m.name: m for m in chain}
    assert by["t-mpnet-s14"].command == "fastbioner train-teacher --name t-mpnet-s14 --seed 14"
    assert "row `bc5cdr/teacher-s14`, seed 14" in by["t-mpnet-s14"].origin
    # minilm-ft's recorded run made an earlier model of that name: its own settings are used
    assert "earlier run" not in by["minilm-ft"].command and "rebuilt" in by["minilm-ft"].origin
    for name in ("t-mpnet", "minilm-ft", "student"):  # rebuilt commands give back the very settings
        manifest = Registry().get(name).manifest
        assert parsed_config(by[name].command) == manifest.config, name
        assert "no flag reproduces" not in by[name].origin
    assert "--lr 0.0001" in by["student"].command and "--drop-terms attention" in by["student"].command
    assert by["student"].what == "student of `t-mpnet`, `t-mpnet-s14` (method hinton), started from `minilm-ft`"


def test_chain_of_a_convolutional_student_includes_the_model_whose_embeddings_it_took(chain_registry):
    build, tmp_path = chain_registry
    config = student_config(tmp_path, "cnn")
    config["student"]["embeddings"], config["student"]["conv_width"] = "minilm-ft", 192
    register("fast", kind="student", parent="t-mpnet", method="hinton", config=config)
    chain = build.model_chain("fast", {})
    assert [m.name for m in chain] == ["t-mpnet", "t-mpnet-s14", "minilm-ft", "fast"]
    made = chain[-1]
    assert "a `cnn` over the embeddings of `minilm-ft`" in made.what
    assert "--student-embeddings minilm-ft" in made.command and "--conv-width 192" in made.command
    assert parsed_config(made.command) == Registry().get("fast").manifest.config


def test_chain_says_when_a_manifest_makes_no_valid_command(chain_registry):
    build, tmp_path = chain_registry
    config = student_config(tmp_path, "minilm-ft")
    config["method"]["name"] = "a-method-since-removed"
    register("old-student", kind="student", config=config)
    made = build.model_chain("old-student", {})[-1]
    assert made.command is None and "no valid command" in made.origin


def test_chain_refuses_an_unregistered_or_compacted_model(chain_registry):
    build, _ = chain_registry
    with pytest.raises(build.BuildError, match="not a registered model"):
        build.model_chain("nope", {})
    register("packed", kind="student", compression={"compacted_from": "student"})
    with pytest.raises(build.BuildError, match="already compacted; build from student"):
        build.model_chain("packed", {})


def fake_cli(fail: str | None = None):
    """Stands in for the fastbioner commands, on the test's registry; ``fail``: the
    subcommand that exits 1."""
    ran = []

    def run(argv):
        ran.append(argv)
        if argv[1] == fail:
            raise subprocess.CalledProcessError(1, argv)
        registry = Registry()
        if argv[1] == "compact":
            folder = registry.root / argv[argv.index("--name") + 1]
            folder.mkdir()
            (folder / "model.safetensors").write_bytes(b"w" * 1000)
            write_manifest(folder, Manifest(name=folder.name, kind="student", metrics={"f1": 0.5},
                                            base_model=str(Path.home() / "bases" / "minilm"),
                                            compression={"compacted_from": argv[2]}))
        elif argv[1] == "evaluate":
            registry.update_manifest(argv[2], metrics={**SCORES, "source": {"file": argv[3]}})
        elif argv[1] == "benchmark":
            registry.update_manifest(argv[2], speed=SPEED)
        elif argv[1:3] == ["models", "describe"]:  # the real command: what it writes is the point
            from fastbioner.cli.main import main
            assert main(argv[1:]) == 0
        elif argv[1] == "models":
            registry.export(argv[3], argv[4])
    return run, ran


# What `fastbioner benchmark` records: int8 lost 0.01 F1, so auto runs it.
def shipped_folder(tmp_path: Path) -> Path:
    out = tmp_path / "assets" / "default-model"
    out.mkdir(parents=True)
    (out / "model.safetensors").write_bytes(b"old")
    return out


def test_build_replaces_the_folder_and_writes_how(chain_registry, monkeypatch, capsys):
    build, tmp_path = chain_registry
    out = shipped_folder(tmp_path)
    run, ran = fake_cli()
    monkeypatch.setattr(build, "run_command", run)
    assert build.main(["student", "--name", "new-default", "--out", str(out), "--corpus", "c1.txt", "c2",
                       "--devel", "dev.tsv"]) == 0
    assert [a[:3] for a in ran] == [["fastbioner", "compact", "student"], ["fastbioner", "evaluate", "new-default"],
                                    ["fastbioner", "benchmark", "new-default"], ["fastbioner", "models", "export"]]
    assert sorted(p.name for p in out.iterdir()) == ["BUILD.md", "fastbioner.json", "model.safetensors"]
    assert (out / "model.safetensors").read_bytes() == b"w" * 1000
    assert [p.name for p in out.parent.iterdir()] == ["default-model"]  # no temporary folder left
    md = (out / "BUILD.md").read_text()
    order = [md.index(f"`{n}`:") for n in ("t-mpnet", "t-mpnet-s14", "minilm-ft", "student")]
    assert order == sorted(order)
    assert "fastbioner train-teacher --name t-mpnet-s14 --seed 14" in md
    assert build.runs.portable(f"fastbioner compact student --name new-default --corpus c1.txt c2\nfastbioner evaluate "
                          f"new-default dev.tsv --record\nfastbioner benchmark new-default --docs {build.DOCS} "
                          f"--devel dev.tsv\nfastbioner models export new-default {out}\n") in md
    # the precision checks, and the mode --precision auto runs because of them
    assert "| int8 | 10,969 | 0.9978 | 80.41 | 0.01 | yes |" in md and "runs **int8**" in md
    assert "(a machine without that mode runs float32)" in md
    assert json.loads((out / "fastbioner.json").read_text())["speed"]["precision"] == "int8"
    assert json.loads((out / "fastbioner.json").read_text())["base_model"] == "~/bases/minilm"  # no home folder
    assert "| Chemical | 90.00 | 90.00 | 90.00 | 20 |" in md and "| overall | 80.00 | 90.00 | 84.70 | 30 |" in md
    assert "| model.safetensors | 1,000 |" in md
    assert str(out / "BUILD.md") in capsys.readouterr().out


@pytest.mark.parametrize("failing", ["compact", "evaluate", "benchmark", "models"])
def test_a_failing_step_leaves_the_folder_as_it_was(chain_registry, monkeypatch, capsys, failing):
    build, tmp_path = chain_registry
    out = shipped_folder(tmp_path)
    run, _ = fake_cli(fail=failing)
    monkeypatch.setattr(build, "run_command", run)
    assert build.main(["student", "--out", str(out), "--corpus", "c.txt", "--devel", "dev.tsv"]) == 1
    assert [p.name for p in out.iterdir()] == ["model.safetensors"]
    assert (out / "model.safetensors").read_bytes() == b"old"
    assert [p.name for p in out.parent.iterdir()] == ["default-model"]
    err = capsys.readouterr().err
    assert f"step '{failing}" in err and "is left as it was" in err


def test_a_failing_swap_puts_the_old_folder_back(chain_registry, monkeypatch, tmp_path):
    build, _ = chain_registry
    out = shipped_folder(tmp_path)
    new, work = tmp_path / "work" / "new", tmp_path / "work"
    new.mkdir(parents=True)
    real_replace = build.os.replace

    def replace(src, dst):
        if Path(src) == new:
            raise OSError("disk gone")
        real_replace(src, dst)

    monkeypatch.setattr(build.os, "replace", replace)
    with pytest.raises(OSError):
        build.swap_in(new, out, work)
    assert (out / "model.safetensors").read_bytes() == b"old"


def test_dry_run_prints_the_commands_and_runs_none(chain_registry, monkeypatch, capsys):
    build, tmp_path = chain_registry
    monkeypatch.setattr(build, "run_command", lambda argv: pytest.fail("ran a command"))
    out = tmp_path / "out"
    assert build.main(["student", "--out", str(out), "--corpus", "c.txt", "--devel", "dev.tsv", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "fastbioner compact student --name student-compact --corpus c.txt" in printed
    assert f"fastbioner models export student-compact {out}" in printed
    assert "fastbioner train-teacher --name t-mpnet-s14 --seed 14" in printed
    assert not out.exists()
    # A convolutional student keeps its whole vocabulary, its table in int8.
    assert build.main(["student", "--out", str(out), "--keep-vocabulary", "--int8-embeddings", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "fastbioner compact student --name student-compact --keep-vocabulary --int8-embeddings\n" in printed


def test_the_card_says_what_a_cpu_without_the_chosen_mode_runs():
    """The default's checks on a bf16 CPU: auto runs bf16 there; a CPU without bf16
    runs int8 (1.58x float32's tokens/s for 0.25 F1), as choose_precision decides."""
    build = load("build_default_model")

    def mode(name, speed, f1):
        return {"precision": name, "tokens_per_s": speed, "agreement": 0.95, "f1": f1, "f1_fp32": 0.8409,
                "hardware": "EPYC"}

    speed = {"precision": "bf16", "modes": {"fp32": mode("fp32", 3802, 0.8409), "bf16": mode("bf16", 4672, 0.8406),
                                           "int8": mode("int8", 5995, 0.8384)}}
    assert build.mode_without(speed) == "int8"
    speed["modes"]["int8"] = mode("int8", 5000, 0.8384)   # not worth 0.25 F1 against float32
    assert build.mode_without(speed) == "float32"



def test_a_shipped_folders_precision_is_checked_again_without_touching_its_weights(trained, tmp_path,
                                                                                    monkeypatch):
    """build_default_model.py --recheck-precision: the benchmark runs on a private copy
    and its record lands in the folder's manifest and BUILD.md; the weights and the
    user's registry are untouched."""
    from fastbioner.cli.main import main
    from fastbioner.io.documents import Document
    from fastbioner.io.formats import write_documents
    from fastbioner.models.manifest import read_manifest

    build = load("build_default_model")
    monkeypatch.setattr(build, "run_command", lambda argv: main([*argv[1:], "--quiet"] if argv[1] == "benchmark"
                                                                 else argv[1:]))
    registry, _ = trained
    Registry().import_folder(registry.root / "tiny-teacher", name="shipped")
    out = tmp_path / "shipped"
    assert main(["models", "export", "shipped", str(out)]) == 0
    (out / "BUILD.md").write_text("# How\n\n## Precision (recorded by the benchmark above)\n\nold table\n\n"
                                  "## Files\n\n| file | bytes |\n", encoding="utf-8")
    weights = (out / "model.safetensors").read_bytes()
    docs = [Document.from_parts(str(i), "Aspirin and fever", [(None, "Cisplatin helps with headache.")])
            for i in range(6)]
    src = tmp_path / "docs.jsonl"
    write_documents(docs, src, "jsonl")
    devel = tmp_path / "devel.tsv"
    devel.write_text("aspirin\tB-Chemical\nhelps\tO\n\n", encoding="utf-8")
    user_models = sorted(e.name for e in Registry().list())
    speed = build.recheck_precision(out, str(devel), str(src))
    assert read_manifest(out).speed == speed and "fp32" in speed["modes"]
    assert (out / "model.safetensors").read_bytes() == weights
    assert sorted(e.name for e in Registry().list()) == user_models  # a private registry did the work
    text = (out / "BUILD.md").read_text(encoding="utf-8")
    assert "old table" not in text and "| fp32 |" in text and text.count(build.RECHECK_HEADING) == 1
    assert text.count("fastbioner benchmark shipped --docs") == 1
    size = (out / "fastbioner.json").stat().st_size
    assert f"| fastbioner.json | {size:,} |" in text and "| all (this file aside) |" in text
    build.recheck_precision(out, str(devel), str(src))  # again: both checks listed, one table
    text = (out / "BUILD.md").read_text(encoding="utf-8")
    assert text.count("fastbioner benchmark shipped --docs") == 2 and text.count("| mode |") == 1
    assert all(m.get("f1") is not None for m in read_manifest(out).speed["modes"].values())
    # A final build (its card shows a twin's scores) learnt devel's labels: checked again
    # by agreement alone, never scored on devel.
    manifest = read_manifest(out)
    manifest.metrics = {**manifest.metrics, "source": {"model": "shipped", "twin": "shipped-twin"}}
    write_manifest(out, manifest)
    speed = build.recheck_precision(out, str(devel), str(src))
    assert all(m.get("f1") is None and "f1_loss_bound" in m for m in speed["modes"].values())
    checks = [line for line in (out / "BUILD.md").read_text(encoding="utf-8").splitlines()
              if line.startswith("fastbioner benchmark shipped")]
    assert len(checks) == 3 and "--devel" in checks[0] and "--devel" not in checks[-1]


def test_build_md_names_no_path_of_the_machine_that_built_it():
    from experiments.build_default_model import REPO
    from experiments.runs import portable

    text = (f"fastbioner evaluate m {REPO.parent / 'shared'}/data/bc5cdr/iob/devel.tsv\n"
            f"fastbioner models export m {REPO}/assets/default-model\n--student-from {Path.home()}/.cache/x\n")
    assert portable(text) == ("fastbioner evaluate m ../shared/data/bc5cdr/iob/devel.tsv\n"
                              "fastbioner models export m assets/default-model\n--student-from ~/.cache/x\n")


# What `fastbioner benchmark` records without --devel: agreement with float32 only.
AGREEMENT_ONLY = {"precision": "int8", "hardware": "Intel Xeon (2 cores)", "threads": 1,
                  "modes": {"fp32": {"tokens_per_s": 7000.0, "agreement": 1.0, "f1": None,
                                     "f1_loss_points": None, "f1_loss_bound": 0.0, "default_allowed": True},
                            "int8": {"tokens_per_s": 9000.0, "agreement": 0.9981, "f1": None,
                                     "f1_loss_points": None, "f1_loss_bound": 0.19, "default_allowed": True}}}


def test_a_final_build_shows_its_twins_scores_and_checks_precision_without_gold(chain_registry, monkeypatch):
    # A model trained on train + devel: no devel figure of its own is recorded; its card
    # carries the twin's scores (said as the twin's) and a plain summary, and the modes
    # are compared by agreement alone (benchmark without --devel).
    build, tmp_path = chain_registry
    register("twin", kind="student", metrics={**SCORES, "source": {"model": "twin", "file": "devel.tsv"}})
    monkeypatch.setattr(build, "final_builds", lambda: {"student": {
        "row": "bc5cdr/x", "twin": "twin", "command": "fastbioner distill --train train.tsv devel.tsv --max-steps 60",
        "twin_command": "fastbioner distill --train train.tsv --dev devel.tsv", "twin_best_step": 60,
        "twin_steps": 70}})
    out = shipped_folder(tmp_path)
    run, ran = fake_cli()

    def run_and_time(argv):
        run(argv)
        if argv[1] == "benchmark":
            Registry().update_manifest(argv[2], speed=AGREEMENT_ONLY)
    monkeypatch.setattr(build, "run_command", run_and_time)
    assert build.main(["student", "--name", "final", "--out", str(out), "--corpus", "c.txt", "--devel", "dev.tsv",
                       "--summary", "The accurate one."]) == 0
    assert [a[1:3] for a in ran] == [["compact", "student"], ["models", "describe"], ["benchmark", "final"],
                                     ["models", "export"]]
    assert "--devel" not in ran[2] and ran[1][3:] == ["final", "--scores-from", "twin", "--summary",
                                                      "The accurate one."]
    manifest = json.loads((out / "fastbioner.json").read_text())
    assert manifest["summary"] == "The accurate one." and manifest["metrics"]["source"]["twin"] == "twin"
    assert manifest["metrics"]["f1"] == SCORES["f1"]
    md = (out / "BUILD.md").read_text()
    assert "given the devel scores of its train-only twin `twin`" in md and "## Devel scores of its twin `twin`" in md
    assert "| overall | 80.00 | 90.00 | 84.70 | 30 |" in md
    assert "fastbioner distill --train train.tsv devel.tsv --max-steps 60" in md  # its own recorded command
    assert "final_builds.json" in md and "kept weights at step 60 of 70" in md
    assert "| int8 | 9,000 | 0.9981 | – | ≤ 0.19 (by agreement) | yes |" in md
    assert "evaluate" not in "".join(" ".join(a) for a in ran)


def test_a_final_build_refuses_a_twin_that_is_not_registered(chain_registry, capsys):
    build, tmp_path = chain_registry
    out = shipped_folder(tmp_path)
    assert build.main(["student", "--out", str(out), "--twin", "nobody", "--corpus", "c.txt"]) == 1
    assert "the twin nobody is not a registered model" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["model.safetensors"]
