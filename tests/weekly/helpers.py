"""Small builders for the pure weekly-chronicle tests."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from chronicle.redaction.redactor import Redactor
from chronicle.weekly.model import WeekInput, make_week_input
from chronicle.weeks import IsoWeek

TZ = ZoneInfo("Asia/Shanghai")


def week_input(items: list[tuple[str, str]], *, week: str = "2026-W05", project: str = "XH201",
               enrolled_before: int = 0, actor: str = "CRC-王敏") -> WeekInput:
    """A week from (type, content) pairs, one hour apart from Monday 01:00 UTC."""
    iso = IsoWeek.parse(week)
    start = datetime.combine(iso.start_date, datetime.min.time()) + timedelta(hours=1)
    rows = [{"entry_id": f"id{i:04d}", "ts": start + timedelta(hours=i), "actor": actor, "type": t, "content": c}
            for i, (t, c) in enumerate(items)]
    return make_week_input(project, iso, rows, enrolled_before, TZ, Redactor.build())


ZH_WEEK = [
    ("message", "中午一起去食堂吗？听说今天有红烧肉"),
    ("enrollment", "XH201-01-003 入组成功（A 组（试验组）），筛选期检查均符合入排标准，已在 IWRS 登记"),
    ("enrollment", "北京协和医院新入组 1 例：XH201-01-004，已完成 C1D1 给药，无输注反应"),
    ("ae", "AE 上报：XH201-01-001 恶心 2 级，与研究药物可能有关；予对症处理，已好转"),
    ("sae", "【SAE】XH201-01-002 因肺部感染（3 级）于 01月27日 10:00 住院治疗，CRC-王敏 已在 5 小时内完成首次报告"),
    ("deviation", "方案偏离（访视超窗）：XH201-01-001 C2D1 超窗 4 天（窗口期 ±3 天），原因：受试者返乡"),
    ("decision", "决定将 PK 亚组扩展至四川大学华西医院，由该中心 CRC 负责采样"),
    ("query", "【Query Q-0001】XH201-01-001 C2D1 血常规：缺失，请核实并更正"),
    ("visit", "XH201-01-001 完成 C2D1 访视（血常规+生化），数据已录入 EDC"),
    ("message", "好的收到 👍"),
]
