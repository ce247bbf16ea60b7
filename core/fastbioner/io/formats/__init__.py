"""Readers and writers, one module per format, and a registry by name and extension.

Each format module exposes ``NAME``, ``EXTENSIONS``, ``read(path, **options) ->
Iterator[Document]`` and ``write(docs, path, **options) -> WriteReport``; writers go
through :func:`fastbioner.io.fileio.atomic_write` so an output file is complete or absent.

Bad input raises :class:`fastbioner.base.errors.InputError` (one line naming file and
line). Input that can be read after a repair (an invalid BIO sequence) issues an
:class:`fastbioner.base.errors.InputWarning` through :mod:`warnings`; callers that want
them as a list use ``warnings.catch_warnings(record=True)``.

A project file of the app (``.fbproj``) is read as its documents, never written
(:mod:`fastbioner.io.formats.project`).

PubMed XML is read as a stream (``.xml`` or ``.xml.gz``); its reader's iterator also
lists the PMIDs the file's ``<DeleteCitation>`` blocks withdraw (``.deleted``, see
:class:`fastbioner.io.formats.pubmed_xml.PubmedReader`).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable, Iterator

from fastbioner.io.documents import Document
from fastbioner.base.errors import InputError, InputWarning
from fastbioner.io.fileio import check_input
from fastbioner.base.jobs import CancelToken, Cancelled, EventCallback, JobState, ProgressReporter
from fastbioner.io.formats import bioc, conll, jsonl, medline, plain, project, pubmed_xml, pubtator
from fastbioner.io.formats.conll import read_tagged_sentences
from fastbioner.io.formats.limits import DEFAULT_LIMITS, ReadLimits
from fastbioner.io.formats.report import WriteReport
from fastbioner.io.labels import document_tagged_sentences

FORMATS: dict[str, ModuleType] = {m.NAME: m for m in (conll, pubtator, bioc, pubmed_xml, medline, jsonl, plain)}
# Read wherever documents are read, never written (the app saves projects, with their statuses).
READ_ONLY: dict[str, ModuleType] = {project.NAME: project}
_READERS: dict[str, ModuleType] = {**FORMATS, **READ_ONLY}
ALIASES = {"bio": "conll", "iob": "conll", "tsv": "conll", "pubmed-xml": "pubmed", "pubmed_xml": "pubmed",
           "plain": "text", "txt": "text", "nbib": "medline", "xml": None}

__all__ = ["FORMATS", "READ_ONLY", "DEFAULT_LIMITS", "ReadLimits", "WriteReport", "MultiRead", "format_module",
           "format_for_path", "guess_format",
           "read_documents", "write_documents", "read_any", "distinct_inputs"]

_SNIFF_CHARS = 65536
_PUBTATOR_RE = re.compile(r"^[^|\t\n]+\|[ta]\|", re.M)
_MEDLINE_RE = re.compile(r"^PMID- ", re.M)
_CONLL_LINE_RE = re.compile(r"^\S+(?:\t[^\t\n]*)*\t(?:O|[BIES]-\S+)$|^-DOCSTART-", re.M)


def format_module(name: str) -> ModuleType:
    """The module of a format name or alias (``conll``, ``bio``, ``pubtator`` ...)."""
    key = name.strip().lower()
    key = ALIASES.get(key, key) or key
    if key not in _READERS:
        raise InputError(f"unknown format {name!r}; known formats: {', '.join(sorted(FORMATS))}")
    return _READERS[key]


def _sniff(path: Path) -> str | None:
    """Guess from the first characters of a file (for ``.txt``, ``.xml`` and unknown
    extensions). None when the file cannot be read or looks like nothing known."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            head = fh.read(_SNIFF_CHARS)
    except OSError:
        return None
    stripped = head.lstrip()
    if stripped.startswith("<"):
        root = re.search(r"<(collection|PubmedArticleSet|PubmedArticle|PubmedBookArticle)\b", head)
        if root:
            return "bioc" if root.group(1) == "collection" else "pubmed"
        return None
    if stripped.startswith("{"):
        return "project" if re.match(r'\{\s*"format"\s*:\s*"fastbioner-project"', stripped) else "jsonl"
    if _PUBTATOR_RE.search(head):
        return "pubtator"
    if _MEDLINE_RE.search(head):
        return "medline"
    lines = [ln for ln in head.replace("\r", "").split("\n")[:50] if ln.strip()]
    if lines and sum(bool(_CONLL_LINE_RE.match(ln)) for ln in lines) >= 0.9 * len(lines):
        return "conll"
    return "text" if stripped else None


def guess_format(path: str | Path, for_writing: bool = False) -> str:
    """A format name from the file name (``.conll``, ``.bioc.xml``, ``.jsonl`` ...), or
    for ``.txt``/``.xml``/unknown extensions from the content. When writing, an
    ambiguous extension raises :class:`InputError` asking for ``--to``."""
    path = Path(path)
    if not for_writing and path.exists() and not path.is_file():
        check_input(path)  # a device says so, not "cannot tell the format"
    name = path.name.lower()
    by_ext = _format_by_extension(name)
    if by_ext is None and not for_writing and name.endswith(".gz"):
        # "abs.pubtator.gz" names its format under the compression: read_documents then
        # says to gunzip it (one line), rather than that the format cannot be told.
        by_ext = _format_by_extension(name[:-3])
    if by_ext in READ_ONLY and for_writing:
        raise InputError(f"{_READERS[by_ext].NAME} files are read here, never written (the app saves a "
                         "project); write .jsonl to keep every span", path)
    if by_ext is not None and by_ext != "text":
        return by_ext
    # ".txt" may hold PubTator, MEDLINE or BIO; ".xml" BioC or PubMed: look inside.
    if not for_writing and path.is_file():
        sniffed = _sniff(path)
        if sniffed:
            return sniffed
    if by_ext == "text":
        return "text"
    raise InputError("cannot tell the format from the file name; give it explicitly "
                     f"({', '.join(sorted(FORMATS))})", path)


def format_for_path(path: str | Path) -> str | None:
    """The format of a file whose extension names a document format (``.xml`` and
    ``.txt`` looked into), else None: how a folder's files are picked (README.md and
    LICENSE are not read as plain text)."""
    path = Path(path)
    if not _known_extension(path):
        return None
    try:
        return guess_format(path)
    except InputError:
        return None


def read_documents(path: str | Path, fmt: str | None = None, **options: Any) -> Iterator[Document]:
    """Documents of one file, read as a stream; ``fmt`` guessed when None. Options go
    to the reader (``limits``, a :class:`ReadLimits`, for every format; ``on_invalid``
    and ``scheme`` for CoNLL)."""
    path = Path(path)
    check_input(path)  # a folder, a missing file, a device (/dev/zero): one line
    module = format_module(fmt) if fmt else _READERS[guess_format(path)]
    if path.name.lower().endswith(".gz") and module is not pubmed_xml:
        raise InputError(f"gzipped input is read for PubMed XML only, not {module.NAME}: gunzip it first", path)
    return module.read(path, **options)


def read_tagged_files(paths: Iterable[str | Path]) -> list:
    """Tagged sentences (:class:`fastbioner.io.labels.TaggedSentence`) of training, devel
    or scored files: BIO/CoNLL as they are, any other annotated format (PubTator, BioC,
    JSONL) split into sentences and tagged from its entities, each sentence keeping its
    document's id (for document context)."""
    sentences: list = []
    for path in paths:
        if guess_format(path) == "conll":
            sentences.extend(read_tagged_sentences(path))
            continue
        for doc in read_documents(path):
            tagged = document_tagged_sentences(doc, "IOB2")
            sentences.extend(replace(s, doc_id=doc.id) for s in tagged.sentences)
    return sentences


def write_documents(docs: Iterable[Document], path: str | Path, fmt: str | None = None,
                    **options: Any) -> WriteReport:
    """Write documents to one file (complete or absent); ``fmt`` guessed from the name
    when None. Options go to the writer (``scheme``, ``sources`` for CoNLL)."""
    module = format_module(fmt) if fmt else FORMATS[guess_format(path, for_writing=True)]
    return module.write(docs, path, **options)


def _format_by_extension(name: str) -> str | None:
    """The format whose longest extension ends ``name`` (lower case), or None."""
    by_ext, longest = None, 0
    for fmt, module in _READERS.items():
        for ext in module.EXTENSIONS:
            if name.endswith(ext) and len(ext) > longest:
                by_ext, longest = fmt, len(ext)
    return by_ext


def _known_extension(path: Path) -> bool:
    """A document file by its name, a gzipped one included (a folder's ``abs.pubtator.gz``
    is picked, then refused in one line, never passed over in silence)."""
    name = path.name.lower()
    names = (name, name[:-3]) if name.endswith(".gz") else (name,)
    return any(n.endswith(".xml") or _format_by_extension(n) is not None for n in names)


def expand_paths(paths: Iterable[str | Path], exclude: set | frozenset = frozenset()) -> list[Path]:
    """Files as given, and in each folder (searched recursively, in name order) the
    files a reader knows by name, hidden ones and ``exclude`` (file identities) left
    out."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if (f.is_file() and format_for_path(f) is not None
                        and not any(part.startswith(".") for part in f.relative_to(p).parts)
                        and _identity(f) not in exclude):
                    out.append(f)
        else:
            out.append(p)
    return out


class MultiRead:
    """Documents of many files and folders, read one file at a time. A file that
    fails is skipped and its error kept in ``errors`` (the documents of a bad file
    are all left out, never half of them); ``files`` lists the files read whole.

    Iterate it once: ``for doc in batch: ...`` then look at ``batch.errors``."""

    def __init__(self, paths: Iterable[str | Path] | str | Path, fmt: str | None = None,
                 on_event: EventCallback | None = None, cancel: CancelToken | None = None,
                 exclude: Iterable[str | Path] = (), **options: Any):
        self.paths = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
        # Files never read from a folder (the output of ``convert DIR DIR/all.jsonl``).
        self.exclude = {_identity(Path(p)) for p in exclude}
        self.fmt = fmt
        self.options = options
        self.errors: list[InputError] = []
        self.files: list[Path] = []
        self.deleted: list[str] = []  # PMIDs withdrawn by the PubMed files' <DeleteCitation>
        self._reporter = ProgressReporter(on_event, cancel)

    def _expand(self) -> list[Path]:
        return expand_paths(self.paths, self.exclude)

    def _whole(self, path: Path) -> tuple[list[Document] | None, Any]:
        """The documents of a file read whole (so that a bad file is left out whole,
        never half of it), and its reader. A regular file whose documents' text passes
        ``limits.max_held_chars`` is not held: it is read to its end to find any
        problem, nothing kept (its warnings not said twice), and None returned, for
        the caller to read it again as a stream: memory holds one document."""
        limits = self.options.get("limits") or DEFAULT_LIMITS
        reader = read_documents(path, self.fmt, **self.options)
        docs: list[Document] = []
        chars = 0
        for doc in reader:
            docs.append(doc)
            chars += len(doc.text)
            if chars > limits.max_held_chars and path.is_file():
                docs.clear()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", InputWarning)
                    for _ in reader:
                        pass
                return None, reader
        return docs, reader

    def __iter__(self) -> Iterator[Document]:
        files = self._expand()
        self._reporter.stage("read", total=len(files))
        try:
            for n, path in enumerate(files):
                self._reporter.check()
                try:
                    docs, reader = self._whole(path)
                except InputError as exc:
                    self.errors.append(exc)
                except Exception as exc:
                    # A reader fault this program did not foresee is still one file's
                    # problem: reported with the file, the other files read on.
                    detail = str(exc).splitlines()[0][:160] if str(exc) else ""
                    self.errors.append(InputError(f"cannot read this file ({type(exc).__name__}"
                                                  f"{': ' + detail if detail else ''})", path))
                else:
                    self.files.append(path)
                    if docs is None:  # too large to hold: checked whole, now read as a stream
                        reader = read_documents(path, self.fmt, **self.options)
                        yield from reader
                    else:
                        yield from docs
                    self.deleted.extend(getattr(reader, "deleted", ()))
                self._reporter.emit(step=n + 1, message=path.name)
        except Cancelled:
            self._reporter.finish(JobState.CANCELLED, "cancelled")
            raise
        except GeneratorExit:  # the reader stopped early: not an end to report
            raise
        except BaseException as exc:
            self._reporter.finish(JobState.FAILED, f"failed: {exc}")
            raise
        # Like every job, the read ends with its final event.
        self._reporter.finish(JobState.DONE, f"{len(self.files)} file(s) read, {len(self.errors)} skipped")


def _identity(path: Path) -> Path:
    """A path as the file it names (links resolved), to compare two names of one file."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def distinct_inputs(paths: Iterable[str | Path]) -> tuple[list[Path], list[Path]]:
    """``(kept, repeated)``: the inputs each read once, and those left out because they
    name a file or folder already given (the same path, a link to it, a hard link) or
    lie inside a folder given (read with it). ``rank F F`` would queue each document twice."""
    kept: list[Path] = []
    seen: list[tuple[Path, tuple[int, int] | None, bool]] = []
    repeated: list[Path] = []
    for path in map(Path, paths):
        real = _identity(path)
        try:
            st = path.stat()
            inode: tuple[int, int] | None = (st.st_dev, st.st_ino)
            folder = path.is_dir()
        except (OSError, ValueError):
            inode, folder = None, False
        if any(real == r or (inode is not None and inode == i) or (f and r in real.parents)
               for r, i, f in seen):
            repeated.append(path)
            continue
        # A folder given after one of its own files: the file is read with the folder.
        if folder:
            inside = [k for k, (r, _i, _f) in zip(kept, seen) if real in r.parents]
            for k in inside:
                repeated.append(k)
            keep = [(k, s) for k, s in zip(kept, seen) if k not in inside]
            kept, seen = [k for k, _ in keep], [s for _, s in keep]
        kept.append(path)
        seen.append((real, inode, folder))
    return kept, repeated


def read_any(paths_or_folders: Iterable[str | Path] | str | Path, fmt: str | None = None,
             on_event: EventCallback | None = None, cancel: CancelToken | None = None,
             exclude: Iterable[str | Path] = (), **options: Any) -> MultiRead:
    """Documents from files and folders (folders searched recursively; hidden files
    and ``exclude`` skipped), collecting per-file errors in ``.errors`` instead of
    stopping (any exception a file raises becomes its error)."""
    return MultiRead(paths_or_folders, fmt, on_event, cancel, exclude, **options)
