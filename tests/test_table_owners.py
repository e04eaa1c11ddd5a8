"""One owner per table: every table is written (INSERT, UPDATE, DELETE) by exactly one module
of `claude_session/core/`; every other module calls that module's verbs.

Two writers of one table drift apart (it happened: the store and the registry both wrote the
agent registry). The check reads the SQL in the code's string literals, so a new writer
anywhere in the package fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import apsw

from claude_session.core import db

PACKAGE = Path(__file__).resolve().parent.parent / "claude_session"
WRITE = re.compile(
    r"\b(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+(?!SET\b)(\w+)"
)


DYNAMIC_WRITE = re.compile(r"\b(?:INTO|UPDATE|DELETE\s+FROM)\s+\{")


def sql_literals(tree: ast.AST) -> list[str]:
    """Every string literal but docstrings; an f-string's fixed parts with `{}` between."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.Constant) else "{}" for v in node.values]
            found.append("".join(str(p) for p in parts))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            found.append(node.value)
    return found


def writers() -> dict[str, set[str]]:
    """table -> the modules (paths relative to the package) whose SQL writes it."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = str(path.relative_to(PACKAGE))
        for text in sql_literals(ast.parse(path.read_text(), str(path))):
            # A table name filled in at run time would hide a writer from this check.
            assert not DYNAMIC_WRITE.search(text), f"{module}: table name not literal: {text}"
            for table in WRITE.findall(text):
                found.setdefault(table, set()).add(module)
    return found


def schema_tables() -> set[str]:
    conn = apsw.Connection(":memory:")
    for _ in conn.execute(db.read_schema()):
        pass
    names = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {name for (name,) in names}


def test_every_table_has_exactly_one_writer_in_core() -> None:
    found = writers()
    tables = schema_tables()
    assert set(found) <= tables, f"SQL writes unknown tables: {sorted(set(found) - tables)}"
    shared = {table: sorted(mods) for table, mods in found.items() if len(mods) > 1}
    assert not shared, f"tables written by more than one module: {shared}"
    outside = {t: m for t, m in found.items() if not next(iter(m)).startswith("core/")}
    assert not outside, f"tables written outside claude_session/core/: {outside}"


def test_the_scan_sees_the_writers() -> None:
    """The check is not vacuous: the known owners are found, a second writer would be."""
    found = writers()
    assert found["agent_registry"] == {"core/registry.py"}
    assert found["error_log"] == {"core/ladder.py"}
    assert found["hook_events"] == {"core/events.py"}
    assert found["llm_verdicts"] == {"core/verdicts.py"}
    assert WRITE.findall("INSERT INTO x (a) VALUES (1) ON CONFLICT (a) DO UPDATE SET a = 2") == [
        "x"
    ]
    assert WRITE.findall("UPDATE agent_registry SET status = ?") == ["agent_registry"]
    tree = ast.parse('def f(conn):\n    conn.execute(f"DELETE FROM error_log WHERE id = {x}")\n')
    assert WRITE.findall(sql_literals(tree)[0]) == ["error_log"]
