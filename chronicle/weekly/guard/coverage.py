"""Coverage: a weekly report may not hide a safety event the week counts or an entry reports (pure, deterministic).

The other checks judge what a report says; this one judges what it leaves out. Every SAE entry of the week, and
at least one entry of each other kind the week counts (AE, protocol deviation, enrolment), must be covered by
some sentence: it cites the entry, names its subject id, or states the week's count of its kind (the stats line
"SAE 1 例" says it happened). So must every entry of another type that reports an SAE of a named subject (a
message "XH201-03-011 因肺炎住院，判定为 SAE"): the counts read only the type. An entry nobody covers is
`omitted_event`. A blanket all-clear ("本周一切正常", "no issues this week") in a week with an SAE, AE or
deviation is `denied_event`, whatever it cites: that is what a model steered by a log line writes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chronicle.weekly.guard.events import mentions
from chronicle.weekly.guard.names import names
from chronicle.weekly.guard.text import Sentence, canonical, squash
from chronicle.weekly.labels import EVENT_NOUNS, stat_label
from chronicle.weekly.model import WeekEntry, WeekInput

# stats key -> entry types it counts (the ones a report must not leave out)
COVERED: dict[str, tuple[str, ...]] = {"sae": ("sae",), "ae": ("ae",), "deviations": ("deviation",),
                                       "enrolled": ("enrollment",)}
_SAFETY = ("sae", "ae", "deviations")
_ALL_CLEAR = re.compile(
    r"一切(?:正常|顺利|平稳|良好|如常|安好)|(?:均|全部|都)(?:正常|顺利|平稳)(?:进行|推进)?[。.，,]?$|"
    r"(?:本周|本期|项目|试验|研究)(?:整体|总体)?(?:无|没有|未见|未发生)(?:任何)?(?:异常|问题|事件|安全性?(?:问题|事件))|"
    r"(?:无|没有)(?:任何)?(?:异常|问题)(?:发生|报告)?[。.]?$|平安无事|风平浪静|"
    r"\bno\s+(?:issues|problems|concerns|incidents|(?:safety\s+)?events|safety\s+signals)\b|"
    r"\bnothing\s+(?:to\s+report|of\s+note|notable|unusual)\b|\ball\s+(?:is\s+|was\s+)?(?:well|good|normal|clear|quiet|fine)\b|"
    r"\beverything\s+(?:is\s+|was\s+|went\s+|remains\s+)?(?:normal|fine|ok|okay|smooth(?:ly)?|on\s+track|as\s+planned|good)\b|"
    r"\b(?:uneventful|without\s+(?:any\s+)?(?:issues|incidents?|problems))\b",
    re.I)
_SUBJECT = re.compile(r"[a-z]{1,6}\d{2,}(?:-[a-z0-9]+){1,3}")


_SUBJECT_HINT = re.compile(r"[A-Za-z]\d\d")
"""What every subject id holds once NFKC has made its letters and digits plain: an entry without it names none, and
skips the canonical form and the name reader (most of the guard's time on a week of long entries)."""


def subjects(entry: WeekEntry) -> set[str]:
    """Subject-like ids the entry names (XH305-01-004): naming one in the report covers the entry."""
    if not _SUBJECT_HINT.search(unicodedata.normalize("NFKC", entry.content)):
        return set()
    return {n.key for n in names(canonical(entry.content)) if n.kind == "code" and _SUBJECT.fullmatch(n.key)}


_SAE_WORD = re.compile(r"(?<![a-z])saes?(?![a-z])|严重不良|serious\s+adverse", re.I)
_NOT_REPORTS = ("sae", "query")
"""Entry types whose SAE words do not report one: the SAE entry itself (counted), a data query about a form."""


def reported_saes(week: WeekInput) -> list[WeekEntry]:
    """Entries of another type that report an SAE of a named subject ("XH201-03-011 因肺炎住院，判定为 SAE", in a
    message or a monitoring note): the week's SAE count reads only the `sae` type, so a safety event written under
    another type would otherwise be left out, or denied, by a report that follows the counts."""
    found = [(e, named) for e in week.entries if e.type not in _NOT_REPORTS and _SAE_WORD.search(e.content)
             and mentions(canonical(e.content)).get("sae") and (named := subjects(e))]
    if not found:
        return []
    # A subject whose SAE the week counts is that SAE's follow-up ("XH201-03-007 的 SAE 已收到"): covering the
    # counted entry covers it.
    counted = {sid for e in week.entries if e.type == "sae" for sid in subjects(e)}
    return [e for e, named in found if not named & counted]


def all_clear(text: str) -> bool:
    """Whether a sentence is a blanket "nothing happened" claim."""
    return bool(_ALL_CLEAR.search(" ".join(text.split())))


def coverage_reasons(report: Sequence[Sentence], week: WeekInput, claims: Iterable[Mapping[str, Any]],
                     reported: list[WeekEntry] | None = None) -> list[dict[str, Any]]:
    """`omitted_event` per kind with an uncovered entry, `denied_event` per blanket all-clear in an eventful week."""
    out: list[dict[str, Any]] = []
    stats = week.stats
    counted = {c["field"] for c in claims if c["value"] and c["value"] == stats.get(c["field"])}
    cited = {sid for s in report for sid in s.cites}
    said = "".join(squash(s.bare) for s in report)
    for field, types in COVERED.items():
        if not stats.get(field) or field in counted:
            continue
        entries = [e for e in week.entries if e.type in types]
        missed = [e for e in entries if e.short_id not in cited and not any(sid in said for sid in subjects(e))]
        # Every SAE must be covered; of the other kinds, one covered entry shows the report did not hide the kind
        # (a short report cannot cite fifty AEs, and may sum them up under one of them).
        if missed and (field == "sae" or len(missed) == len(entries)):
            ids = [e.short_id for e in missed]
            out.append({"kind": "omitted_event", "field": field, "ids": ids,
                        "detail": f"the week counts {stat_label(field, 'en')} = {stats[field]} but no sentence covers "
                                  f"{', '.join(ids[:5])} ({EVENT_NOUNS[field]}: not cited, subject not named)"})
    reported = reported_saes(week) if reported is None else reported
    by_id = {e.short_id: e for e in week.entries}
    cited_subjects = {sid for c in cited if c in by_id for sid in subjects(by_id[c])} if reported else set()
    for e in reported:
        if e.short_id not in cited and not any(sid in said or sid in cited_subjects for sid in subjects(e)):
            out.append({"kind": "omitted_event", "field": "sae", "ids": [e.short_id],
                        "detail": f"{e.short_id} (a {e.type} entry) reports an SAE of {', '.join(sorted(subjects(e)))} "
                                  "but no sentence covers it (not cited, subject not named)"})
    eventful = [f"{stat_label(k, 'en')} = {stats[k]}" for k in _SAFETY if stats.get(k)]
    eventful += [f"{e.short_id} reports an SAE" for e in reported]
    if eventful:
        for s in report:
            if all_clear(s.bare):
                out.append({"kind": "denied_event", "field": next((k for k in _SAFETY if stats.get(k)), "sae"),
                            "sentence": s.bare[:120],
                            "detail": f"claims all is well but the week counts {', '.join(eventful)}"})
    return out
