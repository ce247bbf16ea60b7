"""Project files: a whole working set saved and read back exactly, written atomically,
and bad files refused with file and line."""

from __future__ import annotations

import json

import pytest

from fastbioner.io.documents import Document, Source, Span
from fastbioner.base.errors import InputError
from fastbioner.curate.project import DocStatus, Project, ProjectEntry, load_project, save_project


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
    with pytest.raises(InputError, match=r"work\.fbproj: document 2 cannot be saved as JSON"):
        save_project(broken, path)
    assert path.read_bytes() == before
    broken.entries[1].document.metadata["bad"] = float("nan")  # would not read back
    with pytest.raises(InputError, match=r"document 2 cannot be saved as JSON \(Out of range float"):
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


def test_a_version_1_project_opens_with_curated_read_as_in_review(tmp_path):
    """Format version 1 said "curated" for any edited document; it now means in review
    (touched), never reviewed: nobody said those documents were done."""
    path = tmp_path / "old.fbproj"
    save_project(_project(), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert header["version"] == 2
    header["version"] = 1
    first = json.loads(lines[1])
    first["status"] = "curated"
    path.write_text("\n".join([json.dumps(header), json.dumps(first)] + lines[2:]) + "\n", encoding="utf-8")
    back = load_project(path)
    assert [e.status for e in back.entries] == [DocStatus.IN_REVIEW, DocStatus.NEW]
    # "curated" is no status of version 2
    header["version"] = 2
    path.write_text("\n".join([json.dumps(header), json.dumps(first)]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"old\.fbproj:2: unknown status"):
        load_project(path)


def test_reviewed_documents_are_the_ones_marked_reviewed():
    from fastbioner.curate.project import needs_review, reviewed_documents

    project = _project()
    assert reviewed_documents(project) == [project.entries[0].document]  # CURATED is REVIEWED's old name
    project.entries[0].status = DocStatus.IN_REVIEW
    assert reviewed_documents(project) == []
    assert needs_review(DocStatus.IN_REVIEW) and not needs_review(DocStatus.REVIEWED)


def test_rejected_suggestions_are_saved_with_their_document(tmp_path):
    project = _project()
    project.entries[0].rejected = [Span(9, 15, "Chemical", Source.MODEL, 0.4)]
    save_project(project, tmp_path / "r.fbproj")
    back = load_project(tmp_path / "r.fbproj")
    assert back.entries[0].rejected == [Span(9, 15, "Chemical", Source.MODEL, 0.4)]
    assert back.entries[1].rejected == []


def _with_header(path, **changes):
    save_project(_project(), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header.update(changes)
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")


@pytest.mark.parametrize("changes, message", [
    ({"models": [1, 2]}, r"bad project header: 'models' must be an object \(model name: details\), got a list"),
    ({"models": {"m": 5}}, r"models\['m'\] must be an object, got a number 5"),
    ({"labels": 5}, r"'labels' must be a list of strings, got a number 5"),
    ({"labels": ["Species", None]}, r"labels\[1\] must be a non-empty string, got null"),
    ({"info": "x"}, r"'info' must be an object"),
    ({"documents": "three"}, r"'documents' must be a whole number"),
    ({"version": 0}, r"version must be a whole number from 1, got 0"),
    ({"version": -1}, r"version must be a whole number from 1, got -1"),
    ({"version": True}, r"version must be a whole number from 1, got True"),
    ({"version": "1"}, r"version must be a whole number from 1, got '1'"),
    ({"info": {"deep": json.loads("[" * 200 + "]" * 200)}}, r"JSON nested deeper than 64 levels"),
])
def test_a_bad_header_is_refused_with_file_and_line(tmp_path, changes, message):
    path = tmp_path / "p.fbproj"
    _with_header(path, **changes)
    with pytest.raises(InputError, match=rf"p\.fbproj:1: (bad project header: )?{message}"):
        load_project(path)


def test_deep_nesting_and_infinite_offsets_in_documents_are_refused(tmp_path):
    path = tmp_path / "p.fbproj"
    save_project(_project(), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([lines[0], "[" * 5000 + "]" * 5000, lines[2]]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"p\.fbproj:2: JSON nested deeper than 64 levels"):
        load_project(path)
    record = lines[1].replace('"start": 0', '"start": 1e400', 1)
    path.write_text("\n".join([lines[0], record, lines[2]]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"p\.fbproj:2: number 1e400 is out of range"):
        load_project(path)


def test_a_file_cut_short_against_its_header_is_reported(tmp_path):
    path = tmp_path / "p.fbproj"
    project = _project()
    project.entries.append(ProjectEntry(Document("3", "Third document.")))
    save_project(project, path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["documents"] == 3
    path.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")  # cut at a line boundary
    with pytest.raises(InputError, match=r"p\.fbproj:3: the header says 3 document\(s\) but the file holds 2 "
                                         r"\(the file was cut short\?\)"):
        load_project(path)


def test_extra_fields_and_the_next_version_are_read(tmp_path):
    """Fields a later version adds (a document's review status, a header note) do not
    stop this one reading the file."""
    from fastbioner.curate.project import PROJECT_VERSION

    path = tmp_path / "p.fbproj"
    save_project(_project(), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header.update(version=PROJECT_VERSION + 1, note="from the next version")
    records = [json.loads(line) for line in lines[1:]]
    for r in records:
        r["review"] = {"state": "accepted", "by": "curator-2"}
    path.write_text("\n".join(json.dumps(x) for x in [header, *records]) + "\n", encoding="utf-8")
    assert load_project(path).entries == _project().entries
