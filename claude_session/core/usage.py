"""What each model response used, from Claude Code's transcripts: the one writer of
transcript_files and message_usage's counts, and of session_usage and session_tool_usage,
message_usage summed per session for `cost` (refresh_rollup). What each response cost, and
whose it is, is core/accounting's rule. Nothing here runs in a hook.
"""

from __future__ import annotations

import json
from typing import Any

import apsw

from . import accounting
from .db import as_int, rows

HELPERS = accounting.HELPERS  # the rows of what no transcript line holds (core/accounting)

FILE_COLUMNS = (
    "path, session_id, agent_id, read_to, inode, size, lines_read, lines_skipped, restarts,"
    " prompt_id, last_error, updated_at, filled_to, first_skipped"
)


# --- transcript files ---------------------------------------------------------------------


def file_state(conn: apsw.Connection, path: str) -> dict[str, Any] | None:
    found = rows(conn, f"SELECT {FILE_COLUMNS} FROM transcript_files WHERE path = ?", (path,))
    return found[0] if found else None


def read_again(state: dict[str, Any], inode: int, size: int) -> bool:
    """Whether a transcript read before (`state`, its `file_state`) must be read from its start:
    another file under its name, or one shorter than what was read (truncated)."""
    if state.get("inode") is None:
        return False
    return inode != state["inode"] or size < int(state.get("read_to") or 0)


def save_filled(conn: apsw.Connection, path: str, filled_to: int) -> None:
    """How far `reconcile` has been handed the file's entries (services/transcripts)."""
    conn.execute("UPDATE transcript_files SET filled_to = ? WHERE path = ?", (filled_to, path))


def save_file(
    conn: apsw.Connection,
    path: str,
    session_id: str,
    agent_id: str,
    now: float,
    *,
    read_to: int = 0,
    inode: int | None = None,
    size: int | None = None,
    lines: int = 0,
    skipped: int = 0,
    first_skipped: int | None = None,
    restarted: bool = False,
    prompt_id: str | None = None,
    error: str | None = None,
) -> None:
    """Where reading `path` stands: counts are added, the rest replaced. An error keeps the
    offset reached before it (the file may come back). `first_skipped`, where a line skipped
    begins, is kept until the file is read again from 0."""
    conn.execute(
        "INSERT INTO transcript_files (path, session_id, agent_id, read_to, inode, size,"
        " lines_read, lines_skipped, restarts, prompt_id, last_error, updated_at, first_skipped)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
        " ON CONFLICT (path) DO UPDATE SET"
        " first_skipped = CASE WHEN ?9 THEN ?13 ELSE coalesce(first_skipped, ?13) END,"
        " read_to = CASE WHEN ?11 IS NULL THEN ?4 ELSE read_to END,"
        " inode = coalesce(?5, inode), size = coalesce(?6, size),"
        " lines_read = lines_read + ?7, lines_skipped = lines_skipped + ?8,"
        " restarts = restarts + ?9, filled_to = CASE WHEN ?9 THEN 0 ELSE filled_to END,"
        " prompt_id = CASE WHEN ?11 IS NULL THEN ?10 ELSE prompt_id END,"
        " last_error = ?11, updated_at = ?12",
        (
            path,
            session_id,
            agent_id,
            read_to,
            inode,
            size,
            lines,
            skipped,
            int(restarted),
            prompt_id,
            error,
            now,
            first_skipped,
        ),
    )


def session_files(conn: apsw.Connection, session_id: str) -> list[dict[str, Any]]:
    return rows(
        conn,
        f"SELECT {FILE_COLUMNS} FROM transcript_files WHERE session_id = ? ORDER BY path",
        (session_id,),
    )


# --- messages -----------------------------------------------------------------------------


def record_messages(
    conn: apsw.Connection, session_id: str, agent_id: str, messages: list[dict[str, Any]]
) -> int:
    """Store model responses (keys as message_usage's columns; `tool_uses` a dict). A message
    seen again (streamed in several entries, or read twice) is merged, never counted twice:
    its token counts are the largest seen, its tool calls the union."""
    turns = _turn_finder(conn, session_id, agent_id, wait_after=float("-inf"))
    holders: set[str] = set()  # sessions that had read this one's responses as their own
    for m in messages:
        owner, moved = accounting.owner_of(conn, session_id, m)
        for holder in moved:
            conn.execute(
                "DELETE FROM message_usage WHERE session_id = ? AND message_id = ?",
                (holder, m["message_id"]),
            )
        holders.update(moved)
        if owner is not None:  # another session's response, copied: counted there
            conn.execute(  # a row of it stored as this session's own before (read again)
                "DELETE FROM message_usage WHERE session_id = ? AND message_id = ?",
                (session_id, m["message_id"]),
            )
            accounting.record_copy(conn, session_id, owner, m)
            continue
        prompt_id = m.get("prompt_id")
        conn.execute(
            "INSERT INTO message_usage (session_id, agent_id, message_id, turn_id, prompt_id,"
            " tool_uses, model, input_tokens, output_tokens, cache_read_tokens,"
            " cache_creation_tokens, thinking_tokens, service_tier, speed, at, request_id,"
            " cache_1h_tokens, line_cost_usd)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (session_id, agent_id, message_id) DO UPDATE SET"
            " turn_id = coalesce(turn_id, excluded.turn_id),"
            " prompt_id = coalesce(prompt_id, excluded.prompt_id),"
            " tool_uses = json_patch(tool_uses, excluded.tool_uses),"
            " model = coalesce(model, excluded.model),"
            " input_tokens = max(input_tokens, excluded.input_tokens),"
            " output_tokens = max(output_tokens, excluded.output_tokens),"
            " cache_read_tokens = max(cache_read_tokens, excluded.cache_read_tokens),"
            " cache_creation_tokens = max(cache_creation_tokens, excluded.cache_creation_tokens),"
            " thinking_tokens = max(thinking_tokens, excluded.thinking_tokens),"
            " service_tier = coalesce(service_tier, excluded.service_tier),"
            " speed = coalesce(speed, excluded.speed), at = coalesce(at, excluded.at),"
            " request_id = coalesce(request_id, excluded.request_id),"
            " cache_1h_tokens = max(cache_1h_tokens, excluded.cache_1h_tokens),"
            " line_cost_usd = coalesce(excluded.line_cost_usd, line_cost_usd)",
            (
                session_id,
                agent_id,
                m["message_id"],
                turns(prompt_id, m.get("at")),
                prompt_id,
                json.dumps(m.get("tool_uses") or {}),
                m.get("model"),
                as_int(m.get("input_tokens")),
                as_int(m.get("output_tokens")),
                as_int(m.get("cache_read_tokens")),
                as_int(m.get("cache_creation_tokens")),
                as_int(m.get("thinking_tokens")),
                m.get("service_tier"),
                m.get("speed"),
                m.get("at"),
                m.get("request_id"),
                as_int(m.get("cache_1h_tokens")),
                m.get("line_cost_usd"),
            ),
        )
    for holder in holders:
        refresh_rollup(conn, holder)
    if messages:
        refresh_rollup(conn, session_id)
    return len(messages)


# A message whose promptId names no turn yet waits this long for it (its prompt's hook, or the
# transcript's fill of a lost one) before the turn is guessed from the times.
TURN_WAIT = 600.0


def _turn_finder(conn: apsw.Connection, session_id: str, agent_id: str, wait_after: float) -> Any:
    """turns.id for a message: by its promptId; for a subagent, else the turn of the Agent
    call that launched it; else the last turn started before it. A promptId that names no
    turn yet is a turn still to be recorded when the message came after `wait_after`: None
    (turns_found settles it later), never the turn before it."""
    by_prompt: dict[str, int] = {}
    started: list[tuple[float, int]] = []
    for row in rows(
        conn,
        "SELECT id, prompt_id, started_at FROM turns WHERE session_id = ? ORDER BY started_at",
        (session_id,),
    ):
        if row["prompt_id"]:
            by_prompt[str(row["prompt_id"])] = as_int(row["id"])
        started.append((float(row["started_at"]), as_int(row["id"])))
    # This Claude Code names its prompts in its hooks (2.1.196 on): an unknown one is coming.
    named = len(by_prompt) == len(started)
    launched: int | None = None
    if agent_id != session_id:
        found = rows(
            conn,
            "SELECT c.turn_id FROM agent_registry a JOIN tool_calls c"
            " ON c.tool_use_id = a.tool_use_id WHERE a.id = ? AND c.turn_id IS NOT NULL",
            (agent_id,),
        )
        launched = as_int(found[0]["turn_id"]) if found else None

    def find(prompt_id: str | None, at: float | None) -> int | None:
        if prompt_id and prompt_id in by_prompt:
            return by_prompt[prompt_id]
        if prompt_id and agent_id == session_id and (at is None or at > wait_after) and named:
            return None
        if launched is not None:
            return launched
        if at is None:
            return None
        before = [turn for when, turn in started if when <= at]
        return before[-1] if before else None

    return find


def turns_found(conn: apsw.Connection, session_id: str, now: float) -> list[tuple[int, str, str]]:
    """(turn id, agent, message) for the messages read before their turn was recorded (hooks
    and transcript race) whose turn is known now. Reads only: nothing to write, no lock."""
    waiting = rows(
        conn,
        "SELECT agent_id, message_id, prompt_id, at FROM message_usage"
        " WHERE session_id = ? AND turn_id IS NULL",
        (session_id,),
    )
    found = []
    finders: dict[str, Any] = {}
    for row in waiting:
        agent = str(row["agent_id"])
        finder = finders.setdefault(
            agent, _turn_finder(conn, session_id, agent, wait_after=now - TURN_WAIT)
        )
        turn = finder(row["prompt_id"], row["at"])
        if turn is not None:
            found.append((turn, agent, str(row["message_id"])))
    return found


def set_turns(conn: apsw.Connection, session_id: str, found: list[tuple[int, str, str]]) -> None:
    for turn, agent, message in found:
        conn.execute(
            "UPDATE message_usage SET turn_id = ? WHERE session_id = ? AND agent_id = ?"
            " AND message_id = ? AND turn_id IS NULL",
            (turn, session_id, agent, message),
        )
    if found:
        refresh_rollup(conn, session_id)


# --- costs, as core/accounting gives them -----------------------------------------------


def apportion(conn: apsw.Connection, session_id: str, now: float = 0.0) -> int:
    """Write the session's costs as core/accounting's rule gives them (its rollups too, when
    anything changed); returns the rows changed."""
    found = accounting.priced(conn, session_id, now)
    for (agent, message), (cost, source, flag) in found.changes.items():
        conn.execute(
            "UPDATE message_usage SET cost_usd = ?, cost_source = ?, estimated = ?"
            " WHERE session_id = ? AND agent_id = ? AND message_id = ?",
            (cost, source, flag, session_id, agent, message),
        )
    changed = len(found.changes) + _write_helpers(conn, session_id, found.helpers)
    if changed:
        refresh_rollup(conn, session_id)
    return changed


def apportion_with_dependents(conn: apsw.Connection, session: str, now: float) -> None:
    """The session's costs by the accounting rule, then those of the sessions that continue
    from its figures (its forks), and of those priced from our table at a price its figures
    have just taught."""
    before = accounting.learned(conn)
    apportion(conn, session, now)
    for each in accounting.continuing(conn, session):
        apportion(conn, each, now)
    after = accounting.learned(conn)
    taught = [m for m, scale in after.items() if before.get(m) != scale]
    for each in accounting.priced_from_table(conn, taught, skip=session):
        apportion(conn, each, now)  # a price its states taught, for their responses


def _write_helpers(
    conn: apsw.Connection, session_id: str, helpers: dict[str, dict[str, Any]]
) -> int:
    """The session's HELPERS rows (one per model) as `helpers` gives them: their tokens and
    cost, Claude Code's."""
    columns = accounting.HELPER_COLUMNS
    kept = {
        str(r["message_id"]): tuple(r[c] for c in columns)
        for r in rows(
            conn,
            f"SELECT message_id, {', '.join(columns)} FROM message_usage"
            f" WHERE session_id = ? AND agent_id = '{HELPERS}'",
            (session_id,),
        )
    }
    changed = 0
    for model in kept.keys() - helpers.keys():
        changed += 1
        conn.execute(
            f"DELETE FROM message_usage WHERE session_id = ? AND agent_id = '{HELPERS}'"
            " AND message_id = ?",
            (session_id, model),
        )
    for model, h in helpers.items():
        values_now = tuple(h[c] for c in columns)
        if kept.get(model) == values_now:
            continue
        changed += 1
        conn.execute(
            "INSERT INTO message_usage (session_id, agent_id, message_id, model, input_tokens,"
            " output_tokens, cache_read_tokens, cache_creation_tokens, cache_1h_tokens,"
            " thinking_tokens, cost_usd, cost_source, estimated)"
            f" VALUES (?1, '{HELPERS}', ?2, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'claude_code', ?10)"
            " ON CONFLICT (session_id, agent_id, message_id) DO UPDATE SET"
            " input_tokens = ?3, output_tokens = ?4, cache_read_tokens = ?5,"
            " cache_creation_tokens = ?6, cache_1h_tokens = ?7, thinking_tokens = ?8,"
            " cost_usd = ?9, cost_source = 'claude_code', estimated = ?10",
            (session_id, model, *values_now),
        )
    return changed


# --- the per-session rollups `cost` sums (session_usage, session_tool_usage) ---------------

_TOKEN_COLUMNS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "thinking_tokens",
)
_COUNTS = (
    "count(CASE WHEN m.cost_source = 'claude_code' THEN 1 END),"
    " count(CASE WHEN m.cost_source = 'price_table' THEN 1 END), sum(m.cost_usd IS NULL)"
)
_ESTIMATED = ", count(CASE WHEN m.estimated THEN 1 END)"
ROLLUP_SQL = (
    "INSERT INTO session_usage SELECT m.session_id, m.agent_id, m.model, CAST(m.at / 900 AS"
    f" INTEGER), count(CASE WHEN m.agent_id != '{HELPERS}' THEN 1 END), "
    + ", ".join(f"sum(m.{t})" for t in _TOKEN_COLUMNS)
    + ", sum(m.cost_usd), total(CASE WHEN m.cost_source = 'claude_code' THEN m.cost_usd END), "
    + _COUNTS
    + ", min(m.at), max(m.at), (SELECT count(DISTINCT t.turn_id)"
    " + coalesce(max(t.turn_id IS NULL), 0) FROM message_usage t"
    f" WHERE t.session_id = m.session_id AND t.agent_id != '{HELPERS}')"
    + _ESTIMATED
    + " FROM message_usage m WHERE {where}"
    " GROUP BY m.session_id, m.agent_id, m.model, CAST(m.at / 900 AS INTEGER)"
)
TOOL_ROLLUP_SQL = (
    "INSERT INTO session_tool_usage SELECT m.session_id, coalesce(j.value, '(no tool: text)'),"
    " count(j.key), count(DISTINCT m.agent_id || ' ' || m.message_id), "
    + ", ".join(
        f"sum(m.{t} * 1.0 / max(1, (SELECT count(*) FROM json_each(m.tool_uses))))"
        for t in _TOKEN_COLUMNS
    )
    + ", sum(m.cost_usd / max(1, (SELECT count(*) FROM json_each(m.tool_uses)))), "
    + _COUNTS
    + _ESTIMATED
    + " FROM message_usage m LEFT JOIN json_each(m.tool_uses) j WHERE {where}"
    f" AND m.agent_id != '{HELPERS}'"
    " GROUP BY m.session_id, 2"
)


def refresh_rollup(conn: apsw.Connection, session_id: str) -> None:
    """The session's rows of session_usage and session_tool_usage, computed again from its
    message_usage rows (exact and idempotent): called after every write to them, in its
    transaction."""
    conn.execute("DELETE FROM session_usage WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM session_tool_usage WHERE session_id = ?", (session_id,))
    conn.execute(ROLLUP_SQL.format(where="m.session_id = ?1"), (session_id,))
    conn.execute(TOOL_ROLLUP_SQL.format(where="m.session_id = ?1"), (session_id,))
