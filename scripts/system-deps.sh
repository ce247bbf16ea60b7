#!/usr/bin/env bash
# Installs the system libraries Qt's offscreen platform loads, only where one is missing
# (a bare Debian/Ubuntu image). Does nothing where they are all present.
set -euo pipefail
missing=$(for lib in libEGL.so.1 libfontconfig.so.1 libxkbcommon.so.0 libGL.so.1 libdbus-1.so.3; do
  ldconfig -p | grep -q "$lib" || echo "$lib"; done)
[ -z "$missing" ] && exit 0
echo "system-deps: missing $missing; installing with apt-get" >&2
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    libegl1 libfontconfig1 libxkbcommon0 libgl1 libdbus-1-3 >/dev/null
else
  echo "system-deps: run as root with apt-get, or install: libegl1 libfontconfig1 libxkbcommon0 libgl1 libdbus-1-3" >&2
fi
