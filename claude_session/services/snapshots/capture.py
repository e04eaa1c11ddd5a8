"""The workspace capture process: `python -m claude_session.services.snapshots.capture ROOT`.

Started by a hook whose frame asked for a workspace snapshot (see capture_control). Under the
project's capture lock, it snapshots the work tree into claude-session's own snapshot
repository (services/snapshots/workspace.py) and fills in the pointer of every frame that was
pending when the capture started, with the user's HEAD, branch and jj ids
(services/snapshots/vcs.py); then again while anything is pending, at most every ROUND_SECONDS, and
it stays LINGER_SECONDS after the last frame, so that a stream of frames costs one process and a
few walks of the work tree a second, not one of each per frame. No hook waits for it: a tool that
started after a frame was committed kept what it was about to change
(services/snapshots/before_images.py), and the frame's snapshot is built from the capture with
those files put back as they were.
"""

from __future__ import annotations

import bisect
import os
import sys
import time

import apsw

from ...core import db, executions, facts, frames, log, state
from ...core.config import megabytes
from ...core.figures import plural
from ...core.paths import db_path
from ...core.redact import redact  # a frame's note: redacted whole, then cut
from .. import config_file
from . import before_images, capture_control, snapshot_over, vcs, workspace

# A capture at most this often while frames keep coming: each walks the work tree however few
# frames it serves, and no hook waits for it (before_images).
ROUND_SECONDS = 1.0
LINGER_SECONDS = 2.0  # nothing pending this long: exit; a burst's next frame starts no process
IDLE_POLL_SECONDS = 0.05
BOUND_EVERY_SECONDS = 30.0  # the store's size checked at most this often while at work


def run(root: str) -> int:
    """Capture while frames are pending and for a moment after; the number of frames given a
    pointer."""
    keep_facts(root)
    done = 0
    while True:
        fd = capture_control.try_lock(root)
        if fd is None:
            return done  # another capture process runs: it re-reads the pending rows
        capture_control.started(root)
        try:
            conn = _connect(root)
            try:
                done += _serve(conn, root)
            finally:
                conn.close()
        finally:
            os.close(fd)
        # A hook may have committed a frame after our last read and seen our lock held:
        # look once more now that the lock is free.
        conn = _connect(root)
        try:
            if not executions.snapshot_pending(conn):
                return done
        finally:
            conn.close()


def _serve(conn: apsw.Connection, root: str) -> int:
    """Capture rounds, the project's capture lock held: a backlog batch after batch, a stream
    of frames one round per ROUND_SECONDS, until nothing is pending for LINGER_SECONDS or
    someone waits for the lock."""
    done = unbounded = 0
    idle_since = bounded_at = time.monotonic()
    kept: dict[str, before_images.Entry] = {}  # the entries read so far (before_images.read_all)
    while True:
        began = time.monotonic()
        count = capture_pending(conn, root, kept)
        done += count
        unbounded += count
        if count:
            pack_states(conn)
            idle_since = time.monotonic()
        if unbounded and (not count or began - bounded_at >= BOUND_EVERY_SECONDS):
            _keep_bounded(root)
            unbounded, bounded_at = 0, time.monotonic()
        if count >= CAPTURE_BATCH:
            continue  # a backlog: its next batch at once
        if capture_control.lock_wanted(root):
            return done  # a revert waits for the lock (capture_control.take_lock)
        if not count and time.monotonic() - idle_since >= LINGER_SECONDS:
            return done
        pause = ROUND_SECONDS - (time.monotonic() - began) if count else IDLE_POLL_SECONDS
        time.sleep(max(pause, IDLE_POLL_SECONDS))


def pack_states(conn: apsw.Connection) -> int:
    """Pack the frame states the hooks stored as text (core/frames.py): here, off the agent's
    path, once the snapshots it waits for are taken; how many were packed."""
    packed = 0
    while True:
        count = frames.pack_states(conn)
        packed += count
        if count < frames.PACK_BATCH or executions.snapshot_pending(conn):
            return packed  # a new snapshot asked for goes first


def capture_all_pending(conn: apsw.Connection, root: str) -> int:
    """Capture until nothing is pending (the caller holds the project's capture lock); the
    number of frames given a pointer."""
    done = 0
    while count := capture_pending(conn, root):
        done += count
    return done


CAPTURE_BATCH = 256  # frames one capture serves at most: its write transaction stays short


def capture_pending(
    conn: apsw.Connection, root: str, cache: dict[str, before_images.Entry] | None = None
) -> int:
    """Snapshot the work tree for the oldest frames pending. A frame committed before a later
    tool started gets the files that tool changed as they were before it (before_images): on
    the snapshot taken now, or, where a tool that names no file ran since, on the last one."""
    pending = frames.pending_captures(conn)[:CAPTURE_BATCH]
    if not pending:
        return 0
    session_id, frame_no, _ = pending[-1]
    last = frames.latest_commit(conn)
    started = time.time()
    snapshots: dict[tuple[str, ...], Snapshot] = {}
    try:
        captured = workspace.capture(
            root, label=f"{session_id}/{frame_no}", max_file_bytes=_max_bytes(root)
        )
        note = None
        if captured.skipped_large:
            # A name that is not UTF-8 is kept as its bytes' escapes: SQLite takes only UTF-8.
            note = "skipped (too large): " + ", ".join(_printable(captured.skipped_large[:10]))
            note = redact(note)  # whole, before the notes are joined and cut
        snapshots[("now",)] = ("captured", note, captured.commit, captured.files)
        # Read after the capture: a tool that wrote while it ran has its entry by now.
        entries = before_images.read_all(root, cache)
    except workspace.WorkspaceError as exc:
        snapshots[("now",)] = ("failed", redact(str(exc))[:500], None, None)
        entries = []
    except Exception as exc:  # our bug: the frames say so, and the log has it
        snapshots[("now",)] = ("failed", redact(f"{type(exc).__name__}: {exc}")[:500], None, None)
        log.write(root, "ERROR", "capture", str(snapshots[("now",)][1]))
        entries = []
    now = snapshots[("now",)]
    if last is not None and now[0] == "captured":
        snapshots[("last",)] = ("captured", None, last, None)
    where = vcs.pointer(root) if now[0] == "captured" else vcs.Pointer()
    groups: dict[tuple[str, ...], list[tuple[str, int]]] = {}
    notes: dict[tuple[str, int], str] = {}
    wanted: dict[tuple[str, ...], tuple[tuple[str, ...], list[before_images.Entry], str]] = {}
    times = [requested for _, _, requested in pending]
    ends = executions.tool_ends(conn, sorted({e.use for e in entries if e.use}))
    before = _before_all(entries, times)
    running = _running(entries, ends, times)
    for s, f, requested in pending:
        put, blurred, covered = before[requested]
        if requested in running:  # tools of other agents ran across it: their changes go back
            flying, flying_blurred, unknown = running[requested]
            put = {p: e for p, e in (put | flying).items() if p not in unknown}
            blurred = blurred | flying_blurred
        base = ("last",) if covered and not blurred and ("last",) in snapshots else ("now",)
        if covered and base == ("now",):
            blurred.add("a tool")
        key = base + tuple(sorted(e.name for e in put.values()))
        groups.setdefault(key, []).append((s, f))
        if blurred:
            notes[(s, f)] = f"may hold changes of {', '.join(sorted(blurred))}, started before it"
        if key not in snapshots and key not in wanted:
            wanted[key] = (base, list(put.values()), f"{s}/{f}")
    snapshots |= _earlier(root, snapshots, wanted)
    with db.Immediate(conn):
        for key, members in groups.items():
            status, note, commit, files = snapshots[key]
            shared = len(members) > 1 and f"one snapshot for {plural(len(members), 'frame')}"
            for member in members:
                said = [n for n in (notes.get(member), note, shared) if n]
                frames.record_capture(
                    conn,
                    [member],
                    started,
                    status=status,
                    commit=commit,
                    head=where.git_head,
                    branch=where.git_branch,
                    jj_commit=where.jj_commit_id,
                    jj_operation=where.jj_operation_id,
                    files=files,
                    note="; ".join(said)[:500] or None,
                )
    still = frames.pending_captures(conn)
    oldest = still[0][2] if still else None
    before_images.discard(root, time.time(), oldest, _needed(entries, ends, oldest, time.time()))
    return len(pending)


def _needed(
    entries: list[before_images.Entry],
    ends: dict[str, float | None],
    oldest: float | None,
    now: float,
) -> frozenset[str]:
    """The entries of tool calls still running (for at most executions.LIVE_SECONDS: one whose
    end never came is let go), or that ended after the oldest frame still pending: a frame
    committed before such a call ended needs them, however long ago the call started."""
    needed = set()
    for entry in entries:
        if entry.use is None or entry.use not in ends:
            continue
        end = ends[entry.use]
        running = end is None and entry.at > now - executions.LIVE_SECONDS
        if running or (end is not None and oldest is not None and end > oldest):
            needed.add(entry.name)
    return frozenset(needed)


Snapshot = tuple[str, "str | None", "str | None", "int | None"]  # status, note, commit, files


Before = tuple[dict[str, before_images.Entry], set[str], bool]  # put, blurred, covered


class _Since:
    """What the kept entries after some moment say, built from the newest entry back: per
    path, the first state kept (an entry of a tool that could not keep its file takes the
    path out), and the tools that changed what was not kept."""

    def __init__(self) -> None:
        self.put: dict[str, before_images.Entry] = {}
        self.blurred: set[str] = set()

    def add_earlier(self, entry: before_images.Entry) -> None:
        if entry.path is None or entry.kind == before_images.UNKNOWN:
            self.blurred.add(entry.tool)
            if entry.path is not None:
                self.put.pop(entry.path, None)
        else:
            self.put[entry.path] = entry


def _before_all(entries: list[before_images.Entry], requested: list[float]) -> dict[float, Before]:
    """For each frame committed at a time of `requested`: per path, the first state kept
    after it (what the file was until a tool changed it); the tools that changed what was
    not kept; and whether the first tool after it that names no file kept every file changed
    since the last snapshot (then the frame is that snapshot plus what was kept until that
    tool, and nothing after it counts).

    One walk from the newest entry back, the frames newest first: a backlog of frames costs
    the entries once, not once per frame (each frame on its own was the entries after it)."""
    ordered = sorted(entries, key=lambda e: e.at)  # stable: entries of one moment by name
    every = _Since()  # all entries after the frame (markers of covering tools left out)
    window = _Since()  # the entries between the frame and the first marker after it
    first_marker: before_images.Entry | None = None
    out: dict[float, Before] = {}
    j = len(ordered)
    for at in sorted(set(requested), reverse=True):
        while j > 0 and ordered[j - 1].at > at:
            moment = ordered[j - 1].at  # the entries of one moment go together: the first
            i = j - 1  # marker among them bounds the window, and they are all inside it
            while i > 0 and ordered[i - 1].at == moment:
                i -= 1
            group = ordered[i:j]
            j = i
            markers = [e for e in group if e.kind in (before_images.BLUR, before_images.COVER)]
            if markers:
                first_marker, window = markers[0], _Since()
            for entry in reversed(group):
                if entry.kind != before_images.COVER:
                    every.add_earlier(entry)
                    window.add_earlier(entry)
        if first_marker is not None and first_marker.kind == before_images.COVER:
            out[at] = dict(window.put), set(window.blurred), True
        else:
            out[at] = dict(every.put), set(every.blurred), False
    return out


Running = tuple[dict[str, before_images.Entry], set[str], set[str]]  # put, blurred, unknown


def _running(
    entries: list[before_images.Entry], ends: dict[str, float | None], requested: list[float]
) -> dict[float, Running]:
    """For each frame committed at a time of `requested` while a tool call whose entries are
    kept was running (it started at or before the frame and ended after it, or has not ended:
    `ends`, from tool_calls): per path, the state kept by the earliest such call (the file
    before any of them changed it: their changes are in their own frames, committed when they
    end); the tools that named no file, or kept a path they could not read (`blurred`); and
    those paths (`unknown`: the frame cannot be told without that call's changes).

    The files a tool that names no file kept for the pending frames (keep_all) are what those
    frames named, not what it changes: only its marker counts here (it blurs). Entries of a
    call not recorded in tool_calls, and of an older version (no tool_use_id), count only
    before the call started (_before_all)."""
    calls: dict[str, list[before_images.Entry]] = {}
    for entry in entries:
        if entry.use is not None and entry.use in ends:
            calls.setdefault(entry.use, []).append(entry)
    times = sorted(set(requested))
    out: dict[float, Running] = {}
    for use, kept in calls.items():
        start, end = min(e.at for e in kept), ends[use]
        first = bisect.bisect_left(times, start)
        last = len(times) if end is None else bisect.bisect_left(times, end)
        if first >= last:
            continue  # no frame committed while it ran: the usual case
        marker = any(e.path is None for e in kept)
        for at in times[first:last]:
            put, blurred, unknown = out.setdefault(at, ({}, set(), set()))
            for entry in kept:
                if marker or entry.path is None or entry.kind == before_images.UNKNOWN:
                    blurred.add(entry.tool)
                    if not marker and entry.path is not None:
                        unknown.add(entry.path)
                elif entry.path not in put or entry.at < put[entry.path].at:
                    put[entry.path] = entry
    return out


def _earlier(
    root: str,
    snapshots: dict[tuple[str, ...], Snapshot],
    wanted: dict[tuple[str, ...], tuple[tuple[str, ...], list[before_images.Entry], str]],
) -> dict[tuple[str, ...], Snapshot]:
    """Each snapshot `wanted` (key: its base's key, the files to put back as they were before
    their tools ran, a label): made all at once (snapshot_over.capture_over_all); one that has
    nothing to put back, or no base, is its base."""
    made: dict[tuple[str, ...], Snapshot] = {}
    jobs: dict[tuple[str, ...], snapshot_over.Over] = {}
    for key, (base, put, label) in wanted.items():
        status, _, commit, _ = snapshots[base]
        if status != "captured" or not commit or not put:
            made[key] = snapshots[base]
            continue
        keep = [(e.path or "", e.mode, e.content) for e in put if e.kind in ("file", "link")]
        drop = [e.path or "" for e in put if e.kind in ("absent", "large")]
        jobs[key] = snapshot_over.Over(label, commit, keep, drop)
    try:
        done = snapshot_over.capture_over_all(root, list(jobs.values()))
    except workspace.WorkspaceError as exc:  # each frame keeps its later snapshot, said so
        for key in jobs:
            base, put, _ = wanted[key]
            status, _, commit, files = snapshots[base]
            tools = ", ".join(sorted({e.tool for e in put}))
            made[key] = status, redact(f"may hold changes of {tools} ({exc})")[:500], commit, files
        return made
    for (key, _job), capture in zip(jobs.items(), done, strict=True):
        status, note, _, _ = snapshots[wanted[key][0]]
        made[key] = status, note, capture.commit, capture.files
    return made


def _printable(paths: list[str]) -> list[str]:
    return [p.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") for p in paths]


def keep_facts(root: str) -> None:
    """The project facts its files tell (language, tools, test and lint commands) into
    project_state; a command an agent ran is not overwritten by a guess."""
    found = facts.detect(root)
    conn = _connect(root)
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
    limit = megabytes(config_file.load_or_defaults(root).values, "snapshot_store_max_mb")
    if workspace.size_bytes(root) <= limit:
        return
    conn = _connect(root)
    try:
        workspace.prune_workspace(conn, root, limit)
    finally:
        conn.close()


def _connect(root: str) -> apsw.Connection:
    """The project's database, closed without a checkpoint as hooks close it: as the last
    connection, a close would checkpoint and delete the WAL that the next hook then makes
    anew (see runtime/hookrt.py: the hooks keep it short themselves)."""
    conn = db.connect(db_path(root), create=False)
    conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
    return conn


def _max_bytes(root: str) -> int:
    return megabytes(config_file.load_or_defaults(root).values, "snapshot_max_file_mb")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write(
            "usage: python -m claude_session.services.snapshots.capture PROJECT_ROOT\n"
        )
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
