"""`chronicle mcp`: serve the memory and the chronicle to assistants over MCP (stdio, or streamable HTTP on
loopback), and `chronicle skill`: the SKILL.md an assistant reads to use Chronicle's commands."""

from __future__ import annotations

from pathlib import Path

import typer

from chronicle.cli.common import HomeOpt, console, fail, loopback, read_settings, settings_from_options


def skill_text(app: typer.Typer) -> str:
    """SKILL.md for this command line and the MCP server's tools (built without opening any store)."""
    import asyncio

    from chronicle.cli.mcp_server import build_server
    from chronicle.cli.skill import ToolDoc, render_skill

    tools = asyncio.run(build_server(settings_from_options(None)).list_tools())
    return render_skill(app, [ToolDoc(t.name, t.description or "") for t in tools])


def register(app: typer.Typer) -> None:
    @app.command()
    def mcp(http: bool = typer.Option(False, "--http", help="Streamable HTTP instead of stdio."),
            host: str = typer.Option("127.0.0.1", "--host", help="Loopback address to bind (--http)."),
            port: int = typer.Option(8766, "--port", min=1, max=65535, help="Port (--http)."),
            home: str | None = HomeOpt) -> None:
        """Serve memory search, list, tags, chronicle context and weekly reports to assistants over MCP (read-only;
        one tool files pending proposals). Answers are redacted. stdio by default; --http on loopback at /mcp."""
        if http and not loopback(host):
            fail(f"--host {host} is not a loopback address: the server has no authentication, so it binds to "
                 "127.0.0.1, ::1 or localhost only", code=2)
        from chronicle.cli.mcp_server import build_server

        server = build_server(read_settings(home))
        if http:
            # Plain JSON answers, no SSE stream per call: every tool answers once, with no progress to stream.
            server.run("streamable-http", host=host, port=port, json_response=True)
        else:
            server.run("stdio")

    @app.command()
    def skill(out: Path | None = typer.Option(None, "--out", help="Write here instead of printing."),
              check_file: Path | None = typer.Option(None, "--check", help="Exit 1 if this file is not current.")
              ) -> None:
        """Print SKILL.md, an assistant's guide to Chronicle's commands, generated from this command line."""
        text = skill_text(app)
        if check_file is not None:
            if not check_file.is_file() or check_file.read_text(encoding="utf-8") != text:
                fail(f"{check_file} is stale: run `chronicle skill --out {check_file}`")
            console.print(f"{check_file} is current")
        elif out is not None:
            out.write_text(text, encoding="utf-8")
            console.print(f"wrote {out}")
        else:
            typer.echo(text, nl=False)
