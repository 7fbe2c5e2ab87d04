"""Sentences of a report with the entries they cite, and the normalisation both sides are compared in.

A report and its entries are compared after the same normalisation (NFKC: full-width digits and letters
become ASCII; Chinese numerals before a unit become digits; dates become `@M-D|`; whitespace dropped;
lower case), so "３ 级", "三级" and "3级" are one name, and "01月27日", "1月27日" and "01-27" one date.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

CITATION_RE = re.compile(r"\s?[\[【]\s*E\d+(?:\s*[,，、;；]\s*E?\d+)*\s*[\]】]")
_ID_RE = re.compile(r"E?(\d+)")
_LEADING_CITES = re.compile(r"^(?:\s*[\[【]\s*E\d+(?:\s*[,，、;；]\s*E?\d+)*\s*[\]】])+")
# Sentence ends: Chinese/ASCII full stops, semicolons, ! and ?; an ASCII "." only before a space and a capital,
# a digit or a citation (not "Dr. Smith", "e.g. this", nor inside "1.2-3").
_SPLIT = re.compile(r"(?<=[。；;！？!?])|(?<![A-Z][a-z])(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)(?<=\.)\s+(?=[A-Z0-9\[【(“\"])")
_HEADING = re.compile(r"^\s*(?:#{1,6}\s|\*\*[^*]+\*\*\s*[:：]?\s*$|[^\[【。.!?！？]{1,30}[:：]\s*$)")
_BULLET = re.compile(r"^\s*(?:[-*+•]\s+|\d{1,2}[.)、]\s+)")
_LABEL = re.compile(r"^\*\*[^*]{1,30}\*\*\s*[:：]?\s*")
_ZH_NUM = {"〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_DIGITS = "零一二两三四五六七八九十百"
_ZH_RUN = re.compile(rf"(?<![{_ZH_DIGITS}])([{_ZH_DIGITS}]{{1,4}})(?=[级天周次例人名项条个小时月日年号岁])")
_ZH_YEAR = re.compile(r"([零〇一二三四五六七八九]{4})年")
_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                        "dec"), start=1)}
_MON = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DATES = (
    re.compile(r"(?:\d{4}\s*年\s*)?(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"),
    re.compile(r"(?<![\w.@/-])(?:\d{4}[-/])?(\d{1,2})[-/](\d{1,2})(?![\w./-])"),
)
_EN_DATES = (re.compile(rf"\b{_MON}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s*\d{{4}})?", re.I),
             re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MON}(?:,?\s*\d{{4}})?", re.I))
_SPACE = re.compile(r"\s+")
_GRADE = re.compile(r"\bgrade[\s-]*(\d)\b", re.I)  # "grade 3", "Grade-3" and "3 级" are one name
# What the offline engine writes for items it left out: a pointer, not a statement about the week.
_REMAINDER = re.compile(r"(?:等\s*\d+\s*条|and \d+ more|\d+\s*条\s*[（(]未展开[)）]|\d+ entries \(not expanded\))"
                        r"[。；;.]?", re.I)


@dataclass(frozen=True)
class Sentence:
    """One sentence of a report: `text` as written (citations kept), `bare` without them, `cites` its ids."""

    text: str
    bare: str
    cites: tuple[str, ...]
    line: int


def cited_ids(text: str) -> list[str]:
    """Short ids cited in `text` (`[E3]`, `[E3, E7]`, `【E3】`), first occurrence order, no repeats."""
    out: list[str] = []
    for group in CITATION_RE.findall(text):
        for num in _ID_RE.findall(group):
            sid = f"E{num.lstrip('0') or '0'}"  # E03 is E3 (never int(): an id of 5,000 digits)
            if sid not in out:
                out.append(sid)
    return out


def strip_citations(text: str) -> str:
    """The report without its `[E#]` markers (what the chronicle shows)."""
    return CITATION_RE.sub("", text)


def zh_number(token: str) -> int:
    """A Chinese numeral up to 999 (三, 十二, 二十三, 一百零五), -1 if it is not one."""
    total, current = 0, 0
    for ch in token:
        if ch in _ZH_NUM:
            current = _ZH_NUM[ch]
        elif ch == "十":
            total += (current or 1) * 10
            current = 0
        elif ch == "百":
            total += (current or 1) * 100
            current = 0
        else:
            return -1
    return total + current


def _date(month: str, day: str) -> str:
    m, d = int(month), int(day)
    # The closing "|" keeps a date apart from a time squashed onto it ("01月27日 10:00" -> "@1-27|10:00").
    return f"@{m}-{d}|" if 1 <= m <= 12 and 1 <= d <= 31 else f"{month}-{day}"


def _en_date(match: re.Match[str]) -> str:
    a, b = match.group(1), match.group(2)
    month, day = (a, b) if not a.isdigit() else (b, a)
    return _date(str(_MONTHS[month[:3].lower()]), day)


def canonical(text: str) -> str:
    """NFKC, Chinese numerals before units as digits, dates as `@M-D|`, grades as `N级`, lower case (spaces kept)."""
    text = unicodedata.normalize("NFKC", text)
    text = _GRADE.sub(r"\1级", text)
    text = _ZH_YEAR.sub(lambda m: "".join(str(_ZH_NUM.get(c, 0)) for c in m.group(1)) + "年", text)
    text = _ZH_RUN.sub(lambda m: str(zh_number(m.group(1))) if zh_number(m.group(1)) >= 0 else m.group(1), text)
    for pattern in _DATES:
        text = pattern.sub(lambda m: _date(m.group(1), m.group(2)), text)
    for pattern in _EN_DATES:
        text = pattern.sub(_en_date, text)
    return text.lower()


def squash(text: str) -> str:
    """`canonical` without any whitespace: the form names are looked up in."""
    return _SPACE.sub("", canonical(text))


def sentences(report: str) -> list[Sentence]:
    """The report's sentences, headings left out; citations written after a sentence's full stop
    ("……住院。[E5]") belong to that sentence."""
    out: list[Sentence] = []
    for number, raw in enumerate(report.splitlines()):
        line = raw.strip()
        if not line or _HEADING.match(strip_citations(line)):
            continue
        line = _LABEL.sub("", _BULLET.sub("", line))
        for piece in _SPLIT.split(line):
            lead = _LEADING_CITES.match(piece)
            if lead and out and out[-1].line == number:
                prev = out[-1]
                text = prev.text + lead.group(0)
                out[-1] = Sentence(text, prev.bare, tuple(cited_ids(text)), number)
                piece = piece[lead.end():]
            bare = strip_citations(piece).strip()
            if bare.strip("。；;，,.!?！？:：、 -*") and not _REMAINDER.fullmatch(bare):
                out.append(Sentence(piece.strip(), bare, tuple(cited_ids(piece)), number))
    return _joined_clauses(out)


_JOINED = ("；", ";", "?", "？", "!", "！")


def _joined_clauses(found: list[Sentence]) -> list[Sentence]:
    """A clause ended by "；" (or a "?" inside a quoted URL) and cited nowhere shares the citations of the clause
    after it on its line ("A；B。[E3]" is one sentence citing E3, the way people write): it is not uncited."""
    out = list(found)
    for i in range(len(out) - 2, -1, -1):
        here, after = out[i], out[i + 1]
        if not here.cites and after.cites and here.line == after.line and here.bare.rstrip().endswith(_JOINED):
            out[i] = Sentence(here.text, here.bare, after.cites, here.line)
    return out
