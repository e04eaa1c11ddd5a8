"""Cost where people look: per session, agent, turn and frame, and the running total over
time, for the web page and the library (`Project`): the figures `cost` gives
(services/cost/costs.py), each where it belongs."""

from __future__ import annotations

import bisect
import json
from typing import Any

import apsw

from ...core import db
from .costs import TOKEN_SUM, TOKENS, UNATTRIBUTED, report


def _figures(found: dict[str, Any]) -> dict[str, Any]:
    return {
        "cost_usd": found["cost_usd"],
        "tokens": found["tokens"] or 0,
        "messages": found["messages"] or 0,
    }


def session_figures(conn: apsw.Connection, session: str | None = None) -> dict[str, Any]:
    """Per session (or the one given): cost_usd as `cost` shows it (Claude Code's total where
    it has one), tokens, messages, cost_source (whose figures: named apart from a session's
    own `source`, how it started)."""
    found = report(conn, "session", session)["rows"]
    return {
        str(r["session_id"]): {
            "cost_usd": r["cost_usd"],
            "tokens": sum(r[t] or 0 for t in TOKENS if t != "thinking_tokens"),
            "messages": r["messages"],
            "cost_source": r["source"],
            "estimated": r["estimated"],  # part of it for a model no price is known for
        }
        for r in found
    }


def agent_figures(conn: apsw.Connection, session_id: str) -> dict[str, dict[str, Any]]:
    """Per agent of a session (the session id for the main thread): its own responses' cost,
    tokens and count (a subagent's are not its parent's)."""
    found = db.rows(
        conn,
        f"SELECT m.agent_id, sum(m.cost_usd) AS cost_usd, sum({TOKEN_SUM}) AS tokens,"
        " count(*) AS messages FROM message_usage m WHERE m.session_id = ? GROUP BY m.agent_id",
        (session_id,),
    )
    return {str(r["agent_id"]): _figures(r) for r in found}


def turn_figures(conn: apsw.Connection, session_id: str) -> list[dict[str, Any]]:
    """The session's turns with their answer (result_text) and their responses' cost and
    tokens (a subagent's count in the turn of the call that launched it)."""
    return db.rows(
        conn,
        "SELECT t.turn_no AS turn, t.prompt, t.result_text, t.status, t.started_at, t.ended_at,"
        f" count(m.message_id) AS messages, sum({TOKEN_SUM}) AS tokens,"
        " sum(m.cost_usd) AS cost_usd FROM turns t LEFT JOIN message_usage m"
        " ON m.session_id = t.session_id AND m.turn_id = t.id WHERE t.session_id = ?"
        " GROUP BY t.id ORDER BY t.turn_no",
        (session_id,),
    )


def cumulative(conn: apsw.Connection, session_id: str) -> list[tuple[float, float]]:
    """(time, cost so far) after each priced response of the session, in time order: the
    chart of cost over the session. What no transcript carries has no time: it is
    `not_in_transcripts`."""
    found = db.rows(
        conn,
        "SELECT at, cost_usd FROM message_usage WHERE session_id = ? AND agent_id != ?"
        " AND at IS NOT NULL AND cost_usd IS NOT NULL ORDER BY at",
        (session_id, UNATTRIBUTED),
    )
    points, total = [], 0.0
    for r in found:
        total += float(r["cost_usd"])
        points.append((float(r["at"]), total))
    return points


def not_in_transcripts(conn: apsw.Connection, session_id: str) -> float:
    """What the session's cost holds that no transcript line carries (Claude Code's helpers:
    compaction summaries, other internal requests; `cost` shows it as the row
    `(not in transcripts)`): 0.0 when nothing."""
    found = conn.execute(
        "SELECT sum(cost_usd) FROM message_usage WHERE session_id = ? AND agent_id = ?",
        (session_id, UNATTRIBUTED),
    ).fetchall()
    return float(found[0][0] or 0.0)


def frame_figures(conn: apsw.Connection, session_id: str) -> dict[int, dict[str, Any]]:
    """Per frame of the session: the responses between the frame before it and this one.

    A response that asked for a tool call with a frame of its own belongs to that frame (the
    first, if it asked for several); any other to the first frame at or after its time in
    its own agent's lane, else in the session's. A frame no response belongs to is not in
    the answer; nor is a response after the last frame (the session goes on)."""
    frames = db.rows(
        conn,
        "SELECT frame_no, created_at, agent_id, tool_use_id FROM frames WHERE session_id = ?"
        " ORDER BY created_at, frame_no",
        (session_id,),
    )
    if not frames:
        return {}
    by_tool: dict[str, int] = {}
    lanes: dict[str, list[tuple[float, int]]] = {}
    every: list[tuple[float, int]] = []
    for f in frames:
        number = int(f["frame_no"])
        if f["tool_use_id"]:
            by_tool.setdefault(str(f["tool_use_id"]), number)
        point = (float(f["created_at"]), number)
        if f["agent_id"]:  # a frame of claude-session's own (a revert) is in no lane
            lanes.setdefault(str(f["agent_id"]), []).append(point)
        every.append(point)
    found: dict[int, dict[str, Any]] = {}
    for m in db.rows(
        conn,
        f"SELECT agent_id, tool_uses, at, cost_usd, {TOKEN_SUM} AS tokens FROM message_usage m"
        " WHERE session_id = ?",
        (session_id,),
    ):
        target = _frame_of(m, by_tool, lanes.get(str(m["agent_id"]), []), every)
        if target is None:
            continue
        into = found.setdefault(target, {"cost_usd": None, "tokens": 0, "messages": 0})
        if m["cost_usd"] is not None:
            into["cost_usd"] = (into["cost_usd"] or 0.0) + float(m["cost_usd"])
        into["tokens"] += int(m["tokens"] or 0)
        into["messages"] += 1
    return found


def _frame_of(
    message: dict[str, Any],
    by_tool: dict[str, int],
    lane: list[tuple[float, int]],
    every: list[tuple[float, int]],
) -> int | None:
    try:
        calls = json.loads(str(message["tool_uses"] or "{}"))
    except ValueError:
        calls = {}
    framed = [by_tool[c] for c in calls if c in by_tool] if isinstance(calls, dict) else []
    if framed:
        return min(framed)
    if not isinstance(message["at"], int | float):
        return None
    at = float(message["at"])
    for points in (lane, every):
        i = bisect.bisect_left(points, (at, -1))
        if i < len(points):
            return points[i][1]
    return None
