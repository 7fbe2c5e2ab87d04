"""Validators for the redactor's candidate matches (pure): checksums by well-kept libraries, entropy, look.

A hand-written pattern for a bank card or an IBAN either misses a grouping or eats order numbers; a
checksum decides instead. `python-stdnum` validates Luhn (bank cards), IBAN (mod 97) and Chinese resident
ids (GB 11643); `phonenumbers` (Google's libphonenumber) knows which digit strings are real numbers of a
region in any national format, so a date or a lot number that happens to have 11 digits is not a phone.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

import phonenumbers
from stdnum import iban, luhn
from stdnum.cn import ric
from stdnum.us import ssn

_SEPARATORS = re.compile(r"[ \t.\-()]")

# Issuer prefixes of payment cards (Visa 4, Mastercard 51-55 and 2221-2720, Amex 34/37, UnionPay 62 (16-19
# digits), Discover 6011/64/65, JCB 35, Diners 36/38, Maestro 50/56-58/67): a Luhn-valid run of digits
# without one is more likely an order or tracking number (one in ten of those passes Luhn by chance).
_CARD_PREFIX = re.compile(r"4|5[0-8]|2[2-7]|3[4-8]|6[0-9]")


def card_number(text: str) -> bool:
    digits = re.sub(r"[ \-]", "", text)
    return (digits.isdigit() and 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) is not None
            and luhn.is_valid(digits))


def iban_number(text: str) -> bool:
    return iban.is_valid(text)


def us_ssn(text: str) -> bool:
    """A US social security number written 3-2-4 (area not 000/666/9xx, group and serial not zero; stdnum)."""
    return ssn.is_valid(text)


def cn_resident_id(text: str) -> bool:
    return ric.is_valid(re.sub(r"[ \-]", "", text).upper())


# A company's hotline (400/800 numbers, premium and shared-cost lines) is published, not personal data.
_BUSINESS = {phonenumbers.PhoneNumberType.TOLL_FREE, phonenumbers.PhoneNumberType.SHARED_COST,
             phonenumbers.PhoneNumberType.PREMIUM_RATE, phonenumbers.PhoneNumberType.UAN}


@lru_cache(maxsize=4096)
def phone_number(text: str, region: str = "CN") -> bool:
    """A valid number of `region` written nationally, or of any country with its `+` code."""
    digits = sum(c.isdigit() for c in text)
    if not 7 <= digits <= 15 or _SEPARATORS.sub("", text.lstrip("+")).isdigit() is False:
        return False
    try:
        number = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return False
    return phonenumbers.is_valid_number(number) and phonenumbers.number_type(number) not in _BUSINESS


def entropy(text: str) -> float:
    """Shannon entropy in bits per character (detect-secrets' measure)."""
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values()) if n else 0.0


_HEX = re.compile(r"[0-9a-fA-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_VERSIONISH = re.compile(r"v?\d+(?:[._-]\d+)+[A-Za-z0-9.-]*")


def random_looking(value: str, *, minimum: int = 8) -> bool:
    """A token a person did not type as a word: long enough, of several character classes, with the entropy
    of a generated string; SHAs, UUIDs, versions and dates are not (they are hex, or digits and dots)."""
    if len(value) < minimum or _HEX.fullmatch(value) or _UUID.fullmatch(value) or _VERSIONISH.fullmatch(value):
        return False
    classes = sum((any(c.islower() for c in value), any(c.isupper() for c in value),
                   any(c.isdigit() for c in value), any(not c.isalnum() for c in value)))
    if classes < 2 or (not any(c.isdigit() for c in value) and classes < 3):
        return False
    return entropy(value) >= min(3.0, math.log2(len(value)) - 0.3)


def password_looking(value: str) -> bool:
    """A value after "password is": a digit, a symbol or an inner capital ("required", "stored" are words)."""
    if len(value) < 4:
        return False
    return (any(c.isdigit() for c in value) or any(c in "!@#$%^&*_+=?~" for c in value)
            or sum(c.isupper() for c in value[1:]) >= 1)


_DATE_OR_VERSION = re.compile(r"v?\d+(?:[./\-]\d+)+(?:[-+][A-Za-z0-9.]+)?|\d{4}-W\d{2}|\d{1,2}:\d{2}(?::\d{2})?")


def looks_like_date_or_version(value: str) -> bool:
    """`2026-03-12`, `v1.4.2`, `3.11`, `2026-W10`, `10:30`: never a secret's value."""
    return _DATE_OR_VERSION.fullmatch(value) is not None
