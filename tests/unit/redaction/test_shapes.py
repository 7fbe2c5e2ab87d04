"""Every shape the adversarial pass leaked through is hidden, and look-alikes survive (pure).

Each positive case here leaked through the earlier redactor (it matched vocabulary, not shape)."""

from __future__ import annotations

import pytest

from chronicle.redaction import checks
from chronicle.redaction.redactor import Redactor

LEAKED = [
    # shape, not vocabulary: a label and its value across a line break, a bullet, a table cell
    ("the password is\nSpl1tPw9Zz", "Spl1tPw9Zz"),
    ("- we rotated it, the staging password is\n- Tw0BulletPwZ9", "Tw0BulletPwZ9"),
    ("密码\nNx7LinePw", "Nx7LinePw"),
    ("| 系统 | 说明 |\n|---|---|\n| wifi 密码 | Nx7CellPw |", "Nx7CellPw"),
    ("The new VPN token is:\n* VpnNextLine7Qx", "VpnNextLine7Qx"),
    # ordinary nouns
    ("the VPN token is VpnTok3nQ7xR", "VpnTok3nQ7xR"),
    ("门禁码是 48213", "48213"),
    ("the door code is 4821", "4821"),
    ("口令为 Kou9Ling", "Kou9Ling"),
    ("my PIN: 7391", "7391"),
    # well-known formats
    ("SendGrid 的 key SG.abcdEFGHijklMNOPqrstUV.wxyz0123456789ABCDEFGHIJklmnopqrstuvwxyzAB 已轮换",
     "SG.abcdEFGHijklMNOPqrstUV.wxyz0123456789ABCDEFGHIJklmnopqrstuvwxyzAB"),
    ("export PGPASSWORD=Pg5ecretVal", "Pg5ecretVal"),
    ("docker login -u bob -p Dock3rPw registry.example.com", "Dock3rPw"),
    ("db.example.com:5432:prod:app:PgPassLine7", "PgPassLine7"),
    ("卡号 6222 0212 3456 7890 128", "6222 0212"),
    ("卡号 6222021234567890128", "6222021234567890128"),
    ("IBAN DE89370400440532013000", "DE89370400440532013000"),
    ("IBAN DE89 3704 0044 0532 0130 00", "DE89 3704"),
    ("AWS_SECRET_ACCESS_KEY wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("client secret GOCSPX-1a2B3c4D5e6F7g8H9i0JkLmNoP", "GOCSPX-1a2B3c4D5e6F7g8H9i0JkLmNoP"),
    ("access token ya29.a0AfH6SMBx1y2z3ABCDEFGhijklmnop", "ya29.a0AfH6SMBx1y2z3ABCDEFGhijklmnop"),
    ("twine upload with pypi-AgEIcHlwaS5vcmcCJGE1YjQ2ZjQ3", "pypi-AgEIcHlwaS5vcmcCJGE1YjQ2ZjQ3"),
    # phones in any national format (phonenumbers), keyword + entropy
    ("call +1 415 555 2671 tonight", "555 2671"),
    ("the deploy secret lives in Xq7rT2pLm9Vw4Zk8Bn3H", "Xq7rT2pLm9Vw4Zk8Bn3H"),
    # the value before a verb copula that the noun closes, whatever the noun's words
    ("Tiger!Lily9 is the admin password of the router", "Tiger!Lily9"),
    ("Mx7-Harbor is our new wifi passcode", "Mx7-Harbor"),
]

SURVIVE = [
    "released v2.14.3 on 2026-03-12", "commit 3f9a1c2b7d4e5f60718293a4b5c6d7e8f9012345", "order ORD-20260312-0042",
    "lot 2026031200457", "subject SEC-01-001 enrolled", "the token is expired", "the password is required",
    "password policy:\n- at least 12 chars", "error code is 404", "zip code 100080", "the key is under the mat",
    "order no 6222021234567890", "tracking 1Z999AA10123456784", "the token count is 4096", "week 2026-W10",
    "uuid 123e4567-e89b-12d3-a456-426614174000", "hotline 400-800-8888", "批号 110105194912310021",
    "the password is\nchanged every 90 days", "secret santa list at docs/team/secret-santa-2026.md",
    # a label's colon is not the copula of a secret noun many words later (a changelog line of the OpenClaw notes)
    'After Fixes: "Benign medium confidence" - Mock mode removed - JWT_SECRET consistently required',
    "Status: Deployed to staging, the API token rotation is documented",
]


@pytest.mark.parametrize(("text", "secret"), LEAKED)
def test_the_shapes_that_leaked_are_hidden(text: str, secret: str) -> None:
    out = Redactor.build().redact(text)
    assert secret not in out and "[REDACTED:" in out, out


@pytest.mark.parametrize("text", SURVIVE)
def test_look_alikes_survive(text: str) -> None:
    assert Redactor.build().redact(text) == text


def test_joined_lines_are_redacted_as_the_model_sees_them() -> None:
    """The weekly prompt builder joins an entry's lines with spaces: the joined text is caught as well."""
    redactor = Redactor.build()
    assert "Spl1tPw9Zz" not in redactor.redact(" ".join(["the", "password", "is", "Spl1tPw9Zz"]))


def test_checksums_come_from_the_libraries() -> None:
    assert checks.card_number("4111 1111 1111 1111") and not checks.card_number("4111 1111 1111 1112")
    assert checks.iban_number("GB82WEST12345698765432") and not checks.iban_number("GB82WEST12345698765433")
    assert checks.cn_resident_id("11010519491231002X") and not checks.cn_resident_id("110105194912310021")
    assert checks.phone_number("0755 8888 7777") and not checks.phone_number("2026-03-12")
