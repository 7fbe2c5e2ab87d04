"""bench/memory_e2e: LoCoMo conversations as daily notes -> ingest -> distill (offline engine) -> search.

The first `--samples` LoCoMo conversations (default 2: conv-26 and conv-30, 788 turns over 38 days, as in issue 13)
are written as `memory/YYYY-MM-DD.md`, one bullet per turn ("- Speaker: text", a shared photo's caption in
brackets), one `## <time>` heading per session. Then, in this process, the real flows: `ingest_logs` and
`distill_memory` over the whole date range (offline engine, default embedder), and for every question of
categories 1-4 a hybrid search of the distilled store (no filter). Measured:

- hit@5 / hit@10: a question is hit when a top-k memory was distilled from one of its evidence turns (a memory's
  `source_entry_ids` -> the note line it came from -> the turn written on that line);
- knowledge-file memory lines per 100 turns: bullet lines the distill wrote into the workspace files;
- distill throughput: note entries per second of the `distill_memory` flow (wall), against the raw embedding
  rate of the same entry texts with the same model in the same process (`embedder.embed`, one call) — goal
  >= 0.5x. `--profile` writes a pyinstrument profile of the distill to bench/out/memory_e2e_<corpus>_profile.txt.

Goals (issue 13): hit@10 >= 0.75 with <= 20 knowledge lines per 100 turns; throughput >= 0.5x raw embedding.

Both corpora by default (`--corpus locomo|memorybank` for one). `memorybank` runs the same pipeline on the
Chinese MemoryBank corpus (tests/data/memorybank: 15 users x 10 days, one `## <user>` section per user and day,
"- 周立：…" / "- AI伴侣：…" bullets) and its 100 probing questions with our evidence labels, each searched with its
user's tag (the section heading) as the filter.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time
from collections import Counter
from datetime import date, datetime
from pathlib import Path
from typing import Any

from bench._util import OUT, result
from bench.locomo import DATA, session_time
from bench.locomo import questions as locomo_questions

_SESSION = re.compile(r"session_(\d+)$")


def write_notes(samples: list[dict[str, Any]], folder: Path) -> tuple[dict[tuple[str, int], str], int]:
    """Write the conversations as daily notes; returns ((file name, line number) -> "sample:dia_id", turns)."""
    days: dict[date, list[str]] = {}
    where: dict[tuple[str, int], str] = {}
    turns = 0
    for sample in samples:
        conv = sample["conversation"]
        sessions = sorted(int(m.group(1)) for k in conv if (m := _SESSION.match(k)) and isinstance(conv[k], list))
        for n in sessions:
            when = session_time(conv[f"session_{n}_date_time"])
            lines = days.setdefault(when.date(), [])
            lines += ([""] if lines else []) + [f"## {when:%H:%M} {conv['speaker_a']} & {conv['speaker_b']}", ""]
            for turn in conv[f"session_{n}"]:
                text = " ".join(turn["text"].split())
                if turn.get("blip_caption"):
                    text += f" [shares a photo of {turn['blip_caption']}]"
                lines.append(f"- {turn['speaker']}: {text}")
                where[(f"{when:%Y-%m-%d}.md", len(lines))] = f"{sample['sample_id']}:{turn['dia_id']}"
                turns += 1
    folder.mkdir(parents=True, exist_ok=True)
    for day, lines in days.items():
        (folder / f"{day:%Y-%m-%d}.md").write_text("# Notes\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    # Line numbers above count from the first line after the "# Notes" header and blank line.
    return {(f, n + 2): d for (f, n), d in where.items()}, turns


def write_memorybank_notes(folder: Path) -> tuple[dict[tuple[str, int], str], int]:
    """MemoryBank as daily notes; returns ((file name, line number) -> "user:day:i:q|r", utterances)."""
    from bench.embedders import MEMORYBANK

    days: dict[str, list[str]] = {}
    where: dict[tuple[str, int], str] = {}
    for user, data in json.loads((MEMORYBANK / "memory_bank_cn.json").read_text()).items():
        for day, exchanges in data["history"].items():
            lines = days.setdefault(day, [])
            lines += ([""] if lines else []) + [f"## {user}", ""]
            for i, ex in enumerate(exchanges):
                for side, speaker, text in (("q", user, ex["query"]), ("r", "AI伴侣", ex["response"])):
                    lines.append(f"- {speaker}：{' '.join(text.split())}")
                    where[(f"{day}.md", len(lines) + 2)] = f"{user}:{day}:{i}:{side}"
    folder.mkdir(parents=True, exist_ok=True)
    for day, lines in days.items():
        (folder / f"{day}.md").write_text("# Notes\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return where, len(where)


def corpus(name: str, samples: int, folder: Path) -> tuple[dict[tuple[str, int], str], int, list]:
    """(line -> evidence id, turns, [(tag filter or None, question, evidence ids)]) of the chosen corpus."""
    if name == "memorybank":
        from bench.embedders import memorybank_questions

        where, turns = write_memorybank_notes(folder)
        return where, turns, memorybank_questions()
    data = json.loads(DATA.read_text())[:samples]
    where, turns = write_notes(data, folder)
    return where, turns, [(None, q, ev) for sample in data for q, ev in locomo_questions(sample)]


def knowledge_lines(workspace: Path) -> dict[str, int]:
    """Bullet lines per knowledge file (the distill writes one bullet per memory)."""
    out = {}
    for path in sorted(workspace.glob("*.md")):
        out[path.name] = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("- "))
    return out


def measure(corpus_name: str, samples: int, profile: bool) -> None:
    """One corpus through ingest -> distill -> search, in a fresh home; writes its result file."""
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        from chronicle.settings import Settings, using

        settings = Settings(home=Path(tmp) / "home", llm_url=None, embedding_url=None)
        where, turns, questions = corpus(corpus_name, samples, Path(tmp) / "memory")
        days = sorted(datetime.strptime(f, "%Y-%m-%d.md").date() for f, _ in where)
        first, last = days[0], days[-1]

        from flows.distill_memory import distill_memory
        from flows.ingest_logs import ingest_logs

        t0 = time.perf_counter()
        with using(settings):
            ingest_logs([str(Path(tmp) / "memory")], corpus_name)
        ingest_s = time.perf_counter() - t0

        from chronicle.memory.embedder import get_embedder
        from storage.db import connect
        from storage.memory_events import load_note_entries

        with connect(settings) as conn:
            entries = load_note_entries(conn, date.fromordinal(first.toordinal() - 1), last)
        embedder = get_embedder(settings)
        embedder.embed([e.content for e in entries[:64]])  # warm-up: model load and kernel choice
        profiler = None
        if profile:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.005)
            profiler.start()
        t0 = time.perf_counter()
        with using(settings):
            summary = distill_memory(days=(last - first).days + 1, until=last)
        distill_s = time.perf_counter() - t0
        if profiler is not None:
            profiler.stop()
            OUT.mkdir(exist_ok=True)
            (OUT / f"memory_e2e_{corpus_name}_profile.txt").write_text(
                profiler.output_text(unicode=True, show_all=False))
        t0 = time.perf_counter()
        embedder.embed([e.content for e in entries])
        raw_s = time.perf_counter() - t0

        entry_to_turn = {e.entry_id: where.get((Path(e.source_file).name, e.line_no or -1)) for e in entries}
        from storage.memory_store import MemoryStore

        store = MemoryStore(settings)
        hit = Counter()
        for tag, question, evidence in questions:
            found = store.search(question, limit=10, tags=[tag] if tag else None)
            for k in (5, 10):
                turns_found = {entry_to_turn.get(i) for h in found[:k] for i in h.source_entry_ids}
                hit[k] += bool(evidence & turns_found)
        n = len(questions)
        lines = knowledge_lines(settings.workspace_dir)
        rows = store.count()
    load_after = os.getloadavg()

    distill_rate = len(entries) / distill_s
    raw_rate = len(entries) / raw_s
    per_100 = 100 * sum(lines.values()) / turns
    print(f"{corpus_name}: {turns} turns -> {len(entries)} note entries -> {rows} memories; distill {distill_s:.1f}s "
          f"({distill_rate:.1f} entries/s) vs raw embedding {raw_rate:.0f} texts/s; hit@5 {hit[5] / n:.3f} "
          f"hit@10 {hit[10] / n:.3f} (n={n}); knowledge lines {sum(lines.values())} ({per_100:.1f}/100 turns)")
    label = (f"{turns} LoCoMo turns" if corpus_name == "locomo" else f"{turns} Chinese MemoryBank utterances")
    result(
        "memory_e2e" if corpus_name == "locomo" else "memory_e2e-zh",
        measure=(f"{label} as daily notes -> offline distill -> search: evidence hit@5 / hit@10 "
                 f"{hit[5] / n:.3f} / {hit[10] / n:.3f} ({n} questions), {per_100:.1f} knowledge lines per 100 "
                 f"turns; figure: distill throughput"),
        ours=distill_rate,
        baseline=raw_rate,
        baseline_name="raw embedding rate of the same texts, same model",
        unit=" /s",
        goal="hit@10 >= 0.75; <= 20 knowledge lines per 100 turns; distill >= 0.5x raw embedding",
        ok=hit[10] / n >= 0.75 and per_100 <= 20 and distill_rate >= 0.5 * raw_rate,
        extra={
            "hit@5": hit[5] / n, "hit@10": hit[10] / n, "questions": n, "turns": turns, "entries": len(entries),
            "memories": rows, "knowledge_lines": lines, "knowledge_lines_per_100_turns": per_100,
            "distill_seconds": distill_s, "ingest_seconds": ingest_s, "raw_embed_seconds": raw_s,
            "events": summary.as_dict().get("events"), "embedding_model": settings.embedding_model,
            "load_avg_before": load_before, "load_avg_after": load_after, "corpus": corpus_name,
            "samples": samples if corpus_name == "locomo" else None,
        },
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", choices=["locomo", "memorybank", "both"], default="both")
    parser.add_argument("--samples", type=int, default=2, help="LoCoMo conversations")
    parser.add_argument("--profile", action="store_true", help="pyinstrument profile of the distill")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    for name in ("LLM_URL", "EMBEDDING_URL"):
        os.environ.pop(name, None)  # the offline engine and the embedded default model
    from prefect.testing.utilities import prefect_test_harness

    # A throw-away Prefect API (its own SQLite) so the bench never writes into ~/.prefect; a busy machine needs
    # longer than the ephemeral server's default start-up timeout.
    with prefect_test_harness(server_startup_timeout=180):
        for name in ("locomo", "memorybank") if args.corpus == "both" else (args.corpus,):
            measure(name, args.samples, args.profile)


if __name__ == "__main__":
    main()
