"""Lexical evidence that two memory texts state the same fact: overlap, numbers, negation, substituted words.

An embedding's cosine says two texts are *about* the same thing; it does not say they state the same
fact. The English MiniLM scores unrelated Chinese sentences of one speaker at 0.92+ (its vocabulary has
single characters only), and even a good multilingual model puts "周会改到每周三" and "周会改到每周四" at
0.997. So a near-duplicate merge also needs the words to agree (`Lexical.same_fact`):

- character n-gram overlap (Dice): bigrams of CJK runs, trigrams inside Latin words — no tokenizer
  needed, robust to inflection ("prefers"/"preferred") and to jieba's segmentation choices;
- the same numbers (digits, English number words and ordinals, Chinese numerals that count or date
  something: 三点, 十五号, 周三);
- the same negation markers (不/没/未/别/无, not/no/never/n't/without; 非常, 特别, 无论 are not negations);
- no substituted content word: where the word sequences differ (difflib opcodes), one side replacing a
  content word by another that occurs nowhere in the other text ("羽毛球小组" vs "篮球小组", "Caroline
  went" vs "Melanie went", "staging" vs "production") is a different fact. Function words, particles and
  degree adverbs (的/了/很/非常, the/a/really) may differ; a word moved elsewhere is not a substitution.

Known limit: two content words trading places ("tea over coffee" / "coffee over tea") pass all four.
All pure and cheap (tens of microseconds per pair); computed only for candidates above the cosine threshold.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from chronicle.memory.search import jieba_words

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_CJK_CHAR = re.compile(f"[{_CJK}]")
_LATIN_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_]+", re.UNICODE)
_DIGITS = re.compile(r"\d+(?:[.,:/]\d+)*")
_ZH_DIGIT = "零〇一二两三四五六七八九"
_ZH_NUMERAL = f"[{_ZH_DIGIT}十百千万亿]+"
# A Chinese numeral counts as a number when a measure word or date/time unit follows it, or 周/星期/第 precedes
# it; otherwise 一 in 一些/一起/一直 would read as "1".
_ZH_UNIT = "点号日月年个次天周岁人元块分秒小时公里米斤本部张位场遍页篇首杯件条只届期楼层名"
_ZH_NUMBER = re.compile(f"(?:(?<=周)|(?<=星期)|(?<=礼拜)|(?<=第)){_ZH_NUMERAL}|{_ZH_NUMERAL}(?=[{_ZH_UNIT}])")
_ZH_NUMBER_WORD = re.compile(f"^(?:第|周|星期|礼拜)?{_ZH_NUMERAL}[{_ZH_UNIT}]?$")
_EN_NUMBER = {
    w: str(i)
    for i, ws in enumerate(
        ["zero", "one first", "two second twice", "three third", "four fourth", "five fifth", "six sixth",
         "seven seventh", "eight eighth", "nine ninth", "ten tenth", "eleven eleventh", "twelve twelfth dozen"]
    )
    for w in ws.split()
} | {"noon": "12:0", "midnight": "0:0", "hundred": "100", "thousand": "1000", "half": "0.5"}
# Words containing 不/没/无/别/非/未 that negate nothing.
_ZH_NOT_NEGATION = re.compile(
    "非常|特别|别人|别的|分别|区别|告别|离别|无论|无聊|不过|不仅|不但|不断|不少|不错|不久|不同|不管|未来"
)
_ZH_NEGATION = re.compile("[不没未别无莫勿]|并非")
_EN_NEGATION = frozenset({"not", "no", "never", "without", "nobody", "nothing", "none", "neither", "nor", "t"})
# Words whose change never makes another fact: particles, pronouns, degree adverbs, connectives.
_ZH_FUNCTION_WORDS = (
    "的 了 着 过 吗 呢 吧 啊 呀 哦 嗯 啦 么 嘛 哈 哈哈 很 非常 特别 太 真 真的 真是 挺 比较 更 最 都 也 还 "
    "就 又 再 才 只 在 是 有 和 与 及 或 或者 或是 而 并 且 我 你 他 她 它 我们 你们 他们 她们 咱们 自己 这 那 "
    "这个 那个 这些 那些 这样 那样 些 一些 个 一 一个 会 要 想 能 能够 可以 把 被 给 对 向 从 到 去 来 上 下 里 地 "
    "得 之 所 如何 怎样 怎么 什么 哪 哪些 如 比如 例如 等 等等 好 好的 嗯嗯 "
    "其实 然后 因为 所以 但是 可是 不过 已经 一直 正在 得到 让 使 用 于"
)
_EN_FUNCTION_WORDS = (
    "a an the to of in on at for with by from and or but so if as than then "
    "is am are was were be been being have has had do does did i me my mine we us "
    "our you your he him his she her it its they them their this that these those there here very "
    "really just also still too quite pretty such some any each every all about into over up out off m "
    "s re ve ll d oh hey wow well yeah yes ok okay please who what which how when where "
    "why can could would should will shall may might must get got lot lots much many more most"
)
_ZH_FUNCTION = frozenset(_ZH_FUNCTION_WORDS.split())
_EN_FUNCTION = frozenset(_EN_FUNCTION_WORDS.split())


@dataclass(frozen=True)
class Lexical:
    """How two texts compare word-wise."""

    overlap: float
    """Dice coefficient of the two texts' character n-gram sets, in [0, 1]."""
    same_numbers: bool
    same_negation: bool
    substitution: bool
    """A content word of one text was replaced by one found nowhere in the other."""

    def same_fact(self, min_overlap: float) -> bool:
        """Enough shared wording, and nothing that distinguishes one fact from another differs."""
        return self.overlap >= min_overlap and self.same_numbers and self.same_negation and not self.substitution


def compare(a: str, b: str) -> Lexical:
    fa, fb = _features(a), _features(b)
    return Lexical(overlap=_dice(fa.shingles, fb.shingles), same_numbers=fa.numbers == fb.numbers,
                   same_negation=fa.negation == fb.negation, substitution=_substitution(fa, fb))


@dataclass(frozen=True)
class _Features:
    folded: str
    tokens: tuple[str, ...]
    stems: frozenset[str]
    shingles: frozenset[str]
    numbers: frozenset[str]
    negation: tuple[str, ...]


@lru_cache(maxsize=4096)
def _features(text: str) -> _Features:
    folded = unicodedata.normalize("NFKC", text).casefold()
    words = _LATIN_WORD.findall(_CJK_RUN.sub(" ", folded))
    numbers = {_number(d) for d in _DIGITS.findall(folded)}
    numbers |= {str(zh_numeral(m)) for m in _ZH_NUMBER.findall(folded)}
    numbers |= {_EN_NUMBER[w] for w in words if w in _EN_NUMBER}
    zh_text = _ZH_NOT_NEGATION.sub(" ", folded)
    negation = sorted(_ZH_NEGATION.findall(zh_text)) + sorted(w for w in words if w in _EN_NEGATION)
    tokens = tuple(_tokens(folded))
    return _Features(folded=folded, tokens=tokens, stems=frozenset(_stem(t) for t in tokens),
                     shingles=_shingles(folded, words), numbers=frozenset(numbers), negation=tuple(negation))


def _tokens(folded: str) -> list[str]:
    """Words in order: jieba words for CJK runs, Unicode words elsewhere (digits included, punctuation dropped)."""
    out: list[str] = []
    for match in _TOKEN.finditer(folded):
        piece = match.group()
        out.extend(jieba_words(piece) if _CJK_CHAR.match(piece) else [piece])
    return out


def _is_content(token: str) -> bool:
    if token.isdigit() or token in _EN_NUMBER or _ZH_NUMBER_WORD.match(token):
        return False  # numbers have their own check
    if _CJK_CHAR.match(token):
        return token not in _ZH_FUNCTION
    return token not in _EN_FUNCTION and token not in _EN_NEGATION


def _present(token: str, other: _Features) -> bool:
    """Whether `token` occurs in the other text: as a substring for Chinese (segmentation differs: 组了/组,
    玩儿/玩), as a word stem for Latin script."""
    if _CJK_CHAR.match(token):
        return token in other.folded or any(t in token for t in other.tokens if len(t) > 1 and _CJK_CHAR.match(t))
    return _stem(token) in other.stems


def _substitution(fa: _Features, fb: _Features) -> bool:
    matcher = difflib.SequenceMatcher(a=fa.tokens, b=fb.tokens, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "replace":
            continue
        only_a = [t for t in fa.tokens[i1:i2] if _is_content(t) and not _present(t, fb)]
        only_b = [t for t in fb.tokens[j1:j2] if _is_content(t) and not _present(t, fa)]
        if only_a and only_b:
            return True
    return False


def _stem(word: str) -> str:
    """A crude English stem (enough to equate happen/happens/happened); other scripts unchanged."""
    if not word.isascii() or len(word) <= 4:
        return word
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


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
