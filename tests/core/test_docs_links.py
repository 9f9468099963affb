"""The README and every page under docs/ link only to files that exist and to headings those files have
(GitHub's heading anchors), so a moved file or a renamed section shows up here, not in a user's browser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    lines, in_code = [], False
    for line in page.read_text().splitlines():
        in_code = in_code != line.startswith("```")
        if not in_code and line.startswith("#"):
            lines.append(line.lstrip("#"))
    return {anchor(h) for h in lines}


def test_the_anchor_of_a_heading_is_githubs():
    assert anchor(" The local stack: `make demo`") == "the-local-stack-make-demo"
    assert anchor(" Recovery units and staged recovery (paper 003)") == "recovery-units-and-staged-recovery-paper-003"
    assert anchor(" FTOPS_HOME") == "ftops_home"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_its_heading(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            broken.append(f"{target}: no heading #{fragment} in {file.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"
