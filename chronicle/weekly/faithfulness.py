"""Faithfulness guard (v2): deterministic, offline checks of a weekly report against its week.

A report is flagged `needs_review` (never silently fixed) when:

- it cites an entry id the week does not have (`unknown_citation`);
- it states a count (Chinese or English phrasing) that contradicts the deterministic stats (`count_mismatch`);
  a number quoted from the very entry a sentence cites ("北京协和医院新入组 1 例 [E5]") is the source's own
  wording, not a weekly claim, and is not checked;
- a factual sentence cites nothing (`uncited`; headings and the stats line are not factual sentences);
- a sentence names a subject, site, person, date, code or quantity its cited entries do not contain
  (`unsupported_name`);
- a sentence asserts an AE/SAE/deviation the stats count as 0, or denies one they count (`invented_event`,
  `denied_event`, numbered or not: "发生 SAE", "no deviations");
- a sentence about an event cites only entries that are not about it (`citation_mismatch`: an SAE sentence
  citing an enrolment entry);
- an SAE, AE, deviation or enrolment of the week is covered by no sentence (`omitted_event`), or a blanket
  all-clear stands in a week with safety events (`denied_event`): `guard.coverage`.

Every reason carries the `sentence` it is about; `describe` makes it one human line. The sentence-level
machinery lives in `chronicle.weekly.guard`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from chronicle.weekly.guard import events, names
from chronicle.weekly.guard.coverage import coverage_reasons, reported_saes
from chronicle.weekly.guard.text import CITATION_RE, Sentence, canonical, cited_ids, sentences, squash, strip_citations
from chronicle.weekly.labels import EVENT_NOUNS, reason_label, stat_label
from chronicle.weekly.model import WeekEntry, WeekInput

__all__ = ["CITATION_RE", "check_report", "cited_ids", "count_claims", "describe", "parse_number", "strip_citations"]
_SEGMENT_RE = re.compile(r"[\n。；;！!？?]+|(?<=\.)\s+")

_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_EN_NUMBERS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
               "eight": 8, "nine": 9, "ten": 10}
# A number starts where its digits start: tried from inside a run of digits too, each claim pattern was quadratic
# in the run's length.
_N = r"((?<!\d)\d+|[零一二两三四五六七八九十]{1,3})"
_EN_N = r"((?<!\d)\d+|zero|one|two|three|four|five|six|seven|eight|nine|ten)"
_ZU = r"(?:例|起|次|件|个|名|项)"
_WHO = r"(?:subjects?|patients?|participants?)"
_ENR = r"enrol{1,2}"  # enroled / enrolled, enrolment / enrollment  # Chinese counters used for events

# (stats key, pattern with one number group, or a fixed value for "no X" phrasings).
_ZH_CLAIMS: tuple[tuple[str, str], ...] = (
    ("enrolled_total", rf"(?:累计|总计|累积|共计)\s*+(?:入组|纳入)?\s*+[:：为达]?\s*+{_N}\s*(?:人|例|名)"),
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
    ("messages", rf"消息\s*{_N}\s*条"),
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
    ("messages", rf"{_EN_N}\s+(?:chat\s+)?messages"),
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
# Each field's patterns need one of its words (lower case): a segment without them skips those patterns (the guard
# runs the count rules on every sentence, so this halves its cost).
_FIELD_WORDS: dict[str, tuple[str, ...]] = {
    "enrolled_total": ("累计", "总计", "累积", "共计", "total", "cumulative"),
    "enrolled": ("入组", "enrol", "randomi"),
    "ae": ("ae", "不良事件", "adverse"),
    "sae": ("sae", "严重不良事件", "serious"),
    "deviations": ("偏离", "deviation"),
    "decisions": ("决策", "decision"),
    "queries": ("query", "质疑", "quer"),
    "entries": ("记录", "流水", "日志", "entries"),
    "messages": ("消息", "messages"),
}


MAX_DIGITS = 18
"""No count has more digits; a longer number stands for "too many" (still a mismatch with any real count), and
is never converted (Python refuses to parse a number of over 4,300 digits)."""


def parse_number(token: str) -> int:
    token = token.strip().lower()
    if token.isdigit():
        return int(token) if len(token) <= MAX_DIGITS else 10 ** MAX_DIGITS
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
        # Characters already part of a claim (a mask, not a list of spans: a long correction stating hundreds of
        # counts made the overlap test quadratic).
        covered = bytearray(len(bare))
        low = bare.lower()
        present = {f for f, words in _FIELD_WORDS.items() if any(w in low for w in words)}
        for fields, fixed in ((_COMPILED, None), (_COMPILED_ZERO, 0)):
            for field, pattern in fields:
                if field not in present:
                    continue
                for match in pattern.finditer(bare):
                    start, end = match.span()
                    if any(covered[start:end]):
                        continue  # one phrase, one claim: "累计入组 15 人" is not also "入组 15 人"
                    covered[start:end] = b"\x01" * (end - start)
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
    claims = count_claims(summary)
    for claim in claims:
        actual = week.stats.get(claim["field"])
        if actual is None or claim["value"] == actual or (claim["field"], claim["value"]) in flagged:
            continue
        quoted = _squash(claim["text"])
        # A clause before "；" cites with the rest of its line ("新入组 1 例：XH…；… [E3, E9]").
        line = next((x for x in summary.splitlines() if claim["segment"] in x), claim["segment"])
        if any(quoted in contents.get(sid, "") for sid in cited_ids(claim["segment"]) or cited_ids(line)):
            continue
        flagged.add((claim["field"], claim["value"]))
        reasons.append({"kind": "count_mismatch", "field": claim["field"], "claimed": claim["value"],
                        "actual": actual, "text": claim["text"]})
    reported = reported_saes(week)
    reasons += sentence_reasons(summary, week, claims=claims, reported=reported)
    reasons += coverage_reasons(sentences(summary), week, claims, reported)
    for field, value in (llm_stats or {}).items():
        if isinstance(value, int) and field in week.stats and week.stats[field] != value:
            reasons.append({"kind": "llm_stats_mismatch", "field": field, "claimed": value,
                            "actual": week.stats[field]})
    return reasons


_OTHER_TYPE = re.compile(r"(?<![a-z_])([a-z][a-z_]+)\s+(\d+)(?!\d)")
_CHECKED_EVENTS = ("sae", "ae", "deviations")  # asserted/denied against the stats; the rest only need support


def _short(text: str, limit: int = 120) -> str:
    flat = " ".join(strip_citations(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _entry_key(entry: WeekEntry) -> str:
    """An entry as names are looked up in it: content, actor and (when the content has no date) its log date."""
    key = squash(f"{entry.content} {entry.actor or ''}")
    if "@" in key or entry.when[:5].count("-") != 1:
        return key  # the content's own dates say when it happened; the log time is when it was written down
    month, day = entry.when[:5].split("-")
    return key + f"@{int(month)}-{int(day)}|"


class _Parsed(NamedTuple):
    """A report sentence as the sentence checks read it."""

    s: Sentence
    claims: list[dict[str, Any]]  # the count claims it states
    canon: str  # its canonical text without those claims
    found: list[names.Name]  # the names in that text
    whole: str  # its canonical text, claims included


def _parse(summary: str, all_claims: list[dict[str, Any]]) -> list[_Parsed]:
    parsed = []
    for s in sentences(summary):
        claims = [c for c in all_claims if c["text"] in s.bare]
        rest = s.bare
        for claim in claims:
            rest = rest.replace(claim["text"], " ")
        canon = canonical(rest)
        parsed.append(_Parsed(s, claims, canon, names.names(canon), canonical(s.bare)))
    return parsed


def _stats_lines(parsed: list[_Parsed]) -> set[str]:
    """The stats line: a line stating two or more counts and naming nothing needs no citation."""
    stats_lines = {s.line for s, claims, *_ in parsed if claims}
    return {line for line in stats_lines
            if sum(len(c) for s, c, *_ in parsed if s.line == line) >= 2
            and not any(n for s, _, _, n, _ in parsed if s.line == line)}


def sentence_reasons(summary: str, week: WeekInput, *, claims: list[dict[str, Any]] | None = None,
                     reported: list[WeekEntry] | None = None) -> list[dict[str, Any]]:
    """The sentence-level checks of guard v2 (citations present, names in the cited entries, events true).

    `claims`: the report's `count_claims`, when the caller has them (each sentence takes those it contains);
    `reported`: the week's `reported_saes`, likewise.
    """
    all_claims = count_claims(summary) if claims is None else claims
    by_id = {e.short_id: e for e in week.entries}
    keys: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    parsed = _parse(summary, all_claims)
    stats_lines = _stats_lines(parsed)
    by_type = week.stats.get("by_type") or {}
    reported_ids = {e.short_id for e in (reported_saes(week) if reported is None else reported)}
    for s, claims, canon, found, whole in parsed:
        sentence = _short(s.bare)
        if s.line in stats_lines:  # "另有 visit 5 条" / "also visit 5": the week's other entry types
            for type_, number in _OTHER_TYPE.findall(s.bare):
                claimed = parse_number(number)
                if type_ in by_type and claimed != by_type[type_]:
                    out.append({"kind": "count_mismatch", "field": type_, "claimed": claimed,
                                "actual": by_type[type_], "text": f"{type_} {number}", "sentence": sentence})
        # Events on the whole sentence ("无 AE/SAE": the negation of the AE count covers the SAE too); the fields
        # a count claim states are the count rules' business.
        mentioned = events.mentions(whole, skip={c["field"] for c in claims})
        out += _event_reasons(mentioned, week.stats, sentence, reported_ids, set(s.cites))
        cites = [sid for sid in s.cites if sid in by_id]
        if not s.cites:
            if (claims and not found) or s.line in stats_lines:
                continue  # a count, checked against the stats above
            out.append({"kind": "uncited", "sentence": sentence, "detail": "states a fact but cites no entry"})
            continue
        if not cites:
            continue  # only unknown ids: reported once for the report
        for sid in cites:
            if sid not in keys:
                keys[sid] = _entry_key(by_id[sid])
        cited = "".join(keys[sid] for sid in cites)
        if _squash(canon) in cited:
            continue  # the cited entry's own words
        out += _support_reasons(sentence, found, mentioned, {sid: by_id[sid] for sid in cites}, cited, keys)
    return out


def _event_reasons(mentioned: dict[str, bool], stats: Mapping[str, Any], sentence: str, reported: set[str],
                   cites: set[str]) -> list[dict[str, Any]]:
    """An AE/SAE/deviation the sentence asserts that the stats count as 0, or denies that they count. `reported`:
    entries of another type that report an SAE — a sentence citing one may assert it, none may deny it."""
    out: list[dict[str, Any]] = []
    for key, asserted in mentioned.items():
        if key not in _CHECKED_EVENTS:
            continue
        if key == "sae" and reported and not stats.get(key):
            if not asserted:
                out.append({"kind": "denied_event", "field": key, "sentence": sentence,
                            "detail": f"denies an SAE but {', '.join(sorted(reported))} reports one"})
            elif not cites & reported:
                out.append({"kind": "invented_event", "field": key, "sentence": sentence,
                            "detail": f"asserts an SAE but cites none of {', '.join(sorted(reported))}, which report "
                                      "one (the week counts SAE = 0)"})
            continue
        if asserted and not stats.get(key):
            out.append({"kind": "invented_event", "field": key, "sentence": sentence,
                        "detail": f"asserts {EVENT_NOUNS[key]} but the week counts {stat_label(key, 'en')} = 0"})
        elif not asserted and stats.get(key):
            out.append({"kind": "denied_event", "field": key, "sentence": sentence,
                        "detail": f"denies {EVENT_NOUNS[key]} but the week counts "
                                  f"{stat_label(key, 'en')} = {stats[key]}"})
    return out


def _support_reasons(sentence: str, found: list[names.Name], mentioned: dict[str, bool],
                     entries: dict[str, WeekEntry], cited: str, keys: dict[str, str]) -> list[dict[str, Any]]:
    """A cited sentence's names missing from its cited entries (`cited`: their keys joined), and the events it
    asserts that none of them is about."""
    out: list[dict[str, Any]] = []
    cites = list(entries)
    missing = [n.text for n in found if not names.supported(n, cited)]
    if missing:
        out.append({"kind": "unsupported_name", "sentence": sentence, "names": missing, "ids": cites,
                    "detail": f"names {', '.join(missing)} not in {', '.join(cites)}"})
    for key, asserted in mentioned.items():
        # (the entry's words with their spaces too: "8852AE Bluetooth" squashed no longer reads as an AE)
        if asserted and not any(events.supports(key, entry.type, keys[sid])
                                or events.supports(key, entry.type, canonical(entry.content))
                                for sid, entry in entries.items()):
            out.append({"kind": "citation_mismatch", "field": key, "sentence": sentence, "ids": cites,
                        "detail": f"about {EVENT_NOUNS[key]} but cites {', '.join(cites)} "
                                  f"({', '.join(sorted({entry.type for entry in entries.values()}))})"})
    return out


def describe(reason: Mapping[str, Any]) -> str:
    """One human line per review reason (CLI, artifacts): which sentence, and why."""
    kind = reason.get("kind")
    if kind == "count_mismatch":
        return f"“{reason['text']}” but the log counts {stat_label(reason['field'], 'en')} = {reason['actual']}"
    if reason.get("sentence"):
        return f"{reason_label(str(kind))}: “{reason['sentence']}” {reason.get('detail') or ''}".rstrip()
    if kind == "llm_stats_mismatch":
        return (f"LLM stats say {stat_label(reason['field'], 'en')} = {reason['claimed']}, the log counts "
                f"{reason['actual']}")
    if kind == "over_length":
        return f"{reason['chars']} characters > limit {reason['limit']} after {reason['attempts']} shorten request(s)"
    return f"{reason_label(str(kind))}: {reason['detail']}" if reason.get("detail") else reason_label(str(kind))
