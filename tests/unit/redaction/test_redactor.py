"""Redaction: every kind of canary is replaced and counted; ordinary technical text is left alone."""

from __future__ import annotations

from collections import Counter

import pytest

from chronicle.redaction.redactor import Redactor
from tests.distill.conftest import ALL_CANARIES, CANARIES, CANARY_NOTE

REDACTOR = Redactor.build([r"PRJ-SECRET-\d+"])


def test_canary_note_is_fully_redacted_with_counts_per_kind() -> None:
    counts: Counter[str] = Counter()
    out = REDACTOR.redact(CANARY_NOTE, counts)
    for canary in ALL_CANARIES:
        assert canary not in out
    assert set(counts) == set(CANARIES)
    assert counts["api_key"] == 5 and counts["phone"] == 3 and counts["secret"] == 3 and counts["private_key"] == 1
    # Names of pairs stay readable; only values go.
    assert "DB_PASSWORD=[REDACTED:password]" in out and "STRIPE_KEY=[REDACTED:secret]" in out
    assert "Authorization: Bearer [REDACTED:bearer_token]" in out


def test_redaction_is_idempotent_and_counts_nothing_twice() -> None:
    once = REDACTOR.redact(CANARY_NOTE)
    counts: Counter[str] = Counter()
    assert REDACTOR.redact(once, counts) == once
    assert counts == Counter()


@pytest.mark.parametrize("text", [
    "Released v0.3.0 on 2026-02-15 at 22:00; WebSocket on port 8765, 10,000+ words, +20% downloads",
    "JWT token authentication and API key support; JWT_SECRET consistently required",
    "max_tokens=512 and tokens_in: 40; the user's key insight: ship honest code",
    "截至 2026-03-02，累计入组 137 例；订单号 2026030212345",
    "Tests pass: 42 of 42",
])
def test_ordinary_text_is_untouched(text: str) -> None:
    counts: Counter[str] = Counter()
    assert REDACTOR.redact(text, counts) == text
    assert not counts


def test_private_key_without_end_line_is_redacted_to_the_end() -> None:
    text = "config:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nmore key material"
    assert REDACTOR.redact(text) == "config:\n[REDACTED:private_key]"


@pytest.mark.parametrize(("text", "kind"), [
    ('{"password": "two words"}', "password"),
    ("密码：abc123，别外传", "password"),
    ("aws_access_key=AbCdEf123", "secret"),
    ("Authorization: bearer abc.def-ghi_jkl", "bearer_token"),
    ("call +44 20 7946 0958 tomorrow", "phone"),
    ("ID 11010519491231002x", "cn_id"),
])
def test_variants(text: str, kind: str) -> None:
    counts: Counter[str] = Counter()
    out = REDACTOR.redact(text, counts)
    assert counts == Counter({kind: 1}), out
    assert f"[REDACTED:{kind}]" in out
    assert "two words" not in out and "abc123" not in out and "7946" not in out
