"""Memories in the lake topology: LanceDB under CHRONICLE_DATA_PATH on the S3 endpoint, two writer
processes at once (serialised by a claim), and `chronicle setup` / `chronicle config` for the lake."""

from __future__ import annotations

from pathlib import Path

from tests.lake.helpers import WAIT_FOR_GO, child_env, finish, settings_for, start_together

# Each writer upserts its own facts plus facts both writers share: the shared ones must exist once.
WRITER = WAIT_FOR_GO + """
import hashlib
from datetime import UTC, datetime
import numpy as np
from chronicle.memory.model import Memory
from chronicle.redaction.memories import redact_memory
from chronicle.redaction.redactor import Redactor
from chronicle.settings import Settings
from chronicle.storage.memory.store import MemoryStore

class HashEmbedder:  # deterministic vectors: the store, not the model, is under test
    model_name, dim = "hash-32", 32
    def embed(self, texts):
        out = []
        for t in texts:
            v = np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little"))
            x = v.standard_normal(32).astype(np.float32)
            out.append(x / np.linalg.norm(x))
        return np.stack(out)

store = MemoryStore(Settings(), HashEmbedder())
me = sys.argv[2]
for i in range(6):
    batch = [Memory(content=f"{me} fact {i}", summary=f"{me} {i}", importance=0.5, target_file="MEMORY.md"),
             Memory(content=f"shared fact {i}", summary=f"shared {i}", importance=0.5, target_file="MEMORY.md")]
    batch = [redact_memory(m, Redactor.build()) for m in batch]  # the store takes gated memories only
    store.upsert(batch, created=datetime(2026, 4, 1, tzinfo=UTC), flow_run_id=me)
print(store.count(), flush=True)
"""


def test_two_processes_write_memories_on_the_object_store(home: Path, lake_env: dict[str, str],
                                                          tmp_path: Path) -> None:
    from chronicle.storage.lance import ClaimLock, open_lance

    envs = [child_env(tmp_path / f"w{i}", lake_env) for i in range(2)]
    procs = start_together(WRITER, [["alpha"], ["beta"]], envs, tmp_path / "go", tmp_path)
    finish(procs)
    settings = settings_for(home, lake_env)
    handle = open_lance(settings)
    assert not handle.local and isinstance(handle.lock, ClaimLock)
    assert handle.uri == f"{lake_env['CHRONICLE_DATA_PATH']}/lancedb"
    contents = sorted(handle.db.open_table("memories").to_arrow().column("content").to_pylist())
    assert contents == sorted([f"{w} fact {i}" for w in ("alpha", "beta") for i in range(6)]
                              + [f"shared fact {i}" for i in range(6)])  # 18 rows, no shared fact twice
    assert not any(p.name == "lancedb" for p in tmp_path.rglob("lancedb"))  # nothing in the working folders


def test_setup_is_idempotent_and_config_masks_secrets(home: Path, lake_env: dict[str, str], s3) -> None:
    from chronicle.storage.migrations import migration_files
    from chronicle.storage.setup import ensure_storage

    settings = settings_for(home, {**lake_env, "CHRONICLE_CATALOG": lake_env["CHRONICLE_CATALOG"]
                                   + " password=hunter2"})
    first = ensure_storage(settings)
    again = ensure_storage(settings)
    assert any("created" in line for line in first) and any("already there" in line for line in again)
    assert any(f"migration {migration_files()[-1][0]}" in line for line in again)
    prefix = lake_env["CHRONICLE_DATA_PATH"].removeprefix("s3://chronicle-test/")
    keys = [o["Key"] for o in s3.client().list_objects_v2(Bucket="chronicle-test", Prefix=prefix)["Contents"]]
    assert f"{prefix}/ducklake/.chronicle-lake.json" in keys
    masked = settings.masked()
    assert "hunter2" not in str(masked) and "testing-secret" not in str(masked)
    assert masked["lake"]["aws_secret_access_key"] == "****" and "password=****" in masked["lake"]["catalog"]
    assert "hunter2" not in "\n".join(first + again)
