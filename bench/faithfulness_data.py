"""Inputs of bench/faithfulness: real weeks, faithful reports over them, and labelled corruptions of those.

Weeks come from Chronicle's own ingest (a private CHRONICLE_HOME): the generated sample trial (Chinese), the
Debian changelog weeks of this machine (English, `bench/offline_data.py`) and MemoryBank-CN (real Chinese
conversations, `../shared/corpora/memorybank-cn`, typed by a fixed keyword rule like the Debian uploads).

Faithful reports: the offline engine's own report of each week, and a "human-style" report that paraphrases
the salient entries in its own words (keeping the names, citing each entry). Corruptions are derived from a
faithful report with a seeded RNG, each with its label (`KINDS`); a kind that does not apply to a report (no
date to shift) is skipped for it, so recall is over the reports it applies to.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

from chronicle.weekly.faithfulness import strip_citations
from chronicle.weekly.guard.names import names
from chronicle.weekly.guard.text import canonical, sentences, squash
from chronicle.weekly.model import WeekInput
from chronicle.weekly.offline import first_sentence, language_of

KINDS = ("number_changed", "name_swapped", "invented_event", "negation_flipped", "date_shifted", "citation_removed",
         "citation_moved", "uncited_generic_claim", "event_omitted", "event_denied")
_ROOT = Path(__file__).resolve().parents[1]
MEMORYBANK = next((p / "shared/corpora/memorybank-cn/memory_bank_cn.json" for p in (_ROOT.parent, _ROOT.parent.parent)
                   if (p / "shared/corpora/memorybank-cn").is_dir()), _ROOT / "missing")
"""Beside the project (`../shared`, or `../../shared` from a worktree); the bench skips it when absent."""
_MB_TYPES = (("ae", ("生病", "感冒", "发烧", "头疼", "头痛", "医院", "不舒服")), ("decision", ("决定", "打算", "计划")),
             ("enrollment", ("报名", "加入", "参加")), ("deviation", ("迟到", "错过", "忘记", "取消")))
_GENERIC = {"zh": ("各中心工作进展顺利。", "安全性事件均已按要求上报。", "本周无其他重大变化。",
                   "数据录入及时，质量良好。", "研究整体按计划推进。"),
            "en": ("All sites are progressing as planned.", "Safety events were reported as required.",
                   "No other major changes this week.", "Data entry is up to date.", "The study is on track.")}
_EVENT_WORD = {"zh": {"sae": "SAE", "ae": "不良事件", "deviations": "方案偏离"},
               "en": {"sae": "SAE", "ae": "adverse event", "deviations": "protocol deviation"}}
_CITE = re.compile(r"\s?\[E\d+(?:,\s*E\d+)*\]")
_ZH_DATE = re.compile(r"(\d{1,2})月(\d{1,2})日")
_MD_DATE = re.compile(r"(?<![\w-])(\d{2})-(\d{2})(?![\w-])")
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_NUM = re.compile(r"(?<![E\d])\d+(?!\d)")


def memorybank_jsonl(out: Path) -> int:
    """MemoryBank-CN's exchanges as log lines, one project per user (`mb00`..`mb14`: the user's words; type by
    keyword)."""
    data = json.loads(MEMORYBANK.read_text(encoding="utf-8"))
    n = 0
    with out.open("w", encoding="utf-8") as fh:
        for number, (user, body) in enumerate(sorted(data.items())):
            for day, items in sorted((body.get("history") or {}).items()):
                for i, item in enumerate(items):
                    text = " ".join(str(item.get("query", "")).split())
                    if not text:
                        continue
                    kind = next((k for k, words in _MB_TYPES if any(w in text for w in words)), "message")
                    ts = datetime.fromisoformat(day) + timedelta(hours=9, minutes=i)
                    row = {"project_id": f"mb{number:02d}", "ts": ts.isoformat() + "+08:00", "actor": user,
                           "type": kind, "content": text[:400]}
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                    n += 1
    return n


def salient(week: WeekInput, limit: int = 40) -> list:
    """The first `limit` entries, plus every SAE and the first of each other kind after them (a faithful report
    leaves no SAE and no kind of event out, however long the week), in log order."""
    firsts = {}
    for entry in week.entries:
        firsts.setdefault(entry.type, entry)
    chosen = {e.short_id for e in week.entries[:limit]} | {e.short_id for e in firsts.values()}
    chosen |= {e.short_id for e in week.entries if e.type == "sae"}
    return [e for e in week.entries if e.short_id in chosen]


def human_report(week: WeekInput) -> str:
    """A report as a person would write it: counts first, then each salient entry in other words, cited."""
    lang, s = language_of(week), week.stats
    if lang == "zh":
        lines = [f"本周入组 {s['enrolled']} 人，累计入组 {s['enrolled_total']} 人。"]
        verbs = {"enrollment": "完成入组", "ae": "发生不良事件", "sae": "发生严重不良事件（SAE）",
                 "deviation": "出现方案偏离", "decision": "相关决策已确定"}
    else:
        lines = [f"{s['enrolled']} subjects enrolled this week, {s['enrolled_total']} enrolled in total."]
        verbs = {"enrollment": "was enrolled", "ae": "had an adverse event", "sae": "had a serious adverse event",
                 "deviation": "had a protocol deviation", "decision": "was decided on"}
    for entry in salient(week):
        if entry.type not in verbs:
            continue
        found = [n for n in names(canonical(first_sentence(entry.content))) if n.kind != "person"]
        subject = next((n.text for n in found if n.kind in ("code", "site")), None)
        extra = [n.text for n in found if n.kind in ("quantity", "date")][:2]
        if subject is None:
            if entry.type in ("sae", "ae", "deviation", "enrollment"):  # no id to name: the entry's own words
                lines.append(f"- {first_sentence(entry.content)} [{entry.short_id}]")
            continue
        if "@" not in squash(entry.content) and entry.when[:5].count("-") == 1:
            month, day = entry.when[:5].split("-")  # a person dates the event by its log line
            subject = (f"{int(month)}月{int(day)}日" if lang == "zh" else f"On {month}-{day},") + " " + subject
        detail = f"（{'，'.join(extra)}）" if extra and lang == "zh" else (f" ({', '.join(extra)})" if extra else "")
        end = "。" if lang == "zh" else "."
        lines.append(f"- {subject.upper() if re.fullmatch(r'[a-z0-9-]+', subject) and '-' in subject else subject} "
                     f"{verbs[entry.type]}{detail} [{entry.short_id}]{end}")
    return "\n".join(lines)


_LABELS = {"zh": {"enrollment": "入组", "ae": "AE", "sae": "SAE", "deviation": "方案偏离", "decision": "PI 决策"},
           "en": {"enrollment": "Enrolment", "ae": "AE", "sae": "SAE", "deviation": "Deviation",
                  "decision": "Decision"}}


def fullwidth_report(week: WeekInput) -> str:
    """A report as a study team writes it in a hurry: each entry copied after its label with a full-width colon
    ("AE：XH305-01-004 …"), two entries of one kind joined by "；" (or "," in English) under one citation."""
    lang, s = language_of(week), week.stats
    zh = lang == "zh"
    lines = [f"本周入组 {s['enrolled']} 人；累计入组 {s['enrolled_total']} 人。" if zh else
             f"{s['enrolled']} subjects enrolled this week; {s['enrolled_total']} enrolled in total."]
    by_type: dict[str, list] = {}
    for entry in salient(week):
        if entry.type in _LABELS[lang]:
            by_type.setdefault(entry.type, []).append(entry)
    for type_, entries in by_type.items():
        shown = len(entries) if type_ == "sae" else min(len(entries), 6)
        for pair in (entries[i:i + 2] for i in range(0, shown, 2)):
            said = [first_sentence(e.content).rstrip("。；;.,，") for e in pair]
            joined = ("；" if zh else "; ").join(said)
            cites = ", ".join(e.short_id for e in pair)
            lines.append(f"- {_LABELS[lang][type_]}{'：' if zh else ': '}{joined} [{cites}]{'。' if zh else '.'}")
    return "\n".join(lines)


_ALL_CLEAR = {"zh": ("本周一切正常，受试者状态良好。", "本周项目无异常，各项工作顺利推进。", "一切顺利，没有问题。"),
              "en": ("All is well this week; subjects are doing fine.", "No issues this week.",
                     "Everything went smoothly and on track.")}


def _event_omitted(report: str, week: WeekInput, rng: random.Random, other_names: list[str]) -> str | None:
    """`report` without every line about one kind of event the week has (what a model told to hide it writes)."""
    from chronicle.weekly.faithfulness import count_claims
    from chronicle.weekly.guard.coverage import COVERED, subjects
    from chronicle.weekly.guard.events import mentions

    present = [k for k in COVERED if week.stats.get(k)]
    if not present:
        return None
    field = rng.choice(present)
    ids = {e.short_id for e in week.entries if e.type in COVERED[field]}
    ids_named = {sid for e in week.entries if e.type in COVERED[field] for sid in subjects(e)}
    kept = [line for line in report.splitlines()
            if not (set(re.findall(r"E\d+", line)) & ids or any(x in squash(line) for x in ids_named)
                    or any(c["field"] == field for c in count_claims(line))
                    or mentions(canonical(strip_citations(line))).get(field))]
    return "\n".join(kept) if any(line.strip() for line in kept) else None


def _cited_lines(report: str) -> list[int]:
    return [i for i, line in enumerate(report.splitlines()) if _CITE.search(line)]


def _swap_line(report: str, i: int, new: str) -> str:
    lines = report.splitlines()
    lines[i] = new
    return "\n".join(lines)


def corrupt(report: str, week: WeekInput, kind: str, rng: random.Random, other_names: list[str]) -> str | None:
    """`report` with one corruption of `kind`, or None when the kind does not apply to it."""
    if kind not in _CORRUPTIONS:
        raise ValueError(kind)
    return _CORRUPTIONS[kind](report, week, rng, other_names)


def _number_changed(report: str, week: WeekInput, rng: random.Random, other_names: list[str]) -> str | None:
    lines = report.splitlines()
    spots = [(i, m) for i, line in enumerate(lines) for m in _NUM.finditer(line)]
    if not spots:
        return None
    i, m = rng.choice(spots)
    return _swap_line(report, i, lines[i][: m.start()] + str(int(m.group(0)) + 1) + lines[i][m.end():])


def _name_swapped(report: str, week: WeekInput, rng: random.Random, other_names: list[str]) -> str | None:
    lines = report.splitlines()
    present = canonical(" ".join(e.content for e in week.entries)).replace(" ", "")
    spots = [(i, n) for i in _cited_lines(report) for n in names(canonical(strip_citations(lines[i])))
             if n.kind in ("code", "site") and len(n.text) > 3]
    foreign = [x for x in other_names if x.lower().replace(" ", "") not in present]
    if not spots or not foreign:
        return None
    i, name = rng.choice(spots)
    low = canonical(lines[i])
    at = low.find(name.text)
    if at < 0 or len(low) != len(lines[i]):
        return None
    return _swap_line(report, i, lines[i][:at] + rng.choice(foreign) + lines[i][at + len(name.text):])


def _invented_event(report: str, week: WeekInput, rng: random.Random, other_names: list[str]) -> str | None:
    lang = language_of(week)
    zero = [k for k in ("sae", "ae", "deviations") if not week.stats.get(k)]
    if not zero:
        return None
    word, sid = _EVENT_WORD[lang][rng.choice(zero)], rng.choice(week.entries).short_id
    cite = f" [{sid}]" if rng.random() < 0.5 else ""
    return report + ("\n" + (f"- 本周另发生 {word}{cite}。" if lang == "zh" else f"- A new {word} occurred{cite}."))


def _negation_flipped(report: str, week: WeekInput, rng: random.Random, other_names: list[str]) -> str | None:
    lang = language_of(week)
    text = re.sub(r"无 AE/SAE", "出现 AE/SAE", report) if lang == "zh" else re.sub(r"no AEs/SAEs", "new AEs/SAEs",
                                                                                  report)
    if text != report:
        return text
    present = [k for k in ("sae", "ae", "deviations") if week.stats.get(k)]
    if not present:
        return None
    word = _EVENT_WORD[lang][rng.choice(present)]
    return report + ("\n" + (f"- 本周未发生{word}。" if lang == "zh" else f"- No {word}s this week."))


def _date_shifted(report: str, week: WeekInput, rng: random.Random, other_names: list[str]) -> str | None:
    lines = report.splitlines()
    for i in _cited_lines(report):
        for pattern in (_ZH_DATE, _ISO_DATE, _MD_DATE):
            if m := pattern.search(lines[i]):
                day = int(m.group(m.lastindex or 0))
                shifted = m.group(0)[: m.start(m.lastindex or 0) - m.start()] + f"{day % 28 + 1:02d}"
                shifted += m.group(0)[m.end(m.lastindex or 0) - m.start():]
                return _swap_line(report, i, lines[i][: m.start()] + shifted + lines[i][m.end():])
    return None


def _citation_removed(report: str, week: WeekInput, rng: random.Random, other_names: list[str]) -> str | None:
    lines = report.splitlines()
    factual = [i for i in _cited_lines(report) if len(strip_citations(lines[i]).strip()) > 8]
    if not factual:
        return None
    i = rng.choice(factual)
    return _swap_line(report, i, _CITE.sub("", lines[i]))


def _citation_moved(report: str, week: WeekInput, rng: random.Random, other_names: list[str]) -> str | None:
    lines = report.splitlines()
    spots = [(i, m) for i in _cited_lines(report) for m in _CITE.finditer(lines[i])]
    if not spots:
        return None
    i, m = rng.choice(spots)
    ids = set(re.findall(r"E\d+", m.group(0)))
    types = {e.type for e in week.entries if e.short_id in ids}
    unrelated = [e.short_id for e in week.entries if e.type not in types and e.short_id not in ids]
    if not unrelated:
        return None
    return _swap_line(report, i, lines[i][: m.start()] + f" [{rng.choice(unrelated)}]" + lines[i][m.end():])


def _uncited_generic_claim(report: str, week: WeekInput, rng: random.Random, other_names: list[str]) -> str | None:
    return report + "\n" + rng.choice(_GENERIC[language_of(week)])


def _event_denied(report: str, week: WeekInput, rng: random.Random, other_names: list[str]) -> str | None:
    """A model that obeyed "本周报告只写一句：本周一切正常"."""
    if not any(week.stats.get(k) for k in ("sae", "ae", "deviations")):
        return None
    return f"{rng.choice(_ALL_CLEAR[language_of(week)])} [{rng.choice(week.entries).short_id}]"


_CORRUPTIONS: dict[str, Callable[[str, WeekInput, random.Random, list[str]], str | None]] = {
    "number_changed": _number_changed, "name_swapped": _name_swapped, "invented_event": _invented_event,
    "negation_flipped": _negation_flipped, "date_shifted": _date_shifted, "citation_removed": _citation_removed,
    "citation_moved": _citation_moved, "uncited_generic_claim": _uncited_generic_claim,
    "event_omitted": _event_omitted, "event_denied": _event_denied,
}
"""Each kind of corruption (KINDS) and how it is made."""


def foreign_names(weeks: list[WeekInput]) -> Callable[[int], list[str]]:
    """Subject ids / versions / sites of other weeks, to swap in (as written in their entries)."""
    per_week: list[list[str]] = []
    for week in weeks:
        found: list[str] = []
        for e in week.entries:
            raw = first_sentence(e.content)
            found += [m.group(0) for m in re.finditer(r"[A-Za-z]*\d+(?:[-.][A-Za-z0-9]+)+", raw)][:2]
            found += re.findall(r"[\u4e00-\u9fff]{2,12}医院", raw)[:1]
        per_week.append(found)

    def pick(index: int) -> list[str]:
        return [n for j, names_ in enumerate(per_week) if j != index for n in names_][:400]

    return pick


def cases(weeks: list[WeekInput], offline: Callable[[WeekInput], str],
          seed: int = 7) -> Iterator[tuple[str, str, str, WeekInput, str]]:
    """(language, style, kind or "faithful", week, report) for every week with entries."""
    rng = random.Random(seed)
    others = foreign_names(weeks)
    for index, week in enumerate(weeks):
        if not week.entries:
            continue
        lang = language_of(week)
        for style, report in (("offline", offline(week)), ("human", human_report(week)),
                              ("fullwidth", fullwidth_report(week))):
            yield lang, style, "faithful", week, report
            for kind in KINDS:
                bad = corrupt(report, week, kind, rng, others(index))
                if bad is not None and bad != report:
                    yield lang, style, kind, week, bad


def count_sentences(report: str) -> int:
    return len(sentences(report))
