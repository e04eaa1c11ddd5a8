"""What the OpenTelemetry export sent and how it went: the one writer of `otel_sent`,
`otel_sessions` and `otel_export` (services/telemetry/otel_export.py decides what to send and calls
these verbs). Each verb is one `BEGIN IMMEDIATE` transaction, written after the backend took
the spans, so a crash in between only sends the same spans, with the same ids, again."""

import apsw

from . import db


def sent_ids(conn: apsw.Connection, session_id: str) -> "set[int]":
    """The span ids (signed 64-bit) already sent of a session still going out."""
    rows = conn.execute("SELECT span_id FROM otel_sent WHERE session_id = ?", (session_id,))
    return {int(r[0]) for r in rows}


def record_sent(
    conn: apsw.Connection,
    spans: "list[tuple[int, str]]",
    finished: "dict[str, int]",
    endpoint: str,
    now: float,
) -> None:
    """`spans` (signed span id, session id) went out; the sessions of `finished` (session ->
    spans sent in all) are done with it: their rows in otel_sent go, so it stays small."""
    with db.Immediate(conn):
        conn.executemany(
            "INSERT OR IGNORE INTO otel_sent (span_id, session_id, sent_at) VALUES (?, ?, ?)",
            [(span, session, now) for span, session in spans],
        )
        for session, count in finished.items():
            conn.execute(
                "INSERT OR REPLACE INTO otel_sessions (session_id, done_at, spans)"
                " VALUES (?, ?, ?)",
                (session, now, count),
            )
            conn.execute("DELETE FROM otel_sent WHERE session_id = ?", (session,))
        conn.execute(
            "INSERT INTO otel_export (id, endpoint, spans_sent) VALUES (1, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET"
            " spans_sent = otel_export.spans_sent + excluded.spans_sent",
            (endpoint, len(spans)),
        )


def record_pass(
    conn: apsw.Connection, endpoint: str, now: float, sent: bool, oldest_waiting: "float | None"
) -> None:
    """A pass that did not fail: no backoff, no error; the lag as it is now."""
    with db.Immediate(conn):
        conn.execute(
            "INSERT INTO otel_export (id, endpoint, last_attempt_at, last_success_at, failures,"
            " last_error, next_attempt_at, oldest_waiting) VALUES (1, ?, ?, ?, 0, NULL, NULL, ?)"
            " ON CONFLICT (id) DO UPDATE SET endpoint = excluded.endpoint,"
            " last_attempt_at = excluded.last_attempt_at, last_success_at = CASE WHEN ? THEN"
            " excluded.last_success_at ELSE otel_export.last_success_at END, failures = 0,"
            " last_error = NULL, next_attempt_at = NULL, oldest_waiting = excluded.oldest_waiting",
            (endpoint, now, now if sent else None, oldest_waiting, sent),
        )


def record_failure(
    conn: apsw.Connection,
    endpoint: str,
    now: float,
    error: str,
    retry_at: float,
    oldest_waiting: "float | None",
) -> None:
    """A pass the backend failed: one more failure in a row, why, and when to try again."""
    with db.Immediate(conn):
        conn.execute(
            "INSERT INTO otel_export (id, endpoint, last_attempt_at, failures, last_error,"
            " next_attempt_at, oldest_waiting) VALUES (1, ?, ?, 1, ?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET endpoint = excluded.endpoint,"
            " last_attempt_at = excluded.last_attempt_at, failures = otel_export.failures + 1,"
            " last_error = excluded.last_error, next_attempt_at = excluded.next_attempt_at,"
            " oldest_waiting = excluded.oldest_waiting",
            (endpoint, now, error, retry_at, oldest_waiting),
        )


def enabled_at(conn: apsw.Connection, now: float) -> float:
    """When the daemon first found the export on (`now`, the first time)."""
    rows = conn.execute("SELECT enabled_at FROM otel_export WHERE id = 1").fetchall()
    if rows and isinstance(rows[0][0], int | float):
        return float(rows[0][0])
    with db.Immediate(conn):
        conn.execute(
            "INSERT INTO otel_export (id, enabled_at) VALUES (1, ?)"
            " ON CONFLICT (id) DO UPDATE SET"
            " enabled_at = coalesce(enabled_at, excluded.enabled_at)",
            (now,),
        )
    return now
