"""The daemon's sweeps (one daemon per project): they ingest the spool, mark silent agents
aborted_stale, close out sessions that are over, release expired claims, read what is new in
the live sessions' transcripts (usage and cost: `status` reads none), keep what the count of
possibly stale memories needs (the memories' files as last seen) and keep the WAL bounded.

A session whose Claude Code process is recorded (core/processes.py) is over as soon as that
process is gone: it is looked at every PROCESS_CHECK_SECONDS, not only on the sweep's timer.

It watches the database files, the spool and the transcript folders of the live sessions with
watchfiles, and sweeps on a timer too: a line Claude Code appends to a live session's
transcript (or a subagent's) is read within about a second, not at the next sweep. The
transcript folders watched follow the live sessions (looked up again after every pass); a
folder that disappears is only dropped from the watch. Hooks never depend on it: if it is
down, nothing is lost, only stale marking waits. Its process is
`claude_session/daemon.py` (which also answers relayed hooks): `claude-session daemon
start|run`, or the SessionStart hook, starts it.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import watchfiles

from ...core import db, events, log, processes, registry, spool, staleness, store
from ...core.config import number
from ...core.paths import DB_NAME, SPOOL_SUFFIX, db_path, spool_dir
from .. import config_file
from ..cost import transcripts
from ..telemetry import otel_export, otel_wire
from .daemon_control import lock_path, status_path, stopped_since

Clock = Callable[[], float]
PUBLISH_SECONDS = 0.05  # a counter's change reaches the status file within this
PROCESS_CHECK_SECONDS = 1.0  # how often the recorded Claude Code processes are looked at
TRANSCRIPT_READ_SECONDS = 1.0  # at most one pass this often for changed transcripts
WATCH_RETRY_SECONDS = 60.0  # transcript folders that could not be watched: tried again after
# How often the memories' files are looked at, so `status` counts the possibly stale ones by a
# stat each (core/memory_files.keep_seen: at most 2,000 files or 64 MiB hashed per look).
MEMORY_CHECK_SECONDS = 30.0
# Seen gone this long before its session is ended: a SessionEnd that Claude Code's exit left
# in flight (its hook, or the relay applying it) lands first and gives the real reason.
EXIT_GRACE_SECONDS = 2.0
# Another process holding the database's write lock past the busy timeout: the next try comes
# after a pause that doubles from the first up to the last, the daemon going on meanwhile.
BUSY_PAUSE_SECONDS = (1.0, 30.0)


class WatchFailed(Exception):
    """The watch could not start (a folder gone, no inotify watch left, ...)."""


def acquire_lock(root: str, attempts: int = 25) -> int | None:
    """The daemon lock's fd, or None if another daemon holds it. A few retries: `is_running`
    in a hook takes the lock for a few microseconds when probing a free one."""
    # O_NOFOLLOW: a link planted at the lock is refused (the truncate below would follow it).
    fd = os.open(lock_path(root), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    for _ in range(attempts):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            time.sleep(0.02)
            continue
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        return fd
    os.close(fd)
    return None


class Daemon:
    """One project's daemon; `run` is the loop, `sweep` one pass (tests call it directly)."""

    def __init__(self, root: str, clock: Clock = time.time, mono: Clock = time.monotonic) -> None:
        self.root = root
        self.clock = clock
        self.mono = mono
        self.seen = staleness.Observations()
        self.conn: apsw.Connection | None = None
        self.stats: dict[str, Any] = {
            "pid": os.getpid(),
            "started_at": clock(),
            "sweeps": 0,
            "agents_marked_stale": 0,
            "sessions_closed": 0,
            "claims_expired": 0,
            "events_ingested": 0,
            "claude_exits": 0,
            "transcript_messages": 0,
        }
        self.pid_space = processes.pid_space()  # the recorded processes this daemon can judge
        self.gone_since: dict[tuple[str, int, int], float] = {}  # (session, pid, start): mono
        self.config: dict[str, object] = config_file.load_or_defaults(root).values
        self.status_lock = threading.Lock()  # a companion's threads count and publish too
        self.publishing = False  # a write of the status file is due (see `count`)
        self.last_sweep = self.last_live = self.last_check = mono()
        self.last_memory_check: float | None = None  # never yet: at the first pass
        self.unwatched_until = 0.0  # transcript folders not watched before this (mono)
        self.busy_since: float | None = None  # the write lock held by another since (mono)
        self.busy_until = 0.0  # while it was: no write tried before this (mono)
        self.busy_tries = 0

    def count(self, key: str, amount: int = 1, **also: Any) -> None:
        """Add to a counter of the status file (and set other values), then publish it within
        PUBLISH_SECONDS: what a companion serves shows at once, not at the next sweep. One
        write for a burst: a file written and renamed per relayed hook was a fifth of the
        daemon's time under 8 hooks at once (measured)."""
        with self.status_lock:
            self.stats[key] = self.stats.get(key, 0) + amount
            self.stats.update(also)
            if self.publishing:
                return
            self.publishing = True
        timer = threading.Timer(PUBLISH_SECONDS, self._publish)
        timer.daemon = True
        timer.start()

    def _publish(self) -> None:
        with self.status_lock:
            self.publishing = False
        self.write_status()

    # --- one pass ------------------------------------------------------------------------

    def connection(self) -> apsw.Connection:
        if self.conn is None:
            self.conn = db.connect(db_path(self.root))
        return self.conn

    def reload_config(self) -> None:
        try:
            loaded = config_file.load(self.root)
        except config_file.ConfigError as exc:
            self.stats["config_error"] = str(exc)  # keep the last good configuration
            return
        self.config = loaded.values  # invalid values keep their defaults, as in hooks
        if loaded.problems:
            self.stats["config_error"] = "; ".join(loaded.problems)
        else:
            self.stats.pop("config_error", None)

    def ingest(self) -> int:
        if self.mono() < self.busy_until:
            return 0  # the write lock was held a moment ago: the next pass tries again
        done = spool.ingest(self.connection(), self.root)
        self.stats["events_ingested"] += done
        return done

    def claude_exits(self) -> set[str]:
        """The live sessions whose recorded Claude Code process has been seen gone (exited,
        killed, a zombie, or its pid now another process's) for EXIT_GRACE_SECONDS. Only
        processes of this daemon's pid space; one /proc cannot tell about is left alone."""
        if self.pid_space is None:
            return set()
        now_mono = self.mono()
        recorded = self.connection().execute(
            "SELECT session_id, claude_pid, claude_started_ticks FROM sessions"
            " WHERE status = 'active' AND claude_pid IS NOT NULL AND claude_pid_space = ?",
            (self.pid_space,),
        )
        gone: dict[tuple[str, int, int], float] = {}
        for session_id, pid, started in recorded:
            key = (str(session_id), int(pid), int(started))
            if processes.alive(key[1], key[2]) is False:
                gone[key] = self.gone_since.get(key, now_mono)
        self.gone_since = gone  # a process seen again (or a session ended) is forgotten
        return {key[0] for key, since in gone.items() if now_mono - since >= EXIT_GRACE_SECONDS}

    def check_processes(self) -> bool:
        """The cheap look between sweeps: True when a session's Claude Code is gone for good
        (the sweep that follows ends it). A database error waits for that sweep's handling."""
        try:
            return bool(self.claude_exits())
        except (db.DatabaseError, apsw.Error):
            return False

    def sweep(self) -> list[staleness.Verdict]:
        """Find and apply this pass's verdicts; release expired claims."""
        conn = self.connection()
        exited = self.claude_exits()
        now, now_mono = self.clock(), self.mono()
        agents = [
            staleness.Agent(agent_id, session_id, last_seen, bool(is_main))
            for agent_id, session_id, last_seen, is_main in conn.execute(
                "SELECT id, session_id, last_seen_at, is_main FROM agent_registry"
                " WHERE status = 'running' AND is_internal = 0"
            )
        ]
        sessions = {
            row[0]: staleness.Session(*row)
            for row in conn.execute(
                "SELECT session_id, status, last_activity_at, end_reason FROM sessions"
                " WHERE status = 'active' OR session_id IN"
                " (SELECT session_id FROM agent_registry WHERE status = 'running')"
            )
        }
        verdicts = staleness.sweep(
            agents,
            sessions,
            now,
            now_mono,
            self.seen,
            number(self.config, "stale_after_minutes") * 60,
            number(self.config, "session_idle_minutes") * 60,
            exited,
        )
        with db.Immediate(conn):
            for verdict in verdicts:
                if verdict.kind == "session":
                    store.end_session(conn, verdict.target, now, verdict.reason)
                    registry.close_out_session(conn, verdict.target, now, verdict.reason)
                    self.stats["sessions_closed"] += 1
                    self.stats["claude_exits"] += verdict.target in exited
                elif registry.transition(
                    conn, verdict.target, registry.STALE, verdict.reason, now, (registry.RUNNING,)
                ):
                    self.stats["agents_marked_stale"] += 1
            self.stats["claims_expired"] += registry.release_expired(conn, now)
        self.stats["sweeps"] += 1
        self.stats["last_sweep_at"] = now
        return verdicts

    def read_transcripts(self) -> None:
        """What is new in the transcripts of the sessions live or active lately (usage and
        cost; the tool calls hooks missed). Never stops the sweep: a failure is logged."""
        recent = number(self.config, "session_idle_minutes") * 60
        try:
            found = transcripts.catch_up(self.connection(), recent_seconds=recent)
        except (db.DatabaseError, apsw.Error):
            raise
        except Exception as exc:
            log.error(self.root, "daemon", f"reading transcripts: {type(exc).__name__}: {exc}")
            return
        self.stats["transcript_messages"] += found["messages"]

    def keep_memories_seen(self) -> None:
        """On its own timer, the memories' files looked at and what was hashed kept, so
        `status` counts the possibly stale by a stat each. A failure is logged, never fatal."""
        last, now = self.last_memory_check, self.mono()
        if last is not None and now - last < MEMORY_CHECK_SECONDS:
            return
        self.last_memory_check = now
        from ...core import memory_files

        try:
            kept = memory_files.keep_seen(self.connection(), self.root)
        except (db.DatabaseError, apsw.Error):
            raise
        except Exception as exc:
            log.error(self.root, "daemon", f"checking memories: {type(exc).__name__}: {exc}")
            return
        self.stats["memory_files_seen"] = self.stats.get("memory_files_seen", 0) + kept

    def checkpoint(self) -> None:
        """Copy the WAL back into the database. PASSIVE never waits for readers; once they
        are gone the WAL restarts and journal_size_limit truncates the file."""
        self.connection().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def has_live_session(self) -> bool:
        """Whether a session is live; True too while the database is locked (a reader waits
        only in WAL recovery): never an idle exit for a lock."""
        idle = number(self.config, "session_idle_minutes") * 60
        try:
            return bool(
                self.connection()
                .execute(
                    "SELECT 1 FROM sessions WHERE status = 'active' AND last_activity_at > ?"
                    " LIMIT 1",
                    (self.clock() - idle,),
                )
                .fetchall()
            )
        except (db.DatabaseError, apsw.Error) as exc:
            if self.waited_out(exc):
                return True
            raise

    def write_status(self) -> None:
        """Replace the status file: a new temporary file (never through a planted link), then
        an atomic rename over the old one."""
        with self.status_lock:
            tmp = f"{status_path(self.root)}.{os.getpid()}.tmp"
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self.stats, f)
            os.replace(tmp, status_path(self.root))

    # --- the loop ------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        self.reload_config()
        self.pass_once()
        self.last_sweep = self.last_live = self.last_check = self.mono()
        failed = 0  # watches in a row that could not start
        while not stop.is_set():
            os.makedirs(spool_dir(self.root), mode=0o700, exist_ok=True)
            watched = self.watched_folders()
            try:
                if self.watch(stop, watched):
                    return
                failed = 0
            except WatchFailed as exc:
                if not watched:
                    raise  # the project's own files cannot be watched: as before, an error
                # A folder gone between the look and the watch's start: look again at once.
                # Twice in a row (no inotify watch left, say): the sweep's timer reads the
                # transcripts for a while.
                failed += 1
                if failed >= 2:
                    self.unwatched_until = self.mono() + WATCH_RETRY_SECONDS
                    log.write(self.root, "WARNING", "daemon", f"cannot watch transcripts: {exc}")

    def watched_folders(self) -> tuple[str, ...]:
        if self.mono() < self.unwatched_until:
            return ()
        return self.transcript_folders()

    def watch(self, stop: threading.Event, watched: tuple[str, ...]) -> bool:
        """One watch over the project's files and the transcript folders `watched`, until the
        folders to watch change (False: watch again) or the loop is over (True)."""
        folders = frozenset(watched)
        sweep_every = number(self.config, "sweep_interval_seconds")
        # A change made while no watch was on (before the first one, or between two) waits
        # for no sweep: the first look reads the transcripts.
        pending = True

        def wanted(change: watchfiles.Change, path: str) -> bool:
            return _ours(change, path) or _transcript_change(folders, path)

        batches = watchfiles.watch(
            self.root,
            spool_dir(self.root),
            *watched,
            watch_filter=wanted,
            recursive=False,
            yield_on_timeout=True,
            rust_timeout=int(min(sweep_every, PROCESS_CHECK_SECONDS) * 1000),
            stop_event=stop,
            debounce=100,
            raise_interrupt=False,
        )
        try:  # the watch starts here: a folder gone by now fails it
            first = next(batches)
        except StopIteration:
            return True
        except OSError as exc:
            raise WatchFailed(str(exc)) from exc
        for changes in itertools.chain([first], batches):
            if stop.is_set():
                return True
            if not os.path.isdir(self.root):
                return True  # the project is gone: nothing left to look after
            if any(Path(path).parent.name.endswith(".spool") for _, path in changes):
                try:
                    self.ingest()
                except (db.DatabaseError, apsw.Error) as exc:
                    if not self.waited_out(exc):
                        raise
            ours = any(_ours(change, path) for change, path in changes)
            pending |= any(_transcript_change(folders, path) for _, path in changes)
            # On the timer, or at most once a second when the database changed (our own writes
            # change it too: a sweep per change would chase its own tail) or a transcript did
            # (remembered until then: the last line of a turn must not wait for the timer).
            since = self.mono() - self.last_sweep
            sweep_every = number(self.config, "sweep_interval_seconds")
            if (
                since >= sweep_every
                or (ours and since >= 1.0)
                or (pending and since >= TRANSCRIPT_READ_SECONDS)
            ):
                self.reload_config()
                self.pass_once()
                self.last_sweep = self.last_check = self.mono()
                pending = False
                if self.watched_folders() != watched:
                    return False  # a session started or ended, a folder came or went
            elif self.mono() - self.last_check >= PROCESS_CHECK_SECONDS:
                self.last_check = self.mono()
                if self.check_processes():  # a Claude Code is gone: its session ends now
                    self.pass_once()
                    self.last_sweep = self.mono()
            if self.busy_since is not None or self.has_live_session():
                self.last_live = self.mono()  # never an idle exit while the lock is waited out
            elif (
                self.mono() - self.last_live >= number(self.config, "daemon_idle_exit_minutes") * 60
            ):
                log.write(self.root, "INFO", "daemon", "no live session: idle exit")
                return True
        return True  # stopped

    def transcript_folders(self) -> tuple[str, ...]:
        """The folders to watch for the live sessions' transcripts: each one's folder, and its
        subagents' folder (or, until that exists, the session's own folder, whose creation
        shows in the one above). Only folders that exist now, under the Claude Code config
        folder, links resolved (as `transcripts.open_transcript` requires); none when the
        database cannot be read (the sweep's timer still reads them)."""
        recent = number(self.config, "session_idle_minutes") * 60
        try:
            live = transcripts.sessions_to_read(self.connection(), None, recent, self.clock())
        except (db.DatabaseError, apsw.Error):
            return ()
        base = os.path.realpath(transcripts.config_dir()).rstrip(os.sep)
        found: set[str] = set()
        for session_id, main in live:
            if not os.path.isabs(main):
                continue
            folder = os.path.dirname(main)
            for candidate in (
                folder,
                os.path.join(folder, session_id, "subagents"),
                os.path.join(folder, session_id),
            ):
                real = os.path.realpath(candidate)
                inside = real == base or real.startswith(base + os.sep)
                if inside and os.path.isdir(real):
                    found.add(real)
                    if candidate != folder:
                        break  # the subagents' folder, else the session's
        return tuple(sorted(found))

    def waited_out(self, exc: BaseException) -> bool:
        """Whether `exc` is the database's write lock held by another process past the busy
        timeout: then the daemon goes on (a write that failed is tried again at the next pass,
        after a pause that doubles), and says so once, not at every try."""
        if not _busy(exc):
            return False
        now = self.mono()
        if self.busy_since is None:
            self.busy_since = now
            log.write(
                self.root,
                "WARNING",
                "daemon",
                "another process holds the database's write lock past the busy timeout;"
                " waiting it out, trying again with a growing pause",
            )
        first, last = BUSY_PAUSE_SECONDS
        self.busy_until = now + min(last, first * 2**self.busy_tries)
        self.busy_tries += 1
        self.stats["waiting_for_write_lock_since"] = self.clock() - (now - self.busy_since)
        return True

    def writable_again(self) -> None:
        """A pass went through after the write lock was held: said once, the pause reset."""
        if self.busy_since is None:
            return
        waited = self.mono() - self.busy_since
        said = f"the write lock is free again, {waited:.0f} s after a write first timed out on it"
        log.write(self.root, "INFO", "daemon", said)
        self.busy_since, self.busy_until, self.busy_tries = None, 0.0, 0
        self.stats.pop("waiting_for_write_lock_since", None)

    def pass_once(self) -> None:
        if self.mono() < self.busy_until:
            return  # the write lock was held a moment ago: not tried again yet
        try:
            self.ingest()
            self.sweep()
            self.read_transcripts()
            events.update_tally(self.connection())  # `status` counts from it
            self.keep_memories_seen()  # and its possibly stale memories by a stat each
            self.checkpoint()
            self.writable_again()
        except (db.DatabaseError, apsw.Error) as exc:
            if self.waited_out(exc):
                self.write_status()
                return
            log.error(self.root, "daemon", f"sweep failed: {type(exc).__name__}: {exc}")
            if self.conn is not None:
                self.conn.close()
                self.conn = None  # reopen next time (the file may have been replaced)
            if _corrupt(exc) and self.quarantine():
                self.pass_once()  # a fresh database: replay what waited in the spool
                return
        self.write_status()

    def quarantine(self) -> bool:
        """Move a corrupt database aside (never delete it) so hooks can write again; the
        moved file keeps whatever `sqlite3 .recover` can still salvage."""
        path = db_path(self.root)
        try:  # check once more on a fresh connection: a busy database is never moved
            probe = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
            verdict = probe.execute("PRAGMA quick_check").fetchall()[0][0]
            probe.close()
            if verdict == "ok":
                return False
        except (apsw.NotADBError, apsw.CorruptError):
            pass
        except apsw.Error:
            return False
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(self.clock()))
        moved = f"{path}.corrupt-{stamp}"
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.replace(path + suffix, moved + suffix)
        log.error(self.root, "daemon", f"corrupt database moved aside to {moved}; starting afresh")
        self.stats["quarantined"] = moved
        return True

    def close(self) -> None:
        if self.conn is not None:
            try:  # leave a small WAL behind when nobody reads
                self.conn.setbusytimeout(100)
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except apsw.Error:
                pass
            self.conn.close()
        try:
            os.unlink(status_path(self.root))
        except OSError:
            pass


def _busy(exc: BaseException) -> bool:
    """The database locked by another writer (SQLITE_BUSY, SQLITE_LOCKED), however raised."""
    cause = exc.__cause__ if isinstance(exc, db.DatabaseError) else exc
    return isinstance(cause, apsw.BusyError | apsw.LockedError)


def _corrupt(exc: BaseException) -> bool:
    cause = exc.__cause__ if isinstance(exc, db.DatabaseError) else exc
    return isinstance(cause, apsw.NotADBError | apsw.CorruptError)


def _ours(change: watchfiles.Change, path: str) -> bool:
    """Changes worth a look: the database files, and a spool entry arriving (a `.json` file
    in the spool folder; our own status `.json`, lock, log and temp files are not)."""
    name = os.path.basename(path)
    if os.path.basename(os.path.dirname(path)) == DB_NAME + SPOOL_SUFFIX:
        return name.endswith(".json") and not name.startswith(".")
    excluded = (".lock", ".json", ".log", ".tmp", ".stop")
    return name.startswith(DB_NAME) and not name.endswith(excluded) and ".corrupt-" not in name


def _transcript_change(folders: frozenset[str], path: str) -> bool:
    """A change in a watched transcript folder worth a read: a transcript (`.jsonl`), or a
    folder (a session's, `subagents`) coming or going."""
    name = os.path.basename(path)
    return os.path.dirname(path) in folders and (name.endswith(".jsonl") or "." not in name)


Companion = Callable[[str, threading.Event, "Daemon"], Callable[[], None]]


def run(
    root: str,
    stop: threading.Event | None = None,
    requested_at: float | None = None,
    companion: Companion | None = None,
) -> int:
    """Run until stopped or idle; 0 also when another daemon already runs (it wins), or when a
    stop was asked for after this start was (`daemon stop` during the start delay).

    `companion(root, stop, daemon)` starts whatever else the process serves while it holds the
    lock (the hook relay, from the layer above; it counts with `daemon.count`, which the status
    file shows) and returns how to close it."""
    root = os.path.abspath(root)
    lock = acquire_lock(root)
    if lock is None:
        return 0
    if requested_at is not None and stopped_since(root, requested_at):
        os.close(lock)
        return 0
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
    daemon = Daemon(root)
    close_companion = companion(root, stop, daemon) if companion is not None else None
    # OpenTelemetry export, when configured: a thread of its own, nothing waits for it.
    exporting = otel_export.Exporter(root, lambda: daemon.config).start(stop)
    try:
        daemon.run(stop)
    except Exception as exc:
        log.error(root, "daemon", f"stopped by an internal error: {type(exc).__name__}: {exc}")
        return 1
    finally:
        stop.set()
        exporting.join(otel_wire.TIMEOUT_SECONDS + 1)
        if close_companion is not None:
            close_companion()
        daemon.close()
        os.close(lock)
    return 0
