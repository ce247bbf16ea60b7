"""The curator's loop on tiny models: the per-document uncertainty, `rank` (the review
queue's order) and `fine-tune` (continue training from reviewed documents)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from fastbioner.cli.main import main
from fastbioner.io.documents import Document, Source, Span
from fastbioner.train.finetune import fine_tune, relabel_head, soft_targets
from fastbioner.train.review_split import split_reviews
from fastbioner.train.finetune_config import FineTuneConfig, held_back_count
from fastbioner.base.config import TrainingConfig
from fastbioner.io.formats import read_documents, write_documents
from fastbioner.infer.inference import Tagger, TaggerConfig
from fastbioner.base.jobs import Cancelled, CancelToken
from fastbioner.io.labels import TaggedSentence
from fastbioner.models.modeling import load_token_classifier
from fastbioner.models.registry import Registry
from fastbioner.infer.uncertainty import METADATA_KEY, document_uncertainty
from tests.core.distill_setup import SENTENCES, registry_leftovers
from tiny_models import make_tiny_encoder, make_tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["Cocaine induced seizures in rats.", "Lithium carbonate toxicity and renal failure.",
         "The dose was increased.", "Aspirin and ibuprofen caused acute nephrotoxicity.",
         "Naloxone reverses hypertension. Clonidine effects on blood pressure were studied in patients.",
         "Chronic hepatitis after treatment with lithium."]


def _docs(with_spans: bool) -> list[Document]:
    docs = []
    for i, text in enumerate(TEXTS):
        spans = [Span(0, text.index(" "), "Chemical", Source.GOLD)] if with_spans else []
        docs.append(Document(f"d{i}", text, spans=spans))
    docs.append(Document("a-twin", TEXTS[4]))  # the same text as d4: a tie, broken by id
    return docs


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=5)


def test_document_uncertainty_sums_one_minus_the_chosen_probability():
    u = document_uncertainty([[0.9, 0.5], [1.0]], [0.7, None, 0.95])
    assert u.tokens == 3
    assert u.expected_errors == pytest.approx(0.6)
    assert u.per_token == pytest.approx(0.2)
    assert u.lowest_span == pytest.approx(0.3)
    assert document_uncertainty([], []).value == 0.0


def test_tagging_stores_the_uncertainty_in_each_documents_metadata(tiny):
    tagger = Tagger.load(tiny, TaggerConfig(precision="fp32"))
    chunk = tagger.tag_chunk(_docs(False))
    for doc, unsure in zip(chunk.documents, chunk.uncertainty):
        stored = doc.metadata[METADATA_KEY]
        assert stored["value"] == pytest.approx(unsure.expected_errors, abs=1e-6)
        assert stored["tokens"] == unsure.tokens > 0


def _rank(tmp_path, tiny, src, out_name, top=4):
    out = tmp_path / out_name
    assert main(["rank", str(src), "--model", str(tiny), "--top", str(top), "--out", str(out),
                 "--precision", "fp32", "--quiet"]) == 0
    return list(read_documents(out))


def test_rank_is_deterministic_ignores_annotations_and_keeps_documents(tmp_path, tiny, capsys):
    annotated, bare = tmp_path / "annotated.jsonl", tmp_path / "bare.pubtator"
    write_documents(_docs(True), annotated)
    write_documents(_docs(False), bare)
    first = _rank(tmp_path, tiny, annotated, "r1.jsonl")
    again = _rank(tmp_path, tiny, annotated, "r2.jsonl")
    unannotated = _rank(tmp_path, tiny, bare, "r3.jsonl")
    printed = capsys.readouterr().out
    ids = [d.id for d in first]
    assert len(ids) == 4
    assert ids == [d.id for d in again] == [d.id for d in unannotated]
    values = [d.metadata[METADATA_KEY]["value"] for d in first]
    assert values == sorted(values, reverse=True)
    assert [d.metadata[METADATA_KEY]["rank"] for d in first] == [1, 2, 3, 4]
    # Written as read: same text, the input's own spans, no model spans.
    source = {d.id: d for d in _docs(True)}
    for doc in first:
        assert doc.text == source[doc.id].text
        assert [(s.start, s.end, s.label) for s in doc.spans] == \
            [(s.start, s.end, s.label) for s in source[doc.id].spans]
    # Every document with its figure and token count is printed, in rank order.
    rows = [line.split() for line in printed.splitlines() if line.strip()[:1].isdigit()]
    assert [r[1] for r in rows[:4]] == ids
    assert all(int(r[3]) > 0 for r in rows[:4])


def test_rank_breaks_ties_by_document_id(tmp_path, tiny):
    src = tmp_path / "docs.jsonl"
    write_documents(_docs(False), src)
    ranked = _rank(tmp_path, tiny, src, "all.jsonl", top=len(TEXTS) + 1)
    ids = [d.id for d in ranked]
    assert ids.index("a-twin") == ids.index("d4") - 1  # equal figures: "a-twin" sorts first


def test_rank_of_an_empty_input_says_so_and_writes_nothing(tmp_path, tiny, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["rank", str(empty), "--model", str(tiny), "--top", "3", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "empty.jsonl" in err
    assert not out.exists()


# -- fine-tune -------------------------------------------------------------------


def _bio(path, sentences, documents=1):
    """``sentences`` (lists of (word, tag)) as ``documents`` -DOCSTART- documents, each
    with a sentence of its own (repeated texts are one document to fine-tune)."""
    blocks = []
    for d in range(documents):
        blocks.append(f"-DOCSTART- doc{d}")
        blocks.append(f"Case\tO\n{d}\tO")
        blocks += ["\n".join(f"{w}\t{t}" for w, t in s) for s in sentences]
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return path


def _disease_only(sentences):
    return [[(w, t if t.endswith("Disease") else "O") for w, t in s] for s in sentences]


def _config(train, **kw):
    training = TrainingConfig(epochs=kw.pop("epochs", 8), batch_size=4, learning_rate=kw.pop("lr", 3e-3),
                              warmup_ratio=0.0, seed=3, device="cpu")
    return FineTuneConfig(train_files=[str(train)], training=training, **kw)


def test_held_back_slice_sizes():
    assert [held_back_count(n) for n in (0, 9, 10, 49, 50, 64, 100, 593)] == [0, 0, 5, 5, 5, 6, 10, 59]
    sentences = [TaggedSentence((f"w{d}", f"x{k}"), ("O", "O"), doc_id=f"doc{d}") for d in range(12) for k in range(3)]
    split = split_reviews(sentences, 0.1, 5)
    assert (split.documents, split.held_back) == (12, 5)
    assert len(split.held) == 15 and len(split.train) == 21  # whole documents
    assert not {s.doc_id for s in split.held} & {s.doc_id for s in split.train}


def test_relabel_head_keeps_the_old_rows_and_adds_new_ones(tiny):
    model = load_token_classifier(tiny)
    old = [model.config.id2label[i] for i in range(model.config.num_labels)]
    before = model.classifier.weight.detach().clone(), model.classifier.bias.detach().clone()
    relabel_head(model, old, old + ["B-Gene", "I-Gene"])
    assert model.classifier.weight.shape[0] == len(old) + 2
    assert torch.equal(model.classifier.weight[:len(old)], before[0])
    assert torch.equal(model.classifier.bias[:len(old)], before[1])
    assert model.config.id2label[len(old)] == "B-Gene"


def test_soft_targets_keep_the_starting_models_other_labels_on_outside_words():
    labels = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]

    class W:
        labels = [-100, 0, 3, -100]

    old = [np.array([[0.2, 0.5, 0.0, 0.3, 0.0], [0.1, 0.1, 0.0, 0.8, 0.0]], np.float32)]
    target = soft_targets([W()], labels, {"Disease"}, labels, old)[0].numpy()
    # An outside word: Disease's mass removed, O and Chemical renormalised.
    assert target[0] == pytest.approx([0.2 / 0.7, 0.5 / 0.7, 0.0, 0.0, 0.0])
    assert target[1] == pytest.approx([0, 0, 0, 1, 0])  # a reviewed entity: its tag
    dropped = soft_targets([W()], labels, {"Disease"}, labels, None)[0].numpy()
    assert dropped[0] == pytest.approx([1, 0, 0, 0, 0])


@pytest.fixture(scope="module")
def start_model(trained, tmp_path_factory):
    """The tiny teacher (tags Chemical and Disease) as a folder to fine-tune."""
    registry, _ = trained
    folder = tmp_path_factory.mktemp("start") / "tiny-teacher"
    shutil.copytree(registry.root / "tiny-teacher", folder)
    return folder


def _tags(model_ref, sentences):
    tagger = Tagger.load(model_ref, TaggerConfig(precision="fp32"))
    return [p.tags for p in tagger.predict_words([[w for w, _ in s] for s in sentences])]


def test_fine_tune_keeps_unreviewed_labels_by_self_distillation(start_model, tmp_path):
    train = _bio(tmp_path / "disease.conll", _disease_only(SENTENCES), documents=3)
    registry = Registry(tmp_path / "reg")
    result = fine_tune(str(start_model), _config(train), "kept", registry=registry)
    assert result.kept_types == ["Chemical"] and result.reviewed_types == ["Disease"]
    assert result.held_back == 0 and result.dev_source == "none" and result.notes  # 3 documents: none held back
    assert result.entry.labels == ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    before = _tags(start_model, SENTENCES)
    after = _tags(registry.get("kept").path, SENTENCES)
    chem = lambda tags: [t for seq in tags for t in seq if t.endswith("Chemical")]  # noqa: E731
    assert chem(before), "the tiny teacher should tag Chemical"
    assert chem(after) == chem(before)

    dropped = fine_tune(str(start_model), _config(train, drop_other_labels=True), "dropped", registry=registry)
    assert dropped.entry.labels == ["O", "B-Disease", "I-Disease"]
    assert not chem(_tags(registry.get("dropped").path, SENTENCES))


def test_fine_tune_grows_the_label_set_and_can_be_fine_tuned_again(start_model, tmp_path):
    gene = [[("lithium", "B-Gene"), ("toxicity", "O")], [("the", "O"), ("cancer", "B-Disease")]]
    train = _bio(tmp_path / "gene.conll", gene, documents=12)
    registry = Registry(tmp_path / "reg")
    first = fine_tune(str(start_model), _config(train, epochs=2), "grown", registry=registry)
    assert first.added_labels == ["B-Gene", "I-Gene"]
    assert first.entry.labels[:5] == ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    assert first.held_back == 5 and first.before is not None and first.after is not None
    manifest = registry.get("grown").manifest
    assert manifest.config["fine_tuned_from"] == "tiny-teacher"
    assert manifest.config["training"]["epochs"] == 2
    second = fine_tune("grown", _config(train, epochs=1), "grown-again", registry=registry)
    assert second.entry.labels == first.entry.labels and second.added_labels == []


def test_cancelled_fine_tune_registers_nothing(start_model, tmp_path):
    train = _bio(tmp_path / "disease.conll", _disease_only(SENTENCES), documents=12)
    registry = Registry(tmp_path / "reg")
    token = CancelToken()

    def on_event(event):
        if event.optimisation_step:
            token.cancel()

    with pytest.raises(Cancelled):
        fine_tune(str(start_model), _config(train), "never", registry=registry, on_event=on_event, cancel=token)
    assert not registry.exists("never")
    assert not registry.root.exists() or registry_leftovers(registry) == []


@pytest.mark.parametrize("case", ["no-entities", "clash", "bare-encoder"])
def test_bad_input_is_one_line_and_registers_nothing(case, start_model, tmp_path, capsys):
    model = str(start_model)
    if case == "no-entities":
        train = _bio(tmp_path / "t.conll", [[(w, "O") for w, _ in s] for s in SENTENCES])
        expect = "no entities"
    elif case == "clash":
        train = _bio(tmp_path / "t.conll", [[(w, t.replace("Disease", "disease")) for w, t in s]
                                            for s in SENTENCES])
        expect = "clashes with the model's 'Disease'"
    else:
        train = _bio(tmp_path / "t.conll", SENTENCES)
        model = str(make_tiny_encoder(tmp_path / "encoder"))
        expect = "not a trained tagger"
    capsys.readouterr()  # what building the fixtures printed
    code = main(["fine-tune", model, "--train", str(train), "--name", "new", "--epochs", "1", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and expect in err and "Traceback" not in err
    assert not Registry().exists("new")


def test_cancelled_rank_writes_nothing(tmp_path, tiny):
    from fastbioner.infer.ranking import rank_files

    src, out = tmp_path / "docs.jsonl", tmp_path / "out.jsonl"
    write_documents(_docs(False), src)
    tagger = Tagger.load(tiny, TaggerConfig(precision="fp32"))
    token = CancelToken()
    stages = []

    def on_event(event):
        stages.append(event.stage)
        if event.stage == "score" and event.step > 0:
            token.cancel()

    with pytest.raises(Cancelled):
        rank_files(tagger, [src], 3, out, chunk_documents=2, on_event=on_event, cancel=token)
    assert "score" in stages and not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_a_compacted_convolutional_student_is_fine_tuned_at_its_own_learning_rate(trained, tmp_path):
    """The shipped fast model is a convolutional student whose embedding table is stored
    in int8: fine-tune trains its convolutions and head (the table stays frozen), keeps
    its other labels, and takes the small models' learning rate when none is given."""
    from safetensors.torch import load_file

    from fastbioner.models.compact import compact_model
    from fastbioner.train.distill.runner import distill
    from fastbioner.train.distill.config import StudentConfig
    from fastbioner.train.finetune_config import SMALL_MODEL_LEARNING_RATE
    from tests.core.distill_setup import config as distill_config
    from tests.core.distill_setup import fresh_registry

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    distill(distill_config(bio, method="hinton", epochs=2, student=StudentConfig(source="cnn", conv_width=8,
                                                                                  conv_layers=1)),
            "cnn", registry=registry)
    compacted = tmp_path / "cnn-int8"
    compact_model(registry.get("cnn").path, compacted, None, int8_embeddings=True)

    train = _bio(tmp_path / "disease.conll", _disease_only(SENTENCES), documents=12)
    settings = FineTuneConfig(train_files=[str(train)],
                              training=TrainingConfig(epochs=2, batch_size=4, learning_rate=None, seed=3,
                                                      device="cpu", early_stopping_patience=2))
    result = fine_tune(str(compacted), settings, "cnn-reviewed", registry=registry)
    entry = registry.get("cnn-reviewed")
    # the small models' rate, scaled to the few documents trained on (lr_docs)
    trained_on = result.documents - result.held_back
    assert entry.manifest.config["training"]["learning_rate"] == pytest.approx(
        SMALL_MODEL_LEARNING_RATE * trained_on / settings.lr_docs)
    assert result.kept_types == ["Chemical"] and entry.labels == ["O", "B-Chemical", "I-Chemical", "B-Disease",
                                                                   "I-Disease"]
    before, after = load_file(str(compacted / "model.safetensors")), load_file(str(entry.path / "model.safetensors"))
    table = [k for k in before if before[k].dtype == torch.int8]
    assert table and all(torch.equal(before[k], after[k]) for k in table)  # the int8 table is frozen
    assert any(not torch.equal(before[k].float(), after[k].float()) for k in before if k not in table)
    assert len(_tags(entry.path, SENTENCES)) == len(SENTENCES)


def test_a_model_that_reads_whole_documents_is_fine_tuned_on_a_bio_file_without_them(start_model, tmp_path):
    """The shipped default reads whole abstracts (packed context); a curator's reviewed
    BIO .tsv often has no -DOCSTART- lines. Fine-tune reads it sentence by sentence
    (as the tagger reads such a file), says so, and the new model still reads documents."""
    import json

    folder = tmp_path / "packed-start"
    shutil.copytree(start_model, folder)
    manifest_path = folder / "fastbioner.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest.setdefault("config", {}).setdefault("encoding", {})["context"] = "packed"
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")

    train = tmp_path / "reviewed.tsv"  # sentences only, no documents
    train.write_text("\n\n".join("\n".join(f"{w}\t{t}" for w, t in s) for s in _disease_only(SENTENCES)) + "\n",
                     encoding="utf-8")
    registry = Registry(tmp_path / "reg")
    result = fine_tune(str(folder), _config(train, epochs=2), "reviewed", registry=registry)
    assert any("-DOCSTART-" in note and "sentence by sentence" in note for note in result.notes)
    assert result.reviewed_types == ["Disease"]
    assert registry.get("reviewed").manifest.config["encoding"]["context"] == "packed"
    assert len(_tags(registry.get("reviewed").path, SENTENCES)) == len(SENTENCES)
