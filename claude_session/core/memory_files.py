"""The files a memory is about, and whether they changed since: the one writer of
`memory_files` (stdlib + apsw: SessionStart checks them before it gives a memory).

A memory names files (`memory add --file`, the MCP tool's `files`, or those its agent read or
changed in that turn). Each is recorded with its content hash, size and modification time and
the commit checked out. A file whose content differs now, or that is gone, makes the memory
possibly stale; so does one whose size differs, or, past HASH_CAP (where the hash stops), whose
modification time does. A check stats the file and hashes it again only when its size or time moved
from what was recorded, or from what the last check saw (`seen_*`), so an unchanged tree
costs one stat per file.

The paths come from a database, which may have come with a clone: a path is only ever read
inside its project's root (no absolute path, no `..`, no symbolic link that leads out), only a
regular file, and at most HASH_CAP bytes of it.
"""

import os
import stat  # loaded by `os` already: free

import apsw

from .db import as_int, as_text

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

# A file modified within this long of when it was recorded (or seen) may change again with the
# same size and time (a file system's clock ticks coarsely): such a one is hashed, not trusted
# by its stat, as git treats a "racily clean" entry.
RACY_S = 2.0
HASH_CAP = 16 * 1024 * 1024  # bytes hashed at most: a larger file by its first 16 MiB, size, mtime
FILES_CAP = 20  # files one memory names at most
PATH_CAP = 1024
GIT_TIMEOUT_S = 5.0
FILE_TOOLS = ("Read", "Write", "Edit", "MultiEdit", "NotebookEdit")
CHANGED = "changed"  # the content differs from the recorded hash
GONE = "gone"  # no file at the path any more (deleted, or moved away)
APPEARED = "appeared"  # no file when recorded, one now


class FileProblem(ValueError):
    """A file a memory cannot be about (outside the project, not a file)."""


def relative(root: str, given: str) -> str:
    """The project-relative path of a file a user or an agent named (relative to the root,
    or absolute inside it); FileProblem for one outside the project."""
    from .paths import relative_to_root

    text = given.strip()
    if not text or len(text) > PATH_CAP or "\x00" in text:
        raise FileProblem(f"not a file path: {text[:80]!r}")
    path = relative_to_root(root, os.path.join(root, text))
    if os.path.isabs(path) or path == "." or path.split("/")[0] == "..":
        raise FileProblem(f"{text[:200]} is outside the project ({root})")
    return path


def plain(path: str) -> bool:
    """A path as a project file's is written: relative, without `..`."""
    return (
        bool(path)
        and path[0] != "/"
        and "\x00" not in path
        and (".." not in path or ".." not in path.split("/"))
    )


_DIRS: "dict[str, str]" = {}  # a folder's real path, for one check (cleared by `check`)


def _joined(real_root: str, path: str) -> str | None:
    """The project file `path` (as the database holds it) under its folder's real path (None:
    not a plain path), not yet known to be inside the project. Its folder's real path is
    worked out once per check (many memories name files of one folder)."""
    if not plain(path):
        return None
    folder, _, name = path.rpartition("/")
    joined = f"{real_root.rstrip('/')}/{folder}" if folder else real_root
    real_folder = _DIRS.get(joined)
    if real_folder is None:
        if len(_DIRS) > 4096:
            _DIRS.clear()
        real_folder = _DIRS[joined] = os.path.realpath(joined)
    return f"{real_folder}/{name}" if real_folder != "/" else f"/{name}"


def _inside(real_root: str, path: str) -> str | None:
    """The real path of the project file `path` (as the database holds it), or None when it
    would lead outside the project: absolute, `..`, or a symbolic link out of it."""
    full = _joined(real_root, path)
    if full is None:
        return None
    if os.path.islink(full):
        full = os.path.realpath(full)
    return full if full.startswith(real_root.rstrip("/") + "/") else None


def stat_of(real_root: str, path: str) -> "tuple[int, int] | None":
    """(size, mtime_ns) of a regular project file, None when there is none (or not ours). One
    lstat for a file that is no link (the common case); a link is resolved and looked at."""
    return _stat_at(real_root, _joined(real_root, path))


def _stat_at(real_root: str, full: str | None) -> "tuple[int, int] | None":
    if full is None:
        return None
    inside = real_root.rstrip("/") + "/"
    try:
        found = os.lstat(full)
        if stat.S_ISLNK(found.st_mode):  # resolved: a link now is one swapped in
            full = os.path.realpath(full)
            if not full.startswith(inside):
                return None
            found = os.lstat(full)
        elif not full.startswith(inside):
            return None
    except OSError:
        return None
    if not stat.S_ISREG(found.st_mode):
        return None
    return found.st_size, found.st_mtime_ns


def hash_of(real_root: str, path: str) -> "tuple[str, int, int] | None":
    """(sha256 of at most HASH_CAP bytes, size, mtime_ns) of a regular project file, read
    without following a link, or None. `hashlib` is imported only here: most checks stat."""
    import hashlib

    full = _inside(real_root, path)
    if full is None:
        return None
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            return None
        digest = hashlib.sha256()
        left = HASH_CAP
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
        return digest.hexdigest(), found.st_size, found.st_mtime_ns
    except OSError:
        return None
    finally:
        os.close(fd)


def head_commit(root: str) -> str | None:
    """The commit checked out, when the project is a git repository (core/usergit.py)."""
    from . import usergit

    if not os.path.exists(os.path.join(root, ".git")):
        return None
    args = ["rev-parse", "--verify", "-q", "HEAD"]
    status, out, _ = usergit.run(root, args, timeout=GIT_TIMEOUT_S)
    commit = out.strip()
    return commit if status == 0 and len(commit) in (40, 64) else None


def record(
    conn: apsw.Connection,
    memory_id: int,
    root: str,
    paths: "Iterable[str]",
    now: float,
    commit: str | None,
) -> int:
    """Record the files (project-relative) a memory is about, as they are now; a file named
    again is taken anew. Returns how many."""
    real_root = os.path.realpath(root)
    count = 0
    for path in list(dict.fromkeys(paths))[:FILES_CAP]:
        found = hash_of(real_root, path)
        digest, size, mtime = found if found else (None, None, None)
        put(conn, (memory_id, path, digest, size, mtime, commit, now))
        count += 1
    return count


def put(conn: apsw.Connection, values: "tuple[object, ...]") -> None:
    """One file of a memory as given (memory_id, path, sha256, size, mtime_ns, git_commit,
    recorded_at): `record` takes it from the disk, `memory import` from its file."""
    conn.execute(
        "INSERT OR REPLACE INTO memory_files (memory_id, path, sha256, size, mtime_ns,"
        " git_commit, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        values,
    )


def files_of(conn: apsw.Connection, memory_id: int) -> "list[dict[str, Any]]":
    """The files a memory is about, as recorded, by path."""
    from .db import rows

    return rows(
        conn,
        "SELECT path, sha256, size, mtime_ns, git_commit, recorded_at, seen_size,"
        " seen_mtime_ns, seen_sha256 FROM memory_files WHERE memory_id = ? ORDER BY path",
        (memory_id,),
    )


def check(
    real_root: str, files: "list[dict[str, Any]]", fresh: bool = True
) -> "tuple[list[dict[str, Any]], list[tuple[Any, ...]]]":
    """Which of a memory's files changed since they were recorded: (changes, seen) where each
    change is {path, how (changed, gone, appeared), modified_at (the file's time, None when
    gone), recorded_at}, and `seen` the rows for `remember_seen` (what this check hashed)."""
    import time

    changes: list[dict[str, Any]] = []
    seen: list[tuple[Any, ...]] = []
    settled = int((time.time() - RACY_S) * 1e9)  # a file's time before this cannot hide a change
    if fresh:
        _DIRS.clear()  # folders are resolved anew by each check: one may have become a link
    for row in files:
        path = as_text(row["path"])
        how, mtime, hashed = look(real_root, path, tuple(row[k] for k in LOOKED_AT))
        if hashed is not None and hashed[1] < settled:  # its time can no longer hide a change
            seen.append((*hashed, row["memory_id"], path))
        if how is not None:
            changes.append(_change(row, how, mtime))
    return changes, seen


# The columns of a memory_files row `look` compares a file with, in its order.
LOOKED_AT = (
    "sha256",
    "size",
    "mtime_ns",
    "recorded_at",
    "seen_size",
    "seen_mtime_ns",
    "seen_sha256",
)
_LOOKED_AT_SQL = ", ".join(f"f.{column}" for column in LOOKED_AT)


def look(
    real_root: str, path: str, row: "Sequence[Any]"
) -> "tuple[str | None, int | None, tuple[int, int, str] | None]":
    """One file of a memory as it is now, against its `row` (the LOOKED_AT columns): how it
    changed (CHANGED, GONE, APPEARED; None: it did not), its modification time now (None:
    gone), and (size, mtime_ns, sha256) when it was hashed now (`settled` says whether that
    may be kept). A path that is no project file (a hostile database's) is never looked at:
    None."""
    full = _joined(real_root, path)
    if full is None:  # not a plain path
        return None, None, None
    recorded, size, mtime_ns, recorded_at, seen_size, seen_mtime_ns, seen_sha256 = row
    now_stat = _stat_at(real_root, full)
    if now_stat is None:
        return (GONE if recorded is not None else None), None, None
    size_now, mtime_now = now_stat
    if recorded is None:
        return APPEARED, mtime_now, None
    racy = not isinstance(recorded_at, int | float) or mtime_now >= (recorded_at - RACY_S) * 1e9
    if size_now == size and mtime_now == mtime_ns and not racy:
        return None, mtime_now, None  # as recorded: not even read
    if _past_the_hash(size, mtime_ns, size_now, mtime_now):
        return CHANGED, mtime_now, None  # told by its stat: not read either
    hashed = None
    if size_now == seen_size and mtime_now == seen_mtime_ns and seen_sha256:
        digest = seen_sha256
    else:
        found = hash_of(real_root, path)
        if found is None:
            return GONE, None, None
        digest, size_now, mtime_now = found
        hashed = (size_now, mtime_now, digest)
    if digest != recorded or _past_the_hash(size, mtime_ns, size_now, mtime_now):
        return CHANGED, mtime_now, hashed
    return None, mtime_now, hashed


def _past_the_hash(size: object, mtime_ns: object, size_now: int, mtime_now: int) -> bool:
    """A change the hash cannot show: another size than recorded (whatever the first HASH_CAP
    bytes hold), or, for a file larger than HASH_CAP, another modification time (its tail is
    not hashed, and hashing a huge file whole on a hook's path costs too much): possibly
    stale."""
    if isinstance(size, int) and size_now != size:
        return True
    return size_now > HASH_CAP and isinstance(mtime_ns, int) and mtime_now != mtime_ns


def _change(row: "dict[str, Any]", how: str, mtime_ns: int | None) -> "dict[str, Any]":
    return {
        "path": as_text(row["path"]),
        "how": how,
        "modified_at": None if mtime_ns is None else mtime_ns / 1e9,
        "recorded_at": row["recorded_at"],
    }


def remember_seen(conn: apsw.Connection, seen: "Iterable[tuple[Any, ...]]") -> None:
    """What a check hashed, so the next one need not read the file again while it stays so."""
    for values in seen:
        conn.execute(
            "UPDATE memory_files SET seen_size = ?, seen_mtime_ns = ?, seen_sha256 = ?"
            " WHERE memory_id = ? AND path = ?",
            values,
        )


def changes_for(
    conn: apsw.Connection, real_root: str | None, memory_ids: "Iterable[int]"
) -> "tuple[dict[int, list[dict[str, Any]]], list[tuple[Any, ...]]]":
    """The changed files of each of these memories ({id: changes}, only those with any), and
    what the checks hashed. `real_root` None (a global memory from no known project): none."""
    ids = list(memory_ids)
    if real_root is None or not ids:
        return {}, []
    by_memory: dict[int, list[dict[str, Any]]] = {}
    from .db import rows

    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        marks = ", ".join("?" for _ in part)
        for row in rows(
            conn,
            "SELECT memory_id, path, sha256, size, mtime_ns, recorded_at, seen_size,"
            f" seen_mtime_ns, seen_sha256 FROM memory_files WHERE memory_id IN ({marks})",
            part,
        ):
            by_memory.setdefault(as_int(row["memory_id"]), []).append(row)
    found: dict[int, list[dict[str, Any]]] = {}
    seen: list[tuple[Any, ...]] = []
    _DIRS.clear()
    for memory_id, files in by_memory.items():
        changes, hashed = check(real_root, files, fresh=False)
        seen += hashed
        if changes:
            found[memory_id] = changes
    return found, seen


def with_files(conn: apsw.Connection) -> "list[int]":
    """The ids of the memories in use here that name files."""
    return [
        as_int(memory_id)
        for (memory_id,) in conn.execute(
            "SELECT DISTINCT f.memory_id FROM memory_files f JOIN memories m"
            " ON m.id = f.memory_id WHERE m.forgotten_at IS NULL ORDER BY f.memory_id"
        )
    ]


def stale_count(conn: apsw.Connection, root: str) -> "tuple[int, int]":
    """(memories about files, those possibly stale) of this project's database, by the rule of
    `check`, in one pass over one query: a stat per file, and a hash only for a file that
    moved since it was recorded or last seen (the `seen_*` columns, which the daemon's
    `keep_seen` and SessionStart's check keep); a memory found stale has its other files
    skipped. Writes nothing (`status` calls it)."""
    real_root = os.path.realpath(root)
    _DIRS.clear()
    about: set[object] = set()
    stale: set[object] = set()
    for memory_id, path, *row in conn.execute(
        # the files scanned, each memory by its rowid: half the time of the other order
        f"SELECT f.memory_id, f.path, {_LOOKED_AT_SQL} FROM memory_files f CROSS JOIN memories m"
        " ON m.id = f.memory_id WHERE m.forgotten_at IS NULL"
    ):
        about.add(memory_id)
        if memory_id in stale or not isinstance(path, str):
            continue
        if look(real_root, path, row)[0] is not None:
            stale.add(memory_id)
    return len(about), len(stale)


def keep_seen(
    conn: apsw.Connection, root: str, most: int = 2000, most_bytes: int = 64 << 20
) -> int:
    """What the count of possibly stale memories needs kept (the daemon calls it on a timer):
    every file of the memories in use looked at, and what was hashed remembered as seen once
    its time is settled, so `status` stats them and reads none. At most `most` files or
    `most_bytes` hashed per call: the rest at the next. Returns how many were remembered."""
    import time

    from .db import Immediate

    real_root = os.path.realpath(root)
    settled = int((time.time() - RACY_S) * 1e9)
    _DIRS.clear()
    seen: list[tuple[Any, ...]] = []
    hashed_files = hashed_bytes = 0
    for memory_id, path, *row in conn.execute(
        f"SELECT f.memory_id, f.path, {_LOOKED_AT_SQL} FROM memory_files f CROSS JOIN memories m"
        " ON m.id = f.memory_id WHERE m.forgotten_at IS NULL ORDER BY f.memory_id, f.path"
    ).fetchall():
        if not isinstance(path, str):
            continue
        hashed = look(real_root, path, row)[2]
        if hashed is None:
            continue
        if hashed[1] < settled:
            seen.append((*hashed, memory_id, path))
        hashed_files, hashed_bytes = hashed_files + 1, hashed_bytes + min(hashed[0], HASH_CAP)
        if hashed_files >= most or hashed_bytes >= most_bytes:
            break
    if seen:
        with Immediate(conn):
            remember_seen(conn, seen)
    return len(seen)


def who_changed(conn: apsw.Connection, path: str, since: object) -> "dict[str, Any] | None":
    """The latest edit of `path` claude-session saw after `since` (a claim of an agent that
    went through: Write, Edit...), or None."""
    if not isinstance(since, int | float):
        return None
    found = conn.execute(
        "SELECT agent_id, session_id, operation, last_touched_at FROM file_claims"
        " WHERE file_path = ? AND last_touched_at > ? ORDER BY last_touched_at DESC LIMIT 1",
        (path, since),
    ).fetchall()
    if not found:
        return None
    agent, session, operation, at = found[0]
    return {"agent_id": agent, "session_id": session, "operation": operation, "at": at}


def with_agents(conn: apsw.Connection, changes: "list[dict[str, Any]]") -> None:
    """Each change with the agent claude-session saw edit the file after it was recorded."""
    for change in changes:
        by = who_changed(conn, change["path"], change["recorded_at"])
        if by is not None:
            change["by"] = by


def utc(seconds: object) -> str:
    import time

    if not isinstance(seconds, int | float):
        return "an unknown time"
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


def describe(change: "dict[str, Any]") -> str:
    """One change as a sentence that is exactly what was found: the path, what happened to it
    since the memory recorded it, its time, and the agent claude-session saw edit it."""
    path, how = change["path"], change["how"]
    since = f"since it was recorded ({utc(change['recorded_at'])})"
    if how == GONE:
        said = f"{path} is no longer there (deleted or moved) {since}"
    elif how == APPEARED:
        said = f"{path} did not exist when it was recorded and does now"
    else:
        said = f"{path} changed {since}: its content differs"
    if change.get("modified_at") is not None:
        said += f"; file modified {utc(change['modified_at'])}"
    by = change.get("by")
    if by:
        agent = (
            "the main agent"
            if by["agent_id"] in ("main", by["session_id"])
            else (f"agent {by['agent_id']}")
        )
        said += (
            f"; edited by {agent} of session {str(by['session_id'])[:8]}"
            f" ({by['operation'] or 'edit'}, {utc(by['at'])})"
        )
    return said


def files_now(
    conn: apsw.Connection, base: str | None, memory_id: int
) -> "tuple[list[dict[str, Any]], list[tuple[Any, ...]]]":
    """Each file of a memory as recorded and as it is now (state: unchanged, changed, gone,
    appeared; when changed, the agent claude-session saw edit it), and what was hashed."""
    recorded = files_of(conn, memory_id)
    for row in recorded:
        row["memory_id"] = memory_id
    changes: dict[str, dict[str, Any]] = {}
    seen: list[tuple[Any, ...]] = []
    if base is not None:
        found, seen = check(os.path.realpath(base), recorded)
        with_agents(conn, found)
        changes = {c["path"]: c for c in found}
    out = []
    for row in recorded:
        change = changes.get(str(row["path"]))
        item = {
            "path": row["path"],
            "state": change["how"] if change else "unchanged" if base else "unknown",
            "sha256": row["sha256"],
            "size": row["size"],
            "git_commit": row["git_commit"],
            "recorded_at": row["recorded_at"],
        }
        if change:
            item["modified_at"] = change["modified_at"]
            item["changed_by"] = change.get("by")
            item["said"] = describe(change)
        out.append(item)
    return out, seen


def added_by(row: "dict[str, Any]") -> str:
    """Who added a memory, as a person reads it."""
    source = row.get("source")
    if source == "user":
        return "you (the CLI)"
    if source == "agent":
        agent = row.get("agent_id")
        return f"an agent ({agent})" if agent else "an agent (which one unknown)"
    if source == "learned":
        return "claude-session (learned from the error ladder)"
    if source == "import":
        return "`memory import`"
    return "unknown"


# --- what an agent's memory is about, from the record of its turn ------------------------------


def turn_of(conn: apsw.Connection, tool_use_id: str | None) -> "tuple[int | None, int | None]":
    """(turn number in its session, turns.id) of a recorded tool call, or (None, None)."""
    if not tool_use_id:
        return None, None
    found = conn.execute(
        "SELECT t.turn_no, t.id FROM tool_calls c JOIN turns t ON t.id = c.turn_id"
        " WHERE c.tool_use_id = ?",
        (tool_use_id,),
    ).fetchall()
    if not found:
        return None, None
    turn_no, turn_id = found[0]
    return (
        turn_no if isinstance(turn_no, int) else None,
        turn_id if isinstance(turn_id, int) else None,
    )


def touched_in_turn(conn: apsw.Connection, root: str, tool_use_id: str | None) -> "list[str]":
    """The project files the agent behind this tool call read or changed earlier in the same
    turn (Read, Write, Edit, MultiEdit, NotebookEdit, by their recorded calls), in order."""
    if not tool_use_id:
        return []
    marks = ", ".join("?" for _ in FILE_TOOLS)
    found = conn.execute(
        "SELECT coalesce(json_extract(e.payload, '$.tool_input.file_path'),"
        " json_extract(e.payload, '$.tool_input.notebook_path'))"
        " FROM tool_calls me JOIN tool_calls c ON c.session_id = me.session_id"
        " AND c.turn_id = me.turn_id AND c.agent_id = me.agent_id"
        " JOIN events e ON e.id = coalesce(c.pre_event_id, c.post_event_id)"
        f" WHERE me.tool_use_id = ? AND c.tool_name IN ({marks}) AND c.status != 'failed'"
        " AND c.tool_use_id != me.tool_use_id AND json_valid(e.payload)"
        " ORDER BY c.started_at LIMIT 200",
        (tool_use_id, *FILE_TOOLS),
    ).fetchall()
    paths: list[str] = []
    for (given,) in found:
        if isinstance(given, str):
            try:
                path = relative(root, given)
            except FileProblem:
                continue
            if path not in paths:
                paths.append(path)
    return paths[:FILES_CAP]


def open_error_in_turn(conn: apsw.Connection, tool_use_id: str | None) -> int | None:
    """The latest error still open, of this tool call's agent in its turn (error_log.id):
    what a memory the agent adds then is about, to show whether it was fixed later."""
    if not tool_use_id:
        return None
    found = conn.execute(
        "SELECT e.id FROM tool_calls me JOIN tool_calls c ON c.session_id = me.session_id"
        " AND c.turn_id = me.turn_id AND c.agent_id = me.agent_id"
        " JOIN error_log e ON e.tool_use_id = c.tool_use_id"
        " WHERE me.tool_use_id = ? AND e.interrupted = 0 AND e.resolution IS NULL"
        " ORDER BY e.id DESC LIMIT 1",
        (tool_use_id,),
    ).fetchall()
    return found[0][0] if found and isinstance(found[0][0], int) else None


def error_fate(conn: apsw.Connection, error_id: object) -> "dict[str, Any] | None":
    """The error a memory is about, and what became of it (fixed when a later run passed)."""
    if not isinstance(error_id, int):
        return None
    from .db import rows

    found = rows(
        conn,
        "SELECT id, session_id, signature, error_category, resolution, resolved_at, occurred_at"
        " FROM error_log WHERE id = ?",
        (error_id,),
    )
    return found[0] if found else None
