"""USER.md keeps one section per person and shows the current fact; replaced facts go to history (pure)."""

from __future__ import annotations

import hashlib

from chronicle.distill.sections import Item, apply


def item(mid: str, text: str, day: str, subject: str, supersedes: tuple[str, ...] = ()) -> Item:
    digest = hashlib.sha256(text.encode()).hexdigest()
    return Item(mid, digest, text, day, f"{day}.md", subject=subject, supersedes=supersedes)


OLD = item("2024-01-05-aaa", "张伟：我住在北京。", "2024-01-05", "张伟")
OTHER = item("2024-01-05-bbb", "蔡琴：我住在北京。", "2024-01-05", "蔡琴")
NEW = item("2024-03-01-ccc", "张伟：我搬到了上海。", "2024-03-01", "张伟", supersedes=("2024-01-05-aaa",))


def sections_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("## ")]


def test_one_section_per_person_and_the_human_text_kept() -> None:
    text, _ = apply("# USER\n\nWritten by hand.\n", [OLD, OTHER, item("2024-01-06-ddd", "张伟：我喜欢喝咖啡。",
                                                                           "2024-01-06", "张伟")], cap=10)
    assert text.startswith("# USER\n\nWritten by hand.\n")
    assert sections_of(text) == ["## 👤 张伟", "## 👤 蔡琴"]
    assert text.index("我喜欢喝咖啡") < text.index("蔡琴")  # the second day of 张伟 joined his section


def test_the_current_fact_is_shown_and_the_old_one_only_in_history() -> None:
    first, _ = apply("# USER\n", [OLD, OTHER], cap=10)
    text, _ = apply(first, [NEW], cap=10)
    zhang = text[text.index("## 👤 张伟"): text.index("## 👤 蔡琴")]
    assert "我搬到了上海" in zhang and "我住在北京" not in zhang
    history = text[text.index("## 🕰 History"):]
    assert "张伟：我住在北京。 (superseded on 2024-03-01) <!-- chronicle:mem id=2024-01-05-aaa" in history
    assert "蔡琴" in text[: text.index("## 🕰 History")]  # another person's same city stays current
    again, stats = apply(text, [NEW, OLD], cap=10)  # a rerun changes nothing
    assert again == text and stats.added == 0
    later, _ = apply(text, [item("2024-04-01-eee", "王芳：我住在杭州。", "2024-04-01", "王芳")], cap=10)
    assert sections_of(later)[-1] == "## 🕰 History (superseded facts)"  # history stays last
