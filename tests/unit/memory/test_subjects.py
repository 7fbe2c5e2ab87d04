"""Subjects from note structure (chronicle.memory.subjects via the offline distiller): one test per layout."""

from __future__ import annotations

from datetime import date

import pytest

from chronicle.distill.chunks import NoteEntry
from chronicle.distill.offline import distill_entries
from chronicle.ingest.notes import parse_note
from chronicle.memory.subjects import heading_person, normalise_subject, user_name

DAY = date(2023, 4, 27)


def entries(note: str) -> list[NoteEntry]:
    return [NoteEntry(f"e{b.line_no}", "p", DAY, "2023-04-27.md", b.line_no, b.kind, b.text, tuple(b.heading_path),
                      b.parent) for b in parse_note(note)]


def subjects(note: str, user: str | None = None) -> list[tuple[str, str]]:
    return [(m.subject, m.content[:12]) for m in distill_entries(entries(note), user)]


ZH_TURNS = ("我最近在看《三体》，讲的是外星文明和人类的故事，特别精彩。",
            "这本书确实很经典，你最喜欢里面哪个人物呢？我很想听听你的看法。")


@pytest.mark.parametrize(("heading", "user_label", "reply_label"), [
    ("## 张曼婷", "张曼婷：", "AI伴侣："),                       # MemoryBank as first measured
    ("## 与张曼婷的对话", "张曼婷: ", "AI伴侣（回复张曼婷）: "),   # the other ordinary layout, ASCII colon
    ("## 和张曼婷聊天", "用户：", "助手："),                      # no label names the user
])
def test_memorybank_layouts_give_the_user_of_the_section(heading: str, user_label: str, reply_label: str) -> None:
    note = (f"# Notes\n\n{heading}\n\n- {user_label}{ZH_TURNS[0]}\n- {reply_label}{ZH_TURNS[1]}\n\n"
            f"## 王峰\n\n- 王峰：我今天在公园里跑了一个小时，感觉整个人都轻松了很多。\n")
    got = subjects(note)
    assert [s for s, _ in got] == ["张曼婷", "张曼婷", "王峰"]


def test_reply_label_names_whom_it_answers_even_under_another_heading() -> None:
    note = "## 今日对话\n\n- AI伴侣（回复李雪）: 厦门的鼓浪屿很值得去，你可以在那里慢慢走走看看海。\n"
    assert [s for s, _ in subjects(note)] == ["李雪"]


@pytest.mark.parametrize("note", [
    "## 14:00 Caroline & Melanie\n\n- Caroline: I went to the LGBTQ support group yesterday and it was powerful.\n"
    "- Melanie: That sounds amazing, I am so proud of you for going there.\n",
    "### Session 1 (8 May 2023)\n\n**Caroline**: I went to the LGBTQ support group yesterday and it was powerful.\n\n"
    "**Melanie**: That sounds amazing, I am so proud of you for going there.\n",
])
def test_locomo_layouts_give_the_speaker(note: str) -> None:
    assert [s for s, _ in subjects(note)] == ["caroline", "melanie"]


def test_names_with_accents_are_people_in_labels_speech_verbs_and_headings() -> None:
    note = ("## Monday\n\n- Zoë: I moved to Lyon last spring and I work at the library there now.\n\n"
            "Tomás said: My favourite style of dance is salsa, every Friday night.\n\n"
            "From José: I will bring the projector to the meeting on Thursday.\n\n"
            "## Conversation with Søren Ødegård\n\n- I am training for the Copenhagen marathon in May.\n")
    assert [s for s, _ in subjects(note)] == ["zoë", "tomás", "josé", "søren ødegård"]


def test_user_lines_take_the_name_usermd_gives() -> None:
    note = "## Chat\n\n- User: I prefer short answers without emoji, please keep that in mind.\n"
    assert [s for s, _ in subjects(note)] == ["user"]
    assert [s for s, _ in subjects(note, user_name("# USER\n\n- Name: Alice Chen\n"))] == ["alice chen"]
    assert user_name("## 基本信息\n名字：王芳\n") == "王芳"
    assert user_name("# USER\n\nLikes tea.\n") is None


def test_own_notes_and_topic_headings_have_no_subject() -> None:
    note = ("## 决策\n\n- 数据库选型定为 PostgreSQL 16，备份每天凌晨两点执行一次。\n\n"
            "## Infrastructure\n\n- The staging cluster runs on three nodes behind one load balancer.\n")
    assert [s for s, _ in subjects(note)] == ["", ""]


def test_a_line_that_opens_with_a_person_is_about_them() -> None:
    """An assistant's notes say whose preference a line is by opening with them: a surname and a title, the user's
    name, or someone who speaks in the note. A name that is only a word's first character is not one."""
    note = ("## 用户偏好 / 作息\n\n- 王老师习惯早上 7:30 前看消息，晚上 22:30 以后不要推送通知。\n"
            "- **李医生** prefers short reports with the conclusion first.\n"
            "- 高总结了一下本周的入组进度，三家中心都按计划推进。\n"
            "- 王工作日每天下午三点以后都在门诊，不方便接电话。\n"
            "- SAE 相关消息无论几点都要立刻提醒王老师，不能等到第二天。\n\n"
            "## Notes\n\n- Caroline: I finally signed up for the pottery class downtown!\n"
            "- Caroline went camping with her kids at the lake last weekend.\n"
            "- Carolines and other plants need watering twice a week in summer.\n")
    assert [s for s, _ in subjects(note)] == ["王老师", "李医生", "", "", "", "caroline", "caroline", ""]
    assert [s for s, _ in subjects("- 周立每周三下午固定去医院复查，需要提前一天提醒他。\n", user="周立")] == ["周立"]


@pytest.mark.parametrize(("heading", "person"), [
    ("张曼婷", "张曼婷"), ("与张曼婷的对话", "张曼婷"), ("和周立的聊天记录", "周立"),
    ("Conversation with Caroline", "Caroline"), ("欧阳娜娜", "欧阳娜娜"), ("决策", None), ("今日总结", None),
    ("Infrastructure", None), ("14:00 Caroline & Melanie", None),
    ("2023-04-27 · 张曼婷", "张曼婷"),
])
def test_heading_person(heading: str, person: str | None) -> None:
    assert heading_person(heading) == person


def test_subject_key_is_normalised() -> None:
    assert normalise_subject("  Caroline  Smith ") == "caroline smith"
    assert normalise_subject("Ｃａｒｏｌｉｎｅ") == "caroline"
    assert normalise_subject(None) == ""


def test_the_llm_reply_names_the_subject_and_it_is_validated_the_same_way() -> None:
    from chronicle.distill.reply_checks import validate

    item = {"content": "Caroline moved to Boston in May 2023.", "summary": "Caroline moved to Boston.",
            "keyInfo": [], "tags": [], "importance": 0.7, "targetFile": "MEMORY.md", "action": "append"}
    checked = validate([item | {"subject": "  Caroline "}, item | {"content": "Melanie paints.", "subject": 42}, item
                        | {"content": "The deploy runs nightly."}], source="2023-05-08.md", entry_ids=["e1"])
    assert [m.subject for m in checked.memories] == ["caroline", "", ""]
