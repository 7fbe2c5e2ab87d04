"""Canaries in the places nobody looked reach no sink.

Canaries sit in a note's FILE NAME (`2026-03-02-ghp_….md`), in a PROJECT ID (`ACME-ghp_…`), in shapes a list
did not anticipate (a label and its value on two lines or two bullets, `VPN token is`, `export PGPASSWORD=`,
a bank card, an IBAN), in the settings (`LLM_URL` with a password), in edit metadata (`report edit --reason`
and `--author`), in what the model invents, and on the error path (a 401 whose body echoes the key and the
URL password). The walk covers the LLM requests, every DuckDB table but the raw record, LanceDB, the knowledge
files, the Prefect artifacts, flow- and task-run names and states, CLI output and the logs. Real parts: the
`openai` client against the local fake server, the Prefect API fixture, DuckDB and LanceDB files.
"""

from __future__ import annotations

import base64
import json
import re
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronicle.settings import Settings
from tests.fakellm import FakeLLMServer, Reply
from tests.security.canaries import user_message
from tests.security.test_redaction_sinks import RAW_TABLES, all_tables, recorded_runs
from tests.security.test_secrets import artifacts_text, listening, tree

DAY = "2026-03-02"
PROJECT = "SINKS"
FILE_KEY = "ghp_SINKCANfile0123456789abcdefAB"
PROJECT_KEY = "ghp_SINKCANproj0123456789abcdefAB"  # a token pasted into a project id
URL_PW = "SINKCANurlpw9Q"
KEY = "sk-SINKCANkey0123456789abcdefgh"
SHAPES = [
    "the password is\nSINKCANsplit9Zz",
    "VPN: the VPN token is SINKCANvpn7Qx",
    "export PGPASSWORD=SINKCANpg5x",
    "客户卡号 6222 0212 3456 7890 128 已登记",
    "汇款 IBAN DE89 3704 0044 0532 0130 00",
    "门禁码是 SINKCAN4821",
]
# Fail closed: shapes no rule names, the value of a secret clause wherever it stands, values on the next entry.
B64 = base64.b64encode(b"password=SINKCANb64pw").decode()
FAIL_CLOSED = [
    "AccessKeySecret: SINKCANak8fJk2LmNq4RsTuVwXyZaB3j",
    "告警推送到 https://open.feishu.cn/open-apis/bot/v2/hook/5ca1ab1e-0000-4f3a-9b8c-7d6e5f4a3b2c 了",
    "今天的验证码 839417", "口令是 老虎打飞机",
    "测试钱包 0x5c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f3623aa",
    "报告 https://b.s3.amazonaws.com/w.pdf?X-Amz-Expires=3600&X-Amz-Signature=5141ca" + "9f2c5b0a4e6d8c1b" * 3
    + "0a4e6d8c1b", f"cfg {B64}", "QQ邮箱 SMTP 授权码 sinkcanqwrtpsdfg",
    "abandon ability able about above absent absorb abstract absurd abuse access accident",
    "The admin password of the router is now SINKCANrt!9", "SINKCANwifi42 是新的 wifi 密码",
]
NEXT_ENTRY = [("-----BEGIN RSA PRIVATE KEY-----", "MIIEowSINKCANpemAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLe"),
              ("数据库密码", "SINKCANdbpw#77")]
PERSONAL = ["受试者 XH201-01-003（张建国，男，67岁）今日完成 C2D1 访视",
            "护照号 E53917264，家住 上海市徐汇区漕溪北路118号3栋1201室", "受试者身份证 1101 0119 9003 0745 78",
            "家属电话 139 1234 5678"]
SHAPES += FAIL_CLOSED
BULLETS = "- the staging password is\n- SINKCANbullet9Z\n"
MODEL_SECRET = "SINKCANmodel3Kq"
REASON_SECRET = "SINKCANreason8Wx"
AUTHOR_SECRET = "SINKCANauthor6Vb"
FRAGMENTS = ["SINKCAN", "6222 0212 3456", "DE89 3704", "0532 0130", "5ca1ab1e-0000", "839417", "老虎打飞机",
             "5c0883a6910293", "5141ca9f2c", B64, "sinkcanqwrtpsdfg", "abandon ability able", "张建国", "E53917264",
             "漕溪北路118号", "1101 0119 9003", "139 1234 5678"]
SEARCH_KEY = "ghp_SINKCANsearch0123456789abcdefAB"


def leaks(blob: str | bytes) -> list[str]:
    text = blob.decode("utf-8", "replace") if isinstance(blob, bytes) else blob
    return [f for f in FRAGMENTS if f in text]


def model(request: dict[str, Any]) -> str:
    """Quotes its input back (so whatever the prompt held reaches every sink after it) and invents credentials
    in the new shapes."""
    user = user_message(request)
    invented = f"the admin password is\n{MODEL_SECRET}"
    if request["messages"][0]["content"].startswith("You distill"):
        entries = re.findall(r"^\[\d+\] (.*)$", user, flags=re.M)
        memories = [{"content": text, "summary": text[:60], "tags": ["t"], "importance": 0.8,
                     "targetFile": "TOOLS.md", "action": "append"} for text in entries]
        memories.append({"content": invented, "summary": "x", "tags": ["t"], "importance": 0.8,
                         "targetFile": "MEMORY.md", "action": "append"})
        return json.dumps(memories, ensure_ascii=False)
    quoted = [line for line in user.splitlines() if line.startswith("[E")]
    return "## 周报\n\n" + "\n".join(f"- {line[:120]}" for line in quoted[:8]) + f"\n- {invented}\n"


def write_inputs(root: Path) -> Path:
    (root / "memory").mkdir(parents=True)
    body = "\n\n".join(SHAPES) + "\n\n" + BULLETS
    (root / "memory" / f"{DAY}-{FILE_KEY}.md").write_text(f"# {DAY}\n\n## 配置\n\n{body}", encoding="utf-8")
    with (root / "trial.jsonl").open("w", encoding="utf-8") as fh:
        forms = [*SHAPES, "the staging password is", "SINKCANbullet9Z", *PERSONAL, *(f for p in NEXT_ENTRY for f in p)]
        for i, form in enumerate(forms):
            fh.write(json.dumps({"project_id": PROJECT, "ts": f"{DAY}T{10 + i // 60}:{i % 60:02d}:00+08:00",
                                 "actor": "DM-赵磊",
                                 "type": "message", "content": form}, ensure_ascii=False) + "\n")
    with (root / "acme.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(3):
            fh.write(json.dumps({"project_id": f"ACME-{PROJECT_KEY}", "ts": f"{DAY}T0{i}:00:00+08:00",
                                 "actor": "PM", "type": "decision", "content": f"里程碑 {i} 已完成"},
                                ensure_ascii=False) + "\n")
    return root


def all_tables_with_raw() -> dict[str, str]:
    import duckdb

    with duckdb.connect(str(Settings().db_path), read_only=True) as conn:
        rows = conn.execute("SELECT project_id, family, value, placeholder FROM pseudonyms").fetchall()
    return {"pseudonyms": "\n".join(" ".join(map(str, r)) for r in rows)}


def run_names_and_states() -> str:
    flows, tasks = recorded_runs()
    return "\n".join(f"{r.name} {r.state.message if r.state else ''} {r.parameters if hasattr(r, 'parameters') else ''}"
                     for r in [*flows, *tasks])


@pytest.mark.slow
def test_canaries_in_names_settings_metadata_and_errors_reach_no_sink(
        home: Path, tmp_path: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    from chronicle.cli.common import console
    from chronicle.cli.main import app
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.flows.summarize_week import summarize_week
    from chronicle.weekly.outcome import WeeksFailedError

    monkeypatch.setattr(console, "_width", 400)
    url = fake_llm.base_url.replace("http://", f"http://admin:{URL_PW}@")
    for key, value in {"EMBEDDING_URL": fake_llm.base_url, "EMBEDDING_MODEL": "fake-embedding",
                       "CHRONICLE_LLM_BACKOFF_BASE_S": "0.01", "LLM_URL": url, "LLM_MODEL": "fake-model",
                       "LLM_API_KEY": KEY}.items():
        monkeypatch.setenv(key, value)
    fake_llm.responder = model
    ingest_logs([str(write_inputs(tmp_path / "in"))])
    runner = CliRunner()
    edited = tmp_path / "edit.md"
    edited.write_text("## 周报（人工修订）\n\n- 本周无异常 [E1]\n", encoding="utf-8")
    with listening(caplog):
        distilled = distill_memory(days=3, until=date.fromisoformat(DAY)).as_dict()
        rows = backfill_weeks(project_id="all")
        # The error path: a 401 whose body echoes the key, the URL password and another credential.
        fake_llm.enqueue(Reply(status=401, content=f"Incorrect API key provided: {KEY} via admin:{URL_PW}; "
                                                   f"Authorization: Bearer sk-SINKCANother0123456789ab"))
        with pytest.raises(WeeksFailedError) as failed:
            summarize_week(PROJECT, "2026-W10", force=True)
        outputs = [runner.invoke(app, args, catch_exceptions=False).output for args in (
            ["config"], ["config", "--json"], ["memory", "list", "--json"], ["memory", "proposals", "--all"],
            ["report", "edit", "--project", PROJECT, "--week", "2026-W10", "--file", str(edited),
             "--reason", f"rotated: the password is {REASON_SECRET}", "--author", f"bob token {AUTHOR_SECRET}"],
            ["report", "history", "--project", PROJECT, "--week", "2026-W10"],
            ["report", "show", "--project", PROJECT, "--week", "2026-W10"], ["runs"],
            ["backfill", "--all", "--every-week"], ["memory", "search", SEARCH_KEY],
            ["report", "show", "--project", f"X-{SEARCH_KEY}", "--week", "2026-W10"])]
    settings = Settings()

    # Positive controls: the data really went through every path.
    assert distilled["memories"] >= len(SHAPES) and {r.outcome for r in rows} == {"generated"}
    assert "401" in failed.value.rows[0].message and "LLM_API_KEY" in failed.value.rows[0].message
    assert "admin:****@" in outputs[0] and "人工修订" in outputs[6] and "ACME-[REDACTED:api_key]" in outputs[8]
    assert "ACME-[REDACTED:api_key]" in {r.project for r in rows}  # the project was summarised, its id redacted
    mapping = all_tables_with_raw()["pseudonyms"]
    assert "张建国" in mapping and "[受试者姓名-1]" in mapping  # the subject's name was pseudonymised, kept there
    lance = tree(Path(settings.lance_uri))
    assert b"[REDACTED:api_key].md" in lance  # the note's file name travelled, redacted

    # Every request, the embeddings endpoint's included (a dict comprehension kept only each path's last one).
    assert any(r.path.endswith("/embeddings") for r in fake_llm.requests)  # the embedder sink was walked
    found: dict[str, list[str]] = {}
    for r in fake_llm.requests:
        found.setdefault(f"request {r.path}", []).extend(leaks(r.body))
    found["LanceDB"] = leaks(lance)
    found["knowledge files"] = leaks(tree(settings.workspace_dir))
    for table, text in all_tables().items():
        assert table not in RAW_TABLES
        found[f"table {table}"] = leaks(text)
    found["artifacts"] = leaks(artifacts_text()[1])
    found["flow and task runs: names, states"] = leaks(run_names_and_states())
    found["error"] = leaks(f"{failed.value} {failed.value.rows!r}")
    for i, output in enumerate(outputs):
        found[f"CLI output {i}"] = leaks(output)
    found["logs"] = leaks("\n".join(r.getMessage() for r in caplog.records))
    assert {where: hits for where, hits in found.items() if hits} == {}
