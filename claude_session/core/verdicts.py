"""The judge's verdicts (llm_verdicts): the one module that writes them.

The judge itself (services/judge.py) runs a command and parses its answer; what it decided is
stored here, so the table has a single owner like every other; so are the reservations
(judge_reservations) that hold each running judge's share of the day's budget.
"""

import apsw

from .db import Immediate

# Today's judge spend (UTC), by the costs the judges' commands reported.
SPENT_TODAY = (
    "SELECT COALESCE(SUM(cost_usd), 0) FROM llm_verdicts"
    " WHERE created_at >= unixepoch(datetime(?, 'unixepoch', 'start of day'))"
)


class Room:
    """What a reservation found: its id (None: refused, no room), today's spend and what the
    other running judges had reserved when it was decided."""

    def __init__(self, reservation: int | None, spent: float, reserved: float, running: int):
        self.reservation = reservation
        self.spent = spent
        self.reserved = reserved
        self.running = running


def reserve(
    conn: apsw.Connection,
    *,
    session_id: str,
    amount: float,
    budget: float,
    now: float,
    hold_seconds: float,
) -> Room:
    """Reserve `amount` of today's `budget` for one judge call, in one BEGIN IMMEDIATE: only
    when today's spend, the live reservations and `amount` together fit. Reservations past
    their expiry (a judge that died) are released first. Must run outside a transaction."""
    with Immediate(conn):
        conn.execute("DELETE FROM judge_reservations WHERE expires_at <= ?", (now,))
        spent = float(conn.execute(SPENT_TODAY, (now,)).fetchall()[0][0] or 0.0)
        total, running = conn.execute(
            "SELECT COALESCE(SUM(amount_usd), 0.0), COUNT(*) FROM judge_reservations"
        ).fetchall()[0]
        reserved, count = float(total or 0.0), int(running or 0)
        if spent + reserved + amount > budget + 1e-9:
            return Room(None, spent, reserved, count)
        conn.execute(
            "INSERT INTO judge_reservations (session_id, amount_usd, created_at, expires_at)"
            " VALUES (?, ?, ?, ?)",
            (session_id, amount, now, now + hold_seconds),
        )
        return Room(conn.last_insert_rowid(), spent, reserved, count)


def release(conn: apsw.Connection, reservation: int) -> None:
    """Drop a reservation: its verdict (with the cost reported) is recorded in the same
    transaction, or the call never started."""
    conn.execute("DELETE FROM judge_reservations WHERE id = ?", (reservation,))


def record(
    conn: apsw.Connection,
    *,
    session_id: str,
    hook_event: str,
    task: str,
    task_id: str | None,
    decision: str,
    reason: str,
    verdict_json: str,
    raw: str,
    judge: str,
    now: float,
    cost_usd: float | None = None,
) -> int:
    """Store one verdict; returns its id. `task_id`: TaskCompleted's task_id, else the
    judged event's prompt_id; `verdict_json`: the verdict as JSON; `cost_usd`: what the call
    cost, as the judge's command reported it."""
    conn.execute(
        "INSERT INTO llm_verdicts (session_id, hook_event, task, task_id, decision, reason,"
        " verdict_json, raw, judge, created_at, timestamp, cost_usd)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, datetime(?10, 'unixepoch'), ?11)",
        (
            session_id,
            hook_event,
            task,
            task_id,
            decision,
            reason,
            verdict_json,
            raw,
            judge,
            now,
            cost_usd,
        ),
    )
    return conn.last_insert_rowid()
