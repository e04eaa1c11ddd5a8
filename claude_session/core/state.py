"""Project state with history: the one writer of `project_state` and `state_write_cause`.
Keys and values are redacted here, on every write path (hooks, CLI, MCP), before the first byte
reaches the table, its history or the WAL.

Every change of a key is recorded in `state_history` by SQL triggers, with the cause the
writer declared for its transaction (the event and its tool call or agent, or the command):
no code path can change the state without leaving its trace, and a write made by hand is
recorded as 'direct SQL'. Stdlib + apsw: hooks write the state too.
"""

import apsw

from .db import rows
from .redact import redact, secret_name

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

KEY_CAP = 200
VALUE_CAP = 4000


def set_values(
    conn: apsw.Connection, values: "Mapping[str, str | None]", now: float, cause: str
) -> int:
    """Upsert keys (inside the caller's transaction); a value that did not change is not
    written again. Returns the number of keys changed."""
    if not values:
        return 0
    conn.execute(
        "INSERT INTO state_write_cause (id, cause, at) VALUES (1, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET cause = excluded.cause, at = excluded.at",
        (cause[:500], now),
    )
    changed = 0
    for key, value in values.items():
        # Redacted whole, then cut: a cap cutting through a token first would leave a start
        # too short for its shape (`ghp_A1b2C3d4`), which redaction would then let through.
        key = stored_key(key)
        value = None if value is None else _redacted(key, value)[:VALUE_CAP]
        conn.execute(
            "INSERT INTO project_state (key, value, updated_at)"
            " VALUES (?1, ?2, datetime(?3, 'unixepoch'))"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value,"
            " updated_at = excluded.updated_at WHERE project_state.value IS NOT excluded.value",
            (key, value, now),
        )
        changed += conn.changes()
    conn.execute("DELETE FROM state_write_cause WHERE id = 1")
    return changed


def stored_key(key: str) -> str:
    """A key as it is stored (redacted whole, then capped): what a lookup by name must use."""
    return redact(key)[:KEY_CAP]


def _redacted(key: str, value: str) -> str:
    """The value with its secrets redacted by the scanner events go through; under a key whose
    name says secret (`deploy_token`), read as that assignment, so a value that looks like
    nothing in particular is hidden too (a commit id under `git_head` is not)."""
    if not secret_name(key):
        return redact(value)
    assigned = redact(f"{key}={value}")
    prefix = f"{key}="
    return assigned[len(prefix) :] if assigned.startswith(prefix) else redact(value)


def delete(conn: apsw.Connection, key: str, now: float, cause: str) -> bool:
    conn.execute(
        "INSERT INTO state_write_cause (id, cause, at) VALUES (1, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET cause = excluded.cause, at = excluded.at",
        (cause[:500], now),
    )
    conn.execute("DELETE FROM project_state WHERE key = ?", (stored_key(key),))
    gone = conn.changes() > 0
    conn.execute("DELETE FROM state_write_cause WHERE id = 1")
    return gone


def get(conn: apsw.Connection, key: str) -> "str | None":
    found = conn.execute(
        "SELECT value FROM project_state WHERE key = ?", (stored_key(key),)
    ).fetchall()
    return found[0][0] if found and isinstance(found[0][0], str) else None


def exists(conn: apsw.Connection, key: str) -> bool:
    found = conn.execute("SELECT 1 FROM project_state WHERE key = ?", (stored_key(key),))
    return bool(found.fetchall())


def all_values(conn: apsw.Connection) -> "list[dict[str, Any]]":
    return rows(conn, "SELECT key, value, updated_at FROM project_state ORDER BY key")


def history(
    conn: apsw.Connection, key: str | None = None, limit: int = 200
) -> "list[dict[str, Any]]":
    """Changes, newest first (of one key, or all)."""
    where, params = ("WHERE key = ?", [stored_key(key)]) if key else ("", [])
    return rows(
        conn,
        "SELECT id, key, old_value, new_value, changed_at, cause FROM state_history"
        f" {where} ORDER BY id DESC LIMIT ?",
        (*params, limit),
    )


def prune_history(conn: apsw.Connection, before: float, keep_per_key: int) -> int:
    """Drop history older than `before`, always keeping each key's latest `keep_per_key`."""
    conn.execute(
        "DELETE FROM state_history WHERE changed_at < ?1 AND id NOT IN (SELECT id FROM"
        " (SELECT id, row_number() OVER (PARTITION BY key ORDER BY id DESC) AS n"
        "  FROM state_history) WHERE n <= ?2)",
        (before, keep_per_key),
    )
    return conn.changes()
