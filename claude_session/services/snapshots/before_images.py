"""What a file was before a tool changed it, kept by that tool's PreToolUse while a workspace
snapshot is still pending, so that no hook ever waits for a capture (standard library only:
hooks import this).

A frame's snapshot is the work tree as it was when the frame was committed; the capture
process takes it a moment later, off the agent's path. If the next tool starts before then,
its changes could land in the earlier frame's snapshot. So its PreToolUse, instead of waiting:

- for a Write, Edit, MultiEdit or NotebookEdit, keeps the one file it names as it is now
  (its bytes and mode, a link's target, or "absent"); the capture process puts it back into
  the snapshot of every frame committed before that tool started (services/snapshots/capture.py), so
  those snapshots are exact;
- for any other tool that can change files (Bash, an MCP tool), which names no file: when
  every frame still pending is a Write/Edit (the common case: several tool calls in one
  message), it keeps the files those frames named, and a marker `cover`: those frames'
  snapshots are then the last one taken plus these files, exact. Otherwise only a marker
  `blur`: the snapshots of the frames before it say they may hold part of its changes. Set
  `snapshot_wait_seconds` above 0 to have such a tool wait for the snapshot instead.

A tool of one agent may also still be running when another agent (the main thread, a sibling
subagent, another session) commits a frame: its changes belong to its own frame, committed at
its PostToolUse, not to that one. So the same is kept when another agent is live, even with
nothing pending (a Bash: only the marker `blur`), and each entry names its tool call
(`tool_use_id`): the capture process puts it back into every frame committed before that tool
call ended (tool_calls.ended_at), not only before it started.

Entries live in our per-user folder for the project (never in the project), one file each,
written under a temporary name and renamed, so the capture process never reads half of one.
"""

import os
import stat

from ...core.paths import canonical, project_state_dir
from ...core.secret_files import named_secret

MAGIC = b"claude-session-before 2"  # 2: the header ends with the tool call's id
FILE, LINK, ABSENT, LARGE, UNKNOWN = "file", "link", "absent", "large", "unknown"
BLUR, COVER = "blur", "cover"  # markers of a tool that names no file (see above)
KINDS = (FILE, LINK, ABSENT, LARGE, UNKNOWN, BLUR, COVER)
GRACE_SECONDS = 60.0  # kept this long after use: a frame committed a moment before may show late


class Entry:
    """One kept state of one path (`path` None: a marker of a tool that names no file)."""

    __slots__ = ("at", "content", "kind", "mode", "name", "path", "tool", "use")

    def __init__(
        self,
        name: str,
        at: float,
        kind: str,
        mode: int,
        path: "str | None",
        tool: str,
        content: bytes,
        use: "str | None" = None,
    ) -> None:
        self.name = name  # the entry's file name in the folder
        self.at = at  # when the tool's PreToolUse ran (time.time())
        self.kind = kind
        self.mode = mode  # git's mode for a file: 0o100644 or 0o100755
        self.path = path  # relative to the project
        self.tool = tool
        self.content = content  # a file's bytes, a link's target
        self.use = use  # the tool call's tool_use_id (None: unknown, or an older entry)


def folder(root: str) -> str:
    return os.path.join(project_state_dir(root), "before")


def keep_all(
    root: str,
    targets: "list[str] | None",
    tool: str,
    now: float,
    max_bytes: int,
    use: "str | None" = None,
    secret_names: bool = True,
) -> None:
    """Before a tool that names no file: `targets`, the files every pending frame named
    (None: some pending frame may have changed any file), then the marker."""
    if targets is None:
        keep(root, None, tool, now, max_bytes, BLUR, use)
        return
    for target in targets:
        keep(root, target, tool, now, max_bytes, use=use, secret_names=secret_names)
    keep(root, None, tool, now, max_bytes, COVER, use)


def keep(
    root: str,
    target: "str | None",
    tool: str,
    now: float,
    max_bytes: int,
    marker: str = BLUR,
    use: "str | None" = None,
    secret_names: bool = True,
) -> "str | None":
    """Keep `target` (a path as the tool named it; None: the `marker` only) as it is now,
    before `tool` (its call: `use`, the tool_use_id) runs. Returns the entry's name, or None
    when there is nothing to keep: a file outside the project, or (`secret_names`) one whose
    name says it holds secrets, which no snapshot takes (core/secret_files.py): its bytes are
    never copied. Raises OSError when the entry cannot be written."""
    path = None
    kind, mode, content = marker, 0, b""
    if target is not None:
        path = _inside(root, target)
        if path is None or (secret_names and named_secret(path)):
            return None
        kind, mode, content = _read(os.path.join(canonical(root), path), max_bytes)
    where = folder(root)
    os.makedirs(where, mode=0o700, exist_ok=True)
    if os.path.islink(where):
        raise OSError(f"refusing {where}: a symbolic link we did not make")
    name = f"{int(now * 1e9):020d}-{os.getpid()}-{os.urandom(4).hex()}"
    raw_path = os.fsencode(path) if path is not None else b""
    safe_tool = "".join(c for c in tool if c.isalnum() or c in "_.:-")[:64] or "tool"
    safe_use = "".join(c for c in use or "" if c.isalnum() or c in "_.:-")[:128] or "-"
    header = b"%s %s %o %d %s %s\n" % (
        MAGIC,
        kind.encode(),
        mode,
        len(raw_path),
        safe_tool.encode(),
        safe_use.encode(),
    )
    temporary = os.path.join(where, "." + name)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header + raw_path + content)
        os.rename(temporary, os.path.join(where, name))
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return name


def _inside(root: str, target: str) -> "str | None":
    """The project-relative path a tool writing `target` changes: through a link, the file it
    points to, if that is in the project; None when it is outside."""
    real_root = canonical(root)  # once per process
    full = os.path.realpath(os.path.join(root, target))
    if not full.startswith(real_root.rstrip("/") + "/"):
        return None
    return full[len(real_root.rstrip("/")) + 1 :]


def _read(full: str, max_bytes: int) -> "tuple[str, int, bytes]":
    """(kind, mode, content) of a path now, as a capture would take it. Never blocks on a
    fifo and never follows a link at the last step (a race made one: then it is unknown)."""
    try:
        info = os.lstat(full)
    except FileNotFoundError:
        return ABSENT, 0, b""
    except OSError:
        return UNKNOWN, 0, b""
    if stat.S_ISLNK(info.st_mode):
        try:
            return LINK, 0o120000, os.fsencode(os.readlink(full))
        except OSError:
            return UNKNOWN, 0, b""
    if not stat.S_ISREG(info.st_mode):
        return UNKNOWN, 0, b""
    if info.st_size > max_bytes:
        return LARGE, 0, b""  # a capture leaves it out: so must the frame's snapshot
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return UNKNOWN, 0, b""  # unreadable: the capture could not have read it either
    with os.fdopen(fd, "rb") as f:
        opened = os.fstat(f.fileno())
        if not stat.S_ISREG(opened.st_mode) or opened.st_size > max_bytes:
            return UNKNOWN, 0, b""
        content = f.read(max_bytes + 1)
    if len(content) > max_bytes:
        return LARGE, 0, b""
    return FILE, 0o100755 if opened.st_mode & 0o100 else 0o100644, content


def read_all(root: str, cache: "dict[str, Entry] | None" = None) -> "list[Entry]":
    """Every entry kept for the project, oldest first; one that cannot be read or parsed is
    left out (and removed once it is old). `cache`: the entries read before, by name (an
    entry never changes once written): only new ones are read, and the gone ones dropped."""
    where = folder(root)
    try:
        names = sorted(n for n in os.listdir(where) if not n.startswith("."))
    except OSError:
        return []
    known = {} if cache is None else cache
    out = []
    for name in names:
        entry = known.get(name) or _load(where, name)
        if entry is not None:
            out.append(entry)
    if cache is not None:
        cache.clear()
        cache.update((e.name, e) for e in out)
    return out


def _load(where: str, name: str) -> "Entry | None":
    try:
        at = int(name.split("-", 1)[0]) / 1e9
        fd = os.open(os.path.join(where, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            data = f.read()
        header, _, rest = data.partition(b"\n")
        fields = header.split(b" ")
        magic = b" ".join(fields[:2])
        if magic != MAGIC or len(fields) != 7:
            return None
        kind, mode, length, tool = fields[2:6]
        use = fields[6].decode() if fields[6] != b"-" else None
        if kind.decode() not in KINDS:
            return None
        size = int(length)
        path = os.fsdecode(rest[:size]) if size else None
        if (path is None) != (kind.decode() in (BLUR, COVER)):
            return None
        content = rest[size:]
        return Entry(name, at, kind.decode(), int(mode, 8), path, tool.decode(), content, use)
    except (OSError, ValueError):
        return None


def discard(
    root: str, now: float, oldest_pending: "float | None", needed: "frozenset[str]" = frozenset()
) -> int:
    """Remove the entries no pending frame can need any more: older than every frame still
    pending (or all, when none is), and older than a moment's grace, but for those `needed`
    (of a tool call still running: a frame committed before it ends needs them); the number
    removed. Temporary files of a hook killed mid-write and unreadable entries go the same way."""
    where = folder(root)
    try:
        names = os.listdir(where)
    except OSError:
        return 0
    removed = 0
    for name in names:
        try:
            at = int(name.lstrip(".").split("-", 1)[0]) / 1e9
        except ValueError:
            at = 0.0
        later = oldest_pending is not None and at >= oldest_pending
        if later or name in needed or at > now - GRACE_SECONDS:
            continue
        try:
            os.unlink(os.path.join(where, name))
            removed += 1
        except OSError:
            pass
    return removed
