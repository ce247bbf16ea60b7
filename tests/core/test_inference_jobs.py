"""Tagging files as a job (streaming, progress, cancel), the ``tag`` and ``benchmark``
commands, the default model, and precision modes."""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import replace

import pytest

from fastbioner.cli.main import main
from fastbioner.io.documents import Document, Source, Span
from fastbioner.base.errors import FastBioNERError, InputError
from fastbioner.io.formats import read_documents, write_documents
from fastbioner.infer.inference import Tagger, TaggerConfig
from fastbioner.base.jobs import CancelToken, Cancelled, JobState
from fastbioner.models.precision import (
    Precision, PrecisionCheck, available_precisions, choose_precision, loss_points_text,
)
from fastbioner.models.registry import Registry
from fastbioner.infer.tagging import tag_files
from inference_models import planted_text, trained_tagger_folder

SEPARATORS = [" ", ", ", " (", ") ", "\u00a0", " ; "]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return trained_tagger_folder(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="module")
def tagger(trained):
    return Tagger.load(trained, TaggerConfig(precision="fp32"))


def corpus(n: int, seed: int = 0) -> tuple[list[Document], dict[str, set]]:
    """Documents (title + abstract) with their true entities."""
    rng = random.Random(seed)
    docs, truth = [], {}
    for i in range(n):
        title, t_truth = planted_text(rng, rng.randint(3, 10), SEPARATORS)
        body, b_truth = planted_text(rng, rng.randint(10, 60), SEPARATORS)
        doc = Document.from_parts(str(1000 + i), title, [(None, body)])
        shift = len(title) + 1
        # Gold spans in the input are replaced by the model's: put a wrong one in.
        doc.spans.append(Span(0, 1, "Chemical", Source.GOLD))
        docs.append(doc)
        truth[doc.id] = t_truth | {(a + shift, b + shift, t) for a, b, t in b_truth}
    return docs, truth


def found(doc: Document) -> set:
    return {(s.start, s.end, s.label) for s in doc.spans}


def test_tag_files_writes_as_it_goes_and_summarises(tagger, tmp_path):
    docs, truth = corpus(120)
    src = tmp_path / "in.pubtator"
    write_documents(docs, src, "pubtator")
    out = tmp_path / "out" / "tagged.jsonl"
    events = []
    partial_seen = []

    def on_event(ev):
        events.append(ev)
        if ev.stage == "tag" and ev.step and not ev.finished:
            # Results are written as they come: a temporary file grows beside the
            # output, which itself appears only at the end.
            partial_seen.append((not out.exists(), any(out.parent.glob(".tagged.jsonl.*.tmp"))))

    summary = tag_files(tagger, [src], out, "jsonl", chunk_documents=16, on_event=on_event)
    got = list(read_documents(out))
    assert [d.id for d in got] == [d.id for d in docs]
    for doc in got:
        assert found(doc) == truth[doc.id]
        assert all(s.source is Source.MODEL for s in doc.spans)
    assert summary.documents == 120 and summary.tokens > 0 and summary.tokens_per_s > 0
    expected = {}
    for spans in truth.values():
        for _, _, label in spans:
            expected[label] = expected.get(label, 0) + 1
    assert summary.entities == expected
    assert partial_seen and all(a and b for a, b in partial_seen)
    tag_steps = [e.step for e in events if e.stage == "tag" and not e.finished]
    assert tag_steps == sorted(tag_steps) and tag_steps[-1] == 120 and len(tag_steps) == 1 + 8  # 120 / 16
    assert [e.seq for e in events] == sorted({e.seq for e in events})
    assert events[-1].state is JobState.DONE


def test_cancel_leaves_no_output_and_no_temporary_file(tagger, tmp_path):
    docs, _ = corpus(80, seed=1)
    src = tmp_path / "in.jsonl"
    write_documents(docs, src, "jsonl")
    out = tmp_path / "tagged.pubtator"
    out.write_text("previous output\n")
    token = CancelToken()
    events = []

    def on_event(ev):
        events.append(ev)
        if ev.stage == "tag" and ev.step >= 16:
            token.cancel()

    with pytest.raises(Cancelled):
        tag_files(tagger, [src], out, "pubtator", chunk_documents=16, on_event=on_event, cancel=token)
    assert out.read_text() == "previous output\n"  # untouched: complete or absent
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "tagged.pubtator"]
    assert events[-1].state is JobState.CANCELLED


def test_bad_input_is_a_one_line_error_before_any_output(tagger, tmp_path, capsys, trained):
    bad = tmp_path / "bad.pubtator"
    bad.write_text("1|t|Cocaine\n1|a|and rats\n1\t0\tzz\tCocaine\tChemical\n\n", encoding="utf-8")
    out = tmp_path / "o.jsonl"
    with pytest.raises(InputError) as err:
        tag_files(tagger, [bad], out, "jsonl")
    assert "bad.pubtator:3" in str(err.value)
    assert not out.exists()
    rc = main(["tag", str(bad), "--model", str(trained), "--out", str(out), "--format", "jsonl", "--quiet"])
    stderr = capsys.readouterr().err.strip()
    assert rc == 2 and stderr.startswith("fastbioner: error:") and "bad.pubtator:3" in stderr
    assert "\n" not in stderr and not out.exists()


@pytest.mark.parametrize("fmt", ["conll", "pubtator", "bioc", "jsonl"])
def test_tag_command_writes_every_format_and_prints_a_summary(trained, tmp_path, capsys, fmt):
    docs, truth = corpus(12, seed=2)
    src = tmp_path / "in.pubtator"
    write_documents(docs, src, "pubtator")
    out = tmp_path / f"out.{fmt}"
    rc = main(["tag", str(src), "--model", str(trained), "--out", str(out), "--format", fmt,
               "--precision", "fp32", "--threads", "1", "--quiet"])
    stdout = capsys.readouterr().out
    assert rc == 0
    n_chem = sum(1 for t in truth.values() for s in t if s[2] == "Chemical")
    n_dis = sum(1 for t in truth.values() for s in t if s[2] == "Disease")
    assert "tagged 12 document(s)" in stdout
    assert f"Chemical {n_chem}" in stdout and f"Disease {n_dis}" in stdout
    assert "tokens/s" in stdout and "fp32, 1 thread (as asked))" in stdout  # the count and why
    got = list(read_documents(out, fmt))
    if fmt != "conll":  # CoNLL keeps tokens and tags, not the original text
        assert {d.id: found(d) for d in got} == truth


def test_default_model_is_registered_on_first_use(trained, tmp_path, monkeypatch, capsys):
    src = tmp_path / "in.jsonl"
    docs, truth = corpus(3, seed=4)
    write_documents(docs, src, "jsonl")
    out = tmp_path / "o.jsonl"
    monkeypatch.setenv("FASTBIONER_DEFAULT_MODEL", str(tmp_path / "absent"))
    rc = main(["tag", str(src), "--out", str(out), "--format", "jsonl", "--quiet"])
    assert rc == 2 and "no default model is installed" in capsys.readouterr().err
    shipped = tmp_path / "default-model"
    shutil.copytree(trained, shipped)
    monkeypatch.setenv("FASTBIONER_DEFAULT_MODEL", str(shipped))
    rc = main(["tag", str(src), "--out", str(out), "--format", "jsonl", "--quiet", "--precision", "fp32"])
    assert rc == 0
    assert [e.name for e in Registry().list()] == ["default"]
    assert {d.id: found(d) for d in read_documents(out)} == truth


def test_auto_precision_needs_a_passing_check():
    import torch

    cpu = torch.device("cpu")
    offered = available_precisions(cpu)
    assert offered[-1] is Precision.FP32
    assert choose_precision("auto", cpu, {}) is Precision.FP32
    reduced = [m for m in offered if m is not Precision.FP32]
    if not reduced:
        pytest.skip("this CPU offers no reduced precision")
    fastest = reduced[0]
    good = PrecisionCheck(fastest.value, agreement=0.99, f1=0.851, f1_fp32=0.853)
    bad = PrecisionCheck(fastest.value, agreement=0.95, f1=0.845, f1_fp32=0.853)
    assert good.f1_loss_points == pytest.approx(0.2) and good.passes
    assert bad.f1_loss_points == pytest.approx(0.8) and not bad.passes
    assert choose_precision("auto", cpu, {fastest.value: good}) is fastest
    assert choose_precision("auto", cpu, {fastest.value: bad}) is not fastest
    # Checked without gold (a model trained on devel's labels): its agreement with
    # float32 bounds what it can lose, and only a close one passes.
    close = PrecisionCheck(fastest.value, agreement=0.998)
    loose = PrecisionCheck(fastest.value, agreement=0.99)
    assert close.f1_loss_points is None and close.f1_loss_bound == pytest.approx(0.2) and close.passes
    assert loose.f1_loss_bound == pytest.approx(1.0) and not loose.passes
    assert loose.to_dict()["f1_loss_bound"] == pytest.approx(1.0) and not loose.to_dict()["default_allowed"]
    assert choose_precision("auto", cpu, {fastest.value: close}) is fastest
    assert choose_precision("auto", cpu, {fastest.value: loose}) is not fastest


def test_a_mode_a_hair_better_than_float32_prints_no_loss_not_a_negative_zero():
    # fp16 scoring 0.0001 above float32 on a GPU printed "-0.00" in the report's table.
    hair_better = PrecisionCheck("fp16", agreement=0.9998, f1=0.85331, f1_fp32=0.85330)
    assert hair_better.f1_loss_points < 0 and hair_better.passes
    assert loss_points_text(hair_better.f1_loss_points) == "0.00"
    assert loss_points_text(-0.5) == "-0.50"  # a real gain keeps its sign
    assert loss_points_text(0.256) == "0.26"
    assert loss_points_text(None) == "-" and loss_points_text(None, missing="–") == "–"


def test_auto_takes_the_faster_of_two_passing_modes_timed_on_one_machine(monkeypatch):
    import torch

    from fastbioner.models import precision

    monkeypatch.setattr(precision, "available_precisions",
                        lambda device: [Precision.BF16, Precision.INT8, Precision.FP32])
    cpu = torch.device("cpu")

    def check(mode, speed, hardware="EPYC"):
        return PrecisionCheck(mode, agreement=0.999, f1=0.804, f1_fp32=0.804, hardware=hardware,
                              tokens_per_s=speed)

    # The convolutional student on an AVX512-BF16 EPYC: int8 21.8k tokens/s, bf16 15.6k.
    assert choose_precision("auto", cpu, {"bf16": check("bf16", 15594), "int8": check("int8", 21804)}) \
        is Precision.INT8
    assert choose_precision("auto", cpu, {"bf16": check("bf16", 25000), "int8": check("int8", 21804)}) \
        is Precision.BF16
    # Timed on different machines (or not timed): the fixed order, fastest first.
    assert choose_precision("auto", cpu, {"bf16": check("bf16", 15594, "Xeon"), "int8": check("int8", 21804)}) \
        is Precision.BF16
    assert choose_precision("auto", cpu, {"bf16": check("bf16", None), "int8": check("int8", 21804)}) \
        is Precision.BF16


def test_auto_pays_for_speed_with_f1_only_when_the_speed_is_worth_it(monkeypatch):
    """The shipped default's checks: int8 lost 0.25 F1, bf16 0.04. On a CPU with bf16,
    int8's 1.3x is not worth the loss: bf16. On one without, int8 against float32's
    speed, 1.66x: int8. Without a timed float32, the passing modes alone decide."""
    import torch

    from fastbioner.models import precision

    cpu = torch.device("cpu")

    def check(mode, speed, f1):
        return PrecisionCheck(mode, agreement=0.95, f1=f1, f1_fp32=0.8409, hardware="EPYC", tokens_per_s=speed)

    fp32, bf16, int8 = check("fp32", 3782, 0.8409), check("bf16", 4822, 0.8405), check("int8", 6261, 0.8384)
    monkeypatch.setattr(precision, "available_precisions",
                        lambda device: [Precision.FP32, Precision.BF16, Precision.INT8])
    assert choose_precision("auto", cpu, {"fp32": fp32, "bf16": bf16, "int8": int8}) is Precision.BF16
    assert choose_precision("auto", cpu, {"fp32": fp32, "bf16": check("bf16", 3000, 0.8405), "int8": int8}) \
        is Precision.INT8   # bf16 slower than float32 here: int8 is 1.66x the best of the rest
    # Losses within SAME_F1_POINTS are the same: float32 is worth int8's loss, and so is a
    # bf16 that loses 0.01 at 1.29 times float32's speed (the fast model on a busy Xeon).
    assert choose_precision("auto", cpu, {"fp32": check("fp32", 6922, 0.8409), "bf16": check("bf16", 8915, 0.8408),
                                          "int8": check("int8", 9041, 0.8384)}) is Precision.BF16
    monkeypatch.setattr(precision, "available_precisions", lambda device: [Precision.FP32, Precision.INT8])
    assert choose_precision("auto", cpu, {"fp32": fp32, "bf16": bf16, "int8": int8}) is Precision.INT8
    assert choose_precision("auto", cpu, {"fp32": check("fp32", 5000, 0.8409), "int8": int8}) is Precision.FP32
    # float32 measured again alone, in a later run: its speed does not compare with int8's;
    # int8's speedup over float32 in its own run does, and decides as it did then.
    later = PrecisionCheck("fp32", agreement=1.0, f1=0.8409, f1_fp32=0.8409, hardware="EPYC",
                           tokens_per_s=2000, date="2026-12-02T09:00:00+00:00")
    assert choose_precision("auto", cpu, {"fp32": later, "int8": int8}) is Precision.INT8
    slow_int8 = PrecisionCheck("int8", agreement=0.95, f1=0.8384, f1_fp32=0.8409, hardware="EPYC",
                               tokens_per_s=4200, speedup=1.2)
    assert choose_precision("auto", cpu, {"fp32": later, "int8": slow_int8}) is Precision.FP32
    assert choose_precision("auto", cpu, {"fp32": later, "int8": replace(slow_int8, speedup=1.7)}) \
        is Precision.INT8


def test_named_precision_that_the_device_lacks_is_a_clear_error():
    import torch

    with pytest.raises(FastBioNERError, match="fp16 is for CUDA"):
        choose_precision("fp16", torch.device("cpu"))
    with pytest.raises(FastBioNERError, match="unknown precision 'fp8'"):
        choose_precision("fp8", torch.device("cpu"))


@pytest.mark.parametrize("mode", ["bf16", "int8"])
def test_reduced_precision_modes_tag_like_fp32(trained, tagger, mode):
    import torch

    if Precision(mode) not in available_precisions(torch.device("cpu")):
        pytest.skip(f"{mode} not offered on this CPU")
    reduced = Tagger.load(trained, TaggerConfig(precision=mode))
    assert reduced.precision.value == mode
    if mode == "bf16":
        assert next(reduced.model.parameters()).dtype == torch.bfloat16
    else:  # int8: every Linear but the feed-forward output projections (float: outliers in their input)
        kept = [n for n, m in reduced.model.named_modules() if type(m) is torch.nn.Linear]
        assert kept and all(n.endswith(".output.dense") and ".attention." not in n for n in kept)
        assert any(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in reduced.model.modules())
    docs, truth = corpus(30, seed=5)
    key = lambda spans: {(s.start, s.end, s.label) for s in spans}  # noqa: E731
    same = sum(key(r) == key(f) == truth[d.id] for d, r, f in zip(docs, reduced.tag(docs), tagger.tag(docs)))
    assert same >= 29


def test_speed_is_timed_after_each_mode_has_seen_the_documents_on_a_gpu():
    """On a GPU a reduced precision's first pass over new batch shapes is slow (3.1 s
    against 0.8 s on an H200): each mode tags every document untimed before timing
    there, so the recorded speed is the steady one; on a CPU a few documents warm it."""
    import torch

    from fastbioner.infer.speed import interleaved_timing, warmup_documents

    assert warmup_documents(torch.device("cuda"), 500) == 500
    assert warmup_documents(torch.device("cpu"), 500) == 8
    assert warmup_documents(torch.device("cpu"), 3) == 3
    docs = [Document.from_parts(str(i), f"Title {i}.", [(None, "Lithium toxicity in rats.")]) for i in range(12)]
    seen: dict[str, list[int]] = {"fp32": [], "bf16": []}

    def system(name):
        def tag(batch):
            seen[name].append(len(batch))
            return [[] for _ in batch]
        return tag

    timed = interleaved_timing({m: system(m) for m in seen}, docs, chunk_documents=5, warmup_documents=12)
    # one untimed pass over all 12, then the timed rounds of 5, 5 and 2
    assert seen == {"fp32": [12, 5, 5, 2], "bf16": [12, 5, 5, 2]}
    assert all(len(spans) == 12 and speed.documents == 12 for spans, speed in timed.values())


def test_benchmark_command_records_speed_and_auto_follows_it(trained, tmp_path, capsys):
    Registry().import_folder(trained, name="tiny-tagger")
    docs, _ = corpus(10, seed=6)
    src = tmp_path / "docs.jsonl"
    write_documents(docs, src, "jsonl")
    rng = random.Random(9)
    from inference_models import random_tagged_sentence

    devel = tmp_path / "devel.tsv"
    lines = []
    for _ in range(40):
        words, tags = random_tagged_sentence(rng)
        lines += [f"{w}\t{t}" for w, t in zip(words, tags)] + [""]
    devel.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out_json = tmp_path / "speed.json"
    rc = main(["benchmark", "tiny-tagger", "--docs", str(src), "--devel", str(devel), "--json", str(out_json),
               "--quiet"])
    stdout = capsys.readouterr().out
    assert rc == 0 and "recorded in the manifest of tiny-tagger" in stdout
    speed = Registry().get("tiny-tagger").manifest.speed
    assert speed == json.loads(out_json.read_text())
    fp32 = speed["modes"]["fp32"]
    assert fp32["agreement"] == 1.0 and fp32["f1_loss_points"] == 0.0 and fp32["f1"] > 0.9
    assert fp32["documents"] == 10 and fp32["tokens_per_s"] > 0 and speed["hardware"]
    for record in speed["modes"].values():
        assert record["default_allowed"] == (record["f1_loss_points"] <= 0.3)
        assert record["speedup"] == pytest.approx(record["tokens_per_s"] / fp32["tokens_per_s"], rel=0.01)
    assert Tagger.load("tiny-tagger").precision.value == speed["precision"]
    # Measured again in float32 only (as on a machine without the reduced modes): the
    # earlier checks stay, and auto still follows them.
    rc = main(["benchmark", "tiny-tagger", "--docs", str(src), "--modes", "fp32", "--quiet"])
    stdout = capsys.readouterr().out
    again = Registry().get("tiny-tagger").manifest.speed
    assert rc == 0 and set(again["modes"]) == set(speed["modes"])
    assert again["modes"]["fp32"]["date"] >= fp32["date"]
    for mode in set(speed["modes"]) - {"fp32"}:
        assert again["modes"][mode] == speed["modes"][mode] and f"kept its earlier {mode} check" in stdout
    assert again["precision"] == speed["precision"]


def test_a_reduced_mode_measured_elsewhere_counts_for_auto_here():
    """int8 checked on the build machine, bf16 on another: a record with only fp32 and
    bf16 merged with the earlier one keeps int8 and chooses over both."""
    from fastbioner.infer.speed import merged_speed

    def mode(name, loss):
        return {"precision": name, "f1_loss_points": loss, "default_allowed": loss <= 0.3, "agreement": 0.99,
                "f1": 0.8 - loss / 100, "f1_fp32": 0.8, "tokens_per_s": 100.0, "ms_per_abstract": 1.0, "documents": 5,
                "data": "d", "hardware": name, "date": "x"}

    earlier = {"modes": {"fp32": mode("fp32", 0.0), "int8": mode("int8", 0.01)}}
    now = {"modes": {"fp32": mode("fp32", 0.0), "bf16": mode("bf16", 2.0)}, "device": "cpu", "threads": 1,
           "documents": 5}
    merged = merged_speed(earlier, now)
    assert set(merged["modes"]) == {"fp32", "bf16", "int8"}
    assert merged["modes"]["bf16"]["f1_loss_points"] == 2.0  # measured now: replaces nothing, kept as measured
    from fastbioner.models.precision import cpu_has_int8

    assert merged["precision"] == ("int8" if cpu_has_int8() else "fp32")  # bf16 lost too much
    assert merged_speed(None, now) is now


def test_evaluation_scores_through_the_engine(trained, tagger, tmp_path):
    from fastbioner.infer.evaluation import evaluate_model
    from inference_models import random_tagged_sentence

    rng = random.Random(11)
    devel = tmp_path / "devel.tsv"
    lines = []
    for _ in range(30):
        words, tags = random_tagged_sentence(rng)
        lines += [f"{w}\t{t}" for w, t in zip(words, tags)] + [""]
    devel.write_text("\n".join(lines) + "\n", encoding="utf-8")
    via_engine = evaluate_model(trained, devel, predictor=tagger.word_predictor())
    via_evaluation = evaluate_model(trained, devel)
    assert via_engine.f1 == via_evaluation.f1 == 1.0
    assert via_engine.support == via_evaluation.support > 30


def test_span_agreement_counts_exact_offsets_and_type():
    from fastbioner.infer.speed import span_agreement

    reference = [[Span(0, 5, "Chemical"), Span(6, 9, "Disease")], [], [Span(3, 4, "Disease")]]
    other = [[Span(0, 5, "Chemical"), Span(6, 10, "Disease")], [Span(1, 2, "Chemical")],
             [Span(3, 4, "Chemical")]]
    a = span_agreement(reference, other)
    assert (a.precision, a.recall) == (pytest.approx(1 / 4), pytest.approx(1 / 3))
    assert a.f1 == pytest.approx(2 / 7) and a.identical_documents == 0 and not a.identical
    same = span_agreement(reference, reference)
    assert same.f1 == 1.0 and same.identical
