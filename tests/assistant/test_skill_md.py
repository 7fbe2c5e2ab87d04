"""The committed SKILL.md is what `chronicle skill` generates from today's command line and MCP tools."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]


def test_committed_skill_md_is_current(home: Path) -> None:
    from chronicle.cli.main import app
    from chronicle.cli.mcp_cmds import skill_text
    from chronicle.cli.skill import SKILL_PATH

    committed = (REPO / SKILL_PATH).read_text(encoding="utf-8")
    assert committed == skill_text(app), f"{SKILL_PATH} is stale: run `chronicle skill --out {SKILL_PATH}`"
    out = CliRunner().invoke(app, ["skill", "--check", str(REPO / SKILL_PATH)])
    assert out.exit_code == 0, out.output


def test_skill_md_names_every_command_and_goes_stale_when_one_changes(home: Path, tmp_path: Path) -> None:
    import typer

    from chronicle.cli.main import app
    from chronicle.cli.mcp_cmds import skill_text

    text = skill_text(app)
    for command in ("chronicle memory search QUERY", "chronicle memory forget [MEMORY_ID]", "chronicle mcp",
                    "chronicle distill", "chronicle memory edit MEMORY_ID"):
        assert f"### `{command}`" in text
    assert "`--about` VALUE" in text and "`propose_memory`" in text and "`--dry-run`" in text
    search = text.split("### `chronicle memory search QUERY`")[1].split("###")[0]
    assert "`--format`" in search and "`--json`" not in search  # hidden options stay out

    extra = typer.Typer()
    extra.registered_commands += app.registered_commands
    extra.registered_groups += app.registered_groups

    @extra.command()
    def brand_new(level: int = typer.Option(1, "--level", help="How new.")) -> None:
        """A command added later."""

    assert skill_text(extra) != text and "### `chronicle brand-new`" in skill_text(extra)
    (tmp_path / "SKILL.md").write_text(text.replace("Search the distilled memory", "Search memory"), encoding="utf-8")
    out = CliRunner().invoke(app, ["skill", "--check", str(tmp_path / "SKILL.md")])
    assert out.exit_code == 1 and "stale" in out.output
