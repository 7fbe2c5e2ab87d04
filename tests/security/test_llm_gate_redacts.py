"""The LLM sink has one gate, and it reads the prompt as the model will.

A caller that forgot to redact, or redacted line by line and joined after (`the password is` ⏎ value, a value
in the next entry of a prompt), still sends nothing secret: `chronicle.services.llm_gate.llm_call` redacts every message
as assembled. Real `openai` client against the local fake server; the `llm_calls` row is redacted the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chronicle.redaction.redactor import Redactor
from chronicle.redaction.text import Redacted, gate
from chronicle.settings import Settings
from tests.fakellm import FakeLLMServer


def test_the_gate_redacts_the_assembled_prompt(home: Path, fake_llm: FakeLLMServer,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.services.llm_gate import llm_call
    from chronicle.storage.db import connect

    monkeypatch.setenv("LLM_URL", fake_llm.base_url)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    settings = Settings()
    redactor = Redactor.build()
    pieces = [redactor.redact("[E1] 03-02 10:00 | DM | message | the staging password is"),
              redactor.redact("Gz7JoinedPw")]  # each piece alone looks harmless
    prompt = "\n".join(pieces) + "\nand the VPN token is VpnGate7Qx9"  # plus text nobody redacted
    assert "Gz7JoinedPw" in prompt and not isinstance(prompt, Redacted)
    llm_call(settings, "run-gate")([{"role": "system", "content": "s"}, {"role": "user", "content": prompt}],
                                   purpose="test")
    body = b"".join(r.body for r in fake_llm.requests if r.path.endswith("/chat/completions")).decode()
    assert "Gz7JoinedPw" not in body and "VpnGate7Qx9" not in body and "[REDACTED:password]" in body
    with connect(settings, read_only=True) as conn:
        stored = repr(conn.execute("SELECT prompt FROM llm_calls").fetchall())
    assert "Gz7JoinedPw" not in stored and "VpnGate7Qx9" not in stored


def test_redacted_is_made_only_by_the_redactor_and_the_gate_is_idempotent() -> None:
    redactor = Redactor.build()
    once = redactor.redact("the password is\nSpl1tPw9Zz")
    assert isinstance(once, Redacted) and gate(once, redactor) is once
    joined = once + " and more"
    assert not isinstance(joined, Redacted) and gate(joined, redactor) == joined  # redacting twice is harmless


def _stored_prompts(settings: Settings) -> str:
    from chronicle.storage.db import connect

    with connect(settings, read_only=True) as conn:
        return repr(conn.execute("SELECT prompt FROM llm_calls").fetchall())


def test_the_llm_calls_row_keeps_unredacted_only_the_gates_own_output(home: Path, fake_llm: FakeLLMServer,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The row's prompt is not redacted again only when it is exactly what this gate's redactor made of plain
    messages. Anything else in it is redacted: text `Redacted` by another redactor (here one without the
    settings' extra pattern), a field beside the content, a prompt the client serialised otherwise."""
    import chronicle.llm.client
    from chronicle.llm.records import serialise_prompt
    from chronicle.services.llm_gate import llm_call

    monkeypatch.setenv("LLM_URL", fake_llm.base_url)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("CHRONICLE_REDACT_EXTRA_PATTERNS", '["Zebra\\\\d{4}"]')
    settings = Settings()
    call = llm_call(settings, "run-row")
    call([{"role": "user", "content": "plain text, the password is Pl4inPw9x and Zebra1111"}], purpose="test")
    assert "Pl4inPw9x" not in _stored_prompts(settings) and "Zebra1111" not in _stored_prompts(settings)
    call([{"role": "user", "content": Redactor.build().redact("the badge is Zebra2222")}], purpose="test")
    call([{"role": "user", "content": "hi", "name": "password=Fi3ldPw9x"}], purpose="test")
    monkeypatch.setattr(chronicle.llm.client, "serialise_prompt",
                        lambda messages: serialise_prompt(messages) + " token=Tr4ilTok9xQ")
    call([{"role": "user", "content": "hello"}], purpose="test")
    stored = _stored_prompts(settings)
    assert "[REDACTED:custom]" in stored
    for secret in ("Zebra2222", "Fi3ldPw9x", "Tr4ilTok9xQ"):
        assert secret not in stored, secret
