"""Identity documents by their label (SSN, passport, driver's licence, 证件号 …) and a US SSN by its shape."""

from __future__ import annotations

import pytest

from chronicle.redaction.redactor import Redactor


@pytest.mark.parametrize(("text", "redacted"), [
    ("Brian: my SSN is 123-45-6789.", "Brian: my SSN is [REDACTED:id_number]."),
    ("SSN: 219-09-9999", "SSN: [REDACTED:id_number]"),
    ("my passport number is E12345678.", "my passport number is [REDACTED:id_number]."),
    ("护照号：E12345678", "护照号：[REDACTED:id_number]"),
    ("我的证件号码是 G12345678，请保密", "我的证件号码是 [REDACTED:id_number]，请保密"),
    ("order 123-45-6789 shipped", "order [REDACTED:id_number] shipped"),
    ("丁悦：我的身份证号是110101199003074578。", "丁悦：我的身份证号是[REDACTED:cn_id]。"),
])
def test_id_numbers_are_redacted(text: str, redacted: str) -> None:
    assert str(Redactor.build().redact(text)) == redacted


@pytest.mark.parametrize("text", [
    "The ID number is 12345", "passport no. 2026-04-01", "ID number: 12.03.1990", "release 2026-04-01",
    "My id is bob", "version 1.2.3-4", "Passport photos are due by Friday", "000-12-3456 is not a valid SSN",
])
def test_dates_short_numbers_and_invalid_shapes_stay(text: str) -> None:
    assert str(Redactor.build().redact(text)) == text
