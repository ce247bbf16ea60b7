"""``fastbioner convert`` and ``fastbioner stats`` as a user runs them."""

from __future__ import annotations

from fastbioner.cli.main import main

PUBTATOR = ("1|t|Cocaine toxicity.\n1|a|Seizures and 5-HT3 block followed cocaine use.\n"
            "1\t0\t7\tCocaine\tChemical\tD003042\n1\t8\t16\ttoxicity\tDisease\tD064420\n"
            "1\t18\t26\tSeizures\tSpecificDisease\tD012640\n1\t31\t35\t5-HT\tChemical\tD012701\n"
            "1\tCID\tD003042\tD064420\n\n")


def test_convert_then_stats(tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text(PUBTATOR)
    out = tmp_path / "out.conll"
    assert main(["convert", str(src), str(out), "--map-label", "SpecificDisease=Disease"]) == 0
    printed = capsys.readouterr()
    assert "wrote 1 document(s), 3 span(s)" in printed.out
    assert "1 span(s) off token boundaries not written" in printed.out
    assert "document 1, Chemical at 31..35" in printed.err
    assert out.read_text().startswith("-DOCSTART- 1\n\nCocaine\tB-Chemical\ntoxicity\tB-Disease\n.\tO\n\n"
                                      "Seizures\tB-Disease\n")
    assert main(["stats", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "documents: 1" in lines and "sentences: 2" in lines and "tokens: 13" in lines
    assert "  Chemical: 1" in lines and "  Disease: 2" in lines
    assert main(["stats", str(src)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  Chemical: 2 (1 off token boundaries)" in lines and "spans off token boundaries: 1" in lines


def test_convert_with_explicit_formats_and_scheme(tmp_path, capsys):
    src = tmp_path / "in.data"
    src.write_text(PUBTATOR)
    out = tmp_path / "out.data"
    assert main(["convert", str(src), str(out), "--from", "pubtator", "--to", "bio", "--scheme", "iobes"]) == 0
    assert "Cocaine\tS-Chemical" in out.read_text()
    assert main(["convert", str(out), str(tmp_path / "back.jsonl"), "--from", "conll", "--in-scheme", "IOBES"]) == 0
    assert '"label": "Chemical"' in (tmp_path / "back.jsonl").read_text()


def test_errors_are_one_line_and_leave_no_output(tmp_path, capsys):
    bad = tmp_path / "bad.pubtator"
    bad.write_text(PUBTATOR.replace("\tCocaine\t", "\tHeroin\t"))
    out = tmp_path / "out.conll"
    assert main(["convert", str(bad), str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"fastbioner: error: {bad}:3: mention text 'Heroin' does not match the text at 0..7 ('Cocaine')"]
    assert not out.exists()
    out = tmp_path.parent / f"{tmp_path.name}-out.conll"  # outside the folder read (issue 70)
    assert main(["convert", str(tmp_path), str(out)]) == 2  # a folder: the bad file is reported and skipped
    err = capsys.readouterr().err
    assert "(file skipped)" in err and f"{tmp_path}: no documents found; nothing written" in err
    assert not out.exists()
    assert main(["stats", str(tmp_path / "nope.conll")]) == 2
    assert "nope.conll: no such file" in capsys.readouterr().err


def test_invalid_bio_warns_in_one_line_or_fails_on_request(tmp_path, capsys):
    src = tmp_path / "in.conll"
    src.write_text("Cocaine\tI-Chemical\nkills\tO\n\n")
    assert main(["convert", str(src), str(tmp_path / "o.jsonl")]) == 0
    assert capsys.readouterr().err.strip() == (f"fastbioner: warning: {src}:1: repaired 1 I- tag(s) that did not "
                                               "continue an entity (they now open one): lines 1")
    assert main(["convert", str(src), str(tmp_path / "o2.jsonl"), "--on-invalid", "error"]) == 2
    assert not (tmp_path / "o2.jsonl").exists()


def test_convert_gzipped_pubmed_update_files_lists_their_deletions(tmp_path, capsys):
    from pubmed_files import article, write_pubmed_gz

    folder = tmp_path / "updates"
    folder.mkdir()
    write_pubmed_gz(folder / "pubmed25n0002.xml.gz", [article(7, "Lithium toxicity.", "Renal failure.")],
                    deleted=[3, 4])
    write_pubmed_gz(folder / "pubmed25n0003.xml.gz", [article(8, "Cocaine.", "Seizures.")], deleted=[5])
    out = tmp_path / "out.jsonl"
    for src in (folder / "pubmed25n0002.xml.gz", folder):
        assert main(["convert", str(src), str(out)]) == 0
        printed = capsys.readouterr().out
        assert "PMID(s) deleted by <DeleteCitation>" in printed
    assert "3 PMID(s) deleted by <DeleteCitation>" in printed and ": 3, 4, 5" in printed
    assert "wrote 2 document(s)" in printed
