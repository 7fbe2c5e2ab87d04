"""Faithfulness guard: citations must point into the week, stated counts must match the stats.

A report is flagged `needs_review` (never silently fixed) when it cites an entry id the week does
not have, or states a count (Chinese or English phrasing) that contradicts the deterministic stats.
A number quoted from the very entry a sentence cites ("北京协和医院新入组 1 例 [E5]") is the
source's own wording, not a weekly claim, and is not checked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from chronicle.weekly.model import WeekInput

CITATION_RE = re.compile(r"\s?[\[【]\s*E\d+(?:\s*[,，、;；]\s*E?\d+)*\s*[\]】]")
_ID_RE = re.compile(r"E?(\d+)")
_SEGMENT_RE = re.compile(r"[\n。；;！!？?]+|(?<=\.)\s+")

_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_EN_NUMBERS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
               "eight": 8, "nine": 9, "ten": 10}
_N = r"(\d+|[零一二两三四五六七八九十]{1,3})"
_EN_N = r"(\d+|zero|one|two|three|four|five|six|seven|eight|nine|ten)"
_ZU = r"(?:例|起|次|件|个|名|项)"
_WHO = r"(?:subjects?|patients?|participants?)"
_ENR = r"enrol{1,2}"  # enroled / enrolled, enrolment / enrollment  # Chinese counters used for events

# (stats key, pattern with one number group, or a fixed value for "no X" phrasings).
_ZH_CLAIMS: tuple[tuple[str, str], ...] = (
    ("enrolled_total", rf"(?:累计|总计|累积|共计)\s*(?:入组|纳入)?\s*[:：为达]?\s*{_N}\s*(?:人|例|名)"),
    ("enrolled", rf"(?<!累计)(?<!总计)(?<!累积)(?<!共计)入组(?:人数)?\s*(?:[:：为]\s*)?{_N}\s*(?:人|例|名)"),
    ("enrolled", rf"{_N}\s*(?:人|例|名)\s*(?:受试者)?\s*(?:新)?入组"),
    ("ae", rf"(?<![A-Za-z])(?:新增\s*)?AE\s*[:：]?\s*{_N}\s*{_ZU}"),
    ("ae", rf"{_N}\s*{_ZU}\s*(?:新增\s*)?(?<![A-Za-z])AE(?![A-Za-z])"),
    ("ae", rf"(?<!严重)不良事件(?:\s*[（(]AE[)）])?\s*[:：]?\s*{_N}\s*{_ZU}"),
    ("ae", rf"{_N}\s*{_ZU}\s*(?:新增\s*)?不良事件"),
    ("sae", rf"SAE\s*[:：]?\s*{_N}\s*{_ZU}"),
    ("sae", rf"{_N}\s*{_ZU}\s*(?:新增\s*)?SAE"),
    ("sae", rf"严重不良事件(?:\s*[（(]SAE[)）])?\s*[:：]?\s*{_N}\s*{_ZU}"),
    ("sae", rf"{_N}\s*{_ZU}\s*严重不良事件"),
    ("deviations", rf"(?:方案)?偏离\s*[:：]?\s*{_N}\s*(?:项|例|起|次|条|个)"),
    ("deviations", rf"{_N}\s*(?:项|例|起|次|条|个)\s*(?:主要|重大)?\s*(?:方案)?偏离"),
    ("decisions", rf"决策\s*[:：]?\s*{_N}\s*(?:项|条|个)"),
    ("decisions", rf"{_N}\s*(?:项|条|个)\s*(?:PI\s*)?(?:关键)?决策"),
    ("queries", rf"(?:Query|质疑)\s*[:：]?\s*{_N}\s*(?:条|个|项)"),
    ("entries", rf"(?:记录|流水账?|日志)\s*(?:共)?\s*{_N}\s*条"),
)
_ZH_ZERO: tuple[tuple[str, str], ...] = (
    ("sae", r"无(?:新增)?\s*(?:SAE|严重不良事件)"),
    ("ae", r"无(?:新增)?\s*(?:(?<![A-Za-z])AE(?![A-Za-z])|不良事件)"),
    ("deviations", r"无(?:新增)?(?:方案)?偏离"),
    ("enrolled", r"无(?:新)?入组|未入组"),
)
_EN_CLAIMS: tuple[tuple[str, str], ...] = (
    ("enrolled_total", rf"{_EN_N}\s+(?:{_WHO}\s+)?{_ENR}ed\s+in\s+total"),
    ("enrolled_total", rf"(?:total|cumulative(?:ly)?)\s+(?:{_ENR}ment|{_ENR}ed)\s*(?:[:=]|of|to|is)?\s*{_EN_N}\b"),
    ("enrolled", rf"{_EN_N}\s+(?:new\s+)?{_WHO}\s+(?:were\s+)?(?:{_ENR}ed|randomi[sz]ed)"),
    ("enrolled", rf"(?<!total )(?<!cumulative ){_ENR}(?:ed|ments?)\s*[:=]\s*{_EN_N}\b"),
    ("enrolled", rf"{_EN_N}\s+new\s+{_ENR}ments?"),
    ("ae", rf"{_EN_N}\s+(?:new\s+)?(?<![A-Za-z])AEs?\b"),
    ("ae", rf"(?<![A-Za-z])AEs?\s*[:=]\s*{_EN_N}\b"),
    ("ae", rf"{_EN_N}\s+(?:new\s+)?adverse\s+events?"),
    ("sae", rf"{_EN_N}\s+(?:new\s+)?SAEs?\b"),
    ("sae", rf"SAEs?\s*[:=]\s*{_EN_N}\b"),
    ("sae", rf"{_EN_N}\s+(?:new\s+)?serious\s+adverse\s+events?"),
    ("deviations", rf"{_EN_N}\s+(?:new\s+|major\s+)*(?:protocol\s+)?deviations?"),
    ("deviations", rf"deviations?\s*[:=]\s*{_EN_N}\b"),
    ("decisions", rf"{_EN_N}\s+(?:new\s+|key\s+)*(?:PI\s+)?decisions?"),
    ("queries", rf"{_EN_N}\s+(?:new\s+|open\s+)*quer(?:y|ies)\b"),
    # (not "AE: 3 entries (not expanded)": the offline report's count of one focus, not of the week)
    ("entries", rf"{_EN_N}\s+(?:log\s+)?entries(?!\s*\(not expanded\))"),
)
_EN_ZERO: tuple[tuple[str, str], ...] = (
    ("sae", r"\bno\s+(?:new\s+)?(?:SAEs?\b|serious\s+adverse)"),
    ("ae", r"\bno\s+(?:new\s+)?(?:(?<![A-Za-z])AEs?\b|adverse\s+events?)"),
    ("deviations", r"\bno\s+(?:new\s+)?(?:protocol\s+)?deviations?"),
    ("enrolled", r"\bno\s+(?:new\s+)?(?:enrol{1,2}ments?|subjects?\s+(?:were\s+)?enrol{1,2}ed)"),
)
_COMPILED = [(f, re.compile(p)) for f, p in _ZH_CLAIMS] + [(f, re.compile(p, re.I)) for f, p in _EN_CLAIMS]
# Every claim pattern holds a number (digits, a Chinese numeral, an English number word) or a "no X" word: a
# segment without any of them is skipped with this one scan instead of ~40.
_MAY_CLAIM = re.compile(r"[\d零一二两三四五六七八九十无未]|zero|one|two|three|four|five|six|seven|eight|nine|ten|no",
                        re.I)
_COMPILED_ZERO = [(f, re.compile(p)) for f, p in _ZH_ZERO] + [(f, re.compile(p, re.I)) for f, p in _EN_ZERO]


def cited_ids(text: str) -> list[str]:
    """Short ids cited in `text` (`[E3]`, `[E3, E7]`, `【E3】`), first occurrence order, no repeats."""
    out: list[str] = []
    for group in CITATION_RE.findall(text):
        for num in _ID_RE.findall(group):
            sid = f"E{int(num)}"
            if sid not in out:
                out.append(sid)
    return out


def strip_citations(text: str) -> str:
    """The report without its `[E#]` markers (what the chronicle shows)."""
    return CITATION_RE.sub("", text)


def parse_number(token: str) -> int:
    token = token.strip().lower()
    if token.isdigit():
        return int(token)
    if token in _EN_NUMBERS:
        return _EN_NUMBERS[token]
    # Chinese numerals up to 99: 三, 十二, 二十, 二十三.
    if "十" in token:
        tens, _, ones = token.partition("十")
        return (_ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (_ZH_DIGITS.get(ones, 0) if ones else 0)
    return _ZH_DIGITS.get(token, -1)


def _squash(text: str) -> str:
    return "".join(text.split()).lower()


def count_claims(text: str) -> list[dict[str, Any]]:
    """Every count the text states: {field, value, text, segment}; citations are kept in `segment`."""
    claims: list[dict[str, Any]] = []
    for segment in _SEGMENT_RE.split(text):
        bare = strip_citations(segment)
        if not _MAY_CLAIM.search(bare):
            continue
        seen: set[tuple[int, int]] = set()
        for fields, fixed in ((_COMPILED, None), (_COMPILED_ZERO, 0)):
            for field, pattern in fields:
                for match in pattern.finditer(bare):
                    if any(a < match.end() and match.start() < b for a, b in seen):
                        continue  # one phrase, one claim: "累计入组 15 人" is not also "入组 15 人"
                    seen.add(match.span())
                    value = fixed if fixed is not None else parse_number(match.group(1))
                    if value >= 0:
                        claims.append({"field": field, "value": value, "text": match.group(0).strip(),
                                       "segment": segment})
    return claims


def check_report(summary: str, week: WeekInput, *, llm_stats: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Review reasons for one report (empty list = nothing found)."""
    reasons: list[dict[str, Any]] = []
    known = week.citation_map
    unknown = [sid for sid in cited_ids(summary) if sid not in known]
    if unknown:
        reasons.append({"kind": "unknown_citation", "ids": unknown,
                        "detail": f"cites {', '.join(unknown)}; this week has E1..E{len(known)}"})
    contents = {e.short_id: _squash(e.content) for e in week.entries}
    flagged: set[tuple[str, int]] = set()
    for claim in count_claims(summary):
        actual = week.stats.get(claim["field"])
        if actual is None or claim["value"] == actual or (claim["field"], claim["value"]) in flagged:
            continue
        quoted = _squash(claim["text"])
        if any(quoted in contents.get(sid, "") for sid in cited_ids(claim["segment"])):
            continue
        flagged.add((claim["field"], claim["value"]))
        reasons.append({"kind": "count_mismatch", "field": claim["field"], "claimed": claim["value"],
                        "actual": actual, "text": claim["text"]})
    for field, value in (llm_stats or {}).items():
        if isinstance(value, int) and field in week.stats and week.stats[field] != value:
            reasons.append({"kind": "llm_stats_mismatch", "field": field, "claimed": value,
                            "actual": week.stats[field]})
    return reasons


def describe(reason: Mapping[str, Any]) -> str:
    """One human line per review reason (CLI, artifacts)."""
    kind = reason.get("kind")
    if kind == "count_mismatch":
        return f"“{reason['text']}” but {reason['field']} = {reason['actual']}"
    if kind == "llm_stats_mismatch":
        return f"LLM stats say {reason['field']} = {reason['claimed']}, counted {reason['actual']}"
    if kind == "over_length":
        return f"{reason['chars']} characters > limit {reason['limit']} after {reason['attempts']} shorten request(s)"
    return str(reason.get("detail") or kind)
