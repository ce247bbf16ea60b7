"""``tag-corpus``: Parquet shards from gzipped PubMed baseline and update files (deleted
and revised citations), resume, cancel, other input formats, and the Ray engine giving
the same shards as the local one."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from fastbioner.cli.main import main
from fastbioner.documents import Document
from fastbioner.errors import InputError
from fastbioner.formats import write_documents
from fastbioner.inference import Tagger, TaggerConfig
from fastbioner.jobs import CancelToken, Cancelled
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
    return {p.name: pq.read_table(p) for p in sorted(out.glob("*.parquet"))}


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


def test_resume_skips_complete_shards_and_redoes_changed_ones(model, series, tmp_path):
    out = tmp_path / "out"
    run(series, out, model)
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.parquet")}
    events = []
    again = tag_corpus(series["paths"], out, model, TaggerConfig(**CONFIG), on_event=events.append)
    assert [s["status"] for s in again.shards] == ["skipped"] * 3
    assert again.documents_tagged == 0 and again.documents == sum(len(s) for s in series["shards"])
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.parquet")} == before
    assert [e.total for e in events if e.stage == "tag"][0] == 0
    # A new update file that deletes a citation of the first file: only that file's
    # shard (whose kept documents changed) and the new one are written.
    extra = write_pubmed_gz(series["paths"][0].parent / "pubmed25n0004.xml.gz",
                            [article(30, "Lithium toxicity.", "Renal failure after lithium.")], deleted=[7])
    third = tag_corpus([*series["paths"], extra], out, model, TaggerConfig(**CONFIG))
    assert [s["status"] for s in third.shards] == ["written", "skipped", "skipped", "written"]
    assert "7" not in pq.read_table(out / "pubmed25n0001.parquet").column("pmid").to_pylist()


def test_cancel_leaves_complete_shards_and_no_partial_one(model, series, tmp_path):
    out = tmp_path / "out"
    token = CancelToken()

    def on_event(ev):
        # Cancel in the middle of the second shard (chunks of 2 documents).
        if ev.stage == "tag" and ev.step >= len(series["shards"][0]) + 2:
            token.cancel()

    with pytest.raises(Cancelled):
        tag_corpus(series["paths"], out, model, TaggerConfig(**CONFIG), CorpusOptions(chunk_documents=2),
                   on_event=on_event, cancel=token)
    assert sorted(p.name for p in out.iterdir()) == ["pubmed25n0001.parquet"]
    resumed = run(series, out, model, chunk_documents=2)
    assert [s["status"] for s in resumed.shards] == ["skipped", "written", "written"]
    fresh = tmp_path / "fresh"
    run(series, fresh, model, chunk_documents=2)
    assert {k: t.to_pylist() for k, t in shards(out).items()} == {k: t.to_pylist() for k, t in shards(fresh).items()}


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
    # A folder is read in name order; a broken file stops the run before anything is tagged.
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "a.xml.gz").write_bytes(b"not gzip")
    with pytest.raises(InputError, match=r"a\.xml\.gz: not valid gzip data"):
        run([broken], tmp_path / "out2", model)
    assert not (tmp_path / "out2").exists()


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


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray", reason="the Ray engine needs the scale extra")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_engine_writes_the_same_shards_as_local(ray_local, model, series, tmp_path):
    local, remote = tmp_path / "local", tmp_path / "ray"
    run(series, local, model, chunk_documents=3)
    summary = run(series, remote, model, chunk_documents=3, engine="ray", workers=2)
    assert summary.engine == "ray" and summary.workers == 2
    a, b = shards(local), shards(remote)
    assert list(a) == list(b) and len(a) == 3
    for name in a:
        # Same rows, same spans, same float32 scores, same metadata (fingerprint, counts).
        assert a[name].equals(b[name], check_metadata=True), name
    assert json.loads((remote / "_summary.json").read_text())["deleted_pmids"] == ["14", "3", "99"]
    # Resume across engines: the local run finds the Ray run's shards complete.
    assert [s["status"] for s in run(series, remote, model, chunk_documents=3).shards] == ["skipped"] * 3
