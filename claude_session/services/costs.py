"""What sessions, turns, agents, tools, models and days cost: message_usage grouped, with
Claude Code's own totals beside it (the read side of core/usage.py, for `cost` and `status`).

A session's cost that no message carries (a model Claude Code billed whose responses are in
no transcript we read: a title, a summary) is its total minus the messages' Claude Code shares:
shown as the row `(not in transcripts)`, so the totals equal Claude Code's figure.
"""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Any

import apsw

from ..core import db

GROUPS = ("session", "turn", "agent", "tool", "model", "day")
UNATTRIBUTED = "(not in transcripts)"
TOKENS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "thinking_tokens",
)
_SUMS = (
    "count(DISTINCT m.agent_id || ' ' || m.message_id) AS messages, "
    + ", ".join(f"sum(m.{t}) AS {t}" for t in TOKENS)
    + ", sum(m.cost_usd) AS cost_usd, group_concat(DISTINCT m.cost_source) AS sources,"
    " sum(m.cost_usd IS NULL) AS unpriced"
)
# Per tool call: a message's tokens and cost shared evenly by the calls it requested.
_SHARES = (
    "count(j.key) AS calls, count(DISTINCT m.agent_id || ' ' || m.message_id) AS messages, "
    + ", ".join(f"sum(m.{t} * 1.0 / max(1, n.calls)) AS {t}" for t in TOKENS)
    + ", sum(m.cost_usd / max(1, n.calls)) AS cost_usd,"
    " group_concat(DISTINCT m.cost_source) AS sources, sum(m.cost_usd IS NULL) AS unpriced"
)
_GROUPED = {
    "session": (
        "m.session_id",
        "m.session_id AS session_id, min(m.at) AS started_at, max(m.at) AS last_at, "
        "group_concat(DISTINCT m.model) AS models",
        "",
        "last_at DESC",
    ),
    "turn": (
        "m.session_id, m.turn_id",
        "m.session_id AS session_id, t.turn_no AS turn, t.prompt AS prompt, "
        "min(m.at) AS started_at",
        " LEFT JOIN turns t ON t.id = m.turn_id",
        "started_at",
    ),
    "agent": (
        "m.session_id, m.agent_id",
        "m.session_id AS session_id, CASE WHEN m.agent_id = m.session_id THEN 'main'"
        " ELSE m.agent_id END AS agent, coalesce(a.agent_type, CASE WHEN m.agent_id ="
        " m.session_id THEN 'main' END) AS type, a.description AS task, min(m.at) AS started_at",
        " LEFT JOIN agent_registry a ON a.id = m.agent_id",
        "started_at",
    ),
    "model": ("m.model", "m.model AS model", "", "cost_usd DESC"),
    "day": ("day", "date(m.at, 'unixepoch', 'localtime') AS day", "", "day"),
}


def since_time(value: str, now: float | None = None) -> float:
    """`90m`, `2h`, `3d`, `1w` ago, or a local date (`2026-11-01`) or time (ISO 8601)."""
    now = time.time() if now is None else now
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", value)
    if found:
        unit = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}[found.group(2)]
        return now - float(found.group(1)) * unit
    try:
        return datetime.fromisoformat(value.strip()).timestamp()
    except ValueError:
        raise ValueError(
            f"{value!r} is neither a duration (90m, 2h, 3d, 1w) nor a date (2026-11-01)"
        ) from None


def report(
    conn: apsw.Connection, by: str, session: str | None = None, since: float | None = None
) -> dict[str, Any]:
    """Rows grouped `by`, their total, and Claude Code's own figures for the sessions in it."""
    where, params = _filter(session, since)
    if by == "tool":
        rows = db.rows(
            conn,
            "WITH n AS (SELECT session_id, agent_id, message_id, (SELECT count(*) FROM"
            " json_each(tool_uses)) AS calls FROM message_usage m WHERE" + where + ")"
            " SELECT coalesce(j.value, '(no tool: text)') AS tool, " + _SHARES + " FROM"
            " message_usage m JOIN n USING (session_id, agent_id, message_id)"
            " LEFT JOIN json_each(m.tool_uses) j WHERE" + where + " GROUP BY 1"
            " ORDER BY cost_usd DESC",
            params + params,
        )
    else:
        group, columns, join, order = _GROUPED[by]
        rows = db.rows(
            conn,
            f"SELECT {columns}, {_SUMS} FROM message_usage m{join} WHERE{where}"
            f" GROUP BY {group} ORDER BY {order}",
            params,
        )
    claude = claude_code(conn, where, params)
    extra = claude["unattributed"]
    if by == "session":
        for row in rows:
            row["cost_usd"] = (row["cost_usd"] or 0.0) + extra.get(row["session_id"], 0.0)
            if row["session_id"] in claude["totals"]:
                row["claude_code_usd"] = claude["totals"][row["session_id"]]
    elif extra:
        rows.append(_unattributed_row(by, sum(extra.values())))
    for row in rows:
        row["source"] = source(row.pop("sources", None), row.pop("unpriced", 0))
    summed = db.rows(conn, f"SELECT {_SUMS} FROM message_usage m WHERE{where}", params)[0]
    whole = {k: summed[k] or 0 for k in ("messages", *TOKENS)}
    whole["cost_usd"] = (summed["cost_usd"] or 0.0) + sum(extra.values())
    whole["source"] = source(summed["sources"], summed["unpriced"])
    if by == "tool":
        whole["calls"] = sum(r["calls"] for r in rows if r.get("calls"))
    return {
        "by": by,
        "session_id": session,
        "since": since,
        "rows": rows,
        "total": whole,
        "claude_code_total_usd": sum(claude["totals"].values()) if claude["totals"] else None,
        "price_table_models": price_table_models(conn, where, params),
    }


def _filter(session: str | None, since: float | None) -> tuple[str, list[Any]]:
    where: str = " 1"
    params: list[Any] = []
    if session is not None:
        where += " AND m.session_id = ?"
        params.append(session)
    if since is not None:
        where += " AND m.at >= ?"
        params.append(since)
    return where, params


def claude_code(conn: apsw.Connection, where: str, params: list[Any]) -> dict[str, Any]:
    """Per session in the selection: Claude Code's total, and what of it no message carries."""
    found = db.rows(
        conn,
        "SELECT c.session_id, c.total_cost_usd, (SELECT coalesce(sum(cost_usd), 0) FROM"
        " message_usage u WHERE u.session_id = c.session_id AND u.cost_source = 'claude_code')"
        " AS carried FROM session_costs c WHERE c.total_cost_usd IS NOT NULL AND"
        " c.session_id IN (SELECT DISTINCT m.session_id FROM message_usage m WHERE" + where + ")",
        params,
    )
    totals = {str(r["session_id"]): float(r["total_cost_usd"]) for r in found}
    unattributed = {
        str(r["session_id"]): float(r["total_cost_usd"]) - float(r["carried"])
        for r in found
        if float(r["total_cost_usd"]) - float(r["carried"]) > 1e-9
    }
    return {"totals": totals, "unattributed": unattributed}


def price_table_models(conn: apsw.Connection, where: str, params: list[Any]) -> list[str]:
    """The models of the selection priced from our own table (Claude Code gave no figure)."""
    return [
        str(r["model"])
        for r in db.rows(
            conn,
            "SELECT DISTINCT m.model FROM message_usage m WHERE"
            + where
            + " AND m.cost_source = 'price_table' ORDER BY 1",
            params,
        )
    ]


def _unattributed_row(by: str, cost: float) -> dict[str, Any]:
    label = {"turn": "prompt", "agent": "agent", "tool": "tool", "model": "model"}.get(by, by)
    row: dict[str, Any] = {label: UNATTRIBUTED, "messages": 0}
    row |= {t: 0 for t in TOKENS}
    return row | {"cost_usd": cost, "sources": "claude_code", "unpriced": 0}


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
        "SELECT session_id FROM sessions WHERE session_id IN (SELECT session_id FROM"
        " message_usage) ORDER BY last_activity_at DESC LIMIT 1",
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
    }


def transcript_state(conn: apsw.Connection) -> dict[str, Any]:
    """The transcripts read: how many, and those that could not be read last time, split by
    whether their session is live (a problem) or over (a file gone with an old session is
    information, not a failure)."""
    found = db.rows(
        conn,
        "SELECT f.path, f.session_id, f.last_error, s.status FROM transcript_files f"
        " LEFT JOIN sessions s USING (session_id) WHERE f.last_error IS NOT NULL"
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
