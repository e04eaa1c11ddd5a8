"""The read API behind the CLI: plain dict rows, short read transactions."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import apsw

from ..core import db, liveness, readings, relations
from ..core.readings import OPEN_ERRORS_SHOWN, PAGE
from .cost import costs

# The counters `sessions` shows, summed over the event types that count them.
COUNTERS = ("prompts", "tool_calls", "tool_failures", "file_edits", "subagents", "compactions")


# A session the daemon ended because it never said SessionEnd is `interrupted`, never `ended`:
# what `status` lists under "sessions never ended" (readings.NEVER_ENDED).
SESSION_STATE = (
    f"CASE WHEN s.status = 'ended' AND {readings.NEVER_ENDED.replace('end_reason', 's.end_reason')}"
    " THEN 'interrupted' ELSE s.status END"
)


def sessions_query() -> Query:
    """Every session, the latest active first: id, started, ended or interrupted, prompts,
    tool calls, cost (from Claude Code's transcripts), compactions, forks made from it."""
    counter = (
        "(SELECT sum(CAST(value AS INTEGER)) FROM session_metrics m"
        " WHERE m.session_id = s.session_id AND m.key = '{key}')"
    )
    return Query(
        f"SELECT s.session_id, {SESSION_STATE} AS state, s.started_at, s.ended_at,"
        f" {counter.format(key='prompts')} AS prompts,"
        f" {counter.format(key='tool_calls')} AS tool_calls,"
        " (SELECT sum(u.cost_usd) FROM message_usage u WHERE u.session_id = s.session_id)"
        " AS cost_usd,"
        " (SELECT max(u.estimated) FROM message_usage u WHERE u.session_id = s.session_id)"
        " AS estimated,"
        f" {counter.format(key='compactions')} AS compactions,"
        " (SELECT count(*) FROM branches b WHERE b.parent_session_id = s.session_id) AS forks,"
        " s.end_reason, s.last_activity_at"
        " FROM sessions s ORDER BY s.last_activity_at DESC",
        (),
        "SELECT 1 FROM sessions",
    )


def sessions(
    conn: apsw.Connection, limit: int = 20, only: str | None = None
) -> list[dict[str, Any]]:
    """Recent sessions with their counters (session_metrics rows pivoted: events is the sum of
    every event type's count); `only`: the one session with this id."""
    pivot = ", ".join(
        f"sum(CASE WHEN key = '{key}' THEN CAST(value AS INTEGER) ELSE 0 END) AS {key}"
        for key in COUNTERS
    )
    return db.rows(  # the counters of the sessions shown only, never of every session
        conn,
        "WITH shown AS (SELECT * FROM sessions WHERE ?2 IS NULL OR session_id = ?2"
        " ORDER BY last_activity_at DESC LIMIT ?1)"
        f" SELECT s.session_id, {SESSION_STATE} AS status, s.start_source AS source, s.started_at,"
        " s.last_activity_at, s.end_reason, m.events, m.prompts, m.tool_calls,"
        " m.tool_failures, m.file_edits, m.subagents, m.compactions FROM shown s"
        " LEFT JOIN (SELECT session_id,"
        " sum(CASE WHEN key = 'count' THEN CAST(value AS INTEGER) ELSE 0 END) AS events,"
        f" {pivot} FROM session_metrics WHERE session_id IN (SELECT session_id FROM shown)"
        " GROUP BY session_id) m USING (session_id)"
        " ORDER BY s.last_activity_at DESC",
        (limit, only),
    )


class Page:
    """The first rows of a listing, and how many matched in all (`more` = total - shown)."""

    def __init__(self, rows: list[dict[str, Any]], total: int) -> None:
        self.rows = rows
        self.total = total

    @property
    def more(self) -> int:
        return max(0, self.total - len(self.rows))


def stream(conn: apsw.Connection, query: Query) -> Iterator[dict[str, Any]]:
    """Rows as they are read (a listing's `--all`): none held, none waited for."""
    cursor = conn.execute(query.sql, query.params)
    try:
        names = [d[0] for d in cursor.getdescription()]
    except apsw.ExecutionCompleteError:
        return
    finish = query.finisher(conn)
    for row in cursor:
        yield finish(dict(zip(names, row, strict=True)))


def page(conn: apsw.Connection, query: Query, limit: int = PAGE) -> Page:
    """The first `limit` rows and the count of all that match (counted apart, through the same
    filter and its index, never by reading every row)."""
    finish = query.finisher(conn)
    found = [finish(row) for row in db.rows(conn, f"{query.sql} LIMIT ?", (*query.params, limit))]
    if len(found) < limit:
        return Page(found, len(found))
    total = db.rows(conn, f"SELECT count(*) AS n FROM ({query.count_sql})", query.params)
    return Page(found, int(total[0]["n"]))


class Hidden:
    """The rows a listing's default filter leaves out: the SQL that selects them (with the
    listing's parameters) and what they are in words, so that no listing says "none" while
    rows are there to see."""

    def __init__(self, sql: str, what: str) -> None:
        self.sql = sql
        self.what = what


class Query:
    """A listing's SQL (ordered, without LIMIT), its parameters, the SQL that counts it, and
    what its default filter hides (None: nothing)."""

    def __init__(
        self,
        sql: str,
        params: tuple[Any, ...],
        count_sql: str | None = None,
        hidden: Hidden | None = None,
        judge: Callable[[apsw.Connection], Callable[[dict[str, Any]], dict[str, Any]]]
        | None = None,
    ) -> None:
        self.sql = sql
        self.params = params
        self.count_sql = count_sql or sql
        self.hidden = hidden
        # What SQL cannot know, judged as the rows are read: whose process is alive now,
        # which live claims conflict (core/liveness, core/relations). Given the connection,
        # it returns the function that finishes each row.
        self.judge = judge

    def finisher(self, conn: apsw.Connection) -> Callable[[dict[str, Any]], dict[str, Any]]:
        return self.judge(conn) if self.judge is not None else _as_is


def _as_is(row: dict[str, Any]) -> dict[str, Any]:
    return row


def hidden(conn: apsw.Connection, query: Query) -> int:
    """How many rows the listing's default filter leaves out (0 when it has none)."""
    if query.hidden is None:
        return 0
    found = db.rows(conn, f"SELECT count(*) AS n FROM ({query.hidden.sql})", query.params)
    return int(found[0]["n"])


def agents_query(
    *, include_all: bool = False, session: str | None = None, now: float | None = None
) -> Query:
    """The registry: by default real agents of active sessions and anything still running;
    `include_all` adds finished sessions' agents and Claude Code's internal helpers."""
    now = time.time() if now is None else now
    shown = "a.is_internal = 0 AND (a.status = 'running' OR s.status = 'active')"
    if session:  # a session named: its agents whatever their state (its helpers: --all)
        shown = "a.is_internal = 0"
    where = "1" if include_all else shown
    params: list[Any] = [now, now]
    scope = ""
    if session:
        scope = " AND a.session_id >= ?3 AND a.session_id < ?3 || x'ff'"
        where += scope
        params.append(session)
    left_out = None
    if not include_all:
        left_out = Hidden(
            "SELECT 1 FROM agent_registry a LEFT JOIN sessions s USING (session_id)"
            f" WHERE ?1 = ?1 AND ?2 = ?2 AND NOT coalesce({shown}, 0){scope}",
            "Claude Code's internal helpers"
            if session
            else "agents of ended sessions and Claude Code's internal helpers",
        )
    return Query(
        "SELECT a.id AS agent, CASE WHEN a.is_main THEN 'main' ELSE a.agent_type END AS type,"
        " coalesce(a.description || ': ', '') || coalesce(a.task_description, '') AS task,"
        " a.status AS state,"
        " round(?1 - coalesce(a.started_at, a.last_seen_at)) AS age_seconds,"
        " round(?2 - CASE WHEN a.is_main THEN max(a.last_seen_at, s.last_activity_at)"
        "  ELSE a.last_seen_at END) AS silent_seconds,"
        " (SELECT count(*) FROM file_claims c WHERE c.session_id = a.session_id AND c.agent_id ="
        "  CASE WHEN a.is_main THEN 'main' ELSE a.id END) AS files,"
        # Its own model responses (a subagent's are not its parent's), by the usage table's
        # key: the session, then the agent (the session id for the main thread).
        f" (SELECT sum({costs.TOKEN_SUM}) FROM message_usage m WHERE m.session_id ="
        "  a.session_id AND m.agent_id = a.id) AS tokens,"
        " (SELECT sum(m.cost_usd) FROM message_usage m WHERE m.session_id = a.session_id"
        "  AND m.agent_id = a.id) AS cost_usd,"
        " (SELECT max(m.estimated) FROM message_usage m WHERE m.session_id = a.session_id"
        "  AND m.agent_id = a.id) AS estimated,"
        " a.status_reason AS reason, a.session_id, a.tool_uses, a.is_internal,"
        f" {liveness.process_columns('a', 's')}"
        " FROM agent_registry a LEFT JOIN sessions s USING (session_id)"
        f" WHERE {where} ORDER BY a.status = 'running' DESC, a.last_seen_at DESC",
        tuple(params),
        "SELECT 1 FROM agent_registry a LEFT JOIN sessions s USING (session_id)"
        f" WHERE ?1 = ?1 AND ?2 = ?2 AND {where}",
        left_out,
        lambda conn: _judge_agent,
    )


EXITED = "exited"  # an agent recorded as running whose Claude Code process is gone


def _judge_agent(row: dict[str, Any]) -> dict[str, Any]:
    """A running agent whose Claude Code process is gone is not running: `exited` (the sweep
    soon records it as stale, or ends its session)."""
    gone = row["state"] == "running" and liveness.row_gone(row)
    out = {k: v for k, v in row.items() if not k.startswith("claude_")}
    if gone:
        out["state"] = EXITED
        out["reason"] = "its Claude Code process exited"
    return out


def agents(
    conn: apsw.Connection,
    *,
    include_all: bool = False,
    session: str | None = None,
    limit: int = 200,
) -> list[dict[str, Any]]:
    """The registry's first `limit` rows (see `agents_query`)."""
    return page(conn, agents_query(include_all=include_all, session=session), limit).rows


def claims_query(
    conn: apsw.Connection, *, include_released: bool = False, now: float | None = None
) -> Query:
    """Claims with their lease state, contested first: a claim whose holder can change its file
    at the same time as another live holder (core/relations: a parent and the child it handed
    the file to are not). The contested ones are judged once, before the listing is read."""
    now = time.time() if now is None else now
    where = "1" if include_released else "c.released_at IS NULL"
    holder = "CASE WHEN {c}.agent_id = 'main' THEN {c}.session_id ELSE {c}.agent_id END"
    live = (
        "({c}.released_at IS NULL AND {c}.expires_at > ?1 AND (SELECT status FROM"
        " agent_registry WHERE id = " + holder + ") = 'running')"
    )
    contested = [
        [path, session, agent]
        for path, holders in relations.contested(conn, now).items()
        for session, agent in holders
    ]
    return Query(
        "SELECT c.file_path, c.agent_id AS agent, c.session_id, c.operation, c.edits,"
        " c.last_touched_at, c.expires_at,"
        " CASE WHEN c.released_at IS NOT NULL THEN 'released: ' || c.release_reason"
        "  WHEN c.expires_at <= ?1 THEN 'expired'"
        f"  WHEN NOT {live.format(c='c')} THEN 'agent ' || coalesce(r.status, 'unknown')"
        "  ELSE 'live' END AS lease,"
        f" c.released_at IS NULL AND EXISTS (SELECT 1 FROM json_each(?2) j"
        "  WHERE j.value ->> 0 = c.file_path AND j.value ->> 1 = c.session_id"
        "  AND j.value ->> 2 = c.agent_id) AS contested"
        f" FROM file_claims c LEFT JOIN agent_registry r ON r.id = {holder.format(c='c')}"
        f" WHERE {where} ORDER BY c.released_at IS NULL DESC, contested DESC,"
        " c.last_touched_at DESC",
        (now, json.dumps(contested)),
        f"SELECT 1 FROM file_claims c WHERE ?1 = ?1 AND ?2 = ?2 AND {where}",
        None
        if include_released
        else Hidden(
            "SELECT 1 FROM file_claims c WHERE ?1 = ?1 AND ?2 = ?2 AND c.released_at IS NOT NULL",
            "released claims",
        ),
    )


def claims(
    conn: apsw.Connection, *, include_released: bool = False, limit: int = 1_000_000
) -> list[dict[str, Any]]:
    """The first `limit` claims (see `claims_query`)."""
    return page(conn, claims_query(conn, include_released=include_released), limit).rows


def open_errors(conn: apsw.Connection, limit: int = OPEN_ERRORS_SHOWN) -> list[dict[str, Any]]:
    """The newest `limit` ladders not fixed yet: the same rows the restored context lists
    (what an ended session abandoned is still unfixed; an interrupted call is no failure).

    Found by walking the unfixed rows newest first (their partial index) until `limit`
    ladders are seen, then summing up just those: a project with years of abandoned ladders
    is never aggregated whole."""
    ladders: dict[tuple[Any, Any], None] = {}
    for session_id, ladder_key in conn.execute(
        "SELECT session_id, ladder_key FROM error_log INDEXED BY error_log_unfixed"
        f" WHERE {readings.UNFIXED} AND interrupted = 0 ORDER BY id DESC"
    ):
        ladders.setdefault((session_id, ladder_key), None)
        if len(ladders) >= limit:
            break
    if not ladders:
        return []
    wanted = ", ".join("(?, ?)" for _ in ladders)
    state = readings.error_state("max(CASE WHEN e.resolution = 'abandoned' THEN 'abandoned' END)")
    found = db.rows(
        conn,
        f"WITH wanted (session_id, ladder_key) AS (VALUES {wanted})"
        " SELECT e.session_id, e.tool_name, e.error_category,"
        " coalesce(e.command, e.file_path, e.signature) AS what,"
        " max(e.attempt_number) AS attempts, max(e.occurred_at) AS last_at,"
        f" {state} AS state"
        " FROM wanted w JOIN error_log e INDEXED BY error_log_ladder"
        " ON e.session_id = w.session_id AND e.ladder_key IS w.ladder_key"
        f" WHERE {readings.UNFIXED} AND interrupted = 0"  # error_log's: `wanted` has neither
        " GROUP BY e.session_id, e.ladder_key ORDER BY last_at DESC",
        [value for pair in ladders for value in pair],
    )
    for row in found:
        row["step"] = ladder_step(int(row["attempts"] or 1))
    return found


def ladder_step(attempts: int) -> str:
    """Where a ladder stands after `attempts` failures, in words (core/errors.ladder_step)."""
    from ..core.errors import ladder_step as step

    return step(attempts)


# The last entry of its climb: the ladder's next entry in the session, if any, starts another
# climb (attempt 1). An error of `errors` is a climb, shown by its last entry.
_LAST_OF_CLIMB = (
    "coalesce((SELECT n.attempt_number FROM error_log n WHERE n.session_id = e.session_id"
    " AND n.ladder_key IS e.ladder_key AND n.interrupted = e.interrupted AND n.id > e.id"
    " ORDER BY n.id LIMIT 1), 1) = 1"
)
# The failures of the climb whose last entry is `w` (from `w.start_id` to it).
_CLIMB_OF_W = (
    " FROM error_log a WHERE a.session_id = w.session_id AND a.ladder_key IS w.ladder_key"
    " AND a.interrupted = w.interrupted AND a.id BETWEEN w.start_id AND w.id"
)


def errors_query(*, open_only: bool = False) -> Query:
    """Every error, newest first: one row per climb of a ladder (its failures, from attempt 1
    to the last, in `failures`), with where it stands (`step`) and what became of it
    (`state`) in the words `status` uses, and what the climb cost, once. `open_only`: the
    unfixed ones (abandoned by an ended session included), as `status` and the context."""
    unfixed = f"{readings.UNFIXED} AND interrupted = 0"
    where = f"{_LAST_OF_CLIMB} AND {unfixed}" if open_only else _LAST_OF_CLIMB
    left_out = None
    if open_only:
        left_out = Hidden(
            f"SELECT 1 FROM error_log e WHERE {_LAST_OF_CLIMB} AND NOT coalesce({unfixed}, 0)",
            "errors fixed, or calls interrupted",
        )
    # What the climb cost (core/readings.py: from its first failure to its last).
    spent = readings.spent_columns("w.session_id", "w.spent_from", "w.spent_to", "w.climbers")
    failure = (
        "json_object('id', a.id, 'attempt_number', a.attempt_number, 'occurred_at',"
        " a.occurred_at, 'agent_id', a.agent_id, 'tool_name', a.tool_name, 'tool_use_id',"
        " a.tool_use_id, 'command', a.command, 'file_path', a.file_path, 'exit_code',"
        " a.exit_code, 'task_id', a.task_id, 'error_message', a.error_message)"
    )
    return Query(
        "SELECT w.start_id AS id, w.session_id, w.agent_id, w.tool_name, w.error_category,"
        " coalesce(w.command, w.file_path, w.signature) AS what,"
        f" (SELECT count(*){_CLIMB_OF_W}) AS attempts, w.attempt_number AS step,"
        f" {readings.error_state('w.resolution', 'w.interrupted')} AS state,"
        " w.interrupted, w.command, w.file_path, w.exit_code, w.task_id, w.error_message,"
        " (SELECT y.occurred_at FROM error_log y WHERE y.id = w.start_id) AS first_at,"
        " w.occurred_at AS last_at, w.resolved_at,"
        f" {spent},"
        f" (SELECT json_group_array(json(f.failure)) FROM (SELECT {failure} AS failure"
        f"{_CLIMB_OF_W} ORDER BY a.id) f) AS failures"
        f" FROM (SELECT e.*, {readings.climb_start_id('e')} AS start_id,"
        f" {readings.climb_columns('e')} FROM error_log e WHERE {where}) w ORDER BY w.id DESC",
        (),
        f"SELECT 1 FROM error_log e WHERE {where}",
        left_out,
        judge=lambda conn: _worded,
    )


def _worded(row: dict[str, Any]) -> dict[str, Any]:
    """An error as `errors` gives it: its step and each failure's in words, the failures a
    list."""
    failures = json.loads(str(row.get("failures") or "[]"))
    for failure in failures:
        failure["step"] = ladder_step(int(failure.get("attempt_number") or 1))
    return row | {"step": ladder_step(int(row["step"] or 1)), "failures": failures}


def errors(
    conn: apsw.Connection, *, open_only: bool = False, limit: int = 200
) -> list[dict[str, Any]]:
    return page(conn, errors_query(open_only=open_only), limit).rows


def failed_paths_query(*, include_all: bool = False) -> Query:
    """Failed paths, newest first: by default the ones still shown to agents."""
    shown = "still_relevant = 1 AND (expires_at IS NULL OR expires_at > ?1)"
    where = "1" if include_all else shown
    params: tuple[Any, ...] = () if include_all else (time.time(),)
    # What each approach cost: the climb it was recorded from (core/readings.py).
    spent = readings.spent_columns("w.session_id", "w.spent_from", "w.spent_to", "w.climbers")
    return Query(
        "SELECT id, approach, reason_failed, file_path, session_id, still_relevant, created_at,"
        f" expires_at, context, {spent} FROM (SELECT f.*, {readings.FAILED_PATH_WINDOW}"
        f"{readings.FAILED_PATH_WINDOW_FROM} WHERE {where}) w ORDER BY id DESC",
        params,
        f"SELECT 1 FROM failed_paths WHERE {where}",
        None
        if include_all
        else Hidden(
            f"SELECT 1 FROM failed_paths WHERE NOT coalesce({shown}, 0)",
            "failed paths resolved or expired (no longer shown to agents)",
        ),
    )


def all_failed_paths(
    conn: apsw.Connection, *, include_all: bool = False, limit: int = 200
) -> list[dict[str, Any]]:
    return page(conn, failed_paths_query(include_all=include_all), limit).rows


def verdicts_query() -> Query:
    return Query(
        "SELECT id, session_id, hook_event, task_id, decision, reason, task, judge, created_at,"
        " verdict_json, raw FROM llm_verdicts ORDER BY id DESC",
        (),
        "SELECT 1 FROM llm_verdicts",
    )


def verdicts(conn: apsw.Connection, limit: int = 200) -> list[dict[str, Any]]:
    return page(conn, verdicts_query(), limit).rows


def events_query(
    *,
    session: str | None = None,
    event: str | None = None,
    tool: str | None = None,
    agent: str | None = None,
    payload: bool = False,
    oldest_first: bool = False,
) -> Query:
    """Matching events, newest first (a page of the newest), or `oldest_first` (every one,
    streamed in the order they happened). A session prefix is a range of the session index
    (`>= prefix AND < prefix || x'ff'`), never a LIKE over the table."""
    where, params = [], []
    if session:
        where.append("session_id >= ? AND session_id < ? || x'ff'")
        params += [session, session]
    for column, value in (("hook_event_name", event), ("tool_name", tool), ("agent_id", agent)):
        if value:
            where.append(f"{column} = ?")
            params.append(value)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    extra = ", payload" if payload else ""
    return Query(
        f"SELECT id, received_at, nullif(session_id, '') AS session_id, hook_event_name AS"
        f" event, tool_name, agent_id, tool_use_id, payload_bytes, via, unattributed{extra}"
        f" FROM events {clause} ORDER BY id {'ASC' if oldest_first else 'DESC'}",
        tuple(params),
        f"SELECT 1 FROM events {clause}",
    )


def events(
    conn: apsw.Connection,
    *,
    session: str | None = None,
    event: str | None = None,
    tool: str | None = None,
    agent: str | None = None,
    limit: int = 50,
    payload: bool = False,
) -> list[dict[str, Any]]:
    """The most recent matching events, oldest first."""
    query = events_query(session=session, event=event, tool=tool, agent=agent, payload=payload)
    return list(reversed(page(conn, query, limit).rows))


def latest_session(conn: apsw.Connection) -> str | None:
    found = db.rows(conn, "SELECT session_id FROM sessions ORDER BY last_activity_at DESC LIMIT 1")
    return found[0]["session_id"] if found else None
