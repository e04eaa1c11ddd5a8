"""`claude-session hooks`: every hook that ran, timed by Claude Code (table hook_runs, read
from its transcripts), grouped by command and event.

Definitions (docs/guides/hooks.md says the same):
- median: of the measured runs' durations sorted, the middle one; the mean of the two middle
  ones for an even count (statistics.median);
- p90: nearest rank: the value at position ceil(0.9 * n) of the n durations sorted ascending
  (n = 1: that run; n = 10: the 9th);
- share: the group's total time over the wall time of the sessions (or the turn) shown, from
  claude-session's own records: a session from its first hook to SessionEnd (else its last
  activity), a turn from its prompt to its Stop (else the session's last activity). Hooks of
  one event run side by side, so shares can add up to more than the time waited.
- unmeasured: runs Claude Code wrote without a time (an mcp_tool hook that answered JSON), and
  runs of our own hooks that our records (hook_events) have and no line of Claude Code's names
  (a command hook that printed nothing or JSON): counted, never given a time.
Other hooks that Claude Code did not time are not known at all (except at Stop, whose summary
lists every hook).
- untimed estimate: what the unmeasured runs could add, each taken at the median of the runs
  Claude Code did time in the same report (its basis, stated with it): an estimate, never part
  of the measured total or share. Command hooks that print nothing are most of a session's
  runs under the command transport, so the measured share alone says too little.
- ours: a line naming our hook counts only when our own records have a run of that event in
  that session, started within the hook's timeout before the line, and its durationMs is within
  that timeout (the agent can write lines into its own transcript): else it is left out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

import apsw

from ...core import db, hook_contract, hook_runs

CLOCK = "Claude Code's own durationMs, from its transcripts"
# The runs taken into the figures: a run naming our hook only when our own log has it
# (core/hook_contract.taken_sql; the agent can write lines into its transcript too).
TAKEN = hook_contract.taken_sql("h")
WALL_SOURCE = (
    "claude-session's records: a session from its first hook to SessionEnd (else its last"
    " activity), a turn from its prompt to its Stop"
)
OURS_UNTIMED = "claude-session (runs Claude Code did not time)"


def budget_ms(root: str) -> float:
    """`hook_budget_ms`, as the project's configuration sets it (its default without one)."""
    from .. import config_file

    return float(config_file.load_or_defaults(root).values["hook_budget_ms"])  # type: ignore[arg-type]


def median(values: Sequence[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def p90(values: Sequence[float]) -> float | None:
    """Nearest rank: the ceil(0.9 n)-th smallest."""
    if not values:
        return None
    ordered = sorted(values)
    return float(ordered[max(1, math.ceil(0.9 * len(ordered))) - 1])


def group(
    runs: Sequence[tuple[str, str, bool, float | None]],
    ours_recorded: dict[str, int],
    wall_ms: float | None,
) -> list[dict[str, Any]]:
    """Rows per (command, event), the largest total first, from runs (command, event, ours,
    duration or None); `ours_recorded`: event -> runs of our hooks in our own records, those
    beyond the ones Claude Code timed added as unmeasured."""
    found: dict[tuple[str, str, bool], list[float | None]] = {}
    for command, event, ours, duration in runs:
        found.setdefault((command, event, ours), []).append(duration)
    ours_timed: dict[str, int] = {}
    for (_, event, ours), durations in found.items():
        if ours:
            ours_timed[event] = ours_timed.get(event, 0) + len(durations)
    rows = []
    for (command, event, ours), durations in found.items():
        rows.append(
            _row(
                command,
                event,
                ours,
                [d for d in durations if d is not None],
                len(durations),
                wall_ms,
            )
        )
    for event, recorded in sorted(ours_recorded.items()):
        missing = recorded - ours_timed.get(event, 0)
        if missing > 0:
            rows.append(_row(OURS_UNTIMED, event, True, [], missing, wall_ms))
    rows.sort(key=lambda r: (-(r["total_ms"] or 0.0), -r["runs"], r["event"], r["command"]))
    return rows


def _row(
    command: str, event: str, ours: bool, timed: list[float], runs: int, wall_ms: float | None
) -> dict[str, Any]:
    total = float(sum(timed)) if timed else None
    return {
        "command": command,
        "event": event,
        "ours": ours,
        "runs": runs,
        "measured": len(timed),
        "unmeasured": runs - len(timed),
        "total_ms": total,
        "median_ms": median(timed),
        "p90_ms": p90(timed),
        "max_ms": max(timed) if timed else None,
        "share": total / wall_ms if total is not None and wall_ms else None,
    }


ESTIMATE_BASIS = "the median of the runs Claude Code timed in this report, for each untimed run"


def untimed_estimate(
    timed: Sequence[float], untimed: int, wall_ms: float | None
) -> dict[str, Any] | None:
    """What the `untimed` runs could add to the hooks' time, were each as long as the median
    of the `timed` ones; None without untimed runs or any timed run to base it on."""
    if untimed <= 0 or not timed:
        return None
    basis = float(statistics.median(timed))
    estimated = basis * untimed
    return {
        "estimate": True,  # not a measurement: Claude Code wrote no time for these runs
        "runs": untimed,
        "basis": ESTIMATE_BASIS,
        "basis_runs": len(timed),
        "basis_median_ms": basis,
        "estimated_ms": estimated,
        "share": estimated / wall_ms if wall_ms else None,
    }


def totals(rows: list[dict[str, Any]], wall_ms: float | None) -> dict[str, Any]:
    total = sum(r["total_ms"] or 0.0 for r in rows)
    ours = sum(r["total_ms"] or 0.0 for r in rows if r["ours"])
    return {
        "runs": sum(r["runs"] for r in rows),
        "measured": sum(r["measured"] for r in rows),
        "unmeasured": sum(r["unmeasured"] for r in rows),
        "total_ms": total,
        "ours_ms": ours,
        "others_ms": total - ours,
        "share": total / wall_ms if wall_ms else None,
    }


# --- reading ------------------------------------------------------------------------------

# The turn of a row: by its promptId, else the last turn started before it.
_TURN_OF_RUN = (
    "coalesce((SELECT t.id FROM turns t WHERE t.session_id = h.session_id"
    " AND t.prompt_id = h.prompt_id), (SELECT t.id FROM turns t WHERE t.session_id ="
    " h.session_id AND t.started_at <= h.at ORDER BY t.started_at DESC LIMIT 1))"
)
_TURN_OF_EVENT = (
    "coalesce((SELECT t.id FROM turns t WHERE t.session_id = h.session_id"
    " AND t.prompt_id = e.prompt_id), (SELECT t.id FROM turns t WHERE t.session_id ="
    " h.session_id AND t.started_at <= h.started_at ORDER BY t.started_at DESC LIMIT 1))"
)


def turn_id(conn: apsw.Connection, session_id: str, turn_no: int) -> int | None:
    found = db.rows(
        conn, "SELECT id FROM turns WHERE session_id = ? AND turn_no = ?", (session_id, turn_no)
    )
    return int(found[0]["id"]) if found else None


def wall_ms(conn: apsw.Connection, session_id: str | None, turn: int | None) -> float | None:
    """The wall time of the sessions (or the turn) in milliseconds, from our own records."""
    if turn is not None:
        found = db.rows(
            conn,
            "SELECT (coalesce(t.ended_at, s.last_activity_at) - t.started_at) * 1000 AS ms"
            " FROM turns t JOIN sessions s ON s.session_id = t.session_id WHERE t.id = ?",
            (turn,),
        )
    else:
        where, params = ("WHERE session_id = ?", (session_id,)) if session_id else ("", ())
        found = db.rows(
            conn,
            "SELECT sum(coalesce(ended_at, last_activity_at) - started_at) * 1000 AS ms"
            f" FROM sessions {where}",
            params,
        )
    ms = found[0]["ms"] if found else None
    return float(ms) if isinstance(ms, int | float) and ms > 0 else None


def runs(
    conn: apsw.Connection, session_id: str | None, turn: int | None
) -> list[tuple[str, str, bool, float | None]]:
    """(command, event, ours, duration) of the runs shown: through the session's index when
    there is one (never an `? IS NULL OR` that would read the whole table)."""
    params: list[Any] = [session_id] if session_id else []
    where = f"WHERE {TAKEN}" + (" AND h.session_id = ?" if session_id else "")
    if turn is not None:
        where += f" AND {_TURN_OF_RUN} = ?"
        params.append(turn)
    return [
        (str(r[0]), str(r[1]), bool(r[2]), None if r[3] is None else float(r[3]))
        for r in conn.execute(
            f"SELECT h.command, h.event, h.ours, h.duration_ms FROM hook_runs h {where}", params
        )
    ]


WINDOW_MARGIN = 60.0  # seconds either side of a session's span where its hook runs are looked for


def ours_recorded(
    conn: apsw.Connection, session_id: str | None, turn: int | None
) -> dict[str, int]:
    """event -> runs of our hooks that Claude Code made (not replays of the spool), from our
    own records. One session's are found through the index on their time (hook_events has
    none on the session): within the session's span, then by its id."""
    where = "h.source = 'hook' AND h.dispatcher != 'spool'"
    params: list[Any] = []
    if session_id:
        span = db.rows(
            conn,
            "SELECT started_at, coalesce(ended_at, last_activity_at) AS until FROM sessions"
            " WHERE session_id = ?",
            (session_id,),
        )
        if not span:
            return {}
        where += " AND h.started_at BETWEEN ? AND ? AND h.session_id = ?"
        params += [
            float(span[0]["started_at"]) - WINDOW_MARGIN,
            float(span[0]["until"] or span[0]["started_at"]) + WINDOW_MARGIN,
            session_id,
        ]
    if turn is not None:
        where += f" AND {_TURN_OF_EVENT} = ?"
        params.append(turn)
    return {
        str(r[0]): int(r[1])
        for r in conn.execute(
            "SELECT h.event_type, count(*) FROM hook_events h LEFT JOIN events e"
            f" ON e.id = h.event_id WHERE {where} GROUP BY h.event_type",
            params,
        )
    }


def report(
    conn: apsw.Connection,
    session_id: str | None = None,
    turn_no: int | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """The hooks report of every session, one session, or one turn of a session."""
    turn = None
    if turn_no is not None:
        if session_id is None:
            raise ValueError("a turn is one of a session's: give the session too")
        turn = turn_id(conn, session_id, turn_no)
        if turn is None:
            raise ValueError(f"session {session_id} has no turn {turn_no}")
    wall = wall_ms(conn, session_id, turn)
    shown = runs(conn, session_id, turn)
    rows = group(shown, ours_recorded(conn, session_id, turn), wall)
    total = totals(rows, wall)
    timed = [duration for _, _, _, duration in shown if duration is not None]
    return {
        "session_id": session_id,
        "turn": turn_no,
        "clock": CLOCK,
        "wall_time_ms": wall,
        "wall_time_source": WALL_SOURCE,
        "rows": rows if limit is None else rows[:limit],
        "groups": len(rows),
        "total": total,
        "untimed_estimate": untimed_estimate(timed, total["unmeasured"], wall),
    }


def by_turn(conn: apsw.Connection, session_id: str) -> dict[int, dict[str, float]]:
    """Turn number -> Claude Code's time in its hooks (ours and all), for the web page's
    chart beside the turn's cost."""
    return {
        int(r[0]): {"hooks_ms": float(r[1] or 0.0), "ours_ms": float(r[2] or 0.0)}
        for r in conn.execute(
            "SELECT t.turn_no, sum(x.duration_ms), sum(x.duration_ms * x.ours) FROM"
            f" (SELECT {_TURN_OF_RUN} AS turn, h.duration_ms, h.ours FROM hook_runs h"
            f" WHERE h.session_id = ? AND {TAKEN}) x JOIN turns t ON t.id = x.turn"
            " GROUP BY t.turn_no",
            (session_id,),
        )
    }


def slowest(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The group that took the most time (rows come sorted so)."""
    return rows[0] if rows and rows[0]["total_ms"] else None


def is_ours(command: str) -> bool:
    return command == OURS_UNTIMED or hook_runs.is_ours(command)


def over_budget(rows: list[dict[str, Any]], budget_ms: float) -> list[dict[str, Any]]:
    """The groups whose p90 passes `budget_ms`, the slowest p90 first."""
    found = [r for r in rows if r["p90_ms"] is not None and r["p90_ms"] > budget_ms]
    return sorted(found, key=lambda r: -float(r["p90_ms"]))


def since(conn: apsw.Connection, start: float) -> list[dict[str, Any]]:
    """Rows of the runs timed since `start` (Unix seconds): what `doctor` holds to the
    budget (recent runs, not a pass over a project's whole history)."""
    timed = [
        (str(r[0]), str(r[1]), bool(r[2]), float(r[3]))
        for r in conn.execute(
            "SELECT command, event, ours, duration_ms FROM hook_runs h"
            f" WHERE at >= ? AND duration_ms IS NOT NULL AND {TAKEN}",
            (start,),
        )
    ]
    return group(timed, {}, None)


def latest(conn: apsw.Connection, session_id: str | None, budget_ms: float) -> dict[str, Any]:
    """For `status`: the hooks' time in a session (Claude Code's clock), the group that took
    the most, and those over the budget."""
    if session_id is None:
        return {"session_id": None}
    found = report(conn, session_id)
    top = slowest(found["rows"])
    over = over_budget(found["rows"], budget_ms)
    keep = ("command", "event", "ours", "runs", "total_ms", "p90_ms")
    return {
        "session_id": session_id,
        "clock": CLOCK,
        "budget_ms": budget_ms,
        **found["total"],
        "slowest": {k: top[k] for k in keep} if top else None,
        "over_budget": [{k: r[k] for k in keep} for r in over],
    }


def said(found: dict[str, Any]) -> list[str]:
    """`latest` in a line or two, for people (the status view; the status line has its own)."""
    if not found.get("session_id") or not found.get("measured"):
        return []
    line = f"{fmt_ms(found['total_ms'])} in hooks in the latest session (Claude Code's clock"
    line += f", {found['share']:.1%} of its wall time)" if found.get("share") else ")"
    top = found["slowest"]
    if top:
        whose = "ours" if top["ours"] else "another hook"
        line += f"; slowest: {label(top)} ({top['event']}, {whose}) {fmt_ms(top['total_ms'])}"
    lines = [line]
    if found["over_budget"]:
        worst = found["over_budget"][0]
        lines.append(
            f"{len(found['over_budget'])} hook(s) over hook_budget_ms ({found['budget_ms']:.0f}"
            f" ms) at p90, the worst {label(worst)} ({worst['event']})"
            f" {fmt_ms(worst['p90_ms'])}: `claude-session hooks`"
        )
    return lines


def label(row: dict[str, Any], width: int = 60) -> str:
    """A group's hook named short: ours as claude-session, another's command cut to `width`."""
    if row["ours"]:
        return "claude-session"
    command = str(row["command"])
    return command if len(command) <= width else command[: width - 1] + "…"


def fmt_ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:.2f} s" if value >= 10_000 else f"{value:.0f} ms"
