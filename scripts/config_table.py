"""Render README's configuration table from the `Settings` class: names, defaults and meanings come from the
class, so the table cannot drift from the code. `python -m scripts.config_table --write` rewrites the block.

The table lists what an operator sets (OPERATOR, grouped by component); every other field is a tuning knob
documented where it is declared (`chronicle/settings.py`). `tests/test_docs.py` fails when the README block is
stale or when a name below is no longer a field.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

from chronicle.settings import Settings

REPO = Path(__file__).resolve().parents[1]
START, END = "<!-- config:start -->", "<!-- config:end -->"
OPERATOR: dict[str, tuple[str, ...]] = {
    "LLM": ("llm_url", "llm_model", "llm_api_key", "llm_concurrency"),
    "embedding and memory": ("embedding_url", "embedding_model", "embedding_api_key", "distill_days",
                             "protected_files", "knowledge_min_importance", "knowledge_max_chars",
                             "memory_llm_decisions"),
    "storage": ("home", "duckdb_path", "lancedb_uri", "workspace", "catalog", "data_path", "aws_endpoint_url",
                "aws_access_key_id", "aws_secret_access_key", "aws_region"),
    "ingest": ("timezone", "project_timezones", "column_map", "notes_project", "source_paths"),
    "weekly": ("backfill_spread", "context_flagged_weeks"),
    "alerts": ("alert_webhook_url", "alert_block", "alert_weekly_deadline"),
    "desk": ("desk_port", "desk_idle_timeout_s", "desk_prefect_ui_url"),
    "fail closed": ("input_roots", "pseudonymise_families", "redact_subject_id_pattern", "redact_commit_hashes_safe"),
}


def _docstrings() -> dict[str, str]:
    """Each field's docstring (the string literal right below it in the class body)."""
    tree = ast.parse((REPO / "chronicle" / "settings.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Settings")
    docs: dict[str, str] = {}
    for field, doc in zip(cls.body, cls.body[1:], strict=False):
        if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)):
            docs[field.target.id] = " ".join(str(doc.value.value).split())
    return docs


def _env_names(name: str) -> str:
    alias = Settings.model_fields[name].validation_alias
    names = list(alias.choices) if alias is not None else [f"CHRONICLE_{name.upper()}"]
    return ", ".join(f"`{n}`" for n in names if not (n.startswith("CHRONICLE_") and len(names) > 1))


def _default(name: str) -> str:
    field = Settings.model_fields[name]
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    return f"`{value}`".replace("|", "\\|")


def _first_sentence(text: str) -> str:
    head = re.split(r"(?<!e\.g)(?<!i\.e)\.\s", text, maxsplit=1)[0].rstrip(".")
    return head.replace("|", "\\|") + "."


def render() -> str:
    docs = _docstrings()
    lines = ["| component | variable | default | meaning |", "|---|---|---|---|"]
    for component, names in OPERATOR.items():
        for name in names:
            lines.append(f"| {component} | {_env_names(name)} | {_default(name)} | {_first_sentence(docs[name])} |")
    return "\n".join(lines)


def readme_block(text: str) -> str:
    return text.split(START, 1)[1].split(END, 1)[0].strip("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="Rewrite the README block.")
    readme = REPO / "README.md"
    if not parser.parse_args().write:
        print(render())
        return
    text = readme.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    readme.write_text(f"{head}{START}\n{render()}\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")


if __name__ == "__main__":
    main()
