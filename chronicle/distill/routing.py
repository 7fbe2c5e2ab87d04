"""Which knowledge file a note entry belongs to: seed 002's keyword table, in Chinese and English (pure).

Keywords are scored over the entry's headings (weight 2: "行为规则 / Rules" says more than one word in a
sentence) and its text (weight 1); ties go to the table's order, no hit at all means MEMORY.md.
"""

from __future__ import annotations

import re

from chronicle.distill.chunks import NoteEntry

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
        "性格", "风格", "说话方式", "语气", "人设", "persona", "tone", "style", "personality",
    )),
    ("USER.md", "偏好", "preferences", (
        "偏好", "习惯", "作息", "喜欢", "prefer", "preference", "habit", "schedule", "like",
    )),
    ("IDENTITY.md", "身份", "identity", ("名字", "角色", "身份", "我叫", "name", "role", "identity")),
)  # fmt: skip
DEFAULT_FILE = "MEMORY.md"


def keyword_hits(keywords: tuple[str, ...], text: str) -> int:
    """Occurrences of `keywords` in `text`: substrings for Chinese, whole words for English."""
    lowered = text.lower()
    count = 0
    for kw in keywords:
        if _CJK.match(kw[0]):
            count += lowered.count(kw)
        else:  # whole English words with plural/past endings: "tools" yes, "rapid" or "role-based" no
            count += len(re.findall(rf"(?<![a-z]){re.escape(kw)}(?:s|es|d|ed)?(?![a-z-])", lowered))
    return count


def target_file(entry: NoteEntry) -> tuple[str, int]:
    """(knowledge file, index in TABLE or -1 for the default) by weighted keyword hits."""
    heading = " ".join(entry.heading_path)
    best, best_score = -1, 0
    for i, (_, _, _, keywords) in enumerate(TABLE):
        score = 2 * keyword_hits(keywords, heading) + keyword_hits(keywords, entry.content)
        if score > best_score:
            best, best_score = i, score
    return (TABLE[best][0] if best >= 0 else DEFAULT_FILE), best
