"""A 52-week backfill against an LLM endpoint that fails 30 % of calls, and one that goes fully down mid-run."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from chronicle.settings import Settings
from tests.fakellm import FakeLLMServer, Reply

PROJECT = "XH201"
START, END = "2025-W10", "2026-W09"  # 52 ISO weeks (2025 has 52)
MODEL = "fake-weekly"
RETRY_AFTER_S = 0.3
_WEEK = re.compile(r"week_number (\d{6})")


@pytest.fixture
def llm_home(home: Path, sample_dir: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> FakeLLMServer:
    from chronicle.flows.ingest_logs import ingest_logs

    for key, value in {"LLM_URL": fake_llm.base_url, "LLM_MODEL": MODEL, "CHRONICLE_LLM_BACKOFF_BASE_S": "0.01",
                       "CHRONICLE_LLM_TIMEOUT_S": "0.5", "CHRONICLE_LLM_MAX_ATTEMPTS": "8"}.items():
        monkeypatch.setenv(key, value)
    ingest_logs([str(sample_dir / "logs" / PROJECT)])
    return fake_llm


def _db(sql: str, params: list | None = None) -> list[tuple]:
    from chronicle.storage.db import connect

    with connect(Settings()) as conn:
        return conn.execute(sql, params or []).fetchall()


def _weeks() -> list[int]:
    from chronicle.weeks import IsoWeek, week_range

    return [w.number for w in week_range(IsoWeek.parse(START), IsoWeek.parse(END))]


def _llm_weeks() -> set[int]:
    """Weeks of the range that have entries (a week without entries is written without the LLM)."""
    rows = _db("SELECT DISTINCT week_number FROM raw_logs WHERE project_id = ? AND week_number BETWEEN ? AND ?",
               [PROJECT, _weeks()[0], _weeks()[-1]])
    return {r[0] for r in rows}


def _asked_weeks(requests) -> Counter[int]:
    out: Counter[int] = Counter()
    for r in requests:
        if r.path.endswith("/chat/completions") and r.json:
            user = next(m["content"] for m in r.json["messages"] if m["role"] == "user")
            out[int(_WEEK.search(user).group(1))] += 1
    return out


def _assert_one_version_per_stored_week() -> dict[int, tuple]:
    stored = {r[0]: r[1:] for r in _db(
        "SELECT week_number, summary, model, version, entry_count FROM weekly_reports WHERE project_id = ?",
        [PROJECT])}
    versions = _db("SELECT week_number, version, summary FROM weekly_report_versions WHERE project_id = ? "
                   "ORDER BY 1, 2", [PROJECT])
    assert [(w, v) for w, v, _ in versions] == [(w, 1) for w in sorted(stored)]
    for week, version, summary in versions:
        assert stored[week][0] == summary and stored[week][2] == version
    for week, (summary, model, _, entries) in stored.items():
        assert summary.strip(), week
        assert model == (MODEL if entries else "none"), (week, model)
    return stored


@pytest.mark.slow
def test_backfill_survives_30_percent_faults(llm_home: FakeLLMServer) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks

    llm_home.set_faults(rate=0.3, kinds=("429", "500", "timeout"), seed=20261204, retry_after=RETRY_AFTER_S,
                        timeout_sleep_s=1.0)
    rows = backfill_weeks(project_id=PROJECT, start_week=START, end_week=END)

    weeks, llm_weeks = _weeks(), _llm_weeks()
    assert len(weeks) == 52 and len(llm_weeks) >= 50
    assert sorted(r.week_number for r in rows) == weeks
    assert {r.outcome for r in rows} <= {"generated", "empty"}, Counter(r.outcome for r in rows)
    assert sorted(_assert_one_version_per_stored_week()) == weeks

    # Every kind of fault was met, and retried by ChatClient (not by Prefect): more requests than calls.
    first = _db("SELECT status, http_status, error FROM llm_calls WHERE attempt = 1")
    kinds = Counter("timeout" if e and "Timeout" in e else s for st, s, e in first if st == "error")
    assert kinds[429] >= 2 and kinds[500] >= 2 and kinds["timeout"] >= 2, kinds
    assert llm_home.calls() >= len(llm_weeks) + sum(kinds.values())
    assert _db("SELECT count(DISTINCT call_id) FROM llm_calls") == [(len(llm_weeks),)]  # one call per week


def test_every_attempt_of_a_retried_call_has_its_row(llm_home: FakeLLMServer) -> None:
    """docs/analysts.md: `llm_calls` holds every attempt; 429 + Retry-After is waited out before the next one."""
    from chronicle.flows.summarize_week import summarize_week

    llm_home.enqueue(Reply(status=429, headers={"Retry-After": f"{RETRY_AFTER_S:g}"}), Reply(status=500), Reply())
    assert summarize_week(PROJECT, "2025-W30").outcome == "generated"
    assert llm_home.calls() == 3
    rows = _db("SELECT attempt, status, http_status, tokens_in, started_at FROM llm_calls ORDER BY attempt")
    assert [r[:3] for r in rows] == [(1, "error", 429), (2, "error", 500), (3, "ok", 200)], rows
    assert rows[2][3] > 0  # the answer's tokens are accounted (llm_usage)
    assert (rows[1][4] - rows[0][4]).total_seconds() >= RETRY_AFTER_S * 0.95


@pytest.mark.slow
def test_outage_fails_clearly_keeps_whole_weeks_and_resumes(llm_home: FakeLLMServer,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.weekly.outcome import WeeksFailedError

    monkeypatch.setenv("CHRONICLE_LLM_MAX_ATTEMPTS", "3")
    # The fixture's 0.5 s timeout is for timeout faults, which this test does not inject: on a loaded machine an
    # answered call could reach its client after 0.5 s, be abandoned and count as answered with no week stored.
    monkeypatch.setenv("CHRONICLE_LLM_TIMEOUT_S", "30")
    answered = 15
    llm_home.enqueue(*[Reply() for _ in range(answered)])  # the endpoint answers 15 calls, then is down
    llm_home.set_faults(rate=1.0, kinds=("500", "503", "429"), seed=3, retry_after=0.0)

    with pytest.raises(WeeksFailedError) as failed:
        backfill_weeks(project_id=PROJECT, start_week=START, end_week=END)
    message = str(failed.value)
    assert llm_home.base_url in message and "unavailable after 3 attempts" in message, message
    assert "rerun" in message
    runs = _db("SELECT state, message FROM pipeline_runs WHERE flow_name = 'backfill-weeks'")
    assert len(runs) == 1 and runs[0][0] == "FAILED" and llm_home.base_url in runs[0][1]

    # Nothing partial: the weeks that got an answer are whole reports (one version each); the rest are missing.
    rows = {r.week_number: r for r in failed.value.rows}
    done = {w for w, r in rows.items() if r.outcome in ("generated", "empty")}
    failed_weeks = {w for w, r in rows.items() if r.outcome == "failed"}
    assert done | failed_weeks == set(_weeks()) and failed_weeks
    assert all("unavailable after 3 attempts" in rows[w].message for w in failed_weeks)
    stored = _assert_one_version_per_stored_week()
    assert set(stored) == done
    assert len({w for w in done if stored[w][3]}) == answered  # each answer became one stored week
    asked_while_down = _asked_weeks(llm_home.requests)
    assert all(asked_while_down[w] == 3 for w in failed_weeks)  # three attempts, then the week gave up

    # Recovery: the rerun asks the LLM for exactly the missing weeks, once each, and leaves the rest alone.
    llm_home.clear_faults()
    before = len(llm_home.requests)
    again = backfill_weeks(project_id=PROJECT, start_week=START, end_week=END)
    asked = _asked_weeks(llm_home.requests[before:])
    assert asked == Counter({w: 1 for w in failed_weeks}), asked
    assert Counter(r.outcome for r in again) == Counter(
        {"cached": len(done), "generated": len(failed_weeks)})
    assert sorted(_assert_one_version_per_stored_week()) == _weeks()
