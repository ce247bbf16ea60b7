"""``tag-corpus``: what readers see and which files are whose. Readers follow
``current``, a link to one complete snapshot swapped by one rename, so an update
killed between its shards' writes leaves the view as it was; inputs are known by
their path, not their name's stem, so no input's documents replace another's; an
output folder holding other files is refused; file names are printed escaped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from fastbioner.base.errors import InputError
from fastbioner.cli.main import main
from fastbioner.infer.inference import TaggerConfig
from fastbioner.io.documents import Document
from fastbioner.io.formats import write_documents
from fastbioner.scale import CorpusOptions, tag_corpus
from pubmed_files import article, write_pubmed_gz
from tiny_models import make_tiny_model

CONFIG = dict(precision="fp32", threads=1)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny-tagger"), seed=3)


def run(paths, out, model, **options):
    return tag_corpus(paths, out, model, TaggerConfig(**CONFIG), CorpusOptions(**options))


def rows(folder) -> dict[str, dict]:
    """Every row of a folder of shards, by PMID (each PMID once)."""
    table = pq.read_table(folder)
    pmids = table.column("pmid").to_pylist()
    assert len(pmids) == len(set(pmids))
    return {r["pmid"]: r for r in table.to_pylist()}


def shard_names(out) -> list[str]:
    return sorted(p.name for p in (out / "current").glob("*.parquet"))


def docs(*pairs) -> list[Document]:
    return [Document.from_parts(id_, title, [(None, abstract)]) for id_, title, abstract in pairs]


@pytest.fixture
def update(tmp_path):
    """A baseline of two files (PMIDs 1-10, 11-20) and an update that revises 2 and 12,
    deletes 5 and 15 and adds 21: it rewrites both baseline shards and writes its own."""
    folder = tmp_path / "pubmed"
    folder.mkdir()
    text = {p: (f"Cocaine and seizures {p}.", f"Renal failure after lithium {p}.") for p in range(1, 21)}
    base = [write_pubmed_gz(folder / "pubmed25n0001.xml.gz", [article(p, *text[p]) for p in range(1, 11)]),
            write_pubmed_gz(folder / "pubmed25n0002.xml.gz", [article(p, *text[p]) for p in range(11, 21)])]
    new = write_pubmed_gz(folder / "pubmed25n0003.xml.gz",
                          [article(2, "Aspirin and pain.", "Naloxone reversed it.", 2),
                           article(12, "Lithium.", "Toxicity in rats.", 2), article(21, "Heparin.", "Bleeding.")],
                          deleted=[5, 15])
    return base, new


class Crash(BaseException):
    """As a process dying: nothing of the run's own error handling catches it."""


def test_an_update_killed_between_its_shards_leaves_the_view_as_it_was(model, update, tmp_path, monkeypatch):
    from fastbioner.scale import corpus

    base, new = update
    out = tmp_path / "out"
    run(base, out, model, chunk_documents=4)
    before = rows(out)
    reader = os.path.realpath(out / "current")   # a reader that resolved the link before the update
    real, written = corpus.write_rows, []

    def crashing(path, table, record):
        info = real(path, table, record)
        if "_snapshots" in str(path):   # a shard of the update's snapshot, not a checkpoint
            written.append(path.name)
            if len(written) == 1:
                raise Crash()
        return info

    monkeypatch.setattr(corpus, "write_rows", crashing)
    with pytest.raises(Crash):
        run([new], out, model, chunk_documents=4)
    assert written == ["pubmed25n0001.parquet"]
    # The first shard's new version exists, unpublished: readers see exactly the old view.
    assert rows(out) == before == rows(reader)
    assert "5" in rows(out) and "21" not in rows(out)
    [unpublished] = [p for p in (out / "_snapshots").glob("*/pubmed25n0001.parquet")
                     if not os.path.samefile(p, out / "current" / p.name)]
    monkeypatch.setattr(corpus, "write_rows", real)
    resumed = run([new], out, model, chunk_documents=4)
    fresh = tmp_path / "fresh"
    run([*base, new], fresh, model, chunk_documents=4)
    assert rows(out) == rows(fresh)
    assert sorted(rows(out), key=int) == [str(p) for p in range(1, 22) if p not in (5, 15)]
    # The shard written before the crash is published as it was, not written again.
    assert resumed.documents_tagged == 3   # 2, 12 (new text) and 21, all in the update's own shard
    assert os.stat(out / "current" / "pubmed25n0001.parquet").st_ino == unpublished.stat().st_ino
    # The reader's snapshot stays complete until the next update is published.
    assert rows(reader) == before
    assert len(list((out / "_snapshots").iterdir())) == 2


def test_a_run_after_a_crash_that_changes_the_unfinished_shards_again(model, update, tmp_path, monkeypatch):
    """The unfinished snapshot's first shard is out of date for the next run (a second
    update deletes one of its PMIDs): written again, and the result is a fresh folder's."""
    from fastbioner.scale import corpus

    base, new = update
    out = tmp_path / "out"
    run(base, out, model)
    real = corpus.write_rows

    def crashing(path, table, record):
        info = real(path, table, record)
        if "_snapshots" in str(path):
            raise Crash()
        return info

    monkeypatch.setattr(corpus, "write_rows", crashing)
    with pytest.raises(Crash):
        run([new], out, model)
    monkeypatch.setattr(corpus, "write_rows", real)
    later = write_pubmed_gz(new.parent / "pubmed25n0004.xml.gz", [article(22, "Heparin.", "Pain.")], deleted=[1])
    run([new, later], out, model)
    fresh = tmp_path / "fresh"
    run([*base, new, later], fresh, model)
    assert rows(out) == rows(fresh) and "1" not in rows(out)


def test_kill_9_between_renames_leaves_the_view_as_it_was(model, update, tmp_path):
    """The same in a process killed by SIGKILL right after the update's first shard."""
    base, new = update
    out = tmp_path / "out"
    run(base, out, model)
    before = rows(out)
    script = tmp_path / "killed.py"
    script.write_text(
        "import os, signal, sys\n"
        "from fastbioner.scale import corpus\n"
        "from fastbioner.infer.inference import TaggerConfig\n"
        "real = corpus.write_rows\n"
        "def killing(path, table, record):\n"
        "    info = real(path, table, record)\n"
        "    if '_snapshots' in str(path):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return info\n"
        "corpus.write_rows = killing\n"
        "corpus.tag_corpus(sys.argv[3:], sys.argv[1], sys.argv[2], TaggerConfig(precision='fp32', threads=1))\n",
        encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, str(script), str(out), str(model), str(new)], env=env,
                          capture_output=True, timeout=300)
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    assert rows(out) == before
    run([new], out, model)
    fresh = tmp_path / "fresh"
    run([*base, new], fresh, model)
    assert rows(out) == rows(fresh)


def test_the_folder_reads_as_its_current_snapshot(model, update, tmp_path):
    base, new = update
    out = tmp_path / "out"
    run(base, out, model)
    first = os.path.realpath(out / "current")
    assert (out / "current").is_symlink() and shard_names(out) == ["pubmed25n0001.parquet", "pubmed25n0002.parquet"]
    # Nothing to do: nothing published, the link unchanged.
    assert run(base, out, model).documents_tagged == 0
    assert os.path.realpath(out / "current") == first
    summary = run([new], out, model)
    saved = json.loads((out / "_summary.json").read_text())
    assert saved["snapshot"] == summary.snapshot == os.readlink(out / "current") != os.path.relpath(first, out)
    # The folder read whole (names starting with "_" skipped) is the current snapshot.
    assert rows(out) == rows(os.path.realpath(out / "current"))
    assert not list(out.glob("*.parquet"))


def test_a_folder_written_before_snapshots_is_taken_up(model, update, tmp_path):
    base, _ = update
    out = tmp_path / "out"
    run(base, out, model)
    before = rows(out)
    # As the previous version left it: the shards at the top of the folder.
    for shard in (out / "current").glob("*.parquet"):
        shutil.copy2(shard, out / shard.name)
    (out / "current").unlink()
    shutil.rmtree(out / "_snapshots")
    again = run(base, out, model)
    assert again.documents_tagged == 0 and again.inputs_parsed == 0
    assert (out / "current").is_symlink() and not list(out.glob("*.parquet"))
    assert rows(out) == before


def test_inputs_sharing_a_stem_keep_their_own_documents(model, tmp_path):
    """abs.pubtator, then abs.jsonl: two inputs, two shards; the second run deletes nothing."""
    folder = tmp_path / "in"
    folder.mkdir()
    write_documents(docs(("501", "Cocaine.", "Seizures."), ("502", "Aspirin.", "Pain.")),
                    folder / "abs.pubtator", "pubtator")
    write_documents(docs(("601", "Lithium.", "Toxicity."), ("602", "Heparin.", "Bleeding.")),
                    folder / "abs.jsonl", "jsonl")
    out = tmp_path / "out"
    run([folder / "abs.pubtator"], out, model)
    second = run([folder / "abs.jsonl"], out, model)
    assert sorted(rows(out)) == ["501", "502", "601", "602"]
    assert shard_names(out) == ["abs-2.parquet", "abs.parquet"]
    assert second.removed_now == {"superseded": 0, "deleted": 0} and second.inputs == 2
    # Two such inputs in one run: two shards as well.
    both = tmp_path / "both"
    run([folder / "abs.pubtator", folder / "abs.jsonl"], both, model)
    assert shard_names(both) == ["abs-2.parquet", "abs.parquet"] and len(rows(both)) == 4


def test_a_pubmed_file_of_the_same_name_elsewhere_is_another_input(model, tmp_path):
    (tmp_path / "other").mkdir()
    first = write_pubmed_gz(tmp_path / "pubmed25n0001.xml.gz",
                            [article(1, "Cocaine.", "Seizures."), article(2, "Old title.", "Old text.")])
    later = write_pubmed_gz(tmp_path / "other" / "pubmed25n0001.xml.gz",
                            [article(2, "New title.", "New text.", 2), article(3, "Lithium.", "Toxicity.")])
    out = tmp_path / "out"
    run([first], out, model)
    second = run([later], out, model)
    current = rows(out)
    assert sorted(current) == ["1", "2", "3"] and current["2"]["text"] == "New title. New text."
    assert second.removed_now == {"superseded": 1, "deleted": 0}
    assert shard_names(out) == ["pubmed25n0001-2.parquet", "pubmed25n0001.parquet"]


def test_a_moved_input_is_recognised_by_its_bytes(model, tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    write_documents(docs(("501", "Cocaine.", "Seizures.")), tmp_path / "a" / "x.pubtator", "pubtator")
    out = tmp_path / "out"
    run([tmp_path / "a" / "x.pubtator"], out, model)
    shutil.move(tmp_path / "a" / "x.pubtator", tmp_path / "b" / "x.pubtator")
    again = run([tmp_path / "b" / "x.pubtator"], out, model)
    assert again.inputs_parsed == 0 and again.documents_tagged == 0 and again.inputs == 1
    assert shard_names(out) == ["x.parquet"]


def test_an_output_folder_holding_other_files_is_refused(model, tmp_path, capsys):
    source = write_pubmed_gz(tmp_path / "pubmed25n0001.xml.gz", [article(1, "Cocaine.", "Seizures.")])
    out = tmp_path / "out"
    out.mkdir()
    mine = out / "pubmed25n0001.parquet"
    mine.write_bytes(b"the user's own file")
    with pytest.raises(InputError, match="holds files tag-corpus did not write"):
        run([source], out, model)
    assert mine.read_bytes() == b"the user's own file" and sorted(os.listdir(out)) == [mine.name]
    assert main(["tag-corpus", str(source), "--out", str(out), "--model", str(model), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "pubmed25n0001.parquet" in err and len(err.strip().splitlines()) == 1
    # An empty folder is taken; then it is tag-corpus's own.
    mine.unlink()
    assert run([source], out, model).documents == 1
    assert run([source], out, model).documents_tagged == 0


def test_input_names_are_printed_escaped(model, tmp_path, capsys):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "bad\x1b]0;owned\x07\u202e.xml.gz").write_bytes(b"not gzip")
    write_documents(docs(("501", "Cocaine.", "Seizures.")), folder / "good.pubtator", "pubtator")
    status = main(["tag-corpus", str(folder), "--out", str(tmp_path / "out"), "--model", str(model),
                   "--precision", "fp32", "--threads", "1", "--quiet"])
    captured = capsys.readouterr()
    assert status == 1
    assert "\x1b" not in captured.out + captured.err and "\u202e" not in captured.out + captured.err
    assert "bad\\x1b]0;owned\\x07\\u202e.xml.gz" in captured.out
    assert json.loads((tmp_path / "out" / "_summary.json").read_text())["documents"] == 1
