"""The app applies the library's review-status rule on re-tagging (fastbioner.curate.curation),
not one of its own."""

from __future__ import annotations

from fastbioner.curate.project import DocStatus


def test_the_app_applies_the_librarys_rule_not_its_own(monkeypatch):
    from fastbioner.curate import curation
    from fastbioner.io.documents import Document, Source, Span
    from fastbioner_gui import curation as app_curation
    from fastbioner_gui.models.workspace import Workspace

    workspace = Workspace()
    workspace.add_documents([Document("d1", "Aspirin helps.")])
    seen = []
    monkeypatch.setattr(curation, "status_after_tagging",
                        lambda status, replace=False: seen.append((status, replace)) or DocStatus.REVIEWED)

    change = app_curation.tagging_change(workspace, 0, [Span(0, 7, "Chemical", Source.MODEL)], "m")
    assert seen == [(DocStatus.NEW, False)] and change.after.status is DocStatus.REVIEWED
