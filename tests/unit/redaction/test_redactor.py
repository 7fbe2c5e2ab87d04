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


@pytest.mark.parametrize(("text", "secret"), [
    ("user=root pass=toor", "toor"),                                           # a bare `pass` key
    ("pass: hunter2", "hunter2"),
    ("passphrase: correct horse battery staple", "horse battery staple"),     # every word of a passphrase
    ("the wifi passphrase is correct horse battery staple", "battery"),
    ("the wifi passphrase is 'correct horse battery staple'.", "staple"),
    ("口令是 天王盖地虎 宝塔镇河妖", "宝塔镇河妖"),
    ("she told me her bank card pin, 0927, don't forget", "0927"),            # the value set off by commas
    ("the token, Xq93kLm2Pz, expired yesterday", "Xq93kLm2Pz"),
    ("the vault unseal key is 7f3a9c2e", "7f3a9c2e"),                         # a key of any name, key-shaped
    ("Key: 0b6a0a3e-7b2f-4f8e-9a55-2f5b0b1f4a3c", "0b6a0a3e"),
    ("the key was AB12CD34EF", "AB12CD34EF"),
])
def test_clause_values_of_every_shape_are_hidden(text: str, secret: str) -> None:
    out = REDACTOR.redact(text)
    assert secret not in out and "[REDACTED:" in out, out


@pytest.mark.parametrize("text", [
    "we will pass this to the team", "you shall not pass: said Gandalf", "the key date is 2026-03-01",
    "the primary key is user_id", "the key is 42", "key point: enrolment is slow", "sort key is created_at",
    "the key takeaway is that site 03 lags", "partition key = site_id", "hot keys: F5 and F11",
    "the passphrase is stored in vault", "the passphrase is never written down", "the passphrase is too short",
    "the seed phrase is written on the card in the safe", "the PIN, 4 digits long, changed",
    "The passphrase is the same as last year's", "the password, as usual, is on the sticky note",
])
def test_prose_about_keys_and_passphrases_stays(text: str) -> None:
    assert REDACTOR.redact(text) == text
