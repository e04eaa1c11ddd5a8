"""The judge's verdicts (llm_verdicts): the one module that writes them.

The judge itself (services/judge.py) runs a command and parses its answer; what it decided is
stored here, so the table has a single owner like every other.
"""

import apsw


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
