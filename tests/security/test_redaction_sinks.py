"""Secrets in the forms people really write — headers, webhook URLs, vendor keys, DB URLs, `*_PASS=`, full-width
and plain-language passwords, spaced IDs, dotted phones, a key split over two lines, a phone number in a note's
FILE NAME, a secret the model makes up, a secret typed into `chronicle ask` — reach no sink:
LLM requests, `llm_calls`, LanceDB, knowledge files, weekly reports, every other DuckDB table, Prefect artifacts,
flow- and task-run names, CLI output, logs. `raw_logs`, `rejects` and `ingest_files` are the raw record by design.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronicle.settings import Settings
from tests.fakellm import FakeLLMServer
from tests.security.canaries import cn_id, quoting_model
from tests.security.test_secrets import artifacts_text, listening, tree

ID = cn_id("32010219850611042")
SPACED_ID = f"{ID[:6]} {ID[6:14]} {ID[14:]}"
NAME_PHONE = "13987654321"
DAY = "2026-03-02"
UNTIL = date.fromisoformat(DAY)
PROJECT = "FORMS"
FORMS = [
    "Authorization: Basic U0VDRk9STWJhc2ljOmh1bnRlcjI=",
    "Cookie: sessionid=SECFORMcookie0123456789; csrftoken=SECFORMcsrf012345",
    "X-Api-Key: SECFORMapikey0123456789",
    "告警 https://hooks.slack.com/services/T0SECFORM/B0SECFORM/SECFORMslack0123456789",
    "Stripe sk_live_SECFORMstripe0123456789ab 与 rk_live_SECFORMrestricted012345",
    "postgres://admin:SECFORMpgpw1@db-host/prod 和 mysql://root:SECFORMmypw2@192.0.2.5",
    "DB_PASS=SECFORMdbpass3 SMTP_PWD=SECFORMpwd4 CI_TOKEN=SECFORMtoken5 SIGNING_KEY=SECFORMkey6",
    "服务器 password＝SECFORMwide7 已记录",
    "wifi 密码是 SECFORMzh8，口令：SECFORMzh9，the admin password is SECFORMen10!",
    f"身份证 {SPACED_ID}",
    "手机 135.6666.7777，座机 010-8888 7777",
    "split key sk-proj-SECFORMsplit01\nSECFORMsplit02tail9876",
]
MODEL_SECRET = "SECFORMmodel11xyz"  # a secret the model invents in its answer
ASK_SECRET = "SECFORMask12xyz"  # a secret the user types into `chronicle ask`
FRAGMENTS = ["SECFORM", "U0VDRk9STWJhc2lj", "6666.7777", "8888 7777", ID[6:14], NAME_PHONE]
# The raw record, and the pseudonym mapping (the one place a subject's real name is kept, by design).
RAW_TABLES = {"raw_logs", "rejects", "ingest_files", "schema_migrations", "pseudonyms"}


def leaks(blob: str | bytes) -> list[str]:
    text = blob.decode("utf-8", "replace") if isinstance(blob, bytes) else blob
    return [f for f in FRAGMENTS if f in text]


def write_inputs(root: Path) -> Path:
    (root / "memory").mkdir(parents=True)
    note = "\n".join(f"- {form}" for form in FORMS) + "\n"
    (root / "memory" / f"{DAY}-call-{NAME_PHONE}.md").write_text(f"# {DAY}\n\n## 配置\n\n{note}", encoding="utf-8")
    with (root / "trial.jsonl").open("w", encoding="utf-8") as fh:
        for i, form in enumerate(FORMS):
            fh.write(json.dumps({"project_id": PROJECT, "ts": f"{DAY}T1{i % 10}:00:00+08:00", "actor": "DM-赵磊",
                                "type": "enrollment" if i == 0 else "message", "content": form},
                               ensure_ascii=False) + "\n")
    return root


leaky_model = quoting_model(target_file="TOOLS.md", width=80, lines=3, own_secret=MODEL_SECRET)
"""Quotes its input back AND adds a credential of its own: both must be gone before anything is stored."""


def all_tables() -> dict[str, str]:
    from chronicle.storage.db import connect

    with connect(Settings()) as conn:
        names = [r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables "
                                            "WHERE table_schema = 'main' AND table_type = 'BASE TABLE'").fetchall()]
        return {n: "\n".join(repr(r) for r in conn.execute(f'SELECT * FROM "{n}"').fetchall())
                for n in names if n not in RAW_TABLES}


def recorded_runs() -> tuple[list, list]:
    """The Prefect flow runs this home recorded (`pipeline_runs`) and their task runs, as the API serves them."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    from chronicle.storage.db import connect

    with connect(Settings()) as conn:
        ids = [r[0] for r in conn.execute("SELECT flow_run_id FROM pipeline_runs").fetchall()]
    with get_client(sync_client=True) as client:
        flow_filter = FlowRunFilter(id=FlowRunFilterId(any_=ids))
        flows = client.read_flow_runs(flow_run_filter=flow_filter)
        tasks = client.read_task_runs(flow_run_filter=flow_filter, limit=200)
    assert flows and tasks
    return flows, tasks


def run_names() -> str:
    flows, tasks = recorded_runs()
    return "\n".join([*(f.name for f in flows), *(t.name for t in tasks)])


@pytest.mark.parametrize("engine", ["llm", "offline"])
def test_new_forms_reach_no_sink(home: Path, tmp_path: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch,
                                 caplog: pytest.LogCaptureFixture, engine: str) -> None:
    from chronicle.cli.common import console
    from chronicle.cli.main import app
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs

    monkeypatch.setattr(console, "_width", 400)
    env = {"EMBEDDING_URL": fake_llm.base_url, "EMBEDDING_MODEL": "fake-embedding",
           "CHRONICLE_LLM_BACKOFF_BASE_S": "0.01"}
    if engine == "llm":
        env |= {"LLM_URL": fake_llm.base_url, "LLM_MODEL": "fake-model"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    fake_llm.responder = leaky_model
    ingest_logs([str(write_inputs(tmp_path / "in"))])
    runner = CliRunner()
    with listening(caplog):
        distilled = distill_memory(days=3, until=UNTIL).as_dict()
        rows = backfill_weeks(project_id="all")
        outputs = [runner.invoke(app, args, catch_exceptions=False).output for args in (
            ["memory", "list", "--json"], ["memory", "search", "配置", "--json"],
            ["report", "show", "--project", PROJECT, "--week", "2026-W10"],
            ["ask", "--project", PROJECT, f"我的 DB_PASS={ASK_SECRET} 存了吗？"], ["runs"],
            ["distill", "--days", "3", "--until", DAY], ["ingest", str(tmp_path / "in")])]
    settings = Settings()

    # Positive controls: the data really went through every path.
    assert distilled["memories"] >= len(FORMS) and {r.outcome for r in rows} == {"generated"}
    assert "\"source\"" in outputs[0] and "2026-W10" in outputs[2]
    lance = tree(Path(settings.lance_uri))
    assert b"2026-03-02-call-" in lance and b"[REDACTED:phone]" in lance  # the source name, redacted
    chats = [r for r in fake_llm.requests if r.path.endswith("/chat/completions")]
    assert (len(chats) > 0) == (engine == "llm")

    found = {}
    for request in fake_llm.requests:
        found[f"request {request.path}"] = leaks(request.body)
    found["LanceDB"] = leaks(lance)
    found["knowledge files"] = leaks(tree(settings.workspace_dir))
    for table, text in all_tables().items():
        found[f"table {table}"] = leaks(text)
    found["artifacts"] = leaks(artifacts_text()[1])
    found["flow and task run names"] = leaks(run_names())
    for i, output in enumerate(outputs):
        found[f"CLI output {i}"] = leaks(output)
    found["logs"] = leaks("\n".join(r.getMessage() for r in caplog.records))
    assert {where: hits for where, hits in found.items() if hits} == {}


def test_what_the_cli_echoes_meets_the_redaction_the_operator_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    """The terminal is a sink like the others: where commit hashes are declared unsafe, a 40-hex run typed into a
    parameter is not printed back in the refusal; by default it reads as a commit and stays."""
    from chronicle.cli.main import app

    key = "e6df66213da98871b52d90a24cae413501926061"
    shown = CliRunner().invoke(app, ["distill", "--until", key])
    assert shown.exit_code == 2 and f"--until '{key}' is not a day" in shown.output, shown.output
    monkeypatch.setenv("CHRONICLE_REDACT_COMMIT_HASHES_SAFE", "false")
    shown = CliRunner().invoke(app, ["distill", "--until", key])
    assert shown.exit_code == 2 and "--until '[REDACTED:secret]' is not a day" in shown.output, shown.output
