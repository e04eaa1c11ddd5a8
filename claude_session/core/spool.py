"""The spool: events that could not be written to the database wait here as files.

One file per event, written under a temporary name and renamed into place, so a reader never
sees half a file. Ingestion replays them through `events.apply`, like a live hook; the events'
idempotency keys make a replay after a crash harmless. This is the failure path, so it may
import `json`.

A spool file is input like any other: one that cannot be read or is not an envelope we wrote
(wrong types, huge, truncated, a link, another project's) is moved into `rejected/` beside it
with its reason in a `.reason` file, never deleted, and ingestion goes on with the others.

Where a file is proves nothing (a repository can commit a spool folder), so every envelope we
write, spooled or answered early, starts with a line holding its MAC under this user's key
(core/provenance.py), over the exact bytes that follow: one without a valid MAC was not
written by this user's claude-session and is set aside unread, never ingested.
"""

from __future__ import annotations

import os
import stat
import time

import apsw

from . import apply_types, config, event, events
from .paths import canonical, project_file, spool_dir, user_state_dir

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any

REJECTED = "rejected"
ENVELOPE = "envelope"  # the MAC's purpose (core/provenance.py)
ANSWERED_SUFFIX = ".answered"  # per project, in the user's state: events answered, not yet stored
INBOX_SUFFIX = ".inbox"  # per project, in the user's state: posted for a group commit
ENVELOPE_CAP_BYTES = 8 * 1024 * 1024  # we write at most ~1 MiB (a payload capped at 256 KiB)


class Unusable(ValueError):
    """This spool file cannot be replayed; the message says why."""


def user_spool_dir() -> str:
    """For events whose project directory is missing (deleted, renamed, never existed)."""
    return os.path.join(user_state_dir(), "spool")


def private_dir(folder: str) -> None:
    """Create `folder` (0700) if needed and make sure it is a real directory of ours: a link
    planted in its place, or someone else's folder, is refused."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise OSError(f"refusing {folder}: not a directory of this user (a planted link?)")


def envelope_of(
    ev: event.Event,
    delivery: apply_types.Delivery,
    root: str | None,
    prepared: Any,
    reason: str,
) -> dict[str, Any]:
    """An event as a spool file holds it (also an answered one held, and a posted one:
    core/group_commit.py), everything its replay needs; `reason`: why it is on disk."""
    return {
        "v": 1,
        "delivery_id": delivery.delivery_id,
        "received_at": delivery.received_at,
        "duration_ms": round((time.perf_counter() - delivery.started_clock) * 1000, 3),
        "event_hint": ev.name,
        "project_root": root,
        "reason": reason,
        "payload_bytes": delivery.payload_bytes,
        "payload_sha256": delivery.payload_sha256,
        "truncated": delivery.truncated,
        "prepared": prepared,
        "payload": ev.text,
    }


def write(folder: str, envelope: dict[str, Any]) -> str:
    """Atomically add one event to `folder`; returns the file's path."""
    private_dir(folder)
    name = f"{time.time_ns()}-{os.getpid()}-{envelope['delivery_id']}.json"
    return _write_whole(folder, name, f".{name}.tmp", envelope, durable=True)


def encode(envelope: dict[str, Any]) -> bytes:
    """An envelope as its file holds it: our MAC of the JSON that follows, then the JSON."""
    import json

    body = json.dumps(envelope, ensure_ascii=False).encode("utf-8", "replace")
    try:
        from .provenance import tag

        mac = tag(ENVELOPE, body)
    except OSError:  # no per-user key: kept all the same (nothing lost), set aside at ingest
        mac = "-" * 64
    return mac.encode() + b"\n" + body


def _write_whole(
    folder: str, name: str, tmp_name: str, envelope: dict[str, Any], *, durable: bool
) -> str:
    """`envelope` as `folder/name`, written under `tmp_name` (0600, never through a link) and
    renamed, so it is never seen half; fsync'ed first when `durable`."""
    tmp = os.path.join(folder, tmp_name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, encode(envelope))
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    final = os.path.join(folder, name)
    os.rename(tmp, final)
    return final


_ANSWERED: dict[str, str] = {}  # root -> its answered folder, made and checked by this process


def answered_dir(root: str) -> str:
    """Where the MCP hook server keeps the events it answered before storing them."""
    return project_file(root, ANSWERED_SUFFIX)


def inbox_dir(root: str) -> str:
    """Where this project's long-lived processes post events for a group commit
    (core/group_commit.py): in memory when the system offers a place (a file there costs a
    fifth of one on a journaling disk, measured), else beside the project's other runtime
    files. The folder is this user's own (0700, checked when made); every file in it carries
    our MAC all the same."""
    from .paths import key_of, project_state_dir

    memory = os.environ.get("XDG_RUNTIME_DIR") or ("/dev/shm" if os.path.isdir("/dev/shm") else "")
    if not memory or not os.path.isabs(memory):
        return project_file(root, INBOX_SUFFIX)
    # Keyed by the project's state folder, so a state folder of its own has its own inbox.
    key = key_of(project_state_dir(root))
    return os.path.join(memory, f"claude-session-{os.getuid()}", key + INBOX_SUFFIX)


def hold(root: str, envelope: dict[str, Any]) -> str:
    """Keep an event on disk while it is stored after its answer was given (the MCP hook server's
    early answer): if this process dies in between, `recover_answered` moves it into the spool.
    Returns the file, for `release` once the event is stored or spooled.

    Not fsync'ed: it guards against this process dying, as the database's own commits do
    (synchronous = NORMAL); written under a temporary name and renamed, never seen half."""
    folder = _ANSWERED.get(root)
    if folder is None:
        folder = answered_dir(root)
        private_dir(folder)
        _ANSWERED[root] = folder
    name = f"{os.getpid()}-{envelope['delivery_id']}.json"
    return _write_whole(folder, name, f".{name}", envelope, durable=False)


def write_quick(folder: str, name: str, envelope: dict[str, Any]) -> str:
    """`envelope` as `folder/name`, whole, not fsync'ed: for a file that lives milliseconds
    (core/group_commit.py), guarding against its process dying, not the machine."""
    return _write_whole(folder, name, f".{name}", envelope, durable=False)


def read_envelope(path: str, own_root: str) -> dict[str, Any]:
    """A posted or spooled envelope of this project, checked (ours, whole); ValueError if not."""
    return _read(path, own_root)


def reject(path: str, exc: BaseException, root: str) -> None:
    """Set a file that is not a usable envelope aside, with its reason."""
    _reject(path, exc, root)


def release(path: str) -> None:
    """The answered event is stored (or spooled): its file goes."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def recover_answered(root: str) -> int:
    """Events an MCP hook server answered but did not live to store (its process is gone) go into
    the project's spool, where they are stored like any spooled event; returns how many.
    A half-written file (its temporary name) was never answered early: it goes."""
    moved = 0
    why = {
        ANSWERED_SUFFIX: "answered, then its MCP hook server stopped before storing it",
        INBOX_SUFFIX: "posted for a group commit, then its process stopped before it was stored",
    }
    for suffix, reason in why.items():
        folder = inbox_dir(root) if suffix == INBOX_SUFFIX else answered_dir(root)
        for name in _answered_by_the_dead(folder):
            path = os.path.join(folder, name)
            if not _complete(name):
                release(path)
                continue
            try:
                envelope = _read(path, root)
            except (OSError, ValueError) as exc:
                _reject(path, exc, root)
                continue
            envelope["reason"] = reason
            write(spool_dir(root), envelope)
            release(path)
            moved += 1
    return moved


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def pending(folder: str) -> list[str]:
    """Spool entries waiting in `folder` (nothing when the folder itself is a link)."""
    try:
        if os.path.islink(folder):
            return []
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(os.path.join(folder, n) for n in names if n.endswith(".json") and n[0] != ".")


def backlog(root: str) -> int:
    """Events waiting: the project's spool, the per-user spool entries for this project, and
    the events a process that is gone answered or posted but did not store (`recover_answered`)."""
    orphans = sum(
        sum(map(_complete, _answered_by_the_dead(folder)))
        for folder in (answered_dir(root), inbox_dir(root))
    )
    return len(pending(spool_dir(root))) + len(_user_entries(root)) + orphans


def _answered_by_the_dead(folder: str) -> list[str]:
    """The files in an answered (or inbox) folder of a process that is gone (by the process id
    in their name: first, or second after a posting time), half-written ones included."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = []
    for name in names:
        parts = name.lstrip(".").split("-", 2)
        pid = parts[1] if len(parts[0]) == 20 and len(parts) > 2 else parts[0]
        if pid.isdigit() and not _alive(int(pid)):
            found.append(name)
    return found


def _complete(name: str) -> bool:
    """An answered event written whole (a half-written one keeps its temporary name)."""
    return name.endswith(".json") and not name.startswith(".")


def ingest(conn: apsw.Connection, root: str, limit: int | None = None) -> int:
    """Replay spooled events of this project into the database; returns how many were stored.
    A database error stops the replay (the rest waits); a bad file only sets that file aside."""
    done = 0
    settings = config.for_hooks(root, conn)
    recover_answered(
        root
    )  # an MCP hook server that answered and died: its events are stored here too
    own = pending(spool_dir(root))
    for path in (own + _user_entries(root))[:limit]:
        try:
            envelope = _read(path, root if path in own else None)
            ev = event.parse(conn, envelope["payload"], envelope.get("event_hint") or "")
            delivery, ctx = _delivery(envelope, root, settings)
        except (OSError, ValueError, KeyError, TypeError, OverflowError) as exc:
            _reject(path, exc, root)
            continue
        events.apply(conn, ev, delivery, ctx)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass  # another process ingested it at the same time; the key kept one row
        done += 1
    return done


def _delivery(
    envelope: dict[str, Any], root: str, settings: dict[str, object]
) -> tuple[apply_types.Delivery, apply_types.Context]:
    received = number(envelope, "received_at", time.time())
    delivery = apply_types.Delivery(
        delivery_id=str(envelope["delivery_id"]),
        received_at=received,
        payload_bytes=int(number(envelope, "payload_bytes", len(envelope["payload"]))),
        payload_sha256=text(envelope, "payload_sha256"),
        truncated=envelope.get("truncated") is True,
        via="spool",
        dispatcher="spool",
        duration_ms=number(envelope, "duration_ms", 0.0),
        note=f"spooled: {text(envelope, 'reason') or 'unknown'}"[:500],
    )
    return delivery, apply_types.Context(root, received, envelope.get("prepared"), settings)


def number(envelope: dict[str, Any], key: str, default: float) -> float:
    """A field of an envelope that must be a number, not negative (`default` when missing)."""
    value = envelope.get(key)
    if value is None:
        return float(default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise Unusable(f"{key} is not a number: {str(value)[:40]!r}")
    return float(value)


def text(envelope: dict[str, Any], key: str) -> str | None:
    """A field of an envelope that must be text, or missing."""
    value = envelope.get(key)
    if value is not None and not isinstance(value, str):
        raise Unusable(f"{key} is not text")
    return value


def _read(path: str, own_root: str | None) -> dict[str, Any]:
    """The envelope in `path`, checked: a regular file of ours, not too big, a JSON object
    with the fields we write, of the right types, under our MAC."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unusable("not a regular file")
        if info.st_uid != os.getuid():
            raise Unusable(f"owned by uid {info.st_uid}, not by this user")
        if info.st_size > ENVELOPE_CAP_BYTES:
            raise Unusable(f"{info.st_size} bytes: larger than any envelope we write")
        data = b""
        while chunk := os.read(fd, 1 << 20):
            data += chunk
    finally:
        os.close(fd)
    envelope = _verified(data)
    if not isinstance(envelope.get("payload"), str):
        raise Unusable("not a spool envelope (no payload text)")
    if not isinstance(envelope.get("delivery_id"), str) or not envelope["delivery_id"]:
        raise Unusable("no delivery id")
    hint = envelope.get("event_hint")
    if hint is not None and not isinstance(hint, str):
        raise Unusable("event_hint is not text")
    claimed = envelope.get("project_root")
    if own_root is not None and claimed is not None and not _same_root(claimed, own_root):
        raise Unusable(f"it names another project ({str(claimed)[:200]})")
    return envelope


def _verified(data: bytes) -> dict[str, Any]:
    """The envelope in a file's bytes, when its first line is our MAC of the rest."""
    import json

    from .provenance import verify

    mac, _, body = data.partition(b"\n")
    if not verify(mac.decode("ascii", "replace"), ENVELOPE, body):
        raise Unusable(NOT_OURS)
    try:
        envelope = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Unusable(f"not a JSON envelope ({type(exc).__name__})") from exc
    if not isinstance(envelope, dict):
        raise Unusable("not a spool envelope")
    return envelope


NOT_OURS = (
    "not written by this user's claude-session (no valid MAC under the per-user key: a file"
    " that came with the repository, or another install's): ignored, never ingested"
)


def _reject(path: str, exc: BaseException, root: str) -> None:
    """A spool file that cannot be replayed is moved aside with its reason, never deleted."""
    from . import log

    reason = f"{type(exc).__name__}: {exc}" if not isinstance(exc, Unusable) else str(exc)
    folder = os.path.join(os.path.dirname(path), REJECTED)
    name = os.path.basename(path)
    try:
        private_dir(folder)
        os.replace(path, os.path.join(folder, name))
        fd = os.open(
            os.path.join(folder, name + ".reason"),
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
            0o600,
        )
        try:
            os.write(fd, (reason + "\n").encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError as move_error:
        reason += f" (could not be moved aside: {move_error})"
    log.error(root, "spool", f"set aside {name}: {reason}")


def quarantined(root: str) -> tuple[int, str | None]:
    """How many of this project's spool files were set aside, and the latest reason."""
    folder = os.path.join(spool_dir(root), REJECTED)
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".json")]
    except OSError:
        return 0, None
    latest: str | None = None
    newest = -1.0
    for name in names:
        reason_path = os.path.join(folder, name + ".reason")
        try:
            when = os.lstat(reason_path).st_mtime
            if when > newest:
                fd = os.open(reason_path, os.O_RDONLY | os.O_NOFOLLOW)
                try:
                    latest = os.read(fd, 2000).decode("utf-8", "replace").strip()
                finally:
                    os.close(fd)
                newest = when
        except OSError:
            continue
    return len(names), latest


def _user_entries(root: str) -> list[str]:
    """Entries of the per-user spool that belong to `root` (the project was missing then)."""
    try:
        folder = user_spool_dir()
    except OSError:  # no home directory: there is no per-user spool
        return []
    found = []
    for path in pending(folder):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                if os.fstat(fd).st_size > ENVELOPE_CAP_BYTES:
                    continue
                data = os.read(fd, ENVELOPE_CAP_BYTES + 1)
            finally:
                os.close(fd)
            envelope = _verified(data)
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(envelope, dict) and _same_root(envelope.get("project_root"), root):
            found.append(path)
    return found


def _same_root(claimed: object, root: str) -> bool:
    """The project an envelope names is `root`, in any spelling: one written through a linked
    folder (or by a version that kept the link in the root) is the project's all the same."""
    if not isinstance(claimed, str) or not claimed.startswith("/"):
        return False
    return claimed == root or canonical(claimed) == canonical(root)
