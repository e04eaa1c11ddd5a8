"""Time travel over recorded frames: addressing, timelines and the diff of two frames.

A frame is addressed the way `timeline` prints it (ADDRESS_SYNTAX): a bare `N` is frame N of
the latest session, `SESSION:N` frame N of a session (an id prefix is enough, an exact id
always wins; `:-1` counts from the end), `:N` the latest session's, `SESSION` alone its latest
frame; `SESSION@attempt:N` is the frame after the Nth failed attempt, `SESSION@turn:N` the
start of turn N. An all-digit session prefix is written `PREFIX:` or `PREFIX:N`.

The diff of two states (`state_diff`) is a pure function of two snapshots. Reverts and forks,
which change files, live in services/timetravel/revert.py and services/timetravel/fork.py.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import apsw

from ...core import frames
from ...core.db import rows
from ...core.figures import plural

# Said by every command that takes a frame, in its --help and in every addressing error.
ADDRESS_SYNTAX = (
    "N (frame N of the latest session), :N (the same), SESSION:N, SESSION (its latest frame),"
    " SESSION@attempt:N, SESSION@turn:N; SESSION is an id or a prefix of one (a prefix of"
    " digits only takes a colon: PREFIX: or PREFIX:N) and :-1 counts from the end"
)
_NUMBER = re.compile(r"-?[0-9]+")  # ASCII only: str.isdigit also takes '²', which int() refuses


class FrameError(Exception):
    """An address that names no frame, or a frame that cannot be used for what was asked."""


def _bad(message: str) -> FrameError:
    """An addressing error that teaches the syntax, so the next try can be right."""
    return FrameError(f"{message}; frames are addressed as {ADDRESS_SYNTAX}")


@dataclass(frozen=True)
class FrameRef:
    session_id: str
    frame_no: int

    def __str__(self) -> str:
        return f"{self.session_id}:{self.frame_no}"


def latest_session(conn: apsw.Connection) -> str | None:
    rows = conn.execute(
        "SELECT session_id FROM frames GROUP BY session_id ORDER BY max(created_at) DESC LIMIT 1"
    ).fetchall()
    return str(rows[0][0]) if rows else None


def find_session(conn: apsw.Connection, address: str) -> str:
    """The session an address names (any form `resolve` takes; empty: the latest session).
    Digits alone name a session when they are a session's id (ids can be all digits) or the
    start of one alone: a session is asked for, so a session named wins; else they are frame N
    of the latest session, as `resolve` reads them (`:N` always means the frame)."""
    text = address.strip()
    if text.isascii() and text.isdigit():
        named = _session_named(conn, text)
        if named is not None:
            return named
    return resolve(conn, address).session_id


def _session_named(conn: apsw.Connection, text: str) -> str | None:
    """The session with frames whose id is `text`, else the one alone whose id starts with
    it; None for none or several."""
    if conn.execute("SELECT 1 FROM frames WHERE session_id = ? LIMIT 1", (text,)).fetchall():
        return text
    ids = {
        str(r[0])
        for r in conn.execute(
            "SELECT DISTINCT session_id FROM frames WHERE session_id >= ?1"
            " AND session_id < ?1 || x'ff' LIMIT 2",
            (text,),
        )
    }
    found = [i for i in ids if i.startswith(text)]
    return found[0] if len(found) == 1 else None


def _match_session(conn: apsw.Connection, prefix: str) -> str:
    """The session with this exact id, else the one whose id starts with `prefix`."""
    if not prefix:
        found = latest_session(conn)
        if found is None:
            raise _bad("no frames recorded yet in this project")
        return found
    if conn.execute("SELECT 1 FROM frames WHERE session_id = ? LIMIT 1", (prefix,)).fetchall():
        return prefix  # an id that is also a prefix of another id is still addressable
    rows = conn.execute(
        "SELECT DISTINCT session_id FROM frames WHERE session_id >= ?1 AND session_id < ?1 || x'ff'"
        " ORDER BY session_id LIMIT 6",
        (prefix,),
    ).fetchall()
    ids = [str(r[0]) for r in rows if str(r[0]).startswith(prefix)]
    if len(ids) == 1:
        return ids[0]
    if not ids:
        known = conn.execute(
            "SELECT session_id FROM frames GROUP BY session_id ORDER BY max(created_at) DESC"
            " LIMIT 3"
        ).fetchall()
        hint = ", ".join(str(r[0]) for r in known)
        latest = f" (latest: {hint})" if hint else ""
        raise _bad(f"no session with frames starts with {prefix!r}{latest}")
    several = ", ".join(ids[:5])
    raise _bad(f"{prefix!r} matches several sessions ({several}): give more of the id")


def resolve(conn: apsw.Connection, address: str) -> FrameRef:
    """An address (ADDRESS_SYNTAX) -> the frame it names."""
    text = address.strip()
    bare = text.isascii() and text.isdigit()  # `N`: a frame number as `timeline` prints it
    if text and not bare:  # a whole session id, whatever it holds (`:` and `@` too): its latest
        last = conn.execute(
            "SELECT max(frame_no) FROM frames WHERE session_id = ?", (text,)
        ).fetchall()[0][0]
        if isinstance(last, int):
            return FrameRef(text, last)
    shortcut = None
    if "@" in text:
        text, shortcut = text.split("@", 1)
    if bare:
        session_part, frame_part = "", text
    else:
        session_part, _, frame_part = text.partition(":")
    session_id = _match_session(conn, session_part)
    if shortcut is not None:
        return _shortcut(conn, session_id, shortcut)
    last = conn.execute(
        "SELECT max(frame_no) FROM frames WHERE session_id = ?", (session_id,)
    ).fetchall()[0][0]
    if not isinstance(last, int):
        raise _bad(f"session {session_id} has no frames")
    if not frame_part:
        return FrameRef(session_id, last)
    if not _NUMBER.fullmatch(frame_part):
        raise _bad(f"frame {frame_part!r} is not a number")
    number = int(frame_part)
    if number < 0:  # from the end: -1 is the frame before the latest
        number = last + number
    if not 1 <= number <= last:
        hint = ""
        if bare and _starts_a_session(conn, frame_part):  # a session's id, meant as one?
            hint = f" (the session whose id starts with {frame_part} is {frame_part}:)"
        raise _bad(f"session {session_id} has frames 1 to {last}, not {frame_part}{hint}")
    return FrameRef(session_id, number)


def _starts_a_session(conn: apsw.Connection, prefix: str) -> bool:
    """Whether a session with frames has an id that starts with `prefix`."""
    return bool(
        conn.execute(
            "SELECT 1 FROM frames WHERE session_id >= ?1 AND session_id < ?1 || x'ff' LIMIT 1",
            (prefix,),
        ).fetchall()
    )


def _shortcut(conn: apsw.Connection, session_id: str, shortcut: str) -> FrameRef:
    kind, _, value = shortcut.partition(":")
    kinds = {"attempt": ("attempt",), "turn": ("turn_start",)}
    if kind not in kinds or not _NUMBER.fullmatch(value) or int(value) < 1:
        raise _bad(f"unknown shortcut @{shortcut}: use @attempt:N or @turn:N")
    rows = conn.execute(
        "SELECT frame_no FROM frames WHERE session_id = ? AND kind = ? ORDER BY frame_no",
        (session_id, kinds[kind][0]),
    ).fetchall()
    if int(value) > len(rows):
        has = plural(len(rows), f"{kind} frame")
        raise _bad(f"session {session_id} has {has}, not {value}")
    return FrameRef(session_id, int(rows[int(value) - 1][0]))  # type: ignore[arg-type]


def frame(conn: apsw.Connection, ref: FrameRef) -> dict[str, Any]:
    found = frames.frame_row(conn, ref.session_id, ref.frame_no)
    if found is None:
        raise FrameError(f"no frame {ref}")
    state = json.loads(str(found["state"]))
    for section in ("agents", "claims", "errors", "failed_paths", "counters"):
        if isinstance(state.get(section), str):  # stored as text by an early version 8
            state[section] = json.loads(state[section])
    found["state"] = state
    return found


def pointer(conn: apsw.Connection, ref: FrameRef) -> tuple[str, FrameRef]:
    """The workspace snapshot commit for a frame: its own, or for a frame that took none (a
    turn end, a subagent's start) the latest one before it in the session."""
    rows = conn.execute(
        "SELECT v.frame_no, v.status, v.snapshot_commit, v.note FROM vcs_tags v"
        " WHERE v.session_id = ? AND v.frame_no <= ? ORDER BY v.frame_no DESC LIMIT 1",
        (ref.session_id, ref.frame_no),
    ).fetchall()
    if not rows:
        raise FrameError(
            f"frame {ref} has no workspace snapshot (workspace_snapshots was off, or the session"
            " started before claude-session recorded snapshots)"
        )
    frame_no, status, commit, note = rows[0]
    own = FrameRef(ref.session_id, int(frame_no))  # type: ignore[arg-type]
    if status == "captured" and isinstance(commit, str):
        return commit, own
    if status == "pending":
        raise SnapshotPending(f"the snapshot of frame {own} is still being taken: try again")
    if status == "missed" and note == "pruned":
        raise FrameError(f"frame {own}: {PRUNED}")
    why = f"{status} ({note})" if note else str(status)
    raise FrameError(f"frame {own} has no workspace snapshot: {why}")


# A frame's snapshot let go of by `prune` (its session's, or the store's size bound).
_PRUNED = "v.status = 'missed' AND v.note = 'pruned'"
PRUNED = (
    "its workspace snapshot was pruned (`claude-session prune`): the files as they were then"
    " are no longer kept"
)


def timeline(conn: apsw.Connection, session_id: str) -> list[dict[str, Any]]:
    """Every frame of a session with what happened there, in order; a snapshot that is no
    longer kept shows no commit (`snapshot` says `pruned`)."""
    found = rows(
        conn,
        "SELECT f.frame_no AS frame, f.created_at, f.kind, f.agent_id, f.tool_name, f.summary,"
        " f.files, f.state_hash, t.turn_no AS turn,"
        # a pruned snapshot is named so, never by a commit that is no longer kept
        f" CASE WHEN {_PRUNED} THEN 'pruned' ELSE v.status END AS snapshot,"
        " CASE WHEN v.status = 'captured' THEN v.snapshot_commit END AS snapshot_commit,"
        " v.note AS snapshot_note,"
        " c.status AS tool_status, c.duration_ms,"
        " (SELECT s.state FROM frame_states s WHERE s.hash = f.state_hash) AS open_errors"
        " FROM frames f LEFT JOIN turns t ON t.id = f.turn_id"
        " LEFT JOIN vcs_tags v ON v.session_id = f.session_id AND v.frame_no = f.frame_no"
        " LEFT JOIN tool_calls c ON c.tool_use_id = f.tool_use_id"
        " WHERE f.session_id = ? ORDER BY f.frame_no",
        (session_id,),
    )
    out = []
    counted: dict[str, int | None] = {}  # consecutive frames often share a state
    for item in found:
        if item["state_hash"] not in counted:
            counted[item["state_hash"]] = _open_errors(conn, item["open_errors"])
        item["open_errors"] = counted[item["state_hash"]]
        item["files"] = json.loads(str(item["files"])) if item["files"] else []
        agent = item.pop("agent_id")
        # The session's main thread is "main"; a frame of claude-session's own (a revert, made
        # by the user's command) is "user".
        item["agent"] = "main" if agent == session_id else (agent or "user")
        out.append(item)
    return out


def _open_errors(conn: apsw.Connection, stored: object) -> int | None:
    """How many open errors a stored state (packed or not) lists."""
    if stored is None:
        return None
    errors = json.loads(frames.state_text(conn, stored)).get("errors")
    if isinstance(errors, str):  # stored as text by an early version 8
        errors = json.loads(errors)
    return len(errors) if isinstance(errors, list) else None


def branches(conn: apsw.Connection, session_id: str) -> list[dict[str, Any]]:
    """Forks and replays started from this session's frames."""
    return rows(
        conn,
        "SELECT id, kind, parent_frame_no AS frame, label, path, created_at, child_session_id,"
        " prompt FROM branches WHERE parent_session_id = ? ORDER BY parent_frame_no, id",
        (session_id,),
    )


def subagents(conn: apsw.Connection, session_id: str) -> list[dict[str, Any]]:
    """The session's subagents, with the turn and tool call that started them."""
    return rows(
        conn,
        "SELECT a.id, a.agent_type, a.status, a.description, a.tool_use_id, t.turn_no AS turn,"
        " (SELECT min(frame_no) FROM frames f WHERE f.session_id = a.session_id"
        "  AND f.agent_id = a.id) AS first_frame,"
        " (SELECT max(frame_no) FROM frames f WHERE f.session_id = a.session_id"
        "  AND f.agent_id = a.id) AS last_frame"
        " FROM agent_registry a LEFT JOIN tool_calls c ON c.tool_use_id = a.tool_use_id"
        " LEFT JOIN turns t ON t.id = c.turn_id"
        " WHERE a.session_id = ? AND a.is_main = 0 AND a.is_internal = 0 ORDER BY a.started_at",
        (session_id,),
    )


# --- the diff of two states: a pure function -----------------------------------------------


class SnapshotPending(FrameError):
    """A frame's snapshot is still waiting to be taken."""


SNAPSHOT_WAIT_SECONDS = 5.0  # how long `diff` waits for a snapshot being taken


def take_pending(
    conn: apsw.Connection,
    root: str,
    seconds: float = SNAPSHOT_WAIT_SECONDS,
    note: Callable[[str], None] | None = None,
) -> None:
    """The snapshots still pending taken now (waiting at most `seconds` for the capture
    lock), `note` told first: a diff right after a session sees its last frames' files."""
    from ..snapshots import capture, capture_control

    if not frames.pending_captures(conn):
        return
    if note is not None:
        note("waiting for the snapshot being taken...")
    fd = capture_control.take_lock(root, seconds)
    if fd is None:
        return
    try:
        capture.capture_all_pending(conn, root)
    finally:
        os.close(fd)


def diff(
    conn: apsw.Connection,
    root: str,
    a: str,
    b: str,
    stat_only: bool = False,
    read_only: bool = False,
) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """What changed between frames `a` and `b` (addresses): (a, b, the recorded state's diff,
    the files': `stat` and `diff` (not with `stat_only`), or `error`). `FrameError` when an
    address names nothing; a snapshot still being taken: `error` and `pending` (a writer
    takes them first: `take_pending`). What `claude-session diff`, `Project.diff` and the web
    page show. `read_only` (the library): the snapshot store is read if it is there, never
    made, and no git that writes is run."""
    from ..snapshots import snapshot_files, workspace

    ref_a, ref_b = resolve(conn, a), resolve(conn, b)
    state = state_diff(frame(conn, ref_a)["state"], frame(conn, ref_b)["state"])
    files: dict[str, Any] = {}
    try:
        commit_a, _ = pointer(conn, ref_a)
        commit_b, _ = pointer(conn, ref_b)
        files["stat"] = snapshot_files.diff_stat(root, commit_a, commit_b, read_only)
        if not stat_only:
            files["diff"] = snapshot_files.unified_diff(
                root, commit_a, commit_b, read_only=read_only
            )
    except SnapshotPending as exc:  # the files' diff is not known yet
        files = {"error": str(exc), "pending": True}
    except (FrameError, workspace.WorkspaceError) as exc:
        files = {"error": str(exc)}
    return str(ref_a), str(ref_b), state, files


def state_diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """What changed from state `a` to state `b` (two frame snapshots): agents, claims,
    errors and failed paths added, removed and changed, the task, the counters."""

    def keyed(state: dict[str, Any], section: str, key: tuple[str, ...]) -> dict[Any, Any]:
        return {tuple(item.get(k) for k in key): item for item in state.get(section) or []}

    out: dict[str, Any] = {}
    for section, key in (
        ("agents", ("id",)),
        ("claims", ("agent", "path")),
        ("errors", ("ladder",)),
        ("failed_paths", ("approach", "file")),
    ):
        before, after = keyed(a, section, key), keyed(b, section, key)
        changed = []
        for k in sorted(set(before) & set(after), key=str):
            fields = {
                f: [before[k].get(f), after[k].get(f)]
                for f in sorted(set(before[k]) | set(after[k]))
                if before[k].get(f) != after[k].get(f)
            }
            if fields:
                changed.append({"key": list(k), "changes": fields})
        out[section] = {
            "added": [after[k] for k in sorted(set(after) - set(before), key=str)],
            "removed": [before[k] for k in sorted(set(before) - set(after), key=str)],
            "changed": changed,
        }
    out["task"] = None if a.get("task") == b.get("task") else [a.get("task"), b.get("task")]
    counters_a, counters_b = a.get("counters") or {}, b.get("counters") or {}
    out["counters"] = {
        k: [counters_a.get(k), counters_b.get(k)]
        for k in sorted(set(counters_a) | set(counters_b))
        if counters_a.get(k) != counters_b.get(k)
    }
    return out


def is_empty(diff: dict[str, Any]) -> bool:
    return (
        not diff["task"]
        and not diff["counters"]
        and not any(
            part["added"] or part["removed"] or part["changed"]
            for name, part in diff.items()
            if isinstance(part, dict) and "added" in part
        )
    )
