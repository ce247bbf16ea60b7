"""Project files: a whole working set saved and read back exactly, written atomically,
and bad files refused with file and line."""

from __future__ import annotations

import json

import pytest

from fastbioner.documents import Document, Source, Span
from fastbioner.errors import InputError
from fastbioner.project import DocStatus, Project, ProjectEntry, load_project, save_project


def _project() -> Project:
    a = Document.from_parts("1", "Cocaine induced seizures.", [("METHODS", "Rats got 𝛼-cocaine.")],
                            metadata={"journal": "X"})
    a.spans = [Span(0, 7, "Chemical", concept_id="D003042"), Span(16, 24, "Disease", Source.MODEL, 0.75),
               Span(16, 24, "Disease", Source.CURATOR), Span(0, 24, "Disease", Source.CURATOR)]
    a.relations = [("CID", "D003042", "D012640")]
    b = Document("2", "Plain text only.")
    return Project([ProjectEntry(a, DocStatus.CURATED, "student-6", "in/a.pubtator"), ProjectEntry(b)],
                   models={"student-6": {"kind": "student", "layers": 6}}, labels=["Species"])


def test_round_trip_keeps_documents_spans_status_and_provenance(tmp_path):
    project = _project()
    path = tmp_path / "work.fbproj"
    save_project(project, path)
    back = load_project(path)
    assert back.entries == project.entries
    assert back.models == project.models and back.labels == ["Species"]


def test_a_failed_save_leaves_the_previous_file_whole(tmp_path):
    path = tmp_path / "work.fbproj"
    save_project(_project(), path)
    before = path.read_bytes()
    broken = _project()
    broken.entries[1].document.metadata["bad"] = object()  # not JSON: fails mid-write
    with pytest.raises(TypeError):
        save_project(broken, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["work.fbproj"]


def test_bad_project_files_name_file_and_line(tmp_path):
    path = tmp_path / "p.fbproj"
    save_project(_project(), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:2] + ["{not json"] + lines[2:]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"p\.fbproj:3: not valid JSON"):
        load_project(path)
    header = json.loads(lines[0])
    header["version"] = 99
    path.write_text(json.dumps(header) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r":1: project format version 99 is newer"):
        load_project(path)
    path.write_text('{"id": "1", "text": "x"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r":1: not a FastBioNER project"):
        load_project(path)
    path.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match=r":1: empty file"):
        load_project(path)
    save_project(_project(), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[1])
    record["status"] = "finished"
    path.write_text("\n".join([lines[0], json.dumps(record)]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r":2: unknown status"):
        load_project(path)
    record["status"] = "new"
    record["spans"][0]["end"] = 10_000
    path.write_text("\n".join([lines[0], json.dumps(record)]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r":2: bad document: spans\[0\]: offsets 0..10000 fall outside"):
        load_project(path)
