"""Core: pure logic — settings, ISO weeks, parsers, the weekly and distillation engines, redaction, memory
scoring, the LLM clients. Imports no other layer and none of Prefect, DuckDB or LanceDB."""


# --- a checkout: chronicle.cli, chronicle.flows, ... are the folders beside this one ------------------------------
# An installed wheel holds them inside this package (setuptools package-dir, pyproject.toml). Run from the
# repository (tests, CI, `python -m`, an editable install), cwd's `chronicle/` is this folder and the layers
# are its siblings: a finder maps exactly those seven names, nothing else of the repository.
def _map_checkout_layers() -> None:
    import importlib.util
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    layers = ("cli", "desk", "deployments", "flows", "tasks", "services", "storage")
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
