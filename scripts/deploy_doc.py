"""Run the commands of docs/deploy.md in order, as written, in one bash session (`tests/ops/test_deploy_doc.py`).

    python -m scripts.deploy_doc --list                 # the commands, numbered, with the section they are in
    python -m scripts.deploy_doc --run WORKDIR          # the one-machine sections (1, 2, 4), then stop everything
    python -m scripts.deploy_doc --run WORKDIR --all    # every block, on a CI host with root, PostgreSQL, S3

The text of each command is the document's; only these are changed, and each is listed here on purpose:
- long-running commands (`prefect server start`, `chronicle serve`, `prefect worker start`) are started in the
  background and waited for until they say they are ready (their own log line), then stopped at the end;
- the document's example host paths (`/srv/chronicle`, `/srv/exports`, `/home/me/...`) point into WORKDIR, and
  the example port 4300 to a free port;
- `make install && . .venv/bin/activate` is skipped when `chronicle` is already on PATH (CI installs first);
- WORKDIR stands for the repository root: it gets a copy of prefect.yaml (`deploy-check --write` may rewrite it).
Blocks whose first line is not a shell command (diagrams, YAML, Python) are not commands and are skipped.
Without --all, the sections that need root or other hosts (lake, many workers, Docker, Kubernetes) are listed
but not run.
"""

from __future__ import annotations

import argparse
import re
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "deploy.md"
LOCAL_SECTIONS = ("## 1.", "## 2.", "## 4.")
"""Sections whose commands run on one machine with no root: the default run."""
BACKGROUND = {
    "prefect server start": "Check out the dashboard",  # its banner; then /api/health must answer (below)
    "chronicle serve": "being served",
    "prefect worker start": "started!",
}
"""Long-running commands -> the line each prints once ready."""


@dataclass(frozen=True)
class Command:
    section: str
    text: str


def commands(doc: Path = DOC) -> list[Command]:
    """Every shell command of the document's ```bash blocks, in order (continuation lines joined)."""
    out: list[Command] = []
    section = ""
    in_block = False
    pending = ""
    for line in doc.read_text(encoding="utf-8").splitlines():
        if not in_block and line.startswith("## "):
            section = line
        if line.startswith("```"):
            in_block = line.strip() == "```bash" if not in_block else False
            continue
        if not in_block:
            continue
        text = pending + line
        if text.rstrip().endswith("\\"):
            pending = text.rstrip()[:-1] + " "
            continue
        pending = ""
        code = _strip_comment(text).strip()
        if code:
            out.append(Command(section, code))
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


def script(cmds: list[Command], work: Path, *, everything: bool = False, timeout: int = 300) -> str:
    """The bash script running `cmds` in order (see the module docstring for what is changed)."""
    port = str(_free_port())
    lines = ["set -euo pipefail", f"cd {work}", f"cp {DOC.parents[1] / 'prefect.yaml'} .",
             "mkdir -p logs srv/exports home/me/.openclaw/workspace/memory",
             "PIDS=()", "trap 'for p in \"${PIDS[@]}\"; do kill -TERM -- -$p 2>/dev/null || kill $p 2>/dev/null "
             "|| true; done' EXIT",
             f"wait_for() {{ for _ in $(seq {timeout * 2}); do grep -Eq \"$2\" \"$1\" && return 0; "
             "kill -0 \"$3\" 2>/dev/null || { cat \"$1\"; return 1; }; sleep 0.5; done; cat \"$1\"; return 1; }",
             "wait_http() { python -c \"import sys, time, urllib.request\nfor _ in range(int(sys.argv[2]) * 2):\n"
             "    try: urllib.request.urlopen(sys.argv[1], timeout=5); sys.exit(0)\n"
             "    except Exception: time.sleep(0.5)\nsys.exit(1)\" \"$1\" \"$2\"; }"]
    for n, cmd in enumerate(cmds):
        if not everything and not cmd.section.startswith(LOCAL_SECTIONS):
            continue
        text = (cmd.text.replace("/srv/chronicle", f"{work}/srv/chronicle")
                .replace("/srv/exports", f"{work}/srv/exports")
                .replace("/home/me/", f"{work}/home/me/").replace("4300", port))
        if text.startswith("make install"):
            text = f"command -v chronicle >/dev/null || {{ {text}; }}"
        lines.append(f"echo '>>> [{n}] {cmd.text.replace(chr(39), '')}'")
        started = next((ready for prefix, ready in BACKGROUND.items() if text.startswith(prefix)), None)
        if started:
            lines += [f"setsid {text} > logs/{n}.log 2>&1 & PIDS+=($!)", f"wait_for logs/{n}.log '{started}' $!"]
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
    parser.add_argument("--all", action="store_true", help="Also the root / multi-host sections.")
    args = parser.parse_args()
    cmds = commands()
    if args.list or not args.run:
        for n, cmd in enumerate(cmds):
            print(f"[{n}] {cmd.section[:40]:40}  {cmd.text}")
        return 0
    args.run.mkdir(parents=True, exist_ok=True)
    path = args.run / "deploy_doc.sh"
    path.write_text(script(cmds, args.run, everything=args.all), encoding="utf-8")
    return subprocess.run(["bash", str(path)], cwd=args.run).returncode


if __name__ == "__main__":
    sys.exit(main())
