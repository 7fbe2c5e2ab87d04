"""Deterministic stats and the faithfulness guard (pure functions)."""

from __future__ import annotations

import pytest

from chronicle.weekly.faithfulness import check_report as _check_report
from chronicle.weekly.faithfulness import cited_ids, count_claims, parse_number, strip_citations
from chronicle.weekly.stats import parse_llm_stats, week_stats
from tests.weekly.helpers import ZH_WEEK, week_input


def check_report(summary, week, **kw):  # type: ignore[no-untyped-def]
    """The checks of what a report says: these fragments leave most of their week out on purpose (what a
    report omits is `guard.coverage`'s, tested in tests/unit/weekly/test_coverage.py)."""
    return [r for r in _check_report(summary, week, **kw) if r["kind"] != "omitted_event"]


def test_week_stats_counts_every_type_and_actor() -> None:
    entries = [{"type": t, "actor": a} for t, a in
               [("enrollment", "CRC-A"), ("enrollment", "CRC-B"), ("ae", "CRC-A"), ("sae", "CRC-A"),
                ("deviation", "CRC-B"), ("query", "DM"), ("decision", "PI"), ("message", None), ("visit", "CRC-A")]]
    stats = week_stats(entries, enrolled_before=5)
    assert {k: stats[k] for k in ("entries", "enrolled", "enrolled_total", "ae", "sae", "deviations", "queries",
                                  "decisions", "messages")} == {
        "entries": 9, "enrolled": 2, "enrolled_total": 7, "ae": 1, "sae": 1, "deviations": 1, "queries": 1,
        "decisions": 1, "messages": 1}
    assert stats["by_type"]["visit"] == 1 and sum(stats["by_type"].values()) == 9
    assert stats["by_actor"] == {"CRC-A": 4, "CRC-B": 2, "(unknown)": 1, "DM": 1, "PI": 1}


def test_llm_stats_schema_refuses_unknown_fields_and_negative_counts() -> None:
    ok, error = parse_llm_stats({"enrolled": 2, "subjects": ["XH201-01-003"]})
    assert ok == {"enrolled": 2, "subjects": ["XH201-01-003"], "risks": []} and error is None
    assert parse_llm_stats({"enrolled": -1})[0] is None
    assert parse_llm_stats({"enrolled": 1, "mood": "good"})[1]


def test_citations_are_found_in_all_spellings_and_stripped() -> None:
    text = "入组 2 人 [E2]；SAE [E5, E7]，偏离【E6】。"
    assert cited_ids(text) == ["E2", "E5", "E7", "E6"]
    assert strip_citations(text) == "入组 2 人；SAE，偏离。"


@pytest.mark.parametrize(("token", "value"), [("3", 3), ("三", 3), ("两", 2), ("十二", 12), ("二十", 20), ("two", 2)])
def test_numbers_in_digits_and_words(token: str, value: int) -> None:
    assert parse_number(token) == value


@pytest.mark.parametrize(("text", "field", "value"), [
    ("本周入组 3 人", "enrolled", 3),
    ("新入组三例受试者", "enrolled", 3),
    ("累计入组 15 人", "enrolled_total", 15),
    ("新增 AE 2 例", "ae", 2),
    ("2 例 SAE", "sae", 2),
    ("严重不良事件 1 例", "sae", 1),
    ("方案偏离 4 项", "deviations", 4),
    ("无 SAE", "sae", 0),
    ("3 subjects enrolled this week", "enrolled", 3),
    ("2 new AEs and 1 SAE", "ae", 2),
    ("1 protocol deviation", "deviations", 1),
    ("40 enrolled in total", "enrolled_total", 40),
    ("no SAEs were reported", "sae", 0),
])
def test_count_claims_zh_and_en(text: str, field: str, value: int) -> None:
    claims = {(c["field"], c["value"]) for c in count_claims(text)}
    assert (field, value) in claims


def test_total_is_not_also_read_as_weekly_enrolment() -> None:
    assert [(c["field"], c["value"]) for c in count_claims("累计入组 15 人")] == [("enrolled_total", 15)]
    assert [c["field"] for c in count_claims("2 new AEs")] == ["ae"]  # not an SAE


def test_check_flags_foreign_citations_and_wrong_counts_only() -> None:
    week = week_input(ZH_WEEK, enrolled_before=10)  # enrolled 2, total 12, ae 1, sae 1, deviations 1
    assert check_report("本周入组 2 人（累计 12 人），新增 AE 1 例，SAE 1 例 [E5]，偏离 1 项 [E6]。", week) == []
    reasons = check_report("本周入组 3 人 [E2]，SAE 2 例 [E99]。", week)
    kinds = {(r["kind"], r.get("field")) for r in reasons}
    assert kinds == {("unknown_citation", None), ("count_mismatch", "enrolled"), ("count_mismatch", "sae")}
    assert next(r for r in reasons if r["kind"] == "unknown_citation")["ids"] == ["E99"]


def test_a_number_quoted_from_the_cited_entry_is_not_a_claim() -> None:
    week = week_input(ZH_WEEK)  # E3 says "新入组 1 例" while the week enrolled 2
    assert check_report("- 北京协和医院新入组 1 例：XH201-01-004 [E3]", week) == []
    # Without the citation (or citing another entry) the same words are a weekly claim, and wrong.
    assert check_report("- 北京协和医院新入组 1 例 [E2]", week)[0]["field"] == "enrolled"


def test_llm_stats_that_disagree_are_flagged() -> None:
    week = week_input(ZH_WEEK)
    reasons = check_report("要点见流水账 [E1]", week, llm_stats={"enrolled": 5, "sae": 1, "subjects": []})
    assert reasons == [{"kind": "llm_stats_mismatch", "field": "enrolled", "claimed": 5, "actual": 2}]
