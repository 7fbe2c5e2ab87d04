"""The corpora of bench/memory_e2e written as daily notes in several ordinary layouts, and the update set.

Each writer returns ((file name, line number) -> evidence id, number of utterances) and writes
`<folder>/YYYY-MM-DD.md`. Line numbers count from 1 like the note parser's.

MemoryBank (one companion, 15 users; the user is the subject of their section):

- `heading`:  `## 张曼婷`, `- 张曼婷：…` / `- AI伴侣：…` (the layout the pipeline was first measured on);
- `dialogue`: `## 与张曼婷的对话`, `- 张曼婷: …` (ASCII colon) / `- AI伴侣（回复张曼婷）: …`;
- `roles`:    `## 和张曼婷聊天`, `- 用户：…` / `- 助手：…` — neither side's label names the user;
- `role_heading`: `### 用户：张曼婷`, paragraphs `张曼婷说：…` / `我回答：…` (a heading with a role prefix);
- `speech`:   `## 聊天 2`, paragraphs `张曼婷说：…` / `张曼婷问道：…` / `我回答：…` — no heading names the user,
  only the speech verb of their own lines does.

LoCoMo (two people talking; each turn is about its speaker):

- `session`: `## 14:00 Caroline & Melanie`, `- Caroline: …`, a photo as `[shares a photo of …]`;
- `bold`:    `### Session 3 (8 May 2023)`, `**Caroline**: …` paragraphs, a photo as `(photo: …)`.
"""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path
from typing import Any

from bench.locomo import session_time

MEMORYBANK_LAYOUTS = ("heading", "dialogue", "roles", "role_heading", "speech")
LOCOMO_LAYOUTS = ("session", "bold")
UPDATES = Path(__file__).resolve().parent.parent / "tests" / "data" / "memory_updates" / "cases.jsonl"
_SESSION = re.compile(r"session_(\d+)$")


def _write(folder: Path, days: dict[str, list[str]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for day, lines in days.items():
        (folder / f"{day}.md").write_text("# Notes\n\n" + "\n".join(lines) + "\n", encoding="utf-8")


def memorybank(folder: Path, layout: str) -> tuple[dict[tuple[str, int], str], int]:
    """MemoryBank as daily notes in `layout`; evidence ids "user:day:i:q|r"."""
    from bench.embedders import MEMORYBANK

    if layout in ("role_heading", "speech"):
        return _memorybank_speech(folder, layout, json.loads((MEMORYBANK / "memory_bank_cn.json").read_text()))
    heading = {"heading": "## {u}", "dialogue": "## 与{u}的对话", "roles": "## 和{u}聊天"}[layout]
    user_label = {"heading": "{u}：", "dialogue": "{u}: ", "roles": "用户："}[layout]
    reply_label = {"heading": "AI伴侣：", "dialogue": "AI伴侣（回复{u}）: ", "roles": "助手："}[layout]
    days: dict[str, list[str]] = {}
    where: dict[tuple[str, int], str] = {}
    for user, data in json.loads((MEMORYBANK / "memory_bank_cn.json").read_text()).items():
        for day, exchanges in data["history"].items():
            lines = days.setdefault(day, [])
            lines += ([""] if lines else []) + [heading.format(u=user), ""]
            for i, ex in enumerate(exchanges):
                for side, label, text in (("q", user_label, ex["query"]), ("r", reply_label, ex["response"])):
                    lines.append(f"- {label.format(u=user)}{' '.join(text.split())}")
                    where[(f"{day}.md", len(lines) + 2)] = f"{user}:{day}:{i}:{side}"
    _write(folder, days)
    return where, len(where)


def _memorybank_speech(folder: Path, layout: str, data: dict[str, Any]) -> tuple[dict[tuple[str, int], str], int]:
    """Paragraphs with speech verbs (`张曼婷说：…`, `我回答：…`) under `### 用户：张曼婷` or a heading naming nobody."""
    days: dict[str, list[str]] = {}
    where: dict[tuple[str, int], str] = {}
    for user, user_data in data.items():
        for day, exchanges in user_data["history"].items():
            lines = days.setdefault(day, [])
            n = sum(1 for line in lines if line.startswith("#")) + 1
            heading = f"### 用户：{user}" if layout == "role_heading" else f"## 聊天 {n}"
            lines += ([""] if lines else []) + [heading, ""]
            for i, ex in enumerate(exchanges):
                query = " ".join(ex["query"].split())
                verb = "问道" if layout == "speech" and query.rstrip().endswith(("？", "?")) else "说"
                for side, label, text in (("q", f"{user}{verb}：", query), ("r", "我回答：", ex["response"])):
                    lines.append(f"{label}{' '.join(text.split())}")
                    where[(f"{day}.md", len(lines) + 2)] = f"{user}:{day}:{i}:{side}"
                    lines.append("")
    _write(folder, days)
    return where, len(where)


def locomo(samples: list[dict[str, Any]], folder: Path, layout: str) -> tuple[dict[tuple[str, int], str], int]:
    """LoCoMo conversations as daily notes in `layout`; evidence ids "sample:dia_id"."""
    days: dict[date, list[str]] = {}
    where: dict[tuple[str, int], str] = {}
    for sample in samples:
        conv = sample["conversation"]
        sessions = sorted(int(m.group(1)) for k in conv if (m := _SESSION.match(k)) and isinstance(conv[k], list))
        for n in sessions:
            when = session_time(conv[f"session_{n}_date_time"])
            lines = days.setdefault(when.date(), [])
            if layout == "session":
                lines += ([""] if lines else []) + [f"## {when:%H:%M} {conv['speaker_a']} & {conv['speaker_b']}", ""]
            else:
                lines += ([""] if lines else []) + [f"### Session {n} ({when:%-d %B %Y})", ""]
            for turn in conv[f"session_{n}"]:
                text = " ".join(turn["text"].split())
                if turn.get("blip_caption"):
                    photo = turn["blip_caption"]
                    text += f" [shares a photo of {photo}]" if layout == "session" else f" (photo: {photo})"
                if layout == "session":
                    lines.append(f"- {turn['speaker']}: {text}")
                else:
                    lines += [f"**{turn['speaker']}**: {text}", ""]
                line = len(lines) if layout == "session" else len(lines) - 1
                where[(f"{when:%Y-%m-%d}.md", line + 2)] = f"{sample['sample_id']}:{turn['dia_id']}"
    _write(folder, {f"{d:%Y-%m-%d}": lines for d, lines in days.items()})
    return where, len(where)


def locomo_subject(sample: dict[str, Any], question: str) -> str | None:
    """The one speaker a LoCoMo question names (its scope), None when it names both or neither."""
    names = [conv_name for conv_name in (sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"])
             if re.search(rf"\b{re.escape(conv_name)}\b", question)]
    return names[0] if len(names) == 1 else None


def update_cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in UPDATES.open(encoding="utf-8")]


def updates(folder: Path, cases: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The update set as daily notes: each statement in its speaker's conversation section on its day
    (`## 与<name>的对话` / `- <name>：…` in Chinese, `## Chat with <name>` / `- <name>: …` in English)."""
    days: dict[str, list[str]] = {}
    for case in cases:
        for side in ("old", "new"):
            s = case[side]
            lines = days.setdefault(s["day"], [])
            head = f"## 与{s['subject']}的对话" if case["lang"] == "zh" else f"## Chat with {s['subject']}"
            colon = "：" if case["lang"] == "zh" else ": "
            lines += ([""] if lines else []) + [head, "", f"- {s['subject']}{colon}{s['text']}"]
    _write(folder, days)
    return days
