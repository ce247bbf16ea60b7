"""Run every user-facing command against held-out trouble (issue 52's kinds, not its
instances, and issue 70's round 3: scripts/trouble_round3.py) the way the issues' filer
reruns it: each command under ``ulimit -v 3000000`` (memory maps count) and ``timeout 90``;
a run fails when its output holds "Traceback" or "MemoryError", or it was killed (rc
124/137, or a signal other than the one sent), or its output holds a raw terminal escape
(ESC, BEL, U+202E ...), or a pickle landed in the registry, or an input it guards changed
(data loss), or its own check says the answer is wrong (scripts/trouble_signs.py).

    OMP_NUM_THREADS=1 .venv/bin/python scripts/trouble_sweep.py [--jobs 2] [--only WORD] [--json OUT]

Inputs are generated into a temporary folder (small files; the bombs are small
gzips); the registry is a temporary FASTBIONER_HOME, so nothing of the user's is
touched. ``fetch`` runs against the loopback fake of tests/eutils_fake.py. A bad
input is expected to give one line and a non-zero exit; this script checks only the
failure signs above (and prints every failing run's command and output tail).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# A sibling module: this script's folder is first on sys.path when it runs as a file.
from trouble_inputs import HEAVY, PUBTATOR, load_test_helper, make_inputs, make_models, tiny_model
from trouble_round3 import round3_runs
from trouble_signs import lost, pickles_in, raw_escapes, snapshot

ROOT = Path(__file__).resolve().parent.parent
BIN = str(Path(sys.executable).parent / "fastbioner")
BAD_WORDS = ("Traceback", "MemoryError")
LIMIT = "ulimit -v 3000000; exec timeout 90 "

# ---------------------------------------------------------------------------- runs
class Run:
    def __init__(self, name: str, argv: list[str], env: dict[str, str], cwd: Path,
                 sig: tuple[int, float] | None = None, stdin: bytes | None = None, setup=None,
                 guard=(), check=None):
        self.name, self.argv, self.env, self.cwd, self.sig = name, argv, env, cwd, sig
        self.stdin, self.setup = stdin, setup
        self.guard, self.check = guard, check  # inputs that must not change; the answer's own test
        self.rc: int | None = None
        self.out = ""
        self.seconds = 0.0
        self.verdict = ""

    def go(self) -> "Run":
        if self.setup:
            try:
                self.setup()
            except Exception as exc: # a sweep bug, not the command's: said, not raised
                self.out, self.verdict = f"setup failed: {exc!r}", "setup failed"
                return self
        registry = Path(self.env.get("FASTBIONER_HOME", "/nonexistent")) / "models"
        pickles = pickles_in(registry)
        before = snapshot(self.guard)
        cmd = LIMIT + " ".join(shlex.quote(a) for a in self.argv)
        t0 = time.monotonic()
        p = subprocess.Popen(["bash", "-c", cmd], env=self.env, cwd=self.cwd, stdin=subprocess.PIPE
                             if self.stdin is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        if self.sig:
            signum, delay = self.sig
            threading.Timer(delay, lambda: _signal_tree(p.pid, signum)).start()
        out, _ = p.communicate(self.stdin, timeout=120)
        self.seconds = time.monotonic() - t0
        self.rc = p.returncode
        self.out = out.decode("utf-8", "replace")
        signs = [lost(before, snapshot(self.guard))]
        new = sorted(pickles_in(registry) - pickles)
        signs.append("pickle in registry: " + ", ".join(os.path.relpath(p, registry) for p in new[:3]) if new else "")
        if self.check and not self._crashed():
            try:
                signs.append(self.check(self) or "")
            except Exception as exc: # the check's own failure is reported as such
                signs.append(f"check failed: {exc!r}")
        self.verdict = "; ".join(s for s in signs if s)
        return self

    def _crashed(self) -> str:
        bad = [w for w in BAD_WORDS if w in self.out]
        if bad:
            return "+".join(bad)
        if self.rc in (124, 137, -9) or (self.rc is not None and self.rc < 0 and not self.sig):
            return f"killed (rc {self.rc})"
        if self.sig and self.rc not in (0, 1, 2, 130, 143, -signal.SIGINT, -signal.SIGTERM):
            return f"rc {self.rc} after signal"
        return ""

    def failed(self) -> str:
        return "; ".join(s for s in (self._crashed(), raw_escapes(self.out), self.verdict) if s)


def _signal_tree(pid: int, signum: int) -> None:
    """Send the signal to fastbioner itself (bash execs timeout, which forwards it)."""
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def build_runs(tmp: Path, only: str | None) -> tuple[list[Run], list]:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", FASTBIONER_HOME=str(tmp / "home"),
               PYTHONDONTWRITEBYTECODE="1", TOKENIZERS_PARALLELISM="false")
    env.pop("FASTBIONER_EUTILS_URL", None)
    inp = tmp / "in"
    inp.mkdir()
    files = make_inputs(inp)
    tiny = tiny_model(tmp)
    models = make_models(tmp / "models", tiny) if (tmp / "models").mkdir() is None else {}
    out = tmp / "out"
    out.mkdir()
    runs: list[Run] = []
    n = [0]
    group = ["files"]

    def R(name: str, *argv: str, **kw) -> None:
        n[0] += 1
        runs.append(Run(name, [kw.pop("prog", BIN), *argv], kw.pop("env", env), tmp, **kw))
        runs[-1].group = group[0]

    def o(ext: str) -> str:
        n[0] += 1
        return str(out / f"o{n[0]}{ext}")

    T = str(tiny)
    for name, p in files.items():
        R(f"convert {name}", "convert", str(p), o(".jsonl"))
        R(f"stats {name}", "stats", str(p))
        R(f"tag {name}", "tag", str(p), "--model", T, "--out", o(".jsonl"), "--format", "jsonl", "--quiet")
    for name in ("truncated.xml.gz", "siblings.xml", "id_superscript.pubtator", "jsonl_id_digits.jsonl",
                 "offsets_out.pubtator", "bomb_nuls.xml.gz", "sparse.txt", "conll_badtags.conll",
                 "jsonl_spans_out.jsonl", "bioc_bad_offsets.bioc.xml"):
        p = str(files[name])
        R(f"tag-corpus {name}", "tag-corpus", p, str(files["ok.pubtator"]), "--model", T, "--out",
          str(out / f"corpus{n[0]}"), "--quiet")
        R(f"agree {name}", "agree", str(files["ok.pubtator"]), p)
        R(f"rank {name}", "rank", p, "--model", T, "--top", "3", "--out", o(".jsonl"), "--quiet")
        R(f"evaluate {name}", "evaluate", T, p, "--quiet")
        R(f"fine-tune {name}", "fine-tune", T, "--name", f"ft{n[0]}", "--train", p, "--epochs", "1", "--quiet")
        R(f"compact {name}", "compact", T, "--corpus", p, "--name", f"cp{n[0]}", "--quiet")
    R("tag-corpus folder of trouble", "tag-corpus", str(inp), "--model", T, "--out", str(out / "corpus_all"), "--quiet")
    R("convert folder of trouble", "convert", str(inp), o(".jsonl"))
    R("stats folder of trouble", "stats", str(inp))
    # model folders
    group[0] = "models"
    for name, p in models.items():
        m = str(p)
        R(f"tag --model {name}", "tag", str(files["ok.pubtator"]), "--model", m, "--out", o(".jsonl"),
          "--format", "jsonl", "--quiet")
        R(f"models import {name}", "models", "import", m, "--name", f"imp-{name.replace('_', '-')}")
        R(f"models show {name}", "models", "show", m)
        if name not in HEAVY:  # the other commands load through the same check
            continue
        R(f"evaluate {name}", "evaluate", m, str(files["conll_badtags.conll"]), "--quiet")
        R(f"compact {name}", "compact", m, "--keep-vocabulary", "--name", f"c-{name.replace('_', '-')}", "--quiet")
        R(f"fine-tune {name}", "fine-tune", m, "--name", f"f-{name.replace('_', '-')}", "--train",
          str(files["ok.pubtator"]), "--epochs", "1", "--quiet")
        R(f"train-teacher base {name}", "train-teacher", "--name", f"t-{name.replace('_', '-')}", "--base", m,
          "--train", str(files["conll_badtags.conll"]), "--epochs", "1", "--quiet")
    R("models list", "models", "list")
    R("models export missing", "models", "export", "no-such-model", o(""))
    # registry holding a hostile entry (placed by hand, as a disk error or another version might)
    home2 = tmp / "home2"
    (home2 / "models").mkdir(parents=True)
    import shutil
    for name in ("m_2p62", "m_trunc_st", "m_manifest_random", "m_cfg_random", "m_tok_random"):
        shutil.copytree(models[name], home2 / "models" / name.replace("_", "-"))
    env2 = dict(env, FASTBIONER_HOME=str(home2))
    R("models list hostile registry", "models", "list", env=env2)
    for name in ("m-2p62", "m-trunc-st", "m-manifest-random", "m-cfg-random", "m-tok-random"):
        R(f"models show registered {name}", "models", "show", name, env=env2)
        R(f"models export registered {name}", "models", "export", name, o(""), env=env2)
        R(f"tag registered {name}", "tag", str(files["ok.pubtator"]), "--model", name, "--out", o(".jsonl"),
          "--format", "jsonl", "--quiet", env=env2)
        R(f"distill teacher {name}", "distill", "--name", "s1", "--teacher", name, "--train",
          str(files["conll_badtags.conll"]), "--quiet", env=env2)
    R("distill missing teacher", "distill", "--name", "s", "--teacher", "nope", "--train",
      str(files["ok.pubtator"]), "--quiet")
    R("train-teacher bad train", "train-teacher", "--name", "tt", "--base", T, "--train",
      str(files["jsonl_notobj.jsonl"]), "--epochs", "1", "--quiet")
    R("train-teacher dev zero", "train-teacher", "--name", "tt2", "--base", T, "--train",
      str(files["ok.pubtator"]), "--dev", "/dev/zero", "--epochs", "1", "--quiet")
    R("train-teacher hub id", "train-teacher", "--name", "tt3", "--base", "no-such-org/no-such-model",
      "--train", str(files["ok.pubtator"]), "--epochs", "1", "--quiet")
    # user folders that cannot be written
    filehome = tmp / "home_is_file"
    filehome.write_text("x")
    rohome = tmp / "home_ro"
    rohome.mkdir()
    rohome.chmod(0o555)
    for label, h in (("file", filehome), ("read-only", rohome), ("dev-null", Path("/dev/null"))):
        e = dict(env, FASTBIONER_HOME=str(h))
        R(f"tag default home {label}", "tag", str(files["ok.pubtator"]), "--out", o(".jsonl"), "--format",
          "jsonl", "--quiet", env=e)
        R(f"models import home {label}", "models", "import", T, "--name", "x", env=e)
        R(f"models list home {label}", "models", "list", env=e)
    # paths
    group[0] = "paths"
    ro = tmp / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    afile = tmp / "a_file"
    afile.write_text("x")
    unreadable = tmp / "unreadable.pubtator"
    unreadable.write_text(PUBTATOR)
    unreadable.chmod(0)
    ok = str(files["ok.pubtator"])
    for label, path in (("dev-zero", "/dev/zero"), ("dev-urandom", "/dev/urandom"), ("directory", str(inp)),
                        ("unreadable", str(unreadable)), ("missing", str(tmp / "nope.pubtator")),
                        ("dev-null", "/dev/null")):
        R(f"convert in {label}", "convert", path, o(".jsonl"))
        R(f"stats in {label}", "stats", path)
        R(f"tag in {label}", "tag", path, "--model", T, "--out", o(".jsonl"), "--format", "jsonl", "--quiet")
        R(f"agree in {label}", "agree", ok, path)
        R(f"rank in {label}", "rank", path, "--model", T, "--top", "2", "--out", o(".jsonl"), "--quiet")
        R(f"tag-corpus in {label}", "tag-corpus", path, "--model", T, "--out", str(out / f"c{n[0]}"), "--quiet")
        R(f"evaluate in {label}", "evaluate", T, path, "--quiet")
        R(f"fetch pmids-file {label}", "fetch", "--pmids-file", path, "--out", o(".jsonl"))
    for label, dest in (("read-only dir", str(ro / "o.jsonl")), ("file as dir", str(afile / "o.jsonl")),
                        ("directory", str(out)), ("dev-full", "/dev/full"),
                        ("missing parent", str(tmp / "x/y/o.jsonl"))):
        R(f"convert out {label}", "convert", ok, dest)
        R(f"tag out {label}", "tag", ok, "--model", T, "--out", dest, "--format", "jsonl", "--quiet")
        R(f"rank out {label}", "rank", ok, "--model", T, "--top", "1", "--out", dest, "--quiet")
        R(f"tag-corpus out {label}", "tag-corpus", ok, "--model", T, "--out", dest, "--quiet")
        R(f"agree json {label}", "agree", ok, ok, "--json", dest)
        R(f"models export out {label}", "models", "export", "bc5cdr-cnn-fast-v2", dest)
    # odd names: too long for the file system, control characters, links to devices, loops
    group[0] = "names"
    longname = str(tmp / ("n" * 300 + ".pubtator"))
    ctrl = tmp / "esc\x1b[2J\nname.pubtator"
    ctrl.write_text(PUBTATOR)
    zlink = tmp / "zero_link.pubtator"
    os.symlink("/dev/zero", zlink)
    zgz = tmp / "zero_link.xml.gz"
    os.symlink("/dev/zero", zgz)
    loop = tmp / "loop.pubtator"
    os.symlink(loop, loop)
    dangling = tmp / "dangling.pubtator"
    os.symlink(tmp / "nowhere", dangling)
    for label, path in (("too long", longname), ("control chars", str(ctrl)), ("link to dev-zero", str(zlink)),
                        ("gz link to dev-zero", str(zgz)), ("symlink loop", str(loop)), ("dangling", str(dangling))):
        R(f"convert in {label}", "convert", path, o(".jsonl"))
        R(f"stats in {label}", "stats", path)
        R(f"tag in {label}", "tag", path, "--model", T, "--out", o(".jsonl"), "--format", "jsonl", "--quiet")
        R(f"tag-corpus in {label}", "tag-corpus", path, "--model", T, "--out", str(out / f"c{n[0]}"), "--quiet")
        R(f"agree in {label}", "agree", ok, path)
        R(f"compact corpus {label}", "compact", T, "--corpus", path, "--name", f"cn{n[0]}", "--quiet")
        R(f"fine-tune train {label}", "fine-tune", T, "--name", f"fn{n[0]}", "--train", path, "--quiet")
    for label, dest in (("too long", str(tmp / ("o" * 300 + ".jsonl"))), ("control chars", str(tmp / "o\x1b[1m.jsonl")),
                        ("link to dev-zero", str(zlink)),
                        ("symlink loop", str(loop)), ("dangling link", str(dangling))):
        R(f"convert out {label}", "convert", ok, dest)
        R(f"tag out {label}", "tag", ok, "--model", T, "--out", dest, "--format", "jsonl", "--quiet")
        R(f"tag-corpus out {label}", "tag-corpus", ok, "--model", T, "--out", dest, "--quiet")
        R(f"agree json {label}", "agree", ok, ok, "--json", dest)
        R(f"evaluate json {label}", "evaluate", T, str(files["conll_badtags.conll"]), "--json", dest, "--quiet")
        R(f"models export out {label}", "models", "export", "bc5cdr-cnn-fast-v2", dest)
    R("tag same input twice", "tag", ok, ok, "--model", T, "--out", o(".jsonl"), "--format", "jsonl", "--quiet")
    R("tag out is input", "tag", str(tmp / "in" / "dup_ids.pubtator"), "--model", T, "--out",
      str(tmp / "in" / "dup_ids.pubtator"), "--format", "pubtator", "--quiet")
    R("convert out is input", "convert", str(tmp / "in" / "crlf.pubtator"), str(tmp / "in" / "crlf.pubtator"))
    R("models import long path", "models", "import", str(tmp / ("m" * 300)), "--name", "lp")
    R("evaluate long model path", "evaluate", str(tmp / ("m" * 5000)), ok, "--quiet")
    R("tag long model path", "tag", ok, "--model", "/" + "m" * 5000, "--out", o(".jsonl"), "--format", "jsonl")
    group[0] = "paths"
    R("tag stdin", "tag", "/dev/stdin", "--input-format", "pubtator", "--model", T, "--out", o(".jsonl"),
      "--format", "jsonl", "--quiet", stdin=PUBTATOR.encode())
    R("convert stdin binary", "convert", "/dev/stdin", "--from", "jsonl", o(".pubtator"), stdin=os.urandom(5000))
    R("stats stdin utf16", "stats", "--from", "pubtator", "/dev/stdin", stdin=PUBTATOR.encode("utf-16-le"))

    fifo_writers = []

    def fifo_with(data: bytes) -> str:
        p = tmp / f"fifo{len(fifo_writers)}"
        os.mkfifo(p)

        def write() -> None:
            try:
                with open(p, "wb") as fh:  # blocks until the command opens it
                    fh.write(data)
            except OSError:
                pass
        fifo_writers.append(write)
        return str(p)
    # FIFOs: a writer thread is started right before the run (see setup)
    for label, data, fmt, cmd in (("pubtator", PUBTATOR.encode(), "pubtator", "tag"),
                                  ("pubtator", PUBTATOR.encode(), "pubtator", "convert"),
                                  ("pubtator", PUBTATOR.encode(), "pubtator", "stats"),
                                  ("utf16", PUBTATOR.encode("utf-16"), "pubtator", "tag"),
                                  ("random", os.urandom(20000), "jsonl", "tag"),
                                  ("xml bomb", gzip.decompress(files["bomb_nuls.xml.gz"].read_bytes())[:5_000_000],
                                   "pubmed", "tag")):
        path = fifo_with(data)
        w = fifo_writers[-1]

        def setup(w=w):
            threading.Thread(target=w, daemon=True).start()

        if cmd == "tag":
            R(f"tag fifo {label}", "tag", path, "--input-format", fmt, "--model", T, "--out", o(".jsonl"),
              "--format", "jsonl", "--quiet", setup=setup)
        elif cmd == "convert":
            R(f"convert fifo {label}", "convert", "--from", fmt, path, o(".jsonl"), setup=setup)
        else:
            R(f"stats fifo {label}", "stats", "--from", fmt, path, setup=setup)
    # odd text through every output format, and odd option values
    group[0] = "options"
    odd = inp / "odd_text.jsonl"
    odd.write_text(json.dumps({"id": "o1", "text": "Aspirin \ud800 \x1b[2J\u202e \x00 \x0c\x85\u2028 headache.",
                               "spans": [{"start": 0, "end": 7, "label": "Chem\tical|x"}]}) + "\n"
                   + json.dumps({"id": "o|2\t\n", "text": "-DOCSTART- x\n\nlithium"}) + "\n", encoding="utf-8")
    for fmt in ("pubtator", "bioc", "conll", "jsonl", "txt", "medline", "pubmed"):
        R(f"convert odd text to {fmt}", "convert", str(odd), "--to", fmt, o(f".{fmt}"))
    for fmt in ("pubtator", "bioc", "conll", "jsonl"):
        R(f"tag odd text to {fmt}", "tag", str(odd), "--model", T, "--out", o(f".{fmt}"), "--format", fmt, "--quiet")
        R(f"rank odd text to {fmt}", "rank", str(odd), "--model", T, "--top", "2", "--to", fmt, "--out",
          o(f".{fmt}"), "--quiet")
    for name in ("latin1.pubtator", "cr.pubtator", "deletecitation_digits.xml", "offsets_out.pubtator",
                 "conll_badtags.conll", "bioc_notint.bioc.xml", "medline_bad.medline"):
        for fmt in ("pubtator", "bioc", "conll"):
            R(f"convert {name} to {fmt}", "convert", str(files[name]), "--to", fmt, o(f".{fmt}"))
    for opt, val in (("--chunk", "0"), ("--chunk", "-1"), ("--chunk", "99999999999999999999"), ("--threads", "-1"),
                     ("--threads", "100000"), ("--token-budget", "0"), ("--token-budget", "-5"),
                     ("--token-budget", "1"), ("--precision", "int8"), ("--device", "cuda:99"), ("--device", "bogus")):
        R(f"tag {opt} {val}", "tag", ok, "--model", T, "--out", o(".jsonl"), "--format", "jsonl", opt, val, "--quiet")
    for opt, val in (("--top", "0"), ("--top", "-3"), ("--top", "99999999999999999999")):
        R(f"rank {opt} {val}", "rank", ok, "--model", T, opt, val, "--out", o(".jsonl"), "--quiet")
    for opt, val in (("--epochs", "0"), ("--epochs", "-1"), ("--lr", "nan"), ("--lr", "inf"), ("--batch-size", "0"),
                     ("--holdout", "2"), ("--holdout", "-1"), ("--freeze-layers", "99"), ("--seed", "-1")):
        R(f"fine-tune {opt} {val}", "fine-tune", T, "--name", f"fo{n[0]}", "--train", ok, opt, val, "--quiet")
    for opt, val in (("--workers", "0"), ("--workers", "-2"), ("--chunk", "0"), ("--engine", "ray")):
        R(f"tag-corpus {opt} {val}", "tag-corpus", ok, "--model", T,
          "--out", str(out / f"tc{n[0]}"), opt, val, "--quiet")
    for nm in ("../evil", "", "a" * 5000, "\u0661\u0662", "con", ".hidden", "a/b", "x\x1b[2J"):
        R(f"models import name {nm[:12]!r}", "models", "import", T, "--name", nm)
        R(f"models show name {nm[:12]!r}", "models", "show", nm)
        R(f"models export name {nm[:12]!r}", "models", "export", nm, o(""))
    for label, content in (("digits", "\u0661\u0662\u0663\n\uff11\n\u00b2\n"), ("binary", os.urandom(3000)),
                           ("huge id", "9" * 100000 + "\n"), ("empty", ""), ("utf16", "1000\n1001\n".encode("utf-16")),
                           ("many", "".join(f"{i}\n" for i in range(1, 200000)))):
        pf = inp / f"pmids_{label.replace(' ', '_')}.txt"
        pf.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
        R(f"fetch pmids-file {label} (no server)", "fetch", "--pmids-file", str(pf), "--out", o(".jsonl"),
          env=dict(env, FASTBIONER_EUTILS_URL="http://127.0.0.1:1/"))
    # a signal while torch is being imported (the first second or two)
    for i, delay in enumerate((0.3, 0.6, 0.9, 1.1, 1.4, 1.8)):
        sig = signal.SIGTERM if i % 2 == 0 else signal.SIGINT
        R(f"tag {sig.name} early at {delay}s", "tag", ok, "--model", T, "--out", o(".jsonl"), "--format", "jsonl",
          "--quiet", sig=(sig, delay))
    # signals at random moments
    group[0] = "signals"
    rnd = random.Random(52)
    for i in range(10):
        sig = rnd.choice([signal.SIGTERM, signal.SIGINT])
        delay = rnd.uniform(0.2, 4.0)
        kind = i % 5
        if kind == 0:
            R(f"tag {sig.name} at {delay:.1f}s", "tag", ok, "--model", T, "--out", o(".jsonl"), "--format", "jsonl",
              "--quiet", sig=(sig, delay))
        elif kind == 1:
            R(f"models import {sig.name} at {delay:.1f}s", "models", "import", T, "--name", f"sig{i}",
              sig=(sig, delay))
        elif kind == 2:
            R(f"tag-corpus {sig.name} at {delay:.1f}s", "tag-corpus", str(files["ok.pubtator"]),
              str(files["dup_ids.pubtator"]), "--model", T, "--out", str(out / f"sigc{i}"), "--quiet",
              sig=(sig, delay))
        elif kind == 3:
            R(f"fine-tune {sig.name} at {delay:.1f}s", "fine-tune", T, "--name", f"sigft{i}", "--train", ok,
              "--epochs", "1", "--quiet", sig=(sig, delay))
        else:
            R(f"convert {sig.name} at {delay:.1f}s", "convert", str(files["bomb_text.pubtator.gz"]), o(".jsonl"),
              sig=(sig, delay))
    group[0] = "round3"
    round3_runs(tmp, env, T, R, o)
    if only:
        runs = [r for r in runs if only in r.name or only == f"group:{r.group}"]
    return runs, env


def fetch_runs(tmp: Path, env: dict, only: str | None) -> list[tuple[str, list[Run], object]]:
    """Groups of fetch runs, each against a fake server scripted by its setup."""
    fake = load_test_helper("eutils_fake")
    FakeEutils, make_articles, closed_port_url = fake.FakeEutils, fake.make_articles, fake.closed_port_url
    out = tmp / "out"
    groups = []

    def F(name: str, script, *argv: str, url: str | None = None, sig=None):
        groups.append((name, script, list(argv), url, sig))

    F("fetch ok", None, "--pmid", "1000", "1001")
    F("fetch drip", lambda s: s.drip("efetch", interval=1.0, limit=10_000, times=10), "--pmid", "1000")
    F("fetch drip headers", lambda s: s.drip("efetch", interval=1.0, limit=10_000, headers=True, times=10),
      "--pmid", "1000")
    F("fetch endless", lambda s: s.endless("efetch", limit=2**31, times=10), "--pmid", "1000")
    F("fetch huge length", lambda s: s.huge_length("efetch", times=10), "--pmid", "1000")
    F("fetch redirect other host", lambda s: s.redirect("esearch", "http://127.0.0.2:1/x", times=10),
      "--query", "aspirin")
    F("fetch redirect loop", lambda s: s.redirect("efetch", "/efetch.fcgi?x=1", times=30), "--pmid", "1000")
    F("fetch deep json", lambda s: s.deep_json(300_000, times=10), "--query", "aspirin")
    F("fetch garbled", lambda s: (s.garble("efetch", times=10), s.garble("esearch", times=10)), "--query", "aspirin")
    F("fetch escapes", lambda s: s.fail("esearch", 400, body=b"\x1b[2J\x1b]0;pwn\x07bad\xff", times=10,
                                        reason="Bad \x1b[31m"), "--query", "aspirin")
    F("fetch 500 x10", lambda s: s.fail("efetch", 500, times=10), "--pmid", "1000")
    F("fetch ncbi error", lambda s: s.ncbi_error("efetch", "\u202eevil"), "--pmid", "1000")
    F("fetch bad pmid", None, "--pmid", "\u0661\u0662")
    F("fetch pmid huge", None, "--pmid", "9" * 5000)
    F("fetch max negative", None, "--query", "aspirin", "--max", "-5")
    F("fetch max huge", None, "--query", "aspirin", "--max", "99999999999999999999")
    F("fetch closed port", None, "--pmid", "1000", url=closed_port_url())
    F("fetch bad url", None, "--pmid", "1000", url="http://[::1")
    F("fetch file url", None, "--pmid", "1000", url="file:///etc/passwd")
    F("fetch SIGINT", lambda s: s.drip("efetch", interval=1.0, limit=10_000, times=10), "--pmid", "1000",
      sig=(signal.SIGINT, 2.0))
    F("fetch SIGTERM", lambda s: s.endless("efetch", limit=2**31, times=10), "--pmid", "1000",
      sig=(signal.SIGTERM, 1.0))
    result = []
    for i, (name, script, argv, url, sig) in enumerate(groups):
        if only and only not in name:
            continue
        server = FakeEutils(articles=make_articles(5), searches={"aspirin": [str(1000 + k) for k in range(5)]})
        result.append((name, server, script, argv, url, sig, str(out / f"fetch{i}.jsonl")))
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", help="run only the runs whose name contains this (group:G for a group: files, "
                                   "models, paths, options, signals, round3; fetch runs match by name)")
    ap.add_argument("--json", help="write every run's name, rc, seconds and verdict here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="trouble-sweep-"))
    runs, env = build_runs(tmp, args.only)
    print(f"{len(runs)} runs (+ fetch) in {tmp}", flush=True)
    done: list[Run] = []
    lock = threading.Lock()

    def one(r: Run) -> None:
        r.go()
        with lock:
            done.append(r)
            verdict = r.failed()
            if verdict:
                print(f"FAIL [{verdict}] {r.name[:120]}: rc {r.rc}\n  $ {' '.join(map(shlex.quote, r.argv))[:400]}\n"
                      + "\n".join("  | " + ln[:300] for ln in r.out.strip().splitlines()[-12:]), flush=True)
            elif len(done) % 25 == 0:
                print(f"... {len(done)} done", flush=True)

    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(one, runs))
    # fetch: one fake server at a time (its faults are per server)
    for name, server, script, argv, url, sig, outp in fetch_runs(tmp, env, args.only):
        with server:
            if script:
                script(server)
            e = dict(env, FASTBIONER_EUTILS_URL=url or server.url)
            r = Run(name, [BIN, "fetch", *argv, "--out", outp, "--quiet"], e, tmp, sig=sig)
            one(r)
    bad = [r for r in done if r.failed()]
    print(f"\n{len(done)} runs, {len(bad)} failures", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps([{"name": r.name, "rc": r.rc, "seconds": round(r.seconds, 1),
                                                 "failure": r.failed(), "argv": r.argv[1:],
                                                 "tail": r.out[-2000:] if r.failed() else ""}
                                                for r in done], indent=1, ensure_ascii=False))
    if not args.keep:
        if os.path.ismount(tmp / "r3" / "full"):  # round 3's full disk, else its mount point stays behind
            subprocess.run(["umount", "-l", str(tmp / "r3" / "full")], capture_output=True)
        for p in tmp.rglob("*"):
            try:
                if p.is_dir() and not p.is_symlink():
                    p.chmod(0o755)
                elif not p.is_symlink() and p.exists():
                    p.chmod(0o644)
            except OSError:
                pass
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
