"""The direction of imports is the architecture: cli and the hook runtime above services, the
services above the core, and the core (what every hook process runs) on the standard library and
apsw alone. Inside the core, what is said to an agent above `events`, above the writers, above
the base, with no circle; inside the services, packages by capability, one level above the
next (docs/design.md, "The services"). No module imports another in a circle, and none uses
another module's `_private` name. The contracts live in pyproject.toml; import-linter checks
them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def test_import_contracts_are_kept() -> None:
    done = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "7 kept, 0 broken" in done.stdout


def test_no_module_imports_itself_through_a_circle() -> None:
    """Every import counts, a package's `__init__` and imports inside functions too: a circle
    (the strongly connected parts of the graph of modules) is named with its members."""
    graph = grimp.build_graph("claude_session")
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's algorithm
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            part = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.append(member)
                if member == module:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert not circles, circles


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def private_uses(path: Path, modules: set[str]) -> list[str]:
    """`other._name` and `from other import _name`, `other` a module of claude_session."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    bound: dict[str, str] = {}  # local name -> the claude_session module it is
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules and alias.asname:
                    bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{source}.{alias.name}"
                elif source in modules and source != name and is_private(alias.name):
                    found.append(f"{name}:{node.lineno}: from {source} import {alias.name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
            and bound[node.value.id] != name
            and is_private(node.attr)
        ):
            found.append(f"{name}:{node.lineno}: {bound[node.value.id]}.{node.attr}")
    return found


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_uses_another_modules_private_names() -> None:
    """What a module shares is public (and says what it is for): the snapshot store's helpers
    that the rest of its package calls, the hook runtime's log, the `claude` runner."""
    paths = sorted((ROOT / "claude_session").rglob("*.py"))
    modules = {module_name(path) for path in paths}
    found = [use for path in paths for use in private_uses(path, modules)]
    assert not found, found
