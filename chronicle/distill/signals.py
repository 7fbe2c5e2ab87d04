"""Does a note entry carry knowledge, and how much? Small talk, questions and importance signals (pure).

An entry is cut into sentences (a Chinese question's leading clauses count on their own: "我很喜欢绘画，你觉得
呢？" states a preference). Greetings, thanks, backchannel ("ok", "好的", "sounds great"), reactions to the other
speaker ("You'd be a great counselor!") and questions carry no knowledge; what remains is scored:

    0.30 base, + signals found in the remaining sentences (each counted once):
    remember / 记住 0.35 · decision 0.30 · rule 0.30 (not for third parties' "never") · preference 0.30 ·
    request ("please", "希望你") 0.30 · plan or goal 0.30 · first-person fact 0.20 · own name ("我叫") 0.20 ·
    about the agent or user (routed to SOUL/IDENTITY/USER) 0.20 · lesson 0.20 · time or schedule 0.15 ·
    technical detail 0.15 · field statement ("Tone: …", "说话风格：…") 0.15 · key heading 0.15 · date 0.10 ·
    number 0.10 · proper name 0.10 · done ✅ 0.05 · in progress ⏳ -0.10;
    clamped to [0.1, 1.0]. Only small talk -> 0.15, only questions -> 0.20.

With the default `CHRONICLE_KNOWLEDGE_MIN_IMPORTANCE` of 0.6 one strong signal on top of the base is not enough
for a knowledge file unless it is a rule, decision, preference or "remember" (0.6), or two weaker ones meet
(a first-person fact with a date: 0.65).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from chronicle.distill.speaker import Role

Kind = Literal["fact", "chatter", "question"]
BASE, CHATTER_SCORE, QUESTION_SCORE = 0.30, 0.15, 0.20

WEIGHTS: dict[str, float] = {
    "remember": 0.35, "decision": 0.30, "rule": 0.30, "preference": 0.30, "request": 0.30, "plan": 0.30,
    "first_person_fact": 0.20, "own_name": 0.20, "profile": 0.20, "lesson": 0.20, "time": 0.15,
    "technical": 0.15, "field": 0.15, "key_heading": 0.15, "date": 0.10, "number": 0.10, "name": 0.10,
    "done": 0.05, "pending": -0.10,
}

# "." ends a sentence only before a space ("v0.3.0", "7.30", URLs stay whole).
_SENTENCES = re.compile(r"(?<=[!?。！？…~])\s*|(?<=\.)\s+|\n+|(?<=[;；])\s*")
_GREETING = re.compile(
    r"^(?:hi|hey|hello|yo|howdy|heya|hiya|good\s+(?:morning|afternoon|evening|night)|long\s+time\s+no\s+(?:see|talk)"
    r"|(?:nice|good|great|so\s+good)\s+to\s+(?:see|hear\s+from|meet|chat\s+with|talk\s+to)\s+you"
    r"|how\s+(?:are|have)\s+you|how's\s+it\s+going|what's\s+up|what's\s+new|since\s+we\s+last\s+(?:chatted|talked))\b"
    r"|^(?:你好|您好|嗨|哈喽|早上好|早安|晚上好|晚安|下午好|中午好|好久不见|很高兴(?:认识|见到|和)你|"
    r"又来和你聊天|我又来)", re.I)
_THANKS = re.compile(r"^(?:thanks?|thank\s+you|thx|ty|many\s+thanks|much\s+appreciated|appreciate\s+(?:it|that|your)"
                     r"|cheers)\b|^(?:谢谢|多谢|感谢|不客气|不用谢|没关系|没事)", re.I)
_BACKCHANNEL = re.compile(
    r"^(?:ok(?:ay)?|sure|yes|yeah|yep|yup|no|nope|right|cool|nice|great|awesome|amazing|wow|whoa|woah|oh|ah|aw+|"
    r"haha+|lol|hmm+|indeed|exactly|totally|absolutely|definitely|of\s+course|same\s+here|me\s+too|agreed|true|"
    r"got\s+it|i\s+see|makes\s+sense|sounds\s+(?:good|great|fun|awesome|amazing|lovely|cool|like|interesting)|"
    r"congrats|congratulations|good\s+luck|well\s+done|way\s+to\s+go|keep\s+(?:it\s+up|going)|you\s+got\s+this|"
    r"we\s+(?:got\s+this|can\s+do\s+(?:it|this))|take\s+care|bye|see\s+you|talk\s+(?:to\s+you\s+)?(?:soon|later)|"
    r"catch\s+you\s+later|let'?s\s+(?:keep|go|do|get|make|chase|celebrate|boogie|explore|rock|hang|stay)|glad\s+(?:to\s+hear|it\s+helped|you)|so\s+glad|love\s+(?:that|this|it|the|your)|"
    r"(?:that|this|it)(?:'s|\s+is|\s+was|\s+looks|\s+sounds)\s+(?:so\s+|really\s+|very\s+|pretty\s+|super\s+|"
    r"totally\s+)?(?:great|cool|awesome|amazing|nice|sweet|wonderful|fantastic|interesting|fun|true|right|good|"
    r"tough|hard|lovely|inspiring|impressive|exciting|kind|beautiful|gorgeous|adorable|incredible|special))\b"
    r"|^(?:好的|好吧|好呀|好啊|嗯+|哦+|啊+|哈+|是的|对的|对啊|没错|当然|可以|行|收到|明白|了解|知道了|好主意|"
    r"太好了|太棒了|真棒|真好|不错|厉害|加油|哇塞?|棒|有道理|原来如此|听起来(?:不错|很棒|很好|挺好|真好|很有趣)|"
    r"说得(?:对|好)|再见|拜拜|回头聊|真是太|那太好|好想)", re.I)
_QUESTION_START = re.compile(
    r"^(?:what|how|why|when|where|who|which|whose|do|does|did|are|is|was|were|have|has|can|could|would|will|"
    r"should|any|anything|got\s+any|wanna|want\s+to|ever)\b", re.I)
_FIRST = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|we|we're|we've|our)\b|我|咱", re.I)
_SECOND = re.compile(r"\b(?:you|you're|you've|you'd|you'll|your|yourself)\b|你|您", re.I)
_FEELING = re.compile(
    r"\b(?:i'm|i\s+am|i\s+was|i\s+feel|i\s+felt|we're|we\s+are)\s+(?:so\s+|really\s+|very\s+|super\s+|pretty\s+|"
    r"just\s+|totally\s+)?(?:happy|glad|excited|proud|thrilled|sorry|grateful|thankful|touched|stoked|pumped|"
    r"moved|amazed|impressed|blessed|lucky|honored|honoured|sure|down|in|up\s+for)\b", re.I)

_REMEMBER = re.compile(r"\bremember\b|\bdon'?t\s+forget\b|\bkeep\s+in\s+mind\b|\bnote\s+to\s+self\b|"
                       r"记住|记得|别忘|不要忘|牢记|备忘", re.I)
_DECISION = re.compile(r"\b(?:decided|decision|decide|agreed|chose|chosen|switched\s+to|switch\s+to|going\s+forward|"
                       r"settled\s+on|approved|will\s+use|moved\s+to)\b|决定|决策|定了|确定|改为|改成|切到|换成|采用|"
                       r"选定|选择了|同意", re.I)
_RULE = re.compile(r"\b(?:must|never|always|don'?t|do\s+not|should|shouldn'?t|avoid|rule|policy|required|only\s+ever|"
                   r"no\s+\w+\s+(?:after|before))\b|必须|务必|不能|不要|禁止|规则|原则|一律|不得|应当|应该|只能|"
                   r"宁可|避免|固定", re.I)
PREFERENCE = re.compile(
    r"\b(?:prefer|prefers|preferred|preference|like\s+to|likes|love\s+to|loves|love\s+(?:all|\w+ing)|"
    r"favou?rite|fave|top\s+pick|hate|hates|dislike|dislikes|can'?t\s+stand|enjoy|enjoys|passionate\s+about|"
    r"keen\s+on|into\s+\w+ing|go-to|habit|usually|routine|allergic)\b|偏好|喜欢|最爱|讨厌|习惯|一般会|一般都|"
    r"我一般|平时|通常|经常|只要|爱好|兴趣|不吃|不喝|过敏|爱吃|爱喝|爱看|爱听", re.I)
_REQUEST = re.compile(r"\b(?:wants?\s+(?:me|you)\s+to|asked\s+(?:me|you)\s+to|please|would\s+like\s+(?:me|you)\s+to)"
                      r"\b|希望你|希望我|要求|请你|请务必|麻烦你", re.I)
_PLAN = re.compile(r"\b(?:i|we)(?:'m|\s+am|'re|\s+are)?\s+(?:gonna|going\s+to|planning|thinking\s+(?:of|about))\b|"
                   r"\b(?:my|our)\s+(?:goal|plan|dream)\s+(?:is|was)\b|\bbeen\s+(?:a\s+dream|dreaming\s+of)|"
                   r"\b(?:plan|hope|aim|intend)\s+to\b|打算|计划|准备|目标|梦想|想要", re.I)
_OWN_NAME = re.compile(r"\bmy\s+name\s+is\b|\bcall\s+me\b|\bi'?m\s+called\b|我叫|我的名字|名字(?:是|叫)", re.I)
_LESSON = re.compile(r"\b(?:lesson|learned|learnt|takeaway|insight|gotcha|pitfall)\b|教训|经验|心得|踩坑", re.I)
_FACT_VERB = re.compile(
    r"\b(?:i|we)(?:'m|'ve|'d|'ll|\s+am|\s+have|\s+had|\s+was|\s+were|\s+will|\s+just|\s+recently|\s+finally|"
    r"\s+also|\s+still)?\s+(?:a|an|the|from|in|at|working|studying|starting|started|moving|moved|going\s+to|"
    r"gonna|planning|plan|work|works|live|lived|got|get|went|go|started|bought|adopted|joined|lost|quit|opened|"
    r"launched|finished|graduated|ran|run|painted|visited|took|signed|began|won|made|built|wrote|read|learned|"
    r"volunteer|volunteered|teach|taught|play|played|have|has|been|own|married|divorced|born|grew)\b"
    r"|\b(?:my|our)\s+[a-z]+|我(?:是|在|有|叫|的|家|去了|去过|买了|开始|打算|计划|准备|正在|最近|刚|已经|学了|做了|"
    r"参加|一般|每天|会|想去|还想)|我们(?:是|在|有|的|家|去了)", re.I)
# A number starts where its digits start (`(?<!\d)`): tried inside a long run of digits, it was quadratic.
_TIME = re.compile(
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|weekday|yesterday|today|tomorrow|"
    r"tonight|morning|evening|night|noon|midnight|daily|weekly|monthly|every\s+\w+|last\s+(?:week|month|year|"
    r"night|\w+day)|next\s+(?:week|month|year|\w+day)|ago|\d{1,2}\s*(?:am|pm)|\d{1,2}:\d{2})\b"
    r"|周[一二三四五六日天末]|星期|每天|每周|每月|每晚|早上|上午|中午|下午|晚上|凌晨|昨天|今天|明天|后天|"
    r"下周|上周|去年|明年|今年|月底|月初|(?<!\d)\d+\s*点|\d{1,2}:\d{2}"
    r"|(?<![一二三四五六七八九十\d])[一二三四五六七八九十\d]+月[\d一二三四五六七八九十]+[日号]",
    re.I)
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|"
                   r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\s+\d{1,2}(?:st|nd|rd|th)?\b|"
                   r"\d{4}\s*年|\d{1,2}\s*月\s*\d{1,2}\s*[日号]", re.I)
_NUMBER = re.compile(r"(?<![\d:.-])\d+(?:[.,]\d+)?(?![\d:-])|"
                     r"[一二三四五六七八九十百千万两]+\s*(?:个|种|次|天|年|岁|人|例|本|部|首|分钟|小时|公里|周|月)|\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|"
                     r"twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|"
                     r"fifty|hundred|thousand|million)\b", re.I)
_TECH = re.compile(r"`[^`]+`|https?://|\b[A-Z][A-Z0-9_]{2,}=|\bv?\d+\.\d+(?:\.\d+)+\b|\bport\s+\d+|:\d{4,5}\b|"
                   r"\b(?:api|sdk|cli|json|yaml|docker|config|endpoint|webhook|cron|token|env)\b", re.I)
_NAME_EN = re.compile(r"(?<=[a-z,;:]\s)(?:[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*|[A-Z]{2,}[0-9]*|[A-Z][a-z]+[A-Z]\w+)"
                      r"|\b[A-Z]{2,}[0-9]+\b|\b[A-Z][a-z]+[A-Z]\w+")
_VOCATIVE = re.compile(r"(?:^|(?<=[!?.] )|\b(?:hey|hi|hello|thanks|thank\s+you|wow|whoa|woah|congrats|sorry|bye|yeah|"
                       r"yes|yep|oh|aw+|cool|great|awesome|sure|totally|absolutely|definitely|haha|ha),?\s+)"
                       r"[A-Z][a-z]+(?=\s*[,!?.;]|\s*$)", re.I)
_NAME_ZH = re.compile(r"《[^》]+》|「[^」]+」|“[^”]+”|\"[^\"]+\"|[A-Z]{2,}\d*")
_NOT_NAMES = {"I", "I'm", "I've", "I'd", "I'll", "OK", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
              "Saturday", "Sunday", "Mom", "Dad", "Mel", "God", "AI"}
_FIELD = re.compile(r"^\s*+(?:\*\*)?[\w\u4e00-\u9fff /&-]{1,16}(?:\*\*)?\s*[:：]\s*\S")
_KEY_HEADING = re.compile(r"key (?:insight|decision|lesson)s?|decisions?|lessons?|important|rules?|决策|决定|教训|"
                          r"重要|原则|规则", re.I)
_DONE, PENDING = re.compile(r"✅|\bdone\b|完成"), re.compile(r"⏳|🚧|\bTODO\b|待办|进行中", re.I)


@dataclass
class Analysis:
    kind: Kind
    facts: list[str] = field(default_factory=list)
    """The sentences that carry something (not small talk, not questions)."""
    signals: list[str] = field(default_factory=list)
    score: float = BASE


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCES.split(text) if s and s.strip(" \t-*>…~")]


_VOCATIVE_AFTER = re.compile(r"^((?:\w++\s*+){0,3}),\s*[A-Z][a-z]+(?=\s*[!,.?])")


def _strip_vocative(sentence: str) -> str:
    """"Wow, Caroline! That's…" -> "Wow! That's…": an addressee's name is not content."""
    # Possessive: a word is taken whole, never split between the repeats (cubic in a long run of digits).
    return _VOCATIVE_AFTER.sub(r"\1", sentence)


def is_small_talk(sentence: str, role: Role) -> bool:
    """Greeting, thanks, backchannel, or a reaction to the other speaker ("You'd be a great counselor!")."""
    s = _strip_vocative(sentence.strip(" \"'*-—–~…"))
    plain = re.sub(r"^[\W_]+", "", s)
    if _GREETING.search(plain) or _THANKS.search(plain) or _BACKCHANNEL.search(plain):
        # "Thanks! I ran the race last Saturday" is split already; what is left after the phrase must be small.
        rest = re.sub(r"^[^,，!！.。]*[,，!！.。]?", "", plain).strip()
        return not rest or (len(rest.split()) <= 6 and not _substantive(rest))
    if role in ("other", "agent") and _SECOND.search(s) and not _FIRST.search(s) and not _substantive(s):
        return True  # compliments and encouragement addressed to the other speaker
    return bool(_FEELING.search(s)) and not _substantive(re.sub(_FEELING, "", s))


def _substantive(text: str) -> bool:
    return bool(_DATE.search(text) or _NUMBER.search(text) or _names(text) or _TECH.search(text)
                or _FACT_VERB.search(text) or PREFERENCE.search(text) or _DECISION.search(text)
                or _REMEMBER.search(text))


def is_question(sentence: str) -> bool:
    s = sentence.strip()
    return s.endswith(("?", "？")) or (bool(_QUESTION_START.match(s)) and not s.endswith((".", "。", "!", "！")))


def _names(text: str, speakers: frozenset[str] = frozenset()) -> list[str]:
    """Proper names, without addressees ("Thanks, Mel.", "…too, Caroline."): whom one talks to is not content.
    The note's speakers (and short forms of their names: "Mel", "Caro") are addressees, not names."""
    found = [m.group(0) for m in _NAME_EN.finditer(_VOCATIVE.sub(" ", text))]
    found += [m.group(0) for m in _NAME_ZH.finditer(text)]
    return [n for n in found if n.split()[0] not in _NOT_NAMES and not _is_speaker(n, speakers)]


def _is_speaker(name: str, speakers: frozenset[str]) -> bool:
    key = name.casefold()
    return any(s == key or (len(key) >= 3 and s.startswith(key)) for s in speakers)


def _question_lead(sentence: str) -> str | None:
    """The statement before a question's last clause ("我很喜欢绘画，你觉得呢？" -> "我很喜欢绘画")."""
    parts = re.split(r"[，,]\s*", sentence)
    lead = "，".join(parts[:-1]).strip()
    return lead if lead and _FIRST.search(lead) and _substantive(lead) else None


def _drop_small_clauses(sentence: str, role: Role) -> str:
    """A Chinese sentence without its small-talk clauses: "你好，我叫张曼婷，很高兴认识你" -> "我叫张曼婷"; a bare
    name clause between them is an addressee ("你好，张曼婷，…")."""
    clauses = re.split(r"(?<=[，,])", sentence)
    if len(clauses) < 2 or not re.search(r"[\u4e00-\u9fff]", sentence):
        return sentence
    kept = [c for c in clauses
            if not is_small_talk(c.rstrip("，, "), role) and not re.fullmatch(r"[\u4e00-\u9fff]{2,4}[，,]?", c.strip())]
    return "".join(kept).strip("，, ") or sentence


def analyse(text: str, role: Role = "own", heading: str = "", *, profile: bool = False,
            speakers: frozenset[str] = frozenset()) -> Analysis:
    """Kind of the entry, its knowledge-bearing sentences, the signals found and the importance score.

    `profile`: the router found the entry to be about the agent or the user (SOUL/IDENTITY/USER material);
    `speakers`: names speaking in the same note (`speaker.speakers_of`), whose mentions are addressees.
    """
    facts: list[str] = []
    questions = 0
    for whole in sentences(text):
        sentence = _drop_small_clauses(whole, role)
        if is_small_talk(sentence, role):
            continue
        if is_question(sentence):
            questions += 1
            lead = _question_lead(sentence)
            if lead:
                facts.append(lead)
        else:
            facts.append(sentence)
    if not facts:
        kind: Kind = "question" if questions else "chatter"
        return Analysis(kind, [], [], QUESTION_SCORE if questions else CHATTER_SCORE)
    found = found_signals(" ".join(facts), role, heading, field_form=bool(_FIELD.match(text)) and role == "own",
                          speakers=speakers)
    if profile:
        found.append("profile")
    score = BASE + sum(WEIGHTS[s] for s in found)
    return Analysis("fact", facts, found, round(min(1.0, max(0.1, score)), 2))


def found_signals(body: str, role: Role, heading: str = "", *, field_form: bool = False,
                  speakers: frozenset[str] = frozenset()) -> list[str]:
    """Names of the signals present in `body` (see the module docstring for weights)."""
    no_times = _DATE.sub(" ", _TIME.sub(" ", body))
    checks = {
        "remember": _REMEMBER.search(body),
        "decision": _DECISION.search(body),
        "rule": role != "other" and _RULE.search(body),  # a third party's "I'll never forget" is no rule
        "preference": PREFERENCE.search(body),
        "request": _REQUEST.search(body),
        "plan": _PLAN.search(body),
        "first_person_fact": _FACT_VERB.search(body) and not _FEELING.fullmatch(body),
        "own_name": role != "agent" and _OWN_NAME.search(body),
        "lesson": _LESSON.search(body) or _LESSON.search(heading),
        "time": _TIME.search(body),
        "technical": _TECH.search(body),
        "field": field_form,
        "key_heading": _KEY_HEADING.search(heading),
        "date": _DATE.search(body),
        "number": _NUMBER.search(no_times),
        "name": _names(body, speakers),
        "done": _DONE.search(body) or _DONE.search(heading),
        "pending": PENDING.search(body),
    }
    return [name for name, hit in checks.items() if hit]
