"""DRET's embedding transfer (fastbioner.models.transfer and .transfer_model): the merge
order, the three strategies on matrices written by hand, the width map, WordPiece
pieces, and the command on tiny random models of distinct vocabularies, down to a
teacher trained from its output."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fastbioner.cli.main import main
from fastbioner.models.transfer import Source, fit_width_map, merge_vocabularies, transfer, wordpiece
from tiny_models import make_tiny_encoder_with_words


def vocab(*tokens: str) -> dict[str, int]:
    return {t: i for i, t in enumerate(tokens)}


TARGET = vocab("[CLS]", "a", "b", "c")
OLD = np.arange(8, dtype=np.float32).reshape(4, 2) + 1.0


def src(name, tokens, rows=None, specials=("[CLS]",)):
    return Source(name, vocab(*tokens), None if rows is None else np.asarray(rows, dtype=np.float32),
                  frozenset(specials))


def test_merge_appends_in_source_order_without_duplicates_and_skips_specials():
    s1 = src("s1", ["[CLS]", "b", "x", "y"])
    s2 = src("s2", ["<s>", "y", "z", "x", "a"], specials=("<s>",))
    assert merge_vocabularies(TARGET, [s1, s2]) == [("x", 0), ("y", 0), ("z", 1)]
    # what the target's tokenizer could never produce is left out
    assert merge_vocabularies(TARGET, [s1, s2], keep=lambda t: t != "y") == [("x", 0), ("z", 1)]


def test_merge_keeps_the_targets_rows_and_starts_new_ones_random():
    s1 = src("s1", ["[CLS]", "b", "x"], [[9, 9], [7, 7], [5, 5]])
    r = transfer(TARGET, OLD, [s1], "merge", target_specials=frozenset({"[CLS]"}), seed=3)
    assert r.new_tokens == ["x"] and r.first_id == 4
    np.testing.assert_array_equal(r.embeddings[:4], OLD)  # untouched, bit for bit
    assert not np.allclose(r.embeddings[4], [5, 5])
    assert r.diagnostics["target_tokens"]["unchanged"] == 4
    assert r.table[0]["added"] == 1 and r.table[0]["replaced"] == 0


def test_average_is_the_exact_mean_of_the_sources_that_have_the_token():
    s1 = src("s1", ["[CLS]", "x", "y"], [[0, 0], [1, 2], [3, 4]])
    s2 = src("s2", ["[CLS]", "x"], [[0, 0], [5, 10]])
    r = transfer(TARGET, OLD, [s1, s2], "average", target_specials=frozenset({"[CLS]"}))
    assert r.new_tokens == ["x", "y"]
    np.testing.assert_array_equal(r.embeddings[4], [3, 6])      # (1+5)/2, (2+10)/2
    np.testing.assert_array_equal(r.embeddings[5], [3, 4])      # s1 alone
    np.testing.assert_array_equal(r.embeddings[:4], OLD)        # shared tokens kept
    assert [row["initialised"] for row in r.table] == [2, 1]


def test_priority_takes_the_highest_ranked_source_per_token_and_replaces_shared_ones():
    s1 = src("s1", ["[CLS]", "a", "x"], [[0, 0], [10, 10], [11, 11]])
    s2 = src("s2", ["[CLS]", "a", "b", "x", "y"], [[0, 0], [20, 20], [21, 21], [22, 22], [23, 23]])
    r = transfer(TARGET, OLD, [s1, s2], "priority", target_specials=frozenset({"[CLS]"}))
    e = r.embeddings
    np.testing.assert_array_equal(e[TARGET["a"]], [10, 10])   # s1 outranks s2
    np.testing.assert_array_equal(e[TARGET["b"]], [21, 21])   # only s2 has it
    np.testing.assert_array_equal(e[TARGET["c"]], OLD[3])     # no source: the target's own
    np.testing.assert_array_equal(e[TARGET["[CLS]"]], OLD[0])  # specials never replaced
    np.testing.assert_array_equal(e[4], [11, 11])             # x: s1's
    np.testing.assert_array_equal(e[5], [23, 23])             # y: s2's
    assert [(row["added"], row["replaced"]) for row in r.table] == [(1, 1), (1, 1)]
    assert r.origin["a"] == "s1" and r.origin["b"] == "s2"


def test_the_width_map_recovers_a_random_orthogonal_map():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(300, 8))
    q, _ = np.linalg.qr(rng.normal(size=(12, 12)))
    embed = q[:8]                          # 8 -> 12, orthonormal rows
    x = y @ embed                          # the source: the target's vectors in a wider space
    for method in ("lstsq", "procrustes"):
        m = fit_width_map(x, y, method)
        np.testing.assert_allclose(m.apply(x), y, atol=1e-4)
        assert m.heldout[method]["relative_error"] < 1e-5
    # with noise, auto keeps the method of lower held-out error
    noisy = x + rng.normal(scale=0.5, size=x.shape)
    m = fit_width_map(noisy, y, "auto")
    assert m.method == min(m.heldout, key=lambda k: m.heldout[k]["relative_error"])


def test_a_wider_source_is_mapped_before_its_vectors_are_used():
    rng = np.random.default_rng(1)
    tokens = [f"t{i}" for i in range(40)]
    target = vocab(*tokens)
    old = rng.normal(size=(40, 4)).astype(np.float32)
    q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    rows = np.concatenate([old @ q[:4], rng.normal(size=(1, 4)) @ q[:4]])  # plus a new token "new"
    s = Source("wide", vocab(*tokens, "new"), rows.astype(np.float32))
    r = transfer(target, old, [s], "priority", width_map="procrustes")
    np.testing.assert_allclose(r.embeddings[:40], old, atol=1e-4)  # replaced by their own mapped selves
    assert r.table[0]["width_map"]["method"] == "procrustes"
    assert r.diagnostics["sources"][0]["mean_cosine_to_target"] > 0.999


def test_wordpiece_splits_longest_match_first():
    v = {"chlor", "##o", "##form", "c", "##h"}
    assert wordpiece("chloroform", v) == ["chlor", "##o", "##form"]
    assert wordpiece("oform", v, continuation=True) == ["##o", "##form"]
    assert wordpiece("xyz", v) is None


def test_a_vocabulary_tokens_start_from_their_pieces():
    target = vocab("[CLS]", "chlor", "##o", "##form")
    old = np.array([[0, 0], [1, 0], [0, 1], [3, 3]], dtype=np.float32)
    words = src("vocab", ["[CLS]", "chloroform", "##oform", "zzz"])
    r = transfer(target, old, [words], "average", target_specials=frozenset({"[CLS]"}))
    e = dict(zip(r.new_tokens, r.embeddings[4:]))
    np.testing.assert_allclose(e["chloroform"], old[1:].mean(axis=0))
    np.testing.assert_allclose(e["##oform"], old[2:].mean(axis=0))
    assert r.origin["zzz"] == "random"
    merged = transfer(target, old, [words], "merge", target_specials=frozenset({"[CLS]"}))
    assert all(merged.origin[t] == "random" for t in merged.new_tokens)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("dret")
    target = make_tiny_encoder_with_words(root / "target", ["cocaine", "induced", "the", "heart", "failure"])
    narrow = make_tiny_encoder_with_words(root / "narrow", ["cocaine", "lithium", "##ine", "seizures"], seed=1)
    wide = make_tiny_encoder_with_words(root / "wide", ["lithium", "naloxone", "the"], hidden=48, seed=2)
    return root, target, narrow, wide


def test_the_command_writes_a_base_encoder_that_trains_and_tags(folders, tmp_path, capsys):
    import torch
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    from fastbioner.base.config import EncodingConfig, TeacherConfig, TrainingConfig
    from fastbioner.infer.inference import Tagger
    from fastbioner.io.documents import Document
    from fastbioner.train.teacher import train_teacher

    root, target, narrow, wide = folders
    out = tmp_path / "grown"
    assert main(["transfer-embeddings", str(target), "--source", str(narrow), "--source", str(wide),
                 "--strategy", "priority", "--name", "grown", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "vocabulary" in printed and "procrustes" in printed and "lstsq" in printed
    report = json.loads((out / "transfer.json").read_text())
    assert [r["added"] for r in report["sources"]] == [3, 1]   # lithium ##ine seizures; naloxone
    manifest = json.loads((out / "fastbioner.json").read_text())
    assert manifest["kind"] == "encoder" and manifest["config"]["transfer"]["strategy"] == "priority"
    assert not list(out.glob("*.bin")) and not list(out.glob("*.pt"))
    tok = AutoTokenizer.from_pretrained(out)
    assert tok.tokenize("naloxone lithium seizures") == ["naloxone", "lithium", "seizures"]
    weights = load_file(str(out / "model.safetensors"))
    before = load_file(str(target / "model.safetensors"))
    key = next(k for k in weights if k.endswith("word_embeddings.weight"))
    assert weights[key].shape[0] == len(tok)
    induced = tok.convert_tokens_to_ids("induced")   # no source has it: unchanged
    assert torch.equal(weights[key][induced], before[key][induced])

    train = tmp_path / "train.tsv"
    train.write_text("naloxone\tB-Chemical\nand\tO\nseizures\tB-Disease\n\nlithium\tB-Chemical\ninduced\tO\n"
                     "heart\tB-Disease\nfailure\tI-Disease\n", encoding="utf-8")
    config = TeacherConfig(base_model=str(out), train_files=[str(train)], encoding=EncodingConfig(max_length=32),
                           training=TrainingConfig(epochs=1, batch_size=2, device="cpu", learning_rate=1e-3))
    train_teacher(config, "from-dret")
    (spans,) = Tagger.load("from-dret").tag([Document("1", "Naloxone induced seizures.")])
    assert all(span.label in ("Chemical", "Disease") for span in spans)


def test_a_trained_vocabulary_is_a_source_and_mentions_are_counted(folders, tmp_path, capsys):
    root, target, _, _ = folders
    text = tmp_path / "abstracts.txt"
    text.write_text("\n".join(["naloxone and naloxonazine reversed the hypertension"] * 30), encoding="utf-8")
    assert main(["train-vocabulary", str(text), "--size", "200", "--out", str(tmp_path / "v"),
                 "--min-frequency", "1"]) == 0
    devel = tmp_path / "devel.tsv"
    devel.write_text("naloxone\tB-Chemical\nreversed\tO\nhypertension\tB-Disease\n", encoding="utf-8")
    out = tmp_path / "grown"
    assert main(["transfer-embeddings", str(target), "--source", str(tmp_path / "v"), "--strategy", "average",
                 "--name", "grown", "--out", str(out), "--mentions", str(devel), "--json",
                 str(tmp_path / "r.json")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["sources"][0]["kind"] == "vocabulary" and report["sources"][0]["added"] > 0
    assert report["diagnostics"]["new_tokens"]["from_pieces"] == report["sources"][0]["added"]
    before, after = report["mentions"]["before"], report["mentions"]["after"]
    assert after["Chemical"]["pieces_per_mention"] < before["Chemical"]["pieces_per_mention"]
    assert "pieces per mention" in capsys.readouterr().out


def test_an_existing_output_is_refused(folders, tmp_path):
    root, target, narrow, _ = folders
    (tmp_path / "taken").mkdir()
    assert main(["transfer-embeddings", str(target), "--source", str(narrow), "--name", "taken",
                 "--out", str(tmp_path / "taken")]) != 0


def test_register_and_a_vocabulary_from_text_in_one_command_then_a_teacher_from_the_name(folders, tmp_path):
    from fastbioner.base.config import EncodingConfig, TeacherConfig, TrainingConfig
    from fastbioner.models.registry import Registry
    from fastbioner.train.teacher import train_teacher

    _, target, narrow, _ = folders
    text = tmp_path / "abstracts.txt"
    text.write_text("\n".join(["naloxonazine reversed the hypertension in rats"] * 40), encoding="utf-8")
    assert main(["transfer-embeddings", str(target), "--source", str(narrow), "--vocabulary-from", str(text),
                 "--vocabulary-size", "150", "--strategy", "priority", "--name", "dret-enc", "--register"]) == 0
    entry = Registry().get("dret-enc")
    assert entry.manifest.kind == "encoder"
    table = json.loads((entry.path / "transfer.json").read_text())["sources"]
    assert [r["kind"] for r in table] == ["model", "vocabulary"]
    # The learnt vocabulary is named by its text, not by the temporary folder it lived in.
    assert table[1]["source"] == "learnt from abstracts.txt"
    assert entry.manifest.summary.endswith(f"from {narrow}, learnt from abstracts.txt")
    train = tmp_path / "train.tsv"
    train.write_text("naloxonazine\tB-Chemical\nreversed\tO\nhypertension\tB-Disease\n", encoding="utf-8")
    config = TeacherConfig(base_model="dret-enc", train_files=[str(train)], encoding=EncodingConfig(max_length=32),
                           training=TrainingConfig(epochs=1, batch_size=2, device="cpu"))
    assert train_teacher(config, "from-registered").entry.manifest.base_model == "dret-enc"


def test_the_queue_options_threads_and_quiet_are_taken_and_quiet_prints_the_result_only(folders, tmp_path, capsys):
    # The experiment queue appends `--threads 1 --quiet` to every command it runs.
    _, target, narrow, _ = folders
    out = tmp_path / "quiet"
    assert main(["transfer-embeddings", str(target), "--source", str(narrow), "--strategy", "merge",
                 "--name", "quiet", "--out", str(out), "--threads", "1", "--quiet"]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed == [f"wrote {out}"]
    assert json.loads((out / "transfer.json").read_text())["sources"][0]["kind"] == "model"
    text = tmp_path / "abstracts.txt"
    text.write_text("\n".join(["naloxonazine reversed the hypertension"] * 20), encoding="utf-8")
    assert main(["train-vocabulary", str(text), "--size", "120", "--out", str(tmp_path / "v"),
                 "--min-frequency", "1", "--threads", "1", "--quiet"]) == 0
    assert (tmp_path / "v" / "vocab.txt").is_file()
