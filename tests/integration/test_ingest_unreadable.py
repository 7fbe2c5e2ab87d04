"""Files that cannot be read are reasons, not crashes: permissions (as a real unprivileged user), a file gone
between listing and reading, FIFOs, sockets, directories named like logs, symlink loops; and encodings that are
read correctly or refused whole naming what they look like — never stored as mojibake."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest

from chronicle.ingest.detect import discover
from chronicle.services.ingest import FileIngestor
from chronicle.settings import Settings

LINE = {"project_id": "P", "ts": "2026-03-02T10:00:00+08:00", "actor": "CRC-1", "type": "enrollment",
        "content": "受试者 S-001 入组"}


def good(folder: Path, name: str = "good.jsonl") -> Path:
    path = folder / name
    path.write_text(json.dumps(LINE, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def rows(home: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(home / "chronicle.duckdb"), read_only=True) as conn:
        return conn.execute(sql).fetchall()


def file_rejects(home: Path) -> dict[str, str]:
    return {Path(f).name: reason for f, reason in rows(home, "SELECT source_file, reason FROM rejects "
                                                             "WHERE line_no IS NULL")}


def test_special_files_and_loops_are_named_and_the_rest_is_read(tmp_path: Path) -> None:
    logs, home = tmp_path / "logs", tmp_path / "home"
    logs.mkdir()
    good(logs)
    os.mkfifo(logs / "pipe.jsonl")  # a FIFO nobody writes to: reading it would block the run forever
    (logs / "loop.jsonl").symlink_to(logs / "loop2.jsonl")
    (logs / "loop2.jsonl").symlink_to(logs / "loop.jsonl")
    (logs / "folder.jsonl").mkdir()
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(logs / "sock.jsonl"))
    try:
        files, _ = discover([logs])
        results = {Path(r.path).name: r for r in FileIngestor(Settings(home=home)).ingest_many(files)}
    finally:
        sock.close()
    assert results["good.jsonl"].entries_added == 1
    assert file_rejects(home) == {"pipe.jsonl": "not_a_regular_file", "loop.jsonl": "symlink_loop",
                                  "loop2.jsonl": "symlink_loop", "folder.jsonl": "not_a_regular_file",
                                  "sock.jsonl": "not_a_regular_file"}
    assert "FIFO" in results["pipe.jsonl"].reason and "socket" in results["sock.jsonl"].reason
    assert "directory" in results["folder.jsonl"].reason
    assert {r.status for n, r in results.items() if n != "good.jsonl"} == {"rejected"}


def test_a_file_removed_after_the_folder_was_listed_is_a_reason(tmp_path: Path) -> None:
    logs, home = tmp_path / "logs", tmp_path / "home"
    logs.mkdir()
    paths = [good(logs, f"s{i}.jsonl") for i in range(3)]
    for i, p in enumerate(paths):
        p.write_text(json.dumps({**LINE, "content": f"entry {i}"}) + "\n")
    files, _ = discover([logs])
    paths[1].unlink()  # rotation removed it between the listing and the read
    results = FileIngestor(Settings(home=home)).ingest_many(files)
    assert [r.status for r in results] == ["ingested", "rejected", "ingested"]
    assert results[1].rejects == {"vanished": 1}
    assert rows(home, "SELECT count(*) FROM raw_logs") == [(2,)]


def test_a_file_that_becomes_unreadable_keeps_its_rows(tmp_path: Path) -> None:
    logs, home = tmp_path / "logs", tmp_path / "home"
    logs.mkdir()
    path = good(logs)
    FileIngestor(Settings(home=home)).ingest(path)
    path.unlink()
    path.mkdir()  # the name now a folder: refused, the rows read before stay
    assert FileIngestor(Settings(home=home)).ingest(path).status == "rejected"
    assert rows(home, "SELECT count(*) FROM raw_logs") == [(1,)]


UNPRIVILEGED = """
import json, os, sys
from pathlib import Path
from chronicle.ingest.detect import discover
from chronicle.services.ingest import FileIngestor
from chronicle.settings import Settings
from chronicle.storage.db import connect
settings = Settings(home=Path(sys.argv[1]))
with connect(settings):
    pass  # created and migrated while still root, then handed to the unprivileged user
for folder, dirs, names in os.walk(sys.argv[1]):
    for name in dirs + names:
        os.chown(os.path.join(folder, name), 65534, 65534)
os.chown(sys.argv[1], 65534, 65534)
os.setgroups([]); os.setgid(65534); os.setuid(65534)  # nobody: chmod 000 means something now
files, _ = discover([Path(sys.argv[2])])
for r in FileIngestor(settings).ingest_many(files):
    print(json.dumps({"file": Path(r.path).name, "status": r.status, "rejects": r.rejects, "reason": r.reason}))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="drops to uid 65534: needs to start as root")
def test_a_file_without_read_permission_for_the_user_running_ingest(tmp_path: Path) -> None:
    """As root every file is readable; the operator's ingest runs as a normal user. The child drops to nobody
    after its imports (the interpreter lives where nobody may not read) and ingests a folder with a mode-000 file."""
    base = Path(tempfile.mkdtemp(prefix="chronicle-perm-"))
    base.chmod(0o755)
    logs, home = base / "logs", base / "home"
    logs.mkdir(mode=0o755)
    logs.chmod(0o755)  # whatever the umask an earlier run in this process left (Chronicle's is owner-only)
    good(logs).chmod(0o644)
    locked = good(logs, "locked.jsonl")
    locked.chmod(0o000)
    closed = logs / "closed-folder"  # a folder nobody may list: named with its reason, not passed over
    closed.mkdir()
    good(closed, "inside.jsonl")
    closed.chmod(0o700)
    out = subprocess.run([sys.executable, "-c", UNPRIVILEGED, str(home), str(logs)], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "PYTHONPATH": os.getcwd()}, check=False)
    assert out.returncode == 0, out.stderr
    results = {r["file"]: r for r in map(json.loads, out.stdout.splitlines())}
    assert results["good.jsonl"]["status"] == "ingested"
    assert results["locked.jsonl"]["rejects"] == {"unreadable_file": 1}
    assert "permission denied" in results["locked.jsonl"]["reason"] and "uid 65534" in results["locked.jsonl"]["reason"]
    assert results["closed-folder"]["rejects"] == {"unreadable_file": 1}
    assert "permission denied" in results["closed-folder"]["reason"]
    assert file_rejects(home) == {"locked.jsonl": "unreadable_file", "closed-folder": "unreadable_file"}
    assert rows(home, "SELECT count(*) FROM raw_logs") == [(1,)]


# --- encodings ------------------------------------------------------------------------------------------
def csv_text() -> str:
    return "project_id,ts,actor,type,content\nP,2026-03-02T10:00:00+08:00,研究护士,enrollment,受试者 S-001 入组\n"


@pytest.mark.parametrize(("name", "data"), [
    ("bom.jsonl", b"\xef\xbb\xbf" + (json.dumps(LINE, ensure_ascii=False) + "\n").encode()),
    ("bom.csv", b"\xef\xbb\xbf" + csv_text().encode()),
    ("utf16.csv", csv_text().encode("utf-16")),
    ("utf16.jsonl", (json.dumps(LINE, ensure_ascii=False) + "\n").encode("utf-16")),
])
def test_encodings_with_a_byte_order_mark_are_read_correctly(tmp_path: Path, name: str, data: bytes) -> None:
    home = tmp_path / "home"
    path = tmp_path / name
    path.write_bytes(data)
    result = FileIngestor(Settings(home=home)).ingest(path)
    assert result.entries_added == 1, result
    assert rows(home, "SELECT content FROM raw_logs") == [("受试者 S-001 入组",)]


@pytest.mark.parametrize(("name", "data", "named"), [
    ("excel.csv", csv_text().encode("gb18030"), "GB18030"),
    ("gbk.jsonl", (json.dumps(LINE, ensure_ascii=False) + "\n").encode("gbk") * 3, "GB18030"),
    ("nobom.jsonl", (json.dumps(LINE, ensure_ascii=False) + "\n").encode("utf-16-le"), "UTF-16LE"),
])
def test_other_encodings_are_refused_whole_naming_what_they_look_like(tmp_path: Path, name: str, data: bytes,
                                                                      named: str) -> None:
    home = tmp_path / "home"
    path = tmp_path / name
    path.write_bytes(data)
    result = FileIngestor(Settings(home=home)).ingest(path)
    assert result.status == "rejected" and result.rejects == {"invalid_encoding": 1}
    assert named in result.reason and "iconv" in result.reason
    assert rows(home, "SELECT count(*) FROM raw_logs") == [(0,)]  # no mojibake stored
