"""The AI assistant's daily notes (OpenClaw-style `memory/*.md`) over the sample's last four weeks.

Between 15 and 19 days get a note; two carry a slug in their file name and one sits in a nested
`daily/` folder, as real note folders do. One note holds two FAKE secrets (the "canaries") so the
redaction stage can be shown to remove them; `generate_sample` lists them in the ground truth.
"""

from __future__ import annotations

import random
import string
from datetime import date, timedelta

from chronicle.sample import text as txt
from chronicle.sample.trial import Trial


def _alnum(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def daily_notes(rng: random.Random, trials: list[Trial], end: date) -> tuple[dict[str, str], list[str]]:
    """({relative path: markdown}, canaries) for the 28 days ending on `end`; trials must have run."""
    n = rng.randint(15, 19)
    days = [end - timedelta(days=27 - off) for off in sorted(rng.sample(range(28), n))]
    slug_a, slug_b, nested = rng.sample(range(n), 3)
    canary_at = n // 2
    canaries = ["sk-demo" + _alnum(rng, 32), "demo" + _alnum(rng, 16)]
    p0, p1 = trials[0], trials[-1]
    ctx = {"user": "王老师", "assistant": rng.choice(txt.ASSISTANT_NAMES), "project": p0.project,
           "project2": p1.project, "site": p0.team.sites[0].name, "model": "qwen2.5-14b-instruct"}
    files: dict[str, str] = {}
    for i, d in enumerate(days):
        enrolled = sum(e.type == "enrollment" and e.at.date() <= d for e in p0.events)
        values = ctx | {"date": d.isoformat(), "n": enrolled, "time": f"{rng.randint(6, 23):02d}:00"}
        lines = [f"# {d.isoformat()} {txt.WEEKDAYS_CN[d.weekday()]} · {rng.choice(txt.NOTE_TITLES)}", ""]
        lines += [f"## {rng.randint(7, 22):02d}:{rng.randrange(60):02d} 会话", "",
                  rng.choice(txt.NOTE_PARAGRAPHS).format(**values), ""]
        for key in rng.sample(list(txt.NOTE_SECTIONS), rng.randint(3, 5)):
            heading, bullets = txt.NOTE_SECTIONS[key]
            lines += [f"## {heading}", ""]
            lines += [f"- {b.format(**values)}" for b in rng.sample(bullets, rng.randint(1, 3))] + [""]
        if i == canary_at:
            lines += ["## 临时记录 / Scratch", "",
                      "<!-- FAKE demo secrets, planted to demonstrate redaction; not real credentials -->",
                      f"- 用户临时贴了一个 OpenAI key：`{canaries[0]}`，已提醒改放 `.env`", "",
                      "```ini", "DB_HOST=127.0.0.1", f"DB_PASSWORD={canaries[1]}", "```", ""]
        name = d.isoformat()
        if i in (slug_a, slug_b):
            name += "-" + txt.NOTE_SLUGS[(i * 7) % len(txt.NOTE_SLUGS)]
        files[f"memory/{'daily/' if i == nested else ''}{name}.md"] = "\n".join(lines).rstrip() + "\n"
    return files, canaries
