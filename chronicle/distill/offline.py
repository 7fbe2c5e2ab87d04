"""Offline distillation engine: deterministic, rule-based memories when no LLM is configured (pure).

One memory per substantive note entry (code, tables, bold-only labels and short fragments are skipped), so
everything stays searchable in the vector store: target file from `routing` (seed 002's keyword table, only
for entries about the agent or the user where the file describes them), summary = first sentence, key info =
numbers, versions, ports, names and code spans (plus, for a turn of a conversation, the turn it answers — see
`reply_context` — and the note's day in words, see `day_words`), tags = file category + headings, importance
from the signals in the text (`signals.analyse`: small talk and bare questions score low, decisions, rules, preferences,
dates, names and "remember" high). Which of them reach a knowledge file is the gate's decision (`gate.py`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import replace
from datetime import date

from chronicle.distill.chunks import NoteEntry
from chronicle.distill.orders import reads_as_order
from chronicle.distill.reply_checks import first_sentence
from chronicle.distill.routing import IDENTITY, SOUL, TABLE, USER, target_file
from chronicle.distill.signals import PENDING, analyse
from chronicle.distill.speaker import speakers_of, split_speaker
from chronicle.memory.model import Memory, cut_content, detect_language
from chronicle.memory.subjects import USER as USER_SUBJECT
from chronicle.memory.subjects import entry_subject, normalise_subject
from chronicle.memory.supersede import facts

# Raised whenever the rules change what a note distills to, except where re-reading cached days would store the
# same line twice: "a line that opens with a person is about them" gives a known subject to lines that had none,
# and a new version would add each such line again beside its old row (8 on the demo), so new notes only get it;
# the same holds for an entry cut at MAX_CONTENT (`distill_entries`).
OFFLINE_ENGINE_VERSION = "offline-v9"
OFFLINE_MODEL = "offline-rules"
PROFILE = (SOUL, USER, IDENTITY)
MIN_SUBSTANCE = 16
"""Entries scoring less (ASCII letters/digits count 1, CJK characters 2) are too short to be a memory."""

_KEY_INFO = re.compile(
    r"`[^`\n]{1,80}`"                                   # code spans: commands, env vars, paths
    r"|https?://[^\s)>\]]+"                             # URLs
    r"|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{2,5})?\b"        # IPs (with port)
    r"|\bv?\d+(?:\.\d+){1,3}\b"                         # versions
    r"|\b[Pp]ort\s+\d{2,5}\b|:\d{4,5}\b"                # ports
    r"|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}:\d{2}\b"         # dates, times
    # quantities, from the first digit of their run only (from every digit, a long run was quadratic)
    r"|(?<![\d,.])[,.]*+(?P<quantity>\d[\d,.]*+\s*+(?:%|\+|[kKmM]\b|例|个|天|周|字|words?\b|lines?\b))"
    r"|\b[A-Z]{2,}[0-9]*\b"                             # acronyms: JWT, RBAC, SAE, EDC
    r"|\b[A-Z][a-z]+[A-Z][A-Za-z]+\b",                  # CamelCase names: WebSocket, OpenClaw
)
_HEADING_NOISE = re.compile(r"\d{4}-\d{2}-\d{2}|^\d{1,2}:\d{2}\b")
_BOLD_LABEL = re.compile(r"^\*\*[^*]+\*\*[:：]?$")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
CONTEXT_CHARS = 240
"""The preceding turn kept with a reply is cut here: enough for its topic words, not a second copy of it."""


def clean(text: str) -> str:
    """Markdown emphasis and link syntax removed, whitespace folded."""
    text = re.sub(r"\*\*|__", "", text)
    # A link's text holds no bracket, its target no blank and only balanced parentheses (as in Markdown): a `[`
    # with no `](…)` after it is given up at the next bracket, not at the end of a long line of them.
    text = re.sub(r"\[([^\[\]\n]+)\]\(((?:[^()\s]|\([^()\s]*+\))++)\)", r"\1 (\2)", text)
    return re.sub(r"\s+", " ", text).strip()


def substance(text: str) -> int:
    return sum(2 if _CJK.match(c) else 1 for c in text if c.isalnum())


def is_substantive(entry: NoteEntry) -> bool:
    """Skips code/tables, bold-only labels ("**Core Infrastructure**") and short fragments."""
    if entry.kind in ("code", "table") or _BOLD_LABEL.match(entry.content.strip()):
        return False
    return substance(clean(entry.content)) >= MIN_SUBSTANCE


def importance(entry: NoteEntry, known_speakers: frozenset[str] = frozenset(), category: int = -1) -> float:
    """Importance from the signals in the entry's words (see `signals`), in [0.1, 1.0]; `category` is the
    routing result (SOUL/IDENTITY/USER material counts as being about the agent or the user)."""
    utt = split_speaker(entry.content, known_speakers)
    return analyse(clean(utt.body), utt.role, " ".join(entry.heading_path), profile=category in PROFILE,
                   speakers=known_speakers).score


def key_info(text: str, limit: int = 8) -> list[str]:
    found: list[str] = []
    for match in _KEY_INFO.finditer(text):
        item = (match.group("quantity") or match.group(0)).strip().strip("`").rstrip(".,;")
        if item and item not in found:
            found.append(item)
    return found[:limit]


def tags(entry: NoteEntry, category: int, language: str) -> list[str]:
    """The file category's tag, "decision" when it is one, then heading segments from the deepest up."""
    out: list[str] = []
    if category >= 0:
        out.append(TABLE[category][1] if language == "zh" else TABLE[category][2])
    if re.search(r"决定|决策|decision|decided", entry.content + " ".join(entry.heading_path), re.I):
        out.append("决策" if language == "zh" else "decision")
    for heading in reversed(entry.heading_path):
        for part in re.split(r"\s+/\s+", re.sub(r"\([^)]*\)?", "", heading)):
            # Letters, numbers, spaces and punctuation only: emoji and symbols are not useful tags.
            part = "".join(c for c in clean(part) if unicodedata.category(c)[0] in "LNZP").strip(" :：-")
            part = re.sub(r"^\d+[.)]\s*", "", part)
            if part and not _HEADING_NOISE.search(part) and len(part) <= 40:
                out.append(part)
    return list(dict.fromkeys(out))[:6]


def reply_context(entry: NoteEntry, previous: NoteEntry | None, known_speakers: frozenset[str]) -> str | None:
    """The turn `entry` answers, when both are turns of one conversation (same note, same section, a speaker each).

    A reply rarely names its topic ("Yes, twice! The kids loved it."): what an LLM distiller resolves from the
    dialogue, the rules keep verbatim as key info, so the question's words find the answer through full text.
    It is never written to a knowledge file (key info is not) and is redacted with the rest of the memory. A turn
    whose words read as an instruction to the model is not copied: it stays a flagged memory of its own, nothing
    more. The words are screened without their speaker label: in a transcript `助手：…` / `AI: …` says who
    speaks, while the screen reads a line opening with the assistant's name as addressed to it, so an answer to
    the assistant's question lost that question, and with it the topic words a search finds the answer by.
    """
    if previous is None or (previous.source_file, previous.heading_path) != (entry.source_file, entry.heading_path):
        return None
    if previous.kind in ("code", "table") or split_speaker(entry.content, known_speakers).speaker is None:
        return None
    turn = split_speaker(previous.content, known_speakers)
    if turn.speaker is None or reads_as_order(turn.body):
        return None
    text = clean(previous.content)
    return text if len(text) <= CONTEXT_CHARS else text[:CONTEXT_CHARS].rstrip() + " …"


def day_words(day: date, language: str) -> str:
    """The note's day as a question names it: "13 October 2023" / "2023年10月13日".

    A daily note's entries rarely say their own date ("I went camping yesterday"), yet questions about them
    often do ("When did Melanie go camping in June?", "我在5月2号买了什么？"): the file name is the only place
    the day is written. Kept as key info it reaches full text only (the embedding is of the content), so a
    question naming the day or month finds that day's memories, and one naming none is unaffected.
    """
    if language == "zh":
        return f"{day.year}年{day.month}月{day.day}日"
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"  # not %B: that follows the process's locale


def subject_of(entry: NoteEntry, known_speakers: frozenset[str] = frozenset(), user: str | None = None,
               section_person: str | None = None) -> str:
    """Whom the entry is about, from the note's structure (`chronicle.memory.subjects.entry_subject`)."""
    utt = split_speaker(entry.content, known_speakers)
    return entry_subject(entry.content, entry.heading_path, speaker=utt.speaker, role=utt.role,
                         speakers=known_speakers, user=user, addressee=utt.addressee, section_person=section_person)


def answered(entry: NoteEntry, previous: NoteEntry | None, known_speakers: frozenset[str]) -> str | None:
    """The named speaker of the turn right before `entry` in the same section: whom a reply there answers."""
    if previous is None or (previous.source_file, previous.heading_path) != (entry.source_file, entry.heading_path):
        return None
    utt = split_speaker(previous.content, known_speakers)
    return utt.speaker if utt.role == "other" else None


def section_people(entries: list[NoteEntry], known_speakers: frozenset[str]) -> dict[tuple[str, tuple], str]:
    """(note, heading path) -> the one named person speaking in that section, for sections where only one does."""
    named: dict[tuple[str, tuple], set[str]] = {}
    for entry in entries:
        utt = split_speaker(entry.content, known_speakers)
        if utt.role == "other" and utt.speaker:
            named.setdefault((entry.source_file, entry.heading_path), set()).add(utt.speaker)
    return {key: next(iter(names)) for key, names in named.items() if len({n.casefold() for n in names}) == 1}


def entry_memory(entry: NoteEntry, known_speakers: frozenset[str] = frozenset(), previous: NoteEntry | None = None,
                 user: str | None = None, section_person: str | None = None) -> Memory | None:
    """The memory of one entry, or None if it is not substantive. `known_speakers`: names speaking in the note;
    `previous`: the entry before it in the note (its turn is kept as context of a reply); `user`: the user's
    name as USER.md gives it (the subject of the user's own lines)."""
    subject = subject_of(entry, known_speakers, user, section_person)
    # A short line may still state a fact ("张伟：我住在北京。"): a value the update rules read is kept.
    if not is_substantive(entry) and not (entry.kind not in ("code", "table") and subject
                                          and facts(clean(entry.content), subject)):
        return None
    body = clean(entry.content)
    content = f"{clean(entry.parent)}: {body}" if entry.parent and not PENDING.search(entry.parent) else body
    about_user = bool(subject) and subject in {USER_SUBJECT, normalise_subject(user)}
    file, category = target_file(entry, known_speakers, about_user)
    language = detect_language(content)
    context = reply_context(entry, previous, known_speakers)
    return Memory(
        content=content,
        summary=first_sentence(body),
        key_info=[*key_info(entry.content), day_words(entry.day, language), *([context] if context else [])],
        tags=tags(entry, category, language),
        importance=importance(entry, known_speakers, category),
        target_file=file,
        action="append",
        source=entry.source_name,
        # A reply's memory holds the turn it answers too (key info), so it cites both entries, as a model that
        # resolved "Yes, for running!" against the question before it would: asked about the question's topic,
        # this memory is the one that answers it.
        source_entry_ids=[entry.entry_id, *([previous.entry_id] if context and previous else [])],
        subject=subject,
    )


def distill_entries(entries: list[NoteEntry], user: str | None = None) -> list[Memory]:
    """Memories of a chunk's entries, in note order, exact duplicates (same content hash) dropped."""
    # A memory reads and holds at most MAX_CONTENT characters of its entry.
    entries = [replace(e, content=cut_content(e.content)) for e in entries]
    seen: set[str] = set()
    out = []
    speakers = speakers_of([e.content for e in entries])
    people = section_people(entries, speakers)
    for previous, entry in zip([None, *entries], entries, strict=False):
        person = people.get((entry.source_file, entry.heading_path)) or answered(entry, previous, speakers)
        memory = entry_memory(entry, speakers, previous, user, person)
        if memory and memory.content_hash not in seen:
            seen.add(memory.content_hash)
            out.append(memory)
    return out
