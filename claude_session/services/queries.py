"""The read API behind the CLI: plain dict rows, short read transactions."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import apsw

from ..core import db, liveness, log, readings, relations, spool
from ..core.events import count as count_events
from ..core.paths import db_path, filesystem_type, unsafe_filesystem
from .cost import costs, hooks_report


def status(conn: apsw.Connection, root: str) -> dict[str, Any]:
    now = time.time()
    path = db_path(root)
    size = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    errors_logged, last_error = log.count_errors(root)
    set_aside, set_aside_reason = spool.quarantined(root)
    latest = db.rows(
        conn,
        "SELECT session_id, snapshot_type, trigger, created_at FROM context_snapshots"
        " ORDER BY id DESC LIMIT 1",
    )
    found: dict[str, Any] = {
        "database": {
            "path": path,
            "size_bytes": size,
            "schema_version": db.schema_version(conn),
            "events": count_events(conn),
            "spool_backlog": spool.backlog(root),
            "spool_set_aside": set_aside,
            "spool_last_set_aside_reason": set_aside_reason,
            "internal_errors": errors_logged,
            "last_internal_error": last_error,
            "last_snapshot": latest[0] if latest else None,
            "moved_aside": corrupt_copies(root),
            "filesystem": filesystem_type(root),
            "wal_unsafe_filesystem": unsafe_filesystem(root) is not None,
        },
        "sessions": sessions(conn, limit=5),
        "sessions_never_ended": [
            {k: row[k] for k in ("session_id", "last_activity_at", "last_step", "open_errors")}
            | {"resume_with": f"claude --resume {row['session_id']}"}
            for row in readings.crashed_sessions(conn, "", now)
        ],
        "agents": agents(conn, limit=15),
        "claims": claims(conn, limit=STATUS_CLAIMS),
        "daemon": daemon_state(root),
        "trust": trust_report(root),
        "open_errors": open_errors(conn),
        "failed_paths": [
            {k: v for k, v in row.items() if k != "id"} for row in readings.failed_paths(conn, now)
        ],
        "hooks": hook_runs(conn) | {"installed_in": hooks_from(root)},
        "hook_time": hooks_report.latest(conn, latest_session(conn), hook_budget(root)),
        "cost": costs.latest(conn)
        | {"transcript_problems": costs.transcript_state(conn)["live_problems"]},
        "otel": otel_status(conn, root, now),  # None: export is off
        "judge": judge_state(conn, root, now),
        "memories": memory_state(conn, root),
    }
    return {"now": happening(conn, root, found, now)} | found


def hook_budget(root: str) -> float:
    from . import configuration

    return float(configuration.load_or_defaults(root).values["hook_budget_ms"])  # type: ignore[arg-type]


def memory_state(conn: apsw.Connection, root: str) -> dict[str, Any]:
    """This project's memories in use, those about files, and those possibly stale: a file
    they are about changed since (`memory list --stale` lists them)."""
    from ..core import memory_files

    total = conn.execute(
        "SELECT count(*) FROM memories WHERE forgotten_at IS NULL AND review IS NOT 'pending'"
    ).fetchall()[0][0]
    about_files, stale = memory_files.stale_count(conn, root)
    return {"count": total, "about_files": about_files, "possibly_stale": stale}


# Where an export endpoint can come from (services/telemetry/otel_export.py, `target`).
OTEL_ENDPOINT_VARIABLES = (
    "CLAUDE_SESSION_OTEL_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)


def otel_status(conn: apsw.Connection, root: str, now: float) -> dict[str, Any] | None:
    """The export's state (`otel_export.status`), None when it is off. Its module (logging,
    dataclasses: a third of the imports of `status`, measured) loads only when an endpoint is
    set somewhere; with none, export is off whatever else is set."""
    from . import configuration

    if not configuration.load_or_defaults(root).values.get("otel_endpoint") and not any(
        os.environ.get(name, "").strip() for name in OTEL_ENDPOINT_VARIABLES
    ):
        return None
    from .telemetry import otel_export

    return otel_export.status(conn, root, now)


def judge_state(conn: apsw.Connection, root: str, now: float) -> dict[str, Any]:
    """The judge: at which events it runs ("" off), what it cost today (UTC) by its command's
    own figures, the day's budget, and how often today it skipped for want of budget."""
    from . import configuration, judge

    values = configuration.load_or_defaults(root).values
    return {
        "events": str(values.get("judge_events") or ""),
        "spent_today_usd": round(judge.spent_today(conn, now), 6),
        "budget_usd_per_day": values.get("judge_budget_usd_per_day"),
        "skipped_today": judge.skipped_today(conn, now),
    }


def happening(
    conn: apsw.Connection, root: str, found: dict[str, Any], now: float
) -> dict[str, Any]:
    """What a person opening `status` wants first: who works on what, which files two agents
    hold, what is failing, the last compaction, and anything wrong with the installation."""
    contested: dict[str, list[str]] = {}
    for claim in found["claims"]:
        if claim["contested"]:
            contested.setdefault(str(claim["file_path"]), []).append(str(claim["agent"]))
    return {
        "live_agents": [
            {k: a[k] for k in ("agent", "type", "task", "silent_seconds", "files", "session_id")}
            for a in found["agents"]
            if a["state"] == "running"
        ],
        "contested_files": [{"file_path": f, "agents": a} for f, a in contested.items()],
        "open_errors": [
            {k: e[k] for k in ("what", "tool_name", "step", "state", "last_at", "session_id")}
            for e in found["open_errors"]
        ],
        "last_compaction": last_compaction(conn),
        "problems": problems(conn, root, found["database"], found["daemon"], now),
    }


def last_compaction(conn: apsw.Connection) -> dict[str, Any] | None:
    """The latest compaction: when, why, and what the state saved before it held (what
    SessionStart put back), with the summary Claude Code wrote."""
    found = db.rows(
        conn,
        "SELECT id, session_id, trigger, created_at, content FROM context_snapshots"
        " WHERE snapshot_type = 'pre_compact' ORDER BY id DESC LIMIT 1",
    )
    if not found:
        return None
    row = found[0]
    try:
        saved = json.loads(str(row["content"]))
    except ValueError:
        saved = {}
    saved = saved if isinstance(saved, dict) else {}
    summary = db.rows(
        conn,
        "SELECT content FROM context_snapshots WHERE session_id = ? AND id > ?"
        " AND snapshot_type = 'post_compact' ORDER BY id LIMIT 1",
        (row["session_id"], row["id"]),
    )
    text = None
    if summary:
        try:
            text = json.loads(str(summary[0]["content"])).get("compact_summary")
        except (ValueError, AttributeError):
            text = None
    return {
        "session_id": row["session_id"],
        "trigger": row["trigger"],
        "created_at": row["created_at"],
        "restored": {
            key: len(saved.get(key) or [])
            for key in ("task", "agents", "claims", "errors", "failed_paths")
        },
        "summary": text,
    }


def problems(
    conn: apsw.Connection | None,
    root: str,
    database: dict[str, Any],
    daemon: dict[str, Any],
    now: float,
) -> list[str]:
    """Anything wrong with the installation, one sentence each. The checks `doctor` makes too
    (the spool, internal errors, trust) are computed once, in `health`: here their sentences."""
    from . import health

    shared = [*health.spool_checks(root), *health.trust_checks(root), health.internal_errors(root)]
    found = [*hooks_problem(root), *(c.problem for c in shared if c.problem is not None)]
    for copy in database["moved_aside"]:
        found.append(f"a corrupt database was moved aside: {copy}")
    if database["wal_unsafe_filesystem"]:
        found.append(f"the database is on {database['filesystem']}, where WAL is not safe")
    from ..core.config import number
    from .configuration import load_or_defaults

    if conn is None:  # no database yet: no session is live
        return found
    idle = number(load_or_defaults(root).values, "session_idle_minutes") * 60
    live = db.rows(
        conn,
        "SELECT count(*) AS n FROM sessions WHERE status = 'active' AND last_activity_at > ?",
        (now - idle,),
    )[0]["n"]
    if live and not daemon.get("running"):
        found.append("the daemon is not running while a session is live (`daemon start`)")
    return found


def hooks_problem(root: str) -> list[str]:
    """No claude-session hooks reach a session here (settings files, a worktree's main
    repository, the plugin, a replay's own), or some events missing."""
    from pathlib import Path

    from .setup.hook_sources import Found

    return Found(Path(root)).problems()


def hooks_from(root: str) -> str:
    """Where the hooks of a session here come from, in words (information, not a problem)."""
    from pathlib import Path

    from .setup.hook_sources import Found

    return Found(Path(root)).describe()


def corrupt_copies(root: str) -> list[str]:
    """Corrupt databases the daemon moved aside (never deleted): for `status` to point at."""
    folder, name = os.path.split(db_path(root))
    return sorted(
        os.path.join(folder, n)
        for n in os.listdir(folder)
        if n.startswith(name + ".corrupt-") and not n.endswith(("-wal", "-shm"))
    )


STATUS_CLAIMS = 20  # `status` shows the first claims (live and contested first); `claims` has all

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


PAGE = 50  # what a listing shows by default: the newest rows, with a line saying how many more


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


OPEN_ERRORS_SHOWN = 30  # ladders `status` lists; `errors --open` has them all


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
    found = db.rows(
        conn,
        f"WITH wanted (session_id, ladder_key) AS (VALUES {wanted})"
        " SELECT e.session_id, e.tool_name, e.error_category,"
        " coalesce(e.command, e.file_path, e.signature) AS what,"
        " max(e.attempt_number) AS attempts, max(e.occurred_at) AS last_at,"
        " CASE WHEN max(e.resolution = 'abandoned') THEN 'abandoned' ELSE 'open' END AS state"
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
    """Where a ladder stands after `attempts` failures, in words."""
    from ..core.errors import DENY_FROM, RESEARCH_AT, USER_AT

    if attempts >= DENY_FROM:
        return f"{attempts} (edits may be refused)"
    if attempts >= USER_AT:
        return f"{attempts} (ask the user)"
    if attempts == RESEARCH_AT:
        return f"{attempts} (research)"
    return f"{attempts} (retry)"


def errors_query(*, open_only: bool = False) -> Query:
    """Every failure, newest first, with its ladder step and resolution; `open_only`: the
    unfixed ones (abandoned by an ended session included), as `status` and the context."""
    unfixed = f"{readings.UNFIXED} AND interrupted = 0"
    where = unfixed if open_only else "1"
    left_out = None
    if open_only:
        left_out = Hidden(
            f"SELECT 1 FROM error_log WHERE NOT coalesce({unfixed}, 0)",
            "errors fixed, or calls interrupted",
        )
    # Each entry with what its climb of the ladder cost (core/readings.py: from the climb's
    # first failure until it was fixed or abandoned, or now): the same on each of its entries.
    spent = readings.spent_columns("w.session_id", "w.spent_from", "w.spent_to")
    return Query(
        "SELECT id, session_id, agent_id, tool_name, error_category, attempt_number,"
        " resolution, interrupted, coalesce(command, file_path, signature) AS what, command,"
        " file_path, exit_code, task_id, error_message, occurred_at,"
        # escalated (by an earlier version, a time was written): not resolved
        " CASE WHEN resolution IN ('auto_fixed', 'abandoned') THEN resolved_at END"
        " AS resolved_at,"
        f" {spent} FROM (SELECT e.*, {readings.climb_columns('e')} FROM error_log e"
        f" WHERE {where}) w ORDER BY id DESC",
        (),
        f"SELECT 1 FROM error_log WHERE {where}",
        left_out,
    )


def errors(
    conn: apsw.Connection, *, open_only: bool = False, limit: int = 200
) -> list[dict[str, Any]]:
    return page(conn, errors_query(open_only=open_only), limit).rows


def failed_paths_query(*, include_all: bool = False) -> Query:
    """Failed paths, newest first: by default the ones still shown to agents."""
    shown = "still_relevant = 1 AND (expires_at IS NULL OR expires_at > ?1)"
    where = "1" if include_all else shown
    params: tuple[Any, ...] = () if include_all else (time.time(),)
    # What each approach cost, from its first failure until it was recorded (core/readings.py).
    spent = readings.spent_columns("w.session_id", "w.spent_from", "w.spent_to")
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


HOOK_RUNS_WINDOW = 1000  # the run summary covers the latest runs: no pass over the whole audit


def hook_runs(conn: apsw.Connection) -> dict[str, Any]:
    """The latest hook runs (at most HOOK_RUNS_WINDOW, by id through the primary key): how
    many were duplicates or replayed, their mean time by our own clock (the hook's own timer,
    from its start to its answer: not what Claude Code measures around it, which `hooks`
    reads), the last one."""
    summary = db.rows(
        conn,
        "SELECT count(*) AS runs, sum(outcome = 'duplicate') AS duplicates,"
        " sum(outcome = 'spooled') AS replayed_from_spool, round(avg(duration_ms), 1)"
        " AS mean_duration_ms, max(started_at) AS last_run_at"
        " FROM (SELECT * FROM hook_events ORDER BY id DESC LIMIT ?)",
        (HOOK_RUNS_WINDOW,),
    )[0]
    return (
        {"latest_runs": summary.pop("runs")}
        | summary
        | {"mean_duration_clock": "ours: claude-session's own hook timer, inside the hook"}
    )


def events_query(
    *,
    session: str | None = None,
    event: str | None = None,
    tool: str | None = None,
    agent: str | None = None,
    payload: bool = False,
) -> Query:
    """Matching events, newest first. A session prefix is a range of the session index
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
        f"SELECT id, received_at, session_id, hook_event_name AS event, tool_name, agent_id,"
        f" tool_use_id, payload_bytes, via{extra} FROM events {clause} ORDER BY id DESC",
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


def daemon_state(root: str) -> dict[str, Any]:
    from .background import daemon_control

    pid = daemon_control.running_pid(root)
    state: dict[str, Any] = {"running": pid is not None, "pid": pid}
    try:
        fd = os.open(daemon_control.status_path(root), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="utf-8") as f:
            details = json.load(f)
    except (OSError, ValueError):
        return state
    if pid is not None:
        state.update(details)
    return state


def latest_session(conn: apsw.Connection) -> str | None:
    found = db.rows(conn, "SELECT session_id FROM sessions ORDER BY last_activity_at DESC LIMIT 1")
    return found[0]["session_id"] if found else None


def trust_report(root: str) -> dict[str, str]:
    """Trusted, or why not, for the database and the configuration."""
    from . import configuration

    state = configuration.trust_state(root)
    return {kind: problem or "trusted" for kind, problem in state.items()}
