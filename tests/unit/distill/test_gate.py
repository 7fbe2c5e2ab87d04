"""Curated knowledge files: routing and keep/drop on a labelled set, the per-day cap, and the
knowledge-file budget on LoCoMo conversations written as daily notes — with every turn still a memory."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date
from pathlib import Path

import pytest

from chronicle.distill.chunks import NoteEntry, make_chunks
from chronicle.distill.gate import KnowledgePolicy, verdict
from chronicle.distill.offline import distill_entries, entry_memory
from chronicle.distill.sections import Item, apply
from chronicle.distill.speaker import speakers_of
from chronicle.memory.model import Memory
from tests.conftest import DATA
from tests.distill.locomo_notes import note_file_entries, write_locomo_notes

LABELLED = DATA / "memory_gate" / "labelled.jsonl"
PROFILE_FILES = {"SOUL.md", "IDENTITY.md", "USER.md"}


def labelled() -> list[dict]:
    return [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines() if line.strip()]


def decide(rows: list[dict]) -> list[tuple[bool, str]]:
    """(kept for a knowledge file, routed file) of each labelled row, by the offline engine and the gate."""
    speakers = speakers_of([r["text"] for r in rows])
    out = []
    for i, r in enumerate(rows):
        e = NoteEntry(f"e{i}", "assistant", date(2026, 1, 5), "2026-01-05.md", i, "bullet", r["text"],
                      (r["heading"],) if r["heading"] else ())
        memory = entry_memory(e, speakers)
        assert memory is not None, f"not even stored: {r['text']}"  # everything distilled is stored
        out.append((verdict(memory, KnowledgePolicy()) in ("file", "proposal"), memory.target_file))
    return out


def test_labelled_set_is_big_enough_and_bilingual() -> None:
    rows = labelled()
    origins = Counter(r["origin"].split(":")[0] for r in rows)
    assert len(rows) >= 60 and Counter(r["lang"] for r in rows)["zh"] >= 25
    assert origins["locomo"] >= 20 and origins["memorybank"] >= 10  # real lines nobody here wrote
    assert {r["file"] for r in rows} == {"MEMORY.md", "SOUL.md", "USER.md", "IDENTITY.md", "AGENTS.md", "TOOLS.md"}


def test_keep_drop_and_routing_on_the_labelled_set() -> None:
    rows = labelled()
    got = decide(rows)
    for lang in ("en", "zh"):
        idx = [i for i, r in enumerate(rows) if r["lang"] == lang]
        keep = sum(got[i][0] == rows[i]["keep"] for i in idx) / len(idx)
        route = sum(got[i][1] == rows[i]["file"] for i in idx) / len(idx)
        assert keep >= 0.9 and route >= 0.9, (lang, keep, route)
    # Never wrong where it hurts: small talk, thanks and bare questions never reach a file, and nobody
    # else's words reach the agent's persona, identity or the user's profile.
    for r, (kept, file) in zip(rows, got, strict=True):
        if not r["keep"] and r["origin"] != "written":
            assert not kept, r["text"]
        if r["file"] not in PROFILE_FILES:
            assert file not in PROFILE_FILES, r["text"]


@pytest.mark.parametrize(("text", "heading", "file"), [
    ("Gina: Wow Jon, same here! Dance is pretty much my go-to for stress relief. Got any fave styles?", "S",
     "MEMORY.md"),
    ("When answering, my style is short and direct: conclusion first, details after.", "Notes", "SOUL.md"),
    ("The user asked which dance styles fit the studio party; we listed salsa, tango and hip-hop.", "Log", "MEMORY.md"),
    ("Caroline: My name is Caroline and my role at the center is counselor.", "S", "MEMORY.md"),
    ("用户：我叫张曼婷，很喜欢绘画。", "对话", "USER.md"),
    ("王老师说今天的舞蹈课学了三种风格：华尔兹、探戈和伦巴", "会话", "MEMORY.md"),
    ("Melanie: I'll never forget the day my youngest took her first steps.", "S", "MEMORY.md"),
    ("这个周末有什么安排吗？要不要一起出去走走？", "日志", "MEMORY.md"),
])  # fmt: skip
def test_profile_files_only_for_the_agent_or_the_user(text: str, heading: str, file: str) -> None:
    speakers = frozenset({"gina", "jon", "caroline", "melanie"})
    memory = entry_memory(NoteEntry("e", "a", date(2026, 1, 5), "x.md", 1, "bullet", text, (heading,)), speakers)
    assert memory is not None and memory.target_file == file


def _memory(content: str, importance: float, target: str = "MEMORY.md") -> Memory:
    return Memory(content=content, summary=content[:40], importance=importance, targetFile=target)


def test_the_same_gate_applies_to_llm_memories() -> None:
    policy = KnowledgePolicy()
    assert verdict(_memory("Thanks so much, see you tomorrow!", 0.9), policy) == "small_talk"
    assert verdict(_memory("What time is the weekly meeting again?", 0.8), policy) == "question"
    assert verdict(_memory("The sponsor's audit is on 12 May", 0.4), policy) == "below_min_importance"
    assert verdict(_memory("The sponsor's audit is on 12 May", 0.7), policy) == "file"
    assert verdict(_memory("Answers are short, conclusion first", 0.8, "SOUL.md"), policy) == "proposal"
    assert verdict(_memory("Answers are short, conclusion first", 0.8, "SOUL.md"),
                   KnowledgePolicy(protected=())) == "file"


def _item(text: str, importance: float, day: str = "2026-01-05") -> Item:
    h = f"{abs(hash(text)):016x}"[:16].ljust(16, "0")
    return Item(f"{day}-{h[:12]}", h, text, day, f"{day}.md", importance=importance)


def test_daily_cap_keeps_the_most_important_in_note_order_and_is_idempotent() -> None:
    items = [_item("a low", 0.6), _item("b top", 0.9), _item("c mid", 0.7), _item("d other day", 0.6, "2026-01-06")]
    text, stats = apply("# MEMORY\n", items, cap=2)
    assert stats.added == 3 and stats.capped == 1
    assert "a low" not in text and text.index("b top") < text.index("c mid") and "d other day" in text
    again, stats2 = apply(text, items, cap=2)
    assert again == text and stats2.capped == 1 and stats2.present == 3
    # Bullets already in the file count: a later run for a full day adds nothing, another day still gets room.
    later, stats3 = apply(text, [_item("e top later", 0.95), _item("f", 0.7, "2026-01-06")], cap=2)
    assert "e top later" not in later and "- f <!--" in later and stats3.capped == 1
    assert apply("", items, cap=None)[1].added == 4


def locomo_entries(tmp_path: Path) -> tuple[int, list[NoteEntry]]:
    turns = write_locomo_notes(tmp_path)
    return turns, [e for path in sorted((tmp_path / "memory").glob("*.md")) for e in note_file_entries(path)]


@pytest.mark.slow  # a measurement over a whole real corpus (seconds of CPU): `make test`, not the quick layer
def test_locomo_knowledge_files_hold_at_most_20_lines_per_100_turns(tmp_path: Path) -> None:
    """788 turns of conv-26 and conv-30 made 780 knowledge-file bullets before (99 per 100 turns)."""
    turns, entries = locomo_entries(tmp_path)
    policy = KnowledgePolicy()
    stored, files = 0, {}
    for chunk in make_chunks(entries, 6000):
        for m in distill_entries(list(chunk.entries)):
            stored += 1
            if verdict(m, policy) == "file":
                files.setdefault(m.target_file, []).append(Item(m.content_hash[:12], m.content_hash, m.content,
                                                                chunk.day.isoformat(), m.source,
                                                                importance=m.importance))
            assert m.target_file not in PROFILE_FILES, m.content  # a conversation between two friends
    bullets = sum(apply("", items, policy.daily_cap)[0].count("<!-- chronicle:mem ") for items in files.values())
    assert turns == 788 and stored >= 0.98 * turns  # still one searchable memory per turn
    assert 5 <= 100 * bullets / turns <= 20, bullets
