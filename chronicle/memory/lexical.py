"""Lexical evidence that two memory texts state the same fact: n-gram overlap, numbers, names, negation.

An embedding's cosine says two texts are *about* the same thing; it does not say they state the same
fact. The English MiniLM scores unrelated Chinese sentences of one speaker at 0.92+ (its vocabulary has
single characters only), and even a good multilingual model puts "周会改到每周三" and "周会改到每周四"
near 0.98. So a near-duplicate merge also needs the words to agree (`Lexical.same_fact`):

- character n-gram overlap (Dice): bigrams of CJK runs, trigrams inside Latin words — no tokenizer
  needed, robust to inflection ("prefers"/"preferred") and to jieba's segmentation choices;
- the same numbers (digits, and Chinese numerals that count or date something: 三点, 十五号, 周三);
- the same names (capitalised words not opening a sentence, Latin script);
- the same negation markers (不/没/未/别/无/非, not/no/never/n't/without).

All pure and cheap (microseconds per pair); computed only for candidates above the cosine threshold.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_LATIN_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_DIGITS = re.compile(r"\d+(?:[.,:/]\d+)*")
_ZH_DIGIT = "零〇一二两三四五六七八九"
_ZH_NUMERAL = f"[{_ZH_DIGIT}十百千万亿]+"
# A Chinese numeral counts as a number when a measure word or date/time unit follows it, or 周/星期/第 precedes
# it; otherwise 一 in 一些/一起/一直 would read as "1".
_ZH_UNIT = "点号日月年个次天周岁人元块分秒小时公里米斤本部张位场遍页篇首杯件条只位届期楼层"
_ZH_NUMBER = re.compile(f"(?:(?<=周)|(?<=星期)|(?<=礼拜)|(?<=第)){_ZH_NUMERAL}|{_ZH_NUMERAL}(?=[{_ZH_UNIT}])")
_ZH_NEGATION = re.compile("[不没未别无非莫勿]")
_EN_NEGATION = frozenset({"not", "no", "never", "without", "nobody", "nothing", "none", "neither", "nor"})
_NT = re.compile(r"n't\b|n’t\b")
_CAPITALISED = re.compile(r"\b[A-Z][^\W\d_]*")
_OPENERS = (
    "I The A An This That These Those He She It We They You My Your His Her Our Their Its Me Us Him Them "
    "And But Or So If When Then Also Just Yes No Oh Hey Hi Hello Thanks Thank Wow Well Sure Okay Ok Please "
    "Remember Note Always Never Every Each All Some Any There Here What Why How Who Where Which"
)
_NOT_NAMES = frozenset(_OPENERS.split())


@dataclass(frozen=True)
class Lexical:
    """How two texts compare word-wise."""

    overlap: float
    """Dice coefficient of the two texts' character n-gram sets, in [0, 1]."""
    same_numbers: bool
    same_names: bool
    """Every name of either text occurs (as a word) in the other."""
    same_negation: bool

    def same_fact(self, min_overlap: float) -> bool:
        """Enough shared wording, and nothing that distinguishes one fact from another differs."""
        return self.overlap >= min_overlap and self.same_numbers and self.same_names and self.same_negation


def compare(a: str, b: str) -> Lexical:
    fa, fb = _features(a), _features(b)
    return Lexical(
        overlap=_dice(fa.shingles, fb.shingles),
        same_numbers=fa.numbers == fb.numbers,
        same_names=fa.names <= fb.words and fb.names <= fa.words,
        same_negation=fa.negation == fb.negation,
    )


@dataclass(frozen=True)
class _Features:
    shingles: frozenset[str]
    numbers: frozenset[str]
    names: frozenset[str]
    words: frozenset[str]
    negation: tuple[str, ...]


@lru_cache(maxsize=4096)
def _features(text: str) -> _Features:
    norm = unicodedata.normalize("NFKC", text)
    names = _names(norm)
    folded = norm.casefold()
    numbers = {_number(d) for d in _DIGITS.findall(folded)}
    numbers |= {str(zh_numeral(m)) for m in _ZH_NUMBER.findall(folded)}
    words = _LATIN_WORD.findall(_CJK_RUN.sub(" ", folded))
    negation = sorted(_ZH_NEGATION.findall(folded)) + sorted(w for w in words if w in _EN_NEGATION)
    negation += ["n't"] * len(_NT.findall(folded))
    return _Features(_shingles(folded, words), frozenset(numbers), names, frozenset(words), tuple(negation))


def _names(text: str) -> frozenset[str]:
    """Capitalised Latin words other than common sentence openers (a name is what a paraphrase keeps)."""
    return frozenset(w.casefold() for w in _CAPITALISED.findall(text) if w not in _NOT_NAMES)


def _shingles(folded: str, words: list[str]) -> frozenset[str]:
    out: set[str] = set()
    for run in _CJK_RUN.findall(folded):
        out.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    for word in words:
        padded = f" {word} "
        out.update(padded[i : i + 3] for i in range(len(padded) - 2))
    return frozenset(out)


def _dice(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return 2 * len(a & b) / (len(a) + len(b))


def _number(text: str) -> str:
    """`03:00` and `3:00` agree; `1,000` and `1000` agree."""
    parts = re.split(r"[.:/]", text.replace(",", ""))
    return ":".join(p.lstrip("0") or "0" for p in parts)


_ZH_VALUE = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2}
_ZH_SCALE = {"十": 10, "百": 100, "千": 1000, "万": 10_000, "亿": 100_000_000}


def zh_numeral(text: str) -> int:
    """Value of a Chinese numeral: 三 -> 3, 十五 -> 15, 二十一 -> 21, 一百零五 -> 105, 两千 -> 2000."""
    if all(c in _ZH_VALUE for c in text):  # digit by digit, as years are written: 二〇二六 -> 2026
        return int("".join(str(_ZH_VALUE[c]) for c in text))
    total = section = digit = 0
    for c in text:
        if c in _ZH_VALUE:
            digit = _ZH_VALUE[c]
        elif c in ("万", "亿"):
            total += (section + digit) * _ZH_SCALE[c]
            section = digit = 0
        else:
            section += (digit or 1) * _ZH_SCALE[c]
            digit = 0
    return total + section + digit
