"""The format registry: guessing, reading many files, and bad input of every kind."""

from __future__ import annotations

import warnings

import pytest

from fastbioner.io.documents import Document, Span
from fastbioner.base.errors import InputError, InputWarning
from fastbioner.io.formats import (
    FORMATS, format_for_path, format_module, guess_format, read_any, read_documents, write_documents,
)
from fastbioner.base.jobs import CancelToken, Cancelled

PUBTATOR = "1|t|Cocaine kills.\n1|a|Rats died.\n1\t0\t7\tCocaine\tChemical\tD003042\n\n"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def sample():
    doc = Document.from_parts("1", "Cocaine kills.", [(None, "Rats died.")])
    doc.spans = [Span(0, 7, "Chemical", concept_id="D003042")]
    return doc


@pytest.mark.parametrize("name,fmt", [
    ("a.conll", "conll"), ("a.bio", "conll"), ("a.tsv", "conll"), ("a.PubTator", "pubtator"),
    ("CDR.PubTator.txt", "pubtator"), ("a.bioc.xml", "bioc"), ("a.jsonl", "jsonl"), ("a.nbib", "medline"),
    ("a.txt", "text"),
])
def test_guess_from_the_name(name, fmt):
    assert guess_format(name, for_writing=True) == fmt


def test_guess_from_the_content(tmp_path):
    assert guess_format(write(tmp_path, "corpus.txt", PUBTATOR)) == "pubtator"
    assert guess_format(write(tmp_path, "m.txt", "PMID- 1\nTI  - x\n")) == "medline"
    assert guess_format(write(tmp_path, "b.txt", "a\tB-X\nb\tO\n\n")) == "conll"
    assert guess_format(write(tmp_path, "p.txt", "Just an abstract.")) == "text"
    assert guess_format(write(tmp_path, "x.xml", "<?xml version='1.0'?>\n<collection/>")) == "bioc"
    assert guess_format(write(tmp_path, "y.xml", "<PubmedArticleSet></PubmedArticleSet>")) == "pubmed"
    with pytest.raises(InputError, match="cannot tell the format"):
        guess_format(tmp_path / "out.xml", for_writing=True)
    with pytest.raises(InputError, match="unknown format 'word'"):
        format_module("word")
    assert format_for_path(write(tmp_path, "README.md", "# Corpus")) is None
    assert format_for_path(tmp_path / "corpus.txt") == "pubtator"


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_round_trips_through_the_registry(tmp_path, fmt):
    out = tmp_path / f"out.{fmt}"
    write_documents([sample()], out, fmt)
    (back,) = read_documents(out, fmt)
    assert "".join(back.text.split()) == "".join(sample().text.split())
    if fmt in ("pubtator", "bioc", "jsonl"):
        assert back == sample()
    if fmt == "conll":
        assert [(back.span_text(s), s.label) for s in back.spans] == [("Cocaine", "Chemical")]


def test_read_any_collects_errors_per_file(tmp_path):
    write(tmp_path, "in/good.pubtator", PUBTATOR)
    write(tmp_path, "in/sub/bad.pubtator", PUBTATOR.replace("\tCocaine\t", "\tHeroin\t"))
    write(tmp_path, "in/README.md", "# not a corpus")
    write(tmp_path, "in/.hidden.jsonl", "garbage")
    (tmp_path / "in/latin1.txt").write_bytes(b"caf\xe9\n")
    events = []
    batch = read_any([tmp_path / "in"], on_event=events.append)
    docs = list(batch)
    assert [d.id for d in docs] == ["1"]
    messages = sorted(str(e) for e in batch.errors)
    assert len(messages) == 2
    assert "latin1.txt:1: not UTF-8" in messages[0]
    assert "bad.pubtator:3: mention text 'Heroin'" in messages[1]
    assert events[-1].step == 3 and events[-1].total == 3


def test_read_any_stops_when_cancelled(tmp_path):
    write(tmp_path, "a.pubtator", PUBTATOR)
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        list(read_any([tmp_path], cancel=token))


def test_bad_paths_give_one_line_errors(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        list(read_documents(tmp_path, "pubtator"))
    with pytest.raises(InputError, match="no such file"):
        list(read_documents(tmp_path / "missing.pubtator"))
    with pytest.raises(InputError, match="is a directory"):
        write_documents([sample()], tmp_path, "jsonl")
    (tmp_path / "bin.pubtator").write_bytes(b"1|t|ok\n1|a|caf\xe9\n")
    with pytest.raises(InputError, match=r"bin\.pubtator:2: not UTF-8"):
        list(read_documents(tmp_path / "bin.pubtator"))


def test_failed_write_leaves_the_old_file_untouched(tmp_path):
    out = write(tmp_path, "keep.jsonl", "old content\n")

    def docs():
        yield sample()
        raise InputError("broken input", "src.txt", 3)

    with pytest.raises(InputError, match="src.txt:3"):
        write_documents(docs(), out)
    assert out.read_text() == "old content\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.jsonl"]


def test_a_200000_character_document_is_handled(tmp_path):
    sentence = "Cocaine-induced seizures were reduced by 5 mg/kg naloxone (p < 0.05) in rats. "
    text = (sentence * (200_000 // len(sentence) + 1))[:200_000].rsplit(" ", 1)[0]
    path = write(tmp_path, "big.txt", text)
    (doc,) = read_documents(path)
    report = write_documents([doc], tmp_path / "big.conll")
    assert len(doc.text) > 199_000
    assert report.sentences == text.count(". ") + 1


def test_warnings_are_input_warnings(tmp_path):
    path = write(tmp_path, "w.conll", "a\tI-X\n\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        list(read_documents(path))
    assert [w.category for w in caught] == [InputWarning]
    assert str(caught[0].message).startswith(f"{path}:1: repaired 1")


def test_reading_a_folder_ends_with_its_final_event(tmp_path):
    """The multi-file reader is a job like the others: its last event says it ended,
    with the files read and skipped."""
    from fastbioner.io.formats import read_any
    from fastbioner.base.jobs import JobState

    (tmp_path / "a.pubtator").write_text("1|t|Cocaine toxicity\n1|a|Seizures.\n\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text("{not json\n", encoding="utf-8")
    events = []
    batch = read_any([tmp_path], on_event=events.append)
    docs = list(batch)
    assert len(docs) == 1 and len(batch.errors) == 1
    assert events[-1].state is JobState.DONE and "1 file(s) read, 1 skipped" in events[-1].message
    assert all(e.state is JobState.RUNNING for e in events[:-1])


def test_a_gzipped_document_file_in_a_folder_is_reported_never_passed_over(tmp_path):
    """A folder's ``abs.pubtator.gz`` is picked like its plain twin, then refused in one
    line naming it (only PubMed XML is read gzipped); the folder's other files are read."""
    import gzip

    from fastbioner.io.formats import expand_paths, read_any

    folder = tmp_path / "in"
    folder.mkdir()
    text = "1|t|Aspirin and pain.\n1|a|Aspirin.\n1\t0\t7\tAspirin\tChemical\tD001241\n\n"
    (folder / "a.pubtator").write_text(text, encoding="utf-8")
    (folder / "b.pubtator.gz").write_bytes(gzip.compress(text.replace("1", "2").encode()))
    assert [p.name for p in expand_paths([folder])] == ["a.pubtator", "b.pubtator.gz"]
    reader = read_any([folder])
    docs = list(reader)
    assert [d.id for d in docs] == ["1"]
    assert len(reader.errors) == 1 and "gunzip it first" in str(reader.errors[0])
    assert "b.pubtator.gz" in str(reader.errors[0])
