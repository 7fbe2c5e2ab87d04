"""Chronicle rendering, rollup planning and offline question matching (pure functions)."""

from __future__ import annotations

from chronicle.weekly.context import (
    FOOTER,
    HEADER,
    ChronicleWeek,
    covered_hash,
    one_line,
    period_of,
    plan_blocks,
    render,
)
from chronicle.weekly.offline import offline_rollup
from chronicle.weekly.search import rank_weeks, terms
from chronicle.weeks import IsoWeek, week_range


def _weeks(n: int, first: str = "2025-W01", text: str = "入组 1 人，随访按计划进行。" * 4) -> list[ChronicleWeek]:
    return [ChronicleWeek(w.number, f"{w} {text}", {"entries": 3, "enrolled": 1, "enrolled_total": i + 1})
            for i, w in enumerate(week_range(IsoWeek.parse(first), IsoWeek.parse(first).shift(n - 1)))]


def test_render_is_seed_000_block() -> None:
    text = render(plan_blocks(_weeks(2), None, 100))
    lines = text.splitlines()
    assert lines[0] == HEADER == "=== 项目编年史 (Project Chronicle) ==="
    assert lines[1].startswith("[Week 202501]: 2025-W01 入组") and lines[2].startswith("[Week 202502]: ")
    assert lines[-1] == FOOTER and set(FOOTER) == {"="}


def test_one_line_strips_citations_and_markdown() -> None:
    assert one_line("## 本周\n\n- **入组**：2 人 [E1]\n- SAE 1 例 [E3, E4]\n") == "本周 入组：2 人 SAE 1 例"


def test_period_of_uses_the_thursday() -> None:
    assert period_of(202601, "month") == "2026-01"  # Mon 2025-12-29, Thu 2026-01-01
    assert period_of(202513, "quarter") == "2025-Q1"  # Thu 2025-03-27
    assert period_of(202514, "quarter") == "2025-Q2"  # starts Mon 2025-03-31, but Thu 2025-04-03
    assert period_of(202501, "year") == "2025"


def test_no_budget_keeps_every_week_verbatim() -> None:
    weeks = _weeks(60)
    assert [b.level for b in plan_blocks(weeks, None, 100)] == ["week"] * 60


def test_folding_oldest_months_first_then_quarters_newest_verbatim() -> None:
    weeks = _weeks(156)
    per_week = weeks[0].tokens
    full = sum(w.tokens for w in weeks)
    blocks = plan_blocks(weeks, full // 2, rollup_tokens=3 * per_week)
    levels = [b.level for b in blocks]
    assert "month" in levels and levels[-1] == "week"
    # Folded periods come first, the newest weeks stay verbatim and in order.
    first_week = levels.index("week")
    assert all(level != "week" for level in levels[:first_week]) and set(levels[first_week:]) == {"week"}
    assert [w.week_number for b in blocks for w in b.weeks] == [w.week_number for w in weeks]
    tight = plan_blocks(weeks, 40 * per_week, rollup_tokens=3 * per_week)
    assert {"quarter", "week"} <= {b.level for b in tight} and len(tight) < len(blocks)
    newest_month = period_of(weeks[-1].week_number, "month")
    assert all(b.level == "week" for b in tight if period_of(b.first, "month") == newest_month)


def test_covered_hash_changes_with_any_covered_text_or_stats() -> None:
    weeks = _weeks(4)
    edited = [*weeks[:2], ChronicleWeek(weeks[2].week_number, "人工修正", weeks[2].stats), weeks[3]]
    restat = [*weeks[:3], ChronicleWeek(weeks[3].week_number, weeks[3].text, {"enrolled_total": 99})]
    assert len({covered_hash(weeks), covered_hash(edited), covered_hash(restat)}) == 3


def test_offline_rollup_sums_counts_and_keeps_salient_sentences() -> None:
    first = {"entries": 5, "enrolled": 1, "enrolled_total": 4, "sae": 1}
    second = {"entries": 3, "enrolled": 2, "enrolled_total": 6}
    weeks = [(202601, "本周记录 5 条：入组 1 人。\n- **SAE**：【SAE】受试者 003 住院 [E2]", first),
             (202602, "本周记录 3 条：入组 2 人。\n- **PI 决策**：决定暂停中心 B 入组 [E1]", second)]
    text = offline_rollup("2026-01", weeks, 500)
    assert text.startswith("2026-01（202601–202602，2 周）：记录 8 条，入组 3 人（累计 6 人），AE 0 例、SAE 1 例")
    assert "【SAE】受试者 003 住院" in text and "决定暂停中心 B 入组" in text and "[E" not in text


def test_terms_are_cjk_bigrams_and_words() -> None:
    assert terms("哪周 SAE 肺炎？") == ["肺炎", "sae"]  # 哪周 is a question word
    assert "受试" in terms("受试者") and "试者" in terms("受试者")


def test_rank_weeks_prefers_rare_matching_terms() -> None:
    weeks = [(202601, "入组 2 人，SAE 0 例"), (202602, "XH201-01-003 发生免疫相关性肺炎 SAE 1 例"),
             (202603, "入组 1 人，随访正常")]
    ranked = rank_weeks("哪周出现了肺炎 SAE？", weeks)
    assert [w for w, _, _ in ranked] == [202602]  # "SAE 0 例" is not a mention
