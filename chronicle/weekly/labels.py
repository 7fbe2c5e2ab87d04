"""What people read for the pipeline's internal names: entry types (`monitoring`), stats keys (`enrolled_total`) and
review reasons (`omitted_event`), in Chinese and English — the one mapping the offline engine's reports and the
review desk share.

A clinician reads "监查 2 条", not "monitoring 2 条". A type the mapping does not know (a site's own entry type)
reads as itself: it is the word the site chose, and inventing a translation would say something the log did not.
"""

from __future__ import annotations

from collections.abc import Sequence

from chronicle.weekly.model import EMPTY_MODEL, OFFLINE_MODEL
from chronicle.weekly.tokens import is_chinese

TYPE_LABELS: dict[str, tuple[str, str]] = {
    "message": ("消息", "messages"),
    "enrollment": ("入组", "enrolments"),
    "ae": ("AE", "AEs"),
    "sae": ("SAE", "SAEs"),
    "deviation": ("方案偏离", "protocol deviations"),
    "query": ("Query", "queries"),
    "decision": ("PI 决策", "PI decisions"),
    "monitoring": ("监查", "monitoring visits"),
    "visit": ("访视", "subject visits"),
}
"""Entry type -> (Chinese, English) label; the English one is what a count counts ("2 monitoring visits")."""

STAT_LABELS: dict[str, tuple[str, str]] = {
    "entries": ("记录", "log entries"),
    "enrolled": ("本周入组", "enrolled this week"),
    "enrolled_total": ("累计入组", "enrolled in total"),
    "ae": ("AE", "AE"),
    "sae": ("SAE", "SAE"),
    "deviations": ("方案偏离", "protocol deviations"),
    "queries": ("Query", "queries"),
    "decisions": ("PI 决策", "PI decisions"),
    "messages": ("消息", "messages"),
    "by_type": ("按类型", "by entry type"),
    "by_actor": ("按记录人", "by who wrote it"),
}
"""Stats key (chronicle/weekly/stats.py) -> (Chinese, English) label."""


EVENT_NOUNS: dict[str, str] = {"sae": "SAE", "ae": "AE", "deviations": "protocol deviation", "enrolled": "enrolment",
                               "decisions": "decision"}
"""Stats key of an event -> the English noun of one such event ("asserts an SAE", "about a protocol deviation"), as the
guard's review reasons name it."""

REASON_LABELS: dict[str, str] = {
    "uncited": "no citation",
    "unknown_citation": "cites an entry the week does not have",
    "invented_event": "an event the log does not count",
    "denied_event": "denies what the log counts",
    "omitted_event": "leaves out an event",
    "unsupported_name": "a name its cited entries do not have",
    "citation_mismatch": "its cited entries are about something else",
}
"""Review reason kind (chronicle/weekly/faithfulness.py, guard/) -> what a reviewer reads at the head of its line."""


def reason_label(kind: str) -> str:
    return REASON_LABELS.get(kind, kind.replace("_", " "))


def _pick(labels: tuple[str, str], lang: str) -> str:
    return labels[0] if lang == "zh" else labels[1]


def type_label(entry_type: str, lang: str) -> str:
    """The entry type as a reader of a `lang` ("zh" or "en") report calls it."""
    found = TYPE_LABELS.get(entry_type)
    return _pick(found, lang) if found else entry_type


def stat_label(key: str, lang: str) -> str:
    """The stats key as a reader of a `lang` report calls it."""
    found = STAT_LABELS.get(key)
    return _pick(found, lang) if found else key.replace("_", " ")


def language_of_text(texts: Sequence[str]) -> str:
    """`zh` for mainly Chinese text (the report engines' own rule), else `en`."""
    return "zh" if is_chinese(list(texts)) else "en"


def engine_label(model: str) -> str:
    """Who wrote a generated text, as a reader says it: a week without entries has a fixed text, no engine."""
    if model == EMPTY_MODEL:
        return "fixed text, no entries"
    if model == OFFLINE_MODEL:
        return "offline engine (no LLM)"
    return f"LLM {model}"
