"""Personal data of study subjects, pseudonymised before any LLM (pure).

A trial log names its subjects (`受试者 XH201-01-003（张建国，男，67岁）`), their resident ids, phones,
passports and home addresses. Each such value becomes a placeholder stable per project — `[受试者姓名-1]`,
`[身份证号-2]` — so the model still sees who is who without seeing who it is. `Pseudonyms` holds the project's
mapping (loaded from the database, where alone it is kept: `storage/pseudonyms.py`) and records the values
it numbers for the first time, for the caller to store.

Chinese names are found by jieba's part-of-speech tag `nr` (a person's name), not by a surname list; English
names only next to a patient word (`patient`, `subject`, `participant`, `Mr.`) or in a subject's parentheses.
Staff keep their role and their name (`PI-李建国`, `CRC 王敏`): the safety guard names them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache, partial

from chronicle.memory.subjects import COMPOUND_SURNAMES, SURNAMES
from chronicle.redaction import checks
from chronicle.segments import segmented, segmenter

FAMILIES = ("name", "resident_id", "phone", "passport", "address", "record_no", "birth_date", "contact")
LABELS = {"name": "受试者姓名", "resident_id": "身份证号", "phone": "电话", "passport": "护照号", "address": "住址",
          "record_no": "病历号", "birth_date": "出生日期", "contact": "联系账号"}

_ID_LABEL = r"(?:身份证(?:号码?)?|证件号(?:码)?|公民身份号码|ID[ \t]*card(?:[ \t]*no\.?)?|resident[ \t]*id)"
_SPREAD = r"[ -]?".join([r"\d"] * 17) + r"[ -]?[\dXx]"
_RESIDENT = re.compile(rf"(?P<label>{_ID_LABEL}[ \t]*+[:：]?[ \t]*+)?(?<![\d-])(?P<v>{_SPREAD})(?![\dA-Za-z])", re.I)
_PASSPORT = re.compile(r"(?:(?:护照(?:号码?)?|passport(?:[ \t]*(?:no\.?|number|#))?)[ \t]*[:：]?[ \t]*"
                       r"(?P<v>[A-Z]{1,2}\d{7,8})"
                       r"|(?<![A-Za-z0-9])(?P<w>[EGDPS]\d{8}|E[A-Z]\d{7})(?![A-Za-z0-9]))", re.I)
_ADDRESS = re.compile(
    r"(?P<v>(?:[\u4e00-\u9fff]{2,7}[省市])?(?:[\u4e00-\u9fff]{1,6}[区县市])?[\u4e00-\u9fff]{1,12}(?:路|街|大街|大道|巷|弄|胡同|里)"
    r"\d{1,5}号(?:院)?(?:\d{1,4}(?:栋|幢|号楼|单元))*(?:\d{1,5}(?:室|号))?"
    r"|\d{1,5}[ \t]+(?:[A-Z][a-z]+[ \t]+){1,3}(?:Street|St\.|Avenue|Ave\.|Road|Rd\.|Lane|Ln\.|Boulevard|Blvd\.|Drive"
    r"|Dr\.|Court|Ct\.|Way|Place|Terrace)(?:,?[ \t]+(?:Apt|Unit|Suite)\.?[ \t]*\d+)?)")
_PHONE = re.compile(r"(?<![A-Za-z0-9+_./-])(?:\+\d{1,3}[ \-.]?)?\d{2,5}(?:[ \-.]?\d{2,5}){1,4}"
                    r"(?![A-Za-z0-9_\-/:]|\.\d)")
# A labelled identifier: the label says what the value is, whatever its shape (`住院号 0012345`, `MRN: A-2023-98`,
# `病案号：BA20230098`), as a secret noun scopes its clause — the shapes of hospital numbers are not listable.
# family -> (its labels, the shape of a value after one, a word every label holds: most lines hold none, and a
# substring test is cheap beside the pattern — about a microsecond a line on the sample trial).
_LABELLED = {
    "record_no": (r"住院号|病案号|病历号|门诊号|就诊卡号|医保卡号|社保卡号|医保号|社保号|健康卡号|登记号"
                  r"|MRN|medical[ \t]+record(?:[ \t]+(?:no\.?|number|#))?|hospital[ \t]+(?:no\.?|number)"
                  r"|insurance[ \t]+(?:no\.?|number|id)",
                  r"[A-Za-z0-9][A-Za-z0-9-]{2,}(?:[ \t]\d{3,})*",
                  ("号", "mrn", "record", "hospital", "insurance")),
    "birth_date": (r"出生日期|出生年月日?|生日|出生于|DOB|date[ \t]+of[ \t]+birth|born(?:[ \t]+on)?|birthday",
                   r"\d{4}[-/.年]\d{1,2}[-/.月]\d{1,2}日?|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}|\d{4}年\d{1,2}月"
                   r"|\d{1,2}[ \t]+(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?[ \t]+\d{4}"
                   r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?[ \t]+\d{1,2},?[ \t]+\d{4}",
                   ("生", "dob", "birth", "born")),
    "contact": (r"微信号?|QQ号?|WeChat(?:[ \t]+ID)?|Telegram|WhatsApp|Line[ \t]+ID|Skype",
                r"@?[A-Za-z][A-Za-z0-9_.-]{3,}|\d{5,12}",
                ("微信", "qq", "wechat", "telegram", "whatsapp", "line", "skype")),
}
_LABEL_VALUE = {family: re.compile(rf"(?<![A-Za-z])(?:{label})(?![A-Za-z])[ \t]*+(?:是|为|：|:|=|#|No\.?)?[ \t]*+"
                                   rf"(?P<v>{value})", re.I)
                for family, (label, value, _) in _LABELLED.items()}
_PATIENT = r"(?:[Pp]atient|[Ss]ubject|[Pp]articipant|Mr\.?|Mrs\.?|Ms\.?|Miss)"
_EN_NAME = re.compile(rf"\b{_PATIENT}[ \t]+(?:[A-Z]{{2,6}}\d{{2,4}}(?:-\d{{2,4}}){{1,3}}[ \t]*\(?)?"
                      r"(?P<v>[A-Z][a-z]+(?:[ \t][A-Z][a-z]+){1,2})(?![a-z])"
                      r"|\((?P<w>[A-Z][a-z]+(?:[ \t][A-Z][a-z]+){1,2})(?=,[ \t]*\d{1,3}[ \t]*(?:y|yo|years?)\b)")
_ROLE_BEFORE = re.compile(r"(?:PI|CRC|CRA|DM|PM|医学监查|项目经理|研究者|研究医生|主任|医生|护士|监查员"
                          r"|协调员|老师|经理)[-_ \t:：]*$")
# A subject's or a relative's name: after a patient or kin word; before the subject's sex or id; or after the
# subject's id and before their sex or age (`XH201-02-005 王淑芬 女 58岁`). Four characters only with a compound
# surname (欧阳娜娜).
_KIN = (r"患者|受试者|病人|家属|女儿|儿子|丈夫|妻子|爱人|老伴|母亲|父亲|孙子|孙女|外孙|哥哥|姐姐|弟弟|妹妹|儿媳|女婿"
        r"|监护人")
_CN_NAME = rf"(?:{'|'.join(COMPOUND_SURNAMES)})[\u4e00-\u9fff]{{1,2}}|[\u4e00-\u9fff]{{2,3}}"
_AFTER_PATIENT = re.compile(rf"(?:{_KIN})[ \t]*(?P<v>{_CN_NAME}?)"
                            r"(?=[因于在的已出现、，,（(\s来打说称表陪签代]|$)"
                            rf"|(?:^|[：:（(，,])[ \t]*(?P<w>{_CN_NAME})(?=[，,、][ \t]*(?:[男女]|[A-Z]{{2,6}}\d))"
                            rf"|[A-Z]{{2,6}}\d{{2,4}}(?:-\d{{2,4}}){{1,3}}[ \t，,]+(?P<x>{_CN_NAME})"
                            r"(?=[ \t，,、]+(?:[男女](?![\u4e00-\u9fff])|\d{1,3}岁))")
_SUBJECT_CONTEXT = re.compile(
    r"病例|[男女][，,、 ）)]|(?<!\d)\d+岁|[A-Z]{2,6}\d{2,4}-\d|访视|复诊|随访|入组|筛选|知情"
    rf"|用药|给药|不良|住院|出院|病史|联系|电话|姓名|名字|叫|{_KIN}")
"""Where a subject's name may stand: the segmenter (slow: ~1 ms a line) runs only on lines that talk about one."""
_WHEN = re.compile(r"[于在已](?:今|昨|明|本|当|次|上|下|近|前|同|即|该)")
"""`受试者于今日出院`: 于 and 在 are surnames, but before a time word they are "on", not a name."""
_PLACEHOLDER = re.compile(rf"\[(?:{'|'.join(LABELS.values())})-\d+\]")


# A second check on jieba's tag, which also marks place and hospital names (`齐鲁`) and some adverbs `nr`: a
# person's name starts with a surname (a double one's first character included).
_SURNAMES = SURNAMES | frozenset("欧阳司马上官诸葛东方皇甫")


@dataclass
class Pseudonyms:
    """One project's mapping (value -> placeholder per family) and the families the policy pseudonymises."""

    known: dict[tuple[str, str], str] = field(default_factory=dict)
    families: tuple[str, ...] = FAMILIES
    new: dict[tuple[str, str], str] = field(default_factory=dict)

    def placeholder(self, family: str, value: str) -> str:
        key = (family, value)
        if key not in self.known:
            n = 1 + sum(1 for f, _ in self.known if f == family)
            self.known[key] = self.new[key] = f"[{LABELS[family]}-{n}]"
        return self.known[key]

    def apply(self, text: str) -> str:
        """`text` with every subject's personal value of a pseudonymised family replaced by its placeholder."""
        if not text:
            return text
        for family, _ in _FINDERS:
            if family not in self.families:
                continue
            spans = [(start, end, self.placeholder(family, text[start:end]))  # numbered in reading order
                     for start, end in _free_spans(family, text)]
            for start, end, placeholder in reversed(spans):
                text = text[:start] + placeholder + text[end:]
        return text


@lru_cache(maxsize=8192)
def _free_spans(family: str, text: str) -> tuple[tuple[int, int], ...]:
    """The spans of `family`'s values in `text` to replace, in reading order: not overlapping each other or a
    placeholder already there (applying twice changes nothing). Pure, so cached: a log repeats its lines (a
    rerun, the same visit line week after week), and the finders' patterns were most of a known line's cost."""
    finder = dict(_FINDERS)[family]
    taken = [m.span() for m in _PLACEHOLDER.finditer(text)]
    spans: list[tuple[int, int]] = []
    for start, end in sorted(finder(text)):
        if (spans and start < spans[-1][1]) or any(s < end and start < e for s, e in taken):
            continue
        spans.append((start, end))
    return tuple(spans)


def _group_spans(pattern: re.Pattern[str], text: str, *names: str) -> list[tuple[int, int]]:
    out = []
    for m in pattern.finditer(text):
        name = next((n for n in names if m.group(n)), None)
        if name:
            out.append(m.span(name))
    return out


def _labelled(family: str, text: str) -> list[tuple[int, int]]:
    lowered = text.lower()
    if not any(t in lowered for t in _LABELLED[family][2]):
        return []
    return _group_spans(_LABEL_VALUE[family], text, "v")


def _resident(text: str) -> list[tuple[int, int]]:
    """Labelled (any checksum, grouped or not) or with a valid GB 11643 check digit."""
    return [m.span("v") for m in _RESIDENT.finditer(text) if m.group("label") or checks.cn_resident_id(m.group("v"))]


def _phones(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _PHONE.finditer(text) if checks.phone_number(m.group(0))]


@lru_cache(maxsize=8192)
def _cn_names(text: str) -> tuple[tuple[int, int], ...]:
    """Person names by jieba's `nr` tag, except a staff member after a role and an id-like word."""
    if not _SUBJECT_CONTEXT.search(text):
        return ()
    out = []
    for start, word in _tagged_names(text):
        if not 2 <= len(word) <= 4 or not re.fullmatch(r"[\u4e00-\u9fff]+", word):
            continue
        after = text[start + len(word):start + len(word) + 2]
        if (word[0] not in _SURNAMES or _dictionary_word(word) or _ROLE_BEFORE.search(text[max(0, start - 8):start])
                or re.match(r"医院|大学|路|街|区|市|省|县|公司|中心|老师|医生|主任|护士|经理|院长", after)
                or re.search(r"老师|医生|主任|护士|经理|院长|总$", word)):
            continue
        out.append((start, start + len(word)))
    for m in _AFTER_PATIENT.finditer(text):  # beside a patient word, or before the subject's sex or id
        name = next(n for n in ("v", "w", "x") if m.group(n))
        if m.group(name)[0] in _SURNAMES and not _dictionary_word(m.group(name)) and not _WHEN.match(m.group(name)):
            out.append(m.span(name))
    return tuple(out)  # cached: a rerun of the same weeks segments nothing again


def _tagged_names(text: str) -> Iterator[tuple[int, str]]:
    """(offset, word) of every word jieba tags `nr` in `text`, as segmenting the whole text tags them.

    jieba cuts a text block by block (runs of its `re_han_internal`; what lies between is never a name), each block
    without regard to its neighbours, so segmenting only some blocks tags them exactly as the whole text would.
    Only blocks holding a surname character are segmented: every name kept starts with one (`_SURNAMES`), and
    the segmenter is most of a new entry's cost.
    """
    posseg = segmenter().posseg
    for block in posseg.re_han_internal.finditer(text):
        if _SURNAMES.isdisjoint(block.group()):
            continue
        at = block.start()
        for word, flag in segmented(_cut, block.group()):
            start = text.find(word, at)
            at = start + len(word) if start >= 0 else at
            if flag == "nr" and start >= 0:
                yield start, word


@lru_cache(maxsize=16384)
def _cut(block: str) -> tuple[tuple[str, str], ...]:
    """jieba's (word, tag) pairs of one block. A block is cut without regard to its neighbours (see
    `_tagged_names`), so its cut can be kept: a trial log's new lines mostly repeat blocks seen before (visit
    and query phrases around a new subject id), and segmenting is most of a new line's cost."""
    return tuple((word, flag) for word, flag in segmenter().posseg.cut(block))


def _dictionary_word(word: str) -> bool:
    """A common word jieba's dictionary also tags `nr` (`安全性`, `宁可`): a name is rare in its corpus (`张建国` 13
    times), a word that frequent is not one."""
    return (segmenter().dt.FREQ.get(word) or 0) >= 100


_FINDERS = (
    # A label is the strongest evidence: its value is taken before a shape rule could read it as something else.
    *((family, partial(_labelled, family)) for family in _LABEL_VALUE),
    ("resident_id", _resident),
    ("passport", lambda t: _group_spans(_PASSPORT, t, "v", "w")),
    ("address", lambda t: _group_spans(_ADDRESS, t, "v")),
    ("phone", _phones),
    ("name", lambda t: sorted({*_group_spans(_EN_NAME, t, "v", "w"), *_cn_names(t)})),
)
