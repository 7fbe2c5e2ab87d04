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
    ("I work at Google.", "I got a job at Netflix."), ("我在腾讯上班。", "我换工作了。"),
    ("我在一家银行做柜员。", "我现在在字节跳动上班了。"), ("我是护士。", "我现在是一名程序员。"),
    ("I work as a nurse at the city hospital.", "I'm a teacher at a new school now."),
    ("I teach at Lincoln High.", "I retired last month."), ("我每天喝咖啡。", "我不喝咖啡了。"),
    ("我腰疼。", "我的腰不疼了。"), ("My back hurts a lot.", "My back pain is gone."),
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
    ("I am a teacher.", "I'm a teacher at a new school now."), ("I'm a dog lover.", "I'm now a member of the club."),
    ("我是老师。", "这是护士站。"), ("我喜欢吃辣。", "我不喜欢吃甜的了。"),
    ("I lost my job last month.", "I lost my keys again, it's become a weekly ritual for me!"),
])
def test_another_attribute_or_holder_replaces_nothing(old: str, new: str) -> None:
    """A trait noun ("coffee drinker", "dog lover") is not a job, quitting a habit is not quitting a job, keeping
    fish is not eating it, and an ended value ends only the same value of the same holder."""
    assert not replaces(old, new, "greg" if old.startswith("Greg") else "x")
