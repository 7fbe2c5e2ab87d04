"""The capacity model: the bottleneck moves from the workers to the shared API server as workers are added."""

from __future__ import annotations

from scripts.capacity import Costs, main, table


def test_bottleneck_moves_from_workers_to_the_api_server() -> None:
    rows = table(Costs(worker_cpu_ms=10, server_cpu_ms=2.5, commit_ms=1), 156_000, (1, 2, 8, 32))
    assert [r["bottleneck"] for r in rows] == ["workers", "workers", "API server", "API server"]
    assert rows[0]["weeks/s"] == "100" and rows[-1]["weeks/s"] == "400"
    llm = table(Costs(llm_concurrency=8, latency_s=2.0), 1000, (32,))
    assert llm[0]["bottleneck"] == "LLM" and llm[0]["weeks/s"] == "4"


def test_prints_a_markdown_table(capsys) -> None:  # type: ignore[no-untyped-def]
    main(["--weeks", "156000"])
    out = capsys.readouterr().out
    assert "156,000 project-weeks" in out and "| workers | weeks/s | time | bottleneck | next |" in out
