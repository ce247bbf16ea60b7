"""The trouble sweep's inputs (scripts/trouble_sweep.py): hostile files of every kind a
command reads (PubTator, BIO, PubMed XML, BioC, gzips and bombs, ...) and hostile model
folders, each a copy of a tiny model with one thing broken. Generated into a folder the
sweep gives; small files only."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import random
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PUBTATOR = ("111|t|Aspirin induced headache.\n111|a|Patients with renal failure took lithium.\n"
            "111\t0\t7\tAspirin\tChemical\tD001241\n111\t16\t24\theadache\tDisease\tD006261\n\n")
ARTICLE = ("<PubmedArticle><MedlineCitation><PMID Version=\"1\">{pmid}</PMID><Article><ArticleTitle>"
           "Aspirin and headache.</ArticleTitle><Abstract><AbstractText>{text}</AbstractText></Abstract>"
           "</Article></MedlineCitation></PubmedArticle>")


def pubmed(body: str) -> str:
    return f"<?xml version=\"1.0\"?>\n<PubmedArticleSet>{body}</PubmedArticleSet>\n"


# ---------------------------------------------------------------------------- inputs
def make_inputs(d: Path) -> dict[str, Path]:
    """Hostile document files: name -> path (the name's extension picks the reader)."""
    f: dict[str, Path] = {}

    def put(name: str, data: bytes | str) -> None:
        p = d / name
        p.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
        f[name] = p

    put("ok.pubtator", PUBTATOR)
    # encodings
    put("utf16bom.pubtator", PUBTATOR.encode("utf-16"))
    put("utf16be_nobom.txt", ("Aspirin causes headache.\n" * 20).encode("utf-16-be"))
    put("utf32le_nobom.pubtator", PUBTATOR.encode("utf-32-le"))
    put("latin1.pubtator", PUBTATOR.replace("Patients", "Pati\u00e9nts").encode("latin-1"))
    put("nuls.pubtator", PUBTATOR.replace("headache", "head\0ache"))
    put("surrogate.jsonl", b'{"id": "1", "text": "bad \xed\xa0\x80 surrogate"}\n')
    put("surrogate_escape.jsonl", '{"id": "1", "text": "esc \\ud800 lone"}\n')
    put("crlf.pubtator", PUBTATOR.replace("\n", "\r\n"))
    put("cr.pubtator", PUBTATOR.replace("\n", "\r"))
    put("midbom.pubtator", PUBTATOR + "\ufeff222|t|Second.\n222|a|Cocaine.\n\n")
    put("binary.txt", bytes(random.Random(1).randrange(256) for _ in range(5000)))
    # compressed
    gz = gzip.compress(b"<x>" + b"\0" * 50_000_000 + b"</x>", 9)
    put("bomb_nuls.xml.gz", gz)
    put("bomb_text.pubtator.gz", gzip.compress(b"1|t|" + b"a" * 300_000_000, 9))
    put("bomb_lines.jsonl.gz", gzip.compress(b"\n" * 200_000_000, 9))
    good = gzip.compress(pubmed(ARTICLE.format(pmid=5, text="Lithium toxicity.")).encode())
    put("truncated.xml.gz", good[: len(good) // 2])
    put("notxml.xml.gz", gzip.compress(b"this is plain text, not XML at all\n" * 10))
    put("notgzip.xml.gz", b"\x1f\x8b\x08\x00garbage" * 10)
    put("pubtator_in_gz.pubtator.gz", gzip.compress(PUBTATOR.encode()))
    # XML
    put("deep.xml", pubmed(ARTICLE.format(pmid=6, text="<b>" * 100_000 + "x" + "</b>" * 100_000)))
    put("deep_top.xml", pubmed("<a>" * 200_000 + "</a>" * 200_000))
    put("hugeattr.xml", pubmed(f"<PubmedArticle x=\"{'a' * 20_000_000}\"/>"))
    put("siblings.xml", pubmed(ARTICLE.format(pmid=7, text="<i/>" * 1_000_000)))
    put("entities.xml", '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">'
        + "".join(f'<!ENTITY {c}{i} "{("&a;" if i == 0 else f"&{c}{i-1};") * 10}">' for c in "b" for i in range(9))
        + f']><PubmedArticleSet>{ARTICLE.format(pmid=8, text="&b8;")}</PubmedArticleSet>')
    put("ext_entity.xml", '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
        + f"<PubmedArticleSet>{ARTICLE.format(pmid=9, text='&e;')}</PubmedArticleSet>")
    put("cdata.xml", pubmed(ARTICLE.format(pmid=10, text="<![CDATA[aspirin <b> & headache]]>")))
    put("invalid_chars.xml", pubmed(ARTICLE.format(pmid=11, text="bad \x01\x02 char")))
    put("undefined_entity.xml", pubmed(ARTICLE.format(pmid=12, text="&nope;")))
    put("bioc_deep.bioc.xml", "<collection>" + "<document>" * 50_000 + "</document>" * 50_000 + "</collection>")
    put("bioc_bad_offsets.bioc.xml", "<collection><source>x</source><date>d</date><key>k</key><document><id>1</id>"
        "<passage><offset>-99999999999999999999</offset><text>Aspirin</text><annotation id=\"1\">"
        "<infon key=\"type\">Chemical</infon><location offset=\"99999999999999999999\" length=\"-3\"/>"
        "<text>Aspirin</text></annotation></passage></document></collection>")
    put("bioc_notint.bioc.xml", "<collection><document><id>1</id><passage><offset>zero</offset>"
        "<text>Aspirin</text><annotation id=\"1\"><infon key=\"type\">Chemical</infon>"
        "<location offset=\"\u0661\" length=\"\uff17\"/><text>Aspirin</text>"
        "</annotation></passage></document></collection>")
    put("deletecitation_digits.xml", pubmed(ARTICLE.format(pmid=123, text="Aspirin.")
                                            + "<DeleteCitation><PMID>\u00b9\u00b2\u00b3</PMID></DeleteCitation>"))
    # PubTator
    put("offsets_out.pubtator", "1|t|Short.\n1|a|Text.\n1\t5\t9999999\tx\tChemical\t-\n\n")
    put("offsets_neg.pubtator", "1|t|Short.\n1|a|Text.\n1\t-5\t3\tx\tChemical\t-\n\n")
    put("offsets_huge.pubtator", "1|t|Short.\n1|a|Text.\n1\t" + "9" * 5000 + "\t" + "9" * 5000 + "\tx\tChemical\t-\n\n")
    put("offsets_float.pubtator", "1|t|Short.\n1|a|Text.\n1\t1e3\tnan\tx\tChemical\t-\n\n")
    put("offsets_unicode.pubtator", "1|t|Short.\n1|a|Text.\n1\t\u0661\t\uff13\tx\tChemical\t-\n\n")
    put("longline.pubtator", "1|t|" + "word " * 2_000_000 + "\n1|a|x\n\n")
    put("missing_fields.pubtator", "1|t|Aspirin.\n1\t0\n1\n|t|\n||\n\n")
    put("dup_ids.pubtator", PUBTATOR * 3)
    put("id_superscript.pubtator", PUBTATOR.replace("111", "\u00b2"))
    put("id_arabic.pubtator", PUBTATOR.replace("111", "\u0661\u0662\u0663"))
    put("id_fullwidth.pubtator", PUBTATOR + PUBTATOR.replace("111", "\uff11\uff11\uff11"))
    put("id_huge.pubtator", PUBTATOR.replace("111", "9" * 400))
    put("id_empty.pubtator", PUBTATOR.replace("111", ""))
    # JSONL
    put("jsonl_notobj.jsonl", "[1,2,3]\n\"s\"\n42\nnull\n")
    put("jsonl_badtypes.jsonl", '{"id": 5, "text": 7, "spans": "x"}\n{"id": null, "text": null}\n')
    put("jsonl_spans_out.jsonl", '{"id": "1", "text": "Aspirin", '
                                 '"spans": [{"start": -1, "end": 99999999999999999999, "label": "Chemical"}]}\n')
    put("jsonl_spans_bad.jsonl", '{"id": "1", "text": "Aspirin", '
                                 '"spans": [{"start": "a", "end": [], "label": {}}, 5, null]}\n')
    put("jsonl_spans_nan.jsonl", '{"id": "1", "text": "Aspirin", '
                                 '"spans": [{"start": NaN, "end": Infinity, "label": "Chemical"}]}\n')
    put("jsonl_deep.jsonl", "[" * 100_000 + "]" * 100_000 + "\n")
    put("jsonl_dup.jsonl", '{"id": "1", "text": "Aspirin."}\n' * 3)
    put("jsonl_id_digits.jsonl", '{"id": "\u0663", "text": "Aspirin."}\n{"id": "3", "text": "Lithium."}\n'
        '{"id": "\u00b3", "text": "x"}\n')
    put("jsonl_bigint.jsonl", '{"id": ' + "9" * 5000 + ', "text": "Aspirin."}\n')
    put("jsonl_truncated.jsonl", '{"id": "1", "text": "Aspi')
    # CoNLL
    put("conll_missing.conll", "Aspirin\nB-Chemical\n\tB-Disease\n\t\n")
    put("conll_badtags.conll", "Aspirin\tI-\nx\tB-\ny\tZZZ\nz\tI-Disease-Extra\n")
    put("conll_manycols.conll", "a" + "\tb" * 1000 + "\n")
    put("conll_longtoken.conll", "a" * 5_000_000 + "\tO\n")
    put("conll_docstart_only.conll", "-DOCSTART- -X- O O\n" * 1000)
    # other
    put("medline_bad.medline", "PMID- \u0661\u0662\nTI  - x\nAB  - " + "y" * 100 + "\n      continuation\nXX\n")
    put("empty.pubtator", b"")
    put("only_newlines.txt", b"\n" * 10000)
    put("sparse.txt", b"")
    with open(d / "sparse.txt", "r+b") as fh:  # 1 GB sparse: no disk, all NULs
        fh.truncate(2**30)
    return f


def load_test_helper(name: str):
    """A helper module of tests/ (tiny_models, eutils_fake), loaded from its file: this
    script runs as a file, with no sys.path edit (none is allowed, tests included)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def tiny_model(d: Path) -> Path:
    return load_test_helper("tiny_models").make_tiny_model(d / "tiny")


def safetensors_bytes(header: dict, data: bytes) -> bytes:
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


def make_models(d: Path, tiny: Path) -> dict[str, Path]:
    """Hostile model folders, each a copy of the tiny model with one thing broken."""
    import shutil
    out: dict[str, Path] = {}
    cfg = json.loads((tiny / "config.json").read_text())

    def variant(name: str, change=None, files: dict[str, bytes | None] | None = None) -> None:
        p = d / name
        shutil.copytree(tiny, p)
        if change is not None:
            c = json.loads(json.dumps(cfg))
            change(c)
            (p / "config.json").write_text(json.dumps(c))
        for fn, data in (files or {}).items():
            (p / fn).unlink(missing_ok=True)
            if data is not None:
                (p / fn).write_bytes(data)
        out[name] = p

    weights = (tiny / "model.safetensors").read_bytes()
    hlen = struct.unpack("<Q", weights[:8])[0]
    variant("m_trunc_st", files={"model.safetensors": weights[: len(weights) * 2 // 3]})
    variant("m_trunc_header", files={"model.safetensors": weights[: 8 + hlen // 2]})
    variant("m_2p62", files={"model.safetensors": struct.pack("<Q", 2**62) + weights[8:]})
    variant("m_2p63", files={"model.safetensors": struct.pack("<Q", 2**64 - 1) + weights[8:]})
    variant("m_st_offsets", files={"model.safetensors": safetensors_bytes(
        {"bert.embeddings.word_embeddings.weight": {"dtype": "F32", "shape": [2**40, 2**20],
                                                    "data_offsets": [0, 2**62]}}, b"\0" * 64)})
    variant("m_st_neg_shape", files={"model.safetensors": safetensors_bytes(
        {"x": {"dtype": "F32", "shape": [-1, 4], "data_offsets": [0, 16]}}, b"\0" * 16)})
    variant("m_st_baddtype", files={"model.safetensors": safetensors_bytes(
        {"x": {"dtype": "Q99", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 16)})
    variant("m_st_random", files={"model.safetensors": os.urandom(4096)})
    variant("m_st_empty", files={"model.safetensors": b""})
    variant("m_st_missing", files={"model.safetensors": None})
    variant("m_pickle_only", files={"model.safetensors": None, "pytorch_model.bin": b"\x80\x04K\x01."})
    variant("m_cfg_random", files={"config.json": os.urandom(2000)})
    variant("m_cfg_list", files={"config.json": b"[1, 2]"})
    variant("m_cfg_missing", files={"config.json": None})
    variant("m_cfg_deep", files={"config.json": b"{\"a\":" * 50_000 + b"1" + b"}" * 50_000})
    variant("m_hidden_float", lambda c: c.update(hidden_size=32.5))
    variant("m_hidden_bool", lambda c: c.update(hidden_size=True))
    variant("m_hidden_list", lambda c: c.update(hidden_size=[32]))
    variant("m_layers_neg", lambda c: c.update(num_hidden_layers=-2))
    variant("m_layers_str", lambda c: c.update(num_hidden_layers="2"))
    variant("m_heads_huge", lambda c: c.update(num_attention_heads=10**30))
    variant("m_interm_huge", lambda c: c.update(intermediate_size=2**40))
    variant("m_vocab_zero", lambda c: c.update(vocab_size=0))
    variant("m_eps_nan", files={"config.json": json.dumps(cfg).replace('"layer_norm_eps": 1e-12',
                                                                        '"layer_norm_eps": NaN').encode()})
    variant("m_id2label_int_values", lambda c: c.update(id2label={"0": 1, "1": 2}))
    variant("m_id2label_sparse", lambda c: c.update(id2label={"0": "O", "7": "B-X"}, label2id={"O": 0, "B-X": 7}))
    variant("m_id2label_neg", lambda c: c.update(id2label={"-1": "O", "0": "B-X"}))
    variant("m_label2id_bad", lambda c: c.update(label2id=[1, 2, 3]))
    variant("m_model_type_odd", lambda c: c.update(model_type="../../etc", architectures=["Evil"]))
    variant("m_model_type_int", lambda c: c.update(model_type=5, architectures=None))
    variant("m_automap", lambda c: c.update(auto_map={"AutoModelForTokenClassification": "evil.Model"}))
    variant("m_maxpos_huge", lambda c: c.update(max_position_embeddings=10**7))
    variant("m_tok_random", files={"tokenizer.json": os.urandom(3000)})
    variant("m_tok_json_wrong", files={"tokenizer.json": b'{"model": {"type": "Nope"}, "version": 5}'})
    variant("m_tok_missing", files={"tokenizer.json": None, "vocab.txt": None})
    variant("m_tokcfg_random", files={"tokenizer_config.json": os.urandom(500)})
    variant("m_tokcfg_weird", files={"tokenizer_config.json": b'{"model_max_length": -1, '
                                                              b'"tokenizer_class": "os.system"}'})
    variant("m_vocab_random", files={"tokenizer.json": None, "vocab.txt": os.urandom(3000)})
    variant("m_manifest_random", files={"fastbioner.json": os.urandom(300)})
    variant("m_manifest_list", files={"fastbioner.json": b"[]"})
    variant("m_manifest_fmt_neg", files={"fastbioner.json": b'{"manifest_format": -3}'})
    variant("m_manifest_fmt_huge", files={"fastbioner.json": b'{"manifest_format": 99999999999999999999999}'})
    variant("m_manifest_labels_bad", files={"fastbioner.json": b'{"manifest_format": 1, "labels": 5}'})
    variant("m_manifest_kind_odd", files={"fastbioner.json": b'{"manifest_format": 1, "kind": ["x"], "name": 7}'})
    variant("m_manifest_name_path", files={"fastbioner.json": b'{"manifest_format": 1, "name": "../../evil"}'})
    # links and non-folders
    for name, file in (("m_link_zero", "model.safetensors"), ("m_cfg_link_zero", "config.json"),
                       ("m_tok_link_zero", "tokenizer.json")):  # a file replaced by a link to /dev/zero
        p = d / name
        shutil.copytree(tiny, p)
        (p / file).unlink()
        os.symlink("/dev/zero", p / file)
        out[name] = p
    p = d / "m_cfg_dir"
    shutil.copytree(tiny, p)
    (p / "config.json").unlink()
    (p / "config.json").mkdir()
    out["m_cfg_dir"] = p
    p = d / "m_is_file"
    p.write_text("not a folder")
    out["m_is_file"] = p
    p = d / "m_empty_dir"
    p.mkdir()
    out["m_empty_dir"] = p
    p = d / "m_unreadable_cfg"
    shutil.copytree(tiny, p)
    (p / "config.json").chmod(0)
    out["m_unreadable_cfg"] = p
    return out


# Model folders every command is run on (the rest: tag, models import, models show).
HEAVY = {"m_trunc_st", "m_2p62", "m_cfg_random", "m_tok_random", "m_link_zero", "m_is_file",
         "m_id2label_sparse", "m_eps_nan", "m_manifest_random", "m_vocab_random"}
