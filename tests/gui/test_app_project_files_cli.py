"""Project files saved by the app read by the command line (issue 67, item 6): `agree`,
`stats` and `convert` take a `.fbproj` wherever they take a document file, read-only,
each document as its curator left it (pending suggestions left out)."""

from __future__ import annotations

import pytest

from fastbioner.cli.main import main
from fastbioner.io.documents import Source
from fastbioner.io.formats import guess_format, read_documents, write_documents


@pytest.fixture
def two_annotators(loaded, tmp_path):
    """alice.fbproj and bob.fbproj, saved from the app: bob marked one more disease."""
    alice = tmp_path / "alice.fbproj"
    loaded.projects.save(alice)
    doc = loaded.workspace.document(1)
    rats = doc.text.index("rats")
    loaded.documents.set_current_row(1)
    loaded.curation.set_row(1)
    loaded.curation.add(rats, rats + 4, "Disease")
    bob = tmp_path / "bob.fbproj"
    loaded.projects.save(bob)
    return alice, bob, loaded


def test_agree_compares_two_projects(two_annotators, capsys, tmp_path):
    alice, bob, window = two_annotators
    assert any(s.source is Source.MODEL for s in window.workspace.document(0).spans)  # a pending suggestion
    assert main(["agree", str(alice), str(bob)]) == 0
    out = capsys.readouterr().out
    assert "bob.fbproj against" in out and "3 document(s) compared" in out
    assert "(A 4, B 5)" in out           # the suggestions are nobody's annotation: not counted
    assert "only in B 1" in out and guess_format(alice) == "project"


def test_stats_and_convert_read_a_project_and_never_write_one(two_annotators, capsys, tmp_path):
    alice, _bob, _window = two_annotators
    before = alice.read_bytes()
    assert main(["stats", str(alice)]) == 0
    out = capsys.readouterr().out
    assert "documents" in out and "3" in out
    out_file = tmp_path / "alice.jsonl"
    assert main(["convert", str(alice), str(out_file)]) == 0
    docs = list(read_documents(out_file))
    assert [d.id for d in docs] == [d.id for d in read_documents(alice)] and len(docs) == 3
    assert not any(s.source is Source.MODEL for d in docs for s in d.spans)
    assert main(["convert", str(out_file), str(tmp_path / "again.fbproj")]) != 0   # read-only
    assert "never written" in capsys.readouterr().err
    assert not (tmp_path / "again.fbproj").exists() and alice.read_bytes() == before
    # A project named .jsonl (or sniffed from a .txt) is still a project, not a bad document.
    renamed = tmp_path / "alice-copy.txt"
    renamed.write_bytes(before)
    assert len(list(read_documents(renamed))) == 3
    with pytest.raises(Exception, match="never written"):
        write_documents(docs, tmp_path / "x.fbproj")
