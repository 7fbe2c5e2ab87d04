"""docs/deploy.md's commands as scripts/deploy_doc.py reads and rewrites them (the slow tests run them), and
docker-compose.yml checked offline against the documented topology (no Docker daemon on these machines)."""

from __future__ import annotations

from pathlib import Path

import yaml

from scripts.deploy_doc import LocalLake, _strip_comment, commands, not_run_reason, rewrite, script

REPO = Path(__file__).resolve().parents[2]
LAKE = LocalLake(pg_port=55432, pg_data=Path("/tmp/pg/data"), s3="http://127.0.0.1:5999")


def test_commands_are_read_in_order_without_comments() -> None:
    cmds = [c.text for c in commands()]
    assert cmds.index("chronicle setup") < cmds.index("chronicle serve")
    assert "prefect deploy --all" in cmds
    assert not any(c.startswith("#") or c.endswith("\\") for c in cmds)
    assert any(c.startswith("prefect worker start") and "--name" in c for c in cmds)


def test_every_command_is_run_by_a_part_or_says_why_not() -> None:
    cmds = commands()
    assert all(c.part or not_run_reason(c) for c in cmds), [c.text for c in cmds if not c.part]
    lake = [c.text for c in cmds if c.part == "lake"]
    # The lake section creates its database before anything connects to it, and the many-workers bring-up
    # ends with a backfill a person can watch.
    assert lake.index(next(c for c in lake if "createdb -O chronicle chronicle" in c)) < lake.index("chronicle setup")
    assert any(c.startswith("export PREFECT_UI_API_URL") for c in lake)
    assert lake[-2].startswith("prefect deployment run backfill-weeks/backfill-weeks") and "--watch" in lake[-2]
    assert all("--name" in c for c in lake if c.startswith("prefect worker start"))


def test_comment_stripping_keeps_quoted_hashes() -> None:
    assert _strip_comment("chronicle setup   # comment").strip() == "chronicle setup"
    assert _strip_comment("echo '#x' \"a # b\" $(echo '#')").strip() == "echo '#x' \"a # b\" $(echo '#')"


def test_only_local_sections_by_default(tmp_path: Path) -> None:
    text = script(commands(), tmp_path)
    assert "chronicle runs --prefect" in text and "sudo" not in text and "pg.internal" not in text
    assert "setsid chronicle serve" in text and "\nprefect server start --host 127.0.0.1 --port 4300" not in text
    assert "chronicle snapshot" in text


def test_lake_part_points_the_documents_hosts_at_the_local_servers(tmp_path: Path) -> None:
    text = script(commands(), tmp_path, part="lake", lake=LAKE)
    run = "\n".join(line for line in text.splitlines() if not line.startswith("echo '>>>"))  # not the echoes
    for host in ("pg.internal", "minio.internal", "prefect.internal", "0.0.0.0", "sudo ", ":4200/", "--port 4200"):
        assert host not in run, host
    assert "export PGHOST=127.0.0.1 PGPORT=55432" in text
    assert "PGUSER=postgres createdb -O chronicle prefect" in text
    assert "pg_ctl -D /tmp/pg/data -l /tmp/pg/pg.log -w restart" in text
    assert "export AWS_ENDPOINT_URL=http://127.0.0.1:5999" in text
    assert "chronicle serve" not in text  # part local's


def test_rewrite_changes_only_the_listed_things(tmp_path: Path) -> None:
    assert rewrite("chronicle runs -n 5", tmp_path, "1234", LAKE) == "chronicle runs -n 5"
    assert rewrite("export PREFECT_API_URL=http://prefect.internal:4200/api", tmp_path, "1234", LAKE) == (
        "export PREFECT_API_URL=http://127.0.0.1:1234/api")
    # Outside part lake the document's hosts stay as written.
    assert "pg.internal" in rewrite("psql -h pg.internal", tmp_path, "1234", None)


def test_compose_file_is_the_documented_topology() -> None:
    """What can be checked without a Docker daemon: the file parses, the services the doc names exist, PostgreSQL
    gets both databases and max_connections, every worker has its own --name and the lake variables."""
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert {"postgres", "minio", "bucket", "prefect-server", "setup", "worker-a", "worker-b"} <= set(services)
    assert "max_connections=300" in services["postgres"]["command"]
    initdb = REPO / "docker" / "initdb"
    assert any("CREATE DATABASE prefect" in f.read_text() for f in initdb.glob("*.sql"))
    assert services["postgres"]["environment"]["POSTGRES_DB"] == "chronicle"
    server_env = services["prefect-server"]["environment"]
    assert server_env["PREFECT_API_DATABASE_CONNECTION_URL"].endswith("@postgres:5432/prefect")
    names = []
    for name in ("worker-a", "worker-b"):
        cmd, env = services[name]["command"], services[name]["environment"]
        assert cmd[:3] == ["prefect", "worker", "start"] and "--name" in cmd
        names.append(cmd[cmd.index("--name") + 1])
        assert {"CHRONICLE_CATALOG", "CHRONICLE_DATA_PATH", "AWS_ENDPOINT_URL", "PGPASSWORD"} <= set(env)
    assert len(set(names)) == 2
    assert services["setup"]["command"][-1] == "chronicle setup && prefect --no-prompt deploy --all"
