"""The workspace capture process: `python -m claude_session.services.capture ROOT`.

Started by a hook whose frame asked for a workspace snapshot (see capture_control). Under the
project's capture lock, it snapshots the work tree into claude-session's own snapshot
repository (services/workspace.py) and fills in the pointer of every frame that was pending
when the capture started, with the user's HEAD, branch and jj ids (services/vcs.py); then
again while anything is pending. Frames are pending together only when no file-changing tool
ran between them (its PreToolUse waits for pending snapshots), so they share one snapshot.
"""

from __future__ import annotations

import os
import sys
import time

import apsw

from ..core import db, executions, facts, frames, log, state
from ..core.config import megabytes
from ..core.paths import db_path
from . import capture_control, configuration, timetravel, vcs, workspace


def run(root: str) -> int:
    """Capture until nothing is pending; the number of frames given a pointer."""
    keep_facts(root)
    done = 0
    while True:
        fd = capture_control.try_lock(root)
        if fd is None:
            return done  # another capture process runs: it re-reads the pending rows
        try:
            conn = db.connect(db_path(root), create=False)
            try:
                while True:
                    count = capture_pending(conn, root)
                    if not count:
                        break
                    done += count
                pack_states(conn)
            finally:
                conn.close()
        finally:
            os.close(fd)
        if done:
            _keep_bounded(root)
        # A hook may have committed a frame after our last read and seen our lock held:
        # look once more now that the lock is free.
        conn = db.connect(db_path(root), create=False)
        try:
            if not executions.snapshot_pending(conn):
                return done
        finally:
            conn.close()


def pack_states(conn: apsw.Connection) -> int:
    """Pack the frame states the hooks stored as text (core/frames.py): here, off the agent's
    path, once the snapshots it waits for are taken; how many were packed."""
    packed = 0
    while True:
        count = frames.pack_states(conn)
        packed += count
        if count < frames.PACK_BATCH or executions.snapshot_pending(conn):
            return packed  # a new snapshot asked for goes first


def capture_pending(conn: apsw.Connection, root: str) -> int:
    pending = frames.pending_captures(conn)
    if not pending:
        return 0
    session_id, frame_no, _ = pending[-1]
    started = time.time()
    status, note, commit, files = "captured", None, None, None
    try:
        captured = workspace.capture(
            root, label=f"{session_id}/{frame_no}", max_file_bytes=_max_bytes(root)
        )
        commit, files = captured.commit, captured.files
        if captured.skipped_large:
            # A name that is not UTF-8 is kept as its bytes' escapes: SQLite takes only UTF-8.
            names = [
                p.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                for p in captured.skipped_large[:10]
            ]
            note = "skipped (too large): " + ", ".join(names)
    except workspace.WorkspaceError as exc:
        status, note = "failed", str(exc)[:500]
    except Exception as exc:  # our bug: the frames say so, and the log has it
        status, note = "failed", f"{type(exc).__name__}: {exc}"[:500]
        log.write(root, "ERROR", "capture", note)
    where = vcs.pointer(root) if status == "captured" else vcs.Pointer()
    if len(pending) > 1 and note is None:
        note = f"one snapshot for {len(pending)} frames (no tool changed files between them)"
    with db.Immediate(conn):
        frames.record_capture(
            conn,
            [(s, f) for s, f, _ in pending],
            started,
            status=status,
            commit=commit,
            head=where.git_head,
            branch=where.git_branch,
            jj_commit=where.jj_commit_id,
            jj_operation=where.jj_operation_id,
            files=files,
            note=note,
        )
    return len(pending)


def keep_facts(root: str) -> None:
    """The project facts its files tell (language, tools, test and lint commands) into
    project_state; a command an agent ran is not overwritten by a guess."""
    found = facts.detect(root)
    conn = db.connect(db_path(root), create=False)
    try:
        with db.Immediate(conn):
            for key in ("test_command", "lint_command"):
                if key in found and state.exists(conn, key):
                    del found[key]
            state.set_values(conn, found, time.time(), "detected from the project's files")
    finally:
        conn.close()


def _keep_bounded(root: str) -> None:
    """Past the configured size, the oldest ended sessions' snapshots go (see prune)."""
    limit = megabytes(configuration.load_or_defaults(root).values, "snapshot_store_max_mb")
    if workspace.size_bytes(root) <= limit:
        return
    conn = db.connect(db_path(root), create=False)
    try:
        timetravel.prune_workspace(conn, root, limit)
    finally:
        conn.close()


def _max_bytes(root: str) -> int:
    return megabytes(configuration.load_or_defaults(root).values, "snapshot_max_file_mb")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m claude_session.services.capture PROJECT_ROOT\n")
        return 2
    root = os.path.abspath(args[0])
    try:
        run(root)
    except Exception as exc:  # a background process: the log, never a traceback on a tty
        log.write(root, "ERROR", "capture", f"{type(exc).__name__}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
