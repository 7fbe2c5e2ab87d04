"""Offline `chronicle ask`: rank the chronicle's weeks by the question's terms (no model at all).

Chinese has no spaces, so CJK runs are cut into overlapping bigrams (“受试者” → 受试, 试者), the
usual trick of Chinese full-text search; Latin words and ids are kept whole. Terms are weighted by
inverse week frequency, so a term in every week (“本周”) counts for nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from chronicle.weekly.tokens import is_cjk

# "SAE 0 例" / "0 SAEs": a week saying it had none of something is not about that thing.
_ZERO_CLAUSE = re.compile(r"[A-Za-z\u4e00-\u9fff]+\s*0\s*(?:例|项|条|人|个)|\b0\s+[A-Za-z]+")
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


def rank_weeks(question: str, weeks: Sequence[tuple[int, str]], limit: int = 8) -> list[tuple[int, float, list[str]]]:
    """(week_number, score, matched terms) of the best-matching weeks, best first."""
    wanted = terms(question)
    if not wanted or not weeks:
        return []
    lowered = [(w, _ZERO_CLAUSE.sub(" ", text).lower()) for w, text in weeks]
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
