"""The dependency rule as a test: import-linter contracts (pyproject.toml) plus what a linter cannot see.

Layers point down only (cli -> desk -> deployments -> flows -> tasks -> services -> storage -> chronicle core);
the core imports neither Prefect nor DuckDB nor LanceDB; only storage touches the databases; flows are
independent; `@task` / `@flow` and artifacts live in tasks/ and flows/ only.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAYERS = ("cli", "desk", "deployments", "flows", "tasks", "services", "storage", "chronicle")
LINT = str(Path(sys.executable).parent / "lint-imports")


def _config() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


# The layers are installed inside the `chronicle` package (chronicle.flows, ...) while the repository keeps them
# at the top; the contracts are checked on a copy of the code in its installed shape.
CORE = [m.strip() for m in re.split(r"[:|]", next(c["layers"] for c in _config()["contracts"]
                                                  if c["type"] == "layers")[-1])]


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH=root first: a fixture tree's packages shadow the installed ones of the same name.
    return subprocess.run([LINT, "--no-cache"], cwd=root, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)}, timeout=120)


def _installed_view(dest: Path) -> Path:
    """The code as a wheel installs it (chronicle/ with the layer folders inside): import-linter's graph
    reads folders, not the checkout's import mapping (chronicle/__init__.py)."""
    skip = shutil.ignore_patterns("__pycache__", "data")
    shutil.copytree(REPO / "chronicle", dest / "chronicle", ignore=skip)
    for layer in LAYERS[:-1]:
        shutil.copytree(REPO / layer, dest / "chronicle" / layer, ignore=skip)
    shutil.copy(REPO / "pyproject.toml", dest / "pyproject.toml")
    return dest


def test_the_contracts_hold_for_the_code(tmp_path: Path) -> None:
    result = _lint(_installed_view(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _fixture_tree(root: Path, extra: dict[str, str]) -> Path:
    """A miniature of the project's layout under `root` with this repo's contracts, plus `extra` modules."""
    config = _config()
    lines = ["[importlinter]\nroot_packages =\n" + "".join(f"    {p}\n" for p in config["root_packages"]),
             "include_external_packages = True\n"]
    for contract in config["contracts"]:
        lines.append(f"\n[importlinter:contract:{contract['id']}]\n")
        for key, value in contract.items():
            if key == "id":
                continue
            if isinstance(value, list):
                lines.append(f"{key} =\n" + "".join(f"    {v}\n" for v in value))
            else:
                lines.append(f"{key} = {value}\n")
    (root / ".importlinter").write_text("".join(lines), encoding="utf-8")
    for package in LAYERS:
        folder = root / _placed(package)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text("", encoding="utf-8")
    files = {"chronicle/core.py": "import json\n", "storage/db.py": "import duckdb\nfrom chronicle import core\n",
             "services/uc.py": "from storage import db\n", "tasks/t.py": "from services import uc\n",
             "flows/a.py": "from tasks import t\n", "flows/b.py": "from tasks import t\n",
             "deployments/d.py": "import flows.a\n", "cli/main.py": "from deployments import d\n"} | extra
    for name, text in files.items():
        (root / _placed(name)).write_text(_placed_code(text), encoding="utf-8")
    for module in CORE:  # the core layer names its modules: each must exist
        if not (root / "chronicle" / f"{module}.py").exists():
            (root / "chronicle" / f"{module}.py").write_text("", encoding="utf-8")
    return root


def _placed(name: str) -> str:
    """A fixture path in the shape of the contracts: layers inside chronicle/, and the fixture's core modules
    named as two of the real core's (the contract lists the core by name)."""
    name = name.replace("chronicle/core.py", f"chronicle/{CORE[0]}.py").replace("chronicle/bad.py",
                                                                                 f"chronicle/{CORE[1]}.py")
    return f"chronicle/{name}" if name.split("/")[0] in LAYERS[:-1] else name


def _placed_code(code: str) -> str:
    layers = "|".join(LAYERS[:-1])
    code = re.sub(rf"^from ({layers})( |\.)", r"from chronicle.\1\2", code, flags=re.M)
    code = re.sub(rf"^import ({layers})\.", r"import chronicle.\1.", code, flags=re.M)
    return code.replace("from chronicle import core", f"from chronicle import {CORE[0]}")


def test_the_fixture_without_violations_passes(tmp_path: Path) -> None:
    result = _lint(_fixture_tree(tmp_path, {}))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("module", "code", "broken"), [
    ("chronicle/bad.py", "from storage import db\n", "Layers point down"),            # core reaching up
    ("storage/bad.py", "from services import uc\n", "Layers point down"),             # storage reaching up
    ("chronicle/bad.py", "import prefect\n", "The core is pure"),
    ("chronicle/bad.py", "import lancedb\n", "The core is pure"),
    ("services/bad.py", "import duckdb\n", "Only storage imports duckdb"),
    ("storage/bad.py", "from prefect import task\n", "Storage does not know Prefect"),
    ("flows/c.py", "from flows import a\n", "Flow modules are independent"),
])
def test_the_linter_fails_on_a_forbidden_import(tmp_path: Path, module: str, code: str, broken: str) -> None:
    result = _lint(_fixture_tree(tmp_path, {module: code}))
    assert result.returncode != 0
    out = " ".join(result.stdout.split())
    assert f"{broken}" in out and "BROKEN" in out, result.stdout


def _modules() -> list[Path]:
    return sorted(p for layer in LAYERS for p in (REPO / layer).rglob("*.py"))


def _prefect_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for `@task`/`@flow` decorators and artifact calls in a module."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for deco in node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                if name in ("task", "flow"):
                    found.append((deco.lineno, f"@{name}"))
        if isinstance(node, ast.Name | ast.Attribute):
            name = node.attr if isinstance(node, ast.Attribute) else node.id
            if name.startswith(("create_", "update_")) and name.endswith("_artifact"):
                found.append((node.lineno, name))
    return found


def test_tasks_flows_and_artifacts_live_only_in_their_folders() -> None:
    stray = []
    for path in _modules():
        layer = path.relative_to(REPO).parts[0]
        if layer in ("tasks", "flows"):
            continue
        stray += [f"{path.relative_to(REPO)}:{line} {what}"
                  for line, what in _prefect_uses(ast.parse(path.read_text(encoding="utf-8")))]
    assert stray == []
    # The check itself sees what it looks for.
    sample = "from prefect import task\n@task(name='x')\ndef f():\n    create_markdown_artifact(markdown='')\n"
    assert [w for _, w in _prefect_uses(ast.parse(sample))] == ["@task", "create_markdown_artifact"]


def test_every_flow_module_declares_exactly_one_flow() -> None:
    for path in (REPO / "flows").glob("*.py"):
        if path.name == "__init__.py":
            continue
        flows = [w for _, w in _prefect_uses(ast.parse(path.read_text(encoding="utf-8"))) if w == "@flow"]
        assert len(flows) == 1, f"{path.name}: {len(flows)} flows"


def test_unit_tests_mirror_the_core_package() -> None:
    """README "Where to look": core `chronicle/x/y.py` is tested in `tests/unit/x/`; a top-level core module (and
    the scripts) in `tests/unit/` itself. A unit folder naming no core package, or a test in a package's folder
    that never imports that package, would be a place nobody looks."""
    unit = REPO / "tests" / "unit"
    packages = {p.name for p in (REPO / "chronicle").iterdir() if (p / "__init__.py").is_file()}
    folders = {p.name for p in unit.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    assert folders and folders <= packages, folders - packages
    stray = [str(f.relative_to(unit)) for f in unit.glob("*/test_*.py")
             if f"chronicle.{f.parent.name}" not in f.read_text(encoding="utf-8")]
    assert stray == []


def test_the_readme_structure_block_is_generated_from_the_code() -> None:
    from scripts.architecture import readme_block, render

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert readme_block(readme) == render(), "run `python -m scripts.architecture --write`"


def test_ruff_is_clean_with_the_projects_imports_in_one_block() -> None:
    """The layer folders are imported as chronicle.services, chronicle.storage, ...; ruff, finding no such
    folders under chronicle/, would sort them among the third-party packages unless told they are the
    project's own: then every module reads stdlib, third-party, and one block of the project's imports."""
    ruff = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    assert ruff["isort"]["known-first-party"] == ["chronicle"] and "I" in ruff["select"]
    done = subprocess.run([str(Path(sys.executable).parent / "ruff"), "check", "--no-cache", "."], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]


def test_every_module_fits_in_one_sitting() -> None:
    """A newcomer reads any module in one sitting; a file growing past this gets split on its seams."""
    long = {str(p.relative_to(REPO)): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 450}
    assert long == {}


def test_every_function_fits_on_a_screen_or_two() -> None:
    """No function (a nested one counted inside its parent, as it is read) is longer than 60 lines."""
    long = {f"{p.relative_to(REPO)}:{node.lineno} {node.name}": n for p in _modules()
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and (n := node.end_lineno - node.lineno + 1) > 60}
    assert long == {}


def _storage_imports() -> dict[str, set[str]]:
    """storage module -> the storage modules it imports, anywhere in it (imports hidden in functions count)."""
    graph: dict[str, set[str]] = {}
    for path in sorted((REPO / "storage").glob("*.py")):
        name = path.stem
        graph[name] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                module = node.module.removeprefix("chronicle.")
                if module == "storage":
                    graph[name].update(alias.name for alias in node.names)
                elif module.startswith("storage."):
                    graph[name].add(module.split(".")[1])
            elif isinstance(node, ast.Import):
                graph[name].update(a.name.removeprefix("chronicle.").split(".")[1] for a in node.names
                                   if a.name.removeprefix("chronicle.").startswith("storage."))
    return graph


def test_storage_modules_import_each_other_without_a_cycle() -> None:
    """Claims <-> db was a cycle hidden inside functions; the file connection now sits below both."""
    graph = _storage_imports()
    cycles = []

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt == path[0]:
                cycles.append(" -> ".join([*path, nxt]))
            elif nxt not in path and nxt in graph and nxt > path[0]:
                walk(nxt, [*path, nxt])

    for start in sorted(graph):
        walk(start, [start])
    assert cycles == []


def test_only_the_redactor_makes_redacted_text_and_storage_embeds_through_the_check() -> None:
    """`Redacted` is built in one place (`Redactor.redact`), so a sink that insists on the type insists
    on the gate; and storage never calls an embedder's `embed` itself, only `embed_redacted` / `query_vector`,
    which refuse plain `str` (the memory store's writes check `require_redacted_memory`)."""
    makers, embeds = [], []
    for path in sorted(p for folder in LAYERS for p in (REPO / folder).rglob("*.py")):
        where = path.relative_to(REPO).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name == "Redacted" and where != "chronicle/redaction/redactor.py":
                makers.append(f"{where}:{node.lineno}")
            if name == "embed" and where.startswith("storage/"):
                embeds.append(f"{where}:{node.lineno}")
    assert makers == [] and embeds == []
    store = (REPO / "storage" / "memory" / "store.py").read_text(encoding="utf-8")
    assert "require_redacted_memory(" in store and "embed_redacted(" in store


HOME_OF_REDACT = "chronicle/redaction/configured.py"


def test_the_operators_redaction_settings_are_read_in_one_place() -> None:
    """`redactor_for(settings)` (HOME_OF_REDACT) is the one reader of `[redact]`'s patterns and safe shapes: a sink
    that built its redactor from the extra patterns alone kept 40-hex keys where the operator declared commit hashes
    unsafe, and hid the project's own subject ids. A sink reached before settings are passed down uses
    `entry_redactor()`; none builds a partial one."""
    readers, partial = [], []
    fields = {"extra_patterns", "subject_id_pattern", "commit_hashes_safe"}
    for path in sorted(p for folder in LAYERS for p in (REPO / folder).rglob("*.py")):
        where = path.relative_to(REPO).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in fields and where != HOME_OF_REDACT:
                readers.append(f"{where}:{node.lineno}")
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "build"
                    and getattr(node.func.value, "id", None) == "Redactor" and (node.args or node.keywords)
                    and where != HOME_OF_REDACT):
                partial.append(f"{where}:{node.lineno}")
    assert readers == [] and partial == []
