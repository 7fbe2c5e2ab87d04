"""Run the commands of docs/deploy.md in order, as written, in one bash session (`tests/ops/test_deploy_doc.py`).

    python -m scripts.deploy_doc --list                       # the commands, numbered, with their section and part
    python -m scripts.deploy_doc --run WORKDIR                # part `local`: the one-machine sections (1, 2, 4, 5)
    python -m scripts.deploy_doc --run WORKDIR --part lake \\
        --pg-port 5433 --pg-data /tmp/pg/data --s3 http://127.0.0.1:5000   # part `lake`: section 6, on local servers

The text of each command is the document's; only these are changed, and each is listed here on purpose:
- long-running commands (`prefect server start`, `chronicle serve`, `prefect worker start`) are started in the
  background and waited for until they say they are ready (their own log line; a server also until /api/health
  answers), then stopped at the end; a worker with SIGINT at its default, as a terminal or systemd starts it
  (this script's `&` would make it ignore SIGINT, and Prefect's worker then ignores SIGTERM: docs/operating.md);
- the document's example host paths (`/srv/chronicle`, `/srv/exports`, `/home/me/...`) point into WORKDIR, and
  the example ports 4300 (section 1) and 4200 (section 6) to a free port;
- `make install && . .venv/bin/activate` is skipped when `chronicle` is already on PATH (CI installs first);
- WORKDIR stands for the repository root: it gets a copy of prefect.yaml (`deploy-check --write` may rewrite it);
- part `lake` only, the document's hosts are this machine's servers: `pg.internal` is 127.0.0.1, and the
  PostgreSQL the test started listens there on a free port, given to every client as PGHOST and PGPORT (the
  document's conninfo and URL use the default port, its `psql`/`createdb` the default socket);
  `sudo -u postgres CMD` is `PGUSER=postgres CMD` (that server trusts local connections: its superuser
  stands in for the OS user); `sudo systemctl restart postgresql` is `pg_ctl restart` of that server's data
  folder (its output to the server's log file, not to this script's: a server holding the pipe would keep the
  caller waiting); `http://minio.internal:9000` is the local S3 server (moto, with the bucket `chronicle-data`);
  `prefect.internal` and `0.0.0.0` are 127.0.0.1.
Blocks whose first line is not a shell command (diagrams, YAML, Python) are not commands and are skipped.
Commands in NOT_RUN are listed with the reason they are not run here; every other command belongs to a part
(tests/unit/test_deploy_doc_commands.py checks that).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "deploy.md"
PARTS = {"local": ("## 1.", "## 2.", "## 4.", "## 5."), "lake": ("## 6.",)}
"""Each part's sections (the `## ` heading's prefix): `local` needs nothing but this checkout and a Prefect API;
`lake` needs a PostgreSQL (root, or the postgres user) and an S3 server, started by the test."""
NOT_RUN: dict[str, str] = {}
"""Command prefix -> why it is not run on this project's machines (none today: the Docker and Kubernetes pools
are created on the Prefect server, which needs no Docker daemon; docker-compose.yml is checked offline)."""
BACKGROUND = {
    "prefect server start": "Check out the dashboard",  # its banner; then /api/health must answer (below)
    "chronicle serve": "being served",
    "prefect worker start": "started!",
}
"""Long-running commands -> the line each prints once ready."""
DEFAULT_SIGINT = ("python -S -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                  "os.execvp(sys.argv[1], sys.argv[1:])'")
"""Runs its arguments with SIGINT at its default (exec: the same process), for `prefect worker start`."""


@dataclass(frozen=True)
class Command:
    section: str
    text: str
    subsection: str = ""

    @property
    def part(self) -> str | None:
        return next((name for name, prefixes in PARTS.items() if self.section.startswith(prefixes)), None)


@dataclass(frozen=True)
class LocalLake:
    """The servers part `lake` runs against: PostgreSQL on 127.0.0.1:`pg_port` (data folder `pg_data`), S3 at `s3`."""

    pg_port: int
    pg_data: Path
    s3: str


def commands(doc: Path = DOC) -> list[Command]:
    """Every shell command of the document's ```bash blocks, in order (continuation lines joined; indented
    blocks inside a list item count too)."""
    out: list[Command] = []
    section = subsection = ""
    in_block = False
    pending = ""
    for raw in doc.read_text(encoding="utf-8").splitlines():
        line = raw.strip() if raw.lstrip().startswith("```") else raw
        if not in_block and line.startswith("## "):
            section, subsection = line, ""
        elif not in_block and line.startswith("### "):
            subsection = line
        if line.startswith("```"):
            in_block = line.strip() == "```bash" if not in_block else False
            continue
        if not in_block:
            continue
        text = pending + line.strip()
        if text.rstrip().endswith("\\"):
            pending = text.rstrip()[:-1] + " "
            continue
        pending = ""
        code = _strip_comment(text).strip()
        if code:
            out.append(Command(section, code, subsection))
    return out


def _strip_comment(line: str) -> str:
    """The line without a trailing `# comment` (a `#` inside quotes or `$(...)` is kept)."""
    quote, depth = None, 0
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "#" and depth == 0 and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def not_run_reason(cmd: Command) -> str | None:
    return next((why for prefix, why in NOT_RUN.items() if cmd.text.startswith(prefix)), None)


def _as_postgres(cmd: str) -> str:
    """`cmd` as the postgres OS user (pg_ctl refuses root), or as is when we are not root."""
    return f"runuser -u postgres -- {cmd}" if os.geteuid() == 0 and shutil.which("runuser") else cmd


def rewrite(text: str, work: Path, port: str, lake: LocalLake | None) -> str:
    """The command with the module docstring's listed changes, and no others."""
    text = (text.replace("/srv/chronicle", f"{work}/srv/chronicle").replace("/srv/exports", f"{work}/srv/exports")
            .replace("/home/me/", f"{work}/home/me/").replace("4300", port))
    if text.startswith("make install"):
        text = f"command -v chronicle >/dev/null || {{ {text}; }}"
    if lake is not None:
        restart = f"pg_ctl -D {lake.pg_data} -l {lake.pg_data.parent / 'pg.log'} -w restart -m fast"
        text = (text.replace("sudo systemctl restart postgresql", _as_postgres(restart))
                .replace("sudo -u postgres ", "PGUSER=postgres ")
                .replace("pg.internal", "127.0.0.1").replace("http://minio.internal:9000", lake.s3)
                .replace("prefect.internal", "127.0.0.1").replace("0.0.0.0", "127.0.0.1").replace("4200", port))
    return text


def script(cmds: list[Command], work: Path, *, part: str = "local", lake: LocalLake | None = None,
           timeout: int = 300) -> str:
    """The bash script running the commands of `part` in order (see the module docstring for what is changed)."""
    if part == "lake" and lake is None:
        raise ValueError("part `lake` needs the local servers (--pg-port, --pg-data, --s3)")
    port = str(_free_port())
    lines = ["set -euo pipefail", f"cd {work}", f"cp {DOC.parents[1] / 'prefect.yaml'} .",
             "mkdir -p logs srv/exports home/me/.openclaw/workspace/memory",
             # Stop in reverse order (workers before the server they report to), each given 20 s to finish.
             "PIDS=()", "stop_all() { for ((i=${#PIDS[@]}-1; i>=0; i--)); do p=${PIDS[i]}; "
             "kill -TERM -- -$p 2>/dev/null || true; for _ in $(seq 40); do kill -0 $p 2>/dev/null || break; "
             "sleep 0.5; done; kill -KILL -- -$p 2>/dev/null || true; done; }", "trap stop_all EXIT",
             f"wait_for() {{ for _ in $(seq {timeout * 2}); do grep -Eq \"$2\" \"$1\" && return 0; "
             "kill -0 \"$3\" 2>/dev/null || { cat \"$1\"; return 1; }; sleep 0.5; done; cat \"$1\"; return 1; }",
             "wait_http() { python -c \"import sys, time, urllib.request\nfor _ in range(int(sys.argv[2]) * 2):\n"
             "    try: urllib.request.urlopen(sys.argv[1], timeout=5); sys.exit(0)\n"
             "    except Exception: time.sleep(0.5)\nsys.exit(1)\" \"$1\" \"$2\"; }"]
    if lake is not None:
        lines.append(f"export PGHOST=127.0.0.1 PGPORT={lake.pg_port}")
    for n, cmd in enumerate(cmds):
        if cmd.part != part or not_run_reason(cmd):
            continue
        text = rewrite(cmd.text, work, port, lake if part == "lake" else None)
        lines.append(f"echo '>>> [{n}] {cmd.text.replace(chr(39), '')}'")
        started = next((ready for prefix, ready in BACKGROUND.items() if text.startswith(prefix)), None)
        if started:
            launch = f"setsid {DEFAULT_SIGINT}" if text.startswith("prefect worker start") else "setsid"
            lines += [f"{launch} {text} > logs/{n}.log 2>&1 & PIDS+=($!)", f"wait_for logs/{n}.log '{started}' $!"]
            if (port_arg := re.search(r"--port\s+(\d+)", text)) and text.startswith("prefect server start"):
                # The banner comes before the database migrations: ready is when the API answers.
                lines.append(f"wait_http http://127.0.0.1:{port_arg.group(1)}/api/health {timeout}")
        else:
            lines.append(text)
    lines.append("echo '>>> all commands ran'")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--run", type=Path, metavar="WORKDIR")
    parser.add_argument("--part", choices=sorted(PARTS), default="local")
    parser.add_argument("--pg-port", type=int, help="part lake: the local PostgreSQL's port")
    parser.add_argument("--pg-data", type=Path, help="part lake: its data folder (for the restart)")
    parser.add_argument("--s3", help="part lake: the local S3 endpoint (with a bucket `chronicle-data`)")
    args = parser.parse_args()
    cmds = commands()
    if args.list or not args.run:
        for n, cmd in enumerate(cmds):
            where = (not_run_reason(cmd) and "not run") or cmd.part or "NONE"
            print(f"[{n}] {where:7} {(cmd.subsection or cmd.section)[:40]:40}  {cmd.text}")
        return 0
    lake = None
    if args.part == "lake":
        if not (args.pg_port and args.pg_data and args.s3):
            parser.error("--part lake needs --pg-port, --pg-data and --s3")
        lake = LocalLake(args.pg_port, args.pg_data, args.s3)
    args.run.mkdir(parents=True, exist_ok=True)
    path = args.run / "deploy_doc.sh"
    path.write_text(script(cmds, args.run, part=args.part, lake=lake), encoding="utf-8")
    return subprocess.run(["bash", str(path)], cwd=args.run, stdin=subprocess.DEVNULL).returncode


if __name__ == "__main__":
    sys.exit(main())
