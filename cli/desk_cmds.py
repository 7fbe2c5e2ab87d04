"""`chronicle desk`: serve the review desk (a local web application) — loopback only unless told otherwise."""

from __future__ import annotations

import typer

from chronicle.cli.common import HomeOpt, console, fail, loopback, settings_from_options

desk = typer.Typer(help="The review desk: read, check, correct and sign the chronicle in a browser.",
                   invoke_without_command=True)



def serve_desk(home: str | None, host: str, port: int | None, allow_remote: bool, https_only: bool) -> None:
    if not loopback(host) and not allow_remote:
        fail(f"refusing to serve the desk on {host}: it is reachable from other machines; bind 127.0.0.1 behind a "
             "TLS reverse proxy (docs/deploy.md), or pass --allow-remote to say you mean it", code=2)
    settings = settings_from_options(home)
    import uvicorn

    from chronicle.desk.app import create_app

    port = port or settings.desk.port
    console.print(f"Chronicle desk: http://{host if ':' not in host else f'[{host}]'}:{port}/  "
                  f"(home {settings.home}; accounts: chronicle desk user add)")
    uvicorn.run(create_app(settings, https_only=https_only), host=host, port=port, log_level="warning",
                proxy_headers=False)


def register(app: typer.Typer) -> None:
    @desk.callback()
    def main(ctx: typer.Context,
             host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback by default)."),
             port: int | None = typer.Option(None, "--port", help="Port (default CHRONICLE_DESK_PORT, 8765)."),
             allow_remote: bool = typer.Option(False, "--allow-remote",
                                               help="Allow a non-loopback --host (put TLS in front of it)."),
             https_only: bool = typer.Option(False, "--https-only",
                                             help="Mark the session cookie Secure (served behind HTTPS)."),
             home: str | None = HomeOpt) -> None:
        """Serve the review desk on 127.0.0.1:8765 (printed on start); `chronicle desk user ...` manages accounts."""
        if ctx.invoked_subcommand is None:
            serve_desk(home, host, port, allow_remote, https_only)

    from chronicle.cli import desk_user_cmds  # the account commands, in their own module

    desk_user_cmds.register(desk)
    app.add_typer(desk, name="desk")
