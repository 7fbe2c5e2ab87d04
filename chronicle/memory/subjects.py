"""Whom a memory is about: a subject key from note structure (pure; Chinese and English).

A subject is a lower-cased, NFKC-normalised name (`张曼婷`, `caroline`), the user (`user`, or the user's
name when USER.md gives one), or "" when the notes do not say. It comes, strongest first, from

1. a reply label naming whom it answers: `AI伴侣（回复张曼婷）: …`, `Assistant (to Caroline): …`;
   also a reply verb naming its addressee: `我对张曼婷说：…`, `我回答张曼婷：…`, `To Caroline: …`;
2. a section heading naming one person: `## 张曼婷`, `## 与张曼婷的对话`, `## 和张曼婷聊天`,
   `## Conversation with Caroline`, `### 用户：张曼婷`, `## User: Caroline`, `## 关于张曼婷`, `## About Caroline`,
   `## 张曼婷 的记录`, `## Caroline's notes` — everything said in that section (the person's turns and the
   replies to them) is about that person;
3. the speaker of the line: a label `- Caroline: …`, a speech verb `张曼婷说：…`, `张曼婷问道：…`,
   `Caroline said: …`, `From Caroline: …` (a named speaker); `用户：…` (the user);
4. an assistant's reply (`我回答：…`, `AI伴侣：…`) in a section where exactly one named person speaks: that person;
5. a line that opens with a person as its subject: a surname and a title (`王老师习惯…`, `李医生 prefers…`), or a
   name already known — the user's name from USER.md, or a speaker of the note (`Caroline went…`);
6. nothing: "" (unknown). Unknown never matches a scoped search, and never takes part in supersession.

The rules are conservative on purpose: a heading is read as a person only when it is a conversation
heading ("与X的对话", "chat with X"), or a bare name that also speaks in the section or reads as a Chinese
personal name (common surname + 1-3 characters). "## 决策" or "## Infrastructure" are never people.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from chronicle.segments import segmented, segmenter

USER = "user"
"""Subject of the user when the notes do not name them."""

_CJK_NAME = r"[\u4e00-\u9fff·]{2,4}"
# Latin-script names with their accents (Tomás, Zoë, Søren, Łukasz): an ASCII-only class lost their subject.
LATIN_UPPER, LATIN_LETTER = "A-ZÀ-ÖØ-ÞĀ-ſ", "A-Za-zÀ-ÖØ-öø-ÿĀ-ſ"
# Each part of a name is bounded: a run of letters is also a verb's or a word's, and an unbounded name tried
# every split of a long line against them (quadratic in the line).
LATIN_NAME = rf"[{LATIN_UPPER}][{LATIN_LETTER}'’-]{{1,30}}(?: [{LATIN_UPPER}][{LATIN_LETTER}'’-]{{1,30}}){{0,2}}"
_EN_NAME = LATIN_NAME
_ANY_NAME = rf"{_CJK_NAME}?|{_EN_NAME}"
"""Either script in either language's frame: "与 Sarah 的对话", "Conversation with 王芳", "陈静's notes"."""
_CONVERSATION = re.compile(
    rf"^(?:与|和|跟|同)\s*(?P<zh>{_ANY_NAME})\s*(?:的)?\s*(?:对话|聊天|谈话|交流|会话)(?:记录)?$"
    rf"|^(?P<zh2>{_ANY_NAME})\s*的\s*(?:对话|聊天|谈话)(?:记录)?$"
    rf"|^(?:conversation|chat|talk|session|call)s? with (?P<en>{_CJK_NAME}|{_EN_NAME})$",
    re.I,
)
# Headings that name one person by a role prefix, "about", or "X's record": `用户：张曼婷`, `User: Caroline`,
# `关于张曼婷`, `About Caroline`, `张曼婷 的记录`, `Caroline's notes`, `Notes on Caroline`.
_ROLE_PREFIX = (r"用户|客户|来访者|访客|患者|病人|学员|联系人|对象|人物|朋友|同事|user|client|customer|contact|person|"
                r"patient|friend|member|visitor|with")
_PERSON_HEADING = re.compile(
    rf"^(?:{_ROLE_PREFIX})\s*[:：]\s*(?P<a>{_CJK_NAME}|{_EN_NAME})$"
    rf"|^关于\s*(?P<b>{_CJK_NAME}|{_EN_NAME})$"
    rf"|^(?:about|notes? (?:on|about)|on) (?P<c>{_CJK_NAME}|{_EN_NAME})$"
    rf"|^(?P<d>{_CJK_NAME}?|{_EN_NAME})\s*的\s*(?:记录|笔记|档案|资料|情况|近况|日记|信息|消息|留言)$"
    rf"|^(?P<e>{_CJK_NAME}|{_EN_NAME})\s*['’]s (?:notes|record|records|profile|file|messages|diary|log)$",
    re.I,
)
# Reply labels that name the person answered: "AI伴侣（回复张曼婷）", "Assistant (to Caroline)".
_REPLY_LABEL = re.compile(
    rf"^\s*+(?:\*\*|__)?[^:：\n（(]{{1,20}}\s*[（(]\s*(?:回复|答复|回答|对|给|to|replying to|reply to)\s*"
    rf"(?P<name>{_CJK_NAME}|{_EN_NAME})\s*[）)](?:\*\*|__)?\s*[:：]",
    re.I,
)
SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范"
    "金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤常温康施文牛樊葛邢安齐易乔伍庞颜倪庄聂"
    "章鲁岳翟殷詹申欧耿关兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌毕单季裴霍涂成苗谷盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解"
    "牟艾尤阳时穆农司卓古吉缪简车项连芦麦褚娄窦戚岑景党宫费卜冷晏席卫米柏宗瞿桂全佟应臧闵苟邬边卞姬师和仇栾隋商刁沙荣巫寇桑郎"
    "甄丛仲虞敖巩明佘池查麻苑迟邝")
"""The most common single-character Chinese surnames (the 120 most common cover ~90 % of people in China)."""
# A 2-4 character heading starting with a common surname (single or double) reads as a personal name.
COMPOUND_SURNAMES = ("欧阳", "司马", "上官", "诸葛", "东方", "皇甫", "慕容", "令狐", "端木", "夏侯")
_NOT_NAMES = {"用户", "助手", "助理", "主人", "老板", "客户", "朋友", "同事", "我们", "他们", "今天", "明天", "昨天",
              "决策", "决定", "计划", "总结", "笔记", "日志", "记录", "问题", "方案", "进展", "待办", "对话", "聊天"}
_ROLE_WORDS = re.compile(r"^(?:用户|使用者|主人|我|user|the user|human|me|customer|client)$", re.I)
_USER_NAME = re.compile(
    # (Blanks within the line only: `^\s*` at every line start of a file of blank lines was cubic.)
    rf"^[^\S\n]*+[-*]?[^\S\n]*+(?:\*\*)?(?:name|full name|preferred name|名字|姓名|称呼|用户名字|用户姓名)(?:\*\*)?"
    rf"\s*[:：]\s*"
    rf"(?:\*\*)?(?P<name>{_CJK_NAME}|{_EN_NAME})(?:\*\*)?\s*$"
    rf"|(?:我叫|名字是|my name is |the user is |用户是)(?P<name2>{_CJK_NAME}|{_EN_NAME})",
    re.I | re.M,
)


# How an assistant's notes name the people around its user: a surname and a title (王老师, 李医生, 陈主任, 张总).
_TITLES = ("老师|医生|大夫|教授|主任|院长|经理|总监|总|先生|女士|小姐|同学|博士|护士|律师|师傅|阿姨|叔叔|"
           "处长|科长|组长|老板|工")
_TITLED = re.compile(rf"^(?:{'|'.join(COMPOUND_SURNAMES)}|[{''.join(sorted(SURNAMES))}])(?:{_TITLES})")
_LINE_MARK = re.compile(r"^\s*+(?:\*\*|__|[-+•]|\*|\d+[.)])?\s*+(?:\*\*|__)?\s*+")


def line_person(line: str, known: frozenset[str] = frozenset()) -> str | None:
    """The person a line opens with as its subject (`王老师习惯早上看消息`, `Caroline went camping`), or None: a
    surname with a title, or one of the `known` names (case-folded), followed by the sentence rather than by a
    label's colon. In Chinese the name must end where a word ends: `高总结了一下` is 高 summing up, not 高总."""
    text = _LINE_MARK.sub("", unicodedata.normalize("NFKC", line), count=1)
    match = _TITLED.match(text)
    names = [match.group()] if match else []
    names += [text[:len(k)] for k in sorted(known, key=len, reverse=True) if k and text[:len(k)].casefold() == k]
    for name in names:
        rest = text[len(name):].lstrip(" *_")
        if not rest or rest[0] in ":：" or not (rest[0].isalpha() or "\u4e00" <= rest[0] <= "\u9fff"):
            continue
        if re.fullmatch(r"[\u4e00-\u9fff·]+", name):
            if _word_ends_at(text, len(name)):
                return name
        elif text[len(name):len(name) + 1] == " ":
            return name
    return None


def _word_ends_at(text: str, end: int) -> bool:
    """Whether jieba's segmentation of `text` has a word boundary at `end`."""
    at = 0
    for token in segmented(segmenter().posseg.cut, text[:end + 6]):
        at += len(token.word)
        if at >= end:
            return at == end
    return True


def normalise_subject(name: str | None) -> str:
    """The subject key of a name: NFKC, case-folded, inner whitespace folded, surrounding punctuation removed."""
    if not name:
        return ""
    text = unicodedata.normalize("NFKC", name).casefold()
    text = re.sub(r"\s+", " ", text).strip(" \t.,;:：，。·'’\"“”()（）*_-")
    return text[:60]


def looks_like_zh_name(text: str) -> bool:
    """A 2-4 character Chinese personal name (common surname first); titles and common words are not."""
    if not re.fullmatch(r"[\u4e00-\u9fff]{2,4}", text) or text in _NOT_NAMES:
        return False
    if text[:2] in COMPOUND_SURNAMES:
        return len(text) >= 3
    if len(text) == 2 and text[0] in "老小" and text[1] in SURNAMES:  # 老王, 小李: how colleagues are named,
        return (segmenter().dt.FREQ.get(text) or 0) < 500  # but 老师, 小时 are words
    return text[0] in SURNAMES and len(text) <= 3


_PERSON_TAGS = {"nr", "nrfg", "nrt"}
# Latin heading words that name a topic, not a person: "About Deployment", "Notes on Billing Integration".
_TOPIC_EN = re.compile(r"(?i:tion|sion|ment|ity|ness|ure|ics|ogy|ism|ware|ship|ops)s?$|^[A-Z0-9]{2,}$|\d")


@lru_cache(maxsize=4096)  # a note repeats its headings on every entry; jieba's tagging is the cost of a call
def common_word(text: str, bare: bool = False) -> bool:
    """A Chinese word the lexicon knows as something other than a person's name: "周会" (a weekly meeting), "高考",
    "部署" — some start with a common surname but are topics. jieba's part-of-speech tag decides; for a bare
    heading (`bare`), with no "关于" or "的记录" saying a person is meant, a 2-character word frequent in general
    text (高明, 康复) is a word before it is a name."""
    jieba = segmenter()
    posseg, freq = jieba.posseg, jieba.dt.FREQ
    tokens = list(segmented(posseg.cut, text))
    if len(tokens) == 1 and tokens[0].flag not in _PERSON_TAGS:
        return True
    return bare and len(text) == 2 and (freq.get(text) or 0) >= 200


def reads_as_person(name: str, speakers: frozenset[str] = frozenset()) -> bool:
    """Whether a name a heading gives is a person: one speaking in the section, a Chinese personal name that is not
    a common word, or a Latin-script name that is not a topic noun ("Deployment", "API")."""
    if name.casefold() in speakers:
        return True
    if re.fullmatch(r"[\u4e00-\u9fff·]+", name):
        return looks_like_zh_name(name) and not common_word(name)
    return bool(re.fullmatch(_EN_NAME, name)) and not any(_TOPIC_EN.search(w) for w in name.split())


def heading_person(heading: str, speakers: frozenset[str] = frozenset()) -> str | None:
    """The one person a section heading names, or None.

    `speakers`: names (case-folded) speaking in the section; a bare heading that is one of them is that person.
    """
    text = re.sub(r"^#+\s*", "", unicodedata.normalize("NFKC", heading)).strip().strip("*_ ")
    text = re.sub(r"(?<!\s)\s*+[-—·|]\s*\d{4}-\d{2}-\d{2}.*$|^\d{4}-\d{2}-\d{2}\s*[-—·|]?\s*", "", text).strip()
    match = _CONVERSATION.match(text) or _PERSON_HEADING.match(text)
    if match:
        name = next((g for g in match.groups() if g), None)
        if not name or name in _NOT_NAMES or _ROLE_WORDS.match(name):
            return None
        return name if reads_as_person(name, speakers) else None
    if text.casefold() in speakers and (looks_like_zh_name(text) or re.fullmatch(_EN_NAME, text)):
        return text
    if looks_like_zh_name(text) and not common_word(text, bare=True):  # "## 张曼婷", not "## 周会"
        return text
    return None


def same_person(a: str, b: str) -> bool:
    """Two spellings of one person: equal keys, a Chinese name and its given name ("张曼婷" / "曼婷"), or a full name
    and its first name ("Caroline Smith" / "Caroline")."""
    a, b = normalise_subject(a), normalise_subject(b)
    if not a or not b:
        return False
    short, long = sorted((a, b), key=len)
    if re.fullmatch(r"[\u4e00-\u9fff·]+", short + long):
        return long.endswith(short) or long.startswith(short)
    return long.split(" ")[0] == short.split(" ")[0] and (short in long)


def reply_target(line: str) -> str | None:
    """The person a labelled reply answers (`AI伴侣（回复张曼婷）: …` -> 张曼婷), or None."""
    match = _REPLY_LABEL.match(line)
    return match.group("name") if match else None


def user_name(user_md: str) -> str | None:
    """The user's name as USER.md states it (`- Name: Alice`, `名字：王芳`, `我叫王芳`), or None."""
    match = _USER_NAME.search(user_md or "")
    if not match:
        return None
    return (match.group("name") or match.group("name2") or "").strip() or None


def entry_subject(line: str, headings: tuple[str, ...], *, speaker: str | None, role: str,
                  speakers: frozenset[str] = frozenset(), user: str | None = None, addressee: str | None = None,
                  section_person: str | None = None) -> str:
    """The subject key of one note entry (see the module docstring for the order of the rules).

    `speaker`/`role`: the entry's speaker label as `chronicle.distill.speaker.split_speaker` read it;
    `user`: the user's name from USER.md, if any; `addressee`: whom the line says it answers ("我对X说：",
    "To X:"); `section_person`: the one named person speaking in the entry's section, if only one does —
    the assistant's replies there ("我回答：", "AI: …") are about that person.
    """
    target = reply_target(line) or addressee
    if target:
        return normalise_subject(target)
    for heading in reversed(headings):  # the deepest heading naming a person wins
        person = heading_person(heading, speakers)
        if person:
            # "## 与龚晓的对话" / "- 杜明：我也去": a named speaker who is not the heading's person speaks for themself
            if role == "other" and speaker and not same_person(speaker, person):
                return normalise_subject(speaker)
            return normalise_subject(person)
    if role == "other" and speaker:
        return normalise_subject(speaker)
    if role == "agent":  # "我回答：…" is the assistant's voice, not the user's "我"
        return normalise_subject(section_person) if section_person else ""
    if role == "user" or (speaker and _ROLE_WORDS.match(speaker)):
        return normalise_subject(user) if user else USER
    person = line_person(line, speakers | ({normalise_subject(user)} if user else set()))
    return normalise_subject(person) if person else ""
