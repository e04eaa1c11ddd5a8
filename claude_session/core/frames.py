"""Frames: the points of a session one can go back to, each with a snapshot of its state.

The one writer of `frames`, `frame_states`, `vcs_tags` and `timeline_events`. A frame is
committed inside the event's own transaction (stdlib + apsw only: hooks import this) after each
tool call that can change files, at turn boundaries, SubagentStart/Stop, PreCompact,
TaskCompleted, and after each failed attempt. Its state is canonical JSON built by SQLite
(fixed key order, rows in a fixed order), stored once per SHA-256. Frames where the files may
have changed also ask for a workspace snapshot: a `vcs_tags` row 'pending' that the capture
process (services/snapshots/capture.py) fills in off the agent's path.
"""

import apsw

from .db import Immediate, rows
from .event import Event
from .executions import READ_ONLY_TOOLS
from .paths import relative_to_root
from .readings import OPEN

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any

    from .apply_types import Applied, Context

# Event -> frame kind; None: decided by the tool.
FRAME_KINDS: "dict[str, str | None]" = {
    "SessionStart": "session_start",
    "UserPromptSubmit": "turn_start",
    "PostToolUse": None,
    "PostToolUseFailure": None,
    "Stop": "turn_end",
    "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop",
    "PreCompact": "pre_compact",
    "TaskCompleted": "task_completed",
    "SessionEnd": "session_end",
}
# Frames after which the files may differ from the frame before: these get a workspace snapshot.
CAPTURED_KINDS = frozenset({"session_start", "turn_start", "tool", "attempt", "fork", "revert"})
TIMELINE_EVENTS = (
    "SnapshotCaptured",
    "SessionForked",
    "ReplayStarted",
    "RevertStarted",
    "RevertFinished",
)

# The session's state, as canonical JSON: what a frame snapshot holds.
STATE_SQL = f"""
SELECT json_object(
  'session_id', ?1,
  'task', (SELECT task_description FROM agent_registry WHERE id = ?1),
  'agents', json((SELECT json_group_array(json_object('id', id, 'type', agent_type,
      'status', status, 'task', substr(coalesce(task_description, description), 1, 300),
      'files_changed', json(files_changed)))
    FROM (SELECT * FROM agent_registry WHERE session_id = ?1 AND is_internal = 0 ORDER BY id))),
  'claims', json((SELECT json_group_array(json_object('agent', agent_id, 'path', file_path,
      'operation', operation, 'edits', edits))
    FROM (SELECT * FROM file_claims WHERE session_id = ?1 AND released_at IS NULL
          ORDER BY file_path, agent_id))),
  'errors', json((SELECT json_group_array(json_object('ladder', ladder_key, 'step', step,
      'category', error_category, 'file', file_path, 'what', signature,
      'message', substr(error_message, 1, 300), 'resolution', resolution))
    FROM (SELECT ladder_key, max(attempt_number) AS step, error_category, file_path, signature,
          error_message, resolution FROM error_log
          WHERE session_id = ?1 AND interrupted = 0 AND {OPEN}
          GROUP BY ladder_key ORDER BY ladder_key))),
  'failed_paths', json((SELECT json_group_array(json_object('approach', approach,
      'reason', reason_failed, 'file', file_path))
    FROM (SELECT * FROM failed_paths WHERE session_id = ?1 AND still_relevant = 1 ORDER BY id))),
  'counters', json((SELECT json_group_object(key, total) FROM (SELECT key, sum(value) AS total
    FROM session_metrics WHERE session_id = ?1
    AND key IN ('prompts', 'file_edits', 'tool_failures', 'subagents', 'compactions')
    GROUP BY key ORDER BY key)))
)"""


def state_of(conn: apsw.Connection, session_id: str) -> str:
    """The session's state now, as canonical JSON text (the same state, the same text)."""
    return str(conn.execute(STATE_SQL, (session_id,)).fetchall()[0][0])


def content_hash(text: str) -> str:
    """SHA-256, from the small builtin module (`hashlib` would load OpenSSL, ~2 ms), imported
    only when a state is built: most events commit no frame, or an unchanged state."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # Python 3.12+
        from _sha2 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    return str(sha256(text.encode("utf-8")).hexdigest())


def frame_kind(ev: Event) -> str | None:
    """The kind of frame this event commits, or None."""
    name = ev.name
    if name not in FRAME_KINDS:
        return None
    kind = FRAME_KINDS[name]
    if kind is not None:
        return kind
    tool = ev.text_of("tool_name") or ""
    if name == "PostToolUseFailure":
        return None if ev.get("is_interrupt") in (True, 1) else "attempt"
    return None if tool in READ_ONLY_TOOLS else "tool"


# Stored states are packed off the hook's path (`pack_states`: the capture process, `prune`):
# the hooks store canonical JSON text, as before version 10. A state is a few KB of JSON that
# differs from the session's state before it by a counter or a row, so most are packed as raw
# deflate against that earlier state (a delta of ~60 B), the others against a dictionary of the
# state's keys (~7x smaller). A chain of deltas is at most PACK_DEPTH long, so reading a state
# costs at most that many decompressions. Formats, after a version byte:
#   0x01 deflate(state, dictionary = PACK_DICTIONARY)
#   0x02 depth (1 byte), base id (8 bytes, frame_states.id), deflate(state, dictionary = base)
PACK_KEY = b"\x01"
PACK_DELTA = b"\x02"
PACK_DEPTH = 16
PACK_WINDOW = 8  # a delta's base: one of the states stored just before it, of the same session
PACK_BATCH = 200  # states packed per write transaction: a hook waits at most for one batch
PACK_DICTIONARY = (
    b'{"session_id":"","task":"","agents":[{"id":"","type":"main","status":"running",'
    b'"task":"","files_changed":[]}],"claims":[{"agent":"main","path":"","operation":"Edit",'
    b'"edits":1}],"errors":[{"ladder":"","step":1,"category":"runtime","file":null,'
    b'"what":"Bash: ","message":"Exit code 1","resolution":null}],"failed_paths":[{'
    b'"approach":"","reason":"","file":null}],"counters":{"compactions":0,"file_edits":0,'
    b'"prompts":1,"subagents":0,"tool_failures":0}}'
)


def _deflate(data: bytes, dictionary: bytes) -> bytes:
    import zlib  # not on the hook's path: hooks store text, the capture process packs it

    packer = zlib.compressobj(6, zlib.DEFLATED, -15, 4, zlib.Z_DEFAULT_STRATEGY, dictionary)
    return packer.compress(data) + packer.flush()


def _inflate(data: bytes, dictionary: bytes) -> bytes:
    import zlib

    unpacker = zlib.decompressobj(-15, dictionary[-32768:])
    return unpacker.decompress(data) + unpacker.flush()


def state_text(conn: apsw.Connection, value: object) -> str:
    """A stored state (frame_states.state) as its canonical JSON text, packed or not."""
    if not isinstance(value, bytes):
        return str(value)
    if value[:1] == PACK_KEY:
        return _inflate(value[1:], PACK_DICTIONARY).decode("utf-8")
    if value[:1] == PACK_DELTA:
        base_id = int.from_bytes(value[2:10], "big")
        found = conn.execute("SELECT state FROM frame_states WHERE id = ?", (base_id,)).fetchall()
        base = state_text(conn, found[0][0]).encode("utf-8")
        return _inflate(value[10:], base[-32768:]).decode("utf-8")
    return value.decode("utf-8")


def _depth(value: object) -> int:
    return value[1] if isinstance(value, bytes) and value[:1] == PACK_DELTA else 0


def pack_states(conn: apsw.Connection, batch: int = PACK_BATCH) -> int:
    """Pack up to `batch` states still stored as text (found through the small partial index
    of them, oldest first), in one short write transaction; how many were packed.

    A packed state is written as a new row (same hash, new id) and the text row deleted: the
    text rows' pages empty and are reused for new rows. Shrinking rows in place would leave
    every page they filled mostly empty for good (new rows only ever go at the end)."""
    packed = 0
    with Immediate(conn):
        found = conn.execute(
            "SELECT id, hash, state, first_seen FROM frame_states WHERE typeof(state) = 'text'"
            " ORDER BY id LIMIT ?",
            (batch,),
        ).fetchall()
        if not found:
            return 0
        first = int(found[0][0])  # type: ignore[arg-type]
        # (id, text, depth) of the states stored just before: the candidates for a base
        recent: list[tuple[int, str, int]] = [
            (int(row_id), state_text(conn, value), _depth(value))  # type: ignore[arg-type]
            for row_id, value in conn.execute(
                "SELECT id, state FROM frame_states WHERE id < ? ORDER BY id DESC LIMIT ?",
                (first, PACK_WINDOW),
            ).fetchall()[::-1]
        ]
        for row_id, digest, value, first_seen in found:
            text = str(value)
            blob, depth = _pack(text, recent)
            conn.execute("DELETE FROM frame_states WHERE id = ?", (row_id,))
            conn.execute(
                "INSERT INTO frame_states (hash, state, first_seen) VALUES (?, ?, ?)",
                (digest, blob, first_seen),
            )
            recent = [*recent[-(PACK_WINDOW - 1) :], (conn.last_insert_rowid(), text, depth)]
            packed += 1
    return packed


def _pack(text: str, recent: "list[tuple[int, str, int]]") -> "tuple[bytes, int]":
    """`text` packed, and its depth: a delta against the latest of `recent` of the same
    session (if that is smaller and the chain not too deep), else against the dictionary."""
    data = text.encode("utf-8")
    blob = PACK_KEY + _deflate(data, PACK_DICTIONARY)
    prefix = text[: text.find(",") + 1]  # {"session_id":"...",
    for base_id, base_text, base_depth in reversed(recent):
        if base_text.startswith(prefix):
            if base_depth < PACK_DEPTH - 1:
                delta = _deflate(data, base_text.encode("utf-8")[-32768:])
                if len(delta) + 10 < len(blob):
                    header = PACK_DELTA + bytes([base_depth + 1]) + base_id.to_bytes(8, "big")
                    return header + delta, base_depth + 1
            break
    return blob, 0


def store_state(conn: apsw.Connection, text: str, now: float) -> str:
    """Store a state once per content; its hash."""
    digest = content_hash(text)
    conn.execute(
        "INSERT INTO frame_states (hash, state, first_seen) VALUES (?, ?, ?)"
        " ON CONFLICT (hash) DO NOTHING",
        (digest, text, now),
    )
    return digest


def commit_for_event(
    conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied", turn_id: int | None
) -> int:
    """Commit the frame this event calls for, if any; its number, or 0."""
    kind = frame_kind(ev)
    if kind is None:
        return 0
    tool = ev.text_of("tool_name")
    capture = kind in CAPTURED_KINDS and (kind != "attempt" or tool not in READ_ONLY_TOOLS)
    capture = capture and ctx.config.get("workspace_snapshots") is True
    if capture:
        applied.capture_requested = True
    return commit(
        conn,
        ev.session_id,
        kind,
        ctx.now,
        event_id=applied.event_id,
        turn_id=turn_id,
        agent_id=ev.text_of("agent_id") or ev.session_id,
        tool_use_id=ev.text_of("tool_use_id"),
        tool_name=tool,
        summary=ev.summary(ctx.root),
        files=_named_files(ev, ctx.root),
        capture=capture,
    )


def commit_after_skill_command(
    conn: apsw.Connection,
    ev: Event,
    ctx: "Context",
    applied: "Applied",
    turn_id: int | None,
    tool_use_id: str,
    tool_name: str | None,
    summary: str | None,
    files: str | None,
) -> int:
    """The frame after a skill's inline shell command, committed by the agent's next event
    `ev` (core/events.py): a 'tool' frame, as after a Bash call, with a workspace snapshot
    (the command may have changed any file); its number."""
    capture = ctx.config.get("workspace_snapshots") is True
    if capture:
        applied.capture_requested = True
    return commit(
        conn,
        ev.session_id,
        "tool",
        ctx.now,
        event_id=applied.event_id,
        turn_id=turn_id,
        agent_id=ev.text_of("agent_id") or ev.session_id,
        tool_use_id=tool_use_id,
        tool_name=tool_name or "Bash",
        summary=summary,
        files=files,
        capture=capture,
    )


def commit(
    conn: apsw.Connection,
    session_id: str,
    kind: str,
    now: float,
    *,
    event_id: int | None = None,
    turn_id: int | None = None,
    agent_id: str | None = None,
    tool_use_id: str | None = None,
    tool_name: str | None = None,
    summary: str | None = None,
    files: str | None = None,
    capture: bool = False,
    state: str | None = None,
) -> int:
    """Commit the next frame of a session: its state (stored once per content) and, when
    `capture`, a pending workspace snapshot. Returns the frame number.

    The state is rebuilt only when the session's state version moved since its last frame
    (triggers raise it on every change of what a state holds); else it is the last one."""
    version, last_no, last_version, last_hash = conn.execute(
        "SELECT (SELECT version FROM session_state_versions WHERE session_id = ?1),"
        " f.frame_no, f.state_version, f.state_hash FROM (SELECT 1)"
        " LEFT JOIN (SELECT frame_no, state_version, state_hash FROM frames WHERE session_id = ?1"
        " ORDER BY frame_no DESC LIMIT 1) f",
        (session_id,),
    ).fetchall()[0]
    if state is None and last_hash is not None and version is not None and version == last_version:
        digest = str(last_hash)
    else:
        digest = store_state(conn, state if state is not None else state_of(conn, session_id), now)
    frame_no = last_no + 1 if isinstance(last_no, int) else 1
    conn.execute(
        "INSERT INTO frames (session_id, frame_no, kind, created_at, event_id, turn_id, agent_id,"
        " tool_use_id, tool_name, summary, files, state_hash, state_version, timestamp)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,"
        " datetime(?4, 'unixepoch'))",
        (
            session_id,
            frame_no,
            kind,
            now,
            event_id,
            turn_id,
            agent_id,
            tool_use_id,
            tool_name,
            summary,
            files,
            digest,
            version if state is None else None,
        ),
    )
    if capture:
        conn.execute(
            "INSERT INTO vcs_tags (session_id, frame_no, status, requested_at)"
            " VALUES (?, ?, 'pending', ?)",
            (session_id, frame_no, now),
        )
    return frame_no


def _named_files(ev: Event, root: str) -> str | None:
    """The file a Write/Edit/MultiEdit/NotebookEdit names, relative to the project, as a JSON
    array."""
    path = ev.text_of("file_path") or ev.text_of("notebook_path")
    if not path:
        return None
    return paths_json([relative_to_root(root, path)])


def paths_json(paths: "list[str]") -> str | None:
    """`paths` as a JSON array, None for none (no `json` import: each path is quoted by hand,
    as SQLite's json_quote would)."""
    quoted = []
    for path in paths:
        escaped = path.replace("\\", "\\\\").replace('"', '\\"')
        escaped = "".join(c if c >= " " else f"\\u{ord(c):04x}" for c in escaped)
        quoted.append(f'"{escaped}"')
    return f"[{','.join(quoted)}]" if quoted else None


# --- the capture process's side ---------------------------------------------------------------


def pending_captures(conn: apsw.Connection) -> "list[tuple[str, int, float]]":
    """(session, frame, requested_at) of every frame still waiting for its snapshot, oldest
    first (any session of the project: they share one work tree)."""
    rows = conn.execute(
        "SELECT session_id, frame_no, requested_at FROM vcs_tags WHERE status = 'pending'"
        " ORDER BY requested_at, session_id, frame_no"
    ).fetchall()
    return [(str(s), int(f), float(t)) for s, f, t in rows]  # type: ignore[arg-type]


def latest_commit(conn: apsw.Connection) -> str | None:
    """The project's newest snapshot commit (of one capture's several, the latest frame's)."""
    rows = conn.execute(
        "SELECT snapshot_commit FROM vcs_tags WHERE status = 'captured'"
        " ORDER BY captured_at DESC, requested_at DESC LIMIT 1"
    ).fetchall()
    return str(rows[0][0]) if rows and rows[0][0] else None


def record_capture(
    conn: apsw.Connection,
    frames: "list[tuple[str, int]]",
    now: float,
    *,
    status: str,
    commit: str | None = None,
    head: str | None = None,
    branch: str | None = None,
    jj_commit: str | None = None,
    jj_operation: str | None = None,
    files: int | None = None,
    note: str | None = None,
) -> None:
    """Fill in the pointer of frames that were pending (only those: a frame is captured once)."""
    for session_id, frame_no in frames:
        conn.execute(
            "UPDATE vcs_tags SET status = ?3, captured_at = ?4, snapshot_commit = ?5,"
            " git_head = ?6, git_branch = ?7, jj_commit_id = ?8, jj_operation_id = ?9,"
            " files = ?10, note = ?11 WHERE session_id = ?1 AND frame_no = ?2"
            " AND status = 'pending'",
            (
                session_id,
                frame_no,
                status,
                now,
                commit,
                head,
                branch,
                jj_commit,
                jj_operation,
                files,
                note,
            ),
        )
        if status == "captured":
            add_timeline_event(
                conn,
                "SnapshotCaptured",
                session_id,
                frame_no,
                now,
                '{"commit": "' + str(commit) + '"}',
            )


def add_timeline_event(
    conn: apsw.Connection,
    name: str,
    session_id: str | None,
    frame_no: int | None,
    now: float,
    detail: str = "{}",
) -> None:
    """What claude-session itself did to a session's history (`detail`: JSON text)."""
    conn.execute(
        "INSERT INTO timeline_events (name, session_id, frame_no, at, detail)"
        " VALUES (?, ?, ?, ?, json(?))",
        (name, session_id, frame_no, now, detail),
    )


def drop_pointers(conn: apsw.Connection, sessions_sql: str, params: "Any" = ()) -> int:
    """The workspace snapshots of these sessions (`sessions_sql`: a query of their ids) are
    let go: their frames and states stay, their pointers say 'pruned'."""
    conn.execute(
        "UPDATE vcs_tags SET status = 'missed', note = 'pruned' WHERE status = 'captured'"
        f" AND session_id IN ({sessions_sql})",
        params,
    )
    return conn.changes()


def kept_commits(conn: apsw.Connection) -> "set[str]":
    """Every snapshot commit something still points at: captured frames, and the safety and
    result snapshots of reverts (what `revert --undo` goes back to)."""
    kept = {
        str(commit)
        for (commit,) in conn.execute(
            "SELECT snapshot_commit FROM vcs_tags WHERE status = 'captured'"
            " AND snapshot_commit IS NOT NULL"
        )
    }
    for safety, after in conn.execute(
        "SELECT json_extract(detail, '$.safety_commit'), json_extract(detail, '$.after_commit')"
        " FROM timeline_events WHERE name = 'RevertFinished'"
    ):
        kept |= {str(c) for c in (safety, after) if c}
    return kept


def oldest_sessions_with_snapshots(conn: apsw.Connection, limit: int) -> "list[str]":
    """Ended sessions holding captured snapshots, oldest first: what a size bound drops."""
    return [
        str(session_id)
        for (session_id,) in conn.execute(
            "SELECT v.session_id FROM vcs_tags v JOIN sessions s USING (session_id)"
            " WHERE v.status = 'captured' AND s.status = 'ended'"
            " GROUP BY v.session_id ORDER BY max(v.captured_at) LIMIT ?",
            (limit,),
        )
    ]


def frame_row(conn: apsw.Connection, session_id: str, frame_no: int) -> "dict[str, Any] | None":
    """One frame with its state (as JSON text) and pointer, or None."""
    found = rows(
        conn,
        "SELECT f.session_id, f.frame_no, f.kind, f.created_at, f.event_id, f.turn_id,"
        " f.agent_id, f.tool_use_id, f.tool_name, f.summary, f.files, f.state_hash, s.state,"
        " v.status, v.snapshot_commit, v.git_head, v.git_branch, v.jj_commit_id,"
        " v.jj_operation_id, v.note FROM frames f JOIN frame_states s ON s.hash = f.state_hash"
        " LEFT JOIN vcs_tags v ON v.session_id = f.session_id AND v.frame_no = f.frame_no"
        " WHERE f.session_id = ? AND f.frame_no = ?",
        (session_id, frame_no),
    )
    if found:
        found[0]["state"] = state_text(conn, found[0]["state"])
    return found[0] if found else None


def rename_snapshots(
    conn: apsw.Connection, renamed: "dict[str, str]", path: str, now: float
) -> None:
    """After `prune --purge PATH`: every frame and every revert, fork or replay record points
    at the snapshot rewritten without PATH instead of the one that held it; and the purge is
    recorded (`purged`)."""
    for old, new in renamed.items():
        conn.execute(
            "UPDATE vcs_tags SET snapshot_commit = ?2 WHERE snapshot_commit = ?1", (old, new)
        )
    rows = conn.execute(
        "SELECT id, detail FROM timeline_events WHERE detail IS NOT NULL"
    ).fetchall()
    import re  # not on the hook path: only `prune --purge` comes here

    commit = re.compile(r"\b[0-9a-f]{40}\b")
    for row_id, detail in rows:
        text = str(detail)
        changed = commit.sub(lambda found: renamed.get(found[0], found[0]), text)
        if changed != text:
            conn.execute("UPDATE timeline_events SET detail = ?2 WHERE id = ?1", (row_id, changed))
    conn.execute(
        "INSERT INTO purged_paths (path, purged_at, snapshots) VALUES (?, ?, ?)",
        (path, now, len(renamed)),
    )


def purged(conn: apsw.Connection) -> "list[str]":
    """The paths whose content `prune --purge` took out of the snapshots."""
    return [str(p) for (p,) in conn.execute("SELECT DISTINCT path FROM purged_paths ORDER BY path")]
