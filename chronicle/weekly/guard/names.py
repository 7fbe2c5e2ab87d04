"""What a sentence names, and whether the entries it cites contain it.

Names are looked up in the squashed (normalised, whitespace-free) text of the cited entries. Kinds:

- `code`: a token with a digit and a letter or an inner separator — subject ids (XH201-01-003), visits (C2D1),
  lot and query numbers (LOT-24A7, Q-0001), versions (1.2-3), CVE ids;
- `quantity`: a number with a unit (3 级, grade 3, 4 天, 240 mg, 5 hours);
- `date`: any date form, compared as `@M-D` (the entry's own timestamp counts as its date);
- `site`: a Chinese name ending in 医院 (supported if a >= 4-character tail of it is cited: "本周北京协和医院"
  is 北京协和医院); English site names are not recognised (only as codes when they hold a digit);
- `person`: a role-prefixed or titled name (CRC-王敏, PI 李建国, 王敏医生, Dr. Smith).

A plain number without a unit is not a name (counts are the count rules' business).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RUN = re.compile(r"[a-z0-9._+:~/-]+")
_ALNUM = re.compile(r"[a-z0-9]")
_NOT_DIGIT = re.compile(r"[a-z.+:~/-]")
_LABELLED = re.compile(r"^(?:[a-z]+:)+(?=[a-z0-9])")
_ZH_UNITS = r"(?:级|天|周|小时|分钟|岁|个月|年|次/日|次/天|毫克|毫升|公斤)"
_EN_UNITS = r"(?:mg/m2|mg/m²|mg/kg|mg|ml|mmhg|kg|g|%|days?|hours?|weeks?|months?|years?)"
_QUANTITY = re.compile(rf"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:{_EN_UNITS}(?![a-z])|{_ZH_UNITS})")
_DATE = re.compile(r"@\d{1,2}-\d{1,2}\|")
_SITE_ZH = re.compile(r"[\u4e00-\u9fff]{2,20}医院")
# (a role before a noun is a label, not a person: "PI 决策：", "CRC 团队")
_PERSON = re.compile(r"(?:(?<![a-z])(?:crc|cra|pi|dm|pm|cta|sc)\s*[-·:：]?\s*|研究者|研究护士)"
                     r"(?!决策|决定|签字|确认|团队|审核|同意|批准|判断|意见|会议|评估|要求|核查|随访)([\u4e00-\u9fff]{2,3})"
                     r"|([\u4e00-\u9fff]{2,3})(?=医生|主任|教授|护士长)"
                     r"|\b(?:dr|prof|mr|ms|mrs)\.?\s+([a-z][a-z'-]+)")
_GENERIC_SITE = ("各", "该", "本", "每", "两", "多", "其他", "这家", "所在", "附属")


@dataclass(frozen=True)
class Name:
    kind: str  # code | quantity | date | site | person
    text: str  # as matched in the canonical sentence
    key: str  # what must appear in the cited text (squashed)


def names(canonical_text: str) -> list[Name]:
    """Names in a sentence already passed through `text.canonical` (lower case, spaces kept)."""
    out: list[Name] = []
    for code in _codes(canonical_text):
        # "AE：XH305-01-004" (a full-width colon, folded to ":") is a label and a subject id, not one code.
        token = _LABELLED.sub("", code).strip("._+:~/-")
        if len(token) >= 2:
            out.append(Name("code", token, token))
    for m in _QUANTITY.finditer(canonical_text):
        out.append(Name("quantity", m.group(0), "".join(m.group(0).split())))
    out += [Name("date", m.group(0), m.group(0)) for m in _DATE.finditer(canonical_text)]
    for m in _SITE_ZH.finditer(canonical_text):
        run = m.group(0)
        if len(run) >= 4 and not any(run.startswith(g) and len(run) <= len(g) + 2 for g in _GENERIC_SITE):
            out.append(Name("site", run, run))
    for m in _PERSON.finditer(canonical_text):
        who = m.group(1) or m.group(2) or m.group(3)
        out.append(Name("person", who, who))
    return out


def _codes(text: str) -> list[str]:
    """Each run of code characters, from its first letter or digit to its last, when it holds a digit and a letter
    or a separator. Found run by run: a pattern with lookaheads tried at every separator of a long run of them
    (a line of dots) scanned the rest of the run each time, quadratic in its length."""
    codes = []
    for run in _RUN.finditer(text):
        start = _ALNUM.search(run.group(0))
        if start is None:
            continue
        body = run.group(0)[start.start():]
        code = body.rstrip("._+:~/-")
        if len(code) >= 2 and any(c.isdigit() for c in body) and _NOT_DIGIT.search(body):
            codes.append(code)
    return codes


def supported(name: Name, cited: str) -> bool:
    """Whether the squashed cited text contains the name (sites by a >= 4-character tail, people by their
    first two characters: a greedy match may have taken the next word too)."""
    if name.kind == "site" and name.key.endswith("医院"):
        return any(name.key[-n:] in cited for n in range(4, len(name.key) + 1))
    if name.kind == "person" and re_cjk(name.key):
        return name.key[:2] in cited
    return name.key in cited


def re_cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)

