"""Markup from a log is inert in reports, artifacts and knowledge files: rendered by a real Markdown renderer
(markdown-it, CommonMark with raw HTML allowed, as a permissive viewer would), it makes no element that fetches,
runs or links anything, and its words are still there."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar

import pytest
from markdown_it import MarkdownIt

from chronicle.distill.knowledge import sync_file
from chronicle.distill.proposals import make_proposal, proposals_markdown
from chronicle.distill.sections import Item
from chronicle.markup import inert
from chronicle.memory.model import Memory
from chronicle.redaction.redactor import Redactor
from chronicle.weekly.model import WeekReport
from chronicle.weekly.report_md import outcome_markdown, report_markdown
from chronicle.weeks import IsoWeek

HOSTILE = [
    "![track](https://t.example.com/p.gif?u=1)", "! [x] (http://evil.example/a.png)", "![x][ref]\n\n[ref]: https://e.example/i.png",
    '<img src="https://t.example.com/p.gif">', "<IMG SRC=//t.example.com/p.gif>", "<script>fetch('https://e.example')</script>",
    '<iframe src="https://e.example"></iframe>', "[click me](javascript:alert(1))", "[docs](https://e.example/x)",
    "<https://e.example/auto>", "<a href='https://e.example'>x</a>", '<link rel="stylesheet" href="https://e.example/s.css">',
    "<svg onload=alert(1)>", "<!-- chronicle:end -->",
]


class _Active(HTMLParser):
    """Elements of rendered HTML that fetch, run or link: tags other than text markup, or any URL attribute."""

    TEXT: ClassVar[set[str]] = {"ul", "ol", "li", "p", "em", "strong", "code", "pre", "h1", "h2", "h3", "table",
                                "thead", "tbody", "tr",
            "th", "td", "blockquote", "br", "hr"}

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.TEXT or attrs:
            self.found.append(f"<{tag} {attrs}>")

    def handle_comment(self, data: str) -> None:
        if "chronicle:" not in data:  # our own section markers
            self.found.append(f"<!--{data}-->")


class _Finder:
    @staticmethod
    def search(html: str) -> list[str]:
        parser = _Active()
        parser.feed(html)
        return parser.found


_ACTIVE = _Finder()


def render(markdown: str) -> str:
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


@pytest.mark.parametrize("text", HOSTILE)
def test_inert_text_renders_without_active_elements(text: str) -> None:
    html = render(f"- {inert(text)} [E3]\n")
    assert not _ACTIVE.search(html), html
    assert inert(inert(text)) == inert(text)  # idempotent: a rerun writes the same bytes
    words = [w for w in re.findall(r"[a-z]{4,}", text, re.I) if w.lower() not in ("href", "http", "https")]
    assert all(w in html for w in words), (words, html)


@pytest.mark.parametrize("text", HOSTILE)
def test_report_and_outcome_artifacts_are_inert(text: str) -> None:
    report = WeekReport("XH305", IsoWeek.parse("2026-W05"), f"本周 SAE 1 例：{text} [E3]", {"sae": 1}, {"E3": "id1"},
                        "fake", "weekly-v3", "h", 3, "llm", True,
                        [{"kind": "uncited", "sentence": text, "detail": "states a fact but cites no entry"}])
    assert not _ACTIVE.search(render(report_markdown(report)))


@pytest.mark.parametrize("text", HOSTILE)
def test_proposal_tables_are_inert(text: str) -> None:
    memory = Memory(content=f"rule {text}", summary="s", importance=0.8, targetFile="MEMORY.md", source="d.md")
    proposal = make_proposal(memory, day=date(2026, 3, 1), source="d.md", memory_id=None, reason=text,
                             suspected_injection=True, flow_run_id="r")
    assert not _ACTIVE.search(render(proposals_markdown([proposal], pending_total=1, title="t")))


def test_knowledge_files_are_inert_but_keep_urls_readable(tmp_path: Path) -> None:
    items = [Item(memory_id=f"m{i}", content_hash=f"{i:016x}", text=f"note {text}", day="2026-03-01", source="d.md",
                  action="append", importance=0.8) for i, text in enumerate(HOSTILE)]
    sync_file(tmp_path, "MEMORY.md", items, keep=3, redactor=Redactor.build(), now=datetime(2026, 3, 1, tzinfo=UTC))
    written = (tmp_path / "MEMORY.md").read_text(encoding="utf-8")
    assert not _ACTIVE.search(render(written)), render(written)
    assert "https://e.example/x" in written  # an agent still reads the URL
    assert written.count("<!-- chronicle:end -->") == 1  # a quoted marker cannot end the managed section
    again = sync_file(tmp_path, "MEMORY.md", items, keep=3, redactor=Redactor.build())
    assert not again.changed


def test_outcome_notes_are_inert() -> None:
    assert not _ACTIVE.search(render(outcome_markdown("t", [], notes=[HOSTILE[0], HOSTILE[3]])))


def test_the_stats_table_names_the_counts_in_the_reports_language() -> None:
    from chronicle.weekly.report_md import stats_table

    stats = {"entries": 41, "enrolled": 0, "enrolled_total": 80, "ae": 1, "sae": 0}
    zh = stats_table(stats, "本周记录 41 条：入组 0 人（累计 80 人），新增 AE 1 例。")
    assert zh.splitlines()[0].startswith("| 记录 | 本周入组 | 累计入组 | AE | SAE | 方案偏离 |")
    assert zh.splitlines()[2].startswith("| 41 | 0 | 80 | 1 | 0 |")
    en = stats_table(stats, "One subject enrolled at site 03; no adverse events this week.")
    assert "| log entries | enrolled this week | enrolled in total |" in en and "enrolled_total" not in en
