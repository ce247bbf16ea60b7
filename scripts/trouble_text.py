"""Round 3's text trouble for the sweep (scripts/trouble_round3.py): decomposed accents
(NFD), title-less documents through PubTator and CoNLL, a CR in a BioC or PubMed
export, ``FASTBIONER_HOME="~/x"`` and corrupt concept dictionaries."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

from trouble_signs import BIN, jsonl, texts_of, write

FAST = "bc5cdr-cnn-fast-v2"  # a shipped model that finds real mentions, fast on a CPU
NFC_TEXT = ("Cisplatine-induced nephrotoxicity and lithíum toxicity in patients with Ménière's disease, "
            "Guillain\u2013Barré syndrome and Sjögren's syndrome; crisis after cocaïne and naloxône. "
            "Café-au-lait spots with α-tocopherol, déjà vu and façade; acute renal failure after cisplatín.")
LOAD_DICTIONARY = """
import sys
from fastbioner.base.errors import InputError
from fastbioner.curate.concepts import ConceptDictionary
try:
    d = ConceptDictionary.load(sys.argv[1])
    d.propose("aspirin", "Chemical")
    d.complete("asp", "Chemical")
    d.complete("D00")
except InputError as exc:
    print(exc, file=sys.stderr)
    sys.exit(1)
"""


def _spans(out: str) -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in Path(out).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(unicodedata.normalize("NFC", r["text"][s["start"]:s["end"]]), s["label"])
            for r in rows for s in r.get("spans", [])], rows


def text_runs(d: Path, env: dict, T: str, R, o) -> None:
    _nfd(d, env, R, o)
    _title_less(d, env, T, R, o)
    _carriage_returns(d, env, T, R, o)
    _home_tilde(d, env, T, R)
    _dictionaries(d, R)


def _nfd(d: Path, env: dict, R, o) -> None:
    nfc = write(d / "nfc.jsonl", jsonl([{"id": "1", "text": NFC_TEXT}]))
    nfd = write(d / "nfd.jsonl", jsonl([{"id": "1", "text": unicodedata.normalize("NFD", NFC_TEXT)}]))
    ref = str(d / "nfc_tagged.jsonl")

    def same_mentions(r) -> str:
        if r.rc != 0:
            return ""
        if not Path(ref).is_file():
            subprocess.run([BIN, "tag", str(nfc), "--model", FAST, "--out", ref, "--format", "jsonl", "--quiet"],
                           env=env, capture_output=True, timeout=200)
        want, _ = _spans(ref)
        got, rows = _spans(r.argv[r.argv.index("--out") + 1])
        split = [r_["text"][s["start"] - 1:s["end"] + 1] for r_ in rows for s in r_.get("spans", [])
                 if s["end"] < len(r_["text"]) and unicodedata.combining(r_["text"][s["end"]])
                 or unicodedata.combining(r_["text"][s["start"]])]
        if split:
            return f"wrong answer: mentions split at a combining mark: {split[:3]}"
        if sorted(got) != sorted(want):
            return (f"wrong answer: NFD mentions {sorted(set(got) - set(want))[:3]} "
                    f"vs NFC {sorted(set(want) - set(got))[:3]}")
        return ""
    R("r3 nfd tag", "tag", str(nfd), "--model", FAST, "--out", o(".jsonl"), "--format", "jsonl", "--quiet",
      check=same_mentions)

    def same_tokens(r) -> str:
        ref_out = subprocess.run([BIN, "stats", str(nfc)], env=env, capture_output=True, text=True).stdout
        tokens = [re.search(r"tokens: (\d+)", x) for x in (r.out, ref_out)]
        if None in tokens or tokens[0].group(1) != tokens[1].group(1):
            said = [t.group(1) if t else None for t in tokens]
            return f"wrong answer: NFD tokens {said[0]} vs NFC {said[1]}"
        return ""
    R("r3 nfd stats tokens", "stats", str(nfd), check=same_tokens)


def _title_less(d: Path, env: dict, T: str, R, o) -> None:
    rows = [{"id": "t1", "text": "Aspirin caused headache.", "spans": [{"start": 0, "end": 7, "label": "Chemical"}]},
            {"id": "t2", "text": " Lithium toxicity after a leading space.",
             "spans": [{"start": 1, "end": 8, "label": "Chemical"}]},
            {"id": "t3", "text": "Cocaine\tuse and\tseizures.",
             "spans": [{"start": 16, "end": 24, "label": "Disease"}]},
            {"id": "t4", "text": "Line one.\nLine two: naloxone.",
             "spans": [{"start": 20, "end": 28, "label": "Chemical"}]},
            {"id": "t5", "text": "a|t|b aspirin |a| x", "spans": [{"start": 6, "end": 13, "label": "Chemical"}]},
            {"id": "t6", "text": "Trailing spaces, pain.   ", "spans": [{"start": 17, "end": 21, "label": "Disease"}]},
            {"id": "t7", "text": "  ", "spans": []}]
    src = write(d / "titleless.jsonl", jsonl(rows))
    n = len(rows)
    for fmt, how in (("pubtator", "convert"), ("conll", "convert"), ("bioc", "convert"), ("pubtator", "tag"),
                     ("pubtator", "rank")):
        out = d / f"titleless_{how}.{fmt}"
        js = str(d / f"titleless_{how}_{fmt}.json")
        cmd = {"convert": [BIN, "convert", str(src), str(out)],
               "tag": [BIN, "tag", str(src), "--model", T, "--out", str(out), "--format", fmt, "--quiet"],
               "rank": [BIN, "rank", str(src), "--model", T, "--top", "50", "--out", str(out), "--quiet"]}[how]

        def setup(cmd=cmd) -> None:
            subprocess.run(cmd, env=env, capture_output=True, timeout=200)

        def in_common(r, js=js, how=how, fmt=fmt) -> str:
            try:
                pair = json.loads(Path(js).read_text())["pairs"][0]
            except (OSError, ValueError, KeyError, IndexError):
                return "" if r.rc != 0 else "wrong answer: no --json written"
            docs = pair["documents"]
            if docs["compared"] < n - (1 if fmt == "conll" else 0):  # CoNLL cannot hold a blank document
                return f"wrong answer: {docs['compared']} of {n} documents in common ({docs})"
            if how == "convert" and pair["overall"]["f1"] != 1.0:
                return f"wrong answer: F1 {pair['overall']['f1']} against its own conversion"
            return ""
        R(f"r3 title-less agree source vs {how} {fmt}", "agree", str(src), str(out), "--json", js, setup=setup,
          check=in_common, guard=[src])

    def lossless(r) -> str:
        back = texts_of(d / "titleless_convert.pubtator")
        want = {x["id"]: x["text"] for x in rows}
        wrong = [k for k, v in want.items() if " ".join(back.get(k, "?").split()) != " ".join(v.split())]
        return f"wrong answer: PubTator round trip changed {wrong}" if wrong else ""
    R("r3 title-less pubtator round trip", "stats", str(d / "titleless_convert.pubtator"), check=lossless)


def _carriage_returns(d: Path, env: dict, T: str, R, o) -> None:
    rows = [{"id": "c1", "text": "Aspirin\rcaused headache.", "spans": [{"start": 0, "end": 7, "label": "Chemical"}]},
            {"id": "c2", "text": "CRLF\r\nline lithium.", "spans": [{"start": 11, "end": 18, "label": "Chemical"}]},
            {"id": "c3", "text": "Trailing CR\r", "spans": []}]
    src = write(d / "cr.jsonl", jsonl(rows + [{"id": f"n{i}", "text": "Plain text."} for i in range(50)]))
    want = {x["id"]: x["text"] for x in rows}
    vt = write(d / "vt.jsonl", jsonl([{"id": "c4", "text": "Other controls \x0b\x0c\x85 here."}]))

    def kept(r) -> str:
        if r.rc != 0:
            return "wrong answer: a CR aborted the export"
        out = r.argv[r.argv.index("--out") + 1] if "--out" in r.argv else r.argv[-1]
        back = texts_of(out)
        if len(back) < 53:
            return f"wrong answer: {len(back)} of 53 documents read back"
        # PubMed XML's reader collapses white space (as PubMed's own text is): a CR reads back as a space.
        same = (lambda a, b: " ".join(a.split()) == " ".join(b.split())) if "pubmed" in r.argv else str.__eq__
        changed = [k for k, v in want.items() if not same(back.get(k, "?"), v)]
        return f"wrong answer: CR not read back as itself in {changed}" if changed else ""
    for fmt in ("bioc", "pubmed"):
        R(f"r3 cr convert to {fmt}", "convert", str(src), "--to", fmt, o(".xml"), check=kept)
        # characters XML 1.0 cannot hold even as references: a clear line (the export is refused)
        R(f"r3 vertical tab convert to {fmt}", "convert", str(vt), "--to", fmt, o(".xml"))
    R("r3 cr tag to bioc", "tag", str(src), "--model", T, "--out", o(".bioc.xml"), "--format", "bioc", "--quiet",
      check=kept)
    R("r3 cr rank to bioc", "rank", str(src), "--model", T, "--top", "60", "--to", "bioc", "--out", o(".xml"),
      "--quiet", check=kept)


def _home_tilde(d: Path, env: dict, T: str, R) -> None:
    fake = d / "fakehome"
    fake.mkdir()
    cwd = d.parent  # the sweep runs every command in its temporary folder

    def where(expect: Path):
        def check(r) -> str:
            literal = [p.name for p in cwd.iterdir() if p.name.startswith("~")]
            if literal:
                return f"wrong answer: a literal {literal} folder made in the working folder"
            if r.rc == 0 and "import" in r.argv and not (expect / "models").is_dir():
                return f"wrong answer: the registry is not in {expect}"
            return ""
        return check
    for value, expect in (("~/x", fake / "x"), ("~", fake), ("~/y/../z", fake / "z")):
        e = dict(env, HOME=str(fake), FASTBIONER_HOME=value)
        R(f"r3 FASTBIONER_HOME={value} import", "models", "import", T, "--name", "h1", env=e, check=where(expect))
        R(f"r3 FASTBIONER_HOME={value} list", "models", "list", env=e, check=where(expect))


def _dictionaries(d: Path, R) -> None:
    head = "mention\tlabel\tconcept_id\tcount\n"
    cases = {"huge count": head + "aspirin\tChemical\tD1\t" + "9" * 400 + "\n",
             "negative count": head + "aspirin\tChemical\tD1\t-5\n",
             "float count": head + "aspirin\tChemical\tD1\t1e3\n",
             "fullwidth count": head + "aspirin\tChemical\tD1\t\uff11\uff12\n",
             "unclosed quote": head + "\"aspirin\tChemical\tD1\t3\n" + "x" * 200_000 + "\n",
             "three columns": head + "aspirin\tChemical\t3\n",
             "NUL": head + "asp\x00irin\tChemical\tD1\t3\n",
             "latin-1": (head + "aspirín\tChemical\tD1\t3\n").encode("latin-1"),
             "binary": os.urandom(5000), "header only": head, "empty": "", "BOM and CRLF":
             "\ufeff" + head.replace("\n", "\r\n") + "aspirin\tChemical\tD1\t3\r\n",
             "many rows of one id": head + "".join(f"m{i}\tChemical\tD1\t1\n" for i in range(50_000)),
             "escape in fields": head + "asp\x1b[2J\tChem\u202e\tD\x07\t3\n"}
    for label, data in cases.items():
        p = write(d / f"dict_{label.replace(' ', '_')}.tsv", data)
        R(f"r3 concept dictionary {label}", "-c", LOAD_DICTIONARY, str(p), prog=sys.executable)
    sparse = d / "dict_sparse.tsv"
    with open(sparse, "wb") as fh:
        fh.truncate(70 * 2**20)
    R("r3 concept dictionary over the size limit", "-c", LOAD_DICTIONARY, str(sparse), prog=sys.executable)
    R("r3 concept dictionary a folder", "-c", LOAD_DICTIONARY, str(d), prog=sys.executable)
    R("r3 concept dictionary dev-zero", "-c", LOAD_DICTIONARY, "/dev/zero", prog=sys.executable)
