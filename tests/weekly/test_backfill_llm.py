"""The LLM engine through the real `openai` client against the local fake endpoint, scripted per test."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.fakellm import FakeLLMServer, Reply
from tests.weekly.conftest import cite_first, db_rows, week_of_request

pytestmark = pytest.mark.timeout(300)


def _offline(monkeypatch: pytest.MonkeyPatch) -> None:

    monkeypatch.delenv("LLM_URL")


def _online(monkeypatch: pytest.MonkeyPatch, server: FakeLLMServer) -> None:

    monkeypatch.setenv("LLM_URL", server.base_url)


def _flow_run_name(run_id: str) -> str:
    from uuid import UUID

    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(UUID(run_id)).name


def test_endpoint_regenerates_offline_weeks_logs_every_call_then_caches(
        trial: Path, online: FakeLLMServer, truth: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks

    online.responder = cite_first
    _offline(monkeypatch)
    backfill_weeks(project_id="XH305", start_week="2026-W05", end_week="2026-W10")
    _online(monkeypatch, online)
    rows = backfill_weeks(project_id="XH305", start_week="2026-W05", end_week="2026-W10")
    outcomes = {r.week_number: (r.outcome, r.engine) for r in rows}
    assert outcomes[202608] == ("cached", "none")  # the empty week needs no model
    assert {v for w, v in outcomes.items() if w != 202608} == {("generated", "fake-model")}
    assert online.calls() == 5

    calls = db_rows("SELECT purpose, status, project_id, week_number, flow_run_id, model FROM llm_calls")
    assert sorted(c[3] for c in calls) == [202605, 202606, 202607, 202609, 202610]
    assert {(c[0], c[1], c[2], c[5]) for c in calls} == {("weekly_report", "ok", "XH305", "fake-model")}
    [run_id] = {c[4] for c in calls}
    assert db_rows("SELECT flow_name, state FROM pipeline_runs WHERE flow_run_id = ?", [run_id]) == [
        ("backfill-weeks", "COMPLETED")]
    assert _flow_run_name(run_id) == "backfill-XH305-2026W05..2026W10"
    for week, stats in db_rows("SELECT week_number, stats FROM weekly_reports WHERE project_id = 'XH305'"):
        expected = truth["projects"]["XH305"]["weeks"][str(week)]
        got = json.loads(stats)
        assert (got["entries"], got["enrolled"], got["enrolled_total"], got["ae"], got["sae"]) == (
            expected["entries"], expected["enrollment"], expected["enrolled_total"], expected["ae"], expected["sae"])

    again = backfill_weeks(project_id="XH305", start_week="2026-W05", end_week="2026-W10")
    assert {r.outcome for r in again} == {"cached"} and online.calls() == 5  # 0 LLM calls on the rerun


def test_scripted_replies_that_misstate_or_cite_foreign_entries_are_flagged(trial: Path,
                                                                            online: FakeLLMServer) -> None:
    from chronicle.flows.summarize_week import summarize_week

    # 2025-W30 of XH201: 3 enrolled, 1 SAE (E30), 1 AE (E21), 1 deviation (E12), 44 entries.
    online.enqueue(Reply(content="## 本周\n\n- 本周入组 5 人 [E9]，SAE 1 例 [E30]。\n"
                                 "- AE 与方案偏离各 1 例 [E21, E12]。"))
    row = summarize_week("XH201", "2025-W30")
    assert row.needs_review and row.outcome == "generated"
    online.enqueue(Reply(content="## 本周\n\n- 伦理批准新版方案 [E99]。"))
    row2 = summarize_week("XH201", "2025-W31")
    reasons = {w: json.loads(r) for w, r in db_rows(
        "SELECT week_number, review_reasons FROM weekly_reports WHERE needs_review ORDER BY 1")}
    assert reasons[202530] == [{"kind": "count_mismatch", "field": "enrolled", "claimed": 5, "actual": 3,
                                "text": "入组 5 人"}]
    assert reasons[202531][0]["kind"] == "unknown_citation" and reasons[202531][0]["ids"] == ["E99"]
    assert row2.reasons and "E99" in row2.reasons[0]
    # Lineage keeps only real entries; the chronicle text drops the markers.
    assert json.loads(db_rows("SELECT citations FROM weekly_reports WHERE week_number = 202531")[0][0]) == {}


def test_a_quarter_of_requests_failing_transiently_still_yields_every_week(
        trial: Path, online: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks

    monkeypatch.setenv("CHRONICLE_LLM_MAX_ATTEMPTS", "8")
    online.responder = cite_first
    online.set_faults(rate=0.25, kinds=("429", "500", "503", "timeout", "malformed", "reset"), seed=7,
                      retry_after=0.02, timeout_sleep_s=1.5)
    rows = backfill_weeks(project_id="XH201", start_week="2025-W20", end_week="2025-W39")
    assert len(rows) == 20 and {r.outcome for r in rows} == {"generated"}
    assert online.calls() > 20  # retried inside ChatClient, not by Prefect
    assert db_rows("SELECT count(DISTINCT week_number) FROM llm_calls") == [(20,)]
    errors = dict(db_rows("SELECT coalesce(http_status, 0), count(*) FROM llm_calls WHERE status = 'error' GROUP BY 1"))
    assert sum(errors.values()) > 0 and 429 in errors


def test_rejected_requests_fail_at_once_with_the_setting_to_fix(trial: Path, online: FakeLLMServer) -> None:
    from chronicle.flows.summarize_week import summarize_week
    from chronicle.weekly.outcome import WeeksFailedError

    online.responder = cite_first
    for status, setting in ((401, "LLM_API_KEY"), (404, "LLM_URL")):
        online.enqueue(Reply(status=status))
        with pytest.raises(WeeksFailedError) as info:
            summarize_week("XH201", "2025-W30")
        assert setting in info.value.rows[0].message
    calls = db_rows("SELECT http_status, attempt FROM llm_calls ORDER BY started_at")
    assert calls == [(401, 1), (404, 1)]  # no retries for permanent errors
    assert db_rows("SELECT count(*) FROM weekly_reports") == [(0,)]
    assert summarize_week("XH201", "2025-W30").outcome == "generated"


def test_a_failed_week_keeps_the_others_and_the_rerun_does_only_it(
        trial: Path, online: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.weekly.outcome import WeeksFailedError

    monkeypatch.setenv("CHRONICLE_LLM_MAX_ATTEMPTS", "2")

    def flaky(request: dict[str, Any]) -> str:
        if week_of_request(request) == 202530:
            raise RuntimeError("model crashed on this prompt")  # the server answers 500
        return cite_first(request)

    online.responder = flaky
    with pytest.raises(WeeksFailedError) as info:
        backfill_weeks(project_id="XH201", start_week="2025-W28", end_week="2025-W32")
    outcomes = {r.week: r.outcome for r in info.value.rows}
    assert outcomes == {"2025-W28": "generated", "2025-W29": "generated", "2025-W30": "failed",
                        "2025-W31": "generated", "2025-W32": "generated"}
    assert "unavailable after 2 attempts" in info.value.rows[2].message
    assert db_rows("SELECT state FROM pipeline_runs WHERE flow_name = 'backfill-weeks'") == [("FAILED",)]
    assert len(db_rows("SELECT 1 FROM weekly_reports")) == 4

    online.responder = cite_first
    rows = backfill_weeks(project_id="XH201", start_week="2025-W28", end_week="2025-W32")
    assert [(r.week, r.outcome) for r in rows if r.outcome != "cached"] == [("2025-W30", "generated")]


def test_over_long_answers_are_shortened_and_big_weeks_map_reduced(
        trial: Path, online: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.summarize_week import summarize_week

    monkeypatch.setenv("CHRONICLE_LLM_CONTEXT_TOKENS", "400")

    def responder(request: dict[str, Any]) -> str:
        user = request["messages"][-1]["content"]
        if "超过了" in user:
            return "本周入组 3 人 [E9]，SAE 1 例 [E30]，AE 1 例 [E21]，方案偏离 1 例 [E12]，其余按计划推进。"
        if "段。请只提取要点" in user:
            return "- 入组与访视按计划 [E9]"
        return "本周要点：" + "各中心按计划推进访视与数据录入。" * 40 + " [E9]"

    online.responder = responder
    row = summarize_week("XH201", "2025-W30")
    assert row.outcome == "generated" and not row.needs_review
    purposes = [p for p, in db_rows("SELECT purpose FROM llm_calls ORDER BY started_at")]
    assert purposes.count("map") >= 3 and purposes[-2:] == ["reduce", "shorten"]
    assert set(purposes) == {"map", "reduce", "shorten"}
    assert db_rows("SELECT DISTINCT week_number FROM llm_calls") == [(202530,)]
    assert db_rows("SELECT summary FROM weekly_reports") == [
        ("本周入组 3 人 [E9]，SAE 1 例 [E30]，AE 1 例 [E21]，方案偏离 1 例 [E12]，其余按计划推进。",)]


def test_a_document_pasted_into_one_entry_is_read_whole_by_a_model_with_a_context_window(
        trial: Path, online: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One log line holding a pasted document, longer than the model's context on its own: the week is still
    written, no request goes over the window, and every part of the document reaches a map step (nothing cut)."""
    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.flows.summarize_week import summarize_week

    parts = 3_000
    pasted = "".join(f"第{i}段：受试者随访记录已同步至 EDC。" for i in range(parts))  # ~60k characters
    logs = tmp_path / "pasted"
    logs.mkdir()
    (logs / "pasted.jsonl").write_text(json.dumps({"project_id": "XH201", "ts": "2025-07-23T09:00:00+08:00",
                                                   "type": "message", "actor": "CRC", "content": pasted},
                                                  ensure_ascii=False) + "\n", encoding="utf-8")
    ingest_logs([str(logs)])
    monkeypatch.setenv("CHRONICLE_LLM_CONTEXT_TOKENS", "1500")
    online.max_prompt_chars = 6_000  # the window: the document is ten times that

    def responder(request: dict[str, Any]) -> str:
        if "段。请只提取要点" in request["messages"][-1]["content"]:
            return "- 随访记录同步 [E9]"
        return cite_first(request)

    online.responder = responder
    row = summarize_week("XH201", "2025-W30")
    assert row.outcome == "generated"
    chats = [r.json for r in online.requests if r.path.endswith("/chat/completions")]
    assert all(sum(len(m["content"]) for m in c["messages"]) <= 6_000 for c in chats)
    mapped = [line for c in chats if "段。请只提取要点" in c["messages"][-1]["content"]
              for line in c["messages"][-1]["content"].split("\n\n", 1)[1].splitlines()]
    label = next(line for line in mapped if "第0段" in line).split(" ", 1)[0]  # the entry's [E#]
    read = "".join(line.removeprefix(f"{label} … ") for line in mapped if line.startswith(label))
    assert len([line for line in mapped if line.startswith(f"{label} … ")]) >= 10
    assert all(f"第{i}段" in read for i in range(parts))


def test_a_week_that_fails_after_good_attempts_keeps_their_llm_calls_rows(
        trial: Path, online: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A week's successful attempts are held to be stored with its report (one write window per week):
    when the week dies before that commit, they are written anyway, beside the failed attempt's row."""
    from chronicle.flows.summarize_week import summarize_week
    from chronicle.weekly.outcome import WeeksFailedError

    monkeypatch.setenv("CHRONICLE_LLM_CONTEXT_TOKENS", "400")  # map-reduce: several calls for one week
    online.enqueue(Reply(content="- 入组与访视按计划 [E9]"), Reply(content="- SAE 1 例 [E30]"),
                   Reply(status=400, content="bad request"))  # 400 fails the call at once, no retry
    with pytest.raises(WeeksFailedError):
        summarize_week("XH201", "2025-W30")
    assert online.calls() == 3
    rows = db_rows("SELECT purpose, status, http_status, week_number FROM llm_calls ORDER BY started_at")
    assert rows == [("map", "ok", 200, 202530), ("map", "ok", 200, 202530), ("map", "error", 400, 202530)]
    assert db_rows("SELECT count(*) FROM weekly_reports") == [(0,)]


class InFlight:
    """A responder that records how many requests were being answered at once.

    Until `expect` requests have been in flight together, each one waits for the others (an event, not a
    delay: on a busy machine requests sent together may arrive far apart; a run that can only send one at
    a time makes the first request wait `patience_s`, and the peak stays 1). After that, each request still
    lingers up to `linger_s` for company, so that a limit letting more through would show a higher peak.
    """

    def __init__(self, expect: int, patience_s: float = 60.0, linger_s: float = 0.1) -> None:
        self.expect, self.patience_s, self.linger_s, self.now, self.peak = expect, patience_s, linger_s, 0, 0
        self._cond = threading.Condition()

    def __call__(self, request: dict[str, Any]) -> str:
        with self._cond:
            self.now += 1
            self.peak = max(self.peak, self.now)
            self._cond.notify_all()
            first_pair = self.peak < self.expect
            self._cond.wait_for(lambda: self.peak >= self.expect and self.now > 1,
                                timeout=self.patience_s if first_pair else self.linger_s)
            self.now -= 1
        return cite_first(request)


def test_one_shared_llm_limit_bounds_calls_in_flight(trial: Path, online: FakeLLMServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.client.orchestration import get_client

    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.services.llm_gate import ensure_llm_limit

    monkeypatch.setenv("CHRONICLE_LLM_CONCURRENCY", "2")
    online.responder = meter = InFlight(expect=2)
    rows = backfill_weeks(project_id="XH201", start_week="2025-W20", end_week="2025-W27")
    assert {r.outcome for r in rows} == {"generated"}
    assert meter.peak == 2  # used both slots, never more
    with get_client(sync_client=True) as client:
        assert client.read_global_concurrency_limit_by_name("llm").limit == 2
        assert ensure_llm_limit(3) and ensure_llm_limit(3)  # idempotent create-or-resize
        assert client.read_global_concurrency_limit_by_name("llm").limit == 3


def test_without_the_prefect_api_a_process_local_limit_is_used(
        trial: Path, online: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import prefect.client.orchestration

    import chronicle.services.llm_gate
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.services.llm_gate import reserve_llm
    from chronicle.settings import Settings

    monkeypatch.setenv("CHRONICLE_LLM_CONCURRENCY", "2")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionRefusedError("no Prefect API here")

    with pytest.MonkeyPatch.context() as no_api:
        no_api.setattr(prefect.client.orchestration, "get_client", refuse)
        with reserve_llm(Settings(), 5) as gate:
            assert (gate.source, gate.slots) == ("local", 2)
    assert "process-local" in caplog.text
    # A whole backfill on the fallback (the flow itself still reports to the API): still bounded.
    monkeypatch.setattr(chronicle.services.llm_gate, "ensure_llm_limit", lambda slots: False)
    online.responder = meter = InFlight(expect=2)
    rows = backfill_weeks(project_id="XH201", start_week="2025-W20", end_week="2025-W25")
    assert {r.outcome for r in rows} == {"generated"} and meter.peak == 2


def test_rollups_and_ask_go_through_the_endpoint_and_rollups_are_rebuilt_only_on_change(
        trial: Path, online: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.services.history import ask_chronicle, build_history_context
    from chronicle.services.weekly import read_week
    from chronicle.settings import Settings
    from chronicle.storage import reports
    from chronicle.storage.db import transaction
    from chronicle.weeks import IsoWeek

    _offline(monkeypatch)
    backfill_weeks(project_id="XH201")
    _online(monkeypatch, online)
    online.responder = lambda request: "阶段总结：入组稳步推进，SAE 均已按时上报。"

    context = build_history_context(Settings(), "XH201", max_tokens=3000)
    rollups = online.calls()
    assert rollups > 0 and "[Month 2025-03 (202510–202513)]: 阶段总结" in context
    assert context.splitlines()[-2].startswith("[Week 202613]: ")  # XH201's newest week stays verbatim
    assert {p for p, in db_rows("SELECT DISTINCT purpose FROM llm_calls")} == {"rollup"}
    assert build_history_context(Settings(), "XH201", max_tokens=3000) == context and online.calls() == rollups

    week = IsoWeek.parse("2025-W20")
    current, stored = read_week(Settings(), "XH201", week)
    with transaction(Settings()) as conn:
        reports.save_edit(conn, "XH201", week.number, "人工修正的周报", citations={}, input_hash=current.input_hash,
                          stats=current.stats, author="t", reason="fix", base_version=stored.version,
                          review_reasons=[])
    build_history_context(Settings(), "XH201", max_tokens=3000)
    assert online.calls() == rollups + 1  # only the period covering the edited week

    online.responder = lambda request: "SAE 出现在 [Week 202530]。"
    answer = ask_chronicle(Settings(), "XH201", "哪几周发生了 SAE？")
    assert answer.engine == "fake-model" and answer.text == "SAE 出现在 [Week 202530]。"
    asked = online.requests[-1].json["messages"][-1]["content"]
    assert "=== 项目编年史 (Project Chronicle) ===" in asked and asked.endswith("问题：哪几周发生了 SAE？")
    assert db_rows("SELECT count(*) FROM llm_calls WHERE purpose = 'ask'") == [(1,)]
