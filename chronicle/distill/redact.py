"""Secret and personal-data redaction (pure): applied to note text before it reaches the LLM or any store.

Each match becomes `[REDACTED:<kind>]`; callers get per-kind counts (never the matched text) so a run
can report *how much* it hid without repeating it. Patterns run in a fixed order: multi-line PEM keys and
structured tokens first, so a later, looser pattern (e-mail, phone) never sees half of a key, and a value
already replaced is never counted twice.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

_A = "A-Za-z0-9"  # ASCII only: `\w` would also match CJK text glued to a token
_NOT_DONE = r"(?!\[REDACTED:)"
# The value of a `name=value` pair: a quoted string, or a bare run up to whitespace / quotes / CJK punctuation.
_PAIR_VALUE = rf"""(?:(?P<q>["'])(?P<qv>{_NOT_DONE}[^"'\n]+)|{_NOT_DONE}[^\s"'`<>，。；、]+)"""
_PAIR = rf"""(?P<keep>(?<![{_A}])(?:[{_A}_.-]*[_.-])?(?:{{names}})["']?[ \t]*[:=：][ \t]*){_PAIR_VALUE}"""

# (kind, pattern, flags); a `keep` group stays in the text, a `q` group (opening quote) too.
_PATTERNS: list[tuple[str, str, int]] = [
    # A truncated key (no END line) is redacted to the end of the text rather than leaked.
    ("private_key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)", re.S),
    ("jwt", rf"(?<![{_A}_-])eyJ[{_A}_-]{{8,}}\.[{_A}_-]{{8,}}\.[{_A}_-]{{8,}}", 0),
    ("bearer_token", rf"(?P<keep>\bBearer\s+){_NOT_DONE}[{_A}._~+/=-]{{8,}}", re.I),
    ("api_key", rf"(?<![{_A}_-])(?:sk-(?:proj-|ant-)?[{_A}_-]{{16,}}|gh[pousr]_[{_A}]{{20,}}|github_pat_[{_A}_]{{20,}}"
                rf"|(?:AKIA|ASIA)[0-9A-Z]{{16}}|xox[abposr]-[{_A}-]{{10,}}|AIza[{_A}_-]{{30,}})", 0),
    ("password", _PAIR.format(names="password|passwd|pwd|密码|口令"), re.I),
    ("secret", _PAIR.format(names=r"secret|token|api[_-]?key|access[_-]?key|private[_-]?key|[A-Za-z0-9]*_key|密钥"),
     re.I),
    ("email", rf"(?<![{_A}._%+-])[{_A}._%+-]+@[{_A}-]+(?:\.[{_A}-]+)*\.[A-Za-z]{{2,}}", 0),
    # 6-digit region, birth date 19xx/20xx, 3-digit sequence, check digit (0-9 or X). The checksum is not
    # required to match: a mistyped ID number is still someone's ID number.
    ("cn_id", r"(?<!\d)\d{6}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![\dA-Za-z])", 0),
    # CN mobile, optionally +86, optionally spaced 3-4-4.
    ("phone", r"(?<![\d+])(?:\+?86[ -]?)?1[3-9]\d(?:[ -]?\d{4}){2}(?!\d)", 0),
    # International E.164-ish: a leading + and 8-15 digits in groups (the digit count is checked below).
    ("phone", r"(?<![\w+])\+[1-9]\d{0,3}(?:[ -]?\(?\d{1,4}\)?){2,5}(?!\d)", 0),
]


def _phone_digits_ok(match: re.Match[str]) -> bool:
    return 8 <= sum(c.isdigit() for c in match.group(0)) <= 15


_CHECKS: dict[str, Callable[[re.Match[str]], bool]] = {"phone": _phone_digits_ok}


@dataclass(frozen=True)
class Redactor:
    """Compiled built-in patterns plus the user's `settings.redact_extra_patterns` (kind `custom`)."""

    patterns: tuple[tuple[str, re.Pattern[str]], ...]

    @classmethod
    def build(cls, extra: Iterable[str] = ()) -> Redactor:
        compiled = [(kind, re.compile(pattern, flags)) for kind, pattern, flags in _PATTERNS]
        compiled += [("custom", re.compile(p)) for p in extra]
        return cls(tuple(compiled))

    def redact(self, text: str, counts: Counter[str] | None = None) -> str:
        """`text` with every match replaced by `[REDACTED:kind]`; `counts` (if given) gets +1 per match."""
        for kind, pattern in self.patterns:
            text = pattern.sub(_replacer(kind, counts), text)
        return text

    def redact_all(self, texts: Iterable[str], counts: Counter[str] | None = None) -> list[str]:
        return [self.redact(t, counts) for t in texts]


def _replacer(kind: str, counts: Counter[str] | None) -> Callable[[re.Match[str]], str]:
    check = _CHECKS.get(kind)

    def sub(match: re.Match[str]) -> str:
        if check is not None and not check(match):
            return match.group(0)
        if counts is not None:
            counts[kind] += 1
        groups = match.re.groupindex
        keep = (match.group("keep") or "") if "keep" in groups else ""
        quote = (match.group("q") or "") if "q" in groups else ""
        return f"{keep}{quote}[REDACTED:{kind}]"

    return sub
