"""The mass renames of issue 25, run ONCE by the lead on the merged tree (idempotent: a second run changes nothing).

    python scripts/house_moves.py            # moves with `git mv`, rewrites references, prints a summary
    ruff check --fix . && pytest -m "not slow"  # then re-install: pip install -e '.[dev,dask]' (new entry point)

1. One name per idea: module renames (four "runs", two "spread", the redactor out of chronicle/distill/,
   storage/memory_*.py -> storage/memory/, the fan-out helpers to tasks/fan_out/, three "validate"s), symbol
   renames (FileResult, Answer, Decision, load_settings defined twice), MemoryEvent importable from its model.
2. The installed namespace: only `chronicle` at the top of site-packages. The folders cli/ deployments/ flows/
   tasks/ services/ storage/ stay at the top of the repository and are mapped under the `chronicle` package at
   install time (setuptools package-dir); imports become `chronicle.flows...`; a checkout (tests, CI,
   `python -m`) maps them the same way through `chronicle/__init__.py`.

Every reference follows: Python imports (AST), dotted module names in strings and docs, file paths in docs,
prefect.yaml, pyproject's import-linter contracts, the Makefile.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAYERS = ("cli", "deployments", "flows", "tasks", "services", "storage")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".cfg", ".ini", ".txt", ".sh"}
TEXT_NAMES = {"Makefile", "run", "Dockerfile"}
SKIP_DIRS = {".git", ".venv", "__pycache__", "node_modules", ".chronicle", "data", ".pytest_cache", ".ruff_cache"}


def _redaction_home() -> str:
    # Issue 21 grows a chronicle/redaction/ package (shapes, checks); the redactor joins it when it exists.
    return "chronicle.redaction.redactor" if (REPO / "chronicle/redaction/__init__.py").exists() else "chronicle.redact"


def module_moves() -> list[tuple[str, str]]:
    """(old module, new module), in the names before the namespace move."""
    return [
        # four modules called runs -> what each one is
        ("chronicle.runs", "chronicle.run_rows"),  # a run-history row and how it reads
        ("storage.runs", "storage.pipeline_runs"),  # the pipeline_runs table
        ("services.runs", "services.run_tracking"),  # tracked_run: the bookkeeping around every flow run
        # two called spread; the fan-out helpers that hold no @task
        ("services.spread", "services.week_dibs"),  # who writes which week of a spread backfill
        ("tasks.fanout", "tasks.fan_out.weeks"),  # weeks as concurrent tasks inside one flow run
        ("tasks.spread", "tasks.fan_out.workers"),  # a backfill spread over the work pool's workers
        # the redactor is used by seven modules outside distillation
        ("chronicle.distill.redact", _redaction_home()),
        # three "validate"s: flow parameters (pure rules, and the use case that reads the known projects) and
        # the check of an LLM's reply items
        ("chronicle.validation", "chronicle.param_checks"),
        ("services.validate", "services.param_checks"),
        ("chronicle.distill.validate", "chronicle.distill.reply_checks"),
        # five storage/memory_*.py files are one package
        *[(f"storage.memory_{n}", f"storage.memory.{n}")
          for n in ("arrow", "events", "indexes", "schema", "search", "store")],
    ]


# Test files moved on the i25 branch (tests/unit mirrors the core); references elsewhere follow here, after the
# merge, so the other branches' edits of README and docs need no conflict resolution.
TEST_MOVES = {
    **{f"tests/distill/{n}.py": f"tests/unit/distill/{n}.py"
       for n in ("test_gate", "test_knowledge", "test_offline_and_chunks", "test_parse", "test_redact")},
    "tests/security/test_injection_screen.py": "tests/unit/distill/test_injection_screen.py",
    "tests/security/test_redaction_corpus.py": "tests/unit/distill/test_redaction_corpus.py",
    **{f"tests/memory/{n}.py": f"tests/unit/memory/{n}.py"
       for n in ("test_dedup", "test_dedup_pairs", "test_search_text", "test_embedder", "test_query_cache")},
    **{f"tests/weekly/{n}.py": f"tests/unit/weekly/{n}.py"
       for n in ("test_context_pure", "test_engines", "test_stats_faithfulness")},
}


def rewrite_test_paths(text: str) -> str:
    for old, new in TEST_MOVES.items():
        text = re.sub(rf"(?<![\w/.]){re.escape(old)}", new, text)
    return text


SYMBOL_RENAMES = [
    # (module that defines it, old name, new name): the other definition keeps the short name
    ("chronicle.distill.knowledge", "FileResult", "KnowledgeWrite"),  # ingest's FileResult is a typed row
    ("services.history", "Answer", "HistoryAnswer"),  # chronicle.llm.attempts.Answer is an LLM reply
    ("services.proposals", "Decision", "ProposalDecision"),  # chronicle.weekly.engine.Decision: cached or not
    ("cli.common", "load_settings", "settings_from_options"),  # chronicle.settings.load_settings reads the env
]
SYMBOL_HOMES = [
    # (module that re-exports, name, its one home)
    ("chronicle.memory.records", "MemoryEvent", "chronicle.memory.model"),
    ("chronicle.memory.records", "EventKind", "chronicle.memory.model"),
]
PACKAGE_DOCS = {
    "storage/memory": "The memory store on LanceDB: schema, Arrow rows, events, indexes, search, the store.",
    "tasks/fan_out": "Fan-out shared by the weekly flows (no @task here; flows never import each other):\n"
                     "weeks as concurrent tasks in one run (`weeks`), a backfill spread over the pool's workers\n"
                     "(`workers`).",
}
WIDTH = 120  # ruff's line-length


# --- files ----------------------------------------------------------------------------------------------------
def text_files() -> list[Path]:
    out = []
    for path in REPO.rglob("*"):
        rel = path.relative_to(REPO)
        if any(part in SKIP_DIRS for part in rel.parts[:-1]) or not path.is_file():
            continue
        if rel.parts[0] == "tests" and "data" in rel.parts:
            continue
        if path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES:
            out.append(path)
    return sorted(out)


def _path_of(module: str) -> Path:
    return REPO / Path(*module.split("."))


def _file_of(module: str) -> Path | None:
    base = _path_of(module)
    if base.with_suffix(".py").exists():
        return base.with_suffix(".py")
    if (base / "__init__.py").exists():
        return base / "__init__.py"
    return None


def git_mv(old: Path, new: Path) -> bool:
    if not old.exists() or new.exists():
        return False
    new.parent.mkdir(parents=True, exist_ok=True)
    init = new.parent / "__init__.py"
    rel_parent = str(new.parent.relative_to(REPO))
    if rel_parent in PACKAGE_DOCS and not init.exists():
        init.write_text(f'"""{PACKAGE_DOCS[rel_parent]}"""\n', encoding="utf-8")
        subprocess.run(["git", "add", str(init)], cwd=REPO, check=True)
    subprocess.run(["git", "mv", str(old), str(new)], cwd=REPO, check=True)
    return True


# --- Python imports (AST): `from a.b import c` where a.b.c moved --------------------------------------------------
def _render(module: str, names: list[tuple[str, str | None]], indent: str) -> str:
    parts = ", ".join(n if a in (None, n) else f"{n} as {a}" for n, a in names)
    return f"{indent}from {module} import {parts}"


def rewrite_from_imports(source: str, moved: dict[str, str], homes: dict[tuple[str, str], str]) -> str:
    """Split `from P import leaf` where P.leaf is a moved module (-> `from newP import newleaf as leaf`) and
    names that have another home. Keeps each local name, so the code below the import is untouched."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    lines = source.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        keep, extra = [], []
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            if full in moved:
                parent, _, leaf = moved[full].rpartition(".")
                extra.append((parent, [(leaf, alias.asname or alias.name)]))
            elif (node.module, alias.name) in homes:
                extra.append((homes[node.module, alias.name], [(alias.name, alias.asname)]))
            else:
                keep.append((alias.name, alias.asname))
        if not extra:
            continue
        indent = lines[node.lineno - 1][: node.col_offset]
        stmts = ([_render(node.module, keep, indent)] if keep else []) + [_render(m, n, indent) for m, n in extra]
        edits.append((node.lineno, node.end_lineno or node.lineno, "\n".join(stmts) + "\n"))
    for start, end, text in sorted(edits, reverse=True):
        lines[start - 1:end] = [text]
    return "".join(lines)


# --- dotted names and paths in any text ----------------------------------------------------------------------------
def _dotted_re(module: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.]){re.escape(module)}(?![\w])")


def _path_re(module: str) -> re.Pattern[str]:
    path = module.replace(".", "/")
    return re.compile(rf"(?<![\w/.]){re.escape(path)}(\.py|/)")


def rewrite_moves(text: str, moves: list[tuple[str, str]]) -> str:
    for old, new in moves:
        text = _dotted_re(old).sub(new, text)
        new_path = new.replace(".", "/")
        text = _path_re(old).sub(lambda m, p=new_path: p + m.group(1), text)
    return text


def rewrite_symbols(path: Path, text: str) -> str:
    module = ".".join(path.relative_to(REPO).with_suffix("").parts)
    for home, old, new in SYMBOL_RENAMES:
        defines = module == home
        imports = re.search(rf"from {re.escape(home)} import [^\n]*\b{old}\b", text) or re.search(
            rf"from {re.escape(home)} import \([^)]*\b{old}\b", text)
        if defines or imports:
            text = _rename_name_tokens(text, old, new)
    return text


def _rename_name_tokens(text: str, old: str, new: str) -> str:
    """Rename a name where the code uses it (NAME tokens not after a dot), never inside strings or prose."""
    lines = text.splitlines(keepends=True)
    spots = []
    previous = None
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.NAME and token.string == old and not (previous and previous.string == "."):
            spots.append(token.start)
        if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            previous = token
    for row, col in reversed(spots):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[col + len(old):]
    return "".join(lines)


def namespace(text: str, is_python: bool) -> str:
    """`storage.db` -> `chronicle.storage.db` where it names a module of the repository; `from storage import`."""
    layers = "|".join(LAYERS)

    def dotted(match: re.Match[str]) -> str:
        layer, name = match.group(1), match.group(2)
        exists = (REPO / layer / f"{name}.py").exists() or (REPO / layer / name / "__init__.py").exists()
        return f"chronicle.{layer}.{name}" if exists else match.group(0)

    text = re.sub(rf"(?<![\w./-])({layers})\.(\w+)", dotted, text)
    if is_python:
        text = re.sub(rf"^(\s*)from ({layers}) import ", r"\1from chronicle.\2 import ", text, flags=re.M)
        text = re.sub(rf"^(\s*)import ({layers})$", r"\1from chronicle import \2", text, flags=re.M)
    return text


# --- lines the longer names pushed past the width -------------------------------------------------------------------
def _docstring_lines(tree: ast.AST) -> set[int]:
    rows: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
                    first.value.value, str):
                rows.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return rows


def wrap_long_lines(text: str) -> str:
    """Re-wrap what a rename lengthened where that cannot change behaviour: docstrings, comments and lists of
    strings (cli/warm.py's module list); anything else is left for a human (ruff names it)."""
    try:
        docs = _docstring_lines(ast.parse(text))
    except SyntaxError:
        return text
    out = []
    for row, line in enumerate(text.split("\n"), start=1):
        while len(line) > WIDTH:
            indent = line[: len(line) - len(line.lstrip())]
            stripped = line.strip()
            if stripped.startswith('"') and stripped.endswith(",") and '", "' in stripped:
                cut = line.rfind('", "', 0, WIDTH - 1)
                if cut <= len(indent):
                    break
                out.append(line[: cut + 2])
                line = indent + line[cut + 3:]
            elif row in docs or stripped.startswith("#"):
                cut = line.rfind(" ", len(indent) + 1, WIDTH)
                if cut <= len(indent):
                    break
                out.append(line[:cut])
                line = indent + ("# " if stripped.startswith("#") else "") + line[cut + 1:]
            else:
                break
        out.append(line)
    return "\n".join(out)


# --- the packaging pieces -------------------------------------------------------------------------------------------
def packages() -> list[str]:
    out = []
    for top in ("chronicle", *LAYERS):
        for init in sorted((REPO / top).rglob("__init__.py")):
            rel = init.parent.relative_to(REPO).parts
            if "__pycache__" in rel:
                continue
            out.append(".".join(("chronicle", *rel) if top != "chronicle" else rel))
    return out


def core_modules() -> list[str]:
    names = []
    for path in sorted((REPO / "chronicle").iterdir()):
        if path.name.startswith(("_", ".")) or path.name in ("data",):
            continue
        if path.suffix == ".py" or (path / "__init__.py").exists():
            names.append(path.stem if path.suffix == ".py" else path.name)
    return names


def rewrite_pyproject(text: str) -> str:
    text = re.sub(r'chronicle = "cli\.main:app"', 'chronicle = "chronicle.cli.main:app"', text)
    mapping = ", ".join(f'"chronicle.{layer}" = "{layer}"' for layer in LAYERS)
    block = ("[tool.setuptools]\n"
             "# Only `chronicle` at the top of site-packages: the layer folders stay at the top of the repository and\n"
             "# are installed as chronicle.cli, chronicle.flows, ... (a checkout maps them in chronicle/__init__.py).\n"
             f'package-dir = {{"chronicle" = "chronicle", {mapping}}}\n'
             "packages = [\n" + "".join(f'  "{p}",\n' for p in packages()) + "]\n")
    text = re.sub(r"\[tool\.setuptools\.packages\.find\]\ninclude = \[[^\]]*\]\n", block, text)
    text = re.sub(r"(?m)^\[tool\.setuptools\]\n(#[^\n]*\n)*package-dir = [^\n]*\npackages = \[\n(  \"[^\"]+\",\n)*\]\n",
                  block, text)
    text = text.replace('storage = ["migrations/*.sql"]', '"chronicle.storage" = ["migrations/*.sql"]')
    core = " : ".join(core_modules())
    text = re.sub(r'root_packages = \[[^\]]*\]', 'root_packages = ["chronicle"]', text)
    text = re.sub(r'(?m)^containers = \["chronicle"\]\n', "", text)
    text = re.sub(r'(?ms)(id = "layers"\n.*?)layers = \[[^\]]*\]',
                  lambda m: m.group(1) + 'containers = ["chronicle"]\nlayers = ["cli", "deployments", "flows", '
                                         f'"tasks", "services", "storage", "{core}"]', text)
    text = re.sub(r'(?ms)(id = "pure-core"\n.*?)source_modules = \[[^\]]*\]',
                  lambda m: m.group(1) + "source_modules = [" + ", ".join(
                      f'"chronicle.{n}"' for n in core_modules()) + "]", text)
    text = re.sub(r'source_modules = \["cli", "deployments", "flows", "tasks", "services"\]',
                  'source_modules = ["chronicle.cli", "chronicle.deployments", "chronicle.flows", "chronicle.tasks", '
                  '"chronicle.services"]', text)
    text = text.replace('source_modules = ["storage"]', 'source_modules = ["chronicle.storage"]')
    text = text.replace('modules = ["flows.*"]', 'modules = ["chronicle.flows.*"]')
    return text


CHECKOUT_FINDER = '''

# --- a checkout: chronicle.cli, chronicle.flows, ... are the folders beside this one ------------------------------
# An installed wheel holds them inside this package (setuptools package-dir, pyproject.toml). Run from the
# repository (tests, CI, `python -m`, an editable install), cwd's `chronicle/` is this folder and the layers
# are its siblings: a finder maps exactly those six names, nothing else of the repository.
def _map_checkout_layers() -> None:
    import importlib.util
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    layers = ("cli", "deployments", "flows", "tasks", "services", "storage")
    if (Path(__file__).resolve().parent / "flows").exists() or not (root / "pyproject.toml").is_file():
        return  # installed from a wheel: the layers are real subpackages

    class _CheckoutLayers:
        @staticmethod
        def find_spec(fullname, path=None, target=None):
            head, _, name = fullname.partition(".")
            if head != __name__ or name not in layers or not (root / name / "__init__.py").is_file():
                return None
            return importlib.util.spec_from_file_location(
                fullname, root / name / "__init__.py", submodule_search_locations=[str(root / name)])

    if not any(type(f).__name__ == "_CheckoutLayers" for f in sys.meta_path):
        sys.meta_path.insert(0, _CheckoutLayers())


_map_checkout_layers()
'''


def add_checkout_finder() -> bool:
    init = REPO / "chronicle" / "__init__.py"
    text = init.read_text(encoding="utf-8")
    if "_map_checkout_layers" in text:
        return False
    init.write_text(text.rstrip("\n") + "\n" + CHECKOUT_FINDER, encoding="utf-8")
    return True


def main() -> int:
    if not (REPO / "pyproject.toml").exists():
        print("run from a checkout of the repository", file=sys.stderr)
        return 2
    moves = module_moves()
    moved_files = 0
    for old, new in moves:
        src = _file_of(old)
        if src is None:
            continue
        dst = _path_of(new).with_suffix(".py") if src.name != "__init__.py" else _path_of(new) / "__init__.py"
        moved_files += git_mv(src, dst)
    moved = dict(moves)
    homes = {(m, n): h for m, n, h in SYMBOL_HOMES}
    changed = 0
    for path in text_files():
        if path == Path(__file__).resolve():
            continue
        text = original = path.read_text(encoding="utf-8", errors="surrogateescape")
        is_python = path.suffix == ".py"
        if is_python:
            text = rewrite_from_imports(text, moved, homes)
        text = rewrite_moves(text, moves)
        text = rewrite_test_paths(text)
        for home, old_name, new_name in SYMBOL_RENAMES:  # `cli.common.load_settings` in docs and strings
            text = re.sub(rf"(?<![\w.]){re.escape(home)}\.{old_name}\b", f"{home}.{new_name}", text)
        if is_python:
            text = rewrite_symbols(path, text)
        if path.name == "pyproject.toml":
            text = rewrite_pyproject(text)
        text = namespace(text, is_python)
        if is_python and text != original:
            text = wrap_long_lines(text)
        if text != original:
            path.write_text(text, encoding="utf-8", errors="surrogateescape")
            changed += 1
    for module, name, _home in SYMBOL_HOMES:  # the re-export goes; the module may still use the name itself
        path = _file_of(module)
        if path is not None:
            text = path.read_text(encoding="utf-8")
            new = re.sub(rf'"{name}", ', "", text)
            if new != text:
                path.write_text(new, encoding="utf-8")
    finder = add_checkout_finder()
    print(f"moved {moved_files} modules, rewrote {changed} files, checkout finder {'added' if finder else 'present'}")
    print("next: ruff check --fix . && python -m scripts.architecture --write && pip install -e '.[dev,dask]' "
          "&& pytest -m 'not slow'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
