"""`chronicle setup`: the Prefect objects the deployments rely on, created or corrected idempotently."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chronicle.deployments.definitions import DUCKDB_WRITER_LIMIT, LLM_LIMIT, WORK_POOL
from chronicle.settings import Settings

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient


def wanted_limits(settings: Settings) -> dict[str, int]:
    """Global concurrency limits by name: LLM calls in flight, and one DuckDB writer across machines."""
    return {LLM_LIMIT: settings.llm.concurrency, DUCKDB_WRITER_LIMIT: 1}


def ensure_concurrency_limits(settings: Settings, client: SyncPrefectClient) -> list[str]:
    """Create missing limits, correct the slot count (and re-activate) existing ones; returns what happened."""
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate, GlobalConcurrencyLimitUpdate
    from prefect.exceptions import ObjectNotFound

    done = []
    for name, slots in wanted_limits(settings).items():
        try:
            current = client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=slots))
            done.append(f"created global concurrency limit {name!r} with {slots} slot(s)")
            continue
        if current.limit != slots or not current.active:
            client.update_global_concurrency_limit(name, GlobalConcurrencyLimitUpdate(limit=slots, active=True))
            done.append(f"updated global concurrency limit {name!r}: {current.limit} -> {slots} slot(s), active")
        else:
            done.append(f"global concurrency limit {name!r} already has {slots} slot(s)")
    return done


def ensure_work_pool(client: SyncPrefectClient, name: str = WORK_POOL) -> str:
    """Create the process work pool if missing; an existing pool of another type is an error, not replaced."""
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectNotFound
    from prefect.workers.process import ProcessWorker

    try:
        pool = client.read_work_pool(name)
    except ObjectNotFound:
        client.create_work_pool(WorkPoolCreate(
            name=name, type=ProcessWorker.type,
            description="Chronicle flow runs as local processes (`prefect worker start --pool chronicle-process`).",
            # The CLI's `prefect work-pool create --type process` fills in the same default template.
            base_job_template=ProcessWorker.get_default_base_job_template(),
        ))
        return f"created work pool {name!r} (type process)"
    if pool.type != ProcessWorker.type:
        raise RuntimeError(f"work pool {name!r} exists with type {pool.type!r}, expected 'process'; "
                           "delete it or deploy to another pool")
    return f"work pool {name!r} already exists"


def run_setup(settings: Settings, *, work_pool: bool = True) -> list[str]:
    """Everything `chronicle setup` does: the storage (embedded file or lake), then the Prefect objects."""
    from chronicle.deployments.automations import ensure_automations
    from chronicle.services.prefect_client import prefect_client
    from chronicle.storage.setup import ensure_storage

    done = ensure_storage(settings)
    with prefect_client() as client:
        done += ensure_concurrency_limits(settings, client)
        if work_pool:
            done.append(ensure_work_pool(client))
        done += ensure_automations(settings, client)
    return done


def check_setup(settings: Settings) -> tuple[list[str], bool]:
    """`chronicle setup --check`: what exists on the Prefect server (limits, pool, block, automations), changing
    nothing; (lines, whether everything `chronicle setup` would create is there)."""
    from prefect.exceptions import ObjectNotFound

    from chronicle.deployments.automations import ALERT_BLOCK_NAME, check_automations
    from chronicle.services.prefect_client import prefect_client

    lines, ok = [], True
    with prefect_client() as client:
        for name, slots in wanted_limits(settings).items():
            try:
                current = client.read_global_concurrency_limit_by_name(name)
                lines.append(f"global concurrency limit {name!r}: {current.limit} slot(s)"
                             + ("" if current.active else " (INACTIVE)"))
                ok &= current.active and current.limit == slots
            except ObjectNotFound:
                lines.append(f"global concurrency limit {name!r}: MISSING")
                ok = False
        try:
            pool = client.read_work_pool(WORK_POOL)
            lines.append(f"work pool {WORK_POOL!r}: type {pool.type}" + (" (PAUSED)" if pool.is_paused else ""))
        except ObjectNotFound:
            lines.append(f"work pool {WORK_POOL!r}: MISSING")
            ok = False
        block = settings.alerts.block or (f"custom-webhook/{ALERT_BLOCK_NAME}" if settings.alerts.webhook_url else None)
        if block:
            slug, _, name = block.partition("/")
            try:
                client.read_block_document_by_name(name=name, block_type_slug=slug)
                lines.append(f"notification block {block!r}: exists")
            except ObjectNotFound:
                lines.append(f"notification block {block!r}: MISSING")
                ok = False
        else:
            lines.append("notification target: none configured (set CHRONICLE_ALERT_WEBHOOK_URL or "
                         "CHRONICLE_ALERT_BLOCK, then run `chronicle setup`)")
        for status in check_automations(client):
            lines.append(status.line())
            alerting = status.name != "chronicle-zombie-runs"
            if not status.exists and (block or not alerting):
                ok = False
    return lines, ok
