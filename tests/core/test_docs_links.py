"""Every relative link in README.md and docs/ leads to a file that exists (and, for a
link to a heading of a Markdown page, to a heading that exists), and so does every
docs/ path the code names (an error message, a help text, a decision record in the
defaults table), so moving or renaming a page cannot leave a newcomer at a dead link.
Every page sits in one of the four sections the index describes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    out = set()
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().lower()
        out.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return out


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return [m.group(1) for m in LINK.finditer(text)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(target)
    assert broken == [], f"{page.relative_to(REPO)}: dead links {broken}"


def test_every_docs_page_is_reachable_from_the_readme():
    """A page nobody links to is a page nobody finds: each is linked from the README or
    from a page the README links to (the docs index)."""
    seen, todo = set(), [REPO / "README.md"]
    while todo:
        page = todo.pop()
        if page in seen or not page.is_file() or page.suffix != ".md":
            continue
        seen.add(page)
        for target in links(page):
            path = target.partition("#")[0]
            if path and not re.match(r"[a-z]+:", path):
                todo.append((page.parent / path).resolve())
    orphans = [str(p.relative_to(REPO)) for p in PAGES if p.resolve() not in seen]
    assert orphans == []


# The index's four sections (spaCy's and napari's arrangement). Beside the index sits only
# the contributor's guide: it is about the code, not about using the product.
SECTIONS = {"guides", "reference", "explanation", "research"}
TOP_LEVEL = {"index.md", "contributing.md"}


def test_every_docs_page_sits_in_a_section():
    stray = [str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md")
             if p.relative_to(REPO / "docs").parts[0] not in SECTIONS and p.name not in TOP_LEVEL]
    assert stray == [], "move these pages into guides/, reference/, explanation/ or research/"


# A docs path as the code and the other pages spell it out in prose ("see docs/reference/limits.md"),
# not as a relative link: `docs/` not preceded by a path character.
NAMED = re.compile(r"(?<![\w/.-])docs/[\w./-]+\.(?:md|png|svg|py)(?:#[\w-]+)?")
NAMING_FILES = (".py", ".toml", ".md", ".sh", ".cfg")
SKIPPED = {".git", ".venv", "results", "__pycache__", "node_modules"}


def named_docs_paths(root: Path = REPO) -> dict[str, list[str]]:
    """docs/ path -> the files that name it, over the repository's code and pages."""
    named: dict[str, list[str]] = {}
    for file in root.rglob("*"):
        rel = file.relative_to(root)
        if file.suffix not in NAMING_FILES or SKIPPED & set(rel.parts) or not file.is_file():
            continue
        for target in set(NAMED.findall(file.read_text(encoding="utf-8", errors="replace"))):
            named.setdefault(target, []).append(str(rel))
    return named


def test_every_docs_path_the_code_names_exists():
    dead = {}
    for target, where in named_docs_paths().items():
        path, _, anchor = target.partition("#")
        file = REPO / path
        if not file.exists() or (anchor and anchor not in anchors(file)):
            dead[target] = sorted(where)
    assert dead == {}, "docs paths named in code or prose that lead nowhere"


def test_a_moved_page_named_in_code_is_caught(tmp_path):
    """The scan above finds a path in an error message and a decision record's anchor."""
    (tmp_path / "core").mkdir()
    old_page = "docs/" "limits.md"  # split, so that this file does not name it itself
    (tmp_path / "core" / "m.py").write_text(f'raise InputError("too long (see {old_page})")\n')
    (tmp_path / "core" / "d.toml").write_text('decision = "docs/research/decisions.md#epochs"\n')
    assert named_docs_paths(tmp_path) == {old_page: ["core/m.py"],
                                          "docs/research/decisions.md#epochs": ["core/d.toml"]}
