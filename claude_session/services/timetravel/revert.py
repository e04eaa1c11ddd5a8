"""Reverting the workspace to a frame, or one agent's work, safely; and undoing that.

The promise: `revert` followed by `revert --undo` leaves every file and folder of the project
as it was (content, mode, links as links), or the revert refuses and changes nothing; and a
revert changes nothing outside the project and nothing a snapshot could not bring back.

`plan` says what a revert would do: restore the files that differ, create the ones that are
missing, delete the ones the frame did not have. It leaves alone, and names, what it must
not touch (services/timetravel/safe_write.py: nested repositories, files no snapshot captured), and
lists the paths changed outside the recorded tool calls since the frame
(services/timetravel/history.py: the user's own files and edits), which `execute` refuses unless
forced.

`execute` holds the project's capture lock, takes the safety snapshot (every path it will
touch, whatever its size), plans again against that snapshot and refuses if anything moved
since the plan was shown, records RevertStarted with the safety snapshot and a manifest of
modes and folders, makes the changes, snapshots the result and records a 'revert' frame and
RevertFinished. An undo is one more revert, back to the safety snapshot, for the paths the
revert touched. Nothing is ever deleted from the history.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field, replace
from typing import Any

import apsw

from ...core import db, frames, trust
from ...core.config import megabytes
from .. import config_file
from ..snapshots import (
    capture,
    capture_control,
    revert_store,
    snapshot_files,
    snapshot_rules,
    workspace,
)
from . import history, safe_write, timetravel

LOCK_WAIT_SECONDS = 30.0
Change = safe_write.Change
SECRET = snapshot_rules.SECRET
PURGED = (
    "its content was taken out of the snapshots (prune --purge): the snapshot's word that it"
    " was absent says nothing; left as it is"
)


@dataclass
class Plan:
    target: str  # what we go back to: a frame address, "undo of revert N", an agent's work
    commit: str  # the snapshot the files go back to (an agent's revert: the earliest one)
    session_id: str  # the session the revert is recorded in
    changes: list[Change] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)  # changed outside recorded tool calls
    left: list[tuple[str, str]] = field(default_factory=list)  # (path, why): not touched
    # How to plan again at execution: (snapshot, the paths it gives, or None: all) pairs...
    wants: list[tuple[str, list[str] | None]] = field(default_factory=list)
    since: str = ""  # ...and the snapshot after which changes are looked at
    modes: dict[str, list[object]] | None = None  # an undo: the manifest to put back
    agent: str | None = None  # `revert --agent`: whose work
    only: list[str] | None = None  # `revert --agent --files`: these paths (and below) only

    @property
    def headline(self) -> str:
        """What the revert does, in words: `revert to 3a4b5c6d:7`, `undo the work of agent X
        since ...`, `undo of revert 2`."""
        if self.agent is not None:
            return f"undo {self.target}"
        if self.target.startswith("undo of revert"):
            return self.target
        return f"revert to {self.target}"

    @property
    def conflicts(self) -> list[str]:
        return [c.path for c in self.changes if c.conflict]

    @property
    def needs_force(self) -> str | None:
        """Why this revert, carried out without --force, refuses or changes nothing; None
        when it goes ahead. A dry run says it, so the real run holds no surprise."""
        if self.outside:
            return _outside_refusal(self.outside)
        if self.changes and len(self.conflicts) == len(self.changes):
            return "every file it would change is a conflict: someone else changed it too"
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "commit": self.commit,
            "agent": self.agent,
            "changes": [c.as_dict() for c in self.changes],
            "changed_outside_recorded_tool_calls": self.outside,
            "conflicts": self.conflicts,
            "left_as_is": [{"path": p, "why": w} for p, w in self.left],
            "needs_force": self.needs_force,
        }


class RevertError(Exception):
    """A revert that cannot be done as asked (clear message for the user)."""


def _max_bytes(root: str) -> int:
    return megabytes(config_file.load_or_defaults(root).values, "snapshot_max_file_mb")


def settle(conn: apsw.Connection, root: str) -> None:
    """Take the snapshots still pending first, so every frame and the plan's view of who
    changed what are as they were (frames committed just before are otherwise taken later)."""
    if frames.pending_captures(conn):
        fd = _lock(root)
        try:
            capture.capture_all_pending(conn, root)
        finally:
            os.close(fd)


def plan(conn: apsw.Connection, root: str, address: str, paths: list[str] | None = None) -> Plan:
    settle(conn, root)
    ref = timetravel.resolve(conn, address)
    try:
        commit, own = timetravel.pointer(conn, ref)
    except timetravel.FrameError as exc:
        raise RevertError(str(exc)) from exc
    wanted = [p.rstrip("/") for p in paths] if paths else None
    todo = Plan(
        str(ref) if own == ref else f"{ref} (snapshot of {own})",
        commit,
        ref.session_id,
        wants=[(commit, wanted)],
        since=commit,
    )
    return _fill(conn, root, todo, None)


def plan_undo(conn: apsw.Connection, root: str) -> Plan:
    """Back to the state before the latest revert (its safety snapshot), for the paths it
    touched, with the modes and folders it recorded."""
    settle(conn, root)
    rows = conn.execute(
        "SELECT id, session_id, detail FROM timeline_events WHERE name = 'RevertStarted'"
        " ORDER BY id DESC LIMIT 1"
    ).fetchall()
    if not rows:
        raise RevertError("nothing to undo: no revert has been recorded in this project")
    event_id, session_id, detail_text = rows[0]
    detail = json.loads(str(detail_text))
    safety = detail.get("safety_commit")
    if not safety:
        raise RevertError("the last revert has no safety snapshot to go back to")
    paths = [str(p) for p in detail.get("paths") or []]
    modes = detail.get("manifest") if isinstance(detail.get("manifest"), dict) else None
    finished = conn.execute(
        "SELECT id, json_extract(detail, '$.after_commit') FROM timeline_events"
        " WHERE name = 'RevertFinished' AND json_extract(detail, '$.safety_commit') = ?",
        (safety,),
    ).fetchall()
    after = finished[0][1] if finished and finished[0][1] else safety
    # the number `revert` printed (one that never finished: the next one's)
    last = int(finished[0][0] if finished else event_id)  # type: ignore[arg-type]
    number = revert_number(conn, last) + (not finished)
    todo = Plan(
        f"undo of revert {number}",
        str(safety),
        str(session_id),
        wants=[(str(safety), paths)] if paths else [],
        since=str(after),
        modes=modes,
    )
    return _fill(conn, root, todo, None)


def plan_agent(
    conn: apsw.Connection,
    root: str,
    agent: str,
    address: str | None = None,
    paths: list[str] | None = None,
) -> Plan:
    """Undo only what `agent` (a subagent's id or prefix, or `main`) changed since the frame
    at `address` (default: since it started): each file goes back to its version before the
    agent's first change to it; a file someone else changed too is a conflict."""
    settle(conn, root)
    session_id, agent_id = _find_agent(conn, agent, address)
    if address:
        start = timetravel.resolve(conn, address)
    else:
        first = conn.execute(
            "SELECT min(frame_no) FROM frames WHERE session_id = ? AND agent_id = ?",
            (session_id, agent_id),
        ).fetchall()[0][0]
        if not isinstance(first, int):
            raise RevertError(f"agent {agent} has no frames in session {session_id}")
        start = timetravel.FrameRef(session_id, first)
    try:
        commit, _ = timetravel.pointer(conn, start)
    except timetravel.FrameError as exc:
        raise RevertError(str(exc)) from exc
    name = "main" if agent_id == session_id else agent_id
    todo = Plan(f"the work of agent {name} since {start}", commit, session_id, since=commit)
    todo.agent = agent_id
    todo.only = [p.rstrip("/") for p in paths] if paths else None
    return _fill(conn, root, todo, None)


def _find_agent(conn: apsw.Connection, agent: str, address: str | None) -> tuple[str, str]:
    """(session, agent id) for `main` or an agent id (prefix)."""
    if agent == "main":
        if address:
            session_id = timetravel.resolve(conn, address).session_id
            return session_id, session_id  # the main thread's frames carry the session's id
        session = timetravel.latest_session(conn)
        if session is None:
            raise RevertError("no frames recorded yet in this project")
        return session, session
    found = conn.execute(
        "SELECT DISTINCT agent_id, session_id FROM frames WHERE agent_id >= ?1"
        " AND agent_id < ?1 || x'ff' LIMIT 6",
        (agent,),
    ).fetchall()
    exact = [r for r in found if r[0] == agent]
    matches = exact or [r for r in found if str(r[0]).startswith(agent)]
    if len({r[0] for r in matches}) != 1:
        what = "no agent with frames" if not matches else "several agents"
        raise RevertError(f"{what} match {agent!r}: give `main` or more of an agent id")
    return str(matches[0][1]), str(matches[0][0])


def _fill(
    conn: apsw.Connection,
    root: str,
    todo: Plan,
    now_tree: str | None,
    large: frozenset[str] = frozenset(),
) -> Plan:
    """Work out the plan's changes against `now_tree` (None: the work tree now). A file over
    the size cap (`large`: known so from the plan shown) has no history in the snapshots, so
    whether someone else changed it cannot be told: it is not counted as changed outside."""
    max_bytes = _max_bytes(root)
    now = now_tree or revert_store.current_tree(root, max_bytes)
    if todo.agent is not None:
        todo.wants, conflicted = _agent_wants(conn, root, todo, now)
    else:
        conflicted = set()
    raw: list[tuple[str, revert_store.RawChange]] = []
    for source, paths in todo.wants:
        if paths == []:
            continue
        raw += [(source, c) for c in revert_store.raw_changes(root, source, now, paths)]
    todo.changes, todo.left = safe_write.screen(root, raw, max_bytes)
    _leave_unkept(conn, root, todo)
    seen = {c.path for c in todo.changes} | {p for p, _ in todo.left}
    for source, paths in todo.wants:
        if paths != []:
            found = revert_store.tree_paths(root, source, paths)
            todo.left += safe_write.unchanged_but_unrestorable(root, found, seen)
            seen |= set(found)
    todo.left.sort()
    for change in todo.changes:
        change.conflict = change.path in conflicted
        change.large = change.large or change.path in large
    if todo.agent is None:
        touched = {c.path for c in todo.changes if not c.large}
        todo.outside = sorted(_outside(conn, root, todo.since, now, touched))
    return todo


def _leave_unkept(conn: apsw.Connection, root: str, todo: Plan) -> None:
    """What a revert leaves though a snapshot's word would have it act: a file the snapshot
    rules leave out (a secret file: no snapshot takes it now, though one of an older version
    may hold it), and a deletion of a path whose content `prune --purge` took out (its absence
    there says nothing). And every such secret file on disk within the plan's reach, named,
    so no one expects the revert to bring it back."""
    patterns = snapshot_rules.rules(root)
    secret = snapshot_rules.left_out(root, [c.path for c in todo.changes], patterns)
    purged = frames.purged(conn)
    kept = []
    for change in todo.changes:
        if change.path in secret:
            todo.left.append((change.path, SECRET.format(pattern=secret[change.path])))
        elif change.action == "delete" and _under(change.path, purged):
            todo.left.append((change.path, PURGED))
        else:
            kept.append(change)
    todo.changes = kept
    scope = todo.only if todo.agent is not None else _scope(todo.wants)
    seen = {p for p, _ in todo.left}
    for path, pattern in sorted(workspace.left_out_on_disk(root).items()):
        if path not in seen and (scope is None or _under(path, scope)):
            todo.left.append((path, SECRET.format(pattern=pattern)))


def _scope(wants: list[tuple[str, list[str] | None]]) -> list[str] | None:
    """The paths a plan reaches (None: all)."""
    if any(paths is None for _, paths in wants):
        return None
    return [p for _, paths in wants for p in paths or []]


def _under(path: str, tops: list[str]) -> bool:
    return any(path == top or path.startswith(top + "/") for top in tops)


def _outside(conn: apsw.Connection, root: str, since: str, now: str, paths: set[str]) -> set[str]:
    if not paths:
        return set()
    steps = history.transitions_since(conn, root, since)
    latest = frames.latest_commit(conn)
    to_now = revert_store.raw_changes(root, latest, now, sorted(paths)) if latest else []
    return history.changed_outside(steps, to_now, paths)


def _agent_wants(
    conn: apsw.Connection, root: str, todo: Plan, now: str
) -> tuple[list[tuple[str, list[str] | None]], set[str]]:
    """For each file the agent changed since the plan's snapshot: the snapshot before its
    first change (grouped by snapshot); and the conflicts: files someone else (another agent,
    the user) changed between the agent's first and last change, or that are not now as the
    agent last left them. A revert and its undo in between change nothing that counts."""
    agent, only = str(todo.agent), todo.only
    seen: dict[str, list[tuple[int, set[str], str]]] = {}  # path -> (step, who, after)
    steps = history.transitions_since(conn, root, todo.since)
    for n, step in enumerate(steps):
        for change in step.changes:
            path = change.path
            if only and not any(path == w or path.startswith(w + "/") for w in only):
                continue
            seen.setdefault(path, []).append((n, step.who_changed(path), step.after))
    first_before: dict[str, str] = {}
    last_after: dict[str, str] = {}
    conflicts: set[str] = set()
    for path, changes in seen.items():
        mine = [(n, after) for n, who, after in changes if agent in who]
        if not mine:
            continue
        first, last = mine[0][0], mine[-1][0]
        first_before[path] = steps[first].before
        last_after[path] = mine[-1][1]
        if any(who - {agent, history.REVERT} for n, who, _ in changes if first <= n <= last):
            conflicts.add(path)
    by_last: dict[str, list[str]] = {}
    for path, after in last_after.items():
        by_last.setdefault(after, []).append(path)
    for after, paths in by_last.items():
        conflicts |= {c.path for c in revert_store.raw_changes(root, after, now, sorted(paths))}
    grouped: dict[str, list[str]] = {}
    for path, source in first_before.items():
        grouped.setdefault(source, []).append(path)
    return [(source, sorted(paths)) for source, paths in grouped.items()], conflicts


def execute(conn: apsw.Connection, root: str, todo: Plan, force: bool = False) -> dict[str, Any]:
    """Carry out a plan; returns what was done (the revert's id, commits, paths). Never on
    the word of a database this user's claude-session did not write (core/trust.py)."""
    from ...core.paths import db_path

    try:
        trust.require_ours(db_path(root), conn, "reverted")
    except trust.NotOurs as exc:
        raise RevertError(str(exc)) from exc
    _refuse_outside(todo, force)
    fd = _lock(root)
    try:
        capture.capture_all_pending(conn, root)  # a frame committed since the plan
        now = time.time()
        large = [c.path for c in todo.changes if c.large]
        safety = revert_store.safety_capture(
            root, label=f"revert-safety/{now:.6f}", max_file_bytes=_max_bytes(root), include=large
        )
        approved = {(c.action, c.path) for c in todo.changes}
        again = _fill(
            conn,
            root,
            replace(todo, changes=[], left=[], outside=[]),
            safety.tree,
            frozenset(large),
        )
        moved = sorted(c.path for c in again.changes if (c.action, c.path) not in approved)
        if moved or set(again.outside) - set(todo.outside):
            raise RevertError(
                "the files changed while the revert was being prepared"
                f" ({', '.join((moved or again.outside)[:5])}): nothing was changed; run it again"
            )
        _refuse_outside(again, force)
        changes = [c for c in again.changes if force or not c.conflict]
        paths = [c.path for c in changes]
        detail: dict[str, Any] = {
            "target": todo.target,
            "commit": todo.commit,
            "agent": todo.agent,
            "safety_commit": safety.commit,
            "paths": paths,
            "left": [{"path": p, "why": w} for p, w in again.left],
            "manifest": safe_write.manifest(root, paths),
        }
        with db.Immediate(conn):
            frames.add_timeline_event(
                conn, "RevertStarted", todo.session_id, None, now, json.dumps(detail)
            )
        error = None
        done: list[tuple[str, str]] = []
        try:
            done = safe_write.apply(
                root,
                changes,
                lambda commit, some: snapshot_files.write_paths(root, commit, some),
                detail["manifest"],
                todo.modes,
            )
        except (OSError, workspace.WorkspaceError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        revert_id, frame_no = _finish(conn, root, todo, detail, done, error)
    finally:
        os.close(fd)
    if error is not None:
        raise RevertError(
            f"the revert stopped part-way ({error}); `claude-session revert --undo` brings the"
            " files back as they were before it"
        )
    return {"revert": revert_id, "session_id": todo.session_id, "frame": frame_no} | detail


def _refuse_outside(todo: Plan, force: bool) -> None:
    if todo.outside and not force:
        raise RevertError(_outside_refusal(todo.outside))


def _outside_refusal(outside: list[str]) -> str:
    """Why a revert refuses without --force: files changed outside the recorded tool calls
    (said by the dry run and by the refusal alike)."""
    return (
        "these files were changed outside the recorded tool calls since the frame:"
        f" {', '.join(outside[:10])}; revert with --force to overwrite them (undo brings them"
        " back), or --files to leave them out"
    )


def _finish(
    conn: apsw.Connection,
    root: str,
    todo: Plan,
    detail: dict[str, Any],
    done: list[tuple[str, str]],
    error: str | None,
) -> tuple[int, int]:
    """The snapshot after, the 'revert' frame and RevertFinished (also after a failure, so
    that the history says what happened)."""
    paths = detail["paths"]
    after = workspace.capture(root, label=f"revert/{time.time():.6f}")
    finished = time.time()
    with db.Immediate(conn):
        frame_no = frames.commit(
            conn,
            todo.session_id,
            "revert",
            finished,
            summary=todo.headline[:200],
            files=json.dumps(paths),  # all of them: history.py reads which paths a revert made
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
        if error is not None:
            detail["error"] = error
        frames.add_timeline_event(
            conn, "RevertFinished", todo.session_id, frame_no, finished, json.dumps(detail)
        )
        revert_id = revert_number(conn, int(conn.last_insert_rowid()))
    return revert_id, frame_no


def revert_number(conn: apsw.Connection, event_id: int) -> int:
    """A revert's number in its project, from 1: how many reverts finished up to its
    RevertFinished event (the event's id counts every timeline event of the project)."""
    found = conn.execute(
        "SELECT count(*) FROM timeline_events WHERE name = 'RevertFinished' AND id <= ?",
        (event_id,),
    ).fetchall()
    return int(found[0][0])  # type: ignore[arg-type]


def _lock(root: str) -> int:
    """The project's capture lock: no snapshot is taken while files are being restored."""
    fd = capture_control.take_lock(root, LOCK_WAIT_SECONDS)
    if fd is None:
        raise RevertError(
            f"the project is locked by a snapshot in progress"
            f" ({capture_control.lock_path(root)}); try again"
        )
    return fd
