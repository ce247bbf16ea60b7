"""``tag-corpus``: Parquet shards from gzipped PubMed baseline and update files (deleted
and revised citations), work proportional to change (documents, not files), one
folder with one history, batch-invariant spans, failures reported while the others
complete, resume and cancel, other input formats, and the Ray engine giving the same
shards as the local one."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from fastbioner.cli.main import main
from fastbioner.base.errors import InputError
from fastbioner.io.documents import Document
from fastbioner.io.formats import write_documents
from fastbioner.infer.inference import Tagger, TaggerConfig
from fastbioner.base.jobs import CancelToken, Cancelled
from fastbioner.scale import CorpusOptions, tag_corpus
from pubmed_files import article, baseline_series, write_pubmed_gz
from tiny_models import make_tiny_model

CONFIG = dict(precision="fp32", threads=1)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny-tagger"), seed=3)


@pytest.fixture
def series(tmp_path):
    return baseline_series(tmp_path / "pubmed")


def shards(out):
    """The shards a reader sees: those of the snapshot ``current`` links to."""
    return {p.name: pq.read_table(p) for p in sorted((out / "current").glob("*.parquet"))}


def run(series_or_paths, out, model, **options):
    paths = series_or_paths["paths"] if isinstance(series_or_paths, dict) else series_or_paths
    return tag_corpus(paths, out, model, TaggerConfig(**CONFIG), CorpusOptions(**options))


def test_shards_follow_pubmed_updates_and_hold_the_taggers_spans(model, series, tmp_path):
    out = tmp_path / "out"
    summary = run(series, out, model, chunk_documents=4)
    tables = shards(out)
    assert list(tables) == ["pubmed25n0001.parquet", "pubmed25n0002.parquet", "pubmed25n0003.parquet"]
    # PMID 3 (deleted by the second file) and 14 (by the third) are nowhere; 5 and 13,
    # revised later, appear once, from the later file.
    assert [t.column("pmid").to_pylist() for t in tables.values()] == series["shards"]
    for table in tables.values():
        for row in table.to_pylist():
            text = series["texts"][row["pmid"]]
            # Offsets into title + " " + abstract, and each span's text is that slice.
            assert all(text[s["start"]:s["end"]] == s["text"] for s in row["spans"])
    # The spans are the Tagger's for the kept copy of each citation (the revised text).
    five = next(r for r in tables["pubmed25n0002.parquet"].to_pylist() if r["pmid"] == "5")
    title, abstract = series["texts"]["5"].split(". ", 1)
    doc = Document.from_parts("5", title + ".", [(None, abstract)])
    assert doc.text == series["texts"]["5"]
    expected = Tagger.load(model, TaggerConfig(**CONFIG)).tag([doc])[0]
    assert [(s["start"], s["end"], s["label"]) for s in five["spans"]] == \
        [(s.start, s.end, s.label) for s in expected]
    assert [s["score"] for s in five["spans"]] == pytest.approx([s.score for s in expected], abs=1e-5)
    assert sum(len(r["spans"]) for t in tables.values() for r in t.to_pylist()) == sum(summary.entities.values()) > 0
    # The folder reads as one table (the summary beside the shards is not taken for one).
    assert pq.read_table(out).num_rows == summary.documents
    saved = json.loads((out / "_summary.json").read_text())
    assert saved["documents"] == summary.documents == sum(len(s) for s in series["shards"])
    assert saved["deleted_pmids"] == ["14", "3", "99"]
    assert saved["deleted_dropped"] == 2 and saved["superseded"] == 2
    assert saved["tokens_tagged"] > 0 and saved["tokens_per_s"] > 0
    assert [s["status"] for s in saved["shards"]] == ["written"] * 3
    # The shards keep each document's text (title + " " + abstract) and passages.
    for table in tables.values():
        for row in table.to_pylist():
            assert row["text"] == series["texts"][row["pmid"]]
            assert row["passages"][0]["kind"] == "title"


def test_update_rules_over_many_inputs():
    from fastbioner.scale.updates import InputScan, resolve

    scans = [InputScan.of("a", ["1", "2", "x:1", "007", "5", "5"]),
             InputScan.of("b", ["2", "7", "x:1"], deleted=["1"]),
             InputScan.of("c", ["2"], deleted=["99"])]
    assert scans[0].ids == ["1", "2", "x:1", "007", "5", "5"]
    r = resolve(scans)
    # Deleted anywhere: gone; several copies: the latest (within a file, the last);
    # ids that are not numbers ("x:1", "007") are ids all the same, never the number 7.
    assert [k.tolist() for k in r.keep] == [[False, False, False, True, False, True],
                                            [False, True, True], [True]]
    assert r.deleted_pmids == ["1", "99"] and r.deleted_dropped == 1 and r.superseded == 4


def test_the_folders_index_codes_ids_as_the_update_rules_do():
    import pyarrow as pa

    from fastbioner.scale.state import codes_of
    from fastbioner.scale.updates import _Codes

    ids = ["123", "007", "0", "x:1", "１２３", "99999999999999999999", "123", "x:1"]
    one, other = _Codes(), _Codes()
    assert codes_of(one, pa.array(ids)).tolist() == [other.code(i) for i in ids]
    assert codes_of(one, pa.array(ids)).tolist()[:3] == [123, -1, 0]


def test_resume_skips_complete_shards_and_redoes_changed_ones(model, series, tmp_path):
    out = tmp_path / "out"
    run(series, out, model)
    before = {p.name: p.stat().st_mtime_ns for p in (out / "current").glob("*.parquet")}
    events = []
    again = tag_corpus(series["paths"], out, model, TaggerConfig(**CONFIG), on_event=events.append)
    assert [s["status"] for s in again.shards] == ["unchanged"] * 3
    # Inputs seen before are recognised by size and hash: nothing parsed, nothing tagged.
    assert again.inputs_parsed == 0 and again.documents_tagged == 0
    assert again.documents == sum(len(s) for s in series["shards"])
    assert {p.name: p.stat().st_mtime_ns for p in (out / "current").glob("*.parquet")} == before
    assert [e.total for e in events if e.stage == "tag"][0] == 0
    # Touched (a new modification time), the same bytes: recognised by their hash.
    import os

    for path in series["paths"]:
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    touched = tag_corpus(series["paths"], out, model, TaggerConfig(**CONFIG))
    assert touched.inputs_parsed == 0 and touched.documents_tagged == 0
    # A new update file that deletes a citation of the first file: that shard loses the
    # row (no document is tagged for it), the new one is written.
    extra = write_pubmed_gz(series["paths"][0].parent / "pubmed25n0004.xml.gz",
                            [article(30, "Lithium toxicity.", "Renal failure after lithium.")], deleted=[7])
    third = tag_corpus([*series["paths"], extra], out, model, TaggerConfig(**CONFIG))
    assert [s["status"] for s in third.shards] == ["written", "unchanged", "unchanged", "written"]
    assert third.documents_tagged == 1 and third.inputs_parsed == 1
    assert "7" not in pq.read_table(out / "current" / "pubmed25n0001.parquet").column("pmid").to_pylist()
    assert third.removed_now == {"superseded": 0, "deleted": 1}


def current_view(out):
    """The folder as a reader sees it: every row of the top-level shards."""
    return pq.read_table(out)


def test_an_update_costs_the_documents_it_changes(model, tmp_path):
    """Two baseline files, then an update revising one PMID (and one with the same
    text, a metadata-only revision), adding one and deleting one: one document tagged,
    and the folder read as one table holds every current PMID once."""
    folder = tmp_path / "pubmed"
    folder.mkdir()
    texts = {p: (f"Cocaine and seizures {p}.", f"Patients with renal failure after lithium {p}.")
             for p in range(1, 41)}
    base = [write_pubmed_gz(folder / "pubmed25n0001.xml.gz", [article(p, *texts[p]) for p in range(1, 21)]),
            write_pubmed_gz(folder / "pubmed25n0002.xml.gz", [article(p, *texts[p]) for p in range(21, 41)])]
    out = tmp_path / "out"
    first = run(base, out, model, chunk_documents=8)
    assert first.documents_tagged == 40
    spans_before = {r["pmid"]: r["spans"] for r in current_view(out).to_pylist()}
    update = write_pubmed_gz(folder / "pubmed25n0003.xml.gz",
                             [article(7, "Aspirin and pain.", "Naloxone reversed the coma.", version=2),
                              article(30, *texts[30], version=2), article(41, "Lithium.", "Toxicity.")],
                             deleted=[12])
    # Only the update is listed: the folder remembers its baseline.
    second = run([update], out, model, chunk_documents=8)
    assert second.documents_tagged == 2          # PMID 7 (new text) and 41 (new)
    assert second.inputs_parsed == 1 and second.inputs == 3
    table = current_view(out)
    pmids = table.column("pmid").to_pylist()
    assert sorted(pmids, key=int) == [str(p) for p in range(1, 42) if p != 12]   # every PMID once
    rows = {r["pmid"]: r for r in table.to_pylist()}
    assert rows["7"]["text"] == "Aspirin and pain. Naloxone reversed the coma."
    # Untouched documents keep exactly their spans; 30 moved to the update's shard untagged.
    assert all(rows[p]["spans"] == spans_before[p] for p in rows if p not in ("7", "41"))
    assert "30" in pq.read_table(out / "current" / "pubmed25n0003.parquet").column("pmid").to_pylist()
    saved = json.loads((out / "_summary.json").read_text())
    assert saved["documents"] == 40 and len(saved["shards"]) == 3      # the whole folder
    assert saved["removed_now"] == {"superseded": 2, "deleted": 1}
    history = sorted((out / "_history").glob("run-*.json"))
    assert len(history) == 2
    assert json.loads(history[1].read_text())["deleted"] == ["12"]
    assert sorted(json.loads(history[1].read_text())["superseded"], key=int) == ["7", "30"]


def test_a_shard_removed_by_hand_is_written_again(model, series, tmp_path):
    out = tmp_path / "out"
    run(series, out, model)
    before = shards(out)
    (out / "current" / "pubmed25n0002.parquet").unlink()
    again = run(series, out, model)
    # Recognised by its hash, but its documents are in no shard: parsed (once) and tagged.
    assert again.inputs_parsed == 1 and again.documents_tagged == len(series["shards"][1])
    assert {k: t.to_pylist() for k, t in shards(out).items()} == {k: t.to_pylist() for k, t in before.items()}


def test_pubmed_files_are_taken_in_file_number_order(model, tmp_path):
    """An update folder given before the baseline: the update's text wins all the same."""
    base, updates = tmp_path / "baseline", tmp_path / "updatefiles"
    base.mkdir(), updates.mkdir()
    write_pubmed_gz(base / "pubmed25n0001.xml.gz", [article(1, "Old title.", "Old text of cocaine.")])
    write_pubmed_gz(updates / "pubmed25n0002.xml.gz", [article(1, "New title.", "New text of aspirin.", 2)])
    out = tmp_path / "out"
    run([updates, base], out, model)
    assert current_view(out).column("text").to_pylist() == ["New title. New text of aspirin."]


def test_a_changed_model_retags_from_the_shards_without_parsing(model, series, tmp_path):
    out = tmp_path / "out"
    run(series, out, model)
    other = make_tiny_model(tmp_path / "other-model", seed=4)
    for path in series["paths"]:   # the inputs are gone: the shards hold the text
        path.unlink()
    # No input listed: the folder's own inputs, every document tagged again by the new model.
    fresh = run([], out, other)
    assert fresh.documents_tagged == fresh.documents == sum(len(s) for s in series["shards"])
    assert fresh.inputs_parsed == 0
    assert sorted(fresh.missing_inputs) == sorted(str(p) for p in series["paths"])
    assert json.loads((out / "_summary.json").read_text())["model"] == str(other.resolve())


def test_cancel_keeps_the_tagged_chunks_and_no_partial_shard(model, series, tmp_path):
    out = tmp_path / "out"
    token = CancelToken()
    first_shard = len(series["shards"][0])

    def on_event(ev):
        # Cancel in the middle of the second shard (chunks of 2 documents).
        if ev.stage == "tag" and ev.step >= first_shard + 4:
            token.cancel()

    with pytest.raises(Cancelled):
        tag_corpus(series["paths"], out, model, TaggerConfig(**CONFIG), CorpusOptions(chunk_documents=2),
                   on_event=on_event, cancel=token)
    # Readers see nothing of an unfinished run (here: no view yet); the first shard
    # waits in the unfinished snapshot, the chunks tagged since are checkpointed.
    assert not (out / "current").exists()
    assert [p.name for p in (out / "_snapshots").glob("*/*.parquet")] == ["pubmed25n0001.parquet"]
    kept = sum(pq.read_table(p).num_rows for p in (out / "_state" / "pending").glob("*.parquet"))
    assert kept >= 4
    resumed = run(series, out, model, chunk_documents=2)
    total = sum(len(s) for s in series["shards"])
    # Nothing tagged twice: the resumed run tags what the cancelled one had not.
    assert resumed.documents_tagged == total - first_shard - kept
    assert [s["status"] for s in resumed.shards] == ["written", "written", "written"]
    assert not list((out / "_state" / "pending").glob("*.parquet"))
    fresh = tmp_path / "fresh"
    run(series, fresh, model, chunk_documents=2)
    assert {k: t.to_pylist() for k, t in shards(out).items()} == {k: t.to_pylist() for k, t in shards(fresh).items()}


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_a_documents_spans_do_not_depend_on_its_chunk_mates(model, series, tmp_path, precision):
    """The same documents tagged in chunks of 1, 7 and 64 give identical rows (spans and
    float32 scores, exactly): float32 batched by window width, int8 (which scales each
    activation tensor by its largest value) one document per call."""
    from fastbioner.models.precision import Precision, available_precisions
    import torch

    if Precision(precision) not in available_precisions(torch.device("cpu")):
        pytest.skip(f"{precision} does not run on this CPU")
    config = TaggerConfig(precision=precision, threads=1)
    results = []
    for chunk in (1, 7, 64):
        out = tmp_path / f"chunk{chunk}"
        tag_corpus(series["paths"], out, model, config, CorpusOptions(chunk_documents=chunk))
        results.append({k: t.to_pylist() for k, t in shards(out).items()})
    assert results[0] == results[1] == results[2]
    assert any(r["spans"] for rows in results[0].values() for r in rows)


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_float32_tags_a_chunks_documents_together(model, series, tmp_path, monkeypatch, precision):
    """Float32 on a CPU tags a chunk's documents in one call, windows batched by their
    own padded width (its numbers are the window's alone); int8, whose scales are per
    tensor, tags one document per call. The fingerprint says which."""
    from fastbioner.models.precision import Precision, available_precisions
    import torch

    if Precision(precision) not in available_precisions(torch.device("cpu")):
        pytest.skip(f"{precision} does not run on this CPU")
    seen = []
    real = Tagger.tag_chunk
    monkeypatch.setattr(Tagger, "tag_chunk", lambda self, docs, *a, **k: seen.append(len(docs)) or
                        real(self, docs, *a, **k))
    summary = tag_corpus(series["paths"], tmp_path / "out", model, TaggerConfig(precision=precision, threads=1),
                         CorpusOptions(chunk_documents=16))
    per_shard = [len(ids) for ids in series["shards"]]
    chunks = sum(-(-n // 16) for n in per_shard)   # a shard's documents in chunks of 16
    assert sum(seen) == summary.documents_tagged == sum(per_shard)
    assert len(seen) == (chunks if precision == "fp32" else sum(per_shard))
    assert summary.fingerprint["batching"] == ("by-width" if precision == "fp32" else "per-document")


def test_the_fast_model_gives_the_same_rows_in_any_chunking(series, tmp_path):
    """The shipped fast model as ``--precision auto`` runs it on this CPU."""
    from pathlib import Path

    fast = Path(__file__).resolve().parents[2] / "assets" / "more-models" / "bc5cdr-cnn-fast-v2"
    results = []
    for chunk in (1, 7, 64):
        tag_corpus(series["paths"], tmp_path / f"c{chunk}", fast, TaggerConfig(threads=1),
                   CorpusOptions(chunk_documents=chunk))
        results.append({k: t.to_pylist() for k, t in shards(tmp_path / f"c{chunk}").items()})
    assert results[0] == results[1] == results[2]


def test_bad_inputs_are_reported_and_the_others_complete(model, series, tmp_path, capsys):
    folder = series["paths"][0].parent
    good = (folder / "pubmed25n0002.xml.gz").read_bytes()
    (folder / "pubmed25n0005.xml.gz").write_bytes(good[: len(good) // 2])    # truncated
    (folder / "_late.pubtator").write_text("501|t|Cocaine and the heart.\n501|a|Seizures after cocaine.\n\n",
                                           encoding="utf-8")
    out = tmp_path / "out"
    status = main(["tag-corpus", str(folder), str(folder / "_late.pubtator"), "--out", str(out),
                   "--model", str(model), "--precision", "fp32", "--threads", "1", "--quiet"])
    captured = capsys.readouterr()
    assert status == 1 and "Traceback" not in captured.err
    assert "pubmed25n0005.xml.gz" in captured.out and "1 input(s) failed" in captured.err
    saved = json.loads((out / "_summary.json").read_text())
    assert [f["input"] for f in saved["failures"]] == [str(folder / "pubmed25n0005.xml.gz")]
    # The others are complete; no output name starts with "_" or "." (readers skip those).
    names = sorted(shards(out))
    assert names == ["late.parquet", "pubmed25n0001.parquet", "pubmed25n0002.parquet", "pubmed25n0003.parquet"]
    assert current_view(out).num_rows == sum(len(s) for s in series["shards"]) + 1
    # Fixed, the same command completes the folder (and tags only that file's documents).
    (folder / "pubmed25n0005.xml.gz").unlink()
    write_pubmed_gz(folder / "pubmed25n0005.xml.gz", [article(50, "Aspirin.", "Pain and aspirin.")])
    assert main(["tag-corpus", str(folder), str(folder / "_late.pubtator"), "--out", str(out),
                 "--model", str(model), "--precision", "fp32", "--threads", "1", "--quiet"]) == 0
    assert "tagged now: 1 document(s)" in capsys.readouterr().out


def test_a_failing_shard_is_reported_and_the_others_complete(model, series, tmp_path, monkeypatch):
    import fastbioner.scale.local as local

    real = local.tag_chunk

    def failing(tagger, docs):
        if any(d.id == "18" for d in docs):   # the second file's second chunk (17, 18)
            raise RuntimeError("worker lost")
        return real(tagger, docs)

    monkeypatch.setattr(local, "tag_chunk", failing)
    out = tmp_path / "out"
    broken = run(series, out, model, chunk_documents=2)
    assert [s["status"] for s in broken.shards] == ["written", "failed", "written"]
    assert len(broken.failures) == 1 and "pubmed25n0002.xml.gz: tagging failed: RuntimeError: worker lost" \
        in broken.failures[0]["error"]
    assert sorted(shards(out)) == ["pubmed25n0001.parquet", "pubmed25n0003.parquet"]
    monkeypatch.setattr(local, "tag_chunk", real)
    fixed = run(series, out, model, chunk_documents=2)
    # The chunk of the second file tagged before the failure (15, 16) is not tagged again.
    assert fixed.documents_tagged == len(series["shards"][1]) - 2 and not fixed.failures
    fresh = tmp_path / "fresh"
    run(series, fresh, model, chunk_documents=2)
    assert {k: t.to_pylist() for k, t in shards(out).items()} == {k: t.to_pylist() for k, t in shards(fresh).items()}


def test_one_run_per_folder_at_a_time(model, series, tmp_path):
    from filelock import FileLock

    out = tmp_path / "out"
    (out / "_state").mkdir(parents=True)
    with FileLock(out / "_state" / "lock"):   # as another process's run holds it
        with pytest.raises(InputError, match="another tag-corpus run is updating this folder"):
            run(series, out, model)
    assert not (out / "current").exists()
    assert run(series, out, model).documents == sum(len(s) for s in series["shards"])


def test_default_threads_leave_busy_cores_alone(monkeypatch):
    import os

    from fastbioner.base import threads
    from fastbioner.scale.preflight import default_threads

    busy = [0.2]   # cores other processes keep busy, as the rule measures them (a stand-in)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(threads, "busy_elsewhere", lambda start, end: busy[0])
    monkeypatch.setattr(threads, "MIN_WINDOW_S", 0.0)   # no wait for a window: the measure is the stand-in
    assert default_threads() == 4
    busy[0] = 2.6
    assert default_threads() == 1
    busy[0] = 11.0   # never below one
    assert default_threads() == 1


def test_object_store_paths_are_refused_in_one_line(model, series, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["tag-corpus", str(series["paths"][0]), "--out", "s3://bucket/p/", "--model", str(model),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "object-store outputs (s3://) are not supported" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s3:").exists()


def test_other_formats_and_bad_input(model, series, tmp_path):
    docs = [Document.from_parts("501", "Cocaine and the heart.", [(None, "Seizures after cocaine.")]),
            Document.from_parts("502", "Aspirin.", [(None, "Pain and aspirin.")])]
    pubtator = tmp_path / "in" / "extra.pubtator"
    pubtator.parent.mkdir()
    write_documents(docs, pubtator, "pubtator")
    text = tmp_path / "in" / "notes.txt"
    text.write_text("Lithium toxicity in rats.\n\nNaloxone and clonidine.\n", encoding="utf-8")
    out = tmp_path / "out"
    summary = run([pubtator, text], out, model)
    tables = shards(out)
    assert tables["extra.parquet"].column("pmid").to_pylist() == ["501", "502"]
    assert tables["notes.parquet"].num_rows == 2 and summary.documents == 4
    # Ids that are not PMIDs survive the folder's stored scans: nothing to do again.
    again = run([pubtator, text], out, model)
    assert again.inputs_parsed == 0 and again.documents_tagged == 0 and again.documents == 4
    assert {k: t.to_pylist() for k, t in shards(out).items()} == {k: t.to_pylist() for k, t in tables.items()}
    # A broken file is reported, with the file's own one-line error.
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "a.xml.gz").write_bytes(b"not gzip")
    failed = run([broken], tmp_path / "out2", model)
    assert len(failed.failures) == 1 and "a.xml.gz: not valid gzip data" in failed.failures[0]["error"]
    assert not list((tmp_path / "out2").glob("*.parquet"))


def test_cli_tag_corpus(model, series, tmp_path, capsys):
    out = tmp_path / "out"
    status = main(["tag-corpus", *map(str, series["paths"]), "--out", str(out), "--model", str(model),
                   "--precision", "fp32", "--threads", "1", "--quiet"])
    printed = capsys.readouterr().out
    assert status == 0 and "3 shard(s)" in printed and "3 PMID(s) deleted" in printed
    assert (out / "_summary.json").is_file() and len(shards(out)) == 3
    # Bad input: one line naming the file, exit status 2, nothing written.
    assert main(["tag-corpus", str(tmp_path / "missing.xml.gz"), "--out", str(tmp_path / "o2"),
                 "--model", str(model), "--quiet"]) == 2
    assert "missing.xml.gz: no such file" in capsys.readouterr().err
    assert not (tmp_path / "o2").exists()


def test_ray_engine_without_ray_says_what_to_install(model, series, tmp_path, monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # as where the scale extra is not installed
    assert main(["tag-corpus", str(series["paths"][0]), "--out", str(tmp_path / "out"), "--model", str(model),
                 "--engine", "ray", "--quiet"]) == 2
    assert 'needs Ray: pip install "fastbioner-studio[scale]"' in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_ray_that_cannot_start_is_one_line(model, series, tmp_path, monkeypatch, capsys):
    """Ray raises a bare Exception when its raylet does not start (as under a 3 GB
    ``ulimit -v``): one line saying so, exit 2, no traceback, no folder."""
    import types

    from fastbioner.scale import ray_engine

    def init(**_kw):
        raise Exception("The current node timed out during startup.\nmore detail")

    fake = types.SimpleNamespace(is_initialized=lambda: False, init=init, shutdown=lambda: None)
    monkeypatch.setattr(ray_engine, "import_ray", lambda: fake)
    assert main(["tag-corpus", str(series["paths"][0]), "--out", str(tmp_path / "out"), "--model", str(model),
                 "--engine", "ray", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Ray could not start: The current node timed out during startup." in err
    assert "Traceback" not in err and "more detail" not in err


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray", reason="the Ray engine needs the scale extra")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_engine_writes_the_same_shards_as_local(ray_local, model, series, tmp_path):
    import tempfile
    from pathlib import Path

    copies = set(Path(tempfile.gettempdir()).glob("fastbioner-model-*"))
    local, remote = tmp_path / "local", tmp_path / "ray"
    run(series, local, model, chunk_documents=3)
    summary = run(series, remote, model, chunk_documents=3, engine="ray", workers=2)
    # The actors' copies of the model are gone once loaded.
    assert set(Path(tempfile.gettempdir()).glob("fastbioner-model-*")) == copies
    assert summary.engine == "ray" and summary.workers == 2
    a, b = shards(local), shards(remote)
    assert list(a) == list(b) and len(a) == 3
    for name in a:
        # Same rows, same spans, same float32 scores, same metadata (fingerprint, counts).
        assert a[name].equals(b[name], check_metadata=True), name
    assert json.loads((remote / "_summary.json").read_text())["deleted_pmids"] == ["14", "3", "99"]
    # Resume across engines: the local run finds the Ray run's shards complete.
    assert [s["status"] for s in run(series, remote, model, chunk_documents=3).shards] == ["unchanged"] * 3
