#!/usr/bin/env bash
# Builds the wheel, installs it (not editable) into a fresh environment outside the
# checkout, and tags a sample abstract there with the shipped default model: the
# package must find its data (default model, samples) through importlib.resources.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q torch==2.13.0
"$work/venv/bin/pip" wheel -q --no-deps -w "$work/dist" "$repo"
"$work/venv/bin/pip" install -q "$work"/dist/*.whl
cd "$work"
export FASTBIONER_HOME="$work/home"
where="$("$work/venv/bin/python" -c 'import fastbioner; print(fastbioner.__file__)')"
case "$where" in "$repo"/*) echo "check-wheel: fastbioner was imported from the checkout ($where)" >&2; exit 1;; esac
sample="$("$work/venv/bin/python" -c 'from fastbioner.models.shipped import samples_folder; print(next(samples_folder().glob("*.pubtator")))')"
case "$sample" in "$repo"/*) echo "check-wheel: the samples were found in the checkout ($sample)" >&2; exit 1;; esac
"$work/venv/bin/fastbioner" tag "$sample" --out "$work/tagged.jsonl" --format jsonl --threads 1
entities="$("$work/venv/bin/python" -c 'import json,sys; print(sum(len(json.loads(l).get("spans", [])) for l in open(sys.argv[1])))' "$work/tagged.jsonl")"
echo "check-wheel: the installed wheel tagged $sample from $work: $entities entities"
[ "$entities" -gt 0 ]
