"""List the functions that only forward their arguments to a function of another layer.

A forwarder is a function whose body (after an optional docstring) is one `return f(...)`, possibly inside
`with connect(...)/transaction(...) as conn:`, where `f` comes from another top-level package (a layer) and
every argument is one of the function's own parameters, the connection, or a constant. Such a function is a
layer that only costs a hop: the caller can call `f` (or `chronicle.storage.db.read(settings, f, ...)`) itself.

Each one that stays is in ALLOWED with the reason it stays. `python scripts/forwarders.py` prints the
forwarders not allowed (exit 1 if any) and the allowed ones that are no longer forwarders (stale entries);
tests/test_forwarders.py runs it.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAYERS = ("cli", "deployments", "flows", "tasks", "services", "storage", "chronicle")

_TASK = ("the @task that gives the flow a named, observable step (UI, states, concurrency) over a Prefect-free use "
         "case the CLI also calls; tasks/distill.py is another branch's today")
_OWNED = ("a distill step a task names; left as a use case for now: folding it into "
          "`chronicle.storage.db.read` changes its window (read-write today)")
_SETTINGS = "the core operation with what it needs taken from Settings (workspace, backups kept, daily cap)"
_STORE = "the use case's name for a MemoryStore operation (flows would otherwise build the store themselves)"
ALLOWED: dict[str, str] = {
    # tasks/: the decorator on a use case. Putting @task on the service itself would make services import
    # Prefect's task machinery, and the CLI calls the same use cases outside any flow.
    "chronicle.tasks.distill.load_window": _TASK,
    "chronicle.tasks.distill.clean_knowledge_workspace": _TASK,
    "chronicle.tasks.distill.cached_chunks": _TASK,
    "chronicle.tasks.distill.store_batches": _TASK,
    "chronicle.tasks.distill.reconcile_events": _TASK,
    "chronicle.tasks.distill.reconcile_orphans": _TASK,
    "chronicle.tasks.distill.proposals_overview": _TASK,
    "chronicle.tasks.distill.memory_count": _TASK,
    "chronicle.tasks.distill.write_knowledge": _TASK,
    "chronicle.tasks.distill.record_run": _TASK,
    "chronicle.tasks.distill.drop_forgotten": _TASK,
    # services/ reads in modules other branches are changing now
    "chronicle.services.distill.load_window": _OWNED,
    "chronicle.services.distill.cached_chunks": _OWNED,
    "chronicle.services.distill.clean_knowledge_workspace": _SETTINGS,
    "chronicle.services.distill.store_batches": _STORE,
    "chronicle.services.distill.memory_count": _STORE,
    "chronicle.services.memory.list_memories": _STORE,
    "chronicle.services.memory.tag_counts": _STORE,
    "chronicle.services.memory.reindex": _STORE,
}


@dataclass(frozen=True)
class Forwarder:
    name: str  # module.function
    path: str
    line: int
    target: str  # the dotted call it forwards to


def canon(module: str) -> str:
    """`chronicle.storage.db` (the installed namespace) and `chronicle.storage.db` (before it) name the same module."""
    head, _, rest = module.partition(".")
    return rest if head == "chronicle" and rest.split(".", 1)[0] in LAYERS[:-1] else module


def _layer(module: str) -> str:
    return canon(module).split(".", 1)[0]


def _imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> the module it was imported from (`from storage import reports` -> chronicle.storage.reports)."""
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name
    return names


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    if isinstance(node, ast.Call):  # MemoryStore(settings).count()
        inner = _dotted(node.func)
        return f"{inner}()" if inner and _plain_args(node, set(), allow_any_name=True) else None
    return None


def _plain_args(call: ast.Call, params: set[str], allow_any_name: bool = False) -> bool:
    values = [*call.args, *(k.value for k in call.keywords)]
    for value in values:
        if isinstance(value, ast.Starred):
            value = value.value
        if isinstance(value, ast.Constant):
            continue
        if isinstance(value, ast.Name) and (allow_any_name or value.id in params):
            continue
        if isinstance(value, ast.Attribute) and (_root(value) in params or allow_any_name):  # week.number
            continue
        return False
    return True


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _decorated(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A decorator other than @task adds behaviour (a cache, a context manager): not a mere forwarder."""
    for dec in fn.decorator_list:
        name = _dotted(dec.func if isinstance(dec, ast.Call) else dec) or ""
        if name.rsplit(".", 1)[-1] != "task":
            return True
    return False


def _body(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return body


def _forwarded_call(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Call | None:
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    params |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a}
    body = _body(fn)
    if len(body) == 1 and isinstance(body[0], ast.With) and len(body[0].body) == 1:
        with_ = body[0]
        params |= {item.optional_vars.id for item in with_.items if isinstance(item.optional_vars, ast.Name)}
        if not all(isinstance(item.context_expr, ast.Call) and _plain_args(item.context_expr, params)
                   for item in with_.items):
            return None
        body = with_.body
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Call):
        return None
    call = body[0].value
    return call if _plain_args(call, params) else None


def find(repo: Path = REPO) -> list[Forwarder]:
    found = []
    for layer in LAYERS:
        for path in sorted((repo / layer).rglob("*.py")):
            module = ".".join(path.relative_to(repo).with_suffix("").parts)
            tree = ast.parse(path.read_text(encoding="utf-8"))
            imported = _imports(tree)
            for fn in tree.body:
                if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) or _decorated(fn):
                    continue
                call = _forwarded_call(fn)
                target = _dotted(call.func) if call is not None else None
                if target is None:
                    continue
                head, _, rest = target.partition(".")
                head = head.removesuffix("()")  # MemoryStore(settings).count()
                source = imported.get(head)
                if source is None or _layer(source) == _layer(module) or _layer(source) not in LAYERS:
                    continue
                found.append(Forwarder(f"{module}.{fn.name}", str(path.relative_to(repo)), fn.lineno,
                                       canon(f"{source}.{rest}" if rest else source)))
    return found


def main() -> int:
    found = find()
    allowed = {canon(name): why for name, why in ALLOWED.items()}
    names = {f.name for f in found}
    unexplained = [f for f in found if f.name not in allowed]
    stale = sorted(set(allowed) - names)
    for f in found:
        why = allowed.get(f.name)
        print(f"{f.path}:{f.line}: {f.name} -> {f.target}" + (f"  [allowed: {why}]" if why else "  [FORWARDER]"))
    for name in stale:
        print(f"stale allow-list entry (no longer a forwarder, remove it): {name}")
    print(f"{len(found)} forwarders, {len(found) - len(unexplained)} allowed, {len(unexplained)} unexplained, "
          f"{len(stale)} stale")
    return 1 if unexplained or stale else 0


if __name__ == "__main__":
    sys.exit(main())
