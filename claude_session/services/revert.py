"""Reverting the workspace to a frame, safely, and undoing that.

`plan` says what a revert would do: restore the files that differ, create the ones that are
missing, delete the ones the frame did not have; and which of those paths were changed outside
the recorded tool calls since the last snapshot (someone's own edits), which `execute` refuses
unless forced. `execute` holds the project's capture lock, snapshots the workspace first (the
safety snapshot that `--undo` goes back to), restores only the paths that differ, snapshots
the result, and records RevertStarted, a 'revert' frame and RevertFinished. Nothing is ever
deleted from the history: an undo is one more revert.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

import apsw

from ..core import db, frames
from . import capture_control, timetravel, workspace

LOCK_WAIT_SECONDS = 30.0
ACTIONS = {"M": "restore", "D": "create", "A": "delete"}  # frame -> now status, seen backwards


@dataclass
class Plan:
    target: str  # what we go back to: a frame address, or "undo of revert N"
    commit: str  # the snapshot commit whose files the workspace gets
    session_id: str  # the session the revert is recorded in
    changes: list[tuple[str, str]] = field(default_factory=list)  # (restore|create|delete, path)
    outside: list[str] = field(default_factory=list)  # changed since the last snapshot

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "commit": self.commit,
            "changes": [{"action": a, "path": p} for a, p in self.changes],
            "changed_outside_recorded_tool_calls": self.outside,
        }


class RevertError(Exception):
    """A revert that cannot be done as asked (clear message for the user)."""


def plan(conn: apsw.Connection, root: str, address: str, paths: list[str] | None = None) -> Plan:
    ref = timetravel.resolve(conn, address)
    try:
        commit, own = timetravel.pointer(conn, ref)
    except timetravel.FrameError as exc:
        raise RevertError(str(exc)) from exc
    return _plan_to(
        conn,
        root,
        str(ref) if own == ref else f"{ref} (snapshot of {own})",
        commit,
        ref.session_id,
        paths,
    )


def plan_undo(conn: apsw.Connection, root: str) -> Plan:
    """Back to the state before the latest revert (its safety snapshot)."""
    rows = conn.execute(
        "SELECT id, session_id, detail FROM timeline_events WHERE name = 'RevertFinished'"
        " ORDER BY id DESC LIMIT 1"
    ).fetchall()
    if not rows:
        raise RevertError("nothing to undo: no revert has been recorded in this project")
    event_id, session_id, detail = rows[0]
    safety = json.loads(str(detail)).get("safety_commit")
    if not safety:
        raise RevertError(f"revert {event_id} has no safety snapshot to go back to")
    return _plan_to(conn, root, f"undo of revert {event_id}", str(safety), str(session_id), None)


def _plan_to(
    conn: apsw.Connection,
    root: str,
    target: str,
    commit: str,
    session_id: str,
    paths: list[str] | None,
) -> Plan:
    changes = []
    for status, path in workspace.changed_paths(root, commit, None):
        if paths and not _selected(path, paths):
            continue
        changes.append((ACTIONS.get(status[:1], "restore"), path))
    latest = frames.latest_commit(conn)
    outside: list[str] = []
    if latest:
        touched = {p for _, p in changes}
        outside = sorted(p for _, p in workspace.changed_paths(root, latest, None) if p in touched)
    return Plan(target, commit, session_id, sorted(changes, key=lambda c: c[1]), outside)


def _selected(path: str, wanted: list[str]) -> bool:
    return any(path == w.rstrip("/") or path.startswith(w.rstrip("/") + "/") for w in wanted)


def execute(conn: apsw.Connection, root: str, todo: Plan, force: bool = False) -> dict[str, Any]:
    """Carry out a plan; returns what was done (the revert's id, commits, paths)."""
    if todo.outside and not force:
        raise RevertError(
            "these files were changed outside the recorded tool calls since the last snapshot:"
            f" {', '.join(todo.outside[:10])}; revert with --force to overwrite them, or"
            " --files to leave them out"
        )
    paths = [p for _, p in todo.changes]
    fd = _lock(root)
    try:
        now = time.time()
        safety = workspace.capture(root, label=f"revert-safety/{now:.6f}")
        detail: dict[str, Any] = {
            "target": todo.target,
            "commit": todo.commit,
            "safety_commit": safety.commit,
            "paths": paths,
        }
        with db.Immediate(conn):
            frames.add_timeline_event(
                conn, "RevertStarted", todo.session_id, None, now, json.dumps(detail)
            )
        done = workspace.restore(root, todo.commit, paths) if paths else []
        after = workspace.capture(root, label=f"revert/{now:.6f}")
        finished = time.time()
        with db.Immediate(conn):
            frame_no = frames.commit(
                conn,
                todo.session_id,
                "revert",
                finished,
                summary=f"revert to {todo.target}"[:200],
                files=json.dumps(paths[:200]),
                capture=True,
            )
            frames.record_capture(
                conn,
                [(todo.session_id, frame_no)],
                finished,
                status="captured",
                commit=after.commit,
                files=after.files,
            )
            detail |= {
                "after_commit": after.commit,
                "frame": frame_no,
                "done": [{"action": a, "path": p} for a, p in done],
            }
            frames.add_timeline_event(
                conn, "RevertFinished", todo.session_id, frame_no, finished, json.dumps(detail)
            )
            revert_id = conn.last_insert_rowid()
    finally:
        os.close(fd)
    return {"revert": revert_id, "session_id": todo.session_id, "frame": frame_no} | detail


def _lock(root: str) -> int:
    """The project's capture lock: no snapshot is taken while files are being restored."""
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        fd = capture_control.try_lock(root)
        if fd is not None:
            return fd
        if time.monotonic() > deadline:
            raise RevertError(
                f"the project is locked by a snapshot in progress"
                f" ({capture_control.lock_path(root)}); try again"
            )
        time.sleep(0.05)
