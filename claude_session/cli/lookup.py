"""Names and ids given on the command line, checked against what was recorded: one clear line
and exit 1 for what matches nothing (with the closest valid value), never an empty answer
that looks like "nothing happened"."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING

import apsw
import click

from ..core import db
from ..core.events import EVENTS

if TYPE_CHECKING:
    from ..project import Project


def readable(project: Project) -> apsw.Connection:
    """The project's read connection, for the lookups that check a name given; a clear error
    when there is no database (a read never makes one)."""
    conn = project.connection()
    if conn is None:
        raise click.ClickException(f"no claude-session database at {project.path} yet")
    return conn


class Unknown(click.ClickException):
    """A value that names nothing recorded; printed as `Error: <message>` on stderr, exit 1
    (escaped, as every error message is: `Group.invoke`)."""


def unknown(kind: str, value: str, known: Iterable[str], where: str = "") -> Unknown:
    """`unknown event 'PostTooluse'; did you mean 'PostToolUse'?`"""
    choices = sorted({k for k in known if k})
    close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in choices}
        close = [lowered[value.lower()]] if value.lower() in lowered else []
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return Unknown(f"unknown {kind} {value!r}{where}{hint}")


def session(conn: apsw.Connection, prefix: str) -> str:
    """The one recorded session whose id starts with `prefix`."""
    found = [
        str(r["session_id"])
        for r in db.rows(
            conn,
            "SELECT session_id FROM sessions WHERE session_id >= ?1 AND session_id < ?1 || x'ff'"
            " LIMIT 6",  # a range on the primary key: no scan however many sessions
            (prefix,),
        )
        if str(r["session_id"]).startswith(prefix)
    ]
    if len(found) == 1:
        return found[0]
    if found:
        shown = ", ".join(found[:5])
        raise Unknown(f"session {prefix!r} is ambiguous: it starts {shown}; give more of it")
    known = [
        str(r["session_id"])
        for r in db.rows(
            conn, "SELECT session_id FROM sessions ORDER BY last_activity_at DESC LIMIT 200"
        )
    ]
    candidates = {k[: len(prefix)]: k for k in known}
    close = difflib.get_close_matches(prefix, list(candidates), n=1, cutoff=0.6)
    hint = f"; did you mean {candidates[close[0]]!r}?" if close else ""
    if not known:
        hint = " (no session recorded yet)"
    raise Unknown(f"unknown session {prefix!r}{hint}")


def event(name: str) -> str:
    if name in EVENTS:
        return name
    raise unknown("event", name, EVENTS)


def agent(conn: apsw.Connection, value: str) -> str:
    """A subagent id (a prefix is enough)."""
    found = [
        str(r["id"])
        for r in db.rows(
            conn,
            "SELECT id FROM agent_registry WHERE id >= ?1 AND id < ?1 || x'ff' LIMIT 6",
            (value,),
        )
        if str(r["id"]).startswith(value)
    ]
    if len(found) == 1:
        return found[0]
    if found:
        raise Unknown(f"agent {value!r} is ambiguous: it starts {', '.join(found[:5])}")
    known = [str(r["id"]) for r in db.rows(conn, "SELECT id FROM agent_registry LIMIT 500")]
    raise unknown("agent", value, known)


def tool(conn: apsw.Connection, name: str) -> None:
    """A tool name never recorded (checked when a filter found nothing)."""
    known = [
        str(r["tool_name"])
        for r in db.rows(conn, "SELECT DISTINCT tool_name FROM tool_calls LIMIT 500")
        if r["tool_name"]
    ]
    if name not in known:
        raise unknown("tool", name, known, " (never recorded in this project)")
