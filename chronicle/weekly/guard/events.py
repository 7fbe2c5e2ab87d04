"""Event types a sentence asserts or denies, without a number ("发生 SAE", "出现方案偏离", "no deviations").

Works on `text.canonical` text (lower case). A mention is *denied* when a negation word stands shortly before
it in the same clause ("无 AE/SAE", "未发生严重不良事件", "no new protocol deviations"), else *asserted*.
"Did not meet SAE criteria" style phrases (未达/不构成/not meet) neither assert nor deny.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# stats key -> (words that name the event, entry types that support a sentence about it)
EVENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "sae": (r"(?<![a-z])saes?(?![a-z])|严重不良事件|serious\s+adverse\s+events?", ("sae",)),
    "ae": (r"(?<![a-z])aes?(?![a-z])|(?<!严重)不良事件|(?<!serious )adverse\s+events?", ("ae", "sae")),
    "deviations": (r"偏离|(?<![a-z])deviations?(?![a-z])|超窗", ("deviation",)),
    "enrolled": (r"(?<!累计)(?<!共)入组(?!标准|条件|率)|(?<![a-z])(?:enrol{1,2}(?:ed|ment|s)?|randomi[sz]ed)(?![a-z])",
                 ("enrollment",)),
    "decisions": (r"决定|决策|(?<![a-z])(?:decided|decisions?)(?![a-z])", ("decision",)),
}
_COMPILED = {key: re.compile(words) for key, (words, _) in EVENTS.items()}
_CLAUSE = re.compile(r"[,，、()（）:：]|\band\b|\bbut\b")
_NEGATION = re.compile(r"(?:无|没有|未|未曾|否认|(?<![a-z])(?:no|not|none|without|never)(?![a-z])|n't)"
                       r"(?:[^,，。;；]{0,8}?)$")
_NOT_DENIAL = re.compile(r"未达|未构成|不构成|不属于|not\s+(?:meet|qualify|an?\b)|无关|未见异常")


def mentions(canonical_text: str, skip: Iterable[str] = ()) -> dict[str, bool]:
    """{stats key: asserted?} for each event type the text mentions (True = asserted, False = denied;
    asserted wins when both occur). `skip`: keys whose counts the count rules already checked."""
    found: dict[str, bool] = {}
    for clause in _CLAUSE.split(canonical_text):
        for key, pattern in _COMPILED.items():
            if key in skip:
                continue
            for m in pattern.finditer(clause):
                # Only the clause's last characters can hold the negation (`_NEGATION` ends with at most 8 more):
                # searching the whole prefix made a long clause quadratic (minutes for a 20,000-character edit).
                before = clause[max(0, m.start() - 24): m.start()]
                # "无 AE/SAE": the negation of the first word covers the ones joined to it by "/".
                denied = bool(_NEGATION.search(before)) and not _NOT_DENIAL.search(clause)
                found[key] = found.get(key, False) or not denied
    return found


def supports(key: str, entry_type: str, entry_text: str) -> bool:
    """Whether one cited entry can back a sentence about event `key`: its type, or its words."""
    return entry_type in EVENTS[key][1] or _COMPILED[key].search(entry_text) is not None


# A safety event named anywhere in a raw log line, denied or not: a line the ingest refused cannot be judged, so any
# mention counts. Letters, digits and `_` bound the short words, so a hex id (`…2ae1…`) or `maes` is not one.
_SAFETY = re.compile(r"(?<![a-z0-9_])s?aes?(?![a-z0-9_])|不良事件|adverse\s+(?:events?|reactions?)|susars?",
                     re.IGNORECASE)


SAFETY_HINT = r"(?i)ae|不良事件|adverse|susar"
"""A cheap superset of `names_safety_event` for SQL's `regexp_matches`, so the rule runs on few lines."""


def names_safety_event(raw: str) -> bool:
    """Whether a raw log line (as refused, JSON or CSV or prose) names an SAE, AE or SUSAR: `"type": "sae"` or the
    words, in Chinese or English."""
    return _SAFETY.search(raw) is not None
