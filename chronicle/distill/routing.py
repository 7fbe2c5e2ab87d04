"""Which knowledge file a note entry belongs to: seed 002's keyword table plus who the entry is about (pure).

Keywords are scored over the entry's headings (weight 2: "行为规则 / Rules" says more than one word in a
sentence) and its text (weight 1); ties go to the table's order, no hit at all means MEMORY.md.

SOUL.md, IDENTITY.md and USER.md describe the agent and its user, so they only take entries about them
(`speaker.subjects`): "my style of answering" in the assistant's notes is SOUL material, "Got any fave styles?"
said by a friend in a transcript is not, and "style" alone ("dance styles") is not about talking at all. A
user saying "我叫张曼婷" is the user's identity (USER.md), not the agent's. Nobody else's "never" is a rule for
the agent (AGENTS.md), and a third party's words reach TOOLS.md only through technical terms.
"""

from __future__ import annotations

import re

from chronicle.distill.chunks import NoteEntry
from chronicle.distill.signals import PREFERENCE
from chronicle.distill.speaker import Subjects, Utterance, split_speaker, subjects

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")

# (file, Chinese tag, English tag, keywords) in seed 002's order.
TABLE: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("TOOLS.md", "工具", "tools", (
        "工具", "api", "配置", "环境变量", "接口", "tool", "config", "configuration", "endpoint", "webhook", "cron",
        "env var", "environment variable",
    )),
    ("AGENTS.md", "规则", "rules", (
        "技能", "行为", "规则", "必须", "不能", "不要", "skill", "behaviour", "behavior", "rule", "always", "never",
        "must",
    )),
    ("SOUL.md", "人设", "persona", (
        "性格", "说话方式", "语气", "人设", "persona", "tone", "personality",
    )),
    ("USER.md", "偏好", "preferences", (
        "偏好", "习惯", "作息", "喜欢", "prefer", "preference", "habit", "schedule", "like", "love", "favorite",
        "favourite", "爱好", "兴趣", "讨厌", "生日", "birthday",
    )),
    ("IDENTITY.md", "身份", "identity", ("名字", "角色", "身份", "我叫", "name", "role", "identity")),
)  # fmt: skip
DEFAULT_FILE = "MEMORY.md"
TOOLS, AGENTS, SOUL, USER, IDENTITY = range(5)

# "style" / "风格" is persona material only when it is about how one talks or writes.
_STYLE = ("风格", "style")
_TALK = re.compile(r"answer|repl(?:y|ies)|respon|speak|talk|writ|communicat|messag|explain|voice|wording|emoji|"
                   r"说话|回答|回复|表达|写作|沟通|措辞|用语|文风|讲话|聊天|结论|语言", re.I)
_WEAK_TOOLS = ("工具", "tool", "config", "configuration")
_YOUR_NAME = re.compile(r"你叫|你的名字|your name|you(?:'re| are) called", re.I)


def keyword_hits(keywords: tuple[str, ...], text: str) -> int:
    """Occurrences of `keywords` in `text`: substrings for Chinese, whole words for English.

    Chinese "A不A" questions are no negation: "要不要" holds no "不要", "能不能" no "不能".
    """
    lowered = re.sub(r"(\w)不\1", " ", text.lower())
    count = 0
    for kw in keywords:
        if _CJK.match(kw[0]):
            count += lowered.count(kw)
        else:  # whole English words with plural/past endings: "tools" yes, "rapid" or "role-based" no
            count += len(re.findall(rf"(?<![a-z]){re.escape(kw)}(?:s|es|d|ed)?(?![a-z-])", lowered))
    return count


def _scores(utt: Utterance, heading: str, who: Subjects) -> list[int]:
    def hits(i: int, keywords: tuple[str, ...] | None = None) -> int:
        words = keywords if keywords is not None else TABLE[i][3]
        return 2 * keyword_hits(words, heading) + keyword_hits(words, utt.body)

    scores = [hits(i) for i in range(len(TABLE))]
    scores[USER] += len(PREFERENCE.findall(utt.body))  # "我一般会…", "只要美式", "allergic": habits and tastes
    if _TALK.search(utt.body) or _TALK.search(heading) or keyword_hits(TABLE[SOUL][3], heading):
        scores[SOUL] += hits(SOUL, _STYLE)
    if utt.role == "other":
        scores[TOOLS] -= hits(TOOLS, _WEAK_TOOLS)
        scores[AGENTS] = 0  # someone else's "never" or "must" is not a rule for the agent
    if utt.role == "user" and not _YOUR_NAME.search(utt.body):
        scores[USER] += scores[IDENTITY]  # the user's own name or role belongs to the user's profile
        scores[IDENTITY] = 0
    if who.user and not who.agent and utt.role in ("own", "user"):
        scores[USER] += scores[AGENTS]  # "王老师周末不处理工作": the user's habit, not the agent's rule
        scores[AGENTS] = 0
    if not who.agent:
        scores[SOUL] = scores[IDENTITY] = 0
    if not who.user:
        scores[USER] = 0
    return scores


def route(text: str, heading: str = "", known_speakers: frozenset[str] = frozenset(),
          about_user: bool = False) -> tuple[str, int]:
    """(knowledge file, index in TABLE or -1 for the default) of a text under a heading.

    `about_user`: the entry's subject is the user by name (USER.md's name, e.g. a section "## 关于王老师" when
    USER.md says 名字：王老师): their habits and wishes are the user's profile, as under a "用户偏好" heading."""
    utt = split_speaker(text, known_speakers)
    who = subjects(utt, heading)
    scores = _scores(utt, heading, Subjects(agent=who.agent, user=True) if about_user else who)
    best, best_score = -1, 0
    for i, score in enumerate(scores):
        if score > best_score:
            best, best_score = i, score
    return (TABLE[best][0] if best >= 0 else DEFAULT_FILE), best


def target_file(entry: NoteEntry, known_speakers: frozenset[str] = frozenset(),
                about_user: bool = False) -> tuple[str, int]:
    """(knowledge file, index in TABLE or -1 for the default) of a note entry."""
    return route(entry.content, " ".join(entry.heading_path), known_speakers, about_user)
