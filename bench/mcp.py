"""What serving the memory over MCP costs: a `search_memories` tool call against the same search without MCP.

One home with `--memories` distilled-looking memories (Chinese and English, several people) in a real LanceDB
folder. The same questions, each asked once per path, after the same warm-up:

- baseline, same run: `chronicle.services.memory.search_memories` called in this process (the use case an MCP
  tool call wraps);
- ours: the `search_memories` tool of `chronicle mcp`, in its own process, through the official MCP client —
  over stdio and over streamable HTTP on loopback. The tool does the same search, then JSON and the output
  redaction gate, then the transport.

Overhead per question = tool-call latency − direct latency of the same question, the two taken back to back;
the figure is its 95th percentile (goal ≤ 20 ms), on the second pass over the questions, where both processes
have the query vectors cached (the overhead does not depend on the search; ~100 ms of query embedding on a busy
machine only buries it in noise). The first pass's figures are kept beside it.
`python -m bench.mcp [--memories 2000] [--queries 200]`.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio

from bench._util import load_sampler, result

ROOT = Path(__file__).resolve().parents[1]
LAUNCH = "from chronicle.cli.main import app; app()"
PEOPLE = ["张曼婷", "王峰", "李娜", "Tom", "Caroline", "Melanie"]
FACTS_ZH = ["每天晚上{h}点睡觉", "周末去{p}跑步", "在{p}的一家医院做护士", "喜欢吃{f}", "对{f}过敏", "最近搬到了{p}"]
FACTS_EN = ["goes to bed at {h} pm", "runs along the {p} on weekends", "works as a nurse in {p}", "likes {f}",
            "is allergic to {f}", "moved to {p} last month"]
PLACES = ["杭州", "上海", "西湖", "Berlin", "the river", "Shenzhen", "Lisbon", "成都"]
FOODS = ["ramen", "火锅", "penicillin", "peanuts", "饺子", "sushi"]


def _memories(n: int) -> list[tuple[str, str]]:
    out = []
    for i in range(n):
        person = PEOPLE[i % len(PEOPLE)]
        facts = FACTS_ZH if i % 2 == 0 else FACTS_EN
        text = facts[(i // 2) % len(facts)].format(h=9 + i % 4, p=PLACES[i % len(PLACES)], f=FOODS[i % len(FOODS)])
        out.append((person, f"{person}{text}（{i}）" if i % 2 == 0 else f"{person} {text} (note {i})"))
    return out


def _questions(n: int) -> list[dict[str, Any]]:
    asks = ["几点睡觉", "在哪里跑步", "做什么工作", "喜欢吃什么", "对什么过敏", "住在哪里", "when does she sleep",
            "where does he run", "what is her job", "what food", "any allergies", "where did they move"]
    return [{"query": f"{PEOPLE[i % len(PEOPLE)]} {asks[i % len(asks)]} {i}",
             **({"about": PEOPLE[i % len(PEOPLE)]} if i % 3 == 0 else {})} for i in range(n)]


def _seed(home: Path, n: int) -> None:
    from chronicle.memory.model import Memory
    from chronicle.redaction.memories import redact_memory
    from chronicle.redaction.redactor import Redactor
    from chronicle.settings import Settings
    from chronicle.storage.db import connect
    from chronicle.storage.memory.store import MemoryStore

    settings = Settings(home=home)
    redactor = Redactor.build()
    store = MemoryStore(settings)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    batches = []
    for day, chunk in enumerate(range(0, n, 100)):
        batch = [redact_memory(Memory(content=text, summary=text[:40], importance=0.3 + (i % 7) / 10,
                                      target_file="USER.md", subject=person, tags=["bench"]), redactor)
                 for i, (person, text) in enumerate(_memories(n)[chunk : chunk + 100])]
        batches.append((batch, start + timedelta(days=day)))
    store.upsert_many(batches)
    store.ensure_indexes()
    with connect(settings):
        pass


def _direct_search(home: Path) -> Any:
    from chronicle.services.memory import search_memories
    from chronicle.settings import Settings

    settings = Settings(home=home)

    def search(q: dict[str, Any]) -> float:
        t = time.perf_counter()
        search_memories(settings, q["query"], about=q.get("about"), limit=10)
        return time.perf_counter() - t

    return search


async def _paired(client: Any, direct: Any, questions: list[dict[str, Any]], warm: int) -> list[tuple[float, float]]:
    """(direct, tool call) latency per question, the two taken one right after the other: load that comes and goes
    on a shared machine hits both sides of a pair alike."""
    for q in questions[:warm]:
        warm_q = {**q, "query": q["query"] + " warm"}
        direct(warm_q)
        await client.call_tool("search_memories", warm_q)
    out = []
    for _ in range(2):  # the second pass: query vectors cached on both sides, so the search is cheap (see main)
        for q in questions:
            d = direct(q)
            t = time.perf_counter()
            res = await client.call_tool("search_memories", {**q, "limit": 10})
            out.append((d, time.perf_counter() - t))
            assert not res.is_error, res.content
    return out


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONICLE_")}
    return env | {"CHRONICLE_HOME": str(home), "PYTHONPATH": str(ROOT), "CHRONICLE_WARM": "0"}


def _stdio(home: Path, questions: list[dict[str, Any]], warm: int) -> list[tuple[float, float]]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-c", LAUNCH, "mcp"], env=_env(home))
    direct = _direct_search(home)

    async def main() -> list[tuple[float, float]]:
        async with Client(params, read_timeout_seconds=300) as client:
            return await _paired(client, direct, questions, warm)

    return anyio.run(main)


def _http(home: Path, questions: list[dict[str, Any]], warm: int) -> list[tuple[float, float]]:
    from mcp import Client

    direct = _direct_search(home)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-c", LAUNCH, "mcp", "--http", "--port", str(port)], env=_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the MCP HTTP server did not start")
            time.sleep(0.1)

        async def main() -> list[tuple[float, float]]:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=300) as client:
                return await _paired(client, direct, questions, warm)

        return anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warm", type=int, default=10)
    args = parser.parse_args()
    questions = _questions(args.queries)
    with tempfile.TemporaryDirectory() as tmp, load_sampler() as load:
        home = Path(tmp) / "home"
        _seed(home, args.memories)
        # Each transport gets its own questions: the query-vector cache of either process never sees one twice.
        pairs = {"stdio": _stdio(home, questions, args.warm),
                 "http": _http(home, [{**q, "query": q["query"] + " h"} for q in questions], args.warm)}
    n = args.queries
    figures: dict[str, Any] = {"memories": args.memories, "queries": n}
    for name, got in pairs.items():
        for phase, part in (("cold", got[:n]), ("warm", got[n:])):
            direct, calls, over = [d for d, _ in part], [c for _, c in part], [c - d for d, c in part]
            figures |= {f"{name}_{phase}_direct_p50_ms": 1000 * statistics.median(direct),
                        f"{name}_{phase}_direct_p95_ms": 1000 * _p(direct, 95),
                        f"{name}_{phase}_p50_ms": 1000 * statistics.median(calls),
                        f"{name}_{phase}_p95_ms": 1000 * _p(calls, 95),
                        f"{name}_{phase}_overhead_p50_ms": 1000 * statistics.median(over),
                        f"{name}_{phase}_overhead_p95_ms": 1000 * _p(over, 95)}
    # The goal is judged on the warm pass: the overhead is additive, and a search that costs ~100 ms of query
    # embedding on a loaded machine buries it in noise (the cold pass's figures are kept beside it).
    worst = max(figures["stdio_warm_overhead_p95_ms"], figures["http_warm_overhead_p95_ms"])
    result("mcp", measure="search_memories tool call vs the same search in process, paired (p95, warm queries)",
           ours=figures["stdio_warm_p95_ms"] / 1000, baseline=figures["stdio_warm_direct_p95_ms"] / 1000,
           baseline_name="search_memories in process, same run", unit="s",
           goal="tool-call overhead p95 <= 20 ms (stdio and HTTP)", ok=worst <= 20.0,
           extra=figures | load.record())
    for key, value in figures.items():
        print(f"  {key}: {value:.2f}" if isinstance(value, float) else f"  {key}: {value}")


if __name__ == "__main__":
    main()
