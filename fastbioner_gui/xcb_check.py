"""Before the application exists: does Qt's X11 (xcb) platform have the system
libraries it loads? Without one of them Qt aborts the process (SIGABRT) with a
message that names ``xcb-cursor0`` whatever is actually missing; this check names
the Debian/Ubuntu packages really missing, in one line, and the app exits 2.

Nothing here imports Qt: it runs before the display is opened."""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Callable, Mapping

# The shared libraries the xcb platform plugin (libqxcb.so, libQt6XcbQpa.so.6) links,
# each with the Debian/Ubuntu package that ships it. scripts/system-deps.sh installs
# the same packages.
XCB_LIBRARIES: dict[str, str] = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb.so.1": "libxcb1",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
}


def uses_xcb(environ: Mapping[str, str] = os.environ, platform: str = sys.platform) -> bool:
    """Whether Qt will pick its xcb platform: asked for by name, or (no platform
    named) a DISPLAY outside a Wayland session."""
    if not platform.startswith("linux"):
        return False
    qpa = environ.get("QT_QPA_PLATFORM", "").split(";")[0].split(":")[0].strip()
    if qpa:
        return qpa == "xcb"
    wayland = environ.get("WAYLAND_DISPLAY") and environ.get("XDG_SESSION_TYPE") == "wayland"
    return bool(environ.get("DISPLAY")) and not wayland


def _loadable(soname: str) -> bool:
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def missing_xcb_packages(loadable: Callable[[str], bool] = _loadable) -> list[str]:
    """The packages whose library cannot be loaded (dlopen), in the table's order."""
    return list(dict.fromkeys(pkg for lib, pkg in XCB_LIBRARIES.items() if not loadable(lib)))


def missing_message(packages: list[str]) -> str:
    return (f"fastbioner-gui: the X11 display needs system libraries that are missing: {' '.join(packages)} "
            f"(install them with scripts/system-deps.sh, or apt-get install {' '.join(packages)}; "
            "or set QT_QPA_PLATFORM=offscreen to render without a display)")
