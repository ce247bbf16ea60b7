"""What teacher and distillation runs share (fastbioner.train.runs): one fingerprint,
resolved settings in the manifest, training files by name."""

import json

from fastbioner.base.config import TeacherConfig, TrainingConfig
from fastbioner.train.distill.config import DistillConfig
from fastbioner.train.runs import fingerprint, manifest_config
from tests.core.distill_setup import config, fresh_registry

DATA = [{"file": "train.tsv", "role": "train", "sha256": "ab"}]


def test_one_fingerprint_ignores_how_a_run_runs_but_not_what_it_learns():
    for make in (lambda **t: TeacherConfig(base_model="b", train_files=["/x/train.tsv"], training=TrainingConfig(**t)),
                 lambda **t: DistillConfig(teacher="t", train_files=["/x/train.tsv"], training=TrainingConfig(**t))):
        base = fingerprint(make(), DATA)
        # threads, device, evaluation batch, checkpoint cadence and patience may change on resume
        assert fingerprint(make(threads=1, device="cpu", eval_batch_size=8, checkpoint_every_steps=5,
                                early_stopping_patience=2), DATA) == base
        assert fingerprint(make(learning_rate=1e-3), DATA) != base
        assert fingerprint(make(), [{**DATA[0], "sha256": "cd"}]) != base  # other data
    moved = DistillConfig(teacher="t", train_files=["/elsewhere/train.tsv"])
    assert fingerprint(moved, DATA) == fingerprint(DistillConfig(teacher="t", train_files=["/x/train.tsv"]), DATA)


def test_manifest_config_names_files_and_leaves_nothing_unset():
    cfg = DistillConfig(teacher="t", train_files=["/data/a/train.tsv"], dev_file="/data/a/devel.tsv")
    saved = manifest_config(cfg)
    assert saved["train_files"] == ["train.tsv"] and saved["dev_file"] == "devel.tsv"
    assert "null" not in json.dumps(saved)
    assert DistillConfig.from_dict(saved).method == cfg.method  # reloads to the same settings


def test_a_distilled_students_manifest_holds_the_resolved_method(trained, tmp_path):
    from fastbioner.train.distill.runner import distill

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    distill(config(bio, method="hinton", epochs=1, dev=False), "h", registry=registry)
    method = registry.get("h").manifest.to_dict()["config"]["method"]
    assert method["temperature"] == 2.0 and method["schedule"] == "constant" and method["alpha"] == 0.5
    assert "null" not in json.dumps(registry.get("h").manifest.to_dict()["config"])


def test_training_files_may_be_pubtator_documents(tmp_path):
    """A PubTator (or BioC, JSONL) file trains as its sentences tagged from its
    entities, each keeping its document's id for document context."""
    from fastbioner.io.formats import read_tagged_files

    path = tmp_path / "two.pubtator"
    path.write_text("1|t|Cocaine toxicity\n1|a|Seizures followed. Naloxone helped.\n"
                    "1\t0\t7\tCocaine\tChemical\tD003042\n1\t17\t25\tSeizures\tDisease\tD012640\n\n"
                    "2|t|Lithium and renal failure\n2|a|None.\n2\t0\t7\tLithium\tChemical\tD008094\n\n",
                    encoding="utf-8")
    sentences = read_tagged_files([path])
    assert [s.doc_id for s in sentences] == ["1", "1", "1", "2", "2"]
    assert sentences[0].words == ("Cocaine", "toxicity") and sentences[0].tags == ("B-Chemical", "O")
    assert sentences[1].tags[0] == "B-Disease"
    assert sentences[3].tags == ("B-Chemical", "O", "O", "O")


def test_devel_scored_in_bf16_runs_the_model_under_bf16_autocast(tmp_path):
    """score_devel(bf16=True): the model's matrix products run in bf16 (its logits come
    out bf16), and the scores are still computed; without it, fp32 throughout."""
    import torch

    from fastbioner.base.config import EncodingConfig
    from fastbioner.io.labels import TaggedSentence
    from fastbioner.models.modeling import load_token_classifier, load_tokenizer
    from fastbioner.train.runs import score_devel
    from tiny_models import make_tiny_model

    folder = make_tiny_model(tmp_path / "m", layers=1, seed=2)
    model, tokenizer = load_token_classifier(folder), load_tokenizer(folder)
    seen = []
    model.register_forward_hook(lambda _m, _i, out: seen.append(out.logits.dtype))
    dev = [TaggedSentence(("Aspirin", "causes", "ulcers", "."), ("B-Chemical", "O", "B-Disease", "O"))]
    report = score_devel(model, tokenizer, EncodingConfig(), dev, None, bf16=True)
    assert seen and set(seen) == {torch.bfloat16} and report.f1 is not None
    seen.clear()
    score_devel(model, tokenizer, EncodingConfig(), dev, None)
    assert set(seen) == {torch.float32}
