"""The About box: what the app is and the versions it runs on."""

from __future__ import annotations

import platform

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import qVersion
from PySide6.QtWidgets import QMessageBox, QWidget

from fastbioner import __version__


def versions() -> dict[str, str]:
    found = {"FastBioNER": __version__, "Python": platform.python_version(), "Qt": qVersion(),
             "PySide6": pyside_version}
    for name in ("torch", "transformers", "tokenizers", "pyqtgraph"):
        try:
            module = __import__(name)
            found[name] = getattr(module, "__version__", "?")
        except ImportError:
            found[name] = "not installed"
    return found


def show_about(parent: QWidget | None = None) -> None:
    rows = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in versions().items())
    QMessageBox.about(parent, "About FastBioNER Studio",
                      "<h3>FastBioNER Studio</h3><p>Tag disease and chemical mentions in PubMed "
                      "abstracts, curate them, and distil fast models (the FastBioNER method).</p>"
                      f"<table>{rows}</table>")
