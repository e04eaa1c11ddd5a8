"""The error escalation ladder and failed paths (writes, part of the store layer).

Every failure is an error_log row. Failures of the same thing (the file at fault, else the
command) in one category and session climb a ladder: attempts 1-2 get "fix and retry",
attempt 3 "research first" and a failed path, attempt 4 goes to the user, and from attempt 5 an
optional policy refuses further edits to that file. A later success of the same command or file
resolves the entries (auto_fixed) and so resets the ladder; what is still open at session end
is abandoned. The next session was told of it as abandoned: its first failure of the same
thing goes on from that climb's last attempt (`carried_over`). `errors` is imported only once
something failed.

A check (a failing test, build, lint or type check command: `errors.is_check`) climbs its
ladder too but is never a failed path: it is what tells whether the work is right, to be re-run
after a fix, not an approach to avoid. Any command's ladder is resolved by the same command
succeeding anywhere in the project: in this session, or in another one active within the last
week.
"""

import os

import apsw

from . import registry
from .db import as_int, as_text
from .event import Event
from .paths import relative_to_root
from .readings import OPEN, UNFIXED
from .signatures import command_signature

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# An entry of a check (errors.CHECKS, and a command ran): a test, build, lint or type check.
CHECK = "(error_category IN ('lint', 'type', 'test', 'build') AND command IS NOT NULL)"
# How far back a success looks for the same command's ladders of other sessions: those sessions
# are found by their activity index, then each one's entries by its own (never a scan).
ELSEWHERE_LOOKBACK_SECONDS = 7 * 86400
_ELSEWHERE = (
    " FROM sessions s INDEXED BY sessions_activity JOIN error_log e INDEXED BY error_log_open"
    " ON e.session_id = s.session_id WHERE s.last_activity_at > ?2 AND s.session_id != ?1"
    f" AND e.interrupted = 0 AND e.signature = ?3 AND {UNFIXED}"
)


def record_failure(
    conn: apsw.Connection, ev: Event, root: str, now: float, error: str, ttl_days: float
) -> int:
    """Log one failure; returns its attempt number on its ladder."""
    from . import errors

    tool = ev.text_of("tool_name")
    command = ev.text_of("command")
    target = ev.text_of("file_path") or ev.text_of("notebook_path")
    file_path = relative_to_root(root, target) if target else None
    interrupted = ev.get("is_interrupt") in (1, True)
    kind = errors.category(command, error)
    at_fault = errors.file_at_fault(error, file_path)
    if at_fault and at_fault != file_path:
        at_fault = relative_to_root(root, at_fault)
    signature = errors.signature(tool, command, file_path, error)
    key = errors.ladder_key(kind, at_fault, signature, interrupted)
    earlier, first_at = conn.execute(
        f"SELECT count(*), min(occurred_at) FROM error_log WHERE session_id = ?"
        f" AND ladder_key = ? AND {OPEN}",
        (ev.session_id, key),
    ).fetchall()[0]
    carried = None if interrupted else carried_over(conn, ev.session_id, key, first_at, now)
    attempt = 1 + as_int(earlier) + (carried[1] if carried else 0)
    resolution = None if interrupted else errors.resolution_for(attempt)
    conn.execute(
        "INSERT INTO error_log (session_id, task_id, agent_id, file_path, error_category,"
        " error_message, attempt_number, resolution, interrupted, tool_name, tool_use_id,"
        " signature, command, exit_code, occurred_at, resolved_at, ladder_key, timestamp)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,"
        " datetime(?15, 'unixepoch'))",
        (
            ev.session_id,
            ev.task_id(),
            registry.claim_owner(ev.text_of("agent_id")),
            at_fault,
            kind,
            errors.capped(error),
            attempt,
            resolution,
            int(interrupted),
            tool,
            ev.text_of("tool_use_id"),
            signature,
            None if command is None else command[:1000],
            errors.exit_code(error),
            now,
            None,  # an escalation is no resolution: resolved when fixed or abandoned
            key,
        ),
    )
    # A check failing a third time is no approach to avoid: it is re-run once the cause is
    # fixed. The edits made between its runs are not recorded as one either: they may be
    # partial progress, and nothing in plain output says the failure stayed the same.
    if attempt == errors.RESEARCH_AT and not interrupted and not errors.is_check(kind, command):
        _record_failed_path(conn, ev, key, at_fault, now, ttl_days, carried)
    return attempt


def carried_over(
    conn: apsw.Connection, session_id: str, key: str, first_at: object, now: float
) -> "tuple[str, int] | None":
    """(session, attempts) of the climb of this ladder another session abandoned lately, when
    this session's climb of it continues that one: it started after the other session ended
    (the next session was told of it as abandoned: its first failure is the next attempt,
    never attempt 1 again), and nothing fixed the ladder here since. Two sessions failing side
    by side climb their own ladders. None when nothing is carried over."""
    since = conn.execute(
        "SELECT max(resolved_at) FROM error_log WHERE session_id = ?1 AND ladder_key = ?2"
        " AND resolution = 'auto_fixed'",
        (session_id, key),
    ).fetchall()[0][0]
    found = conn.execute(
        "SELECT e.session_id, max(e.attempt_number), max(e.resolved_at) AS ended"
        " FROM sessions s INDEXED BY sessions_activity JOIN error_log e INDEXED BY"
        " error_log_ladder ON e.session_id = s.session_id WHERE s.last_activity_at > ?3"
        " AND s.session_id != ?1 AND e.ladder_key = ?2 AND e.resolution = 'abandoned'"
        " AND e.interrupted = 0 GROUP BY e.session_id ORDER BY ended DESC LIMIT 1",
        (session_id, key, now - ELSEWHERE_LOOKBACK_SECONDS),
    ).fetchall()
    if not found:
        return None
    other, attempts, ended = found[0]
    started = first_at if isinstance(first_at, int | float) else now
    if not isinstance(ended, int | float) or ended > started:
        return None  # abandoned while this climb was under way: not the one it was told of
    if isinstance(since, int | float) and since >= ended:
        return None  # fixed here after it was abandoned: this is a new climb
    return as_text(other), as_int(attempts)


def _record_failed_path(
    conn: apsw.Connection,
    ev: Event,
    key: str,
    at_fault: str | None,
    now: float,
    ttl_days: float,
    carried: "tuple[str, int] | None" = None,
) -> None:
    """The third failure of one approach: remember it so no agent walks it again (its
    tries in the session that abandoned it first too, when this climb continues that one)."""
    from . import errors

    tries = conn.execute(
        "SELECT command, tool_name, error_message FROM (SELECT command, tool_name,"
        " error_message, occurred_at FROM error_log WHERE session_id = ?3 AND ladder_key = ?2"
        " AND resolution = 'abandoned' AND interrupted = 0"
        " UNION ALL SELECT command, tool_name, error_message, occurred_at FROM error_log"
        f" WHERE session_id = ?1 AND ladder_key = ?2 AND {OPEN}) ORDER BY occurred_at",
        (ev.session_id, key, carried[0] if carried else None),
    ).fetchall()
    approaches: list[str] = []
    for command, tool, _ in tries:
        what = as_text(command) or f"{as_text(tool)} {at_fault or ''}".strip()
        if what not in approaches:
            approaches.append(what)
    edits = _recent_edits(conn, ev.session_id, at_fault)
    approach = "; then ".join(approaches)
    if edits:
        approach += f" (after editing {at_fault}: {edits})"
    reason = errors.gist(as_text(tries[-1][2]))
    context = f"failed {len(tries)} times; ladder {key}; " + " | ".join(
        errors.gist(as_text(text), 160) for _, _, text in tries[:-1]
    )
    add_failed_path(conn, ev.session_id, approach, reason, at_fault, context, now, ttl_days)


def add_failed_path(
    conn: apsw.Connection,
    session_id: str | None,
    approach: str,
    reason_failed: str,
    file_path: str | None,
    context: str | None,
    now: float,
    ttl_days: float,
) -> int:
    """Record an approach that failed (automatically at attempt 3, or by hand); returns its id."""
    conn.execute(
        "INSERT INTO failed_paths (session_id, approach, reason_failed, file_path, context,"
        " created_at, expires_at, timestamp)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, datetime(?6, 'unixepoch'))",
        (
            session_id,
            approach[:1000],
            reason_failed[:1000],
            file_path,
            None if context is None else context[:2000],
            now,
            now + ttl_days * 86400,
        ),
    )
    return conn.last_insert_rowid()


def resolve_failed_path(conn: apsw.Connection, failed_path_id: int) -> bool:
    """It is no longer a dead end (the cause was fixed elsewhere): stop showing it."""
    conn.execute("UPDATE failed_paths SET still_relevant = 0 WHERE id = ?", (failed_path_id,))
    return conn.changes() > 0


def _recent_edits(conn: apsw.Connection, session_id: str, file_path: str | None) -> str:
    """A short summary of the last edits this session made to the file at fault."""
    if not file_path:
        return ""
    # The latest edit of each agent's claim on exactly this path (the claim keeps its event).
    found = conn.execute(
        "SELECT json_extract(e.payload, '$.tool_input.old_string'),"
        " json_extract(e.payload, '$.tool_input.new_string'), e.tool_name"
        " FROM file_claims c JOIN events e ON e.id = c.last_event_id"
        " WHERE c.file_path = ?2 AND c.session_id = ?1"
        " ORDER BY c.last_touched_at DESC LIMIT 2",
        (session_id, file_path),
    ).fetchall()
    parts = []
    for old, new, tool in found:
        if tool == "Edit" and old is not None:
            parts.append(f"replaced {_short(old)!r} with {_short(new)!r}")
        else:
            parts.append(f"{tool} of the file")
    return ", ".join(parts)


def _short(text: object, limit: int = 60) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def resolve_on_success(conn: apsw.Connection, ev: Event, root: str, now: float) -> int:
    """An error is judged by what happened next. A success of a command or file that had
    failed resolves its open entries (auto_fixed), whichever agent of the session ran it; a
    check (test, build, lint, type check) that passes over every file a failed command named
    resolves that one too; and a command that passes fixes its entries in the other sessions
    that ran it lately (abandoned ones too): whoever runs it, its passing is what says it works
    now. The failed approaches recorded on a resolved ladder stop being dead ends."""
    here = conn.execute(
        f"SELECT 1 FROM error_log WHERE session_id = ? AND {OPEN} LIMIT 1", (ev.session_id,)
    ).fetchall()
    command = ev.text_of("command")
    since = now - ELSEWHERE_LOOKBACK_SECONDS
    ran = command_signature(ev.text_of("tool_name"), command)  # the same however spaced
    elsewhere = ran is not None and bool(
        conn.execute(f"SELECT 1{_ELSEWHERE} LIMIT 1", (ev.session_id, since, ran)).fetchall()
    )
    if not here and not elsewhere:
        return 0  # the common case: nothing open, nothing to import or compute
    from . import errors

    tool = ev.text_of("tool_name")
    target = ev.text_of("file_path") or ev.text_of("notebook_path")
    file_path = relative_to_root(root, target) if target else None
    signature = errors.signature(tool, command, file_path, "")
    ladders: list[tuple[Any, ...]] = []
    resolved: list[tuple[str, str]] = []  # (session, ladder key)
    if here:
        ladder = conn.execute(
            "SELECT ?1, max(attempt_number), min(occurred_at), error_message, error_category,"
            f" file_path FROM error_log WHERE session_id = ?1 AND signature = ?2 AND {OPEN}"
            " AND interrupted = 0",
            (ev.session_id, signature),
        ).fetchall()[0]
        resolved += _fix(
            conn, "session_id = ?1 AND signature = ?2", (ev.session_id, signature), now
        )
        ladders.append(ladder)
        if command and errors.category(command, "") in errors.CHECKS:
            resolved += _fix_checked_files(conn, ev.session_id, root, command, now)
    if elsewhere:
        found = conn.execute(
            "SELECT e.session_id, max(e.attempt_number), min(e.occurred_at), e.error_message,"
            f" e.error_category, e.file_path{_ELSEWHERE} GROUP BY e.session_id",
            (ev.session_id, since, signature),
        ).fetchall()
        for ladder in found:
            resolved += _fix(
                conn, "session_id = ?1 AND signature = ?2", (ladder[0], signature), now
            )
            ladders.append(ladder)
    for session, key in set(resolved):
        conn.execute(
            "UPDATE failed_paths SET still_relevant = 0 WHERE session_id = ?1"
            " AND still_relevant = 1 AND instr(coalesce(context, ''), '; ladder ' || ?2 || '; ')",
            (session, key),
        )
    # One learning for the longest ladder it resolved after two or more failures.
    tried = [ladder for ladder in ladders if isinstance(ladder[1], int) and ladder[1] >= 2]
    if tried:
        _learn(conn, ev, root, now, signature, max(tried, key=lambda ladder: ladder[1]))
    return len(resolved)


def _fix(
    conn: apsw.Connection, where: str, params: "tuple[Any, ...]", now: float
) -> "list[tuple[str, str]]":
    """Resolve the entries `where` selects as auto_fixed: their (session, ladder key)s."""
    found = conn.execute(
        f"UPDATE error_log SET resolution = 'auto_fixed', resolved_at = ?{len(params) + 1}"
        f" WHERE {where} AND {UNFIXED} RETURNING session_id, ladder_key",
        (*params, now),
    ).fetchall()
    return [(as_text(session), as_text(key)) for session, key in found]


def _fix_checked_files(
    conn: apsw.Connection, session_id: str, root: str, command: str, now: float
) -> "list[tuple[str, str]]":
    """A passing check resolves the session's open ladders whose failed command named only
    files it checks too (or, naming none, whose file at fault it names)."""
    from .errors import named_files

    def files_of(text: object) -> set[str]:
        return {relative_to_root(root, f) if f.startswith("/") else f for f in named_files(text)}

    checked = files_of(command)
    if not checked:
        return []
    found = conn.execute(
        "SELECT ladder_key, command, file_path FROM error_log WHERE session_id = ?1"
        f" AND {OPEN} AND interrupted = 0 GROUP BY ladder_key",
        (session_id,),
    ).fetchall()
    out: list[tuple[str, str]] = []
    for key, failed, at_fault in found:
        files = files_of(failed) or ({as_text(at_fault)} if at_fault else set())
        if files and files <= checked:
            out += _fix(conn, "session_id = ?1 AND ladder_key = ?2", (session_id, key), now)
    return out


def _learn(
    conn: apsw.Connection,
    ev: Event,
    root: str,
    now: float,
    signature: str,
    ladder: "tuple[Any, ...]",
) -> None:
    """A ladder resolved after failures: a `learning` memory says what failed and what finally
    worked (the changes made between the first failure and this success, in the ladder's
    session and this one), with provenance."""
    from . import errors, memories, memory_files

    failed_in, attempts, since, message, category, file_path = ladder
    changes = [
        str(summary)
        for (summary,) in conn.execute(
            "SELECT input_summary FROM tool_calls WHERE session_id IN (?1, ?4)"
            " AND started_at >= ?2 AND status = 'succeeded' AND tool_use_id != ?3"
            " AND tool_name IN ('Edit', 'Write', 'MultiEdit', 'NotebookEdit', 'Bash')"
            " ORDER BY started_at LIMIT 6",
            (ev.session_id, since, ev.text_of("tool_use_id") or "", failed_in),
        )
        if summary
    ]
    worked = ev.summary(root)
    text = (
        f"`{_short(signature, 160)}` failed {attempts} times ({category}:"
        f" {errors.gist(str(message or ''))[:200]})."
        f" What finally worked: {'; then '.join([*changes, worked]) if changes else worked}."
    )
    tags = [str(category), *([str(file_path)] if file_path else [])]
    memory_id, _ = memories.add(
        conn,
        text,
        "learning",
        "project",
        now,
        tags=tags,
        source="learned",
        session_id=ev.session_id,
        agent_id=ev.text_of("agent_id") or ev.session_id,
        tool_use_id=ev.text_of("tool_use_id"),
        key=f"ladder|{signature}|{category}",
    )
    # The file at fault is what the learning is about: recorded as it is now it worked (a
    # rare write, so the hash is worth its read), stale once it changes.
    if (
        isinstance(file_path, str)
        and memory_files.plain(file_path)
        and os.path.isfile(os.path.join(root, file_path))
    ):
        memory_files.record(conn, memory_id, root, [file_path], now, None)


def abandon_open(conn: apsw.Connection, session_id: str, now: float) -> None:
    """At session end: what was never fixed is abandoned, escalated or not (an escalation is
    no fix: left open, the status line would count it for good)."""
    conn.execute(
        "UPDATE error_log SET resolution = 'abandoned', resolved_at = ?2"
        f" WHERE session_id = ?1 AND {OPEN}",
        (session_id, now),
    )


def reopen_abandoned(conn: apsw.Connection, session_id: str) -> None:
    """The same session going on (resume): what its last SessionEnd abandoned is open again."""
    conn.execute(
        "UPDATE error_log SET resolution = NULL, resolved_at = NULL"
        " WHERE session_id = ? AND resolution = 'abandoned'",
        (session_id,),
    )


def latest_for_call(conn: apsw.Connection, tool_use_id: str | None) -> "tuple[Any, ...] | None":
    """(attempt_number, interrupted, command, tool, file, error_message, category) of the
    failure a tool call logged."""
    if not tool_use_id:
        return None
    found = conn.execute(
        "SELECT attempt_number, interrupted, command, tool_name, file_path, error_message,"
        " error_category FROM error_log"
        " WHERE tool_use_id = ? ORDER BY id DESC LIMIT 1",
        (tool_use_id,),
    ).fetchall()
    return found[0] if found else None


def blocked_file(conn: apsw.Connection, session_id: str, file_path: str) -> tuple[int, str] | None:
    """(attempts, error text) when edits to `file_path` have failed past the deny threshold."""
    from .errors import DENY_FROM

    found = conn.execute(
        "SELECT max(attempt_number), error_message FROM error_log WHERE session_id = ?"
        f" AND {OPEN} AND interrupted = 0 AND file_path = ? GROUP BY ladder_key"
        " HAVING max(attempt_number) >= ? ORDER BY 1 DESC",
        (session_id, file_path, DENY_FROM),
    ).fetchall()
    return (as_int(found[0][0]), as_text(found[0][1])) if found else None
