"""A knowledge file's size budget: past it the least important bullets leave the file (superseded ones first),
the human's text is never touched, and a rerun changes nothing (chronicle.distill.sections.fit, sync_file)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from chronicle.distill.knowledge import sync_file
from chronicle.distill.sections import Item, apply, fit
from chronicle.redaction.redactor import Redactor

HUMAN = "# MEMORY\n\nHand-written: the lab phone is at the front desk. Keep this line.\n"

GATE = Redactor.build()  # the knowledge-file sink's own gate, built-in rules


def item(mid: str, text: str, importance: float, supersedes: tuple[str, ...] = ()) -> Item:
    digest = hashlib.sha256(text.encode()).hexdigest()
    day = mid[:10]
    return Item(mid, digest, text, day, f"{day}.md", importance=importance, supersedes=supersedes)


def bullet_ids(text: str) -> set[str]:
    return set(re.findall(r"chronicle:mem id=(\S+)", text))


def weights(items: list[Item]):
    return lambda ids: {i.memory_id: i.importance for i in items if i.memory_id in ids}


def managed_chars(text: str) -> int:
    return sum(len(re.sub(r"<!--.*?-->", "", line)[2:].strip()) for line in text.splitlines()
               if line.startswith("- ") and "chronicle:mem" in line)


# Twelve days of notes, one fact a day (each 30-40 characters), importance varying.
DAYS = [item(f"2026-03-{d:02d}-m{d:02d}", f"Fact of day {d}: {'detail ' * (2 + d % 3)}".strip(), (d * 7 % 10) / 10)
        for d in range(1, 13)]


@pytest.mark.parametrize("budget", [60, 150, 300])
def test_the_least_important_bullets_leave_until_the_file_fits(budget: int) -> None:
    full, _ = apply(HUMAN, DAYS)
    text, moved = fit(full, budget, weights(DAYS))
    assert text.startswith(HUMAN) and managed_chars(text) <= budget < managed_chars(full)
    kept = bullet_ids(text)
    gone = [i for i in DAYS if i.memory_id not in kept]
    assert moved == len(gone) > 0
    # Everything that stayed is at least as important as everything that left (older first on a tie).
    assert min(i.importance for i in DAYS if i.memory_id in kept) >= max(i.importance for i in gone)
    # A day whose only bullet left leaves no empty section behind, and no run of blank lines.
    assert text.count("chronicle:begin") == len(kept) and "\n\n\n" not in text
    assert fit(text, budget, weights(DAYS)) == (text, 0)


def test_superseded_facts_leave_first_and_a_rerun_with_the_same_items_changes_nothing() -> None:
    old = item("2026-03-01-aaaa", "王老师晚上 22:30 以后不要推送通知", 0.9)
    other = item("2026-03-01-bbbb", "王老师喝咖啡只要美式，不加糖", 0.2)
    new = item("2026-03-09-cccc", "王老师改成晚上 23:00 以后不要推送通知", 0.9, supersedes=("2026-03-01-aaaa",))
    first, _ = apply(HUMAN, [old, other])
    text, _ = apply(first, [new])
    assert "superseded on" in text
    importance = weights([old, other, new])
    budget = managed_chars(text) - 5
    fitted, moved = fit(text, budget, importance)
    assert moved == 1 and "22:30" not in fitted and "美式" in fitted and "23:00" in fitted  # the history went
    # The next run of the same notes brings the same items: the file comes out the same.
    again, _ = apply(fitted, [old, other, new])
    assert fit(again, budget, importance) == (fitted, 1 if again != fitted else 0)


def test_a_bullet_the_store_does_not_know_counts_as_middling() -> None:
    full, _ = apply(HUMAN, DAYS[:3])
    text, moved = fit(full, managed_chars(full) - 1, lambda ids: {DAYS[0].memory_id: 0.9, DAYS[1].memory_id: 0.1})
    assert moved == 1 and DAYS[1].memory_id not in bullet_ids(text)  # 0.1 < the unknown one's 0.5 < 0.9


def test_sync_file_asks_for_the_importance_of_what_is_already_there(tmp_path: Path) -> None:
    asked: list[set[str]] = []

    def importance(ids: set[str]) -> dict[str, float]:
        asked.append(set(ids))
        return {i.memory_id: i.importance for i in DAYS if i.memory_id in ids}

    first = sync_file(tmp_path, "MEMORY.md", DAYS[:6], keep=2, redactor=GATE, budget=100_000, importance=importance)
    assert first.changed and first.stats.moved_out == 0 and asked == []  # within budget: nothing looked up
    budget = managed_chars((tmp_path / "MEMORY.md").read_text(encoding="utf-8")) // 2
    second = sync_file(tmp_path, "MEMORY.md", DAYS[6:], keep=2, redactor=GATE, budget=budget, importance=importance)
    text = (tmp_path / "MEMORY.md").read_text(encoding="utf-8")
    assert asked == [{i.memory_id for i in DAYS[:6]}]  # only the bullets not among the items
    assert second.stats.moved_out > 0 and managed_chars(text) <= budget and second.backup is not None
    third = sync_file(tmp_path, "MEMORY.md", DAYS[6:], keep=2, redactor=GATE, budget=budget, importance=importance)
    assert not third.changed and (tmp_path / "MEMORY.md").read_text(encoding="utf-8") == text
