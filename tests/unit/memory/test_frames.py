"""Attribute frames (chronicle.memory.frames via supersede.plan_supersessions): updates phrased any way, and
no supersession on real conversations (MemoryBank's questions, LoCoMo's turns)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from chronicle.memory.records import StoredMemory
from chronicle.memory.supersede import plan_supersessions

DATA = Path(__file__).resolve().parents[2] / "data"
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def row(rid: str, text: str, subject: str, day: int = 0) -> StoredMemory:
    return StoredMemory(id=rid, content=text, summary=text, target_file="MEMORY.md", tags=[], importance=0.5,
                        key_info=[], source="", created=T0 + timedelta(days=day), updated=None, content_hash=rid,
                        language="", source_entry_ids=[], flow_run_id=None, subject=subject)


def superseded(old: str, new: str, subject: str = "x") -> bool:
    return bool(plan_supersessions([row("a", old, subject), row("b", new, subject, 40)], ["a", "b"]))


@pytest.mark.parametrize(("old", "new"), [
    ("我在社区医院当药剂师。", "我跳槽了，现在是一家外企的人事专员。"),                       # job
    ("我是一名出租车司机。", "我已经转行，开了一家面包店，当起了店主。"),
    ("I work as an accountant for a small firm.", "I quit and became a yoga instructor."),
    ("I'm a barista at the corner café.", "I changed careers and I'm a paramedic now."),
    ("我用的一直是三星手机。", "上周把手机换成了华为。"),                                      # device
    ("My car is an old Honda Civic.", "I replaced my car with a Tesla Model 3."),
    ("我每天晚上九点去健身房。", "健身改到早上七点了。"),                                      # schedule
    ("My swimming lessons are on Mondays.", "My swimming lessons moved to Fridays."),
    ("王老师晚上 22:30 以后不要推送通知", "王老师改成晚上 23:00 以后不要推送通知"),          # a habit no table names
    ("我每周二晚上七点上钢琴陪练。", "钢琴陪练调到每周四晚上八点了。"),
    ("Please, no calls before 9 am.", "From now on no calls before 10 am."),
    ("我以前每天都喝两瓶可乐。", "我戒掉了可乐，现在只喝白开水。"),                              # diet
    ("I'm vegan and never eat cheese.", "I stopped being vegan, I eat meat and cheese again."),
    ("我的腰椎间盘突出，疼得厉害。", "我的腰已经康复了，可以正常弯腰了。"),                         # health
    ("My knee hurts after every run.", "My knee has recovered completely after physio."),
])
def test_updates_in_phrasings_the_set_does_not_hold(old: str, new: str) -> None:
    assert superseded(old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("我用的是小米手机。", "我给我爸换了一部苹果手机。"),                 # a relative's device
    ("I drive a Toyota.", "My wife just bought a Volvo."),
    ("我每天早上六点起床。", "我每天晚上十点睡觉。"),                      # two activities
    ("I go running on Sundays.", "My piano lessons are on Tuesdays."),
    ("我不吃辣。", "我现在喜欢喝乌龙茶。"),                               # two food groups
    ("My blood pressure is normal.", "My friend's blood pressure is high now."),
    ("我是一名护士。", "我想换工作，去当程序员。"),                        # a wish is not a change
    ("I'm a teacher.", "I want to become a pilot someday."),
    ("我喝咖啡。", "我也喝茶。"),                                        # one more habit, no cue
    ("晚上 22:30 以后不要推送通知", "早上 7:30 前看消息"),                 # two habits, each with its time
    ("每周二晚上七点上钢琴陪练", "每周四晚上八点也上钢琴陪练"),             # one more lesson, no cue
    ("No calls before 9 am.", "Standup moved to 10 am."),
    ("I use a Samsung phone.", "Do you think I should switch to an iPhone?"),  # a question
])
def test_not_an_update(old: str, new: str) -> None:
    assert not superseded(old, new)


@pytest.mark.slow  # a measurement over a whole real corpus (seconds of CPU): `make test`, not the quick layer
def test_real_conversations_supersede_nothing() -> None:
    """MemoryBank's user questions (per user, in time order) and LoCoMo's turns (per speaker): no statement there
    replaces another, so any supersession is a false one."""
    rows = []
    for user, data in json.loads((DATA / "memorybank" / "memory_bank_cn.json").read_text()).items():
        for k, (_, exchanges) in enumerate(sorted(data["history"].items())):
            rows += [row(f"{user}-{k}-{i}", ex["query"], user, k * 10 + i) for i, ex in enumerate(exchanges)]
    locomo = DATA / "locomo" / "locomo10.json"
    for sample in json.loads(locomo.read_text()) if locomo.is_file() else []:
        conv, n = sample["conversation"], 0
        for key in sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k[8:])):
            for turn in conv[key]:
                n += 1
                rows.append(row(f"{sample['sample_id']}-{turn['dia_id']}", turn["text"],
                                f"{sample['sample_id']}:{turn['speaker']}", n))
    assert len(rows) > 500
    assert plan_supersessions(rows, [r.id for r in rows]) == []
