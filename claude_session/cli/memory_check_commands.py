"""`memory verify|outcome`, and what `memory show` and `memory list --stale` say of a
memory's files: which changed since it was recorded, when, and by which agent.

A memory about files is possibly stale once one of them changed (another content hash),
is gone, or appeared where none was. `memory verify ID` records that a person checked it
against today's files (their hashes taken again); `memory outcome ID` says what became of it
(verified, disproved: a dead end never given as fact, hypothesis).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import apsw
import click

from ..core import db, memories, memory_files
from ..project import Listing
from . import output
from .group import json_option, opened
from .listing import emit_page
from .memory_group import global_db, has_project_database, memory, parse_id

STATES = ("unchanged", *(memory_files.CHANGED, memory_files.GONE, memory_files.APPEARED))


def base_of(root: Path, scope: str, row: dict[str, Any]) -> str | None:
    """The folder a memory's file paths are relative to: this project, or for a global memory
    the project it came from (None when that is no folder here)."""
    if scope != "global":
        return str(root)
    project = row.get("project")
    return project if isinstance(project, str) and os.path.isdir(project) else None


def details(conn: apsw.Connection, root: Path, scope: str, row: dict[str, Any]) -> dict[str, Any]:
    """A memory with its files now, whether it is possibly stale, and the error it was about
    with what became of it."""
    number = int(str(row["id"]).removeprefix(memories.GLOBAL_PREFIX))
    files, seen = memory_files.files_now(conn, base_of(root, scope, row), number)
    if seen:
        try:
            with db.Immediate(conn):
                memory_files.remember_seen(conn, seen)
        except apsw.Error:
            pass  # busy: the next check hashes again
    stale = [f["path"] for f in files if f["state"] in STATES[1:]]
    fate = memory_files.error_fate(conn, row.get("error_id")) if scope != "global" else None
    return row | {
        "added_by": memory_files.added_by(row),
        "files": files,
        "possibly_stale": bool(stale),
        "stale_files": stale,
        "error": fate,
    }


def stale_rows(conn: apsw.Connection, root: Path, scope: str) -> list[dict[str, Any]]:
    """Every memory of this database that is possibly stale, with its changed files."""
    ids = memory_files.with_files(conn)
    out: list[dict[str, Any]] = []
    if scope != "global":
        changed, _ = memory_files.changes_for(conn, os.path.realpath(root), ids)
    else:
        changed = {}
        for memory_id in ids:
            row = memories.get(conn, memory_id)
            base = base_of(root, scope, row or {})
            if base is not None:
                changed |= memory_files.changes_for(conn, os.path.realpath(base), [memory_id])[0]
    for memory_id, changes in changed.items():
        row = memories.get(conn, memory_id)
        if row is None:
            continue
        memory_files.with_agents(conn, changes)
        out.append(
            {
                "id": memories.label(scope, memory_id),
                "category": row["category"],
                "text": row["text"],
                "outcome": row["outcome"],
                "changes": [memory_files.describe(c) for c in changes],
            }
        )
    return out


def project_files(root: Path, given: tuple[str, ...]) -> list[str]:
    """The project-relative paths of the files named with --file: each relative to the
    current folder when it is there, else to the project; one outside the project, or none
    at all, is refused (a typo would otherwise be recorded as a file that never was)."""
    paths = []
    for name in given:
        here = os.path.abspath(name)
        full = here if os.path.exists(here) else os.path.join(root, name)
        try:
            path = memory_files.relative(str(root), full)
        except memory_files.FileProblem as exc:
            raise click.ClickException(str(exc)) from exc
        if not os.path.isfile(os.path.join(root, path)):
            raise click.ClickException(f"no file {name} (in the current folder or the project)")
        paths.append(path)
    if len(paths) > memory_files.FILES_CAP:
        raise click.ClickException(f"at most {memory_files.FILES_CAP} files per memory")
    return list(dict.fromkeys(paths))


def list_stale(root: Path, scope: str | None, as_json: bool) -> None:
    found: list[dict[str, Any]] = []
    if scope != "global" and has_project_database(root):
        with opened(root) as conn:
            found += stale_rows(conn, root, "project")
    if scope in (None, "global"):
        with global_db(create=False) as conn:
            if conn is not None:
                found += stale_rows(conn, root, "global")
    if as_json:
        output.emit(found, "json")
        return
    shown = [r | {"changes": "; ".join(r["changes"])} for r in found]
    emit_page(Listing(shown, len(shown)), False, "possibly stale memories", "memory list")


@memory.command(name="verify")
@click.argument("memory_id")
@json_option("an object: id, verified_at, files (path, sha256 as taken now)")
@click.pass_obj
def memory_verify(root: Path, memory_id: str, as_json: bool) -> None:
    """Record that you checked memory ID against today's files: their hashes are taken again,
    so it is no longer possibly stale (until they change again)."""
    from ..project import Project

    parse_id(memory_id)
    with Project(root) as project:
        done = project.verify_memory(memory_id)
    found = done.memory or {}
    files = found.get("files") or []
    said = f"memory {memory_id} verified against today's files"
    said += f" ({len(files)} rehashed)" if files else " (it names no file)"
    output.reply({"id": memory_id, "verified_at": found.get("verified_at"), "files": files},
                 said, as_json)  # fmt: skip


@memory.command(name="outcome")
@click.argument("memory_id")
@click.argument("outcome", type=click.Choice([*memories.OUTCOMES, "none"]))
@json_option("an object: id, outcome (null: cleared)")
@click.pass_obj
def memory_outcome(root: Path, memory_id: str, outcome: str, as_json: bool) -> None:
    """Say what became of memory ID: verified, disproved (it turned out false: kept as a dead
    end, never given to a session as fact), hypothesis (not verified yet), or none."""
    from ..project import Project

    parse_id(memory_id)
    value = None if outcome == "none" else outcome
    with Project(root) as project:
        project.memory_outcome(memory_id, value)
    said = f"memory {memory_id}: {outcome if value else 'outcome cleared'}"
    output.reply({"id": memory_id, "outcome": value}, said, as_json)
