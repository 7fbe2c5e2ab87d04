"""The docs cannot drift: every relative link resolves, generated blocks match the code, the README stays a
landing page."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", REPO / "bench" / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _broken_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # code blocks are not links
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        if path and not (page.parent / path).exists():
            broken.append(target)
    return broken


def test_every_relative_link_of_the_docs_resolves() -> None:
    broken = {str(p.relative_to(REPO)): b for p in PAGES if (b := _broken_links(p))}
    assert broken == {}


def test_the_link_check_sees_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("[ok](page.md) [gone](missing.md#x) [web](https://example.org) [anchor](#here)\n"
                    "```\n[in code](nowhere.md)\n```\n", encoding="utf-8")
    assert _broken_links(page) == ["missing.md#x"]


def test_the_readme_configuration_table_is_generated_from_the_settings_class() -> None:
    from chronicle.settings import Settings
    from chronicle.settings_checks import field_of
    from scripts.config_table import operator_fields, readme_block, render

    assert all(field_of(Settings, path) for _, path in operator_fields())
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert readme_block(readme) == render(), "run `python -m scripts.config_table --write`"


def test_the_readme_is_a_landing_page() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250
