"""What the store holds about a session, read as plain data: the state a snapshot keeps at
PreCompact and SessionEnd, and what the composers (`context`, the services) put into words.

Reads only, and imports no writer and no composer: the writers (`store`) and the composers
(`context`) both read through here, so neither reaches into the other. Standard library and
apsw only.
"""

import apsw

from .db import rows

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any

# An entry still counts toward its ladder until it is fixed or abandoned; what a finished
# session abandoned is still unfixed for the next one.
OPEN = "(resolution IS NULL OR resolution IN ('escalated_research', 'escalated_user'))"
UNFIXED = "(resolution IS NULL OR resolution != 'auto_fixed')"
# A session the daemon ended because it never said SessionEnd: silent past the idle time, or
# its Claude Code process gone (core/staleness.py writes these reasons).
CLAUDE_EXITED = "Claude Code exited without SessionEnd"
NEVER_ENDED = f"(end_reason LIKE 'session gone:%' OR end_reason = '{CLAUDE_EXITED}')"

# What an error is now, in the words `status` and `errors` both print, from the resolution of
# its entries (error_log.resolution): an escalation is no end, the error is still open.
ERROR_STATES = {"auto_fixed": "fixed", "abandoned": "abandoned"}  # anything else: open


def error_state(resolution: str, interrupted: str = "0") -> str:
    """SQL: the state word (ERROR_STATES; `open` otherwise, `interrupted` for a call the user
    stopped, no failure) of the resolution the SQL expression `resolution` gives."""
    cases = " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in ERROR_STATES.items())
    return (
        f"CASE WHEN {interrupted} THEN 'interrupted' ELSE"
        f" CASE {resolution} {cases} ELSE 'open' END END"
    )


OPEN_ERRORS_SHOWN = 30  # ladders `status` lists; `errors --open` has them all
PAGE = 50  # what a listing shows by default: the newest rows, with a line saying how many more


def gather(conn: apsw.Connection, session_id: str, now: float) -> "dict[str, Any]":
    """Everything worth restoring about one session, as plain JSON-ready data."""
    return {
        "session_id": session_id,
        "gathered_at": now,
        "task": rows(
            conn,
            "SELECT prompt, submitted_at FROM (SELECT id, prompt, submitted_at FROM prompts"
            " WHERE session_id = ? ORDER BY id DESC LIMIT 5) ORDER BY id",
            (session_id,),
        ),
        "agents": live_agents(conn, session_id),
        "claims": rows(
            conn,
            # Every file the session changed, held or since released: the model needs them all.
            "SELECT file_path, agent_id, operation, edits, last_touched_at FROM file_claims"
            " WHERE session_id = ? ORDER BY last_touched_at DESC",
            (session_id,),
        ),
        "errors": open_errors(conn, session_id),
        "failed_paths": failed_paths(conn, now, session_id),
    }


def live_agents(conn: apsw.Connection, session_id: str) -> "list[dict[str, Any]]":
    """The session's subagents alive now: running, and their Claude Code process too (never
    the main thread: it is no subagent)."""
    from .liveness import process_columns, row_gone

    found = rows(
        conn,
        "SELECT r.id, r.agent_type, r.description, r.task_description, r.status,"
        f" r.last_seen_at, r.tool_uses, r.parent_id, r.background, {process_columns()}"
        " FROM agent_registry r LEFT JOIN sessions s ON s.session_id = r.session_id"
        " WHERE r.session_id = ? AND r.status = 'running' AND r.is_internal = 0"
        " AND r.is_main = 0 ORDER BY r.last_seen_at DESC",
        (session_id,),
    )
    return [
        {k: v for k, v in agent.items() if not k.startswith("claude_")}
        for agent in found
        if not row_gone(agent)
    ]


def finished_agents(conn: apsw.Connection, session_id: str) -> "list[dict[str, Any]]":
    """The session's subagents that finished: what each was asked and what it reported."""
    return rows(
        conn,
        "SELECT id, agent_type, description, task_description, status, last_message, ended_at"
        " FROM agent_registry WHERE session_id = ? AND status != 'running' AND is_main = 0"
        " AND is_internal = 0 ORDER BY ended_at DESC LIMIT 20",
        (session_id,),
    )


def open_errors(
    conn: apsw.Connection, session_id: str, include_abandoned: bool = False
) -> "list[dict[str, Any]]":
    """Unfixed errors, one line per ladder, with how many attempts failed so far. A session
    that is over abandoned its open ones: for the next session they are still unfixed, and
    `abandoned` / `ended_at` say that its session ended with them open."""
    unfixed = UNFIXED if include_abandoned else OPEN
    return rows(
        conn,
        # total(), not max(): a third max() could pick the row error_message comes from
        "SELECT signature, tool_name, error_category, file_path, command,"
        " max(attempt_number) AS attempts, error_message, max(occurred_at) AS last_at,"
        f" {FAILED_LAST_ANYWHERE} AS failed_last_at,"
        " session_id, ladder_key, total(resolution = 'abandoned') > 0 AS abandoned,"
        " (SELECT s.ended_at FROM sessions s WHERE s.session_id = error_log.session_id"
        "  AND s.status = 'ended') AS ended_at"
        f" FROM error_log WHERE session_id = ? AND {unfixed}"
        " AND interrupted = 0 GROUP BY ladder_key"
        " ORDER BY last_at DESC LIMIT 20",
        (session_id,),
    )


# When the same command last failed anywhere in the project (a later failure in another
# session says it fails still, whatever changed before it): found through the sessions active
# since (their activity index), then each one's entries of that signature.
FAILED_LAST_ANYWHERE = (
    "(SELECT max(x.occurred_at) FROM sessions s INDEXED BY sessions_activity JOIN error_log x"
    " INDEXED BY error_log_open ON x.session_id = s.session_id"
    " AND x.signature = error_log.signature"
    " WHERE s.last_activity_at >= error_log.occurred_at AND x.interrupted = 0)"
)


def failed_paths(
    conn: apsw.Connection, now: float, session_id: str | None = None
) -> "list[dict[str, Any]]":
    """Dead ends still worth knowing: those of `session_id` (the work at hand) and those about
    files it changed first, then the rest of the project's, newest first. The 20 are chosen
    first and their ladders looked up after: SQLite computes a row's columns before sorting,
    so the lookups ran for every relevant path (24 ms of `status` at 2,000 of them)."""
    return rows(
        conn,
        "SELECT id, approach, reason_failed, file_path, created_at, session_id,"
        # its ladder's latest failure (the context names the ladder: "...; ladder <key>; ")
        " (SELECT max(x.occurred_at) FROM error_log x WHERE x.session_id = f.session_id"
        "  AND instr(coalesce(f.context, ''), '; ladder ' || x.ladder_key || '; ') > 0)"
        "  AS last_failed_at,"
        # the same command's last failure in a session active since (see
        # FAILED_LAST_ANYWHERE): its failures newest first, through their index, the first
        # that qualifies (the max); the approach is the command, perhaps with what it was
        # tried after: "<command> (after ...)"
        " (SELECT x.occurred_at FROM error_log x INDEXED BY error_log_command"
        "  JOIN sessions s ON s.session_id = x.session_id WHERE x.command = CASE WHEN"
        "  instr(f.approach, ' (after ') > 0 THEN substr(f.approach, 1,"
        "  instr(f.approach, ' (after ') - 1) ELSE f.approach END"
        "  AND x.interrupted = 0 AND s.last_activity_at >= f.created_at"
        "  ORDER BY x.occurred_at DESC LIMIT 1) AS failed_last_at,"
        " (SELECT x.ladder_key FROM error_log x WHERE x.session_id = f.session_id"
        "  AND instr(coalesce(f.context, ''), '; ladder ' || x.ladder_key || '; ') > 0"
        "  LIMIT 1) AS ladder_key"
        " FROM (SELECT f.*, (f.session_id = ?2) AS mine,"
        "  EXISTS (SELECT 1 FROM file_claims c WHERE c.session_id = ?2"
        "   AND c.file_path = f.file_path) AS touched FROM failed_paths f"
        "  WHERE still_relevant = 1 AND (expires_at IS NULL OR expires_at > ?1)"
        "  ORDER BY mine DESC, touched DESC, created_at DESC, id DESC LIMIT 20) f"
        " ORDER BY f.mine DESC, f.touched DESC, f.created_at DESC, f.id DESC",
        (now, session_id),
    )


def latest_snapshot(
    conn: apsw.Connection, session_id: str, kind: str = "pre_compact"
) -> "dict[str, Any] | None":
    found = rows(
        conn,
        "SELECT content, created_at FROM context_snapshots WHERE session_id = ?"
        " AND snapshot_type = ? ORDER BY id DESC LIMIT 1",
        (session_id, kind),
    )
    if not found:
        return None
    import json

    try:
        content = json.loads(found[0]["content"])
    except ValueError:
        return None
    return content if isinstance(content, dict) else None


CRASH_IDLE_SECONDS = 600  # an active session silent this long is taken for crashed
CRASH_LOOKBACK_SECONDS = 7 * 86400

# Sessions that never ended (no SessionEnd): closed by the sweep, or active but long silent.
# Their last step is the last tool call started, by any agent (`running`: it never finished,
# the process died under it), else the last frame's summary; `cut_off`: the subagents that
# were still running when it stopped.
CRASHED_SQL = (
    "SELECT s.session_id, s.last_activity_at, s.end_reason, s.cwd, s.claude_pid,"
    f" s.claude_started_ticks, s.claude_pid_space, {NEVER_ENDED} AS closed,"
    " coalesce(t.input_summary, t.tool_name, (SELECT summary FROM frames f"
    "  WHERE f.session_id = s.session_id ORDER BY frame_no DESC LIMIT 1)) AS last_step,"
    " t.status = 'running' AS step_running, nullif(t.agent_id, s.session_id) AS step_agent,"
    " (SELECT group_concat(r.id, ', ') FROM agent_registry r WHERE r.session_id = s.session_id"
    "  AND r.is_main = 0 AND r.is_internal = 0 AND r.status IN ('running', 'aborted_stale'))"
    "  AS cut_off,"
    " (SELECT count(*) FROM error_log e WHERE e.session_id = s.session_id AND e.interrupted = 0"
    f"  AND {OPEN}) AS open_errors"
    " FROM sessions s LEFT JOIN tool_calls t ON t.tool_use_id = (SELECT x.tool_use_id"
    "  FROM tool_calls x INDEXED BY tool_calls_session WHERE x.session_id = s.session_id"
    "  ORDER BY x.started_at DESC LIMIT 1)"
    " WHERE s.session_id != ?1 AND s.last_activity_at > ?2 - ?3"
    " AND ((s.status = 'active' AND s.last_activity_at < ?2 - ?4)"
    f"  OR {NEVER_ENDED})"
    " ORDER BY s.last_activity_at DESC LIMIT 5"
)


def crashed_sessions(conn: apsw.Connection, session_id: str, now: float) -> "list[dict[str, Any]]":
    """Recent sessions that never ended (crashed, or the terminal was closed), newest first,
    with their last step, the subagents cut off, and the command that resumes them. One only
    silent (not closed by the sweep) whose Claude Code is seen running has not crashed."""
    from .liveness import alive

    found = rows(conn, CRASHED_SQL, (session_id, now, CRASH_LOOKBACK_SECONDS, CRASH_IDLE_SECONDS))
    return [
        {k: v for k, v in s.items() if not k.startswith("claude_")}
        for s in found
        if s["closed"]
        or not alive(s["claude_pid"], s["claude_started_ticks"], s["claude_pid_space"])
    ][:3]


def sessions_beside(conn: apsw.Connection, session_id: str) -> "list[dict[str, Any]]":
    """The other sessions of this project running now: active, and their Claude Code process
    seen alive (one whose process cannot be judged is not claimed to run), newest first."""
    from .liveness import gone, pid_space

    found = rows(
        conn,
        "SELECT s.session_id, s.last_activity_at, s.claude_pid, s.claude_started_ticks,"
        " s.claude_pid_space, (SELECT count(*) FROM agent_registry r WHERE r.session_id ="
        "  s.session_id AND r.status = 'running' AND r.is_main = 0 AND r.is_internal = 0)"
        "  AS subagents,"
        " (SELECT prompt FROM prompts p WHERE p.session_id = s.session_id ORDER BY p.id DESC"
        "  LIMIT 1) AS task"
        " FROM sessions s WHERE s.status = 'active' AND s.session_id != ?1"
        " AND s.claude_pid IS NOT NULL AND s.claude_pid_space = ?2"
        " ORDER BY s.last_activity_at DESC LIMIT 5",
        (session_id, pid_space()),
    )
    return [
        {k: v for k, v in s.items() if not k.startswith("claude_")}
        for s in found
        if not gone(s["claude_pid"], s["claude_started_ticks"], s["claude_pid_space"])
    ]


# --- what a dead end cost -------------------------------------------------------------------
#
# The model responses of the agents that climbed a ladder whose time falls in the climb's
# window, from message_usage (read from Claude Code's transcripts: services/cost/transcripts.py).
# One window per climb, the same wherever its cost is given (an error's line, the failed path
# recorded from it, the session's dead ends, `errors`, `status`):
#
# - a climb: from its first failure (the latest attempt 1 of its ladder at or before an entry)
#   to its last failure so far (the last entry before the ladder's next attempt 1): the
#   attempts. What came after the last failure is the fix, when the command passed later, or
#   other work: never the dead end's, whether the climb was fixed, abandoned or is still open.
#   The responses counted are those of the agents whose failures the climb holds (the main
#   thread's, or a subagent's), not those of agents working beside them.
#   An interrupted call climbs no ladder: none.
# - a failed path recorded at a third failure (its context names the ladder, its time is that
#   failure's): the window of that climb, so one failure has one cost.
# - a failed path recorded by hand: no window. Its failures are not known, and the turn it
#   happened to be recorded in (from a terminal, after the session, say) says nothing of what
#   it cost.
#
# A session none of whose usage was read has no figure (NULL), never 0: its cost is unknown.

SPENT_TOKENS = "m.input_tokens + m.output_tokens + m.cache_read_tokens + m.cache_creation_tokens"
OPEN_END = "9e99"  # the end of a window with no end: every response read so far


def climb_start_id(e: str) -> str:
    """The climb's first entry: its latest attempt 1 at or before `e`, else (a climb that
    continues one another session abandoned: core/ladder.carried_over) the ladder's first
    entry in the session."""
    ladder = (
        f" FROM error_log x WHERE x.session_id = {e}.session_id"
        f" AND x.ladder_key IS {e}.ladder_key AND x.interrupted = {e}.interrupted"
        f" AND x.id <= {e}.id"
    )
    first = f"(SELECT min(x.id){ladder})"
    return f"coalesce((SELECT max(x.id){ladder} AND x.attempt_number = 1), {first})"


def climb_columns(e: str = "e", attempts: str = "climb_attempts") -> str:
    """Result columns over the error_log row `e`: climb_id (the climb's first entry),
    spent_from and spent_to (its first and last failure), climb_end (auto_fixed, abandoned,
    NULL: open), its last attempt number (named `attempts`) and climbers (a JSON array of the
    message_usage agent ids of the agents that failed on it)."""
    first = f"coalesce({climb_start_id(e)}, {e}.id)"
    resolved = (
        f" FROM error_log r WHERE r.session_id = {e}.session_id AND r.ladder_key IS"
        f" {e}.ladder_key AND r.resolution IN ('auto_fixed', 'abandoned') AND r.id >= {first}"
    )
    climb = (
        f" FROM error_log z WHERE z.session_id = {e}.session_id AND z.ladder_key IS"
        f" {e}.ladder_key AND z.interrupted = 0 AND z.id >= {first} AND z.id < coalesce("
        f"(SELECT min(n.id) FROM error_log n WHERE n.session_id = {e}.session_id AND"
        f" n.ladder_key IS {e}.ladder_key AND n.interrupted = 0 AND n.attempt_number = 1"
        f" AND n.id > {first}), 9e18)"
    )
    live = f"{e}.interrupted = 0"
    return (
        f"CASE WHEN {live} THEN {first} END AS climb_id,"
        f" CASE WHEN {live} THEN (SELECT y.occurred_at FROM error_log y WHERE y.id = {first})"
        " END AS spent_from,"
        f" CASE WHEN {live} THEN (SELECT max(z.occurred_at){climb}) END AS spent_to,"
        f" CASE WHEN {live} THEN (SELECT r.resolution{resolved} ORDER BY r.resolved_at, r.id"
        " LIMIT 1) END AS climb_end,"
        f" CASE WHEN {live} THEN (SELECT max(z.attempt_number){climb}) END AS {attempts},"
        f" CASE WHEN {live} THEN (SELECT json_group_array(DISTINCT CASE WHEN z.agent_id IS NULL"
        f" OR z.agent_id = 'main' THEN z.session_id ELSE z.agent_id END){climb})"
        " END AS climbers"
    )


# The entry a failed path recorded at a third failure came from: that failure (same session,
# same time), on the ladder its context names ("failed 3 times; ladder <key>; ...").
_FAILED_FROM = (
    "(SELECT max(x.id) FROM error_log x WHERE x.session_id = f.session_id"
    " AND x.occurred_at = f.created_at AND x.interrupted = 0"
    " AND instr(coalesce(f.context, ''), '; ladder ' || x.ladder_key || '; ') > 0)"
)
# FROM and result columns for a failed_paths row `f`: its climb's (see climb_columns; all NULL
# for one recorded by hand), attempts being the climb's.
FAILED_PATH_WINDOW_FROM = f" FROM failed_paths f LEFT JOIN error_log e ON e.id = {_FAILED_FROM}"
FAILED_PATH_WINDOW = climb_columns("e", attempts="attempts")


def spent_columns(session: str, start: str, end: str, agents: str | None = None) -> str:
    """Result columns `tokens` and `cost_usd`: what the session's model responses used and
    cost from `start` to `end` (SQL expressions; `end` NULL: up to now), of the agents in the
    JSON array `agents` when given. Both NULL without a window, or when none of the session's
    usage was read; cost_usd NULL when no response in the window had a price (an empty window
    costs 0)."""
    known = (
        f"{start} IS NOT NULL AND EXISTS (SELECT 1 FROM message_usage u"
        f" WHERE u.session_id = {session})"
    )
    # By time (a window is minutes long; a session can have thousands of responses)
    window = (
        f" FROM message_usage m INDEXED BY message_usage_at WHERE m.session_id = {session}"
        f" AND m.at >= {start}"
        f" AND m.at <= coalesce({end}, {OPEN_END})"
    )
    if agents is not None:
        window += f" AND m.agent_id IN (SELECT value FROM json_each({agents}))"
    return (
        f"CASE WHEN {known} THEN (SELECT coalesce(sum({SPENT_TOKENS}), 0){window}) END AS tokens,"
        f" CASE WHEN {known} THEN (SELECT CASE WHEN count(m.cost_usd) > 0 OR count(*) = 0"
        f" THEN total(m.cost_usd) END{window}) END AS cost_usd"
    )


def ladders_spent(
    conn: apsw.Connection, session_id: str, include_abandoned: bool = False
) -> "dict[Any, dict[str, Any]]":
    """{ladder_key: {tokens, cost_usd}} for the ladders `open_errors` lists: each one's climb
    (see above). Empty when the session's usage was not read."""
    unfixed = UNFIXED if include_abandoned else OPEN
    found = rows(
        conn,
        f"SELECT w.ladder_key, w.spent_to,"
        f" {spent_columns('w.session_id', 'w.spent_from', 'w.spent_to', 'w.climbers')}"
        f" FROM (SELECT e.ladder_key, e.session_id, {climb_columns('e')} FROM error_log e"
        " WHERE e.id IN (SELECT max(id) FROM error_log WHERE session_id = ?"
        f" AND {unfixed} AND interrupted = 0 GROUP BY ladder_key)) w",
        (session_id,),
    )
    return {r["ladder_key"]: r for r in found if r["tokens"] is not None}


def usage_read_until(conn: apsw.Connection, session_id: str) -> float | None:
    """Up to when every transcript of the session is known read (the earliest of their last
    reads, each then read to its end); None when one is behind or none was read. A response
    written after it is not in any figure yet."""
    found = conn.execute(
        "SELECT CASE WHEN count(*) = 0 OR total(read_to < coalesce(size, 0)) > 0 THEN NULL"
        " ELSE min(updated_at) END FROM transcript_files WHERE session_id = ?",
        (session_id,),
    ).fetchall()
    value = found[0][0] if found else None
    return float(value) if isinstance(value, int | float) else None


def failed_paths_spent(conn: apsw.Connection, ids: "list[Any]") -> "dict[Any, dict[str, Any]]":
    """{failed path id: {attempts, tokens, cost_usd}} for those whose window and session's
    usage are known (see above)."""
    if not ids:
        return {}
    found = rows(  # the ids as one JSON array: one statement, compiled once, whatever their count
        conn,
        f"SELECT w.id, w.attempts, w.spent_to,"
        f" {spent_columns('w.session_id', 'w.spent_from', 'w.spent_to', 'w.climbers')}"
        f" FROM (SELECT f.id, f.session_id, {FAILED_PATH_WINDOW}{FAILED_PATH_WINDOW_FROM}"
        " WHERE f.id IN (SELECT value FROM json_each(?))) w",
        ("[" + ",".join(str(int(i)) for i in ids) + "]",),
    )
    return {r["id"]: r for r in found if r["tokens"] is not None}
