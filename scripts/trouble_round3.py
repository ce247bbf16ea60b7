"""Round 3's kinds of trouble (issue 70) for scripts/trouble_sweep.py: outputs where a
command reads, tag-corpus inputs sharing a stem and a foreign --out, agreement on
documents with many mentions, the fine-tune and resume tracebacks, terminal escapes
from files and model manifests, pickles in the registry, duplicated and corrupt inputs,
Unicode (NFD), title-less PubTator, a CR in BioC, FASTBIONER_HOME with ~ and corrupt
concept dictionaries. Each run's own check (``check=``) says when an answer is wrong;
``guard=`` names the inputs that must come out unchanged."""

from __future__ import annotations

import atexit
import json
import os
import pickle
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from trouble_signs import BIN, ids_of, jsonl, must_refuse, one_line_about, view_ids, write
from trouble_text import text_runs

ESC = "\x1b]0;pwned\x07\x1b[2J\u202eevil\x9b31m"
DOC = "{i}|t|Aspirin induced headache.\n{i}|a|Patients took lithium.\n{i}\t0\t7\tAspirin\tChemical\tD1\n\n"


def pubtator(ids) -> str:
    return "".join(DOC.format(i=i) for i in ids)


def pubmed_xml(pmids, deleted=()) -> str:
    arts = "".join(f"<PubmedArticle><MedlineCitation><PMID Version=\"1\">{p}</PMID><Article><ArticleTitle>"
                   f"Aspirin {p}.</ArticleTitle><Abstract><AbstractText>Lithium toxicity.</AbstractText>"
                   f"</Abstract></Article></MedlineCitation></PubmedArticle>" for p in pmids)
    dels = "".join(f"<DeleteCitation><PMID Version=\"1\">{p}</PMID></DeleteCitation>" for p in deleted)
    return f"<?xml version=\"1.0\"?>\n<PubmedArticleSet>{arts}{dels}</PubmedArticleSet>\n"


def refused_or(pred):
    """A check: a non-zero exit (the refusal is judged by the other signs), or an exit 0
    whose answer ``pred(run)`` finds right (it returns what is wrong, or "")."""
    return lambda r: "" if r.rc != 0 else pred(r)


def quiet_fail(r) -> str:
    """A refusal must be a line or two, not a page."""
    lines = [ln for ln in r.out.splitlines() if ln.strip()]
    return "" if r.rc == 0 or len(lines) <= 3 else f"wrong answer: {len(lines)} lines for one refusal"


def both(*checks):
    return lambda r: "; ".join(s for s in (c(r) for c in checks) if s)


def round3_runs(tmp: Path, env: dict, T: str, R, o) -> None:
    d = tmp / "r3"
    d.mkdir()
    _writes_where_it_reads(d, env, T, R, o)
    _tag_corpus(d, env, T, R)
    _agree_many(d, R)
    _training(d, env, T, R)
    _escapes(d, env, T, R, o)
    _pickles(d, env, T, R, o)
    _duplicates_and_corrupt(d, env, T, R, o)
    _text(d, env, T, R, o)


# ---------------------------------------------------------------- 1. writes where it reads
def _writes_where_it_reads(d: Path, env: dict, T: str, R, o) -> None:
    w = d / "w"
    a, b = write(w / "a.pubtator", pubtator([1, 2])), write(w / "b.pubtator", pubtator([3]))
    nested = write(w / "sub" / "deep" / "n.jsonl", jsonl([{"id": "n1", "text": "Lithium."}]))
    (d / "wlink").symlink_to(w)                                # the folder under another name
    (d / "sublink").symlink_to(w / "sub")                      # an output folder that is inside the input
    os.link(nested, d / "hard_nested.jsonl")                   # a file of the folder, another name
    os.link(a, d / "hard_a.pubtator")
    (d / "soft_b.pubtator").symlink_to(b)
    rel_a = os.path.relpath(a, d.parent)                       # the same file, written another way
    guard = [w]
    for label, inp, out in (("into folder new file", w, w / "new.jsonl"),
                            ("into nested folder", w, w / "sub" / "deep" / "x.pubtator"),
                            ("via linked out folder", w, d / "sublink" / "x.jsonl"),
                            ("input folder via link", d / "wlink", w / "y.jsonl"),
                            ("hard link to nested file", w, d / "hard_nested.jsonl"),
                            ("file, hard link", a, d / "hard_a.pubtator"),
                            ("file, symlink", b, d / "soft_b.pubtator"),
                            ("file, dotted path", a, w / "." / "sub" / ".." / "a.pubtator")):
        R(f"r3 convert out {label}", "convert", str(inp), str(out), guard=guard, check=must_refuse)
        R(f"r3 rank out {label}", "rank", str(inp), "--model", T, "--top", "1", "--out", str(out), "--quiet",
          guard=guard, check=must_refuse)
        R(f"r3 tag out {label}", "tag", str(inp), "--model", T, "--out", str(out), "--format", "jsonl",
          "--quiet", guard=guard, check=must_refuse)
        if not Path(inp).is_dir():
            R(f"r3 agree json {label}", "agree", str(a), str(inp), "--json", str(out), guard=guard, check=must_refuse)
    R("r3 convert relative same file", "convert", rel_a, str(a), guard=guard, check=must_refuse)
    R("r3 agree json over B relative", "agree", str(a), rel_a, "--json", rel_a, guard=guard, check=must_refuse)
    R("r3 tag-corpus out inside input folder", "tag-corpus", str(w), "--model", T, "--out", str(w / "corpus"),
      "--quiet", guard=guard, check=must_refuse)
    # models export into the model's own folder (registered, and a folder given by path)
    home = d / "home_export"
    e = dict(env, FASTBIONER_HOME=str(home))
    subprocess.run([BIN, "models", "import", T, "--name", "own"], env=e, capture_output=True, timeout=120)
    own = home / "models" / "own"
    (d / "own_link").symlink_to(own)
    for label, dest in (("its own folder", own), ("a folder inside it", own / "sub"),
                        ("a link to it", d / "own_link"), ("a link's child", d / "own_link" / "x"),
                        ("the registry root", home / "models")):
        R(f"r3 models export into {label}", "models", "export", "own", str(dest), env=e, guard=[own])
    tcopy = d / "tiny_copy"
    shutil.copytree(T, tcopy)
    R("r3 models export folder into itself", "models", "export", str(tcopy), str(tcopy / "exported"),
      env=e, guard=[tcopy])


# ---------------------------------------------------------------- 2. tag-corpus
def _tag_corpus(d: Path, env: dict, T: str, R) -> None:
    s = d / "stems"

    def holds(ids):
        def check(r):
            got = view_ids(Path(r.argv[r.argv.index("--out") + 1]))
            if got is None:
                return ""
            missing, twice = sorted(set(ids) - set(got)), len(got) - len(set(got))
            if missing or twice:
                return f"wrong answer: view lacks {missing[:5]} ({len(missing)}), {twice} twice"
            return ""
        return refused_or(check)

    p1 = write(s / "abs.pubtator", pubtator([101, 102]))
    j1 = write(s / "abs.jsonl", jsonl([{"id": "103", "text": "Cocaine toxicity."}, {"id": "104", "text": "Pain."}]))
    g1 = s / "abs.pubtator.gz"
    import gzip
    g1.write_bytes(gzip.compress(pubtator([105]).encode()))
    x1 = write(s / "pubmed25n0001.xml", pubmed_xml([201, 202]))
    x2 = write(s / "other" / "pubmed25n0001.xml", pubmed_xml([203, 204]))
    x3 = write(s / "third" / "pubmed25n0001.xml.gz", b"")
    x3.write_bytes(gzip.compress(pubmed_xml([205]).encode()))
    f1 = write(s / "f1" / "x.pubtator", pubtator([301]))
    f2 = write(s / "f2" / "x.pubtator", pubtator([302]))
    n = [0]

    def out() -> str:
        n[0] += 1
        return str(d / f"corpus{n[0]}")
    for label, inputs, ids in (("pubtator then jsonl", [p1, j1], ["101", "102", "103", "104"]),
                               ("plain then gz", [p1, g1], ["101", "102", "105"]),
                               ("pubmed xml in two folders", [x1, x2], ["201", "202", "203", "204"]),
                               ("pubmed xml and xml.gz", [x1, x3], ["201", "202", "205"]),
                               ("two folders, same file name", [f1.parent, f2.parent], ["301", "302"])):
        R(f"r3 tag-corpus same stem {label}", "tag-corpus", *map(str, inputs), "--model", T, "--out", out(),
          "--quiet", check=holds(ids))
        # the same inputs on two days: the second run's input must not replace the first's
        first = out()

        def setup(first=first, inp=inputs[0]):
            subprocess.run([BIN, "tag-corpus", str(inp), "--model", T, "--out", first, "--quiet"], env=env,
                           capture_output=True, timeout=200)
        R(f"r3 tag-corpus same stem next day {label}", "tag-corpus", str(inputs[1]), "--model", T, "--out",
          first, "--quiet", setup=setup, check=holds(ids))
    # a non-empty --out the folder did not write: the user's files must survive
    for label, files in (("user's parquet of a shard's name", {"pubmed25n0001.parquet": b"my own table"}),
                         ("user's summary", {"_summary.json": b'{"mine": true}', "notes.txt": b"keep"}),
                         ("user's sub-folder", {"replaced/pubmed25n0001.parquet": b"mine", "a.txt": b"x"}),
                         ("other tool's state", {".state/inputs.json": b"[]", "data.csv": b"1,2"})):
        fo = d / f"foreign_{label.split()[0].strip(chr(39))}{len(files)}{n[0]}"
        n[0] += 1
        for name, data in files.items():
            write(fo / name, data)
        R(f"r3 tag-corpus foreign out {label}", "tag-corpus", str(x1), "--model", T, "--out", str(fo), "--quiet",
          guard=[fo], check=must_refuse)


# ---------------------------------------------------------------- 3. agree on many mentions
def _agree_many(d: Path, R) -> None:
    n = 30_000
    text = "aspirin " * n
    spans_a = [{"start": 8 * i, "end": 8 * i + 7, "label": "Chemical"} for i in range(n)]
    # B: every other mention relabelled, every third moved by one character
    spans_b = [{"start": s["start"] + (1 if i % 3 == 0 else 0), "end": s["end"],
                "label": "Disease" if i % 2 else "Chemical"} for i, s in enumerate(spans_a)]
    a = write(d / "many_a.jsonl", jsonl([{"id": "m", "text": text, "spans": spans_a}]))
    b = write(d / "many_b.jsonl", jsonl([{"id": "m", "text": text, "spans": spans_b}]))
    # nested: every mention contains the next (all pairs overlap)
    L = len(text)
    nested = [{"start": i // 2, "end": L - 1 - i // 2 - (i % 2), "label": "Chemical"} for i in range(n)]
    c = write(d / "many_nested.jsonl", jsonl([{"id": "m", "text": text, "spans": nested}]))
    stacked = [{"start": 0, "end": 7, "label": "Chemical"}] * n           # the same mention n times
    s = write(d / "many_stacked.jsonl", jsonl([{"id": "m", "text": text, "spans": stacked}]))
    # many documents with many mentions: 100 of 3,000 a side
    docs = [{"id": f"d{k}", "text": "aspirin " * 3000, "spans": spans_a[:3000]} for k in range(100)]
    many_docs = write(d / "many_docs.jsonl", jsonl(docs))
    pt = write(d / "many_a.pubtator", f"1|t|\n1|a|{text}\n" + "".join(
        f"1\t{x['start'] + 1}\t{x['end'] + 1}\taspirin\tChemical\t-\n" for x in spans_a) + "\n")
    for label, files, extra in (("exact", [a, b], []), ("overlap", [a, b], ["--match", "overlap"]),
                                ("three files", [a, b, a], []), ("nested overlap", [c, c], ["--match", "overlap"]),
                                ("nested vs flat overlap", [a, c], ["--match", "overlap"]),
                                ("stacked overlap", [s, s], ["--match", "overlap"]), ("stacked exact", [s, a], []),
                                ("100 docs", [many_docs, many_docs], ["--match", "overlap"]),
                                ("title-less pubtator vs jsonl", [a, pt], [])):
        R(f"r3 agree {n} mentions {label}", "agree", *map(str, files), *extra, guard=files)


# ---------------------------------------------------------------- 4. training tracebacks
def _training(d: Path, env: dict, T: str, R) -> None:
    for label in ("B-Disease", "I-Disease", "O", "I-O", "B-", "S-Chemical", "O-Disease", "b-disease"):
        docs = pubtator(range(1, 13)).replace("\tChemical\t", f"\t{label}\t")
        f = write(d / f"ft_label_{label}.pubtator", docs)
        R(f"r3 fine-tune reviewed type {label}", "fine-tune", T, "--name", f"ftl-{len(label)}{label[0]}",
          "--train", str(f), "--epochs", "1", "--quiet", guard=[f])
    ok = write(d / "ft_ok.pubtator", pubtator(range(1, 13)))
    # a full disk: a tiny tmpfs, when this user may mount one
    full = d / "full"
    full.mkdir()
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(full)], capture_output=True).returncode == 0
    if mounted:
        atexit.register(lambda: subprocess.run(["umount", "-l", str(full)], capture_output=True))
        e = dict(env, FASTBIONER_HOME=str(full / "home"))
        R("r3 fine-tune full disk", "fine-tune", T, "--name", "ft-full", "--train", str(ok), "--epochs", "1",
          "--quiet", env=e)
        R("r3 models import full disk", "models", "import", T, "--name", "full", env=e)
        R("r3 compact full disk", "compact", T, "--keep-vocabulary", "--name", "cfull", "--quiet", env=e)
        R("r3 train-teacher full disk", "train-teacher", "--name", "tfull", "--base", T, "--train",
          str(write(d / "tt.conll", _conll(40))), "--epochs", "1", "--quiet", env=e)
        R("r3 tag-corpus full disk", "tag-corpus", str(ok), "--model", T, "--out", str(full / "corpus"), "--quiet")
        big = write(d / "big.jsonl", jsonl({"id": str(i), "text": "Aspirin " * 200} for i in range(300)))
        R("r3 convert full disk", "convert", str(big), str(full / "big.jsonl"))
        R("r3 models export full disk", "models", "export", "bc5cdr-cnn-fast-v2", str(full / "exported"))
    _resume(d, env, T, R)


def _conll(n: int) -> str:
    return "".join("Aspirin\tB-Chemical\ninduced\tO\nheadache\tB-Disease\n.\tO\n\n" for _ in range(n))


def _resume(d: Path, env: dict, T: str, R) -> None:
    """train-teacher --resume over a hostile optimizer.pt: a real checkpoint made once
    (a run killed after its first one), copied into each case's own home."""
    base = d / "home_resume"
    train = write(d / "resume.conll", _conll(400))
    argv = ["train-teacher", "--name", "resume-me", "--base", T, "--train", str(train), "--epochs", "50",
            "--checkpoint-every", "2", "--quiet", "--threads", "1"]
    lock = threading.Lock()

    def make_base() -> None:
        with lock:
            latest = base / "models" / ".checkpoints" / "resume-me" / "latest"
            if (latest / "optimizer.pt").is_file():
                return
            p = subprocess.Popen([BIN, *argv], env=dict(env, FASTBIONER_HOME=str(base)),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            t0 = time.monotonic()
            while not (latest / "state.json").is_file() and time.monotonic() - t0 < 150 and p.poll() is None:
                time.sleep(0.2)
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            if not (latest / "optimizer.pt").is_file():
                raise RuntimeError("no checkpoint was made to attack")

    class Payload:
        def __init__(self, marker: Path):
            self.marker = marker

        def __reduce__(self):
            return (os.system, (f"touch {self.marker}",))

    for label in ("code", "truncated", "empty", "zip garbage", "a folder", "link to dev-zero", "json", "sound"):
        home = d / f"home_resume_{label.replace(' ', '_')}"
        marker = d / f"PWNED_{label.replace(' ', '_')}"

        def setup(home=home, label=label, marker=marker) -> None:
            make_base()
            shutil.copytree(base, home, symlinks=True)
            opt = home / "models" / ".checkpoints" / "resume-me" / "latest" / "optimizer.pt"
            if label == "sound":
                return
            opt.unlink()
            if label == "code":
                opt.write_bytes(pickle.dumps({"optimizer": Payload(marker)}))
            elif label == "truncated":
                opt.write_bytes((base / "models" / ".checkpoints" / "resume-me" / "latest" / "optimizer.pt")
                                .read_bytes()[:300])
            elif label == "empty":
                opt.write_bytes(b"")
            elif label == "zip garbage":
                opt.write_bytes(b"PK\x03\x04" + os.urandom(500))
            elif label == "a folder":
                opt.mkdir()
            elif label == "link to dev-zero":
                opt.symlink_to("/dev/zero")
            else:
                opt.write_text('{"optimizer": {}}')

        def check(r, marker=marker, label=label) -> str:
            if marker.exists():
                return "wrong answer: the pickle ran code"
            if label != "sound" and "weights_only" in r.out:
                return "wrong answer: advises weights_only=False"
            return ""
        R(f"r3 train-teacher --resume hostile optimizer.pt {label}", *argv, "--resume",
          env=dict(env, FASTBIONER_HOME=str(home)), setup=setup, check=check)


# ---------------------------------------------------------------- 5. terminal escapes
def _escapes(d: Path, env: dict, T: str, R, o) -> None:
    hid = "7" + ESC
    rows = [{"id": hid, "text": "Aspirin induced headache.",
             "spans": [{"start": 0, "end": 7, "label": "Chem" + ESC}, {"start": 0, "end": 3, "label": "X" + ESC},
                       {"start": 2, "end": 9, "label": "Disease"}, {"start": 16, "end": 24, "label": "Disease"}]},
            {"id": hid, "text": "Aspirin induced headache.", "spans": []},                 # a repeated id
            {"id": "2" + ESC, "text": "Lithium" + ESC, "spans": [{"start": 0, "end": 7, "label": "Chemical"}]}]
    e1 = write(d / "esc.jsonl", jsonl(rows))
    e2 = write(d / "esc_other.jsonl", jsonl([{"id": "9" + ESC, "text": "x"}, {"id": hid, "text": "Different."},
                                              {"id": "2" + ESC, "text": "Lithium  " + ESC}]))
    ep = write(d / "esc.pubtator", f"5|t|Aspirin{ESC}\n5|a|x\n5\t0\t7\tAspirin\tChem{ESC}\t{ESC}\n\n"
               + f"{hid}|t|A\n{hid}|a|B\n\n")
    named = write(d / f"name{ESC}.pubtator", pubtator([8]))
    bad_named = write(d / "escfolder" / f"bad{ESC}.jsonl", b"\x00not json")
    write(d / "escfolder" / "good.pubtator", pubtator([9]))
    for label, f in (("ids and labels jsonl", e1), ("pubtator", ep), ("file name", named),
                     ("folder with a bad file so named", bad_named.parent)):
        R(f"r3 escapes stats {label}", "stats", str(f))
        R(f"r3 escapes convert {label} to conll", "convert", str(f), o(".conll"))
        R(f"r3 escapes convert {label} to pubtator", "convert", str(f), o(".pubtator"))
        R(f"r3 escapes rank {label}", "rank", str(f), "--model", T, "--top", "5", "--out", o(".jsonl"), "--quiet")
        R(f"r3 escapes agree {label}", "agree", str(f), str(e2))
        R(f"r3 escapes agree {label} reversed", "agree", str(e2), str(f), "--match", "overlap")
        R(f"r3 escapes tag-corpus {label}", "tag-corpus", str(f), "--model", T, "--out", str(d / f"tc_{o('')[-4:]}"),
          "--quiet")
        R(f"r3 escapes tag {label}", "tag", str(f), "--model", T, "--out", o(".jsonl"), "--format", "jsonl",
          "--quiet")
    R("r3 escapes convert map-label", "convert", str(e1), "--map-label", f"Chemical=Chem{ESC}", o(".conll"))
    R("r3 escapes convert map-label from", "convert", str(e1), "--map-label", f"Chem{ESC}=Chemical", o(".conll"))
    R("r3 escapes convert on-invalid error", "convert", str(write(d / f"inv{ESC}.conll",
                                                                     f"x\tI-Chem{ESC}\ny\tO\n\n")),
      "--on-invalid", "error", o(".jsonl"))
    # a downloaded model's manifest and labels
    hm = d / "home_esc"
    m = hm / "models" / "evil"
    shutil.copytree(T, m)
    man_path = m / "fastbioner.json"
    man = json.loads(man_path.read_text()) if man_path.is_file() else {"manifest_format": 1}
    man.update(summary="Sum" + ESC, parent="par" + ESC, base_model="base" + ESC, description="d" + ESC,
               notes=ESC, kind="teacher")
    man_path.write_text(json.dumps(man))
    cfg = json.loads((m / "config.json").read_text())
    labels = ["O", f"B-Chem{ESC}", f"I-Chem{ESC}"] + [f"B-L{i}" for i in range(len(cfg.get("id2label", {})) - 3)]
    cfg["id2label"] = {str(i): lab for i, lab in enumerate(labels[: len(cfg.get("id2label", {}))])}
    cfg["label2id"] = {v: int(k) for k, v in cfg["id2label"].items()}
    cfg["_name_or_path"] = "name" + ESC
    (m / "config.json").write_text(json.dumps(cfg))
    e = dict(env, FASTBIONER_HOME=str(hm))
    for argv in (("models", "list"), ("models", "list", "--json"), ("models", "show", "evil"),
                 ("models", "show", "evil", "--json"), ("models", "show", str(m)),
                 ("models", "import", str(m), "--name", "evil-copy"), ("evaluate", "evil", str(d / "resume.conll"),
                                                                      "--quiet"),
                 ("tag", str(e1), "--model", "evil", "--out", o(".jsonl"), "--format", "jsonl", "--quiet"),
                 ("models", "describe", "evil", "--summary", "plain"), ("models", "delete", "nope" + ESC)):
        R(f"r3 escapes {' '.join(argv[:3])[:40]}", *argv, env=e)


# ---------------------------------------------------------------- 6. pickles
def _pickles(d: Path, env: dict, T: str, R, o) -> None:
    pk = d / "with_pickles"
    shutil.copytree(T, pk)
    for name in ("pytorch_model.bin", "optimizer.pt", "training_args.bin", "scheduler.pt", "rng_state.pth",
                 "extra.pkl", "checkpoint-1/pytorch_model.bin", "runs/x.pt"):
        write(pk / name, b"\x80\x04K\x01.")
    hp = d / "home_pickles"
    e = dict(env, FASTBIONER_HOME=str(hp))
    exported = d / "exported_pickles"

    def clean(r) -> str:
        left = [p.name for p in exported.rglob("*") if p.suffix in (".bin", ".pt", ".pth", ".pkl")]
        return f"pickle exported: {left[:3]}" if left else ""

    R("r3 pickles compact keep-vocabulary", "compact", str(pk), "--keep-vocabulary", "--name", "pc1", "--quiet", env=e)
    R("r3 pickles compact corpus", "compact", str(pk), "--corpus", str(d / "ft_ok.pubtator"), "--name", "pc2",
      "--quiet", env=e)
    R("r3 pickles models import", "models", "import", str(pk), "--name", "pi1", env=e)
    R("r3 pickles models import overwrite", "models", "import", str(pk), "--name", "pi1", "--overwrite", env=e)
    R("r3 pickles fine-tune", "fine-tune", str(pk), "--name", "pf1", "--train", str(d / "ft_ok.pubtator"),
      "--epochs", "1", "--quiet", env=e)
    R("r3 pickles train-teacher base", "train-teacher", "--name", "pt1", "--base", str(pk), "--train",
      str(d / "resume.conll"), "--epochs", "1", "--quiet", env=e)

    def plant() -> None:  # a registered model with pickles put there by hand (an older version, a user)
        m = hp / "models" / "handmade"
        if not m.exists():
            shutil.copytree(T, m)
            for name in ("pytorch_model.bin", "optimizer.pt"):
                write(m / name, b"\x80\x04K\x01.")
    R("r3 pickles models export of a planted model", "models", "export", "handmade", str(exported), env=e,
      setup=plant, check=clean)
    R("r3 pickles compact of a planted model", "compact", "handmade", "--keep-vocabulary", "--name", "pc3",
      "--quiet", env=e, setup=plant)


# ---------------------------------------------------------------- 7. duplicated and corrupt inputs
def _duplicates_and_corrupt(d: Path, env: dict, T: str, R, o) -> None:
    f = write(d / "dup" / "f.pubtator", pubtator(range(1, 13)))
    (d / "dup" / "f_link.pubtator").symlink_to(f)
    os.link(f, d / "dup_hard.pubtator")
    copy = write(d / "dup_copy.jsonl", jsonl({"id": str(i), "text": "Aspirin induced headache. Patients took lithium."}
                                            for i in range(1, 13)))

    def once(r) -> str:
        if r.rc != 0:
            return ""
        ids = ids_of(r.argv[r.argv.index("--out") + 1])
        return f"wrong answer: {len(ids) - len(set(ids))} document(s) queued twice" if len(ids) != len(set(ids)) else ""

    def said_twice(r) -> str:
        low = r.out.lower()
        return "" if r.rc != 0 or any(w in low for w in ("twice", "repeat", "once", "duplicate")) else \
            "wrong answer: the repeated input not mentioned"
    for label, inputs in (("same path", [f, f]), ("dotted path", [f, d / "dup" / "." / "f.pubtator"]),
                          ("symlink", [f, d / "dup" / "f_link.pubtator"]), ("hard link", [f, d / "dup_hard.pubtator"]),
                          ("folder and its file", [f.parent, f]), ("same documents, other file", [f, copy])):
        R(f"r3 rank duplicated {label}", "rank", *map(str, inputs), "--model", T, "--top", "50", "--out",
          o(".jsonl"), "--quiet", check=both(once, said_twice))
        R(f"r3 fine-tune --train duplicated {label}", "fine-tune", T, "--name", f"ftd{o('')[-3:]}", "--train",
          *map(str, inputs), "--epochs", "1", "--quiet", check=said_twice)
    # a corrupt file in a folder: one line on stderr for it, the others processed, exit non-zero
    k = d / "corrupt"
    write(k / "a.pubtator", pubtator([1, 2]))
    write(k / "b.jsonl", jsonl([{"id": "3", "text": "Lithium toxicity."}]))
    write(k / "zz_bad.jsonl", b"\x00\x01{not json")
    write(k / "yy_bad.xml", b"<PubmedArticleSet><PubmedArticle><Medline")
    write(k / "xx_bad.pubtator.gz", b"\x1f\x8b\x08\x00garbage")
    write(k / "sub" / "ww_bad.bioc.xml", b"<collection><document><id>1")

    def reported(need_out: bool):
        def check(r) -> str:
            lines = [ln for ln in r.out.splitlines() if ln.strip()]
            said_folder = "folder" in lines[0] or "directory" in lines[0] if lines else False
            if r.rc == 2 and len(lines) == 1 and str(k) in lines[0] and said_folder:
                return ""  # a command that reads no folders says so in one line
            if r.rc == 0:
                return "wrong answer: exit 0 with corrupt files"
            bad = [n for n in ("zz_bad", "yy_bad", "xx_bad", "ww_bad") if one_line_about(r.out, n) != 1]
            if bad:
                return f"wrong answer: not one line each for {bad}"
            if need_out and "--out" in r.argv:
                ids = ids_of(r.argv[r.argv.index("--out") + 1])
                if sorted(set(ids)) != ["1", "2", "3"]:
                    return f"wrong answer: the good files' documents not all written ({ids})"
            elif need_out:
                got = ids_of(r.argv[-1])
                if sorted(set(got)) != ["1", "2", "3"]:
                    return f"wrong answer: the good files' documents not all written ({got})"
            return ""
        return check
    R("r3 corrupt in folder convert", "convert", str(k), o(".jsonl"), check=reported(True))
    R("r3 corrupt in folder stats", "stats", str(k), check=reported(False))
    R("r3 corrupt in folder rank", "rank", str(k), "--model", T, "--top", "9", "--out", o(".jsonl"), "--quiet",
      check=reported(True))
    R("r3 corrupt in folder tag", "tag", str(k), "--model", T, "--out", o(".jsonl"), "--format", "jsonl", "--quiet",
      check=reported(True))
    R("r3 corrupt in folder agree", "agree", str(k), str(k), check=reported(False))
    R("r3 corrupt in folder tag-corpus", "tag-corpus", str(k), "--model", T, "--out", str(d / "tc_corrupt"),
      "--quiet", check=reported(False))
    for opt in ("0", "-3", "", "1e3", str(2**70)):
        R(f"r3 rank --chunk {opt!r}", "rank", str(f), "--model", T, "--top", "2", "--chunk", opt, "--out",
          o(".jsonl"), "--quiet", check=must_refuse if opt in ("0", "-3", "", "1e3") else quiet_fail)


# ---------------------------------------------------------------- 8. text: NFD, title-less, CR, ~, dictionaries
def _text(d: Path, env: dict, T: str, R, o) -> None:
    text_runs(d, env, T, R, o)
