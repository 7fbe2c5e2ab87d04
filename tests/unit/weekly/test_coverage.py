"""What a weekly report leaves out (chronicle/weekly/guard/coverage.py), and the ordinary writing it must not flag."""

from __future__ import annotations

import pytest

from chronicle.weekly.engine import offline_week
from chronicle.weekly.faithfulness import check_report
from tests.weekly.helpers import ZH_WEEK, week_input

# ZH_WEEK: E2/E3 enrolments (XH201-01-003, XH201-01-004), E4 AE of XH201-01-001, E5 SAE of XH201-01-002,
# E6 deviation of XH201-01-001, E7 decision.
EN_WEEK = [("enrollment", "Subject AB12-03-007 randomised to arm B after screening"),
           ("sae", "SAE: AB12-03-002 hospitalised for febrile neutropenia (grade 3), reported within 24 h"),
           ("message", "thanks, see you tomorrow")]


def _kinds(report: str, items: list[tuple[str, str]]) -> list[str]:
    return [r["kind"] for r in check_report(report, week_input(items))]


@pytest.mark.parametrize("report", [
    "本周一切正常，受试者状态良好。[E3]", "项目整体无异常，各项工作顺利推进 [E2]。", "本周平安无事 [E7]。",
    "本周一切顺利 [E2]；无其他变化 [E3]。",
])
def test_an_all_clear_in_an_eventful_week_is_denied_and_the_sae_omitted(report: str) -> None:
    kinds = _kinds(report, ZH_WEEK)
    assert "denied_event" in kinds and "omitted_event" in kinds, kinds


@pytest.mark.parametrize("report", [
    "No issues this week [E1].", "All is well; nothing to report [E1].", "Everything went smoothly [E3].",
])
def test_english_all_clears_are_denied(report: str) -> None:
    reasons = check_report(report, week_input(EN_WEEK))
    assert {"denied_event", "omitted_event"} <= {r["kind"] for r in reasons}
    assert any(r["kind"] == "omitted_event" and r["field"] == "sae" for r in reasons)


def test_an_sae_left_out_of_an_otherwise_cited_report_is_omitted() -> None:
    report = ("XH201-01-003 入组成功 [E2]。XH201-01-004 完成 C1D1 给药 [E3]。XH201-01-001 恶心 2 级 [E4]。"
              "XH201-01-001 C2D1 超窗 4 天 [E6]。")
    reasons = check_report(report, week_input(ZH_WEEK))
    assert [(r["kind"], r["field"], r["ids"]) for r in reasons] == [("omitted_event", "sae", ["E5"])]


@pytest.mark.parametrize("report", [
    # cited, named by subject id (no citation needed to cover), or counted like the stats
    "入组：XH201-01-003 [E2]。AE：XH201-01-001 [E4]。SAE：XH201-01-002 住院 [E5]。偏离：XH201-01-001 超窗 [E6]。",
    "入组 2 人，AE 1 例，SAE 1 例，方案偏离 1 项。",
])
def test_covered_weeks_are_not_flagged(report: str) -> None:
    assert "omitted_event" not in _kinds(report, ZH_WEEK)


@pytest.mark.parametrize("report", [
    # a label glued to the subject id by a full-width colon, the entry copied word for word
    "- AE：AE 上报：XH201-01-001 恶心 2 级，与研究药物可能有关 [E4]。",
    "- SAE：【SAE】XH201-01-002 因肺部感染（3 级）于 01月27日 10:00 住院治疗 [E5]。",
    # clauses joined by ；、， in one sentence that ends with its citation
    "- 入组：XH201-01-003 入组成功；北京协和医院新入组 1 例：XH201-01-004，已完成 C1D1 给药 [E2, E3]。",
    "- XH201-01-001 恶心 2 级，已好转；XH201-01-002 因肺部感染住院 [E4, E5]。",
    "- PI 决策：决定将 PK 亚组扩展至四川大学华西医院 [E7]。",
])
def test_ordinary_full_width_writing_is_not_flagged(report: str) -> None:
    kinds = [k for k in _kinds(report, ZH_WEEK) if k != "omitted_event"]
    assert kinds == [], kinds


def test_the_offline_engine_raises_no_coverage_reason() -> None:
    for items in (ZH_WEEK, EN_WEEK):
        assert offline_week(week_input(items, enrolled_before=10), 500).review_reasons == []


def test_an_sae_reported_in_another_entry_type_is_neither_hidden_nor_denied() -> None:
    """The counts read only the `sae` type; an SAE a message reports ("XH201-03-011 因肺炎住院，判定为 SAE") must still
    be covered, never denied, and the offline engine quotes it instead of leaving it among the unquoted messages."""
    from chronicle.weekly.model import WeekEntry, WeekInput
    from chronicle.weekly.offline import offline_report
    from chronicle.weekly.stats import week_stats
    from chronicle.weeks import IsoWeek

    rows = [("message", "XH201-03-011 因肺炎住院，研究者判定为 SAE，已在 24 小时内上报申办方"),
            ("enrollment", "XH201-03-012 入组成功，已随机"), ("message", "明天上午开周会"),
            ("query", "【Query Q-0002】XH201-03-001 SAE 报告表 结束日期：单位填写错误")]
    entries = tuple(WeekEntry(f"E{i}", f"id{i}", "03-02 10:00", "CRC-王敏", t, c)
                    for i, (t, c) in enumerate(rows, start=1))
    week = WeekInput("XH201", IsoWeek.parse("2026-W10"), entries,
                     week_stats([{"type": t, "actor": "CRC-王敏"} for t, _ in rows], 5), "h")
    assert week.stats["sae"] == 0

    offline = offline_report(week, 500)
    assert "[E1]" in offline and "无 AE/SAE" not in offline and "SAE 相关" in offline
    assert "[E4]" not in offline  # a data query about an SAE form reports no SAE
    assert check_report(offline, week) == []

    def kinds(text: str) -> list[str]:
        return sorted(r["kind"] for r in check_report(text, week))

    assert kinds("本周入组 1 人 [E2]，一切正常。") == ["denied_event", "omitted_event"]
    assert kinds("本周入组 1 人 [E2]，无 AE/SAE。") == ["denied_event", "omitted_event"]
    assert kinds("XH201-03-011 因肺炎住院，判定为 SAE [E1]；入组 1 人 [E2]。") == []
    assert "invented_event" in kinds("XH201-03-012 发生 SAE [E2]。")


def test_a_follow_up_of_a_counted_sae_is_covered_with_it() -> None:
    """A message about the SAE the week counts ("XH201-03-007 的 SAE 已收到") is that SAE's follow-up: covering the
    counted entry, or citing any entry of that subject, covers it."""
    from chronicle.weekly.guard.coverage import reported_saes
    from chronicle.weekly.model import WeekEntry, WeekInput
    from chronicle.weekly.stats import week_stats
    from chronicle.weeks import IsoWeek

    rows = [("sae", "【SAE】XH201-03-007 因上消化道出血住院治疗，已完成首次报告"),
            ("message", "XH201-03-007 的 SAE 已收到，医学审评意见：与研究药物可能有关"),
            ("ae", "XH201-02-004 出现 2 级皮疹"), ("message", "XH201-02-004 升级为 SAE，今日住院")]
    entries = tuple(WeekEntry(f"E{i}", f"id{i}", "03-02 10:00", "CRC-王敏", t, c)
                    for i, (t, c) in enumerate(rows, start=1))
    week = WeekInput("XH201", IsoWeek.parse("2026-W10"), entries,
                     week_stats([{"type": t, "actor": "CRC-王敏"} for t, _ in rows], 5), "h")
    assert [e.short_id for e in reported_saes(week)] == ["E4"]  # E2 follows the counted E1 up
    covered = check_report("SAE 1 例：XH201-03-007 上消化道出血 [E1]。AE：皮疹 2 级，后升级住院 [E3]。", week)
    assert not [r for r in covered if r["kind"] == "omitted_event"], covered
    missed = check_report("SAE 1 例：XH201-03-007 上消化道出血 [E1]。", week)
    assert [r["ids"] for r in missed if r["kind"] == "omitted_event" and r["field"] == "sae"] == [["E4"]]


def test_an_sae_is_read_as_a_word_and_an_id_in_any_width() -> None:
    """"SAEs" and a full-width subject id report an SAE of that subject; "usaed"/"caesar" name none (the SAE word
    is a word, not three letters inside one)."""
    from chronicle.weekly.guard.coverage import reported_saes, subjects
    from chronicle.weekly.model import WeekEntry, WeekInput
    from chronicle.weekly.stats import week_stats
    from chronicle.weeks import IsoWeek

    rows = [("message", "Two SAEs for XH201-03-011: hospitalised twice"),
            ("message", "ＸＨ２０１－０３－０１２ 判定为 SAE"),
            ("note", "caesar salad for XH201-03-013, usaed: pneumonia")]
    entries = tuple(WeekEntry(f"E{i}", f"id{i}", "03-02 10:00", "CRC-王敏", t, c)
                    for i, (t, c) in enumerate(rows, start=1))
    week = WeekInput("XH201", IsoWeek.parse("2026-W10"), entries,
                     week_stats([{"type": t, "actor": "CRC-王敏"} for t, _ in rows], 5), "h")
    assert subjects(entries[1]) == {"xh201-03-012"}
    assert [e.short_id for e in reported_saes(week)] == ["E1", "E2"]
