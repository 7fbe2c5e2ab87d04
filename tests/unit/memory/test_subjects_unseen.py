"""Subjects on layouts the first rules were not written for: topic headings, mixed scripts, a second speaker."""

from __future__ import annotations

import pytest

from chronicle.distill.speaker import split_speaker
from chronicle.memory.subjects import heading_person, same_person
from tests.unit.memory.test_subjects import subjects


@pytest.mark.parametrize("heading", [
    "## 周会", "## 高考", "## 关于部署", "## 上周 的记录", "## 与产品团队的对话", "## About Deployment",
    "## Notes on API", "## Integration's notes", "## 方案 的记录",
])
def test_topic_headings_that_start_like_a_name_are_nobody(heading: str) -> None:
    """"周会" starts with the surname 周 and "Deployment" is capitalised: a topic, not a person (the lexicon's
    part of speech, the noun's ending)."""
    assert heading_person(heading) is None


@pytest.mark.parametrize(("heading", "person"), [
    ("### 与 Sarah 的对话", "Sarah"), ("## Conversation with 王芳", "王芳"), ("## Notes on 刘洋", "刘洋"),
    ("## 陈静's notes", "陈静"), ("## 与 Mike Chen 的对话", "Mike Chen"), ("## 关于 张伟", "张伟"),
    ("## 孟凡 的记录", "孟凡"), ("## 关于李娜", "李娜"), ("## About Florence", "Florence"),
])
def test_person_frames_take_a_name_of_either_script(heading: str, person: str) -> None:
    assert heading_person(heading) == person


def test_a_topic_section_leaves_its_people_unknown() -> None:
    """Lines under "## 周会" were the subject "周会": now unknown, so `--about 鲁达` counts them as mentions."""
    note = "# N\n\n## 周会\n\n- 今天和鲁达聊了他的新项目，鲁达打算下个月换工作。\n- 邱敏说她下周考完驾照就去自驾游。\n"
    assert [s for s, _ in subjects(note)] == ["", ""]


def test_another_named_speaker_in_a_persons_section_speaks_for_themself() -> None:
    """"## 与龚晓的对话" then "杜明：我住在武侯区": 杜明's address, not 龚晓's — else a scoped search for 龚晓 returns
    杜明's memory and 杜明's move could supersede 龚晓's."""
    note = ("# N\n\n## 与龚晓的对话\n\n- 龚晓：我下个月去成都出差，要待两周。\n"
            "- 杜明：我也要去成都，我住在武侯区。\n\n## Conversation with Dmitri\n\n"
            "- Dmitri: I just adopted a cat named Pixel.\n- Sam: I live in Boston now, Dmitri's my roommate.\n"
            "\n## Conversation with Caroline Smith\n\n- Caroline: I moved to Austin last spring.\n")
    assert [s for s, _ in subjects(note)] == ["龚晓", "杜明", "dmitri", "sam", "caroline smith"]


def test_same_person() -> None:
    assert same_person("张曼婷", "曼婷") and same_person("Caroline Smith", "caroline")
    assert not same_person("杜明", "龚晓") and not same_person("Sam", "Samantha Lee")


@pytest.mark.parametrize(("line", "speaker"), [
    ("Laura mentioned: I'm training for a half marathon in May.", "Laura"),
    ("Kevin texted: I'll be late tonight.", "Kevin"),
    ("邱敏对我说：我下周考驾照。", "邱敏"), ("尹浩透露：我要结婚了。", "尹浩"), ("张伟称：我住在上海。", "张伟"),
])
def test_any_speech_verb_names_the_speaker(line: str, speaker: str) -> None:
    utt = split_speaker(line)
    assert (utt.role, utt.speaker) == ("other", speaker)


@pytest.mark.parametrize("line", ["Deployment failed: disk full", "Backup completed: 3 GB", "Next step: call Tom"])
def test_a_status_line_is_not_speech(line: str) -> None:
    assert split_speaker(line).role == "own"


def test_chat_log_stamps_titles_and_nicknames() -> None:
    """A time stamp before the label, "asked me", a title, a colleague's nickname (老王) — each was a speaker named
    "kate asked me" or "老王说", or nobody."""
    note = ("# N\n\n## 群聊\n\n- [10:30] 孙丽：我下个月搬去厦门。\n- 10:45 Kate: I'm moving to Oslo next month.\n"
            "- Kate asked me: can you recommend a dentist in Oslo?\n- 14:02 - 周强：我下周去北京出差。\n"
            "- Dr. Smith said: I retire next year.\n- 老王说：我最近在学钓鱼。\n- 22:30 以后不要推送通知。\n"
            "- 老师说：我们下周考试。\n")
    assert [s for s, _ in subjects(note)] == ["孙丽", "kate", "kate", "周强", "dr. smith", "老王", "", ""]
