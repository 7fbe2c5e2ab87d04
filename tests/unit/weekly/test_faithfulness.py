"""Guard v2 (chronicle/weekly/faithfulness.py + chronicle/weekly/guard): pure, deterministic, offline.

The first four tests are the cases that the v1 guard (citations exist, counts match) let through.
"""

from __future__ import annotations

import pytest

from chronicle.weekly.engine import llm_week, offline_week
from chronicle.weekly.faithfulness import check_report as _check_report
from chronicle.weekly.faithfulness import describe
from chronicle.weekly.guard.names import names
from chronicle.weekly.guard.text import canonical, sentences
from tests.weekly.helpers import ZH_WEEK, week_input

# ZH_WEEK: E2/E3 enrolments (XH201-01-003, XH201-01-004), E4 AE, E5 SAE of XH201-01-002 on 01月27日,
# E6 deviation of XH201-01-001, E7 decision (四川大学华西医院). No deviation-free, SAE-free variant below.
QUIET = [("enrollment", "XH201-01-003 入组成功（A 组（试验组）），已在 IWRS 登记"),
         ("visit", "XH201-01-001 完成 C2D1 访视（血常规+生化），数据已录入 EDC")]

def check_report(summary, week, **kw):  # type: ignore[no-untyped-def]
    """The checks of what a sentence says: these fragments leave most of their week out on purpose (what a
    report omits is `guard.coverage`'s, tested in tests/unit/weekly/test_coverage.py)."""
    return [r for r in _check_report(summary, week, **kw) if r["kind"] != "omitted_event"]


def _said(reasons):  # type: ignore[no-untyped-def]
    return [r for r in reasons if r["kind"] != "omitted_event"]


def _kinds(report: str, week) -> list[str]:
    return [r["kind"] for r in check_report(report, week)]


def test_the_uncited_reply_of_the_issue_is_flagged_sentence_by_sentence() -> None:
    report = "**本周要点**：入组进展见统计；安全性事件已按要求上报；无其他重大变化。"
    reasons = check_report(report, week_input(ZH_WEEK))
    assert [r["kind"] for r in reasons] == ["uncited"] * 3
    lines = [describe(r) for r in reasons]
    assert "安全性事件已按要求上报" in lines[1] and "cites no entry" in lines[1]


def test_a_sentence_naming_a_subject_its_cited_entry_lacks_is_flagged() -> None:
    reasons = check_report("XH201-01-009 本周入组成功 [E2]。", week_input(ZH_WEEK))
    assert [r["kind"] for r in reasons] == ["unsupported_name"]
    assert reasons[0]["names"] == ["xh201-01-009"] and "E2" in describe(reasons[0])


def test_an_unnumbered_invented_sae_is_flagged() -> None:
    week = week_input(QUIET)  # no SAE this week
    assert "invented_event" in _kinds("XH201-01-003 入组后发生 SAE [E1]。", week)
    assert "invented_event" in _kinds("本周出现严重不良事件，已上报。", week)
    assert "invented_event" in _kinds("A serious adverse event occurred [E1].", week)


def test_a_denied_deviation_is_flagged() -> None:
    week = week_input(ZH_WEEK)  # one deviation (E6)
    assert "denied_event" in _kinds("本周未出现方案偏离 [E6]。", week)
    assert "denied_event" in _kinds("本周没有发生偏离。", week)
    assert {"denied_event", "count_mismatch"} & set(_kinds("There were no deviations this week.", week))
    assert "denied_event" not in _kinds("本周未出现方案偏离。", week_input(QUIET))


def test_an_sae_sentence_citing_an_enrolment_entry_is_flagged() -> None:
    reasons = check_report("XH201-01-003 发生 SAE [E2]。", week_input(ZH_WEEK))
    assert [r["kind"] for r in reasons] == ["citation_mismatch"]
    assert "enrollment" in describe(reasons[0])


@pytest.mark.parametrize("report", [
    "XH201-01-002 于 1月28日 住院 [E5]。",  # date shifted
    "XH201-01-002 因肺部感染（2 级）住院 [E5]。",  # grade changed
    "决定将 PK 亚组扩展至北京协和医院 [E7]。",  # site swapped
    "CRC-李建国 已完成 SAE 首次报告 [E5]。",  # person swapped
])
def test_names_dates_sites_people_and_quantities_must_be_in_the_cited_entry(report: str) -> None:
    assert _kinds(report, week_input(ZH_WEEK)) == ["unsupported_name"]


@pytest.mark.parametrize("report", [
    "XH201-01-002 于二〇二六年一月二十七日因肺部感染（三级）住院 [E5]。",  # Chinese numerals
    "ＸＨ２０１-０１-００２ 于 ０１月２７日 住院，３ 级 [E5]。",  # full-width
    "XH201-01-002 was hospitalised on Jan 27 for grade-3 pneumonia (3 级) [E5].",
    "本周入组 2 人，累计入组 12 人。",  # the stats line needs no citation
    "## 安全性\n- XH201-01-001 出现 2 级恶心 [E4]。",  # headings are not sentences
    "- XH201-01-001 C2D1 超窗 4 天 [E6]；等 3 条",  # the offline engine's remainder is no sentence
])
def test_faithful_paraphrases_pass(report: str) -> None:
    assert check_report(report, week_input(ZH_WEEK, enrolled_before=10)) == [], report


def test_normalisation_and_sentence_split() -> None:
    assert canonical("０１月２７日 三级 Grade 3") == "@1-27| 3级 3级"
    assert {n.key for n in names(canonical("XH201-01-002 于 2026-01-27 用药 240 mg"))} >= {
        "xh201-01-002", "@1-27|", "240mg"}
    split = sentences("- 住院。[E5] 出院 [E6]；\n## 标题")
    assert [(s.bare, s.cites) for s in split] == [("住院。", ("E5",)), ("出院；", ("E6",))]


def test_offline_reports_raise_no_alarm() -> None:
    assert offline_week(week_input(ZH_WEEK, enrolled_before=10), 500).review_reasons == []
    assert offline_week(week_input(QUIET), 500).review_reasons == []


class Script:
    def __init__(self, *answers: str) -> None:
        self.answers, self.purposes = list(answers), []

    def __call__(self, messages: list[dict[str, str]], purpose: str) -> str:
        self.purposes.append(purpose)
        return self.answers.pop(0)


def test_a_reply_citing_nothing_is_asked_once_more_then_kept_cited() -> None:
    script = Script("本周入组 2 人，SAE 1 例。XH201-01-002 因肺部感染住院。", "XH201-01-002 因肺部感染住院 [E5]。")
    report = llm_week(week_input(ZH_WEEK), script, model="m", max_chars=500, context_tokens=6000)
    assert script.purposes == ["weekly_report", "cite"] and report.llm_calls == 2
    assert report.summary == "XH201-01-002 因肺部感染住院 [E5]。" and not _said(report.review_reasons)


def test_a_reply_citing_nothing_twice_is_stored_flagged() -> None:
    uncited = "**本周要点**：入组进展见统计；安全性事件已按要求上报；无其他重大变化。"
    script = Script(uncited, uncited)
    report = llm_week(week_input(ZH_WEEK), script, model="m", max_chars=500, context_tokens=6000)
    assert script.purposes == ["weekly_report", "cite"]
    assert report.summary == uncited and report.needs_review
    assert {r["kind"] for r in _said(report.review_reasons)} == {"uncited"}


def test_every_reason_reads_in_words_not_internal_names() -> None:
    """What a reviewer reads on the desk, in the review queue and a run's summary: each reason's line starts with
    what is wrong in words, and counts name their field as a reader does (SAE, protocol deviations), never the
    guard's kind (`omitted_event`) or the stats key (`deviations = 1`)."""
    import re

    from chronicle.weekly.labels import REASON_LABELS

    week = week_input(ZH_WEEK)
    replies = ["本周一切正常。", "XH201-01-003 发生 SAE [E2]。", "本周入组 1 例 [E99]。", "另：监查已完成。",
               "本周未出现方案偏离 [E6]。", "XH201-01-999 入组成功 [E2]。", "XH201-01-001 发生 AE [E7]。"]
    reasons = [r for reply in replies for r in _check_report(reply, week)]
    assert {r["kind"] for r in reasons} >= {"omitted_event", "denied_event", "unknown_citation", "uncited",
                                            "citation_mismatch", "unsupported_name"}
    raw_key = re.compile(r"(?<!protocol )\b(?:enrolled_total|deviations|sae|ae|enrolled|decisions)\s*=")
    for reason in reasons:
        line = describe(reason)
        assert line.startswith(REASON_LABELS.get(reason["kind"], "“")), line  # a count quotes the report first
        assert not any(kind in line for kind in REASON_LABELS), line
        assert not raw_key.search(line), line



def test_a_number_too_long_for_a_count_is_a_mismatch_not_a_crash() -> None:
    # Python refuses int() of over 4,300 digits: the guard must still answer, and flag the claim.
    week = week_input(ZH_WEEK)
    reasons = check_report(f"本周入组 {'9' * 5000} 人 [E2]", week)
    assert [r["field"] for r in reasons if r["kind"] == "count_mismatch"] == ["enrolled"]
    assert [r["ids"] for r in check_report(f"见 [E{'0' * 4998}99]", week) if r["kind"] == "unknown_citation"] == [
        ["E99"]]
