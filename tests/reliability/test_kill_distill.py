"""kill -9 of a real distillation process at seeded random points, then a rerun: LanceDB, the ledgers and the
knowledge files end exactly as after an undisturbed run, and no knowledge file is ever seen half-written."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
from collections import Counter
from datetime import date
from pathlib import Path

import duckdb
import lancedb
import pytest

from tests.fakellm import FakeLLMServer
from tests.reliability.killer import python_cmd
from tests.reliability.procs import (
    DISTILL_DIES_BEFORE_LEDGER_DRIVER,
    DISTILL_DRIVER,
    KNOWLEDGE_DRIVER,
    Pace,
    child_env,
    knowledge_item,
    run_marked,
    spread_points,
)

N_KILLS = 3  # random points over the flow body; the window between store and ledger is hit on purpose (below)
N_WRITE_KILLS = 5
UNTIL = date(2026, 4, 26)
DAYS = 80  # the OpenClaw notes (February) and the sample's notes (March-April)
OPENCLAW = Path(__file__).parents[1] / "data" / "openclaw" / "memory"
# Human-written knowledge files that exist before the run: each write must keep them whole.
SEED_FILES = {
    "SOUL.md": "# SOUL\n\nWritten by a human: calm, precise, never sarcastic.\n",
    "USER.md": "# USER\r\n\r\nHand-written profile, CRLF line endings.\r\n",
    "MEMORY.md": ("# MEMORY\n\nCore principles, by hand.\n\n"
                  "<!-- chronicle:begin 2026-01-01 source=2026-01-01.md -->\n"
                  "## 🧠 Distilled 2026-01-01 (from 2026-01-01.md)\n\n"
                  "- an older distilled line <!-- chronicle:mem id=2026-01-01-aaaa hash=aaaaaaaaaaaaaaaa -->\n"
                  "<!-- chronicle:end -->\n"),
}
_BEGIN = re.compile(r"^<!-- chronicle:begin \S+ source=.* -->$")
_END = re.compile(r"^<!-- chronicle:end -->$")


def knowledge(ws: Path) -> dict[str, bytes]:
    """The knowledge files (temp files of an interrupted atomic write and the lock are not knowledge)."""
    return {p.name: p.read_bytes() for p in sorted(ws.glob("*.md"))} if ws.exists() else {}


def assert_well_formed(name: str, data: bytes, where: str) -> None:
    """Every managed section that begins also ends, with no nesting, and the text is valid UTF-8."""
    open_at = None
    for n, line in enumerate(data.decode("utf-8").splitlines(), start=1):
        if _BEGIN.match(line):
            assert open_at is None, f"{where}: {name} line {n} opens a section inside the one of line {open_at}"
            open_at = n
        elif _END.match(line):
            assert open_at is not None, f"{where}: {name} line {n} ends a section that never began"
            open_at = None
    assert open_at is None, f"{where}: {name} section of line {open_at} never ends (truncated file?)"


def store_rows(home: Path) -> list[tuple[str, str]]:
    db = lancedb.connect(str(home / "lancedb"))
    try:
        table = db.open_table("memories")
    except ValueError:  # never written
        return []
    return sorted(zip(*table.to_arrow().select(["id", "content_hash"]).to_pydict().values(), strict=True))


def ledger(home: Path) -> tuple[list[tuple], list[tuple]]:
    with duckdb.connect(str(home / "chronicle.duckdb"), read_only=True) as conn:
        chunks = conn.execute("SELECT input_hash, chunk_key, memories FROM distill_chunks ORDER BY 1").fetchall()
        events = conn.execute("SELECT event_id, event, memory_id, content_hash FROM memory_events").fetchall()
    return chunks, events


@pytest.mark.slow
def test_kill_during_distill_then_rerun(home: Path, tmp_path: Path, sample_dir: Path, fake_llm: FakeLLMServer,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.settings import PREFECT_API_URL

    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs

    # Embeddings from the local server: a child process then starts in seconds, not after loading torch.
    emb = {"EMBEDDING_URL": fake_llm.base_url, "EMBEDDING_MODEL": "fake-embedding"}
    for key, value in emb.items():
        monkeypatch.setenv(key, value)
    ingest_logs([str(sample_dir / "memory"), str(OPENCLAW)])
    base = home / "chronicle.duckdb"
    api = PREFECT_API_URL.value()
    cmd = [*python_cmd(DISTILL_DRIVER), str(DAYS), UNTIL.isoformat()]

    def fresh(name: str) -> Path:
        folder = tmp_path / name
        (folder / "workspace").mkdir(parents=True)
        shutil.copy2(base, folder / "chronicle.duckdb")
        for file, text in SEED_FILES.items():
            (folder / "workspace" / file).write_bytes(text.encode())
        return folder

    clean = fresh("clean")
    duration, marked_at = run_marked(cmd, child_env(clean, api, **emb), tmp_path)
    with duckdb.connect(str(clean / "chronicle.duckdb"), read_only=True) as conn:
        started, ended = conn.execute("SELECT started_at, ended_at FROM pipeline_runs "
                                      "WHERE flow_name = 'distill-memory'").fetchall()[0]
    # Kill points are drawn from the flow body of the undisturbed run (not Prefect's start-up and shutdown).
    window = ((started - marked_at).total_seconds(), (ended - marked_at).total_seconds())
    assert 0 < window[0] < window[1] < duration, (window, duration)
    after = knowledge(clean / "workspace")
    rows, (chunks, events) = store_rows(clean), ledger(clean)
    before = {name: SEED_FILES[name].encode() if name in SEED_FILES else None for name in after}
    # (AGENTS.md is behind approval: its memories are proposals, the file is not written.)
    assert {"MEMORY.md", "USER.md", "TOOLS.md"} <= set(after) and len(rows) > 40 and len(chunks) > 15
    for name, text in SEED_FILES.items():  # the human text is kept byte for byte
        assert after[name].startswith(text.encode()), name
    kinds = Counter(e[1] for e in events)
    assert kinds["ADD"] == len(rows) == len({h for _, h in rows})

    def killed_then_rerun(home_i: Path, where: str) -> tuple[bool, bool]:
        """Straight after the kill: each knowledge file is its state before or after the run's write, never a
        prefix or a mix; the store holds only memories of the undisturbed run, each once. After a rerun:
        everything as after the undisturbed run. Returns (memories stored, ledger recorded) at the kill."""
        files = knowledge(home_i / "workspace")
        for name, data in files.items():
            assert_well_formed(name, data, where)
            assert data in (before.get(name), after[name]), f"{where}: {name} is neither before nor after its write"
        assert set(files) >= set(SEED_FILES), where
        now_rows, (now_chunks, _) = store_rows(home_i), ledger(home_i)
        assert set(now_rows) <= set(rows) and len({h for _, h in now_rows}) == len(now_rows), where
        assert set(now_chunks) <= set(chunks), where

        monkeypatch.setenv("CHRONICLE_HOME", str(home_i))
        summary = distill_memory(days=DAYS, until=UNTIL)
        assert knowledge(home_i / "workspace") == after, f"{where}: knowledge files differ after the rerun"
        final_rows, (final_chunks, final_events) = store_rows(home_i), ledger(home_i)
        assert final_rows == rows, f"{where}: LanceDB lost or duplicated memories"
        assert final_chunks == chunks, f"{where}: distill_chunks differ"
        # memory_events: every stored memory is accounted for, nothing refers to a missing one, and each
        # distilled memory has exactly one event (a memory stored before the kill shows as NOOP, not twice).
        final_kinds = Counter(e[1] for e in final_events)
        assert len({e[0] for e in final_events}) == len(final_events), where
        assert {e[2] for e in final_events if e[1] != "REJECT"} == {r[0] for r in rows}, where
        assert final_kinds["REJECT"] == kinds["REJECT"], where
        assert sum(final_kinds.values()) == sum(kinds.values()), f"{where}: {final_kinds} vs {kinds}"
        assert summary.store_rows == len(rows)
        return bool(now_rows), bool(now_chunks)

    killed, pace = 0, Pace(duration)
    for i, point in enumerate(spread_points(seed=20261202, n=N_KILLS, start=window[0], end=window[1])):
        hit, name = pace.kill(cmd, tmp_path, point, lambda name: child_env(fresh(name), api, **emb), f"killed{i}")
        killed += hit
        killed_then_rerun(tmp_path / name, f"kill at {point:.2f}s (flow body {window[0]:.2f}..{window[1]:.2f}s)")
    # Timings are noisy on a shared machine: a kill run may finish before its point.
    assert killed >= N_KILLS - 2, f"only {killed} of {N_KILLS} runs were still working when killed {window}"

    # The window a rerun must repair, every time: killed after the store writes, before the ledger's commit.
    dying = [*python_cmd(DISTILL_DIES_BEFORE_LEDGER_DRIVER), str(DAYS), UNTIL.isoformat()]
    env = child_env(fresh("before-ledger"), api, **emb)
    ran = subprocess.run(dying, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert ran.returncode == -signal.SIGKILL, f"no death at the ledger ({ran.returncode}): {ran.stderr[-2000:]}"
    stored, recorded = killed_then_rerun(tmp_path / "before-ledger", "killed before the ledger")
    assert stored and not recorded, (stored, recorded)


def _states(seed: str, n: int) -> list[bytes]:
    """MEMORY.md after the first 0..n writes of KNOWLEDGE_DRIVER (pure: the same `apply` the writer uses),
    computed once: each state is the one before it plus one write."""
    from chronicle.distill.sections import apply

    text, out = seed, [seed.encode()]
    for j in range(n):
        text, _ = apply(text, [knowledge_item(j)])
        out.append(text.encode())
    return out


@pytest.mark.slow
def test_kill_during_knowledge_file_writes(tmp_path: Path) -> None:
    """SIGKILL while the real writer replaces a MEMORY.md growing to ~600 KB (and backs it up) again and again: the file
    and every backup are always exactly the state before or after one write."""
    ws = tmp_path / "ws"
    ws.mkdir()
    seed = SEED_FILES["MEMORY.md"]
    env = child_env(tmp_path, "http://127.0.0.1:9/unused")
    writes = 40
    cmd = [*python_cmd(KNOWLEDGE_DRIVER), str(ws), str(writes)]
    (ws / "MEMORY.md").write_text(seed, encoding="utf-8")
    duration, _ = run_marked(cmd, env, tmp_path)
    states = _states(seed, writes)
    assert (ws / "MEMORY.md").read_bytes() == states[writes]

    def fresh(_name: str) -> dict[str, str]:
        shutil.rmtree(ws)
        ws.mkdir()
        (ws / "MEMORY.md").write_text(seed, encoding="utf-8")
        return env

    killed, seen, pace = 0, set(), Pace(duration)
    for i, point in enumerate(spread_points(seed=20261203, n=N_WRITE_KILLS, start=0.05, end=duration * 0.95)):
        killed += pace.kill(cmd, tmp_path, point, fresh, f"write{i}")[0]
        where = f"kill at {point:.2f}s of {duration:.2f}s"
        for path in [ws / "MEMORY.md", *sorted((ws / ".backups").glob("MEMORY.md.*"))]:
            data = path.read_bytes()
            assert_well_formed(path.name, data, where)
            k = data.count(b"<!-- chronicle:mem id=") - 1  # minus the seed's own bullet
            whole = 0 <= k <= writes and data == states[k]
            assert whole, f"{where}: {path.name} is not the state after {k} whole writes"
            if path.name == "MEMORY.md":
                seen.add(k)
    assert killed >= N_WRITE_KILLS - 2, f"only {killed} of {N_WRITE_KILLS} runs were still writing when killed"
    assert len(seen) >= N_WRITE_KILLS - 3, f"kills landed after too few distinct writes: {sorted(seen)}"


def test_rerun_after_a_kill_between_store_and_ledger_keeps_memory_stats(
        home: Path, tmp_path: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The state such a kill leaves, made deterministically: LanceDB holds the run's memories, DuckDB none of its
    ledger rows (a copy of an undisturbed run's LanceDB folder next to the pre-run DuckDB file)."""
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs

    monkeypatch.setenv("EMBEDDING_URL", fake_llm.base_url)
    monkeypatch.setenv("EMBEDDING_MODEL", "fake-embedding")
    ingest_logs([str(OPENCLAW)])
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    shutil.copy2(home / "chronicle.duckdb", crashed / "chronicle.duckdb")
    distill_memory(days=11, until=date(2026, 2, 24))
    shutil.copytree(home / "lancedb", crashed / "lancedb")

    def stats(db: Path) -> list[tuple]:
        with duckdb.connect(str(db), read_only=True) as conn:
            return conn.execute("SELECT * FROM memory_stats ORDER BY ALL").fetchall()

    expected = stats(home / "chronicle.duckdb")
    assert len(expected) > 10 and len(store_rows(home)) > 20
    monkeypatch.setenv("CHRONICLE_HOME", str(crashed))
    distill_memory(days=11, until=date(2026, 2, 24))
    assert knowledge(crashed / "workspace") == knowledge(home / "workspace")
    assert store_rows(crashed) == store_rows(home)
    assert stats(crashed / "chronicle.duckdb") == expected


def test_stored_rows_no_rerun_sends_again_get_their_add_rows(
        home: Path, tmp_path: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A killed run's memories that the rerun never produces again (another window; an LLM answering
    differently) are still accounted for: `memory_events` gets an ADD row for every stored memory."""
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs

    monkeypatch.setenv("EMBEDDING_URL", fake_llm.base_url)
    monkeypatch.setenv("EMBEDDING_MODEL", "fake-embedding")
    ingest_logs([str(OPENCLAW)])
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    shutil.copy2(home / "chronicle.duckdb", crashed / "chronicle.duckdb")
    distill_memory(days=11, until=date(2026, 2, 24))
    shutil.copytree(home / "lancedb", crashed / "lancedb")
    monkeypatch.setenv("CHRONICLE_HOME", str(crashed))
    summary = distill_memory(days=1, until=date(2026, 2, 24))  # re-sends only the last day

    rows = {r[0] for r in store_rows(crashed)}
    with duckdb.connect(str(crashed / "chronicle.duckdb"), read_only=True) as conn:
        added = conn.execute("SELECT memory_id, reason FROM memory_events WHERE event = 'ADD'").fetchall()
        counted = conn.execute("SELECT sum(memories) FROM memory_stats").fetchall()[0][0]
    assert len(rows) > 40 and {m for m, _ in added} == rows and len(added) == len(rows)
    assert sum("reconciled" in reason for _, reason in added) == summary.tally.ledger_reconciled > 20
    assert counted >= len(rows)  # memory_stats counts every stored memory (once per tag)
    assert distill_memory(days=1, until=date(2026, 2, 24)).tally.ledger_reconciled == 0  # nothing left to repair
