"""Who is speaking in a note entry, and who a sentence is about (pure; English and Chinese).

Daily notes are the assistant's own log ("我" / "I" is the assistant), but they also hold transcripts:
`用户：我喜欢…` (the user speaking), `AI伴侣：…` (the assistant), `Caroline: I went to…` (someone else). The
knowledge files SOUL.md / IDENTITY.md describe the agent and USER.md the user, so routing needs to know which
of them — if any — a sentence is about: "my style of answering" in the assistant's notes is the agent's, "Got
any fave styles?" said by Gina is nobody's persona.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from chronicle.memory.subjects import LATIN_LETTER, LATIN_NAME, LATIN_UPPER

Role = Literal["own", "user", "agent", "other"]

_USER_ROLES = {"user", "the user", "human", "me", "q", "customer", "client", "owner", "boss",
               "用户", "使用者", "主人", "老板", "问", "客户", "我"}
_AGENT_ROLES = {"assistant", "the assistant", "ai", "bot", "agent", "a", "ai assistant", "ai companion", "chatbot",
                "助手", "助理", "ai伴侣", "ai助手", "ai 伴侣", "ai 助手", "机器人", "智能体", "答", "小助手"}
# Field labels of a note ("Tone: calm", "记住：…") are not speakers, even when the text says "I" or "我".
_LABELS = {
    "note", "notes", "todo", "remember", "reminder", "lesson", "lessons", "rule", "rules", "tone", "style", "role",
    "name", "status", "update", "fix", "bug", "idea", "question", "answer", "summary", "result", "next", "plan",
    "goal", "issue", "warning", "tip", "important", "key", "context", "action", "port", "api", "config", "decision",
    "decisions", "done", "why", "how", "what", "when", "where", "problem", "solution", "cause", "reason", "owner's",
    "persona", "identity", "preference", "preferences", "habit", "schedule", "fact", "facts", "insight", "quote",
    "说话风格", "风格", "语气", "教训", "记住", "决定", "决策", "结论", "备注", "注意", "提醒", "规则", "原则",
    "目标", "计划", "问题", "原因", "状态", "进展", "时间", "地点", "身份", "角色", "名字", "人设", "偏好", "习惯",
    "作息", "事实", "要点", "总结", "待办", "经验", "心得", "说明", "背景", "方案", "结果", "下一步",
}
_SPEAKER = re.compile(
    rf"^\s*(?:\*\*|__)?(?P<name>[{LATIN_LETTER}][{LATIN_LETTER} .'’-]{{0,30}}?"
    rf"|[A-Za-z]{{0,3}}\s?[\u4e00-\u9fff·]{{1,8}})"
    # A parenthetical after the name says whom a reply answers ("AI伴侣（回复张曼婷）:"): the speaker is the name.
    r"(?:\s*[（(][^）)\n]{1,24}[）)])?(?:\*\*|__)?"
    r"\s*[:：]\s*(?:\*\*|__)?\s*(?P<body>\S.*)$",
    re.S,
)
# Speech and reply verbs name the speaker without a label: "张曼婷说：…", "张曼婷问道：…", "我回答：…",
# "我对张曼婷说：…", "Caroline said: …", "I replied to Caroline: …", "From Caroline: …", "To Caroline: …".
_ZH_VERBS = ("说道|说|讲|问道|问|答道|回答|答复|回复|回应|回道|答|表示|写道|提到|提及|补充道|补充|告诉我|透露|称|"
             "反馈|抱怨|感叹|分享|分享道|留言|强调|解释道|解释|坦言|吐槽|发来消息|发消息|来信")
_SPEECH_ZH = re.compile(
    rf"^\s*(?:\*\*|__)?(?P<name>[\u4e00-\u9fff·]{{1,6}}?|[{LATIN_LETTER}][{LATIN_LETTER} .'’-]{{0,30}}?)(?:\*\*|__)?\s*"
    rf"(?:(?:对|跟|向|给)\s*(?:我们?|(?P<to1>[\u4e00-\u9fff·]{{2,6}}?"
    rf"|[{LATIN_UPPER}][{LATIN_LETTER} .'’-]{{0,30}}?))\s*)?"
    rf"(?:{_ZH_VERBS})(?:\s*(?P<to2>[\u4e00-\u9fff·]{{2,4}}))?\s*[:：]\s*(?P<body>\S.*)$",
    re.S,
)
# Any other past-tense verb after a name introduces their words too when the words are speech ("Laura mentioned:
# I'm…", "Kevin texted: I'll…"); "Deployment failed: disk full" is not. A name is capitalised, so "Laura mentioned"
# is never a person of that name.
# A label that ends in a speech verb names no speaker we could read ("老师说", "Someone said"): not a name.
_SAYS = re.compile(rf"[\u4e00-\u9fff](?:{_ZH_VERBS})$|^\S+\s+(?:[a-z]+ed|says|asks|said|told)\b")
_TITLE = re.compile(r"(?:Dr|Mr|Mrs|Ms|Prof|Miss)\.?\s+")
_EN_VERBS = (r"said|says|asked|asks|replied|replies|answered|answers|wrote|writes|added|adds|told (?:me|us)|"
             r"explained|mentions|notes|shares|responds|comments|texts|messages|tells (?:me|us)|"
             r"(?P<gen>[a-z]{2,24}ed|told|spoke|thought|felt)")
_SPEECH_EN = re.compile(
    rf"^\s*(?:\*\*|__)?(?P<name>I|(?:{_TITLE.pattern})?{LATIN_NAME}|[\u4e00-\u9fff·]{{2,4}})"
    rf"(?:\*\*|__)?\s*(?:{_EN_VERBS})(?:\s+(?:me|us))?"
    rf"(?:\s+(?:to\s+)?(?P<to1>{LATIN_NAME}))?\s*[:：,]\s*(?P<body>\S.*)$"
    rf"|^\s*(?:\*\*|__)?(?P<dir>From|To|Reply to|Replying to|Message from|Message to)\s+"
    rf"(?P<name2>{LATIN_NAME}|[\u4e00-\u9fff·]{{2,4}})(?:\*\*|__)?\s*[:：]\s*"
    rf"(?P<body2>\S.*)$",
    re.S,
)
_SELF = {"我", "i", "本人", "ai", "助手", "ai伴侣", "assistant"}
_STAMP = re.compile(r"^\s*+(?:[\[(（【]\s*+)?(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}[ T]?)?\d{1,2}:\d{2}(?::\d{2})?"
                    r"(?:\s*+[\])）】])?(?:\s*+[-–—|·])?\s+")
_FIRST_EN = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|our|us)\b", re.I)
_SECOND_EN = re.compile(r"\b(?:you|you're|you've|you'd|you'll|your|yours|yourself)\b", re.I)
_THIRD_EN = re.compile(r"\b(?:he|she|they|his|her|hers|their|him|them)\b", re.I)
_FIRST_ZH, _SECOND_ZH, _THIRD_ZH = re.compile(r"我|咱"), re.compile(r"你|您"), re.compile(r"他|她")
_USER_WORDS = re.compile(r"(?<![\w-])(?:the\s+user|user's|users?|my\s+user|owner|boss)(?![\w-])"
                         r"|用户|您|主人|老板|使用者", re.I)
_AGENT_WORDS = re.compile(
    r"\b(?:the\s+assistant|assistant's|assistant|the\s+agent|agent's|the\s+bot|ai\s+(?:assistant|companion))\b"
    r"|助手|助理|智能体|ai\s?伴侣|机器人", re.I)
_ORDER = re.compile(r"\s*(?:please|pls|from\s+now\s+on|always|never|don'?t|stop|start|use|answer|reply|write|"
                    r"call\s+me|请|麻烦|以后|今后|别|不要|记得)", re.I)
_PERSON_ZH = re.compile(r"[\u4e00-\u9fff]{1,3}(?:老师|医生|先生|女士|经理|主任|教授|同学|阿姨|叔叔|总)")
_USER_HEADING = re.compile(r"用户|\buser|您的|\bowner\b|\babout (?:the )?user", re.I)
_AGENT_HEADING = re.compile(r"人设|性格|身份|说话|\bpersona|\bidentity\b|\bsoul\b|\babout me\b|\bwho i am\b", re.I)


@dataclass(frozen=True)
class Utterance:
    role: Role
    speaker: str | None
    body: str
    """The text without its speaker label."""
    addressee: str | None = None
    """Whom a reply or message is addressed to ("我对张曼婷说：", "To Caroline:"), when the line says so."""


def _person_name(name: str, known: frozenset[str]) -> bool:
    """A speech verb's subject that is a person: a name already speaking, a Chinese personal name, or a
    capitalised English name; "总结说", "他说" or "The plan says" are not."""
    from chronicle.memory.subjects import looks_like_zh_name

    key = name.casefold()
    if key in known:
        return True
    if re.fullmatch(r"[\u4e00-\u9fff·]+", name):
        return looks_like_zh_name(name)
    name = _TITLE.sub("", name)  # "Dr. Smith"
    return bool(re.fullmatch(LATIN_NAME, name)) and key not in _LABELS \
        and key not in {"the", "it", "he", "she", "they", "we", "this", "that", "someone", "everyone"}


def speech(text: str, known: frozenset[str] = frozenset()) -> Utterance | None:
    """The speaker (and addressee) a speech or reply verb names, or None when the line has none."""
    zh, en = _SPEECH_ZH.match(text), _SPEECH_EN.match(text)
    if en and en.group("name2"):
        who, body = en.group("name2"), en.group("body2").strip()
        if en.group("dir") == "From":
            return Utterance("other", who, body) if _person_name(who, known) or who in known else None
        return Utterance("agent", None, body, addressee=who)
    match = zh or en
    if not match:
        return None
    name, body = " ".join(match.group("name").split()), match.group("body").strip()
    to = match.group("to1") or (match.groupdict().get("to2"))
    to = to if to and _person_name(to, known) else None
    key = name.casefold()
    if key in _SELF or key in _AGENT_ROLES:
        return Utterance("agent", name, body, addressee=to)
    if key in _USER_ROLES:
        return Utterance("user", name, body)
    if _person_name(name, known) and (key in known or not match.groupdict().get("gen") or _has_person(body)):
        return Utterance("other", name, body, addressee=to)
    return None


def _has_person(text: str) -> bool:
    return bool(_FIRST_EN.search(text) or _SECOND_EN.search(text) or _FIRST_ZH.search(text)
                or _SECOND_ZH.search(text))


def split_speaker(text: str, known: frozenset[str] = frozenset()) -> Utterance:
    """`Name: text` -> the speaker and their words; a field label ("Tone: calm") or none -> the notes' own voice.

    `known` holds names already seen speaking in the same note (`speakers_of`), so "Gina: Wow, it looks
    great!" is Gina's even without an "I" or "you" in it. A chat log's time stamp before the label ("[10:30]
    孙丽：…", "14:02 - Kate: …") is not part of it.
    """
    stamp = _STAMP.match(text)
    if stamp and stamp.end() < len(text):
        utt = _split(text[stamp.end():], known)
        if utt.role != "own":
            return utt
    return _split(text, known)


def _split(text: str, known: frozenset[str]) -> Utterance:
    spoken = speech(text, known)
    if spoken:
        return spoken
    match = _SPEAKER.match(text)
    if match:
        name = " ".join(match.group("name").split()).strip(" .'’-")
        key, body = name.casefold(), match.group("body").strip()
        if key in _USER_ROLES:
            return Utterance("user", name, body)
        if key in _AGENT_ROLES:
            return Utterance("agent", name, body)
        if key in known or _speaks(name, body):
            return Utterance("other", name, body)
    return Utterance("own", None, text.strip())


def _speaks(name: str, body: str) -> bool:
    """A name is a speaker when its words are spoken ("I"/"you"/"我"/"你"); "Role: assistant…" is a field."""
    return (name.casefold() not in _LABELS and len(name.split()) <= 3 and _has_person(body)
            and not _looks_like_label(name) and not _SAYS.search(name))


def speakers_of(texts: list[str]) -> frozenset[str]:
    """Names that speak somewhere in `texts` (case-folded), to recognise their other lines."""
    out = set()
    for text in texts:
        stamp = _STAMP.match(text)
        text = text[stamp.end():] if stamp and stamp.end() < len(text) else text
        spoken = speech(text)
        if spoken and spoken.role == "other" and spoken.speaker:
            out.add(spoken.speaker.casefold())
            continue
        match = _SPEAKER.match(text)
        if match:
            name = " ".join(match.group("name").split()).strip(" .'’-")
            if _speaks(name, match.group("body")):
                out.add(name.casefold())
    return frozenset(out)


def _looks_like_label(name: str) -> bool:
    """Lower-case English words ("next step", "why") are field labels; speakers' names are capitalised."""
    return bool(re.fullmatch(r"[a-z][a-z .'-]*", name)) or any(label in name for label in _LABELS if len(label) > 1
                                                                  and re.match(r"[\u4e00-\u9fff]", label))


@dataclass(frozen=True)
class Subjects:
    agent: bool
    user: bool


def subjects(utt: Utterance, heading: str = "") -> Subjects:
    """Whether the utterance is about the agent and/or the user.

    - own notes: "I/my/我" is the assistant; "the user/用户/您" or a user heading ("用户偏好") is the user; an
      impersonal line ("Tone: calm", "说话风格：简洁") under no other subject is the assistant's own setting;
      "you/你" in own notes is the assistant being addressed ("用户希望你回答简短").
    - a user's line: "I/我" is the user, "you/你" the assistant; an assistant's line the other way round.
    - anyone else's line is about neither (their "my style" is theirs).
    """
    text = utt.body
    first = bool(_FIRST_EN.search(text) or _FIRST_ZH.search(text))
    second = bool(_SECOND_EN.search(text) or re.search(r"你", text))
    agent_named, user_named = bool(_AGENT_WORDS.search(text)), bool(_USER_WORDS.search(text))
    if utt.role == "other":
        return Subjects(False, False)
    if utt.role == "user":  # "please answer…", "以后…", "请…": an order to the assistant is about it
        return Subjects(agent=second or agent_named or bool(_ORDER.match(text)), user=first or user_named)
    if utt.role == "agent":
        return Subjects(agent=first or agent_named, user=second or user_named)
    third = bool(_THIRD_EN.search(text) or _THIRD_ZH.search(text) or _PERSON_ZH.search(text))
    user = user_named or bool(_USER_HEADING.search(heading))
    agent = first or agent_named or second or bool(_AGENT_HEADING.search(heading))
    if not (user or agent or third):
        agent = True  # an impersonal line in the assistant's own notes: its own setting or rule
    return Subjects(agent=agent, user=user)
