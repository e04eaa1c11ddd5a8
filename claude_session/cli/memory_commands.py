"""`memory add|list|search|show|edit|forget|export|import`.

Project and session memories live in the project's database, global ones in the user-level
database; ids are shown as `12` (this project) and `g12` (global). Export and import speak
JSON lines and Markdown, and round-trip.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw
import click

from ..core import db, memories, recall
from ..services import queries
from . import cli, json_option, opened, output
from .listing import emit_page, limit_option, stream_rows

FIELDS = ("category", "scope", "text", "tags", "source", "strength", "use_count", "created_at")


@contextmanager
def global_db(create: bool) -> Iterator[apsw.Connection | None]:
    conn = recall.open_global(create=create)
    try:
        yield conn
    finally:
        if conn is not None:
            conn.close()


def _label(scope: str, row: dict[str, Any]) -> str:
    return f"g{row['id']}" if scope == "global" else str(row["id"])


def _rows(scope: str, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in found:
        item = {"id": _label(scope, row)} | {k: v for k, v in row.items() if k != "id"}
        item["tags"] = json.loads(str(item.get("tags") or "[]"))
        out.append(item)
    return out


def _parse_id(text: str) -> tuple[str, int]:
    raw = text.strip().lower()
    scope = "global" if raw.startswith("g") else "project"
    digits = raw[1:] if raw.startswith(("g", "p")) else raw
    if not digits.isdigit():
        raise click.ClickException(f"{text!r} is not a memory id (12 for this project, g12 global)")
    return scope, int(digits)


@cli.group()
def memory() -> None:
    """Memories: facts, learnings, preferences, context and skills, for this project or all."""


@memory.command(name="add")
@click.argument("text")
@click.option("--category", type=click.Choice(memories.CATEGORIES), required=True)
@click.option("--scope", type=click.Choice(memories.SCOPES), default="project", show_default=True)
@click.option("--session", "session_id", help="The session of a session-scope memory.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@json_option("an object: id, new (false: an existing memory was strengthened)")
@click.pass_obj
def memory_add(
    root: Path,
    text: str,
    category: str,
    scope: str,
    session_id: str | None,
    tags: tuple[str, ...],
    as_json: bool,
) -> None:
    """Remember TEXT (redacted like everything recorded)."""
    now = time.time()
    try:
        if scope == "global":
            with global_db(create=True) as conn:
                if conn is None:
                    raise click.ClickException("cannot open the user-level memory database")
                with db.Immediate(conn):
                    memory_id, new = memories.add(
                        conn, text, category, scope, now, tags=tags, project=str(root)
                    )
        else:
            with opened(root, create=True) as conn, db.Immediate(conn):
                memory_id, new = memories.add(
                    conn, text, category, scope, now, tags=tags, session_id=session_id
                )
    except memories.MemoryProblem as exc:
        raise click.ClickException(str(exc)) from exc
    label = f"g{memory_id}" if scope == "global" else str(memory_id)
    output.reply(
        {"id": label, "new": new},
        f"memory {label} {'added' if new else 'strengthened (already known)'}",
        as_json,
    )


@memory.command(name="list")
@click.option("--category", type=click.Choice(memories.CATEGORIES))
@click.option("--scope", type=click.Choice(memories.SCOPES))
@click.option("--all", "every", is_flag=True, help="Every memory, streamed.")
@limit_option
@json_option(
    "a list of memories: id (12 for this project, g12 global), category, scope, text, tags,"
    " source, session_id, agent_id, tool_use_id, project, strength, created_at, updated_at,"
    " last_used_at, use_count, supersedes"
)
@click.pass_obj
def memory_list(
    root: Path, category: str | None, scope: str | None, every: bool, limit: int, as_json: bool
) -> None:
    """Memories, most used and strongest first."""
    found: list[dict[str, Any]] = []
    total = 0
    cap = 2**62 if every else limit
    if scope != "global":
        with opened(root, create=True) as conn:
            found += _rows(
                "project", memories.listed(conn, category=category, scope=scope, limit=cap)
            )
            total += memories.count_listed(conn, category=category, scope=scope)
    if scope in (None, "global"):
        with global_db(create=False) as conn:
            if conn is not None:
                found += _rows("global", memories.listed(conn, category=category, limit=cap))
                total += memories.count_listed(conn, category=category, scope="global")
    if every:
        stream_rows(found if as_json else (_table_row(r) for r in found), as_json)
        return
    rows = found if as_json else [_table_row(r) for r in found]
    emit_page(queries.Page(rows, total), as_json, "memories", "memory list")


@memory.command(name="search")
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True)
@json_option("a list of memories, as `memory list` gives them, with their rank")
@click.pass_obj
def memory_search(root: Path, query: str, limit: int, as_json: bool) -> None:
    """Full-text search (best first), in this project and the global memories."""
    found: list[dict[str, Any]] = []
    with opened(root, create=True) as conn:
        found += _rows("project", memories.search(conn, query, limit=limit))
    with global_db(create=False) as conn:
        if conn is not None:
            found += _rows("global", memories.search(conn, query, limit=limit))
    found.sort(key=lambda row: float(row["rank"]))
    _emit(found[:limit], as_json)


def _emit(found: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        output.emit(found, "json")
        return
    output.emit([_table_row(r) for r in found], "table", title="memories")


def _table_row(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": r["id"],
        "category": r["category"],
        "scope": r["scope"],
        "text": r["text"],
        "tags": ", ".join(r["tags"]),
        "used": r["use_count"],
    }


@contextmanager
def _holding(root: Path, scope: str) -> Iterator[apsw.Connection]:
    if scope == "global":
        with global_db(create=False) as conn:
            if conn is None:
                raise click.ClickException("there are no global memories yet")
            yield conn
    else:
        with opened(root) as conn:
            yield conn


def _found(conn: apsw.Connection, scope: str, memory_id: int, text: str) -> dict[str, Any]:
    row = memories.get(conn, memory_id)
    if row is None:
        raise click.ClickException(f"no memory {text!r} (see `claude-session memory list`)")
    return _rows(scope, [row])[0]


@memory.command(name="show")
@click.argument("memory_id")
@json_option("an object: the memory, with the fields `memory list` gives")
@click.pass_obj
def memory_show(root: Path, memory_id: str, as_json: bool) -> None:
    """One memory with where it came from and how it was used."""
    scope, number = _parse_id(memory_id)
    with _holding(root, scope) as conn:
        row = _found(conn, scope, number, memory_id)
    _show(row, as_json)


def _show(row: dict[str, Any], as_json: bool) -> None:
    """One memory: JSON, or its fields one per line (the tags joined)."""
    if as_json:
        output.emit(row, "json")
        return
    output.emit_pairs(
        output.console(), f"memory {row['id']}", row | {"tags": ", ".join(row["tags"])}
    )


@memory.command(name="edit")
@click.argument("memory_id")
@click.option("--text", help="The new text (default: open $EDITOR).")
@click.option("--category", type=click.Choice(memories.CATEGORIES))
@click.option("--tag", "tags", multiple=True, help="Replace the tags (repeatable).")
@json_option("an object: the memory as changed, with the fields `memory list` gives")
@click.pass_obj
def memory_edit(
    root: Path,
    memory_id: str,
    text: str | None,
    category: str | None,
    tags: tuple[str, ...],
    as_json: bool,
) -> None:
    """Change a memory's text, category or tags."""
    scope, number = _parse_id(memory_id)
    with _holding(root, scope) as conn:
        row = _found(conn, scope, number, memory_id)
        if text is None and category is None and not tags:
            if not sys.stdin.isatty():
                raise click.ClickException("give --text, --category or --tag (not on a terminal)")
            text = click.edit(str(row["text"]))
            if text is None:
                raise click.ClickException("nothing changed")
        with db.Immediate(conn):
            memories.edit(
                conn,
                number,
                time.time(),
                text=text,
                category=category,
                tags=list(tags) if tags else None,
            )
        row = _found(conn, scope, number, memory_id)
    _show(row, as_json)


@memory.command(name="forget")
@click.argument("memory_id")
@json_option("an object: id, forgotten")
@click.pass_obj
def memory_forget(root: Path, memory_id: str, as_json: bool) -> None:
    """Forget a memory: it is never shown or given again."""
    scope, number = _parse_id(memory_id)
    with _holding(root, scope) as conn, db.Immediate(conn):
        if not memories.forget(conn, number, time.time()):
            raise click.ClickException(f"no memory {memory_id!r}")
    output.reply({"id": memory_id, "forgotten": True}, f"memory {memory_id} forgotten", as_json)


@memory.command(name="export")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "markdown"]), default="jsonl")
@click.option("--scope", type=click.Choice(memories.SCOPES))
@click.pass_obj
def memory_export(root: Path, fmt: str, scope: str | None) -> None:
    """Every memory to stdout, as JSON lines or Markdown (`memory import` reads both)."""
    found: list[dict[str, Any]] = []
    if scope != "global":
        with opened(root, create=True) as conn:
            found += _rows("project", memories.listed(conn, scope=scope, limit=1_000_000))
    if scope in (None, "global"):
        with global_db(create=False) as conn:
            if conn is not None:
                found += _rows("global", memories.listed(conn, limit=1_000_000))
    for row in found:
        item = {k: row[k] for k in ("category", "scope", "text", "tags", "source", "strength")}
        if fmt == "jsonl":
            click.echo(json.dumps(item, ensure_ascii=False))
        else:
            tags = " ".join(f"#{t.replace(' ', '-')}" for t in item["tags"])
            text = str(item["text"]).replace("\n", " ")
            click.echo(
                f"- **{item['category']}** ({item['scope']}) {text}" + (f" {tags}" if tags else "")
            )


@memory.command(name="import")
@click.argument("source", type=click.File("r", encoding="utf-8"))
@json_option("an object: added, strengthened")
@click.pass_obj
def memory_import(root: Path, source: Any, as_json: bool) -> None:
    """Read memories exported as JSON lines or Markdown (`-` for stdin)."""
    parsed = [_parse_line(line) for line in source.read().splitlines() if line.strip()]
    items = [i for i in parsed if i is not None]
    now = time.time()
    counts = {"added": 0, "strengthened": 0}
    with opened(root, create=True) as conn, global_db(create=True) as global_conn:
        for item in items:
            target = global_conn if item["scope"] == "global" else conn
            if target is None:
                raise click.ClickException("cannot open the user-level memory database")
            try:
                with db.Immediate(target):
                    _, new = memories.add(
                        target,
                        item["text"],
                        item["category"],
                        item["scope"],
                        now,
                        tags=item.get("tags") or [],
                        source="import",
                        session_id=item.get("session_id"),
                    )
            except memories.MemoryProblem as exc:
                raise click.ClickException(f"cannot import {item['text'][:60]!r}: {exc}") from exc
            counts["added" if new else "strengthened"] += 1
    output.reply(
        counts, f"{counts['added']} added, {counts['strengthened']} already known", as_json
    )


def _parse_line(line: str) -> dict[str, Any] | None:
    """One exported memory: a JSON object, or Markdown: `- **category** (scope) text #tags`."""
    line = line.strip()
    if line.startswith("{"):
        item = json.loads(line)
        return item if isinstance(item, dict) and item.get("text") else None
    if not line.startswith("- **"):
        return None
    category, _, rest = line[4:].partition("**")
    rest = rest.strip()
    scope = "project"
    if rest.startswith("("):
        scope, _, rest = rest[1:].partition(")")
    words = rest.split()
    tags = [w[1:].replace("-", " ") for w in words if w.startswith("#") and len(w) > 1]
    while words and words[-1].startswith("#") and len(words[-1]) > 1:
        words.pop()
    return {
        "category": category.strip(),
        "scope": scope.strip(),
        "text": " ".join(words),
        "tags": tags,
    }
