"""Subjects, knowledge updates and as-of in the real LanceDB store (scoped search, supersession, old tables)."""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path

import lancedb
import pyarrow as pa
import pytest

from chronicle.distill.chunks import NoteEntry
from chronicle.distill.offline import distill_entries
from chronicle.ingest.notes import parse_note
from chronicle.memory.model import Memory
from chronicle.memory.subjects import normalise_subject
from chronicle.redaction.memories import redact_memory
from chronicle.redaction.redactor import Redactor
from chronicle.storage.memory.schema import TABLE, memory_schema
from chronicle.storage.memory.store import MemoryStore
from tests.memory.conftest import HashEmbedder

MEMORYBANK = Path(__file__).resolve().parents[1] / "data" / "memorybank"


def mem(content: str, subject: str, **kw) -> Memory:
    return redact_memory(Memory(content=content, summary=content[:40], importance=kw.pop("importance", 0.6),
                                target_file="USER.md", subject=subject, **kw), Redactor.build())


def at(day: str, settings) -> datetime:
    return datetime.combine(date.fromisoformat(day), datetime.min.time(), tzinfo=settings.tz_for("x"))


def memorybank_memories(layout: str) -> dict[str, list[Memory]]:
    """MemoryBank's 15 users as daily notes in `layout`, distilled by the offline rules, per day."""
    heading, user_label, reply = {
        "dialogue": ("## 与{u}的对话", "{u}: ", "AI伴侣（回复{u}）: "),
        "roles": ("## 和{u}聊天", "用户：", "助手："),
    }[layout]
    notes: dict[str, list[str]] = {}
    for user, data in json.loads((MEMORYBANK / "memory_bank_cn.json").read_text()).items():
        for day, exchanges in data["history"].items():
            lines = notes.setdefault(day, ["# Notes", ""])
            lines += [heading.format(u=user), ""]
            for ex in exchanges:
                lines += [f"- {user_label.format(u=user)}{' '.join(ex['query'].split())}",
                          f"- {reply.format(u=user)}{' '.join(ex['response'].split())}"]
            lines.append("")
    out = {}
    for day, lines in notes.items():
        entries = [NoteEntry(f"{day}:{b.line_no}", "p", date.fromisoformat(day), f"{day}.md", b.line_no, b.kind,
                             b.text, tuple(b.heading_path), b.parent) for b in parse_note("\n".join(lines))]
        out[day] = [redact_memory(m, Redactor.build()) for m in distill_entries(entries)]  # the store's gate
    return out


@pytest.mark.slow  # a measurement over a whole real corpus (seconds of CPU): `make test`, not the quick layer
def test_scoped_search_never_returns_another_users_memories(settings) -> None:
    """MemoryBank's 15 users in the layout where no label names the user: every probing question, scoped to its
    user, returns only that user's memories — and finds some (on the old code there was no subject at all)."""
    store = MemoryStore(settings, HashEmbedder())
    by_day = memorybank_memories("roles")
    store.upsert_many([(mems, at(day, settings)) for day, mems in sorted(by_day.items())])
    questions = [json.loads(line) for line in (MEMORYBANK / "probing_questions_cn.jsonl").open()]
    users = [next(iter(q)) for q in questions]
    assert len(users) == 15
    for q in questions:
        user, asked = next(iter(q.items()))
        for question in asked:
            hits = store.search(question, subject=user, limit=20)
            assert hits, (user, question)
            assert {h.subject for h in hits} == {normalise_subject(user)}, (user, question)
    everyone = {m.subject for m in store.list(limit=10_000)}
    assert everyone == {normalise_subject(u) for u in users}


def test_the_same_words_of_two_people_stay_two_memories(settings) -> None:
    store = MemoryStore(settings, HashEmbedder())
    store.upsert([mem("我喜欢看科幻电影，尤其是《星际穿越》。", "张曼婷")], created=at("2023-04-27", settings))
    events = store.upsert([mem("我喜欢看科幻电影，尤其是《星际穿越》！", "王峰")], created=at("2023-04-28", settings))
    assert events[0].event == "ADD"
    assert [h.subject for h in store.search("科幻电影", subject="王峰")] == ["王峰"]


def test_a_move_supersedes_the_old_city_and_as_of_answers_with_what_was_current(settings) -> None:
    store = MemoryStore(settings, HashEmbedder())
    store.upsert([mem("张伟：我住在北京，离公司很近。", "张伟"), mem("蔡琴：我住在北京。", "蔡琴")],
                 created=at("2024-01-05", settings))
    (event,) = store.upsert([mem("张伟：我上个月搬到了上海，新家在浦东。", "张伟")], created=at("2024-03-01", settings))
    assert "supersedes" in event.reason
    rows = {r.content: r for r in store.list()}
    old, new = rows["张伟：我住在北京，离公司很近。"], rows["张伟：我上个月搬到了上海，新家在浦东。"]
    assert old.superseded_by == new.id and old.superseded_at == new.created
    assert not rows["蔡琴：我住在北京。"].superseded_by  # another person's city: not a change
    assert [h.id for h in store.search("张伟住在哪里？", subject="张伟")] == [new.id, old.id]
    assert [h.id for h in store.search("张伟住在哪里？", subject="张伟", as_of=date(2024, 2, 1))] == [old.id]
    assert [h.id for h in store.search("张伟住在哪里？", subject="张伟", as_of=date(2024, 3, 1))] == [new.id]
    assert store.search("张伟住在哪里？", subject="张伟", as_of=date(2024, 1, 4)) == []


def test_a_table_written_before_subjects_keeps_working(settings) -> None:
    """A schema-2 table (no subject/superseded columns) is upgraded on open; its rows read as current, subject ""."""
    embedder = HashEmbedder()
    old_schema = pa.schema([f for f in memory_schema(embedder.model_name, embedder.dim)
                            if f.name not in ("subject", "superseded_by", "superseded_at")],
                           metadata=memory_schema(embedder.model_name, embedder.dim).metadata)
    db = lancedb.connect(settings.lance_uri)
    row = {f.name: None for f in old_schema} | {
        "id": "2023-01-01-aaa", "content": "The user lives in Berlin.", "content_hash": "h", "importance": 0.5,
        "vector": embedder.embed(["The user lives in Berlin."])[0].tolist(), "merged_hashes": ["h"],
        "created": datetime(2023, 1, 1), "fts_text": "the user lives in berlin", "target_file": "USER.md",
    }
    db.create_table(TABLE, pa.Table.from_pylist([row], schema=old_schema))
    store = MemoryStore(settings, embedder)
    (hit,) = store.search("Berlin", as_of=date(2023, 6, 1))
    assert hit.subject == "" and hit.superseded_by == "" and hit.superseded_at is None
    assert store.search("Berlin", subject="user") == []
    store.upsert([mem("The user moved to Munich.", "user")], created=datetime(2023, 7, 1))
    assert {h.subject for h in store.search("lives", limit=5)} == {"", "user"}


def test_cli_search_about_a_person_as_of_a_day(settings) -> None:
    """`chronicle memory search --about NAME --as-of DATE`, and "(superseded on …)" on an old fact."""
    from typer.testing import CliRunner

    from chronicle.cli.main import app

    store = MemoryStore(settings)
    store.upsert([mem("Alice: I live in Boston, close to the river.", "Alice"),
                  mem("Bob: I live in Boston too, near the harbour.", "Bob")], created=at("2024-01-05", settings))
    store.upsert([mem("Alice: I moved to Seattle last month.", "Alice")], created=at("2024-03-01", settings))
    runner = CliRunner()
    now = runner.invoke(app, ["memory", "search", "Where does Alice live?", "--about", "alice", "--limit", "5"],
                        terminal_width=300)
    assert now.exit_code == 0, now.output
    assert "Bob" not in now.output and "(superseded on 2024-03-01)" in now.output
    assert now.output.index("Seattle") < now.output.index("Boston")
    then = runner.invoke(app, ["memory", "search", "Where does Alice live?", "--about", "Alice", "--as-of",
                               "2024-02-01", "--json"])
    assert then.exit_code == 0, then.output
    assert [h["content"] for h in json.loads(then.output)] == ["Alice: I live in Boston, close to the river."]
