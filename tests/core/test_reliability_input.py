"""Hostile and unusual inputs (issue 52): small files that would take all the memory,
devices, pipes read once, text in UTF-16/32, ids with non-ASCII digits. Each gets one
line naming the file (or is read as a stream), never a traceback. Limits are lowered
through ``ReadLimits`` so every input stays tiny; memory is checked with tracemalloc
peaks (bytes), never with time."""

from __future__ import annotations

import gzip
import json
import os
import threading
import tracemalloc
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fastbioner.cli.main import main
from fastbioner.io.documents import Document
from fastbioner.base.errors import InputError
from fastbioner.io.formats import ReadLimits, read_documents, write_documents
from fastbioner.io.formats.pubmed_xml import PubmedReader
from pubmed_files import article, write_pubmed_gz
from tiny_models import make_tiny_model

HEAD = '<?xml version="1.0"?>\n<PubmedArticleSet>\n'
TAIL = "</PubmedArticleSet>\n"


def gz(path: Path, *parts: str | bytes) -> Path:
    with gzip.open(path, "wb") as fh:
        for part in parts:
            fh.write(part.encode() if isinstance(part, str) else part)
    return path


def peak_bytes_while(fn) -> int:
    """Peak bytes Python allocated while ``fn`` ran (tracemalloc: counts, not time)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def drain(path, fmt=None, **options) -> int:
    return sum(1 for _ in read_documents(path, fmt, **options))


# -- PubMed XML: every top-level element dropped, and limits ----------------------------

def test_many_empty_siblings_in_a_small_gzip_are_one_line(tmp_path):
    path = gz(tmp_path / "bomb.xml.gz", HEAD, article(1, "Cocaine.", "Rats."), "<a/>" * 50_000, TAIL)
    assert path.stat().st_size < 10_000
    with pytest.raises(InputError, match=r"bomb\.xml\.gz: more than 1,000 top-level elements that are not "
                                         r"records"):
        drain(path, limits=ReadLimits(max_xml_other_elements=1000))


def test_one_huge_abstract_is_refused_before_it_is_held(tmp_path):
    body = "x" * (2 << 20)  # 2 MiB of text, gzipped to a few kB
    path = gz(tmp_path / "text.xml.gz", HEAD, article(1, "T.", "Rats."), article(2, "Title.", body), TAIL)
    limits = ReadLimits(max_xml_record_bytes=256 << 10)
    errors = []

    def read() -> None:
        try:
            drain(path, limits=limits)
        except InputError as exc:
            errors.append(str(exc))

    peak = peak_bytes_while(read)
    assert len(errors) == 1 and errors[0].startswith(
        f"{path}: a <PubmedArticle> (top-level element 2, the one after PMID 1) holds more than 262,144 bytes")
    assert peak < 1 << 20  # the 2 MiB text was never held whole


def test_elements_inside_one_record_and_deleted_pmids_are_limited(tmp_path):
    many = article(1, "T.", "Rats.").replace("<Journal>", "<Journal>" + "<x/>" * 5000)
    path = gz(tmp_path / "deep.xml.gz", HEAD, many, TAIL)
    with pytest.raises(InputError, match=r"deep\.xml\.gz: a <PubmedArticle> .* holds more than 1,000 elements"):
        drain(path, limits=ReadLimits(max_xml_record_elements=1000))
    path = write_pubmed_gz(tmp_path / "del.xml.gz", [article(1, "T.", "A.")], deleted=list(range(2, 600)))
    with pytest.raises(InputError, match=r"del\.xml\.gz: <DeleteCitation> blocks withdraw more than 500 PMIDs"):
        drain(path, limits=ReadLimits(max_deleted_pmids=500))
    reader = PubmedReader(path)  # within the default limits: read as before
    assert [d.id for d in reader] == ["1"] and len(reader.deleted) == 598


def test_every_top_level_element_is_dropped_as_it_is_read(tmp_path):
    """Unknown top-level elements between records (skipped) are cleared like records:
    the reader holds one at a time, so its peak stays far below the file's size."""
    filler = "<Unknown>" + "y" * 20_000 + "</Unknown>\n"
    records = [article(p, f"Title {p}.", "Cocaine and rats.") + filler for p in range(1, 301)]
    path = gz(tmp_path / "mixed.xml.gz", HEAD, *records, TAIL)
    size = sum(len(r) for r in records)
    assert size > 6_000_000
    ids = []
    peak = peak_bytes_while(lambda: ids.extend(d.id for d in PubmedReader(path)))
    assert ids == [str(p) for p in range(1, 301)]
    assert peak < size / 8, (peak, size)


# -- devices, pipes, /dev/stdin ----------------------------------------------------------

@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_a_character_device_is_refused_in_one_line(tmp_path, capsys):
    for fmt in ("text", "jsonl", "pubtator", "bioc", "pubmed"):
        with pytest.raises(InputError, match=r"^/dev/zero: cannot read a character device"):
            drain("/dev/zero", fmt)
    rc = main(["convert", "--from", "text", "/dev/zero", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "character device" in err
    assert not (tmp_path / "o.jsonl").exists()


def _fifo_with(tmp_path: Path, data: bytes) -> Path:
    fifo = tmp_path / "in.pipe"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as fh:
            fh.write(data)

    threading.Thread(target=feed, daemon=True).start()
    return fifo


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny-tagger"), seed=3)


def pubtator_text(n: int) -> str:
    return "".join(f"{i}|t|Cocaine induced seizures in rats number {i}.\n{i}|a|Rats were given cocaine.\n\n"
                   for i in range(1, n + 1))


@pytest.mark.parametrize("command", ["tag", "rank"])
def test_a_chunk_larger_than_any_index_tags_everything_at_once(tmp_path, tiny, capsys, command):
    """--chunk 10^20 (past sys.maxsize) means all documents in one chunk: every
    document written, not a ValueError traceback from islice."""
    src = tmp_path / "d.pubtator"
    src.write_text(pubtator_text(3), encoding="utf-8")
    out = tmp_path / "o.jsonl"
    extra = ["--format", "jsonl"] if command == "tag" else ["--top", "3"]
    rc = main([command, str(src), "--model", str(tiny), "--out", str(out), *extra, "--chunk", str(10**20),
               "--quiet", "--precision", "fp32", "--threads", "1"])
    assert rc == 0, capsys.readouterr().err
    assert sorted(json.loads(line)["id"] for line in out.read_text().splitlines()) == ["1", "2", "3"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_tag_reads_a_named_pipe_once_and_tags_it(tmp_path, tiny, capsys):
    fifo = _fifo_with(tmp_path, pubtator_text(5).encode())
    out = tmp_path / "o.jsonl"
    rc = main(["tag", str(fifo), "--input-format", "pubtator", "--model", str(tiny), "--out", str(out),
               "--format", "jsonl", "--quiet", "--precision", "fp32", "--threads", "1"])
    assert rc == 0, capsys.readouterr().err
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["1", "2", "3", "4", "5"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_every_reader_reads_a_pipe_as_it_comes(tmp_path):
    docs = [Document(str(i), f"Cocaine and rats {i}.") for i in range(3)]
    for fmt, name in (("jsonl", "d.jsonl"), ("pubtator", "d.pubtator"), ("medline", "d.nbib"),
                      ("conll", "d.conll"), ("text", "d.txt"), ("bioc", "d.bioc.xml"), ("pubmed", "d.pubmed.xml")):
        src = tmp_path / name
        write_documents(docs, src, fmt)
        fifo = _fifo_with(tmp_path, src.read_bytes())
        assert drain(fifo, fmt) == 3, fmt
        fifo.unlink()


# -- text encodings and sizes --------------------------------------------------------------

@pytest.mark.parametrize("encoding, name", [("utf-16-le", "UTF-16LE"), ("utf-16-be", "UTF-16BE"),
                                            ("utf-32-le", "UTF-32LE"), ("utf-32-be", "UTF-32BE"),
                                            ("utf-16", "UTF-16"), ("utf-32", "UTF-32")])
@pytest.mark.parametrize("fmt, ext", [("text", ".txt"), ("pubtator", ".pubtator"), ("jsonl", ".jsonl"),
                                      ("bioc", ".bioc.xml"), ("conll", ".conll")])
def test_utf16_and_utf32_text_is_refused_with_how_to_convert(tmp_path, encoding, name, fmt, ext):
    text = pubtator_text(2) if fmt == "pubtator" else '{"id": "1", "text": "Cocaine."}\n' * 3
    path = tmp_path / f"in{ext}"
    path.write_bytes(text.encode(encoding))
    with pytest.raises(InputError, match=rf"in{ext}: looks like {name} text .*iconv -f {name} -t UTF-8"):
        drain(path, fmt)


def test_a_sparse_file_is_refused_unread(tmp_path):
    for ext in (".txt", ".jsonl", ".pubtator", ".conll", ".nbib", ".bioc.xml"):
        path = tmp_path / f"sparse{ext}"
        with open(path, "wb") as fh:
            fh.truncate(1 << 30)  # 1 GiB of holes: no disk, and never read into memory
        peak = peak_bytes_while(lambda: pytest.raises(InputError, drain, path))  # noqa: B023
        with pytest.raises(InputError, match=rf"sparse{ext}: (binary data|larger than the 64 MiB)"):
            drain(path)
        assert peak < 4 << 20


def test_long_lines_and_large_documents_are_refused_in_one_line(tmp_path):
    path = tmp_path / "long.jsonl"
    path.write_text('{"id": "1", "text": "ok"}\n{"id": "2", "text": "' + "x" * 300_000 + '"}\n')
    with pytest.raises(InputError, match=r"long\.jsonl:2: line longer than 262,144 bytes"):
        drain(path, limits=ReadLimits(max_line_bytes=256 << 10))
    with pytest.raises(InputError, match=r"long\.jsonl:2: a text of 300,000 characters, over the 1,000"):
        drain(path, limits=ReadLimits(max_document_chars=1000))
    block = tmp_path / "block.txt"
    block.write_text("Short.\n\n" + "A line of words.\n" * 200)
    with pytest.raises(InputError, match=r"block\.txt:3: a block \(document\) of more than 1,000 characters"):
        drain(block, limits=ReadLimits(max_document_chars=1000))
    pt = tmp_path / "many.pubtator"
    pt.write_text("1|t|Cocaine.\n1|a|Rats.\n" + "1\t0\t7\tCocaine\tChemical\n" * 50 + "\n")
    with pytest.raises(InputError, match=r"many\.pubtator:13: document 1: more than 10 mention"):
        drain(pt, limits=ReadLimits(max_annotations=10))


@pytest.mark.parametrize("fmt, name", [("pubtator", "big.pubtator"), ("jsonl", "big.jsonl"),
                                       ("text", "big.txt"), ("conll", "big.conll"), ("medline", "big.nbib")])
def test_line_readers_hold_one_document_not_the_file(tmp_path, fmt, name):
    path = tmp_path / name
    if fmt == "conll":  # long tokens: fewer of them to split, the same bytes
        word = "Cocaine-induced-seizures-in-rats-were-observed"
        sentence = "".join(f"{word}{k}\t{'B-Chemical' if k % 7 == 0 else 'O'}\n" for k in range(40))
        path.write_text("".join(f"-DOCSTART- {i}\n\n{sentence}\n" for i in range(1400)))
    else:
        docs = [Document(str(i), ("Cocaine induced seizures in rats. " * 60).strip()) for i in range(1500)]
        write_documents(docs, path, fmt)
    size = path.stat().st_size
    assert size > 2_500_000
    peak = peak_bytes_while(lambda: drain(path))
    assert peak < size / 8, (peak, size)


# -- ids with non-ASCII digits are ids of their own -------------------------------------------

def test_non_ascii_digit_ids_are_never_pmids():
    from fastbioner.scale.updates import InputScan, resolve

    scans = [InputScan.of("a", ["123", "²", "١٢٣"]),
             InputScan.of("b", ["１２３", "٣"], deleted=["١٢٣", "７"]),
             InputScan.of("c", ["7"], deleted=["²"])]
    assert scans[0].ids == ["123", "²", "١٢٣"] and scans[1].ids == ["１２３", "٣"]
    r = resolve(scans)
    # "١٢٣" deletes only the document whose id is exactly "١٢٣", never PMID 123; "７" is
    # not PMID 7; "²" (which int() refuses) deletes its namesake.
    assert [k.tolist() for k in r.keep] == [[True, False, False], [True, True], [True]]
    assert r.superseded == 0 and r.deleted_dropped == 2


def test_tag_corpus_keeps_non_ascii_digit_ids_apart(tmp_path, tiny):
    from fastbioner.infer.inference import TaggerConfig
    from fastbioner.scale import CorpusOptions, tag_corpus

    a = tmp_path / "in" / "a.jsonl"
    b = tmp_path / "in" / "b.jsonl"
    write_documents([Document("123", "Cocaine and rats."), Document("²", "Seizures.")], a)
    write_documents([Document("١٢٣", "Rats given cocaine."), Document("１２３", "More seizures.")], b)
    up = write_pubmed_gz(tmp_path / "in" / "c.xml.gz", [article(9, "Title.", "Rats.")], deleted=["١٢٣"])
    summary = tag_corpus([a, b, up], tmp_path / "out", tiny, TaggerConfig(precision="fp32", threads=1),
                         CorpusOptions())
    shards = sorted((tmp_path / "out" / "current").glob("*.parquet"))
    ids = {p.name: pq.read_table(p).column("pmid").to_pylist() for p in shards}
    assert ids == {"a.parquet": ["123", "²"], "b.parquet": ["１２３"], "c.parquet": ["9"]}
    assert summary.superseded == 0 and summary.deleted_dropped == 1


# -- folders: a bad file left out whole, a large one not held ---------------------------------

def test_a_large_file_of_a_folder_is_checked_then_streamed_not_held(tmp_path):
    import warnings

    from fastbioner.base.errors import InputWarning
    from fastbioner.io.formats import read_any

    folder = tmp_path / "in"
    folder.mkdir()
    docs = [Document(str(i), ("Cocaine induced seizures in rats. " * 60).strip()) for i in range(1500)]
    write_documents(docs, folder / "a.jsonl")
    bad = folder / "b.jsonl"
    write_documents(docs[:50], bad)
    with open(bad, "a", encoding="utf-8") as fh:
        fh.write("not json\n")  # its last line: the file is left out whole, never half of it
    (folder / "c.conll").write_text("Cocaine\tI-Chemical\n\n" * 3)  # repaired, warned once
    limits = ReadLimits(max_held_chars=10_000)
    size = (folder / "a.jsonl").stat().st_size
    ids: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InputWarning)
        batch = read_any([folder], limits=limits)
        peak = peak_bytes_while(lambda: ids.extend(d.id for d in batch))
    assert ids == [str(i) for i in range(1500)] + ["c:1", "c:3", "c:5"]
    assert [e.path for e in batch.errors] == [str(bad)] and "b.jsonl:51" in str(batch.errors[0])
    assert len([w for w in caught if issubclass(w.category, InputWarning)]) == 1
    assert peak < size / 8, (peak, size)


@pytest.mark.parametrize("inside", ['<PubmedArticle a="{big}"/>', "<!--{big}-->", "<Unknown>{big}</Unknown>"])
def test_one_huge_token_is_cut_short(tmp_path, inside):
    """An attribute, comment or text of many megabytes is one token to expat, rescanned
    on every block fed: it is refused at the token limit, before that cost grows."""
    big = "z" * (3 << 20)
    path = gz(tmp_path / "token.xml.gz", HEAD, article(1, "T.", "A."), inside.format(big=big), TAIL)
    with pytest.raises(InputError, match=r"token\.xml\.gz: .* holds more than 262,144 bytes of XML without an "
                                         r"element starting or ending"):
        drain(path, limits=ReadLimits(max_xml_token_bytes=256 << 10))


def test_a_line_of_countless_columns_is_refused(tmp_path):
    pt = tmp_path / "tabs.pubtator"
    pt.write_text("1|t|Cocaine.\n1|a|Rats.\n1\tCID" + "\t" * 5000 + "\n\n")
    with pytest.raises(InputError, match=r"tabs\.pubtator:3: more than 64 tab-separated columns"):
        drain(pt)
    conll = tmp_path / "spaces.conll"
    conll.write_text("a " * 5000 + "O\n")
    with pytest.raises(InputError, match=r"spaces\.conll:1: more than 64 columns"):
        drain(conll)
