"""Where the LanceDB `memories` table lives and how its writers take turns, on both topologies.

* A local folder (the embedded default `$CHRONICLE_HOME/lancedb`, or a shared folder): writers are
  serialised by `<folder>/memories.lock` (flock, released by the kernel when a process dies).
* An object store (`s3://…`; in the lake topology `$CHRONICLE_DATA_PATH/lancedb` by default): the
  endpoint and credentials are the lake's (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, … as LanceDB
  `storage_options`), and writers on any host are serialised by a **claim** (storage/claims.py) in the
  catalog database, not by Lance's own commit protocol alone. Why a lock: `MemoryStore.upsert`
  deduplicates (reads the table, decides ADD / UPDATE / NOOP, then commits one `merge_insert`), and
  optimistic commits alone would let two distillations of the same fact both ADD it; and Lance's
  conflict-free commit on S3 relies on conditional PUT (`If-None-Match`), which not every
  S3-compatible store implements atomically. Lance's commit still makes each write all-or-nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock

from chronicle.settings import Settings
from chronicle.storage import claims
from chronicle.storage.lake import is_remote, lance_storage_options


class WriteLock(Protocol):
    def acquire(self, timeout: float) -> AbstractContextManager[Any]: ...


class ClaimLock:
    """`FileLock`-shaped (`with lock.acquire(timeout=…):`) lock held as a claim, for object-store tables."""

    def __init__(self, settings: Settings, key: str) -> None:
        self.settings = settings
        self.key = key

    @contextmanager
    def _held(self, timeout: float) -> Iterator[None]:
        with claims.hold(self.settings, [self.key], timeout_s=timeout):
            yield

    def acquire(self, timeout: float) -> AbstractContextManager[None]:
        return self._held(timeout)


@dataclass
class LanceHandle:
    uri: str
    db: Any  # lancedb.DBConnection
    lock: WriteLock
    local: bool


_session: Any = None


def _shared_session() -> Any:
    """One LanceDB session (index and metadata caches) for every connection of this process: the sync one and the
    search path's async one (`open_async`) then hold each index once."""
    global _session
    if _session is None:
        import lancedb  # here, not at the top: see `open_lance`

        _session = lancedb.Session()
    return _session


def open_lance(settings: Settings, table: str = "memories") -> LanceHandle:
    """Connect to the memory store's LanceDB and the lock its writers take.

    LanceDB is imported by the first connection, not by the modules above it: its import costs ~2 s of CPU (its
    generated REST client's pydantic models) and starts a thread, and a flow run or command that ends before it
    touches the store (a refused run, one with nothing to distill, `chronicle serve` loading the flows) need
    not pay for it."""
    import lancedb

    uri = settings.lance_uri
    if is_remote(uri):
        db = lancedb.connect(uri, read_consistency_interval=timedelta(0),
                             storage_options=lance_storage_options(settings), session=_shared_session())
        return LanceHandle(uri, db, ClaimLock(settings, f"lance:{uri.rstrip('/')}/{table}"), local=False)
    folder = Path(uri.removeprefix("file://"))
    folder.mkdir(parents=True, exist_ok=True)
    # Consistency interval 0: every read checks for commits of other processes (a cheap manifest stat).
    db = lancedb.connect(uri, read_consistency_interval=timedelta(0), session=_shared_session())
    return LanceHandle(uri, db, FileLock(str(folder / f"{table}.lock"), thread_local=False), local=True)


async def open_async(settings: Settings, handle: LanceHandle, table: str) -> Any:
    """`table` through LanceDB's async API (the search path: storage/memory/aio.py), on the sync connections'
    session so both share one index and metadata cache, and checking for other processes' commits on every read
    as the sync connection does."""
    import lancedb

    options = None if handle.local else lance_storage_options(settings)
    db = await lancedb.connect_async(handle.uri, read_consistency_interval=timedelta(0), storage_options=options,
                                     session=_shared_session())
    return await db.open_table(table)
