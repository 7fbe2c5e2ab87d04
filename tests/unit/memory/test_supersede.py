"""Knowledge updates (chronicle.memory.supersede) and time in ranking (chronicle.memory.ranking): pure rules."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from chronicle.memory.ranking import SUPERSEDED_PENALTY, decayed, rerank
from chronicle.memory.records import SearchHit, StoredMemory
from chronicle.memory.subjects import normalise_subject
from chronicle.memory.supersede import conflicts, facts, plan_supersessions

CASES = Path(__file__).resolve().parents[2] / "data" / "memory_updates" / "cases.jsonl"
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def row(rid: str, text: str, subject: str, day: int = 0, superseded_by: str = "") -> StoredMemory:
    return StoredMemory(id=rid, content=text, summary=text, target_file="MEMORY.md", tags=[], importance=0.5,
                        key_info=[], source="", created=T0 + timedelta(days=day), updated=None, content_hash=rid,
                        language="", source_entry_ids=[], flow_run_id=None, subject=subject,
                        superseded_by=superseded_by)


def changes(rows: list[StoredMemory], new: list[str] | None = None) -> set[tuple[str, str]]:
    return {(c.old_id, c.new_id) for c in plan_supersessions(rows, new or [r.id for r in rows])}


def test_a_move_supersedes_the_old_city_with_the_new_date() -> None:
    rows = [row("a", "张伟：我住在北京。", "张伟", 0), row("b", "张伟：我上个月搬到了上海。", "张伟", 30)]
    (change,) = plan_supersessions(rows, ["a", "b"])
    assert (change.old_id, change.new_id, change.at) == ("a", "b", T0 + timedelta(days=30))


@pytest.mark.parametrize(("old", "new"), [
    (("蒋楠", "我住在北京。"), ("蔡琴", "我住在上海。")),                  # two people's cities: not a change
    (("alice", "I live in Paris."), ("bob", "I live in Rome.")),
    (("吕青", "我住在天津。"), ("吕青", "我妹妹搬到了上海。")),            # a relative moved, not the subject
    (("eli", "I live in Oslo."), ("eli", "My sister moved to Bergen.")),
    (("丁一", "我喜欢喝咖啡。"), ("丁一", "我喜欢吃火锅。")),              # another attribute
    (("faye", "My favourite food is curry."), ("faye", "My favourite colour is green.")),
    (("gus", "My phone number is 555 0111 2222."), ("gus", "His phone number is 555 0333 4444.")),
    (("张伟", "我住在北京。"), ("张伟", "我还是住在北京，离公司近。")),      # the same value again
    (("张伟", "我在一家公司工作。"), ("张伟", "我在这个行业中工作很多年了。")),  # vague values state nothing
    (("张伟", "我住在北京。"), ("张伟", "你住在哪里？")),                  # a question states nothing
    (("", "I live in Paris."), ("", "I live in Rome.")),                   # unknown subject: never
])
def test_not_a_change(old: tuple[str, str], new: tuple[str, str]) -> None:
    assert changes([row("a", old[1], old[0], 0), row("b", new[1], new[0], 30)]) == set()


def test_a_backfilled_older_note_is_superseded_by_the_stored_newer_one() -> None:
    stored = row("b", "I moved to Seattle.", "alice", 30)
    old = row("a", "I live in Boston.", "alice", 0)
    assert changes([stored, old], new=["a"]) == {("a", "b")}


def test_reversed_decisions() -> None:
    assert changes([row("a", "I decided to sell my car.", "sam"),
                    row("b", "I decided not to sell my car after all.", "sam", 5)]) == {("a", "b")}
    assert changes([row("a", "我决定暑假去日本旅游。", "邓丽"),
                    row("b", "我决定暑假不去日本旅游了。", "邓丽", 5)]) == {("a", "b")}
    assert changes([row("a", "I decided to sell my car.", "sam"),
                    row("b", "I decided to paint the fence.", "sam", 5)]) == set()


# Changes the rules do not see, each with why (the data's README says so too). A miss here that starts being
# read right fails the test, so the list stays true.
KNOWN_MISSES = {"zh-habit-01": "开组会: a habit of three letters is too short to be told apart from another"}


def test_the_labelled_update_set_reads_right() -> None:
    """Every case of tests/data/memory_updates: a change where labelled (but the known misses), never where not."""
    cases = [json.loads(line) for line in CASES.open(encoding="utf-8")]
    assert len(cases) >= 60 and {c["lang"] for c in cases} == {"zh", "en"}
    for c in cases:
        old, new = c["old"], c["new"]
        want = c["change"] and c["id"] not in KNOWN_MISSES
        so, sn = normalise_subject(old["subject"]), normalise_subject(new["subject"])
        got = so == sn and conflicts(facts(old["text"], so), facts(new["text"], sn), new["text"])
        assert got is want, c["id"]
        # as distilled from a note: behind the speaker's label
        labelled = [f"{s['subject']}{'：' if c['lang'] == 'zh' else ': '}{s['text']}" for s in (old, new)]
        got = so == sn and conflicts(facts(labelled[0], so), facts(labelled[1], sn), labelled[1])
        assert got is want, c["id"]


def test_a_redacted_number_changes_only_when_the_statement_says_so() -> None:
    old = row("a", "朱琳：我的手机号是[REDACTED:phone]。", "朱琳")
    assert changes([old, row("b", "朱琳：我的新手机号是[REDACTED:phone]。", "朱琳", 9)]) == {("a", "b")}
    assert changes([old, row("b", "朱琳：我的手机号是[REDACTED:phone]，随时联系。", "朱琳", 9)]) == set()
    assert changes([row("a", "Noah: My email is [REDACTED:email].", "noah"),
                    row("b", "Noah: My email address is now [REDACTED:email].", "noah", 9)]) == {("a", "b")}


def hit(rid: str, score: float, *, days_old: float = 0, superseded_by: str = "", importance: float = 0.5) -> SearchHit:
    base = row(rid, rid, "x", 0, superseded_by)
    return SearchHit(**{**vars(base), "importance": importance, "created": T0 - timedelta(days=days_old)},
                     score=score, semantic=score, cosine=score)


def test_current_facts_rank_first_and_never_below_their_successor() -> None:
    hits = [hit("old", 0.9, superseded_by="new"), hit("new", 0.6), hit("other", 0.7)]
    ranked = rerank(hits, now=T0, importance_weight=0.3)
    assert [h.id for h in ranked] == ["other", "new", "old"]
    assert ranked[2].score == pytest.approx(0.9 - SUPERSEDED_PENALTY)
    # as-of searches have already kept only what was current then: nothing is demoted
    assert rerank(hits, now=T0, importance_weight=0.3, demote_superseded=False)[0].id == "old"


def test_importance_half_life_is_off_by_default_and_only_reorders() -> None:
    hits = [hit("stale", 0.80, days_old=60, importance=1.0), hit("fresh", 0.78, importance=1.0)]
    assert [h.id for h in rerank(hits, now=T0, importance_weight=0.3)] == ["stale", "fresh"]
    aged = rerank(hits, now=T0, importance_weight=0.3, half_life_days=30)
    assert [h.id for h in aged] == ["fresh", "stale"] and len(aged) == 2
    assert decayed(1.0, T0 - timedelta(days=30), T0, 30) == pytest.approx(0.5)
    assert decayed(0.8, T0, T0, 0) == 0.8
