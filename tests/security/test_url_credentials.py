"""Credentials inside settings' URLs and keys echoed by a server never reach what is shown or stored.

`LLM_URL=http://admin:pw@host/v1` keeps working (the connection uses it), but `chronicle config`, the engine
banner, `llm_calls.endpoint` (the call records) and every error message show `admin:****@`; a 401 whose body
echoes the key, the URL password or some other credential is sanitised before it is raised, logged or stored.
With the real `openai` client against the local fake server.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from chronicle.llm import ChatClient, LLMCallRecord, PermanentLLMError
from chronicle.settings import Settings
from tests.fakellm import FakeLLMServer, Reply

URL_PW = "UrlPw9SecretZq"
KEY = "sk-URLCANARYkey0123456789abcdef"
OTHER = "sk-OTHERCANARY0123456789abcdefgh"  # a key the server echoes that is not ours
USER = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


class Records(list[LLMCallRecord]):
    def log(self, record: LLMCallRecord) -> None:
        self.append(record)


def with_password(url: str) -> str:
    return url.replace("http://", f"http://admin:{URL_PW}@")


def settings_for(url: str, **extra: Any) -> Settings:
    return Settings(llm_url=url, llm_model="m", llm_api_key=KEY, llm_timeout_s=5.0, llm_backoff_base_s=0.01,
                    llm_backoff_max_s=0.02, **extra)


def test_config_and_banner_mask_the_url_password(monkeypatch: pytest.MonkeyPatch, home: Any) -> None:
    from chronicle.cli.main import app
    from chronicle.cli.report_cmds import engine_banner

    monkeypatch.setenv("LLM_URL", f"http://admin:{URL_PW}@gw.example:8080/v1")
    for args in (["config"], ["config", "--json"]):
        out = CliRunner().invoke(app, args)
        assert out.exit_code == 0, out.output
        assert URL_PW not in out.output and "admin:****@gw.example" in out.output.replace("\n", "")
    settings = Settings()
    assert URL_PW not in str(settings.masked()) and URL_PW not in engine_banner(settings)


def test_the_call_records_and_errors_mask_the_url_password_and_echoed_keys(server: FakeLLMServer) -> None:
    records = Records()
    client = ChatClient(settings_for(with_password(server.base_url)), records, sleep=lambda _: None)
    assert client.complete(USER, purpose="t").text  # the URL with credentials still connects
    server.enqueue(Reply(status=401, content=f"Incorrect API key provided: {KEY}; url password {URL_PW}; "
                                             f"Authorization: Bearer {OTHER}"))
    with pytest.raises(PermanentLLMError) as caught:
        client.complete(USER, purpose="t")
    shown = f"{caught.value} {caught.value.message} {caught.value.endpoint} {caught.value!r}"
    for secret in (URL_PW, KEY, OTHER):
        assert secret not in shown
        assert all(secret not in str(v) for r in records for v in dataclasses.asdict(r).values())
    assert "401" in shown and "LLM_API_KEY" in shown and "admin:****@127.0.0.1" in shown
    assert {r.endpoint for r in records} == {with_password(server.base_url).replace(URL_PW, "****")}


def test_a_token_as_url_user_is_masked_too() -> None:
    from chronicle.redaction.urls import mask_url_credentials

    assert mask_url_credentials("https://ghp_abcdefghij0123456789@github.com/x") == "https://****@github.com/x"
    assert mask_url_credentials("git clone https://bob@github.com/x") == "git clone https://bob@github.com/x"
