"""Every test module is in a tier, each tier marker sits on a test or a module, a fast test
starts no process of ours or of the outside world, and docs/testing.md counts the tiers right
(tests/tiers.py, docs/testing.md)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import hook_argv
from tiers import GUARD, MODULES, TESTS, TIERS, refused

TESTS_DIR = Path(__file__).resolve().parent
ROOT = TESTS_DIR.parent


def _modules() -> dict[str, ast.Module]:
    return {p.name: ast.parse(p.read_text()) for p in sorted(TESTS_DIR.glob("test_*.py"))}


def _tier_of_mark(node: ast.expr) -> str | None:
    """`pytest.mark.TIER` (or a call of it) as written in a decorator or a pytestmark."""
    if isinstance(node, ast.Call):
        node = node.func
    if (
        isinstance(node, ast.Attribute)
        and node.attr in TIERS
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "mark"
    ):
        return node.attr
    return None


def _module_marks(tree: ast.Module) -> set[str]:
    marks = set()
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in statement.targets
        ):
            values = statement.value.elts if isinstance(statement.value, ast.List) else []
            for value in values or [statement.value]:
                tier = _tier_of_mark(value)
                if tier:
                    marks.add(tier)
    return marks


def test_every_test_module_is_in_exactly_one_tier_list() -> None:
    files = set(_modules())
    assert sorted(files - set(MODULES)) == [], "add these to MODULES in tests/tiers.py"
    assert sorted(set(MODULES) - files) == [], "MODULES in tests/tiers.py names no such file"
    assert set(MODULES.values()) <= set(TIERS)


def test_every_test_named_in_TESTS_exists_and_is_not_of_its_modules_tier() -> None:
    trees = _modules()
    for module, tiers in TESTS.items():
        defined = {
            n.name
            for n in ast.walk(trees[module])
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        for tier, names in tiers.items():
            assert tier in TIERS, f"{module}: {tier}"
            assert tier != MODULES[module], f"{module}: {names} already in the module's tier"
            missing = sorted(set(names) - defined)
            assert missing == [], f"TESTS in tests/tiers.py names no test {module}::{missing}"


def test_tier_markers_sit_on_tests_or_modules_and_agree_with_MODULES() -> None:
    """A tier marker on a helper marks nothing (a test of the real CLI once ran in the fast
    set so); a module marking itself says what MODULES says."""
    wrong = []
    for name, tree in _modules().items():
        own = _module_marks(tree)
        assert own <= {MODULES[name]}, f"{name}: pytestmark {own}, MODULES {MODULES[name]}"
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            tiers = [t for t in map(_tier_of_mark, node.decorator_list) if t]
            is_test = node.name.startswith("Test" if isinstance(node, ast.ClassDef) else "test_")
            if tiers and not is_test:
                wrong.append(f"{name}: {node.name} (not a test) carries {tiers}")
            if is_test and tiers and own and tiers != list(own):
                wrong.append(f"{name}: {node.name} {tiers} in a module marked {own}")
    assert wrong == []


@pytest.mark.parametrize(
    "argv",
    [
        hook_argv("PreToolUse"),
        [str(Path(sys.executable).parent / "claude-session"), "status"],
        [sys.executable, "-P", "-m", "claude_session.daemon", "--project", "/p"],
        "/root/.cache/claude-session-tests/claude-code-2.1.330/node_modules/.bin/claude -p hi",
        ["/usr/bin/chromium", "--headless"],
        ["tmux", "new-session", "-d"],
        ["pipx", "install", "x.whl"],
        [sys.executable, "-m", "pip", "wheel", "."],
    ],
    ids=["hook", "cli", "daemon", "claude", "chromium", "tmux", "pipx", "pip-wheel"],
)
def test_the_fast_tier_refuses_processes_of_ours_and_of_the_outside_world(argv: object) -> None:
    assert refused(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["git", "-C", "/tmp/project", "status", "--porcelain"],
        ["sh", "-c", "exit 3"],
        [sys.executable, "-c", "print(1)"],
    ],
    ids=["git", "sh", "python"],
)
def test_the_fast_tier_allows_plain_programs(argv: object) -> None:
    assert refused(argv) is None


def test_a_fast_test_that_starts_a_process_of_ours_is_caught(
    request: pytest.FixtureRequest,
) -> None:
    """The guard around every fast test notes both ways a process starts (neither program
    exists here: nothing runs), and the test fails at its end for it."""
    guard = request.node.stash[GUARD]
    with pytest.raises(FileNotFoundError):
        subprocess.run(["/nonexistent/bin/claude-session", "status"])
    argv = ["/nonexistent/python", "-P", "-m", "claude_session.daemon", "--project", "/p"]
    with pytest.raises(FileNotFoundError):
        os.posix_spawn(argv[0], argv, {})
    with pytest.raises(FileNotFoundError):
        subprocess.run(["/nonexistent/git", "status"])  # a plain program: allowed
    assert [line.split(":")[0] for line in guard.found] == [
        "a process of ours (hook, CLI, capture, daemon or server)"
    ] * 2
    guard.found.clear()  # what this test started on purpose


def test_the_tier_table_of_docs_testing_md_counts_the_suite() -> None:
    """The counts are those `pytest --co -m TIER` gives: python -m tools.tier_docs --write."""
    done = subprocess.run(
        [sys.executable, "-m", "tools.tier_docs", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr + done.stdout
