"""Knowledge files stay readable: the same fact is written once, a replaced fact changes its own line, and the
share of markup is measured (pure: chronicle.distill.sections, chronicle.distill.readability)."""

from __future__ import annotations

import hashlib

import pytest

from chronicle.distill.readability import markup_share
from chronicle.distill.sections import Item, apply, fact_key


def item(mid: str, text: str, day: str, subject: str = "", supersedes: tuple[str, ...] = ()) -> Item:
    digest = hashlib.sha256(text.encode()).hexdigest()
    return Item(mid, digest, text, day, f"{day}.md", subject=subject, supersedes=supersedes)


@pytest.mark.parametrize(("a", "b"), [
    ("截至 2026-02-14，IIT-07 累计入组 80 例", "截至 2026-02-21，IIT-07 累计入组 80 例"),
    ("As of 3 May 2024 the cohort holds 41 patients.", "As of 10 May 2024, the cohort holds 41 patients"),
    ("周例会固定在周三 14:00，腾讯会议", "周例会固定在周三14:00 腾讯会议。"),
])
def test_the_same_fact_on_another_day_is_written_once(a: str, b: str) -> None:
    text, _ = apply("# MEMORY\n", [item("2026-02-14-a", a, "2026-02-14")])
    again, stats = apply(text, [item("2026-02-21-b", b, "2026-02-21")])
    assert again == text and stats.repeated == 1
    assert fact_key(a) == fact_key(b)


@pytest.mark.parametrize(("a", "b"), [
    ("截至 2026-02-14，IIT-07 累计入组 80 例", "截至 2026-02-21，IIT-07 累计入组 86 例"),  # a new number
    ("周例会固定在周三 14:00", "周例会改到周四 14:00"),
    ("ok", "ok!"),  # too short to call the same fact: both kept
])
def test_different_facts_both_stay(a: str, b: str) -> None:
    text, _ = apply("", [item("2026-02-14-a", a, "2026-02-14")])
    _, stats = apply(text, [item("2026-02-21-b", b, "2026-02-21")])
    assert stats.added == 1 and stats.repeated == 0


def test_a_changed_preference_takes_the_line_of_the_old_one() -> None:
    old = item("2024-01-05-a", "王老师晚上 22:30 以后不要推送通知", "2024-01-05", "王老师")
    keep = item("2024-01-05-b", "王老师喝咖啡只要美式", "2024-01-05", "王老师")
    first, _ = apply("# USER\n", [old, keep])
    new = item("2024-02-01-c", "王老师改成晚上 23:00 以后不要推送通知", "2024-02-01", "王老师",
               supersedes=("2024-01-05-a",))
    text, _ = apply(first, [new])
    section = text[text.index("## 👤 王老师"): text.index("## 🕰 History")]
    assert section.index("23:00") < section.index("美式")  # in the old line's place, not appended after
    assert "22:30" not in section and "22:30" in text[text.index("## 🕰 History"):]
    assert apply(text, [new])[0] == text  # a rerun changes nothing


def test_markup_share() -> None:
    assert markup_share("") == 0.0
    assert markup_share("plain facts only") == 0.0
    marked = "## Title\n\n- fact <!-- chronicle:mem id=2024-01-05-a hash=0123456789abcdef -->\n"
    assert 0.6 < markup_share(marked) < 0.9
    assert markup_share("- **bold** fact") == pytest.approx(5 / 13)  # "-" and two "**" of 13 visible
