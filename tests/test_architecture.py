"""The layering rules, kept true by walking the imports (ast), not by convention alone."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def py_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def test_the_engine_never_imports_streamlit_or_plotly():
    for path in py_files("engine"):
        bad = {m for m in imports(path) if m.split(".")[0] in {"streamlit", "plotly"}}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_pages_and_ui_never_touch_the_databases_or_engine_internals():
    for folder in ("pages", "ui"):
        for path in py_files(folder):
            for module in imports(path):
                top = module.split(".")[0]
                assert top not in {"duckdb", "lancedb", "pyarrow"}, f"{path.relative_to(ROOT)} imports {module}"
                assert module == "engine" or not module.startswith("engine."), (
                    f"{path.relative_to(ROOT)} imports {module}: pages use only what engine/__init__.py exports"
                )


def test_only_config_reads_environment_variables():
    for path in py_files("engine"):
        if path.name == "config.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os":
                assert node.attr not in {"environ", "getenv"}, f"{path.relative_to(ROOT)} reads the environment"


# What storage may import from above it: errors and ids (plain values), and startup (imports nothing of the engine).
BELOW_STORAGE = {"errors", "ids", "startup"}


def test_storage_imports_nothing_above_it():
    for path in py_files("engine/store/sql") + py_files("engine/store/vectors"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level >= 2 and node.module:
                assert node.module.split(".")[0] in BELOW_STORAGE, f"{path.relative_to(ROOT)} imports ..{node.module}"


def test_startup_imports_nothing_of_the_engine():
    tree = ast.parse((ROOT / "engine" / "startup.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and not (node.module or "").startswith("engine"), ast.unparse(node)
        if isinstance(node, ast.Import):
            assert not any(a.name.startswith("engine") for a in node.names), ast.unparse(node)


def test_no_module_grows_past_a_readable_size():
    for folder in ("engine", "pages", "ui"):
        for path in py_files(folder):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            assert lines <= 600, f"{path.relative_to(ROOT)} has {lines} lines: split it by responsibility"
