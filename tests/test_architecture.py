"""The layout and the layering rules, kept true by reading the tree and walking the imports (ast), not by convention
alone. The layout is the README's map (section "Layout"); the rules are listed under it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import engine

ROOT = Path(__file__).resolve().parent.parent
MAP_START = "<!-- layout map: tests/test_architecture.py reads this block -->"
MAP_END = "<!-- end of the layout map -->"
# Folders whose every package and module must be in the map (and every entry exist); the rest is checked one way.
MAPPED_IN_FULL = ("engine", "ui", "pages")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, absolute: ``from ..errors import X`` in engine/store/admin.py is
    ``engine.errors``, and ``from . import dashboard_cmd`` in engine/cli/main.py is ``engine.cli.dashboard_cmd``."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                found.add(str(node.module))
                continue
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
            if node.module:
                found.add(base)
            else:  # `from . import x`: x is a module of the package
                found |= {f"{base}.{a.name}" for a in node.names}
    return found


def imports(path: Path) -> set[str]:
    """The absolute imports of ``path`` as written (``import x`` and ``from x import y``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def py_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def within(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


# -- the layout map --------------------------------------------------------------------------------------------------
def layout_map() -> list[str]:
    """The paths the README's map lists (``engine/store/sql/database.py``, ``engine/store/sql/`` ...), from its
    indentation (two spaces a level)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split(MAP_START, 1)[1].split(MAP_END, 1)[0]
    lines = [line for line in block.splitlines() if line.strip() and not line.startswith("```")]
    paths: list[str] = []
    stack: list[str] = []
    for line in lines:
        indent = len(line) - len(line.lstrip(" "))
        assert indent % 2 == 0, f"layout map: odd indentation in {line!r}"
        depth = indent // 2
        name = line.split()[0]
        assert depth <= len(stack), f"layout map: {line!r} is indented under nothing"
        stack = stack[:depth]
        paths.append("".join(stack) + name)
        if name.endswith("/"):
            stack.append(name)
    return paths


def test_the_layout_map_reads_as_a_tree():
    paths = layout_map()
    assert len(paths) > 100, "the README's layout map is missing or was not read"
    assert len(paths) == len(set(paths)), "the layout map lists a path twice"
    assert {"engine/store/sql/database.py", "engine/trace/why_not.py", "ui/trace_data.py"} <= set(paths)


def test_every_entry_of_the_layout_map_exists():
    missing = [p for p in layout_map() if not (ROOT / p.rstrip("/")).exists()]
    assert not missing, f"the README's layout map lists what does not exist: {missing}"


def test_every_package_and_module_is_in_the_layout_map():
    listed = set(layout_map())
    unlisted = []
    for folder in MAPPED_IN_FULL:
        for path in py_files(folder):
            rel = path.relative_to(ROOT)
            if path.name == "__init__.py":
                entry = f"{rel.parent.as_posix()}/"  # a package is listed as its folder
            else:
                entry = rel.as_posix()
            if entry not in listed:
                unlisted.append(entry)
    assert not unlisted, f"add these to the README's layout map (section Layout), one line each: {unlisted}"


# -- the layering rules ----------------------------------------------------------------------------------------------
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


def test_pages_and_ui_import_only_exported_names():
    for path in [*py_files("pages"), *py_files("ui"), ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "engine" and node.level == 0:
                hidden = [a.name for a in node.names if a.name not in engine.__all__]
                assert not hidden, f"{path.relative_to(ROOT)} imports {hidden}: engine/__init__.py does not export it"


def test_only_config_reads_environment_variables():
    # config.py reads the settings' variables; process_env.py the process environment memlens prepares and passes on.
    for path in py_files("engine"):
        if path.relative_to(ROOT).as_posix() in {"engine/config.py", "engine/process_env.py"}:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os":
                assert node.attr not in {"environ", "getenv"}, f"{path.relative_to(ROOT)} reads the environment"


# What the table and vector backends may import of the engine: plain values (errors, ids, vocab), startup (which
# imports nothing of the engine), the migrations they apply (plain DDL), and each other.
BELOW_STORAGE = (
    "engine.errors",
    "engine.ids",
    "engine.vocab",
    "engine.startup",
    "engine.store.migrations",
    "engine.store.sql",
    "engine.store.vectors",
)


def test_storage_imports_nothing_above_it():
    files = py_files("engine/store/sql") + py_files("engine/store/vectors")
    assert len(files) >= 10
    for path in files:
        for module in imported_modules(path):
            if within(module, "engine"):
                assert within(module, *BELOW_STORAGE), f"{path.relative_to(ROOT)} imports {module}"


def test_the_trace_reads_memory_only_through_its_base():
    """The trace is read and redacted, never a writer of memory: of memory/ it may use the shared backends
    (memory/base.py), never a memory kind's module (their write paths)."""
    for path in py_files("engine/trace"):
        for module in imported_modules(path):
            if within(module, "engine.memory"):
                assert module == "engine.memory.base", f"{path.relative_to(ROOT)} imports {module}"


def test_only_the_cli_and_the_mcp_package_import_the_mcp_server():
    everything = [*py_files("engine"), *py_files("ui"), *py_files("pages"), ROOT / "app.py"]
    for path in everything:
        if within(module_name(path), "engine.cli", "engine.mcp"):
            continue
        bad = {m for m in imported_modules(path) if within(m, "engine.mcp")}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}: the MCP server is an entry point (engine/cli)"


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


def test_the_import_resolver_reads_relative_imports():
    """The rules above are only as good as ``imported_modules``: pin it on files whose imports are known."""
    assert "engine.errors" in imported_modules(ROOT / "engine" / "store" / "sql" / "database.py")
    assert "engine.store.migrations" in imported_modules(ROOT / "engine" / "store" / "sql" / "database.py")
    assert "engine.cli.dashboard_cmd" in imported_modules(ROOT / "engine" / "cli" / "main.py")
    assert re.fullmatch(r"engine\.store\.sql\.\w+", module_name(ROOT / "engine" / "store" / "sql" / "database.py"))
