"""Offline search knows negation ("无 AE/SAE" is not a week with an SAE) and answers counted-event questions
("哪几周发生了 SAE？") from the stats instead of the prose."""

from __future__ import annotations

import pytest

from chronicle.weekly.search import affirmed, rank_weeks, stats_question, weeks_with

NEGATED = ["本周记录 19 条：入组 0 人，无 AE/SAE；另有 monitoring 2 条", "本周未发生SAE。", "未见 SAE 报告",
           "没有新的 SAE", "暂无严重不良事件 SAE", "No SAE this week.", "The site reported no SAEs; 2 visits.",
           "Completed without any SAE, visits on time", "SAE 0 例，AE 0 例", "0 SAEs and 0 AEs"]
REAL = ["【SAE】XH201-02-003 因上消化道出血（3 级）住院", "SAE 1 例：肺炎住院", "One SAE (pneumonia) was reported."]


@pytest.mark.parametrize("text", NEGATED)
def test_a_negated_mention_is_not_a_mention(text: str) -> None:
    assert "sae" not in affirmed(text).lower()


@pytest.mark.parametrize("text", REAL)
def test_a_real_mention_stays(text: str) -> None:
    assert "sae" in affirmed(text).lower()


def test_rank_weeks_returns_the_real_weeks_not_the_negated_ones() -> None:
    weeks = [(202601 + i, t) for i, t in enumerate(NEGATED)] + [(202650 + i, t) for i, t in enumerate(REAL)]
    found = {w for w, _, _ in rank_weeks("SAE 住院 pneumonia", weeks, limit=50)}
    assert found == {202650, 202651, 202652}


def test_negation_ends_at_the_clause() -> None:
    # "无 AE" negates AE only; the SAE after the comma is real.
    assert "sae" in affirmed("无 AE，SAE 1 例").lower()
    assert "无法" not in NEGATED and "联系" in affirmed("无法联系受试者")  # "cannot" is not a negation of a thing


@pytest.mark.parametrize(("question", "field"), [
    ("哪几周发生了 SAE？", "sae"), ("哪些周有SAE", "sae"), ("Which weeks had an SAE?", "sae"),
    ("when were serious adverse events reported", "sae"), ("哪几周有不良事件？", "ae"), ("which weeks had AEs", "ae"),
    ("哪几周有入组？", "enrolled"), ("how many protocol deviations", "deviations"), ("哪周有 Query", "queries"),
])
def test_counted_event_questions_name_their_stat(question: str, field: str) -> None:
    assert stats_question(question) == field


@pytest.mark.parametrize("question", ["SAE 的处理流程", "肺炎", "describe the SAE of patient 3"])
def test_other_questions_are_text_searches(question: str) -> None:
    assert stats_question(question) is None


def test_weeks_with_counts_every_week_with_the_event() -> None:
    stats = [(202601, {"sae": 0}), (202602, {"sae": 2}), (202603, {}), (202604, {"sae": 1, "ae": 3})]
    assert weeks_with("sae", stats) == [(202602, 2), (202604, 1)]
    assert weeks_with("ae", stats) == [(202604, 3)]
