"""The capacity model: the bottleneck moves from the workers to the shared API server as workers are added."""

from __future__ import annotations

from scripts.capacity import Costs, main, table


def test_bottleneck_moves_from_workers_to_the_api_server() -> None:
    rows = table(Costs(worker_cpu_ms=10, server_cpu_ms=2.5, commit_ms=1), 156_000, (1, 2, 8, 32))
    assert [r["bottleneck"] for r in rows] == ["workers", "workers", "API server", "API server"]
    assert rows[0]["weeks/s"] == "100" and rows[-1]["weeks/s"] == "400"
    llm = table(Costs(llm_concurrency=8, latency_s=2.0), 1000, (32,))
    assert llm[0]["bottleneck"] == "LLM" and llm[0]["weeks/s"] == "4"


def test_spreading_pays_only_past_the_child_start_up_and_never_when_a_shared_part_limits() -> None:
    offline = Costs(worker_cpu_ms=20, server_cpu_ms=4, commit_ms=1, child_start_s=25)
    # 1 worker: 50 weeks/s; 2: 100 weeks/s. 25 s + W/100 < W/50 from W = 2,500 weeks.
    [one, two] = table(offline, 2_000, (1, 2))
    assert two["spread pays from"] == "2,500 weeks" and one["spread pays from"] == "—"
    assert one["time"] == "40 s" and two["time"] == "45 s"  # 2,000 weeks: one worker is still faster
    assert table(offline, 10_000, (1, 2))[1]["time"] == "2 min"  # 125 s against 200 s
    # An LLM endpoint that one worker already saturates: more workers never pay.
    llm = table(Costs(llm_concurrency=8, latency_s=2.0), 1000, (2, 32))
    assert {row["spread pays from"] for row in llm} == {"never"}


def test_prints_a_markdown_table(capsys) -> None:  # type: ignore[no-untyped-def]
    main(["--weeks", "156000"])
    out = capsys.readouterr().out
    assert "156,000 project-weeks" in out
    assert "| workers | weeks/s | time | bottleneck | next | spread pays from |" in out
