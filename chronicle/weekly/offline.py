"""The offline engine: deterministic, extractive weekly reports (no weights, no network).

A report is the week's counts in one sentence, then the salient entries for each focus of seed
000's prompt — enrolment, AE, SAE, protocol deviations, PI decisions — quoted from the log with
their [E#] ids. Chat `message`s are never quoted, except one that reports an SAE of a named subject.
Items are chosen by salience (SAE first) until the length limit; dropped items are announced ("等 N 条" /
"and N more"), never cut mid-sentence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from chronicle.weekly.faithfulness import strip_citations
from chronicle.weekly.guard.coverage import reported_saes
from chronicle.weekly.labels import language_of_text, type_label
from chronicle.weekly.model import WeekEntry, WeekInput
from chronicle.weekly.tokens import is_chinese

REPORTED_SAE = "reported-sae"
"""The section of entries of another type that report an SAE (`guard.coverage.reported_saes`): a message
"XH201-03-011 因肺炎住院，判定为 SAE" is quoted, never left among the unquoted messages."""
# (type, Chinese label, English label), in seed 000's order of focus.
FOCUS: tuple[tuple[str, str, str], ...] = (
    ("enrollment", "入组", "Enrolment"),
    ("ae", "AE", "AE"),
    ("sae", "SAE", "SAE"),
    (REPORTED_SAE, "SAE 相关", "SAE-related"),
    ("deviation", "方案偏离", "Protocol deviations"),
    ("decision", "PI 决策", "PI decisions"),
)
SALIENCE = ("sae", REPORTED_SAE, "decision", "deviation", "ae", "enrollment")
STANDARD = ("message", "enrollment", "ae", "sae", "deviation", "query", "decision")
EMPTY_SUMMARY = "本周无记录。(No entries this week.)"
OFFLINE_VERSION = "offline-v3"  # v3: an SAE reported in another type's entry is quoted ("SAE 相关")
"""What the extractive reports are written by, recorded as their `prompt_version` (as the distiller's offline engine
does): bump it on any change to the text this module writes, so every stored offline report is written again once."""
_SENTENCE_END = re.compile(r"(?<=[。；！？])|(?<=[.;!?])\s")


def language_of(week: WeekInput) -> str:
    """`zh` when the week's entries are mainly Chinese, else `en`."""
    return language_of_text([e.content for e in week.entries])


def first_sentence(text: str) -> str:
    """The entry's first complete sentence (its whole text if it has one), whitespace folded."""
    flat = " ".join(text.split())
    head = _SENTENCE_END.split(flat, maxsplit=1)[0].strip()
    return head.rstrip("；;") or flat


def header(stats: dict[str, Any], lang: str, sae_reported: bool = False) -> str:
    """The week's counts as one sentence; every number comes from `stats`, zero counts are left out
    (except enrolment, and a "no AE/SAE" when there was none — the absence matters in a trial — and no entry of
    another type reports one: `sae_reported`)."""
    other = [(t, n) for t, n in stats.get("by_type", {}).items() if t not in STANDARD]
    zh = lang == "zh"
    parts = [f"入组 {stats['enrolled']} 人（累计 {stats['enrolled_total']} 人）" if zh else
             f"{stats['enrolled']} subjects enrolled ({stats['enrolled_total']} enrolled in total)"]
    if not stats["ae"] and not stats["sae"] and not sae_reported:
        parts.append("无 AE/SAE" if zh else "no AEs/SAEs")
    for key, zh_fmt, en_fmt in (("ae", "新增 AE {} 例", "{} new AEs"), ("sae", "SAE {} 例", "{} SAEs"),
                                ("deviations", "方案偏离 {} 项", "{} protocol deviations"),
                                ("decisions", "PI 决策 {} 项", "{} PI decisions"),
                                ("queries", "Query {} 条", "{} queries")):
        if stats[key]:
            parts.append((zh_fmt if zh else en_fmt).format(stats[key]))
    if zh:
        line = f"本周记录 {stats['entries']} 条：" + "，".join(parts)
        if other:
            line += "；另有 " + "、".join(f"{type_label(t, 'zh')} {n} 条" for t, n in other)
        return line + (f"；消息 {stats['messages']} 条未摘录。" if stats["messages"] else "。")
    line = f"This week: {stats['entries']} entries; " + ", ".join(parts)
    if other:
        line += "; also " + ", ".join(f"{n} {type_label(t, 'en')}" for t, n in other)
    return line + (f"; {stats['messages']} messages not summarised." if stats["messages"] else ".")


def _section(label: str, items: Sequence[str], total: int, lang: str) -> str:
    sep, more = ("；", "等 {n} 条") if lang == "zh" else ("; ", "and {n} more")
    colon = "：" if lang == "zh" else ": "
    if not items:
        none = f"{total} 条（未展开）" if lang == "zh" else f"{total} entries (not expanded)"
        return f"- **{label}**{colon}{none}"
    text = sep.join(items)
    if total > len(items):
        text += sep + more.format(n=total - len(items))
    return f"- **{label}**{colon}{text}"


def render(head: str, sections: dict[str, list[WeekEntry]], chosen: set[str], lang: str,
           items: dict[str, str] | None = None) -> str:
    """The report: `head`, then one line per focus with entries, quoting the `chosen` ones (`items`: their
    quoted text by short id, when the caller already has it)."""
    lines = [_focus_line(t, sections[t], chosen, lang, items) for t, _, _ in FOCUS if sections.get(t)]
    return "\n".join([head, *lines])


def _focus_line(type_: str, entries: list[WeekEntry], chosen: set[str], lang: str,
                items: dict[str, str] | None = None) -> str:
    label = next(zh if lang == "zh" else en for t, zh, en in FOCUS if t == type_)
    quoted = [items[e.short_id] if items is not None else _item(e) for e in entries if e.short_id in chosen]
    return _section(label, quoted, len(entries), lang)


def _item(entry: WeekEntry) -> str:
    return f"{first_sentence(entry.content)} [{entry.short_id}]"


def clean_length(text: str) -> int:
    """Characters a reader sees: the length limit ignores the [E#] lineage markers."""
    return len(strip_citations(text))


def offline_report(week: WeekInput, max_chars: int) -> str:
    """The extractive report of a week with entries (the caller handles empty weeks)."""
    lang = language_of(week)
    sections: dict[str, list[WeekEntry]] = {}
    for entry in week.entries:
        sections.setdefault(entry.type, []).append(entry)
    if reported := reported_saes(week):
        sections[REPORTED_SAE] = reported
    head = header(week.stats, lang, bool(reported))
    items = {e.short_id: _item(e) for t, _, _ in FOCUS for e in sections.get(t, [])}
    chosen: set[str] = set()
    # Greedy by salience: an item stays only if the whole report still fits. The report's clean length is the
    # sum of its lines' (a citation marker never spans a line: every focus line starts with "- **"), so a
    # candidate re-measures only its own line, not the whole report.
    lines = {t: clean_length(_focus_line(t, sections[t], chosen, lang, items)) for t, _, _ in FOCUS if sections.get(t)}
    total = clean_length(head) + sum(lines.values()) + len(lines)
    if total != clean_length(render(head, sections, chosen, lang, items)):
        return _offline_report_whole(head, sections, lang, max_chars)  # a marker across lines: measure whole
    for type_ in SALIENCE:
        for entry in sections.get(type_, []):
            chosen.add(entry.short_id)
            length = clean_length(_focus_line(type_, sections[type_], chosen, lang, items))
            if total - lines[type_] + length <= max_chars:
                total += length - lines[type_]
                lines[type_] = length
            else:
                chosen.discard(entry.short_id)
    text = render(head, sections, chosen, lang, items)
    if clean_length(text) != total:
        return _offline_report_whole(head, sections, lang, max_chars)
    return text


def _offline_report_whole(head: str, sections: dict[str, list[WeekEntry]], lang: str, max_chars: int) -> str:
    """The same greedy choice, measuring the whole report for every candidate (the reference rule)."""
    chosen: set[str] = set()
    for type_ in SALIENCE:
        for entry in sections.get(type_, []):
            if clean_length(render(head, sections, chosen | {entry.short_id}, lang)) <= max_chars:
                chosen.add(entry.short_id)
    return render(head, sections, chosen, lang)


def _salient_sentences(text: str) -> list[tuple[int, str]]:
    """(rank, sentence) pairs of a weekly report worth keeping in a rollup; lower rank = keep first.

    The counts line is skipped (the rollup sums the stats instead), as are "等 N 条" remainders.
    """
    keys = ((0, ("SAE", "严重不良事件")), (1, ("决定", "决策", "decision", "decided")),
            (2, ("偏离", "deviation")), (3, ("暂停", "恢复", "关闭", "paused", "closed")))
    out = []
    for line in strip_citations(text).splitlines():
        line = re.sub(r"^(?:[-*+]\s+|#+\s*)", "", line.strip())
        if not line or line.startswith(("本周记录", "This week")):
            continue
        line = re.sub(r"^\*\*[^*]+\*\*\s*[:：]\s*", "", line).replace("**", "")  # drop "**PI 决策**："
        for raw in re.split(r"[；;]+", line):
            sentence = raw.strip()
            if not sentence or re.fullmatch(r"(等 \d+ 条|and \d+ more|\d+ (条（未展开）|entries \(not expanded\)))",
                                            sentence):
                continue
            rank = next((r for r, words in keys if any(w.lower() in sentence.lower() for w in words)), None)
            if rank is not None:
                out.append((rank, sentence))
    return out


def offline_rollup(period: str, weeks: Sequence[tuple[int, str, dict[str, Any]]], max_chars: int) -> str:
    """Fold (week_number, text, stats) triples into one extractive period summary."""
    lang = "zh" if is_chinese([t for _, t, _ in weeks]) else "en"
    total = {k: sum(int(s.get(k, 0)) for _, _, s in weeks) for k in ("entries", "enrolled", "ae", "sae",
                                                                       "deviations", "decisions")}
    running = weeks[-1][2].get("enrolled_total", 0) if weeks else 0
    span = f"{weeks[0][0]}–{weeks[-1][0]}" if weeks else ""
    if lang == "zh":
        head = (f"{period}（{span}，{len(weeks)} 周）：记录 {total['entries']} 条，入组 {total['enrolled']} 人"
                f"（累计 {running} 人），AE {total['ae']} 例、SAE {total['sae']} 例，"
                f"方案偏离 {total['deviations']} 项，PI 决策 {total['decisions']} 项。")
    else:
        head = (f"{period} ({span}, {len(weeks)} weeks): {total['entries']} entries, {total['enrolled']} subjects "
                f"enrolled ({running} in total), {total['ae']} AEs, {total['sae']} SAEs, "
                f"{total['deviations']} deviations, {total['decisions']} PI decisions.")
    candidates = sorted((rank, i, s) for i, (rank, s) in enumerate(
        item for _, text, _ in weeks for item in _salient_sentences(text)))
    kept: list[tuple[int, str]] = []
    sep = "；" if lang == "zh" else "; "
    for _, order, sentence in candidates:
        trial = sorted([*kept, (order, sentence)])
        body = sep.join(s for _, s in trial)
        dropped = len(candidates) - len(trial)
        more = (f"{sep}等 {dropped} 条" if lang == "zh" else f"{sep}and {dropped} more") if dropped else ""
        if len(head) + 1 + len(body) + len(more) <= max_chars:
            kept = trial
    dropped = len(candidates) - len(kept)
    more = (f"{sep}等 {dropped} 条" if lang == "zh" else f"{sep}and {dropped} more") if dropped and kept else ""
    body = sep.join(s for _, s in kept)
    return f"{head} {body}{more}".strip() if body else head
