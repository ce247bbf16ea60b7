"""Every relative link in README.md and docs/ leads to a file that exists (and, for a
link to a heading of a Markdown page, to a heading that exists), so moving or renaming a
page cannot leave a newcomer at a dead link."""

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
