"""Offline `chronicle ask`: rank the chronicle's weeks by the question's terms (no model at all).

Chinese has no spaces, so CJK runs are cut into overlapping bigrams (“受试者” → 受试, 试者), the
usual trick of Chinese full-text search; Latin words and ids are kept whole. Terms are weighted by
inverse week frequency, so a term in every week (“本周”) counts for nothing.

Negation: a clause that says something did not happen (“无 AE/SAE”, “未发生 SAE”, “no SAEs”, “SAE 0 例”)
is not about that thing, so it is cut out of the text before matching. A question about counted events
(“哪几周发生了 SAE？”) is answered from the weeks' stats, not from the prose (`stats_question`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from chronicle.weekly.tokens import is_cjk

# "SAE 0 例" / "0 SAEs": a week saying it had none of something is not about that thing.
# (A word from its first letter only: tried from every letter of a long word, it was quadratic.)
_ZERO_CLAUSE = re.compile(r"(?<![A-Za-z\u4e00-\u9fff])[A-Za-z\u4e00-\u9fff]+\s*0\s*(?:例|项|条|人|个)|\b0\s+[A-Za-z]+")
# A negation cue and its scope: up to the next clause boundary. "无法" (cannot) is not a negation of a thing.
_NEGATED = re.compile(
    r"(?:无(?!法|误|异常以外)|没有|没发生|未发生|未出现|未见|未报告?|未有|尚无|暂无|否认|不存在"
    r"|(?<![A-Za-z])(?:no|none|without|not|never|zero|nil)(?![A-Za-z]))[^，,。；;！!？?\n]*", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-_.]*[A-Za-z0-9]|[A-Za-z0-9]")
# Question words carry no topic; everything else is left to the IDF weighting.
_STOP = frozenset({"哪些", "什么", "多少", "怎么", "是否", "有没", "没有", "哪周", "哪个", "为什", "么时",
                   "什么时候", "the", "what", "which", "when", "how", "many", "did", "was", "were", "any", "is",
                   "are", "of", "in", "to", "and", "or", "a", "an", "week", "weeks"})


def terms(text: str) -> list[str]:
    """Distinct search terms: CJK bigrams (a lone CJK character as itself) and lower-cased words."""
    out: list[str] = []
    run = ""
    for ch in text + " ":
        if is_cjk(ch) and ch.isalpha():
            run += ch
            continue
        if run:
            out.extend([run] if len(run) == 1 else [run[i: i + 2] for i in range(len(run) - 1)])
            run = ""
    out.extend(w.lower() for w in _WORD.findall(text))
    return [t for t in dict.fromkeys(out) if t not in _STOP]


def affirmed(text: str) -> str:
    """`text` without its negated clauses ("无 AE/SAE", "SAE 0 例", "no SAEs"): what it says did happen."""
    return _NEGATED.sub(" ", _ZERO_CLAUSE.sub(" ", text))


def rank_weeks(question: str, weeks: Sequence[tuple[int, str]], limit: int = 8) -> list[tuple[int, float, list[str]]]:
    """(week_number, score, matched terms) of the best-matching weeks, best first."""
    wanted = terms(question)
    if not wanted or not weeks:
        return []
    lowered = [(w, affirmed(text).lower()) for w, text in weeks]
    df = {t: sum(1 for _, text in lowered if t in text) for t in wanted}
    n = len(weeks)
    idf = {t: math.log((n + 1) / (df[t] + 0.5)) for t in wanted if df[t]}
    scored = []
    for week, text in lowered:
        matched = [t for t in idf if t in text]
        score = sum(idf[t] for t in matched)
        if score > 0:
            scored.append((week, round(score, 3), matched))
    scored.sort(key=lambda s: (-s[1], -s[0]))
    return scored[:limit]


# --- questions about counted events: answered from the stats --------------------------------------------------------
# (stats field, pattern) in the order they are tried: SAE before AE, since "SAE" contains "AE".
_EVENTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("sae", re.compile(r"(?<![A-Za-z])SAEs?(?![A-Za-z])|严重不良事件|serious adverse", re.IGNORECASE)),
    ("ae", re.compile(r"(?<![A-Za-z])AEs?(?![A-Za-z])|不良事件|adverse event", re.IGNORECASE)),
    ("enrolled", re.compile(r"入组|enrol", re.IGNORECASE)),
    ("deviations", re.compile(r"偏离|deviation", re.IGNORECASE)),
    ("queries", re.compile(r"(?<![A-Za-z])quer(?:y|ies)(?![A-Za-z])|质疑", re.IGNORECASE)),
    ("decisions", re.compile(r"决策|决定|decision", re.IGNORECASE)),
)
# "Which weeks / when / how many": the question asks for weeks or counts, not for a passage of text.
_ASKS_WHEN = re.compile(r"哪|几周|什么时候|何时|多少|几例|几次|几个|which|when|what weeks|how many|list",
                        re.IGNORECASE)


def stats_question(question: str) -> str | None:
    """The stats field a question about counted events asks for ("哪几周发生了 SAE？" -> "sae"), or None
    when the question is not about when/how often a counted event happened."""
    if not _ASKS_WHEN.search(question):
        return None
    for field, pattern in _EVENTS:
        if pattern.search(question):
            return field
    return None


def weeks_with(field: str, stats: Sequence[tuple[int, Mapping[str, Any]]]) -> list[tuple[int, int]]:
    """(week_number, count) of the weeks whose stats count at least one `field`, oldest first."""
    out = [(week, int(s.get(field) or 0)) for week, s in stats]
    return sorted((w, n) for w, n in out if n > 0)
