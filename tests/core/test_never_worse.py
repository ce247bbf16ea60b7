"""fine-tune never makes the model worse unless told (issue 65), on tiny models: the
held-back documents are fixed by their text, disjoint from the trained ones by id and
text and remembered between updates; a harmful update is refused in one line with
nothing registered; the scores are labelled for what they are; a type named like a
tag, a full disk and a file given twice are said in one line (issue 70)."""

from __future__ import annotations

import json
import random
import shutil

import numpy as np
import pytest

from fastbioner.base.config import TrainingConfig
from fastbioner.cli.main import main
from fastbioner.io.labels import TaggedSentence
from fastbioner.models.manifest import scores_on
from fastbioner.models.registry import Registry
from fastbioner.train.finetune import fine_tune
from fastbioner.train.finetune_config import FineTuneConfig
from fastbioner.train.review_split import Memory, compare, split_reviews, text_key
from tests.core.distill_setup import SENTENCES

pytestmark = pytest.mark.usefixtures("one_thread")


def _sentences(n: int, prefix: str = "doc") -> list[TaggedSentence]:
    return [TaggedSentence((f"text{d}", f"w{k}"), ("O", "O"), doc_id=f"{prefix}{d}")
            for d in range(n) for k in range(2)]


def _ids_and_texts(sentences):
    ids = {s.doc_id for s in sentences}
    by_doc: dict = {}
    for s in sentences:
        by_doc.setdefault(s.doc_id, []).append(s)
    return ids, {text_key(v) for v in by_doc.values()}


def test_the_held_back_documents_depend_on_their_text_alone():
    docs = _sentences(30)
    first = split_reviews(docs, 0.1, 5)
    shuffled = [s for d in random.Random(4).sample(range(30), 30) for s in docs[2 * d:2 * d + 2]]
    again = split_reviews(shuffled, 0.1, 5)
    assert first.held_back == again.held_back == 5
    assert {s.doc_id for s in first.held} == {s.doc_id for s in again.held}  # whatever the order or seed


def test_held_back_and_trained_documents_share_no_id_and_no_text():
    docs = _sentences(20)
    # the file given twice (every document again), a document under a new id with an old text,
    # and an id reused for a new text
    twin = [TaggedSentence(s.words, s.tags, doc_id="copy-of-doc3") for s in docs[6:8]]
    reused = [TaggedSentence(("another", "text"), ("O", "O"), doc_id="doc5")]
    split = split_reviews(docs + docs + twin + reused, 0.1, 5)
    assert split.documents == 20
    held_ids, held_texts = _ids_and_texts(split.held)
    train_ids, train_texts = _ids_and_texts(split.train)
    assert not held_ids & train_ids and not held_texts & train_texts
    assert len(split.train) + len(split.held) == 41  # 20 documents of 2 sentences, doc5's second text
    assert any("repeat an earlier one's text" in n and "each used once" in n for n in split.notes)
    assert any("name two different texts" in n for n in split.notes)


def test_a_document_once_held_back_stays_held_back_and_one_trained_is_never_held_back():
    first = split_reviews(_sentences(12), 0.1, 5)
    held_before = {s.doc_id for s in first.held}
    more = _sentences(12) + _sentences(40, prefix="new")
    later = split_reviews(more, 0.1, 5, Memory.from_dict(first.memory.to_dict()))
    held_now = {s.doc_id for s in later.held}
    assert held_before <= held_now
    assert not held_now & {s.doc_id for s in first.train}
    assert later.held_back == round(52 * 0.1)


def test_the_bootstrap_says_worse_only_when_the_whole_interval_is_below_zero():
    good = np.array([[5, 0, 0]] * 10)
    bad = np.array([[1, 4, 4]] * 10)
    assert compare(good, bad, "10 docs").worse
    same = compare(good, good, "10 docs")
    assert not same.worse and same.low == same.high == 0.0
    mixed = compare(np.array([[5, 0, 0], [0, 0, 5]] * 5), np.array([[0, 0, 5], [5, 0, 0]] * 5), "10 docs")
    assert not mixed.worse and mixed.low < 0 < mixed.high


def _reviews(path, n=20, harmful=False, seed=7):
    """``n`` documents of the tiny corpus, each with a sentence of its own; ``harmful``:
    Chemical relabelled Disease on a random half of them."""
    bad = set(random.Random(seed).sample(range(n), n // 2)) if harmful else set()
    blocks = []
    for d in range(n):
        blocks += [f"-DOCSTART- doc{d}", f"Case\tO\n{d}\tO"]
        blocks += ["\n".join(f"{w}\t{t.replace('Chemical', 'Disease') if d in bad else t}" for w, t in s)
                   for s in SENTENCES]
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def start(trained, tmp_path):
    registry, _ = trained
    folder = tmp_path / "tiny-teacher"
    shutil.copytree(registry.root / "tiny-teacher", folder)
    return folder


def test_a_harmful_update_is_refused_in_one_line_and_registers_nothing(start, tmp_path, capsys):
    train = _reviews(tmp_path / "harmful.conll", harmful=True)
    flags = ["--lr", "3e-2", "--lr-docs", "0", "--epochs", "4", "--batch-size", "4", "--warmup", "0", "--device",
             "cpu", "--quiet"]
    capsys.readouterr()
    code = main(["fine-tune", str(start), "--train", str(train), "--name", "harmed", *flags])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert "not registered" in err and "worse" in err and "5 of your documents" in err and "--keep-worse" in err
    assert not Registry().exists("harmed")
    assert main(["fine-tune", str(start), "--train", str(train), "--name", "harmed", "--keep-worse", *flags]) == 0
    out = capsys.readouterr().out
    assert Registry().exists("harmed") and "kept although worse" in out


def test_an_update_records_its_split_and_scores_on_your_documents(start, tmp_path, capsys):
    train = _reviews(tmp_path / "reviews.conll")
    split = tmp_path / "project-split.json"
    config = FineTuneConfig(train_files=[str(train), str(train)], split_file=str(split),
                            training=TrainingConfig(epochs=2, batch_size=4, learning_rate=3e-3, warmup_ratio=0.0,
                                                    seed=3, device="cpu"))
    result = fine_tune(str(start), config, "updated", registry=Registry(tmp_path / "reg"))
    assert "reviews.conll given twice: read once" in result.notes
    assert (result.documents, result.held_back) == (20, 5)  # the file twice: still 20 documents
    c = result.comparison
    assert c is not None and c.documents == 5 and c.where == f"5 of your documents ({c.mentions} mentions)"
    memory = json.loads(split.read_text(encoding="utf-8"))
    assert len(memory["held_back"]["ids"]) == 5 and len(memory["trained"]["ids"]) == 15
    manifest = result.entry.manifest.to_dict()
    words, key = scores_on(manifest)
    assert words == f"on {c.where}" and key.startswith("reviews:")
    assert manifest["config"]["review_split"]["held_back"]["ids"] == memory["held_back"]["ids"]
    # the next update from this model holds back the same documents, without the split file
    again = fine_tune("updated", FineTuneConfig(train_files=[str(train)], training=config.training), "again",
                      registry=Registry(tmp_path / "reg"))
    assert again.entry.manifest.config["review_split"]["held_back"]["ids"] == memory["held_back"]["ids"]


def test_models_list_says_what_a_score_was_measured_on(start, tmp_path, capsys):
    train = _reviews(tmp_path / "reviews.conll")
    config = FineTuneConfig(train_files=[str(train)], training=TrainingConfig(
        epochs=1, batch_size=4, learning_rate=3e-3, warmup_ratio=0.0, seed=3, device="cpu"))
    fine_tune(str(start), config, "reviewed", registry=Registry())
    capsys.readouterr()
    assert main(["models", "list"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("reviewed"))
    assert "5 of your documents (" in row and "devel" not in row
    assert main(["models", "show", "reviewed"]) == 0
    assert "scores on 5 of your documents" in capsys.readouterr().out


@pytest.mark.parametrize("typ", ["B-Disease", "I-Disease", "O"])
def test_a_reviewed_type_named_like_a_tag_is_one_line(typ, start, tmp_path, capsys):
    text = "Naloxone reverses hypertension."
    lines = [f"1|t|{text}", "1|a|", f"1\t18\t30\thypertension\t{typ}\tD1", ""]
    train = tmp_path / "typed.pubtator"
    train.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    code = main(["fine-tune", str(start), "--train", str(train), "--name", "typed", "--epochs", "1", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"entity type {typ!r} looks like a tag" in err
    assert not Registry().exists("typed")


def test_a_full_disk_while_saving_is_one_line(start, tmp_path, capsys, monkeypatch):
    from safetensors import SafetensorError

    import fastbioner.train.runs as runs  # where a run saves its model

    def full(*args, **kwargs):
        raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, '
                              'message: "No space left on device" })')

    monkeypatch.setattr(runs, "save_model", full)
    train = _reviews(tmp_path / "reviews.conll", n=4)
    capsys.readouterr()
    code = main(["fine-tune", str(start), "--train", str(train), "--name", "full", "--epochs", "1", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "cannot save models there (No space left on device)" in err and "SafetensorError" not in err
    assert not Registry().exists("full")


def test_few_documents_take_a_smaller_learning_rate_when_asked(start, tmp_path):
    train = _reviews(tmp_path / "reviews.conll")
    config = FineTuneConfig(train_files=[str(train)], lr_docs=100, training=TrainingConfig(
        epochs=1, batch_size=4, learning_rate=3e-3, warmup_ratio=0.0, seed=3, device="cpu"))
    result = fine_tune(str(start), config, "small-steps", registry=Registry(tmp_path / "reg"))
    assert result.entry.manifest.config["training"]["learning_rate"] == pytest.approx(3e-3 * 15 / 100)
    assert any("15 trained documents, fewer than 100 (--lr-docs)" in n for n in result.notes)


def test_with_dev_the_dev_file_decides_and_is_never_trained_on(start, tmp_path):
    train = _reviews(tmp_path / "reviews.conll", n=12)
    dev = _reviews(tmp_path / "dev.conll", n=4)  # doc0..doc3: the first four reviewed documents again
    config = FineTuneConfig(train_files=[str(train)], dev_file=str(dev), training=TrainingConfig(
        epochs=1, batch_size=4, learning_rate=3e-3, warmup_ratio=0.0, seed=3, device="cpu"))
    result = fine_tune(str(start), config, "with-dev", registry=Registry(tmp_path / "reg"))
    assert result.held_back == 0 and result.comparison.where.startswith("dev file dev.conll (4 documents, ")
    assert result.documents == 8  # trained on the 8 reviewed documents the dev file does not hold
    assert any("4 reviewed document(s) are also in the --dev file" in n for n in result.notes)
