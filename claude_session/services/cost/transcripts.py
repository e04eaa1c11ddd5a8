"""Reading Claude Code's transcripts (JSONL) off the hook path: what each model response used,
Claude Code's own cost figures, the hook runs it timed (hook_lines), and the entries
`reconcile` fills missed tool calls from.

A transcript is Claude Code's file, written while we read it: it is opened read-only, never
through a planted link and only under the Claude Code config folder; read from the offset
stored per file, complete lines only (a partial last line waits), in bounded batches; a file
found shorter than what was read, or another file under its name, is read again from 0 (and
said so). A line not understood is skipped and counted, never fatal; so is one whose figures
are out of bounds or that is nested too deep (core/transcript_values: the agent can write to
the transcript too). Each session is read apart: one that fails (logged once) never stops the
reading of the others. No hook calls this: the daemon does on its sweeps, `Project.refresh()`
and the CLI's `cost` (and its listings of live sessions) when asked; `status` reads none and
says how far behind the figures are (transcript_lag.py).
"""

from __future__ import annotations

import json
import os
import stat
import time
from datetime import datetime
from typing import Any, NamedTuple

import apsw

from ...core import accounting, db, hook_runs, log, trust, usage
from ...core import transcript_values as values
from ...core.paths import db_path
from . import hook_lines

CHUNK = 1 << 20  # bytes read at a time
BATCH = 4 << 20  # bytes of lines parsed and stored per transaction (memory stays bounded)
MAX_LINE = 64 << 20  # a longer line is skipped unread
# Entries younger than this (in a session still running) wait before `reconcile` sees them:
# their hooks may still be on the way (see _fill_settled).
FILL_AFTER = 120.0
# (database, transcript) -> (inode, offset, time): the entry at that offset of that file was
# not settled yet, and is not before `time` + FILL_AFTER. A live session's pass (every second
# while Claude Code writes) skips reading the unsettled entries again until then.
_unsettled: dict[tuple[str, str], tuple[int, int, float]] = {}
# (database, session or transcript) -> the failure last logged for it: the daemon sweeps every
# second, and a failure that stays is logged once, not on every sweep (forgotten on success).
_failing: dict[tuple[str, str], str] = {}
KEPT = frozenset({"user", "assistant", "cost-state"})
HOOK_LINES = frozenset({"attachment", "system"})  # read for the hook runs they time (hook_lines)
IGNORED = frozenset(
    {
        "api-request",
        "api-request-blob",
        "api-request-shape",
        "tools-used",
        "atis-latch",
        "last-prompt",
        "queue-operation",
        "mode",
        "summary",
        "file-history-snapshot",
        "custom-title",
        "ai-title",
        "tag",
        "agent-name",
        "pr-link",
        "worktree-state",
        "progress",  # 2.1.38-era hook, Bash and agent progress: no usage of its own
    }
)


class Refused(Exception):
    """A transcript path we will not open: outside the config folder, a link, not a file."""


class Read(NamedTuple):
    entries: list[dict[str, Any]]  # user, assistant and cost-state entries, in file order
    new_offset: int  # just past the last complete line read
    skipped: int  # lines not understood
    lines: int = 0  # complete lines read
    ends: tuple[int, ...] = ()  # for each entry, the offset just past its line
    first_skipped: int | None = None  # where the first line skipped begins


def config_dir() -> str:
    """Claude Code's config folder: $CLAUDE_CONFIG_DIR, else ~/.claude of the user running us."""
    return os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~/.claude")


def open_transcript(path: str, resolved: dict[str, str] | None = None) -> int:
    """A read-only descriptor of `path`, or Refused. Its folder, links resolved, must be under
    the config folder (itself resolved); the file itself is opened without following a link.
    `resolved` keeps the folders resolved for the length of one catch-up (a session's files
    share their folders: `realpath` was most of a catch-up with nothing new)."""
    if not os.path.isabs(path):
        raise Refused(f"{path}: not an absolute path")
    resolved = {} if resolved is None else resolved
    base = resolved.get("") or resolved.setdefault("", os.path.realpath(config_dir()))
    parent = os.path.dirname(path)
    folder = resolved.get(parent) or resolved.setdefault(parent, os.path.realpath(parent))
    if folder != base and not folder.startswith(base.rstrip(os.sep) + os.sep):
        raise Refused(f"{path}: outside the Claude Code config folder {base}")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fd = os.open(os.path.basename(path), flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: a symbolic link at the file
            raise Refused(f"{path}: a symbolic link, not followed") from exc
        raise
    finally:
        os.close(dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Refused(f"{path}: not a regular file")
    return fd


def read_entries(path: str, offset: int, limit: int = BATCH) -> Read:
    """The entries of the complete lines from `offset` on (about `limit` bytes of them)."""
    fd = open_transcript(path)
    try:
        return read_fd(fd, offset, limit)
    finally:
        os.close(fd)


def read_fd(fd: int, offset: int, limit: int = BATCH) -> Read:
    entries: list[dict[str, Any]] = []
    ends: list[int] = []
    skipped = lines = 0
    first_skipped: int | None = None
    pending = b""  # the start of a line not complete yet
    pos = start = offset  # pos: bytes read; start: where `pending` begins
    discarding = False  # inside a line longer than MAX_LINE
    while start - offset < limit:
        chunk = os.pread(fd, CHUNK, pos)
        if not chunk:
            break
        pos += len(chunk)
        if discarding:
            end = chunk.find(b"\n")
            if end < 0:
                continue
            first_skipped = start if first_skipped is None else first_skipped
            start = pos - len(chunk) + end + 1
            skipped, lines, discarding = skipped + 1, lines + 1, False
            chunk = chunk[end + 1 :]
        parts = (pending + chunk).split(b"\n")
        pending = parts.pop()
        for line in parts:
            start += len(line) + 1
            lines += 1
            if not line.strip():
                continue
            entry = parse(line)
            if entry is None:
                skipped += 1
                if first_skipped is None:
                    first_skipped = start - len(line) - 1
            elif entry:
                entries.append(entry)
                ends.append(start)
            if start - offset >= limit:
                return Read(entries, start, skipped, lines, tuple(ends), first_skipped)
        if len(pending) > MAX_LINE:
            pending, discarding = b"", True
    return Read(entries, start, skipped, lines, tuple(ends), first_skipped)


def parse(line: bytes) -> dict[str, Any] | None:
    """An entry we keep; {} for a type we know and ignore; None for a line not understood.
    A line that starts with its type (Claude Code writes its own records so: api-request,
    tools-used, ...) and names one we ignore is not parsed: request blobs are most of a
    transcript's bytes. A kept entry whose figures are out of bounds, or nested too deep, is
    one not understood (core/transcript_values)."""
    if line.startswith(b'{"type":"'):
        kind = line[9 : line.find(b'"', 9)].decode("utf-8", "replace")
        if kind in IGNORED:
            return {}
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):  # nested past Python's limit: not understood either
        return None
    if isinstance(entry, dict) and "type" not in entry and _legacy(entry):
        entry["type"] = "assistant"  # a very old transcript: per-line costUSD, no type
    if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
        return None
    kind = entry["type"]
    if kind in KEPT:
        return None if values.problem(entry) is not None else entry
    if kind in HOOK_LINES:
        return hook_lines.entry(entry)
    return {} if kind in IGNORED else None


def _legacy(entry: dict[str, Any]) -> bool:
    """A response line of Claude Code's oldest transcripts: no `type`, its own `costUSD`."""
    message = entry.get("message")
    return (
        "costUSD" in entry and isinstance(message, dict) and isinstance(message.get("usage"), dict)
    )


# --- from entries to rows -----------------------------------------------------------------


def timestamp(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError):
        return None


def message_of(entry: dict[str, Any], prompt_id: str | None) -> dict[str, Any] | None:
    """An assistant entry as a message_usage row; None without an id or usage."""
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    used = message.get("usage")
    ident = message.get("id")
    if not isinstance(ident, str) or not isinstance(used, dict):
        return None
    if message.get("model") == "<synthetic>":
        return None  # Claude Code's own stand-in (an error, an interruption): nothing billed
    try:
        counts = values.usage_counts(used)  # checked by parse already: never a bad figure stored
    except values.Bad:
        return None
    blocks = message.get("content")
    tools = {
        str(b["id"]): str(b.get("name") or "")
        for b in (blocks if isinstance(blocks, list) else [])
        if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)
    }
    try:
        line_cost = values.amount(entry.get("costUSD"))
    except values.Bad:
        line_cost = None
    return {
        "message_id": ident,
        "request_id": _text(entry.get("requestId")),
        "request_session": _text(entry.get("requestSessionId")),
        "line_cost_usd": line_cost,
        "prompt_id": prompt_id,
        "tool_uses": tools,
        "model": message.get("model") if isinstance(message.get("model"), str) else None,
        **counts,
        "service_tier": _text(used.get("service_tier")),
        "speed": _text(used.get("speed")),
        "at": timestamp(entry.get("timestamp")),
    }


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


class Extracted(NamedTuple):
    messages: list[dict[str, Any]]
    cost_states: list[tuple[int, float | None, dict[str, Any]]]  # (line end, as of, figures)
    prompt_id: str | None  # the promptId the next lines belong to


def extract(
    entries: list[dict[str, Any]], prompt_id: str | None, ends: tuple[int, ...]
) -> Extracted:
    """The responses and the cost-states of `entries` (`ends`: where each one's line ends;
    a cost-state's `as of` is the time of the last entry before it)."""
    messages: list[dict[str, Any]] = []
    states: list[tuple[int, float | None, dict[str, Any]]] = []
    last_time = None
    for i, entry in enumerate(entries):
        kind = entry["type"]
        if kind == "cost-state":
            try:
                figures = values.cost_figures(entry)
            except values.Bad:
                continue  # checked by parse already
            states.append((ends[i], last_time, figures))
            continue
        last_time = timestamp(entry.get("timestamp")) or last_time
        if kind == "user" and isinstance(entry.get("promptId"), str):
            prompt_id = entry["promptId"]
        elif kind == "assistant":
            found = message_of(entry, prompt_id)
            if found is not None:
                messages.append(found)
    return Extracted(messages, states, prompt_id)


# --- catching up --------------------------------------------------------------------------


def catch_up(
    target: apsw.Connection | str,
    session_id: str | None = None,
    *,
    recent_seconds: float | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """Read what is new in the transcripts of every session (or one, or those active in the
    last `recent_seconds`), store it, re-apportion costs where something came; return counts.
    `target` is an open connection or a project root. A database this user did not make here
    (core/trust.py) names no transcript we read: nothing is read (`untrusted` says why)."""
    now = time.time() if now is None else now
    if isinstance(target, str):
        root, conn = target, db.connect(db_path(target))
    else:
        root, conn = os.path.dirname(target.filename) or ".", target
    summary: dict[str, Any] = {
        "sessions": 0,
        "files": 0,
        "entries": 0,
        "messages": 0,
        "skipped": 0,
        "restarted": [],
        "missing": [],
        "never_read": [],  # of the missing: never found here, so never there to read
        "refused": [],
        "unreadable": [],
        "reconciled": 0,
        "failed": [],
        "hook_runs": 0,
    }
    resolved: dict[str, str] = {}  # folder -> its real path, for this catch-up
    untrusted = trust.database_problem(db_path(root))
    if untrusted:  # its sessions name transcripts: another project's, a planted file, ...
        summary["untrusted"] = untrusted
        if isinstance(target, str):
            conn.close()
        return summary
    try:
        for session, main in sessions_to_read(conn, session_id, recent_seconds, now):
            summary["sessions"] += 1
            try:
                _catch_up_session(conn, root, session, main, summary, now, resolved)
            except apsw.BusyError:
                raise  # the database's, not the session's: the caller waits or tries again
            except Exception as exc:  # this session's alone: the others are still read
                summary["failed"].append(session)
                _failed(conn, root, session, f"reading session {session} failed", exc)
            else:
                _failing.pop((conn.filename, session), None)
    finally:
        if isinstance(target, str):
            conn.close()
    return summary


def _catch_up_session(
    conn: apsw.Connection,
    root: str,
    session: str,
    main: str,
    summary: dict[str, Any],
    now: float,
    resolved: dict[str, str],
) -> None:
    """One session's transcripts read, in transactions of its own (a batch that fails rolls
    back that batch alone), then its turns and costs brought up to date."""
    changed = False
    for agent, path in files_of(conn, session, main).items():
        summary["files"] += 1
        changed |= read_file(conn, root, session, agent, path, summary, now, resolved)
    turns = usage.turns_found(conn, session, now)
    if turns or changed:  # else no write at all: the daemon calls this every second
        with db.Immediate(conn):
            usage.set_turns(conn, session, turns)
            if changed:
                usage.apportion_with_dependents(conn, session, now)


def _failed(conn: apsw.Connection, root: str, key: str, what: str, exc: Exception) -> None:
    """Log a failure once while it lasts: not again on every sweep while it is the same."""
    message = f"{what}: {type(exc).__name__}: {exc}"
    if _failing.get((conn.filename, key)) != message:
        _failing[(conn.filename, key)] = message
        log.error(root, "transcripts", message)


def sessions_to_read(
    conn: apsw.Connection, session_id: str | None, recent: float | None, now: float
) -> list[tuple[str, str]]:
    where = "transcript_path IS NOT NULL"
    params: list[Any] = []
    if session_id is not None:
        where += " AND session_id = ?"
        params.append(session_id)
    if recent is not None:
        where += " AND (status = 'active' OR last_activity_at > ? OR ended_at > ?)"
        params += [now - recent, now - recent]
    return [
        (str(r["session_id"]), str(r["transcript_path"]))
        for r in db.rows(
            conn,
            f"SELECT session_id, transcript_path FROM sessions WHERE {where}"
            " ORDER BY last_activity_at",
            params,
        )
    ]


def files_of(conn: apsw.Connection, session_id: str, main: str) -> dict[str, str]:
    """agent id -> transcript path: the main one (under the session's id), then each
    subagent's: as its SubagentStop named it, else where Claude Code puts them
    (`<folder>/<session>/subagents/agent-<id>.jsonl`) for the recorded subagents and for the
    files found there. Claude Code's internal helpers (a SubagentStop with no SubagentStart:
    the compaction summariser, recaps) are left out unless their file exists: Claude Code
    writes none for them (it runs them with skipTranscript), so theirs is not a missing one."""
    found = {session_id: main}
    folder = os.path.join(os.path.dirname(main), session_id, "subagents")
    known: list[str] = []
    internal: set[str] = set()
    for r in db.rows(
        conn,
        "SELECT id, is_internal FROM agent_registry WHERE session_id = ? AND is_main = 0",
        (session_id,),
    ):
        known.append(str(r["id"]))
        if r["is_internal"]:
            internal.add(str(r["id"]))
    try:
        names = os.listdir(folder)
    except OSError:
        names = []
    known += [n[6:-6] for n in sorted(names) if n.startswith("agent-") and n.endswith(".jsonl")]
    for agent in known:
        found.setdefault(agent, os.path.join(folder, f"agent-{agent}.jsonl"))
    for row in db.rows(
        conn,
        "SELECT agent_id, json_extract(payload, '$.agent_transcript_path') AS path FROM events"
        " WHERE session_id = ? AND hook_event_name = 'SubagentStop' AND agent_id IS NOT NULL",
        (session_id,),
    ):
        if isinstance(row["path"], str) and row["path"]:
            found[str(row["agent_id"])] = row["path"]
    for agent in internal & found.keys():
        if not os.path.lexists(found[agent]):  # a link is still tried (and refused)
            del found[agent]
    return found


def read_file(
    conn: apsw.Connection,
    root: str,
    session_id: str,
    agent_id: str,
    path: str,
    summary: dict[str, Any],
    now: float,
    resolved: dict[str, str] | None = None,
) -> bool:
    """Read what is new in one transcript; True when anything was stored."""
    state = usage.file_state(conn, path) or {}
    try:
        fd = open_transcript(path, resolved)
    except (Refused, OSError) as exc:
        kind = (
            "refused"
            if isinstance(exc, Refused)
            else "missing"
            if isinstance(exc, FileNotFoundError)
            else "unreadable"
        )
        summary[kind].append(path)
        if kind == "missing" and state.get("inode") is None:  # not gone: it never came
            summary["never_read"].append(path)
        error = f"{kind}: {exc}" if isinstance(exc, Refused) else f"{kind}: {exc.strerror}"
        if state.get("last_error") != error:
            with db.Immediate(conn):
                usage.save_file(conn, path, session_id, agent_id, now, error=error)
        return False
    try:
        stored = _read_open(conn, root, session_id, agent_id, path, fd, state, summary, now)
        summary["reconciled"] += _fill_settled(conn, root, session_id, agent_id, path, fd, now)
        return stored
    finally:
        os.close(fd)


def _read_open(
    conn: apsw.Connection,
    root: str,
    session_id: str,
    agent_id: str,
    path: str,
    fd: int,
    state: dict[str, Any],
    summary: dict[str, Any],
    now: float,
) -> bool:
    info = os.fstat(fd)
    offset = int(state.get("read_to") or 0)
    prompt_id = state.get("prompt_id")
    known = state.get("inode") is not None
    restarted = usage.read_again(state, info.st_ino, info.st_size)
    if restarted:
        offset, prompt_id = 0, None
        summary["restarted"].append(path)
        log.write(root, "INFO", "transcripts", f"{path} was truncated or replaced: read again")
    elif known and info.st_size == offset and state.get("last_error") is None:
        return False  # nothing new: no write at all
    stored = False
    main = agent_id == session_id
    while True:
        got = read_fd(fd, offset)
        if not got.lines and not restarted and known and state.get("last_error") is None:
            return stored  # only the start of a line still being written
        found = extract(got.entries, prompt_id, got.ends)
        runs = hook_lines.runs_of(got.entries, got.ends, prompt_id, main, timestamp)
        with db.Immediate(conn):
            if restarted:
                hook_runs.forget_file(conn, path)
                accounting.forget_states(conn, session_id, path)
            hook_runs.record(conn, path, session_id, agent_id, runs)
            usage.record_messages(conn, session_id, agent_id, found.messages)
            if found.cost_states and main:
                accounting.record_cost_states(conn, session_id, path, found.cost_states, now)
            usage.save_file(
                conn,
                path,
                session_id,
                agent_id,
                now,
                read_to=got.new_offset,
                inode=info.st_ino,
                size=info.st_size,
                lines=got.lines,
                skipped=got.skipped,
                first_skipped=got.first_skipped,
                restarted=restarted,
                prompt_id=found.prompt_id,
            )
        restarted = False
        stored |= bool(found.messages) or bool(found.cost_states)
        summary["entries"] += len(got.entries)
        summary["hook_runs"] = summary.get("hook_runs", 0) + len(runs)
        summary["messages"] += len(found.messages)
        summary["skipped"] += got.skipped
        if got.new_offset == offset or got.new_offset >= info.st_size:
            return stored
        offset, prompt_id = got.new_offset, found.prompt_id


def _fill_settled(
    conn: apsw.Connection, root: str, session_id: str, agent_id: str, path: str, fd: int, now: float
) -> int:
    """Hand `reconcile` the entries it has not seen that are settled: written more than
    FILL_AFTER seconds ago, or any once the session ended. A younger entry's hook may still be
    on its way; were the transcript's copy applied first, the hook's own delivery would be a
    duplicate and its answer to the agent (a conflict warning, a ladder step) lost. Its
    failure is logged and never stops the reading of costs."""
    from . import reconcile

    state = usage.file_state(conn, path) or {}
    offset = int(state.get("filled_to") or 0)
    ended = conn.execute(
        "SELECT 1 FROM sessions WHERE session_id = ? AND (ended_at IS NOT NULL"
        " OR status != 'active')",
        (session_id,),
    ).fetchall()
    settled_before = float("inf") if ended else now - FILL_AFTER
    agent = None if agent_id == session_id else agent_id
    added = 0
    cache, inode = (conn.filename, path), os.fstat(fd).st_ino
    waiting = _unsettled.pop(cache, None)
    if waiting is not None and waiting[:2] == (inode, offset) and waiting[2] > settled_before:
        _unsettled[cache] = waiting  # its first entry is still too young: nothing to read
        return added
    while True:
        got = read_fd(fd, offset)
        if not got.lines:
            return added
        taken = 0
        for entry in got.entries:
            when = timestamp(entry.get("timestamp"))
            if when is not None and when > settled_before:
                break
            taken += 1
        settled_to = (
            got.new_offset
            if taken == len(got.entries)
            else (got.ends[taken - 1] if taken else offset)
        )
        if taken < len(got.entries) and when is not None:
            _unsettled[cache] = (inode, settled_to, when)  # the next pass starts there
        if taken:
            try:
                added += int(reconcile.fill(conn, root, session_id, agent, got.entries[:taken]))
            except Exception as exc:
                _failed(conn, root, path, "reconcile failed", exc)
                return added  # tried again on the next pass, from the same offset
            _failing.pop((conn.filename, path), None)
        if settled_to != offset:
            with db.Immediate(conn):
                usage.save_filled(conn, path, settled_to)
        if taken < len(got.entries) or settled_to == offset:
            return added
        offset = settled_to
