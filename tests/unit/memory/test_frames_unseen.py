"""Knowledge updates in phrasings the first frames did not read, and the wrong pairings they made."""

from __future__ import annotations

import pytest

from chronicle.memory.supersede import conflicts, facts


def replaces(old: str, new: str, subject: str = "x") -> bool:
    return conflicts(facts(old, subject), facts(new, subject), new)


@pytest.mark.parametrize(("old", "new"), [
    ("Greg: I'm a heavy coffee drinker, four cups a day.", "Greg: I cut out coffee completely, only herbal tea now."),
    ("石磊：我每天抽一包烟。", "石磊：我已经戒烟了，一根都不抽。"),
    ("I smoke a pack a day.", "I quit smoking in May."),
    ("石磊：我不吃辣。", "石磊：我现在能吃辣了。"),
    ("Omar: I'm vegetarian, have been for years.", "Omar: I started eating fish again."),
    ("Julia works at Google as a product manager.", "Julia no longer works at Google; she joined Stripe."),
    ("我在腾讯上班。", "我已经不在腾讯上班了。"),
    ("I live in Denver.", "I don't live in Denver anymore."),
])
def test_a_change_in_other_words_replaces_the_old_fact(old: str, new: str) -> None:
    subject = old.split(":")[0].split("：")[0].casefold() if ":" in old or "：" in old else "julia"
    assert replaces(old, new, subject if len(subject) < 10 else "x")


@pytest.mark.parametrize(("old", "new"), [
    ("Greg: I'm a heavy coffee drinker, four cups a day.", "Greg: I quit nursing, and now I'm a software developer."),
    ("I'm a dog lover.", "I quit my job."),
    ("I work as a nurse.", "I quit smoking in May."),
    ("我吃素。", "我开始养鱼了。"),
    ("I live in Denver.", "I never lived in Boston."),
    ("I live in Denver.", "My sister no longer lives in Denver."),
])
def test_another_attribute_or_holder_replaces_nothing(old: str, new: str) -> None:
    """A trait noun ("coffee drinker", "dog lover") is not a job, quitting a habit is not quitting a job, keeping
    fish is not eating it, and an ended value ends only the same value of the same holder."""
    assert not replaces(old, new, "greg" if old.startswith("Greg") else "x")
