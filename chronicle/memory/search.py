"""Pure search helpers: full-text tokenisation (jieba for Chinese) and the score fusion rule.

Full text. LanceDB's built-in tokenizers split on whitespace/punctuation, which leaves a Chinese sentence
as one giant token. So Chronicle tokenises itself — jieba `cut_for_search` for CJK runs (it emits both the
words and their sub-words: 天安门广场 -> 天安, 广场, 天安门, 天安门广场), Unicode word tokens elsewhere — and
stores the space-joined tokens in `fts_text`, indexed with LanceDB's `whitespace` base tokenizer (which
still lower-cases, stems English and drops English stop words). Queries go through the same tokenizer.
A calendar day written out ("5月3号", "2023年5月3日", "May 3, 2023", "3rd of May") adds one token for that month
and day (`day_tokens`): as words, a day is digits and "月" / a month name that half the memories share, so a
question naming the day a note was written ("在5月3号我看了哪一部电影？") barely preferred that day's memories,
whose key info holds the note's day (`chronicle.distill.offline.day_words`).

Fusion (see `fuse`). Both legs return up to `pool` candidates under the same prefilter; every candidate
gets its exact cosine (vectors are unit length) and, if full text found it, its BM25 score. Then

    semantic = (1 - f) * cosine + f * bm25 / max_bm25      (f = search_fulltext_weight, 0.5; max over this query)
    semantic = cosine                                       (dense mode, or full text matched nothing)
    score    = semantic * (search_semantic_weight + search_importance_weight * importance)   (seed 002: 0.7/0.3)
    score    = search_semantic_weight * semantic + search_importance_weight * importance   (CHRONICLE_SEARCH_SCORE
               = additive: seed 002's rule to the letter, for those who want it)

Importance scales relevance rather than being added to it (seed 002 adds them): a memory of importance 1 keeps
its whole relevance, one of importance 0 keeps 0.7 of it. Added, importance (spread 0.15-1.0, x 0.3) outweighed
relevance (cosines of one query's candidates spread ~0.1, x 0.35): a long turn that collects many importance
signals ranked above the turn that answers the question (LoCoMo "What is Gina's favorite style of dance?": the
answer at importance 0.3 fell out of the top 50 behind unrelated 0.8-1.0 turns). Scaled, an unrelated important
memory cannot outrank a relevant one, and among equally relevant ones the more important still wins. Measured
through the distilled store (bench/memory_e2e, same stores and candidates): LoCoMo hit@10 0.775 ->
0.814 / 0.818 (bold / session layouts), MemoryBank scoped hit@5 / @10 0.82 / 0.91 -> 0.83 / 0.94 (heading
layout); importance weight 0 gives 0.766 / 0.766 and 0.84 / 0.95, so importance still helps English.

Why this rule: on LoCoMo (bench/locomo.py; 1,536 questions, per-conversation filter, same candidates for
every rule) it beat the alternatives. hit@5 / hit@10:

    convex, f = 0.5 (chosen)                 0.639 / 0.720     dense cosine only            0.416 / 0.510
    max(cosine, bm25 / max_bm25)             0.617 / 0.705     BM25 only                    0.609 / 0.705
    noisy-OR of cosine and bm25/(bm25 + 1)   0.626 / 0.714     RRF k=10 / k=60      0.587 / 0.710, 0.533 / 0.647
    z-scored cosine + BM25                   0.588 / 0.680

f between 0.4 and 0.55 is flat (within 0.003). Max-normalising BM25 per query puts it on cosine's [0, 1]
scale whatever the query length or corpus statistics; raw (not min-max) cosine keeps absolute relevance,
which the importance term is weighed against. (Measured with the English MiniLM, the default then. With the
multilingual e5 default, through the distilled store of bench/memory_e2e, f = 0.4 / 0.5 / 0.6 gives hit@10
0.779 / 0.792 / 0.801 and importance weight 0 costs 0.02: within 0.02 of each other, so the rule stays.)
The small English MiniLM is weak on this data and blind to Chinese (single-character vocabulary), so full
text carries half the weight.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from chronicle.segments import segmented, segmenter

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Function words jieba emits as single tokens; they match nearly every Chinese memory and only add noise.
_ZH_STOP = frozenset("的了是在和与及或也都就而之着过吗呢吧啊呀哦嗯把被对从向给这那个有我你他她它")

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
# A month's name or its three-letter abbreviation, with or without a dot ("Oct.", "Sept").
_MONTH = "(?P<{g}>" + "|".join([*_MONTHS, *(m[:3] + r"\.?" for m in _MONTHS if m != "may"), r"sept\.?"]) + ")"
_DAY = re.compile(
    r"(?<!\d)(?P<zm>\d{1,2})\s*月\s*(?P<zd>\d{1,2})\s*[日号]"
    rf"|(?<![^\W_])(?P<ed>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH.format(g='em')}(?![^\W_])"
    rf"|(?<![^\W_]){_MONTH.format(g='fm')}\s+(?P<fd>\d{{1,2}})(?:st|nd|rd|th)?(?![^\W_])"
)

def tokenize(text: str) -> list[str]:
    """Search tokens of `text`: NFKC, case-folded; jieba search-mode words for CJK, word tokens otherwise."""
    text = unicodedata.normalize("NFKC", text).casefold()
    tokens: list[str] = []
    pos = 0
    for match in _CJK_RUN.finditer(text):
        tokens.extend(_WORD.findall(text[pos : match.start()]))
        for word in segmented(segmenter().cut_for_search, match.group()):
            word = word.strip()
            if word and word not in _ZH_STOP:
                tokens.append(word)
        pos = match.end()
    tokens.extend(_WORD.findall(text[pos:]))
    return tokens + day_tokens(text)


def day_tokens(text: str) -> list[str]:
    """One token per calendar day `text` (NFKC, case-folded) names, month and day without the year ("5月3号",
    "may 3rd" and "2023年5月3日" -> "d0503"): a question rarely gives the year, the stored day always has it."""
    out = []
    for match in _DAY.finditer(text):
        month_word = match.group("em") or match.group("fm")
        if month_word:
            month = next(n for n, name in enumerate(_MONTHS, start=1) if name.startswith(month_word[:3]))
        else:
            month = int(match.group("zm"))
        day = int(match.group("zd") or match.group("ed") or match.group("fd"))
        if 1 <= month <= 12 and 1 <= day <= 31:
            out.append(f"d{month:02d}{day:02d}")
    return out


def jieba_words(text: str) -> list[str]:
    """jieba's precise-mode words of `text` (for the dedup lexical check; search uses `tokenize`)."""
    return [w for w in segmented(segmenter().lcut, text) if w.strip()]


def fts_text(*texts: str) -> str:
    """The pre-tokenised text stored in the `fts_text` column (tokens of all `texts` joined by single spaces).

    A memory indexes content, summary, key_info and tags together: the keywords a distiller puts in
    keyInfo/tags are exactly what a later keyword query uses.
    """
    return " ".join(token for text in texts if text for token in tokenize(text))


@dataclass(frozen=True)
class Candidate:
    """One row found by either search leg, before scoring."""

    id: str
    cosine: float
    importance: float
    bm25: float | None = None
    fts_rank: int | None = None
    """1-based position in the full-text results, None if full text did not return it."""


@dataclass(frozen=True)
class Scored:
    id: str
    score: float
    semantic: float
    cosine: float
    importance: float
    bm25: float | None
    fts_rank: int | None


def semantic_relevance(cosine: float, bm25: float | None, max_bm25: float, *, fulltext_weight: float) -> float:
    """`(1 - f) * cosine + f * bm25 / max_bm25`; plain cosine when the query matched no text at all."""
    if max_bm25 <= 0 or not math.isfinite(max_bm25):
        return cosine
    text = (bm25 or 0.0) / max_bm25 if bm25 is not None and math.isfinite(bm25) else 0.0
    return (1.0 - fulltext_weight) * cosine + fulltext_weight * max(0.0, text)


ScoreRule = Literal["scaled", "additive"]


def importance_term(semantic: float, importance: float, weight: float, rule: ScoreRule) -> float:
    """The importance part of a score: `score = semantic_weight x semantic + importance_term` under either rule
    (the one place that says how importance enters; ageing in `memory.ranking` takes it back out)."""
    return weight * importance * (semantic if rule == "scaled" else 1.0)


def fuse(candidates: list[Candidate], *, semantic_weight: float, importance_weight: float, fulltext_weight: float,
         rule: ScoreRule = "scaled") -> list[Scored]:
    """Score candidates (semantic x (0.7 + 0.3 x importance), or seed 002's sum under `rule="additive"`; see the
    module docstring), best first; ties broken by cosine then id."""
    max_bm25 = max((c.bm25 for c in candidates if c.bm25 is not None and math.isfinite(c.bm25)), default=0.0)
    scored = []
    for c in candidates:
        semantic = semantic_relevance(c.cosine, c.bm25, max_bm25, fulltext_weight=fulltext_weight)
        score = semantic_weight * semantic + importance_term(semantic, c.importance, importance_weight, rule)
        scored.append(Scored(c.id, score, semantic, c.cosine, c.importance, c.bm25, c.fts_rank))
    scored.sort(key=lambda s: (-s.score, -s.cosine, s.id))
    return scored


@dataclass
class QueryCost:
    """Where one search's wall time went, in seconds (bench/search.py reports these per query).

    `fulltext` runs on another thread while the encoder works when a core is idle, so the parts can add up to
    more than the query took; `waited` is how long the query then still waited for it.
    """

    encoder: float = 0.0
    dense: float = 0.0
    fulltext: float = 0.0
    waited: float = 0.0
    fusion: float = 0.0
    fetch: float = 0.0
    total: float = 0.0
