"""Render README's configuration table from the `Settings` class: names, defaults and meanings come from the
class, so the table cannot drift from the code. `python -m scripts.config_table --write` rewrites the block.

The table lists what an operator sets (each settings class's OPERATOR, by section); every other field is a tuning knob
documented where it is declared (`chronicle/settings.py`, `chronicle/settings_sections.py`).
`tests/test_docs.py` fails when the README block is stale or when an OPERATOR entry names no field.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

from chronicle.settings import Settings
from chronicle.settings_checks import env_names, field_of

REPO = Path(__file__).resolve().parents[1]
START, END = "<!-- config:start -->", "<!-- config:end -->"


def operator_fields() -> list[tuple[str, tuple[str | None, str]]]:
    """(component, (section, field)) of every field an operator sets: each class's OPERATOR, root fields first."""
    out: list[tuple[str, tuple[str | None, str]]] = [("storage", (None, name)) for name in Settings.OPERATOR]
    for section in Settings.sections():
        out += [(section, (section, name)) for name in Settings.model_fields[section].annotation.OPERATOR]
    return out


def _docstrings() -> dict[tuple[str | None, str], str]:
    """Each field's docstring (the string literal right below it in its class body), by (section, field)."""
    classes = {info.annotation.__name__: section for section, info in Settings.model_fields.items()
               if section in Settings.sections()} | {"Settings": None}
    docs: dict[tuple[str | None, str], str] = {}
    for module in ("settings.py", "settings_sections.py"):
        tree = ast.parse((REPO / "chronicle" / module).read_text(encoding="utf-8"))
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name in classes):
            for field, doc in zip(cls.body, cls.body[1:], strict=False):
                if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                        and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)):
                    docs[(classes[cls.name], field.target.id)] = " ".join(str(doc.value.value).split())
    return docs


def _env_names(path: tuple[str | None, str]) -> str:
    names = env_names(Settings)[path]
    # The seed's / AWS's own names are the documented ones; the CHRONICLE_ spellings of them are aliases.
    return ", ".join(f"`{n}`" for n in names if not (n.startswith("CHRONICLE_") and len(names) > 1))


def _default(path: tuple[str | None, str]) -> str:
    value = field_of(Settings, path).get_default(call_default_factory=True)
    if value is None:
        return "unset"
    return f"`{value}`".replace("|", "\\|")


def _first_sentence(text: str) -> str:
    head = re.split(r"(?<!e\.g)(?<!i\.e)\.\s", text, maxsplit=1)[0].rstrip(".")
    return head.replace("|", "\\|") + "."


def render() -> str:
    docs = _docstrings()
    lines = ["| component | variable | default | meaning |", "|---|---|---|---|"]
    for component, path in operator_fields():
        lines.append(f"| {component} | {_env_names(path)} | {_default(path)} | {_first_sentence(docs[path])} |")
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
