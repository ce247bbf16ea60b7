"""The project's reviewed documents as a training file, for the distillation dialog
and Model > Improve the model from my reviews.

The file is named by its content (a hash of what is written), not by the time: the
same reviewed documents give the same file, so settings that name it compare equal
from one press of Start to the next (the run time measured for them stays valid),
and pressing Start again does not leave one more copy behind each time."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from fastbioner.io.documents import Document, Source
from fastbioner.curate.project import DocStatus, user_home

from .models.workspace import Workspace

# What training learns from a reviewed document: its gold and accepted entities
# (undecided suggestions are not the curator's word).
TRAINING_SOURCES = (Source.GOLD, Source.CURATOR)


def reviewed_documents(workspace: Workspace) -> list[Document]:
    return [workspace.document(r) for r in range(len(workspace))
            if workspace.entry(r).status is DocStatus.REVIEWED]


def reviewed_count(workspace: Workspace) -> int:
    return sum(1 for r in range(len(workspace)) if workspace.entry(r).status is DocStatus.REVIEWED)


def training_folder() -> Path:
    return user_home() / "training-data"


def reviewed_training_file(workspace: Workspace, folder: Path | None = None) -> str | None:
    """The reviewed documents as a BIO file (gold and accepted entities), named by a
    hash of its content; None when no document is reviewed."""
    from fastbioner.curate.export import ExportSettings, export_documents

    docs = reviewed_documents(workspace)
    if not docs:
        return None
    folder = folder or training_folder()
    folder.mkdir(parents=True, exist_ok=True)
    scratch = folder / f".reviewed-{os.getpid()}-{id(docs)}.conll.part"
    try:
        export_documents(docs, scratch, ExportSettings("BIO / CoNLL (IOB2)", TRAINING_SOURCES))
        digest = hashlib.sha256(scratch.read_bytes()).hexdigest()[:16]
        path = folder / f"reviewed-{digest}.conll"
        if path.exists():  # the same documents, written before: that file is this one
            scratch.unlink()
        else:
            os.replace(scratch, path)
    finally:
        if scratch.exists():
            scratch.unlink()
    return str(path)
