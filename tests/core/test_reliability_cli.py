"""Issue 70, the command line: no command writes where it reads, nothing read from a
file or a model folder acts on the terminal, and `rank` queues each document once
and says what it left out."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from fastbioner.base.terminal import shown
from fastbioner.cli.main import main
from fastbioner.io.fileio import check_not_an_input
from fastbioner.io.formats import distinct_inputs
from fastbioner.base.errors import InputError
from tiny_models import make_tiny_model

PUBTATOR = "{n}|t|Cocaine induced seizures.\n{n}|a|Rats died.\n{n}\t0\t7\tCocaine\tChemical\tD1\n\n"
# What a terminal acts on: ESC (colours, OSC), BEL, C1 controls, the bidirectional overrides.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
HOSTILE_ID = "\x1b]0;pwned\x07\x1b[2J\u202eevil"
HOSTILE_LABEL = "Chem\x1b[31mical\u202e"


def one_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    for n in (1, 2):
        (d / f"a{n}.pubtator").write_text(PUBTATOR.format(n=n), encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=5)


# -- 1. no command writes where it reads ----------------------------------------------

def test_convert_into_its_own_input_folder_is_refused_and_nothing_changes(folder, tmp_path, capsys):
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    for out in (folder / "a1.pubtator", folder / "new.jsonl", folder / "sub" / "deeper.jsonl"):
        assert main(["convert", str(folder), str(out)]) == 2
        assert "lies inside the input folder" in one_error(capsys)
    # The folder named through a link, and the output through a link into the folder.
    (tmp_path / "alias").symlink_to(folder)
    assert main(["convert", str(tmp_path / "alias"), str(folder / "x.jsonl")]) == 2
    assert "lies inside the input folder" in one_error(capsys)
    (tmp_path / "outlink.pubtator").symlink_to(folder / "a2.pubtator")
    assert main(["convert", str(folder), str(tmp_path / "outlink.pubtator")]) == 2
    assert "lies inside the input folder" in one_error(capsys)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    # Outside the folder it is written, as ever.
    assert main(["convert", str(folder), str(tmp_path / "all.jsonl")]) == 0


def test_a_hard_link_to_a_file_of_the_input_folder_is_refused(folder, tmp_path, capsys):
    os.link(folder / "a1.pubtator", tmp_path / "same.pubtator")
    assert main(["convert", str(folder), str(tmp_path / "same.pubtator")]) == 2
    assert "is a file of the input folder" in one_error(capsys)
    src = folder / "a1.pubtator"
    os.link(src, tmp_path / "twin.pubtator")
    with pytest.raises(InputError, match="would overwrite the input"):
        check_not_an_input(tmp_path / "twin.pubtator", [src])
    assert main(["tag", str(src), "--out", str(tmp_path / "twin.pubtator"), "--format", "pubtator",
                 "--quiet"]) == 2
    assert "would overwrite the input" in one_error(capsys)


def test_rank_and_agree_refuse_to_write_into_what_they_read(folder, tmp_path, capsys):
    before = (folder / "a1.pubtator").read_bytes()
    # Refused before any model loads (the model named does not exist).
    assert main(["rank", str(folder), "--top", "5", "--out", str(folder / "a1.pubtator"),
                 "--model", "no-such-model"]) == 2
    assert "lies inside the input folder" in one_error(capsys)
    a, b = folder / "a1.pubtator", folder / "a2.pubtator"
    os.link(b, tmp_path / "b-link.json")
    assert main(["agree", str(a), str(b), "--json", str(tmp_path / "b-link.json")]) == 2
    assert "would overwrite the input" in one_error(capsys)
    assert a.read_bytes() == before


def test_tag_corpus_never_writes_its_shards_inside_an_input_folder(folder, tiny, tmp_path, capsys):
    before = sorted(p.name for p in folder.rglob("*"))
    assert main(["tag-corpus", str(folder), "--model", str(tiny), "--out", str(folder / "shards"),
                 "--quiet"]) == 2
    assert "inside the input folder" in capsys.readouterr().err
    assert sorted(p.name for p in folder.rglob("*")) == before


def test_models_export_into_the_models_own_folder_is_one_line(tiny, capsys):
    assert main(["models", "import", str(tiny), "--name", "tiny"]) == 0
    capsys.readouterr()
    from fastbioner.models.registry import Registry

    own = Registry().get("tiny").path
    before = sorted(p.name for p in own.iterdir())
    for dest in (own, own / "copy"):
        assert main(["models", "export", "tiny", str(dest)]) == 2
        assert "lies inside the input folder" in one_error(capsys)
    assert sorted(p.name for p in own.iterdir()) == before


# -- 6. nothing from outside acts on the terminal ----------------------------------

def test_shown_escapes_what_a_terminal_acts_on_and_keeps_any_script():
    assert shown("a\x1b[31mb\x07c\u202ed\ne\x9b") == "a\\x1b[31mb\\x07c\\u202ed\\x0ae\\x9b"
    assert shown("Cisplatin ist ein Zytostatikum – 顺铂 ✓") == "Cisplatin ist ein Zytostatikum – 顺铂 ✓"
    assert shown("x" * 10, limit=4) == "xxxx…"
    assert shown(Path("a\x1bb")) == "a\\x1bb"


def _hostile_jsonl(path: Path, doc_id: str = HOSTILE_ID, n: int = 1) -> Path:
    text = "Cocaine induced seizures."
    lines = [json.dumps({"id": f"{doc_id}{i}", "text": text,
                         "spans": [{"start": 0, "end": 5, "label": HOSTILE_LABEL}]}) for i in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _no_raw(capsys) -> tuple[str, str]:
    out, err = capsys.readouterr()
    assert not RAW.search(out), out
    assert not RAW.search(err), err
    return out, err


def test_stats_convert_and_agree_escape_ids_and_labels(tmp_path, capsys):
    src = _hostile_jsonl(tmp_path / "h.jsonl")
    assert main(["stats", str(src)]) == 0
    out, _ = _no_raw(capsys)
    assert "Chem\\x1b[31mical\\u202e" in out
    # "Cocai" is off token boundaries: convert lists the document and the label.
    assert main(["convert", str(src), str(tmp_path / "h.conll")]) == 0
    _, err = _no_raw(capsys)
    assert "\\x1b]0;pwned\\x07" in err
    other = _hostile_jsonl(tmp_path / "h2.jsonl")
    assert main(["agree", str(src), str(other)]) == 0
    out, _ = _no_raw(capsys)
    assert "Chem\\x1b[31mical" in out
    # An error quoting the file's text is escaped too, on one line.
    (tmp_path / "bad\x1b[2J.pubtator").write_text("1|t|x\n1\t0\t9\tx\x1b]0;t\x07\tX\n", encoding="utf-8")
    assert main(["stats", str(tmp_path / "bad\x1b[2J.pubtator")]) == 2
    _, err = _no_raw(capsys)
    assert len(err.strip().splitlines()) == 1


def test_rank_prints_hostile_ids_escaped(tiny, tmp_path, capsys):
    src = _hostile_jsonl(tmp_path / "h.jsonl", n=2)
    assert main(["rank", str(src), "--model", str(tiny), "--top", "2", "--out", str(tmp_path / "r.jsonl"),
                 "--quiet", "--device", "cpu"]) == 0
    out, _ = _no_raw(capsys)
    assert "\\x1b]0;pwned" in out


def test_models_list_and_show_escape_a_downloaded_models_card(tiny, tmp_path, capsys):
    from fastbioner.models.manifest import read_manifest, write_manifest
    import shutil

    folder = tmp_path / "downloaded"
    shutil.copytree(tiny, folder)
    from fastbioner.models.registry import manifest_from_folder

    manifest = manifest_from_folder(folder)
    manifest.summary = "Tags \x1b]8;;http://evil\x07diseases\x1b]8;;\x07"
    manifest.parent = "\u202eparent"
    manifest.base_model = "base\x1b[2J"
    write_manifest(folder, manifest)
    assert read_manifest(folder).summary.startswith("Tags \x1b")
    assert main(["models", "import", str(folder), "--name", "down"]) == 0
    assert main(["models", "list"]) == 0
    assert main(["models", "show", "down"]) == 0
    out, _ = _no_raw(capsys)
    assert "\\u202eparent" in out and "base\\x1b[2J" in out and "\\x1b]8;;http://evil\\x07" in out


# -- 8. rank: each document once, every problem said --------------------------------

def test_distinct_inputs_reads_each_file_once(folder, tmp_path):
    a = folder / "a1.pubtator"
    (tmp_path / "link.pubtator").symlink_to(a)
    kept, twice = distinct_inputs([a, a, tmp_path / "link.pubtator", folder, tmp_path / "in" / "a2.pubtator"])
    assert kept == [folder]
    assert twice == [a, tmp_path / "link.pubtator", a, tmp_path / "in" / "a2.pubtator"]


def test_rank_queues_a_file_given_twice_once_and_says_so(tiny, folder, tmp_path, capsys):
    a = folder / "a1.pubtator"
    out = tmp_path / "r.jsonl"
    assert main(["rank", str(a), str(a), "--model", str(tiny), "--top", "5", "--out", str(out),
                 "--quiet", "--device", "cpu"]) == 0
    captured = capsys.readouterr()
    assert "given twice" in captured.err
    assert "ranked 1 document(s)" in captured.out
    assert len(out.read_text(encoding="utf-8").splitlines()) == 1


def test_rank_ranks_a_repeated_document_once_and_says_so(tiny, tmp_path, capsys):
    src = tmp_path / "rep.pubtator"
    src.write_text(PUBTATOR.format(n=1) * 2 + PUBTATOR.format(n=2), encoding="utf-8")
    out = tmp_path / "r.jsonl"
    assert main(["rank", str(src), "--model", str(tiny), "--top", "5", "--out", str(out),
                 "--quiet", "--device", "cpu"]) == 0
    captured = capsys.readouterr()
    assert "1 document(s) repeated (same id and text), ranked once: 1" in captured.err
    assert [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()] == ["1", "2"]


def test_rank_says_which_file_of_a_folder_it_skipped_and_exits_1(tiny, folder, tmp_path, capsys):
    (folder / "broken.pubtator").write_text("1|t|x\n1\t0\t99\tx\tX\n", encoding="utf-8")
    out = tmp_path / "r.jsonl"
    assert main(["rank", str(folder), "--model", str(tiny), "--top", "5", "--out", str(out),
                 "--quiet", "--device", "cpu"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "broken.pubtator" in err[0] and err[0].endswith("(file skipped)")
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2


@pytest.mark.parametrize("command", ["rank", "tag"])
@pytest.mark.parametrize("chunk", ["0", "-3"])
def test_a_chunk_below_one_is_refused(command, chunk, folder, tmp_path, capsys):
    extra = ["--top", "3"] if command == "rank" else ["--format", "jsonl"]
    assert main([command, str(folder / "a1.pubtator"), "--out", str(tmp_path / "o.jsonl"), "--chunk", chunk,
                 *extra]) == 2
    assert one_error(capsys).endswith(f"--chunk must be at least 1 document, not {chunk}")


# -- 7. no pickle enters the registry or leaves it -----------------------------------

PICKLES = ("pytorch_model.bin", "optimizer.pt", "training_args.bin")


def _with_pickles(tiny: Path, folder: Path) -> Path:
    import shutil

    shutil.copytree(tiny, folder)
    for name in PICKLES:
        (folder / name).write_bytes(b"\x80\x04not a real pickle")
    (folder / "checkpoint-1").mkdir()
    (folder / "checkpoint-1" / "optimizer.pt").write_bytes(b"\x80\x04")
    (folder / "README.md").write_text("# a tiny model\n", encoding="utf-8")
    from fastbioner.models.manifest import write_manifest
    from fastbioner.models.registry import manifest_from_folder

    write_manifest(folder, manifest_from_folder(folder))
    return folder


def test_compact_import_and_export_copy_what_a_model_needs_never_a_pickle(tiny, tmp_path, capsys):
    from fastbioner.models.registry import Registry

    folder = _with_pickles(tiny, tmp_path / "trained")
    assert main(["compact", str(folder), "--keep-vocabulary", "--name", "small", "--quiet"]) == 0
    assert main(["models", "import", str(folder), "--name", "imported"]) == 0
    registry = Registry()
    for name in ("small", "imported"):
        names = {p.name for p in registry.get(name).path.iterdir()}
        assert not names & set(PICKLES) and "checkpoint-1" not in names, names
        assert {"model.safetensors", "config.json", "fastbioner.json", "README.md"} <= names
    # A pickle put into a registered model by hand is never exported.
    (registry.get("imported").path / "optimizer.pt").write_bytes(b"\x80\x04")
    dest = Path(registry.export("imported", tmp_path / "out"))
    names = {p.name for p in dest.iterdir()}
    assert not names & set(PICKLES) and "model.safetensors" in names


# -- 9. smaller ------------------------------------------------------------------------

def test_a_home_given_with_a_tilde_is_one_folder_for_registry_settings_and_autosave(tmp_path, monkeypatch):
    from fastbioner.curate.project import autosave_folder
    from fastbioner.models.registry import Registry, default_root

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("FASTBIONER_HOME", "~/x")
    assert default_root() == tmp_path / "x" / "models" == Registry().root
    assert autosave_folder() == tmp_path / "x" / "autosave"


@pytest.mark.parametrize("name", ["o.bioc.xml", "o.pubmed.xml"])
def test_a_carriage_return_survives_an_xml_export(tmp_path, name):
    from fastbioner.io.documents import Document, Span
    from fastbioner.io.formats import read_documents, write_documents

    docs = [Document("1", "Cocaine.\rSeizures\r\nfollowed.", spans=[Span(9, 17, "Disease")]),
            Document("2", "Aspirin.", spans=[Span(0, 7, "Chemical")])]
    write_documents(docs, tmp_path / name)
    back = list(read_documents(tmp_path / name))
    assert len(back) == 2  # one CR no longer aborts the whole export
    if name.startswith("o.bioc"):  # PubMed XML's reader joins white space, a CR as any other
        assert [d.text for d in back] == [d.text for d in docs]
        assert [(s.start, s.end, s.label) for d in back for s in d.spans] == [(9, 17, "Disease"), (0, 7, "Chemical")]


def test_a_title_less_document_comes_back_from_pubtator_as_it_was(tmp_path, capsys):
    from fastbioner.io.documents import Document, Span
    from fastbioner.io.formats import pubtator, read_documents, write_documents

    docs = [Document("1", "Cocaine induced seizures.", spans=[Span(0, 7, "Chemical"), Span(16, 24, "Disease")]),
            Document("2", "")]
    write_documents(docs, tmp_path / "s.jsonl")
    assert main(["convert", str(tmp_path / "s.jsonl"), str(tmp_path / "t.pubtator")]) == 0
    # The file counts the space after the empty title, as PubTator's own files do.
    assert "1\t1\t8\tCocaine\tChemical\t" in (tmp_path / "t.pubtator").read_text(encoding="utf-8")
    back = list(pubtator.read(tmp_path / "t.pubtator"))
    assert [(d.id, d.text, d.spans) for d in back] == [(d.id, d.text, d.spans) for d in docs]
    assert back[0].passages[0].start == 0
    capsys.readouterr()
    assert main(["agree", str(tmp_path / "s.jsonl"), str(tmp_path / "t.pubtator")]) == 0
    assert "2 document(s) compared" in capsys.readouterr().out
    # A document with a title reads as ever: "title abstract".
    (tmp_path / "w.pubtator").write_text("5|t|T.\n5|a|Cocaine.\n5\t3\t10\tCocaine\tChemical\n\n", encoding="utf-8")
    (doc,) = read_documents(tmp_path / "w.pubtator")
    assert doc.text == "T. Cocaine." and doc.span_text(doc.spans[0]) == "Cocaine"
    # A mention on the space of the empty title falls outside the text.
    (tmp_path / "x.pubtator").write_text("6|t|\n6|a|Cocaine.\n6\t0\t7\t Cocain\tChemical\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="fall outside the document .*after an empty title"):
        list(read_documents(tmp_path / "x.pubtator"))


def test_a_model_reads_decomposed_accents_as_the_composed_word(tiny):
    import unicodedata

    from fastbioner.infer.inference import Tagger, TaggerConfig
    from fastbioner.io.documents import Document

    nfd = "Lithium and cispla\u0301tin caused renal failure in rats."
    nfc = unicodedata.normalize("NFC", nfd)
    tagger = Tagger.load(tiny, TaggerConfig(precision="fp32", device="cpu"))
    a, b = tagger.uncertainty([Document("1", nfd), Document("1", nfc)])
    assert a.tokens == b.tokens == 9 and a.value == pytest.approx(b.value, abs=1e-6)
    chunk = tagger.tag_chunk([Document("1", nfd), Document("1", nfc)])
    spans = [[(s.label, unicodedata.normalize("NFC", d.text[s.start:s.end])) for s in d.spans]
             for d in chunk.documents]
    assert spans[0] == spans[1]


def test_stats_and_tag_read_an_input_given_twice_once_and_say_so(tiny, folder, tmp_path, capsys):
    a = folder / "a1.pubtator"
    assert main(["stats", str(a), str(a)]) == 0
    out, err = capsys.readouterr()
    assert "documents: 1" in out and "given twice" in err
    assert main(["tag", str(a), str(a), "--out", str(tmp_path / "t.jsonl"), "--format", "jsonl", "--quiet",
                 "--model", str(tiny), "--device", "cpu"]) == 0
    assert "given twice: tagged once" in capsys.readouterr().err
    assert len((tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()) == 1
