#!/usr/bin/env bash
# Installs the system libraries Qt loads, only where one is missing (a bare
# Debian/Ubuntu image): those of the offscreen platform (tests, rendering without a
# display) and those of the X11 (xcb) platform a desktop session needs. Without the
# latter Qt aborts at start-up; fastbioner-gui checks for them first and names the
# packages missing (fastbioner_gui/xcb_check.py lists the same ones). Does nothing
# where they are all present.
set -euo pipefail
# library (as ldconfig lists it) = Debian/Ubuntu package
declare -A PACKAGES=(
  [libEGL.so.1]=libegl1 [libfontconfig.so.1]=libfontconfig1 [libxkbcommon.so.0]=libxkbcommon0
  [libGL.so.1]=libgl1 [libdbus-1.so.3]=libdbus-1-3
  [libxcb-cursor.so.0]=libxcb-cursor0 [libxcb-icccm.so.4]=libxcb-icccm4 [libxcb-keysyms.so.1]=libxcb-keysyms1
  [libxcb-image.so.0]=libxcb-image0 [libxcb-render-util.so.0]=libxcb-render-util0
  [libxkbcommon-x11.so.0]=libxkbcommon-x11-0 [libxcb-util.so.1]=libxcb-util1 [libxcb-randr.so.0]=libxcb-randr0
  [libxcb-shm.so.0]=libxcb-shm0 [libxcb-sync.so.1]=libxcb-sync1 [libxcb-xfixes.so.0]=libxcb-xfixes0
  [libxcb-render.so.0]=libxcb-render0 [libxcb-shape.so.0]=libxcb-shape0 [libxcb-xkb.so.1]=libxcb-xkb1
  [libxcb.so.1]=libxcb1 [libX11-xcb.so.1]=libx11-xcb1 [libX11.so.6]=libx11-6
)
# Listed once: "ldconfig -p | grep -q" fails now and then under pipefail (grep -q
# exits at the first match and ldconfig dies of SIGPIPE), naming present libraries.
known=$(ldconfig -p)
missing=""
for lib in "${!PACKAGES[@]}"; do
  grep -qF "$lib (" <<<"$known" || missing="$missing ${PACKAGES[$lib]}"
done
[ -z "$missing" ] && exit 0
echo "system-deps: missing$missing; installing with apt-get" >&2
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  # shellcheck disable=SC2086 # one word per package
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
else
  echo "system-deps: run as root with apt-get, or install:$missing" >&2
fi
