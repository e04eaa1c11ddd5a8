"""What sessions, turns, agents, tools, models and days cost: message_usage grouped, with
Claude Code's own totals beside it (the read side of core/usage.py, for `cost` and `status`).

What Claude Code used that no transcript line holds (its own helper requests: the compaction
summariser, titles, recaps; core/usage.py keeps it as rows of agent HELPERS, per model) is the
row `(not in transcripts)` when grouping by turn, agent, tool or day; by session and by model
it is in its session's and model's row, so tokens per model equal Claude Code's modelUsage.
Whose response is whose, and what it cost, is core/accounting's rule.
"""

from __future__ import annotations

import json
from typing import Any

import apsw

from ...core import db, readings, usage
from ...core.transcript_values import MAX_COST_USD

GROUPS = ("session", "turn", "agent", "tool", "model", "day")
UNATTRIBUTED = usage.HELPERS
# How `cost --by agent` names that row (type and task).
HELPER_TYPE = "Claude Code helpers"
HELPER_TASK = "compaction summaries, other internal requests"  # modelUsage less what was read
# The groupings where those rows are one row of their own, not in the groups.
_APART = ("turn", "agent", "tool", "day")
_NOT_HELPERS = f" AND m.agent_id != '{usage.HELPERS}'"
TOKENS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "thinking_tokens",
)
_SUMS = (
    f"count(DISTINCT CASE WHEN m.agent_id != '{usage.HELPERS}' THEN m.agent_id || ' ' ||"
    " m.message_id END) AS messages, "
    + ", ".join(f"sum(m.{t}) AS {t}" for t in TOKENS)
    + ", sum(m.cost_usd) AS cost_usd, group_concat(DISTINCT m.cost_source) AS sources,"
    " sum(m.cost_usd IS NULL) AS unpriced, sum(m.estimated) AS estimated_n"
)
# Per tool call: a message's tokens and cost shared evenly by the calls it requested.
_SHARES = (
    "count(j.key) AS calls, count(DISTINCT m.agent_id || ' ' || m.message_id) AS messages, "
    + ", ".join(f"sum(m.{t} * 1.0 / max(1, n.calls)) AS {t}" for t in TOKENS)
    + ", sum(m.cost_usd / max(1, n.calls)) AS cost_usd,"
    " group_concat(DISTINCT m.cost_source) AS sources, sum(m.cost_usd IS NULL) AS unpriced,"
    " sum(m.estimated) AS estimated_n"
)
_GROUPED = {
    "session": (
        "m.session_id",
        "m.session_id AS session_id, min(m.at) AS started_at, max(m.at) AS last_at, "
        "group_concat(DISTINCT m.model) AS models",
        "",
        "last_at DESC, session_id",
    ),
    "turn": (
        "m.session_id, m.turn_id",
        "m.session_id AS session_id, t.turn_no AS turn, t.prompt AS prompt, "
        "t.result_text AS result_text, min(m.at) AS started_at",
        " LEFT JOIN turns t ON t.id = m.turn_id",
        "started_at DESC, session_id, turn DESC",
    ),
    "agent": (
        "m.session_id, m.agent_id",
        "m.session_id AS session_id, CASE WHEN m.agent_id = m.session_id THEN 'main'"
        " ELSE m.agent_id END AS agent, coalesce(a.agent_type, CASE WHEN m.agent_id ="
        " m.session_id THEN 'main' END) AS type, a.description AS task, min(m.at) AS started_at",
        " LEFT JOIN agent_registry a ON a.id = m.agent_id",
        "cost_usd DESC, started_at DESC",
    ),
    "model": ("m.model", "m.model AS model", "", "cost_usd DESC, model"),
    "day": ("day", "date(m.at, 'unixepoch', 'localtime') AS day", "", "day DESC"),
}
# The same from the per-session rollups (core/usage.py keeps them), for every session at once:
# a few rows per session, never a read of every response.
_ROLLED_SUMS = (
    "sum(m.messages) AS messages, "
    + ", ".join(f"sum(m.{t}) AS {t}" for t in TOKENS)
    + ", sum(m.cost_usd) AS cost_usd, rtrim(CASE WHEN sum(m.claude_code_n) THEN 'claude_code,'"
    " ELSE '' END || CASE WHEN sum(m.price_table_n) THEN 'price_table,' ELSE '' END, ',')"
    " AS sources, sum(m.unpriced_n) AS unpriced, sum(m.estimated_n) AS estimated_n"
)
_ROLLED = {
    "session": (
        "m.session_id",
        "m.session_id AS session_id, min(m.first_at) AS started_at, max(m.last_at) AS last_at,"
        " group_concat(DISTINCT m.model) AS models",
        "",
        "last_at DESC, session_id",
    ),
    "agent": (
        "m.session_id, m.agent_id",
        "m.session_id AS session_id, CASE WHEN m.agent_id = m.session_id THEN 'main'"
        " ELSE m.agent_id END AS agent, coalesce(a.agent_type, CASE WHEN m.agent_id ="
        " m.session_id THEN 'main' END) AS type, a.description AS task,"
        " min(m.first_at) AS started_at",
        " LEFT JOIN agent_registry a ON a.id = m.agent_id",
        "cost_usd DESC, started_at DESC",
    ),
    "model": ("m.model", "m.model AS model", "", "cost_usd DESC, model"),
    "day": (
        "day",
        "date(m.quarter * 900, 'unixepoch', 'localtime') AS day",
        "",
        "day DESC",
    ),
    "tool": (
        "m.tool",
        "m.tool AS tool, sum(m.calls) AS calls",
        "",
        "cost_usd DESC, tool",
    ),
}


def report(
    conn: apsw.Connection,
    by: str,
    session: str | None = None,
    since: float | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """Rows grouped `by` (the first `limit`: newest first by session, turn and day, largest
    first by agent, tool and model; `groups`, how many there are in all), their total (of
    every group, shown or not), and Claude Code's own figures for the sessions in it.

    Every session at once (no `session`, no `since`) is summed from the per-session rollups
    (session_usage, session_tool_usage), not from every response; the newest turns from the
    newest sessions' responses only."""
    where, params = _filter(session, since)
    rolled = session is None and since is None
    apart = _NOT_HELPERS if by in _APART else ""
    if rolled and by == "turn" and limit is not None:
        rows = _newest_turns(conn, limit)
        groups = int(
            db.rows(
                conn,
                "SELECT coalesce(sum(turns), 0) AS n FROM (SELECT max(turns) AS turns"
                " FROM session_usage GROUP BY session_id)",
            )[0]["n"]
        )
    elif rolled and by != "turn":
        group, columns, join, order = _ROLLED[by]
        table = "session_tool_usage" if by == "tool" else "session_usage"
        own = f" WHERE 1{apart}" if table == "session_usage" else ""  # tools: kept apart
        rows = db.rows(
            conn,
            f"SELECT {columns}, {_ROLLED_SUMS} FROM {table} m{join}{own} GROUP BY {group}"
            f" ORDER BY {order}",
        )
        groups = len(rows)
    else:
        rows = _grouped(conn, by, where + apart, params)
        groups = len(rows)
    calls = sum(r["calls"] for r in rows if r.get("calls"))
    if limit is not None:
        rows = rows[:limit]
    totals = claude_code(conn, where, params, rolled)
    if by == "session":
        for row in rows:
            row["cost_usd"] = row["cost_usd"] or 0.0
            if row["session_id"] in totals:
                row["claude_code_usd"] = totals[row["session_id"]]
    elif by in _APART:  # by model and session, the helpers are in their model's row
        helpers = _helper_sums(conn, where, params, rolled)
        if any(helpers[t] for t in TOKENS):
            rows.append(_unattributed_row(by, helpers))
    for row in rows:
        row["source"] = source(row.pop("sources", None), row.pop("unpriced", 0))
        row["estimated"] = bool(row.pop("estimated_n", 0))
    if rolled:
        summed = db.rows(conn, f"SELECT {_ROLLED_SUMS} FROM session_usage m")[0]
    else:
        summed = db.rows(conn, f"SELECT {_SUMS} FROM message_usage m WHERE{where}", params)[0]
    whole = {k: summed[k] or 0 for k in ("messages", *TOKENS)}
    whole["cost_usd"] = summed["cost_usd"] or 0.0
    whole["source"] = source(summed["sources"], summed["unpriced"])
    whole["estimated"] = bool(summed["estimated_n"])
    if by == "tool":
        whole["calls"] = calls
    return {
        "by": by,
        "session_id": session,
        "since": since,
        "rows": rows,
        "groups": groups,
        "total": whole,
        "claude_code_total_usd": sum(totals.values()) if totals else None,
        "price_table_models": price_table_models(conn, where, params, rolled),
        "estimated_models": estimated_models(conn, where, params, rolled),
    }


def _grouped(conn: apsw.Connection, by: str, where: str, params: list[Any]) -> list[dict[str, Any]]:
    """The groups read from the responses themselves (one session, or since a time)."""
    if by == "tool":
        return db.rows(
            conn,
            "WITH n AS (SELECT session_id, agent_id, message_id, (SELECT count(*) FROM"
            " json_each(tool_uses)) AS calls FROM message_usage m WHERE" + where + ")"
            " SELECT coalesce(j.value, '(no tool: text)') AS tool, " + _SHARES + " FROM"
            " message_usage m JOIN n USING (session_id, agent_id, message_id)"
            " LEFT JOIN json_each(m.tool_uses) j WHERE" + where + " GROUP BY 1"
            " ORDER BY cost_usd DESC, tool",
            params + params,
        )
    group, columns, join, order = _GROUPED[by]
    return db.rows(
        conn,
        f"SELECT {columns}, {_SUMS} FROM message_usage m{join} WHERE{where}"
        f" GROUP BY {group} ORDER BY {order}",
        params,
    )


def _newest_turns(conn: apsw.Connection, limit: int) -> list[dict[str, Any]]:
    """The `limit` newest turns of every session: the newest sessions' turns, session after
    session, until no older session can hold a turn newer than the `limit`th found (a turn
    starts before its session's last response)."""
    sessions = db.rows(
        conn,
        "SELECT session_id, max(last_at) AS last_at FROM session_usage GROUP BY session_id"
        " ORDER BY last_at IS NULL, last_at DESC",
    )
    found: list[dict[str, Any]] = []
    for i, s in enumerate(sessions):
        found += _grouped(conn, "turn", f" 1 AND m.session_id = ?{_NOT_HELPERS}", [s["session_id"]])
        after = sessions[i + 1]["last_at"] if i + 1 < len(sessions) else None
        bound = float("-inf") if after is None else float(after)
        newer = [r for r in found if r["started_at"] is not None and r["started_at"] >= bound]
        if len(newer) >= limit:
            break
    found.sort(key=lambda r: (r["started_at"] is None, -(r["started_at"] or 0.0)))
    return found


def judge_spend(conn: apsw.Connection, session: str | None, since: float | None) -> dict[str, Any]:
    """claude-session's own spend, apart from the user's: what the judge's calls cost, as its
    command reported them (llm_verdicts.cost_usd), in the same selection."""
    where, params = _filter(session, since, "session_id", "created_at")
    found = db.rows(
        conn,
        "SELECT coalesce(sum(cost_usd), 0.0) AS usd, count(cost_usd) AS calls"
        f" FROM llm_verdicts WHERE{where}",
        params,
    )[0]
    return {"cost_usd": float(found["usd"]), "calls": int(found["calls"])}


def _filter(
    session: str | None,
    since: float | None,
    session_column: str = "m.session_id",
    time_column: str = "m.at",
) -> tuple[str, list[Any]]:
    """A WHERE clause (after `WHERE`) selecting one session and/or rows since a time."""
    where: str = " 1"
    params: list[Any] = []
    if session is not None:
        where += f" AND {session_column} = ?"
        params.append(session)
    if since is not None:
        where += f" AND {time_column} >= ?"
        params.append(since)
    return where, params


def claude_code(
    conn: apsw.Connection, where: str, params: list[Any], rolled: bool = False
) -> dict[str, float]:
    """Per session in the selection: what Claude Code's own figures say it spent (its
    processes' spend, core/accounting: a fork's and a resume's share of what they continue is
    not theirs)."""
    found = (
        db.rows(
            conn,
            "SELECT session_id, sum(claude_code_usd) AS carried FROM session_usage"
            " WHERE claude_code_n > 0 GROUP BY session_id",
        )
        if rolled
        else db.rows(
            conn,
            "SELECT m.session_id, sum(m.cost_usd) AS carried FROM message_usage m WHERE"
            + where
            + " AND m.cost_source = 'claude_code' GROUP BY m.session_id",
            params,
        )
    )
    return {
        str(r["session_id"]): float(r["carried"])
        for r in found
        if isinstance(r["carried"], int | float) and 0 <= r["carried"] < MAX_COST_USD
    }


def estimated_models(
    conn: apsw.Connection, where: str, params: list[Any], rolled: bool = False
) -> list[str]:
    """The models of the selection whose cost is an estimate: neither Claude Code nor our
    table knows their price (the default tier's was taken)."""
    return _models(conn, where, params, rolled, "estimated_n > 0", "m.estimated")


def price_table_models(
    conn: apsw.Connection, where: str, params: list[Any], rolled: bool = False
) -> list[str]:
    """The models of the selection priced from our own table (Claude Code gave no figure)."""
    return _models(
        conn, where, params, rolled, "price_table_n > 0", "m.cost_source = 'price_table'"
    )


def _models(
    conn: apsw.Connection,
    where: str,
    params: list[Any],
    rolled: bool,
    in_rollup: str,
    in_responses: str,
) -> list[str]:
    """The models of the selection whose rows meet a condition: of the rollups (`rolled`,
    every session) or of the responses themselves."""
    if rolled:
        query = f"SELECT DISTINCT model FROM session_usage WHERE {in_rollup}"
        found = db.rows(conn, query + " AND model IS NOT NULL ORDER BY 1")
    else:
        query = f"SELECT DISTINCT m.model FROM message_usage m WHERE{where} AND {in_responses}"
        found = db.rows(conn, query + " AND m.model IS NOT NULL ORDER BY 1", params)
    return [str(r["model"]) for r in found]


def _helper_sums(
    conn: apsw.Connection, where: str, params: list[Any], rolled: bool
) -> dict[str, Any]:
    """The tokens and cost of the helpers' rows in the selection (core/usage.HELPERS)."""
    helpers = f" AND m.agent_id = '{usage.HELPERS}'"
    if rolled:
        return db.rows(conn, f"SELECT {_ROLLED_SUMS} FROM session_usage m WHERE 1{helpers}")[0]
    return db.rows(conn, f"SELECT {_SUMS} FROM message_usage m WHERE{where}{helpers}", params)[0]


def _unattributed_row(by: str, helpers: dict[str, Any]) -> dict[str, Any]:
    """One row for what no transcript line holds: the helpers' tokens and cost (`helpers`,
    summed)."""
    label = {"turn": "prompt", "agent": "agent", "tool": "tool", "model": "model"}.get(by, by)
    row: dict[str, Any] = {label: UNATTRIBUTED, "messages": 0}
    if by == "agent":
        row |= {"type": HELPER_TYPE, "task": HELPER_TASK}
    elif by == "tool":
        row["calls"] = 0
    row |= {t: helpers.get(t) or 0 for t in TOKENS}
    return row | {
        "cost_usd": helpers.get("cost_usd") or 0.0,
        "sources": helpers.get("sources") or "claude_code",
        "unpriced": helpers.get("unpriced") or 0,
        "estimated_n": helpers.get("estimated_n") or 0,
    }


def source(sources: object, unpriced: object) -> str:
    """Where a row's cost comes from: claude_code, price_table, mixed, or none."""
    found = set(str(sources).split(",")) if sources else set()
    if unpriced:
        found.add("none")
    if not found:
        return "none"
    return found.pop() if len(found) == 1 else "mixed"


def latest(conn: apsw.Connection) -> dict[str, Any]:
    """The latest session's cost and tokens, for `status` (session_id None: none read yet)."""
    found = db.rows(
        conn,
        "SELECT s.session_id FROM sessions s WHERE EXISTS (SELECT 1 FROM message_usage m"
        " WHERE m.session_id = s.session_id) ORDER BY s.last_activity_at DESC LIMIT 1",
    )
    if not found:
        return {"session_id": None}
    session = str(found[0]["session_id"])
    done = report(conn, "session", session)
    summed = done["total"]
    return {
        "session_id": session,
        "cost_usd": summed["cost_usd"],
        "tokens": sum(summed[t] for t in TOKENS if t != "thinking_tokens"),
        "messages": summed["messages"],
        "source": done["rows"][0]["source"] if done["rows"] else "none",
        "estimated": summed["estimated"],
        "dead_ends": dead_ends(conn, session, total=summed["cost_usd"]),
    }


def transcript_state(conn: apsw.Connection) -> dict[str, Any]:
    """The transcripts read: how many, and those that could not be read last time, split by
    whether their session is live (a problem) or over (a file gone with an old session is
    information, not a failure). An internal helper's, never written, is neither."""
    found = db.rows(
        conn,
        "SELECT f.path, f.session_id, f.last_error, s.status FROM transcript_files f"
        " LEFT JOIN sessions s USING (session_id) WHERE f.last_error IS NOT NULL"
        # an internal helper's file never existed (recorded as missing before we knew)
        " AND NOT (f.last_error LIKE 'missing:%' AND EXISTS (SELECT 1 FROM agent_registry a"
        " WHERE a.id = f.agent_id AND a.is_internal = 1))"
        " ORDER BY f.updated_at DESC LIMIT 50",
    )
    total = db.rows(conn, "SELECT count(*) AS n FROM transcript_files")[0]["n"]
    live = [
        f"{r['last_error']} (session {str(r['session_id'])[:8]})"
        for r in found
        if r["status"] == "active"
    ]
    old = [r for r in found if r["status"] != "active"]
    return {"files": total, "live_problems": live, "old_unreadable": len(old)}


def unread(summary: dict[str, Any]) -> list[str]:
    """What a catch-up of the transcripts could not read, one line each, for people (`cost`,
    `hooks`): a file once read and since deleted is gone (what was read from it stays
    counted); one never found was never there to read, which is no loss, said once and not
    as one."""
    never = set(summary.get("never_read") or [])
    gone = [p for p in summary.get("missing") or [] if p not in never]
    lines = [
        f"{len(found)} transcript(s) {what}: {found[0]}"
        for found, what in (
            (gone, "gone (read before, deleted since: what was read from them still counts)"),
            (summary.get("refused") or [], "refused"),
            (summary.get("unreadable") or [], "unreadable"),
        )
        if found
    ]
    if never:
        first = next(p for p in summary["missing"] if p in never)
        lines.append(
            f"no transcript recorded at {first}"
            + (f" (and {len(never) - 1} more)" if len(never) > 1 else "")
            + ": Claude Code wrote none there, so there is no cost to read from it"
        )
    return lines


# The tokens a response used, as `status` counts them (thinking is part of output).
TOKEN_SUM = readings.SPENT_TOKENS  # one sum of a response's tokens, the dead ends' too


# --- dead ends: what went to errors never fixed and approaches that failed ------------------


def dead_ends(
    conn: apsw.Connection,
    session_id: str,
    since: float | None = None,
    total: float | None = None,
) -> dict[str, Any] | None:
    """What the session spent on dead ends: the climbs of its error ladders that were never
    fixed (abandoned, or still open) and its failed approaches not resolved since, each over
    its climb's window and by the agents that climbed it (see core/readings.py: from the
    first failure to the last; one recorded by hand has none). A response inside several
    windows counts once. `total`: the session's cost, for the share. None when none of the
    session's usage was read."""
    messages = db.rows(
        conn,
        f"SELECT m.at, m.agent_id, {TOKEN_SUM} AS tokens, m.cost_usd FROM message_usage m"
        " WHERE m.session_id = ?" + ("" if since is None else " AND m.at >= ?"),
        (session_id,) if since is None else (session_id, since),
    )
    if not messages and not db.rows(
        conn, "SELECT 1 FROM message_usage WHERE session_id = ? LIMIT 1", (session_id,)
    ):
        return None
    climbs = db.rows(
        conn,
        "SELECT DISTINCT w.climb_id, w.spent_from, w.spent_to, w.climbers FROM (SELECT"
        f" {readings.climb_columns('e')} FROM error_log e WHERE e.session_id = ?"
        " AND e.interrupted = 0) w WHERE w.spent_from IS NOT NULL"
        " AND (w.climb_end IS NULL OR w.climb_end = 'abandoned')",
        (session_id,),
    )
    paths = db.rows(
        conn,
        f"SELECT {readings.FAILED_PATH_WINDOW}{readings.FAILED_PATH_WINDOW_FROM}"
        " WHERE f.session_id = ? AND f.still_relevant = 1",  # a resolved one was no dead end
        (session_id,),
    )
    windows = [
        (
            float(w["spent_from"]),
            float("inf") if w["spent_to"] is None else float(w["spent_to"]),
            set(json.loads(w["climbers"] or "[]")),
        )
        for w in [*climbs, *paths]
        if w["spent_from"] is not None
    ]
    inside = [
        m
        for m in messages
        if m["at"] is not None
        and any(a <= float(m["at"]) <= b and m["agent_id"] in who for a, b, who in windows)
    ]
    priced = [float(m["cost_usd"]) for m in inside if m["cost_usd"] is not None]
    cost = sum(priced) if priced or not inside else None
    return {
        "cost_usd": cost,
        "tokens": sum(int(m["tokens"] or 0) for m in inside),
        "messages": len(inside),
        "share": cost / total if cost is not None and total else None,
        "errors": len(climbs),
        "failed_paths": len(paths),
    }
