"""Secret canaries of every redaction kind, in daily notes AND trial logs, never leave the raw log table: not to
the LLM (weekly reports and distillation), the embeddings endpoint, LanceDB, knowledge files, Prefect artifacts,
`llm_calls`, `weekly_reports` or the logs."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path

import pytest

from chronicle.settings import Settings
from tests.fakellm import FakeLLMServer
from tests.security.canaries import (
    CN_ID,
    CN_ID_TRIAL,
    NOTE_DAY,
    TRIAL_PROJECT,
    leaks,
    quoting_model,
    user_message,
    write_inputs,
)

UNTIL = date.fromisoformat(NOTE_DAY)


echoing = quoting_model()
"""A model that quotes its input back: whatever the prompt held ends up in every sink after it."""


@contextmanager
def listening(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Capture the Prefect run loggers and Chronicle's own. Prefect (re)configures logging when the process's
    first flow starts, dropping handlers it did not install, so enter this after one flow has run."""
    loggers = [logging.getLogger(n) for n in ("prefect", "chronicle", "httpx", "openai")]
    caplog.set_level(logging.DEBUG, logger="chronicle")
    caplog.set_level(logging.INFO, logger="prefect")  # run loggers inherit it; INFO is where the summaries are
    for lg in loggers:
        lg.addHandler(caplog.handler)
    try:
        yield
    finally:
        for lg in loggers:
            lg.removeHandler(caplog.handler)


def tree(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def table_text(*tables: str) -> dict[str, str]:
    from chronicle.storage.db import connect

    with connect(Settings()) as conn:
        return {t: "\n".join(repr(r) for r in conn.execute(f"SELECT * FROM {t}").fetchall()) for t in tables}


def artifacts_text() -> tuple[int, str]:
    """Every Prefect artifact of this test's flow runs, read back through the API."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    from chronicle.storage.db import connect

    with connect(Settings()) as conn:
        run_ids = [r[0] for r in conn.execute("SELECT flow_run_id FROM pipeline_runs").fetchall()]
    with get_client(sync_client=True) as client:
        arts = client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=run_ids)))
    return len(arts), "\n".join(f"{a.key} {a.description} {a.data}" for a in arts)


def assert_clean(where: str, blob: str | bytes) -> None:
    found = leaks(blob)
    assert not found, f"secret canaries leaked into {where}: {found}"


def test_canaries_reach_no_llm_request_and_no_store(home: Path, tmp_path: Path, fake_llm: FakeLLMServer,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.settings import Settings

    for key, value in {"LLM_URL": fake_llm.base_url, "LLM_MODEL": "fake-model", "EMBEDDING_URL": fake_llm.base_url,
                       "EMBEDDING_MODEL": "fake-embedding", "CHRONICLE_LLM_BACKOFF_BASE_S": "0.01"}.items():
        monkeypatch.setenv(key, value)
    fake_llm.responder = echoing
    ingest_logs([str(write_inputs(tmp_path / "in"))])
    with listening(caplog):
        distilled = distill_memory(days=3, until=UNTIL)
        rows = backfill_weeks(project_id="all")
    settings = Settings()

    # Positive controls: both paths really called the model with this data, and the data really got stored.
    chats = [r for r in fake_llm.requests if r.path.endswith("/chat/completions")]
    weekly = [r for r in chats if "流水账" in user_message(r.json)]
    assert distilled.tally.llm_calls >= 1 and distilled.tally.redactions.get("cn_id") == 1
    assert {r.project for r in rows if r.outcome == "generated"} == {"assistant", TRIAL_PROJECT}
    prompts = [user_message(r.json) for r in weekly]
    assert any("SEC-01-001" in p for p in prompts) and any("王老师" in p for p in prompts)
    assert any(r.path.endswith("/embeddings") for r in fake_llm.requests)
    lance = tree(Path(settings.lance_uri))
    assert "王老师习惯早上 7:30".encode() in lance  # the store's bytes are greppable: the leak check means something
    assert b"[REDACTED:" in tree(settings.workspace_dir)

    for request in fake_llm.requests:  # the LLM, and the embeddings endpoint (patient ids: neither)
        assert_clean(f"a request to {request.path}", request.body)
    assert_clean("LanceDB", lance)
    assert_clean("knowledge files", tree(settings.workspace_dir))
    for table, text in table_text("llm_calls", "weekly_reports", "weekly_report_versions", "memory_events",
                                  "distill_quarantine", "pipeline_runs").items():
        assert text or table == "distill_quarantine", f"{table} is empty: nothing to check"
        assert_clean(f"table {table}", text)
    n_artifacts, artifacts = artifacts_text()
    assert n_artifacts >= 4 and "REDACTED" in artifacts  # report artifacts quote the (redacted) entries
    assert_clean("Prefect artifacts", artifacts)
    messages = "\n".join(r.getMessage() for r in caplog.records)
    assert "distilled" in messages and "backfill" in messages
    assert_clean("logs", messages)
    assert CN_ID not in lance.decode("utf-8", "replace") and CN_ID_TRIAL.encode() not in lance


def test_offline_engines_store_no_canary(home: Path, tmp_path: Path, fake_llm: FakeLLMServer,
                                         monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """No LLM configured: the extractive weekly report and the rule-based distiller copy note text verbatim,
    so they must copy the redacted text."""
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.settings import Settings

    monkeypatch.setenv("EMBEDDING_URL", fake_llm.base_url)
    monkeypatch.setenv("EMBEDDING_MODEL", "fake-embedding")
    ingest_logs([str(write_inputs(tmp_path / "in"))])
    with listening(caplog):
        distilled = distill_memory(days=3, until=UNTIL)
        rows = backfill_weeks(project_id="all")
    settings = Settings()

    assert distilled.engine == "offline" and distilled.tally.memories > 3
    assert {r.engine for r in rows} == {"offline-extractive"}
    reports = table_text("weekly_reports")["weekly_reports"]
    assert "SEC-01-001" in reports  # the extractive report quotes the trial log
    assert not [r for r in fake_llm.requests if r.path.endswith("/chat/completions")]
    for request in fake_llm.requests:
        assert_clean(f"a request to {request.path}", request.body)
    assert_clean("LanceDB", tree(Path(settings.lance_uri)))
    assert_clean("knowledge files", tree(settings.workspace_dir))
    for table, text in table_text("weekly_reports", "weekly_report_versions", "memory_events").items():
        assert_clean(f"table {table}", text)
    assert_clean("Prefect artifacts", artifacts_text()[1])
    assert_clean("logs", "\n".join(r.getMessage() for r in caplog.records))
