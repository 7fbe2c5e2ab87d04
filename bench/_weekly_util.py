"""Helpers of the weekly-chronicle benches: a synthetic 156-week project and the RESULT line."""

from __future__ import annotations

import hashlib
import os
import random
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from bench._util import result
from chronicle.ingest.model import Entry
from chronicle.sample import text as txt
from chronicle.weeks import IsoWeek

OUT = Path(__file__).parent / "out"
TZ = ZoneInfo("Asia/Shanghai")


def bench_env(home: Path) -> None:
    """A private data folder and quiet Prefect for a bench process."""
    os.environ["CHRONICLE_HOME"] = str(home)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    for name in ("LLM_URL", "CHRONICLE_LLM_URL"):
        os.environ.pop(name, None)


def _entry(project: str, week: IsoWeek, n: int, rng: random.Random, type_: str, content: str) -> Entry:
    day = week.start_date + timedelta(days=rng.randrange(5))
    local = datetime.combine(day, time(8 + rng.randrange(12), rng.randrange(60)), TZ)
    ts = local.astimezone(UTC).replace(tzinfo=None)
    digest = hashlib.sha256(f"{project}|{week.number}|{n}|{content}".encode()).hexdigest()[:24]
    return Entry(digest, project, "jsonl", f"bench/{project}.jsonl", n, None, ts, day, week.year, week.week,
                 f"CRC-{rng.choice(txt.NAME_POOL)}", type_, content, {})


def synthetic_entries(project: str = "BENCH", weeks: int = 156, first: str = "2023-W01", seed: int = 3) -> list[Entry]:
    """~25 Chinese trial-log entries per week for `weeks` consecutive ISO weeks."""
    rng = random.Random(seed)
    out: list[Entry] = []
    week = IsoWeek.parse(first)
    n = 0
    for i in range(weeks):
        items: list[tuple[str, str]] = []
        for _ in range(rng.randint(0, 3)):
            subj = f"{project}-01-{i:03d}{rng.randrange(10)}"
            items.append(("enrollment", rng.choice(txt.ENROLL_TEMPLATES).format(
                subj=subj, site=rng.choice(txt.SITE_POOL), icf="V2.0", arm=rng.choice(txt.ARMS))))
        for _ in range(rng.randint(0, 2)):
            items.append(("ae", rng.choice(txt.AE_TEMPLATES).format(
                subj=f"{project}-02-{i:03d}", visit="C2D1", grade=rng.randint(1, 3), term=rng.choice(txt.AE_TERMS),
                rel=rng.choice(txt.RELATEDNESS), action=rng.choice(txt.AE_ACTIONS[1]))))
        if rng.random() < 0.15:
            items.append(("decision", rng.choice(txt.DECISION_MISC).format(date="2026年05月11日",
                                                                            site=rng.choice(txt.SITE_POOL))))
        subj = f"{project}-01-{i:03d}"
        items += [("query", f"【Query Q-{i:03d}{k}】{subj} 生命体征：缺失，请核实并更正") for k in range(3)]
        items += [("visit", f"{subj} 完成 C{k + 1}D1 访视（血常规+生化），数据已录入 EDC") for k in range(4)]
        items += [("message", rng.choice(txt.CHITCHAT).format(site="中心", n=3, day="周三")) for _ in range(12)]
        for type_, content in items:
            n += 1
            out.append(_entry(project, week, n, rng, type_, content))
        week = week.shift(1)
    return out


def offline_reports(entries: list[Entry], project: str = "BENCH") -> list[Any]:
    """The offline engine's report of every week of `entries` (one project), in week order: real report rows."""
    from collections import defaultdict

    from chronicle.redaction.configured import redactor_for
    from chronicle.settings import Settings
    from chronicle.weekly.engine import offline_week
    from chronicle.weekly.model import make_week_input

    settings = Settings()
    by_week: dict[int, list[dict]] = defaultdict(list)
    for e in sorted(entries, key=lambda e: (e.ts, e.entry_id)):
        by_week[e.iso_year * 100 + e.iso_week].append(
            {"entry_id": e.entry_id, "ts": e.ts, "actor": e.actor, "type": e.type, "content": e.content})
    out, running = [], 0
    for number in sorted(by_week):
        week_input = make_week_input(project, IsoWeek.from_number(number), by_week[number], running,
                                     settings.tz_for(project), redactor_for(settings))
        running = week_input.stats["enrolled_total"]
        out.append(offline_week(week_input, settings.weekly.report_max_chars))
    return out


def write_result(name: str, *, ours: float, baseline: float, unit: str, goal: str, met: bool, measure: str,
                 baseline_name: str, extra: dict[str, Any] | None = None) -> None:
    """Print the final RESULT line and write bench/out/<name>.json (the shared format of bench/_util.py)."""
    result(name, measure=measure, ours=ours, baseline=baseline, baseline_name=baseline_name, unit=unit, goal=goal,
           ok=met, extra=extra)
