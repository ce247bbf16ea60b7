"""Help > Keyboard shortcuts: every menu command with its keys, read from the actions
themselves when the page opens, so it can never disagree with what the keys do."""

from __future__ import annotations

from html import escape

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QMenuBar, QTextBrowser, QVBoxLayout, QWidget

# Said once under the table: gestures that are not menu commands.
NOTES = ("In the reading view, select text (Shift+arrows, or the mouse) and press a label's number to "
         "add an entity snapped to whole tokens. The curation keys (entities, labels, boundaries) work in "
         "the reading view and in the entity table; Tab moves between panels. The Adjudicate keys work in "
         "the Adjudication queue (File > Compare with another annotation…). Annotate all occurrences… works "
         "on the current entity or selected text; Remove relation works in the Relations panel (Ctrl+Shift+L goes "
         "there). Guide: docs/guides/curation-tools.md. In the Review queue (Curate menu): A or Return accept, "
         "X reject, 1-9 relabel, S skip, Backspace undo; U and L go to the next undecided and next low-confidence "
         "suggestion. Guide: docs/guides/curator-loop.md.")


def shortcut_rows(bar: QMenuBar) -> list[tuple[str, str, str]]:
    """(menu path, command, keys) for every visible action with a key, in menu order."""
    rows: list[tuple[str, str, str]] = []

    def walk(actions: list[QAction], path: str) -> None:
        for action in actions:
            if action.isSeparator() or not action.isVisible():
                continue
            # (An action whose text changes, Undo's "Undo Relabel as …", names itself.)
            title = action.property("help_name") or action.text().replace("&", "")
            if action.menu() is not None:
                walk(action.menu().actions(), f"{path} › {title}" if path else title)
            elif action.shortcuts():
                keys = ", ".join(k.toString(QKeySequence.SequenceFormat.NativeText) for k in action.shortcuts())
                rows.append((path, title, keys))

    walk(bar.actions(), "")
    return rows


def shortcuts_html(bar: QMenuBar) -> str:
    parts = ["<table cellspacing='0' cellpadding='3'>"]
    # One heading per menu: a menu's commands after a submenu join those before it
    # (the Curate menu's were split three times around Boundary and Relations).
    menus: dict[str, list[tuple[str, str]]] = {}
    for path, title, keys in shortcut_rows(bar):
        menus.setdefault(path, []).append((title, keys))
    for path, rows in menus.items():
        parts.append(f"<tr><td colspan='2'><br><b>{escape(path)}</b></td></tr>")
        for title, keys in rows:
            parts.append(f"<tr><td style='padding-right:24px'>{escape(title)}</td>"
                         f"<td><code>{escape(keys)}</code></td></tr>")
    parts.append(f"</table><p>{escape(NOTES)}</p>")
    return "".join(parts)


class ShortcutsDialog(QDialog):
    def __init__(self, bar: QMenuBar, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.text = QTextBrowser()
        self.text.setHtml(shortcuts_html(bar))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.text)
        layout.addWidget(buttons)
        self.resize(560, 640)
