"""A spread backfill: disjoint shards, each owned by one run, and each week credited to the run that wrote it,
even a child killed before it reported."""

from __future__ import annotations

from pathlib import Path

from chronicle.services import shards
from chronicle.services.weekly import plan_project, plan_week, run_week
from chronicle.settings import Settings
from chronicle.weekly.outcome import WeekOutcome


def test_weeks_a_killed_child_wrote_are_the_childs_not_cached(trial: Path) -> None:
    from chronicle.tasks.spread import _credit_children

    settings = Settings()
    plan = plan_project(settings, "XH201")
    weeks = [job.week for job in plan.to_run[:10]]
    # The child (run "child-run") wrote the first 8 weeks, then was killed before publishing its rows.
    for week in weeks[:8]:
        run_week(settings, plan_week(settings, "XH201", week), "child-run")
    # The parent's sweep then ran all 10: 8 found current (cached), 2 written by the parent itself.
    swept = [WeekOutcome("XH201", w.number, "cached", "offline-extractive", 3) for w in weeks[:8]]
    swept += [run_week(settings, plan_week(settings, "XH201", w), "parent-run").outcome for w in weeks[8:]]
    # The operator's progress bar counts the weeks a running child has written.
    assert shards.written_count(settings, ["child-run"]) == 8 and shards.written_count(settings, ["x"]) == 0
    assert shards.written_count(settings, ["child-run", "parent-run"]) == 10
    theirs, mine = _credit_children(settings, swept, {"child-run"})
    assert sorted(r.week_number for r in theirs) == sorted(w.number for w in weeks[:8])
    assert {r.outcome for r in theirs} <= {"generated", "empty"} and "cached" not in {r.outcome for r in theirs}
    assert [r.week_number for r in mine] == [w.number for w in weeks[8:]]
    # A week a run of its own (not a child) left current stays cached.
    theirs, mine = _credit_children(settings, swept[:8], {"another-child"})
    assert theirs == [] and {r.outcome for r in mine} == {"cached"}


def test_a_backfill_is_spread_only_where_children_add_throughput(trial: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    settings = Settings()
    assert settings.llm.offline
    assert not shards.worth_spreading(settings, 20, None)
    assert shards.worth_spreading(settings, shards.SPREAD_MIN_OFFLINE_WEEKS, None)
    monkeypatch.setenv("LLM_URL", "http://127.0.0.1:9/v1")
    llm = Settings()
    # LLM weeks share the `llm` limit across runs: a child helps only when one run cannot fill it by itself.
    assert not shards.worth_spreading(llm, 2, None)  # four weeks per slot in flight: the limit is full
    assert not shards.worth_spreading(llm, 500, llm.llm.concurrency)
    assert shards.worth_spreading(llm, 2, 1) and shards.worth_spreading(llm, 500, llm.llm.concurrency - 1)
    assert not shards.worth_spreading(llm, 1, 1)
    assert not shards.worth_spreading(Settings(backfill_max_workers=8, llm_concurrency=8), 50, None)
    assert shards.worth_spreading(Settings(backfill_max_workers=2, llm_concurrency=8), 50, None)


def test_shards_are_disjoint_contiguous_and_cover_every_week() -> None:
    weeks = [("A", w) for w in range(202501, 202553)] + [("B", w) for w in range(202501, 202511)]
    for parts in (1, 2, 3, 5, 61, 62, 70):
        cut = shards.cut(weeks, parts)
        assert len(cut) == parts and [item for part in cut for item in part] == weeks  # in order, each once
        sizes = [len(part) for part in cut]
        assert max(sizes) - min(sizes) <= 1, sizes
    assert shards.cut([], 3) == [[], [], []]


def test_a_shard_is_owned_by_the_first_run_that_takes_it(trial: Path) -> None:
    """The child takes its shard when it starts; the parent, done with its own, takes the shard of a child that
    has not started — and then the child, starting late, ends at once. A child that started and went silent
    keeps its shard (the parent treats it as dead: Crashed, its weeks credited to it)."""
    settings = Settings()
    assert shards.own_shard(settings, "batch-1", 1, 1)  # the child first
    assert shards.own_shard(settings, "batch-1", 1, 1)  # a retry of the same child run keeps it
    assert not shards.own_shard(settings, "batch-1", 1, 0)  # so the parent knows it started
    assert shards.own_shard(settings, "batch-1", 2, 0)  # the parent first
    assert not shards.own_shard(settings, "batch-1", 2, 2)  # the late child ends without planning
    assert shards.own_shard(settings, "batch-2", 2, 2)  # another batch's shards are its own
    assert not shards.is_alive(settings, "batch-1", 1)
    with shards.alive(settings, "batch-1", 1):
        assert shards.is_alive(settings, "batch-1", 1) and not shards.is_alive(settings, "batch-1", 2)
    assert not shards.is_alive(settings, "batch-1", 1)


def test_the_parent_takes_the_shard_of_a_child_that_never_started_and_cancels_it(trial: Path,
                                                                                    prefect_api: None) -> None:
    """A child run still queued when the parent has written its own shard is not waited for: the parent owns
    its shard now (a worker picking the child up after all finds it taken, and the child ends at once) and the
    queued run is Cancelled, saying why. A child that took its shard first is never cancelled."""
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.states import Scheduled

    from chronicle.tasks.spread import _Children

    @flow(name="queued-child")
    def queued_child() -> None:
        pass

    class Bar:  # the parent's progress bar, refreshed while it waits
        def refresh(self, force: bool = False) -> None:
            pass

    settings = Settings()
    with get_client(sync_client=True) as client:
        queued = client.create_flow_run(queued_child, state=Scheduled())
        working = client.create_flow_run(queued_child, state=Scheduled())
    assert shards.own_shard(settings, "batch-q", 2, 2)  # child 2 took its shard: it started
    with shards.alive(settings, "batch-q", 2):  # and works while the parent settles the others
        watch = _Children(settings, "batch-q", {1: queued.id, 2: working.id})
        assert watch.settle(Bar()) == [1]  # type: ignore[arg-type]
        assert list(watch.pending) == [2] and watch.rows == []
    assert not shards.own_shard(settings, "batch-q", 1, 1)  # the late child finds its shard taken
    with get_client(sync_client=True) as client:
        cancelled, still = client.read_flow_run(queued.id).state, client.read_flow_run(working.id).state
    assert cancelled.is_cancelled() and "parent" in (cancelled.message or ""), cancelled
    assert still.is_scheduled(), still
