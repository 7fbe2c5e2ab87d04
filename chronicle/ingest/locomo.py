"""The LoCoMo long-conversation benchmark JSON: each session is a day of chat at its own date-time."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

_SESSION_KEY = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True)
class LocomoTurn:
    sample_id: str
    session: int
    session_time: datetime  # naive: the conversation's local time
    index: int  # position in the file, for line_no
    dia_id: str
    speaker: str
    text: str
    extra: dict[str, Any]


def parse_session_time(text: str) -> datetime:
    """`1:56 pm on 8 May, 2023` -> datetime(2023, 5, 8, 13, 56)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")


def iter_turns(data: list[dict[str, Any]]) -> Iterator[LocomoTurn]:
    """Every dialogue turn of every conversation in file order."""
    index = 0
    for sample in data:
        conv = sample["conversation"]
        sample_id = str(sample.get("sample_id", "locomo"))
        sessions = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.match(k)))
        for n in sessions:
            when = parse_session_time(conv[f"session_{n}_date_time"])
            for turn in conv[f"session_{n}"]:
                index += 1
                extra = {k: v for k, v in turn.items() if k not in {"speaker", "dia_id", "text"}}
                yield LocomoTurn(sample_id, n, when, index, turn["dia_id"], turn["speaker"], turn["text"], extra)
