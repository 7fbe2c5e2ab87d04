"""Subjects from layouts the rules were not first written for, in the real LanceDB store; and what `--about`
says about memories whose person is unknown."""

from __future__ import annotations

import json
from datetime import date, datetime

import pytest
from typer.testing import CliRunner

from chronicle.distill.chunks import NoteEntry
from chronicle.distill.offline import distill_entries
from chronicle.ingest.notes import parse_note
from chronicle.memory.model import Memory
from chronicle.memory.subjects import normalise_subject
from chronicle.redaction.memories import redact_memory
from chronicle.redaction.redactor import Redactor
from chronicle.settings import MINILM_EMBEDDING_MODEL
from chronicle.storage.memory.mentions import unknown_mentions
from chronicle.storage.memory.store import MemoryStore
from tests.memory.conftest import HashEmbedder

PEOPLE = {
    "周晓雯": ("我下个月要去成都出差，顺便想吃正宗的火锅。", "成都的火锅店很多，记得提前订位，避开周末的高峰。"),
    "邓子涵": ("我最近在学吉他，手指按弦按得很疼。", "刚开始练琴都会疼，每天练二十分钟，慢慢就会长茧了。"),
    "Priya": ("I am training for a half marathon in October.", "Build up your long runs slowly and rest on Mondays."),
}
# Each layout: (heading, the person's line, the reply line); {p} is the person.
LAYOUTS = {
    "role heading": ("### 用户：{p}", "{p}说：{q}", "我回答：{r}"),
    "about heading": ("## 关于{p}", "- 问：{q}", "- 答：{r}"),
    "record heading": ("## {p} 的记录", "- {q}", "- {r}"),
    "speech verbs": ("## 晚间聊天", "{p}问道：{q}", "我回答：{r}"),
    "speech verbs en": ("## Evening", "{p} said: {q}", "I replied: {r}"),
    "from/to": ("## Inbox", "From {p}: {q}", "To {p}: {r}"),
    "user prefix en": ("## User: {p}", "- {q}", "- Assistant: {r}"),
}


def note(layout: str) -> str:
    heading, said, reply = LAYOUTS[layout]
    blocks = ["# 2024-06-01"]
    for person, (q, r) in PEOPLE.items():
        blocks += [heading.format(p=person), said.format(p=person, q=q), reply.format(p=person, r=r)]
    return "\n\n".join(blocks) + "\n"


def distilled(text: str) -> list[Memory]:
    entries = [NoteEntry(f"e{b.line_no}", "p", date(2024, 6, 1), "2024-06-01.md", b.line_no, b.kind, b.text,
                         tuple(b.heading_path), b.parent) for b in parse_note(text)]
    return [redact_memory(m, Redactor.build()) for m in distill_entries(entries)]


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_turn_and_reply_belongs_to_its_person(layout: str, settings) -> None:
    memories = distilled(note(layout))
    assert len(memories) == 2 * len(PEOPLE)
    assert [m.subject for m in memories] == [normalise_subject(p) for p in PEOPLE for _ in range(2)]
    store = MemoryStore(settings, HashEmbedder())
    store.upsert(memories, created=datetime(2024, 6, 1, 12, tzinfo=settings.tz_for("x")))
    for person, (question, _) in PEOPLE.items():
        hits = store.search(question, subject=person, limit=10)
        assert len(hits) == 2 and {h.subject for h in hits} == {normalise_subject(person)}


def test_a_reply_in_a_section_of_two_speakers_answers_the_turn_before_it_or_nobody() -> None:
    text = ("## 群聊\n\n周晓雯说：我下个月要去成都出差，顺便想吃火锅。\n\n邓子涵说：我最近在学吉他，手指很疼。\n\n"
            "我回答：刚开始练琴都会疼，每天练二十分钟就好。\n\n"
            "- 今天群里很热闹，大家都在聊周末的安排和去哪里玩。\n\n"
            "我回答：你们都要注意休息，别太累了，有空一起吃饭。\n")
    assert [m.subject for m in distilled(text)] == ["周晓雯", "邓子涵", "邓子涵", "", ""]


@pytest.fixture()
def minilm_settings(settings, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CHRONICLE_EMBEDDING_MODEL", MINILM_EMBEDDING_MODEL)
    return type(settings)()


def test_about_counts_and_offers_unknown_subject_mentions(minilm_settings, embedder) -> None:
    store = MemoryStore(minilm_settings, embedder)
    created = datetime(2024, 6, 1, 12, tzinfo=minilm_settings.tz_for("x"))
    unknown, other = (redact_memory(Memory(content=text, summary=text[:8], importance=0.6, target_file="MEMORY.md",
                                           subject=subject), Redactor.build())
                      for text, subject in (("周晓雯下个月去成都出差，要订火锅店。", ""),
                                            ("邓子涵在学吉他，每天练二十分钟。", "邓子涵")))
    store.upsert([unknown, other], created=created)
    assert unknown_mentions(store, "周晓雯") == 1 and unknown_mentions(store, "邓子涵") == 0
    assert unknown_mentions(store, "50%_") == 0  # LIKE wildcards in a name match literally

    from chronicle.cli.main import app

    home = ["--home", str(minilm_settings.home)]
    runner = CliRunner()
    silent = runner.invoke(app, ["memory", "search", "成都出差", "--about", "周晓雯", "--json", *home])
    assert silent.exit_code == 0, silent.output
    assert json.loads(silent.stdout) == []
    assert "1 memory of unknown person mention '周晓雯'" in " ".join(silent.stderr.split())
    assert "--include-mentions" in silent.stderr
    found = runner.invoke(app, ["memory", "search", "成都出差", "--about", "周晓雯", "--include-mentions", "--json",
                                *home])
    assert found.exit_code == 0, found.output
    assert [h["content"] for h in json.loads(found.stdout)] == [unknown.content]
    # Another person's memories never come with the mentions.
    scoped = runner.invoke(app, ["memory", "search", "吉他", "--about", "周晓雯", "--include-mentions", "--json",
                                 *home])
    assert all("吉他" not in h["content"] for h in json.loads(scoped.stdout))


def test_a_frame_update_supersedes_in_the_store_and_as_of_keeps_the_old_fact(settings) -> None:
    """Phrasings no phrase rule reads: a device and a job change, each by its own person, in the real store."""
    store = MemoryStore(settings, HashEmbedder())
    tz = settings.tz_for("x")
    pairs = [("Tom", "Tom: I still use my old Android phone.", "Tom: I switched to an iPhone last week."),
             ("李娜", "李娜：我在一家三甲医院做护士。", "李娜：我换工作了，现在在一家药企做临床监查员。")]
    for n, (who, old, new) in enumerate(pairs):
        store.upsert([mem(old, who)], created=datetime(2024, 1, 1 + n, 12, tzinfo=tz))
        store.upsert([mem(new, who)], created=datetime(2024, 3, 1 + n, 12, tzinfo=tz))
    rows = {m.content: m for m in store.list(limit=10)}
    for who, old, new in pairs:
        assert rows[old].superseded_by == rows[new].id and not rows[new].superseded_by
        hits = store.search(old, subject=who, limit=5)  # the old words themselves: still the new fact first
        assert hits[0].content == new
        assert store.search(old, subject=who, limit=5, as_of=date(2024, 2, 1))[0].content == old


def mem(text: str, subject: str) -> Memory:
    return redact_memory(Memory(content=text, summary=text[:20], importance=0.6, target_file="USER.md",
                                subject=subject), Redactor.build())
