"""The documents panel's table: one row per document (id, title, entity counts per
label, how unsure the model was of it, status), and a proxy that filters by search
text and status."""

from __future__ import annotations

from collections import Counter

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt

from fastbioner.curate.project import DocStatus
from fastbioner.infer.uncertainty import METADATA_KEY, stored_uncertainty

from .palette import label_color
from .refilter import refilter_rows
from .workspace import Workspace

Index = QModelIndex | QPersistentModelIndex
ID_COLUMN, TITLE_COLUMN = 0, 1
# Roles as plain ints: data() runs thousands of times when a thousand rows are sorted,
# and comparing ints is much cheaper there than comparing Qt enum objects.
DISPLAY_ROLE = int(Qt.ItemDataRole.DisplayRole.value)
TOOLTIP_ROLE = int(Qt.ItemDataRole.ToolTipRole.value)
ALIGN_ROLE = int(Qt.ItemDataRole.TextAlignmentRole.value)
SORT_ROLE = int(Qt.ItemDataRole.UserRole.value) + 1   # numbers sort as numbers
STATUS_ROLE = int(Qt.ItemDataRole.UserRole.value) + 2
SEARCH_ROLE = int(Qt.ItemDataRole.UserRole.value) + 3
_RIGHT = int((Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter).value)


class DocumentListModel(QAbstractTableModel):
    def __init__(self, workspace: Workspace, parent=None):
        super().__init__(parent)
        self.workspace = workspace
        self._labels = workspace.labels()
        self._counts: dict[int, Counter] = {}
        # While two annotations are compared: row -> (text, sort value, tooltip) or None,
        # shown in an agreement column before the status (see fastbioner_gui.adjudication).
        self._agreement = None
        workspace.projectReset.connect(self._reset)
        workspace.documentsAdded.connect(self._added)
        workspace.documentsChanged.connect(self._changed)
        workspace.labelsChanged.connect(self._relabel)

    # Shape ----------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.workspace.project.entries)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else self._status_column + 1

    @property
    def _status_column(self) -> int:
        return 3 + len(self._labels) + (self._agreement is not None)

    def uncertainty_column(self) -> int:
        """How unsure the model that tagged the document was of it (issue 47): the
        expected number of wrongly tagged words (fastbioner.infer.uncertainty); empty
        before tagging. Sorting by it, most unsure first, is the review queue's order."""
        return 2 + len(self._labels)

    def agreement_column(self) -> int:
        """The agreement column, or -1 when nothing is compared."""
        return 3 + len(self._labels) if self._agreement is not None else -1

    def set_agreement(self, cell) -> None:
        self.beginResetModel()
        self._agreement = cell
        self.endResetModel()

    def refresh_agreement(self, row: int) -> None:
        """Row ``row``'s agreement was measured again."""
        col = self.agreement_column()
        if col >= 0 and 0 <= row < self.rowCount():
            self.dataChanged.emit(self.index(row, col), self.index(row, col))

    def status_column(self) -> int:
        return self._status_column

    def label_of_column(self, column: int) -> str | None:
        i = column - 2
        return self._labels[i] if 0 <= i < len(self._labels) else None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal:
            return None
        label = self.label_of_column(section)
        if role == Qt.ItemDataRole.DisplayRole:
            if section == ID_COLUMN:
                return "PMID"
            if section == TITLE_COLUMN:
                return "Title"
            if section == self.status_column():
                return "Status"
            if section == self.agreement_column():
                return "Agree"
            if section == self.uncertainty_column():
                return "Unsure"
            # Count columns are headed by the label's colour and its first letters (the
            # whole name in the tooltip), so the title keeps the panel's width.
            return label if len(label) <= 4 else label[:3] + "."
        if role == Qt.ItemDataRole.ToolTipRole and section == self.uncertainty_column():
            return ("How unsure the model was of the document: the words it expects to have tagged "
                    "wrongly. Sort on it (most unsure first) to review where the model needs you most.")
        if role == Qt.ItemDataRole.ToolTipRole and section == self.agreement_column():
            return "F1 of the other annotation against this one; (n): differences left to decide"
        if role == Qt.ItemDataRole.ToolTipRole and label is not None:
            return f"{label} entities"
        if role == Qt.ItemDataRole.DecorationRole and label is not None:
            return label_color(label)
        return None

    def data(self, index: Index, role: int = DISPLAY_ROLE):
        role = int(role)
        if role not in (DISPLAY_ROLE, SORT_ROLE, TOOLTIP_ROLE, ALIGN_ROLE, STATUS_ROLE, SEARCH_ROLE):
            return None
        row, col = index.row(), index.column()
        entry = self.workspace.project.entries[row]
        doc = entry.document
        if self._agreement is not None and col == self._status_column - 1:
            return self._agreement_data(row, role)
        if col == self._status_column - 1 - (self._agreement is not None):
            return self._uncertainty_data(entry, role)
        if role == SORT_ROLE or role == DISPLAY_ROLE:
            if col == ID_COLUMN:
                return doc.id
            if col == TITLE_COLUMN:
                return doc.title or doc.text[:120]
            if col == self._status_column:
                return entry.status.value
            count = self._count(row)[self._labels[col - 2]]
            return count if role == SORT_ROLE else str(count)
        label = self.label_of_column(col)
        if role == TOOLTIP_ROLE and col == TITLE_COLUMN:
            origin = f"\nfrom {entry.origin}" if entry.origin else ""
            tagged = f"\ntagged by {entry.tagged_by}" if entry.tagged_by else ""
            return f"{doc.title or doc.id}{origin}{tagged}"
        if role == ALIGN_ROLE and label is not None:
            return _RIGHT
        if role == STATUS_ROLE:
            return entry.status.value
        if role == SEARCH_ROLE:
            return f"{doc.id}\n{doc.text}"
        return None

    def _uncertainty_data(self, entry, role: int):
        if role == STATUS_ROLE:
            return entry.status.value
        if role == SEARCH_ROLE:
            return f"{entry.document.id}\n{entry.document.text}"
        if role == ALIGN_ROLE:
            return _RIGHT
        value = stored_uncertainty(entry.document.metadata)
        if role == SORT_ROLE:
            return -1.0 if value is None else value
        if value is None:
            return "" if role == DISPLAY_ROLE else "not tagged yet"
        if role == DISPLAY_ROLE:
            return f"{value:.1f}"
        figure = entry.document.metadata.get(METADATA_KEY) or {}
        tokens = figure.get("tokens")
        per = f" in {tokens} words" if isinstance(tokens, int) else ""
        return f"about {value:.1f} words tagged wrongly{per}, the model expects"

    def _agreement_data(self, row: int, role: int):
        cell = self._agreement(row)
        if role == STATUS_ROLE:
            return self.workspace.project.entries[row].status.value
        if role == SEARCH_ROLE:
            doc = self.workspace.project.entries[row].document
            return f"{doc.id}\n{doc.text}"
        if role == ALIGN_ROLE:
            return _RIGHT
        if cell is None:
            return -1.0 if role == SORT_ROLE else None
        text, value, tip = cell
        return {DISPLAY_ROLE: text, SORT_ROLE: value, TOOLTIP_ROLE: tip}.get(role)

    def _count(self, row: int) -> Counter:
        counts = self._counts.get(row)
        if counts is None:
            counts = Counter(s.label for s in self.workspace.document(row).spans)
            self._counts[row] = counts
        return counts

    # Following the workspace ---------------------------------------------
    def _reset(self) -> None:
        self.beginResetModel()
        self._counts.clear()
        self._labels = self.workspace.labels()
        self.endResetModel()

    def _added(self, first: int, last: int) -> None:
        self.beginInsertRows(QModelIndex(), first, last)
        self.endInsertRows()

    def _changed(self, first: int, last: int) -> None:
        for row in range(first, last + 1):
            self._counts.pop(row, None)
        self.dataChanged.emit(self.index(first, 0), self.index(last, self.columnCount() - 1))

    def _relabel(self) -> None:
        if self.workspace.labels() != self._labels:
            self._reset()


class DocumentFilter(QSortFilterProxyModel):
    """Keeps rows whose id or text contains the search text (case-insensitive) and
    whose status is one of those chosen (None: any)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._text = ""
        self._status: frozenset[str] | None = None
        self.setSortRole(SORT_ROLE)
        self.setSortCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)

    def set_text(self, text: str) -> None:
        refilter_rows(self, lambda: setattr(self, "_text", text.strip().casefold()))

    def set_status(self, status: DocStatus | tuple[DocStatus, ...] | None) -> None:
        """Show documents of one status, of any of several (a tuple), or of any (None)."""
        if not status:
            value = None
        else:
            value = frozenset(DocStatus(s).value for s in (status if isinstance(status, tuple) else (status,)))
        refilter_rows(self, lambda: setattr(self, "_status", value))

    def filterAcceptsRow(self, row: int, parent: Index) -> bool:
        index = self.sourceModel().index(row, 0, parent)
        if self._status is not None and index.data(STATUS_ROLE) not in self._status:
            return False
        return not self._text or self._text in index.data(SEARCH_ROLE).casefold()
