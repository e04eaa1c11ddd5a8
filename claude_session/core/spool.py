"""The spool: events that could not be written to the database wait here as files.

One file per event, written under a temporary name and renamed into place, so a reader never
sees half a file. Ingestion replays them through the same writers as a live hook; the events'
idempotency keys make a replay after a crash harmless. This is the failure path, so it may
import `json`.
"""

from __future__ import annotations

import os
import time

import apsw

from . import config, event, events
from .paths import spool_dir, user_state_dir

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any

REJECTED = "rejected"


def user_spool_dir() -> str:
    """For events whose project directory is missing (deleted, renamed, never existed)."""
    return os.path.join(user_state_dir(), "spool")


def write(folder: str, envelope: dict[str, Any]) -> str:
    """Atomically add one event to `folder`; returns the file's path."""
    import json

    os.makedirs(folder, mode=0o700, exist_ok=True)
    name = f"{time.time_ns()}-{os.getpid()}-{envelope['delivery_id']}.json"
    tmp = os.path.join(folder, f".{name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, json.dumps(envelope, ensure_ascii=False).encode("utf-8", "replace"))
        os.fsync(fd)
    finally:
        os.close(fd)
    final = os.path.join(folder, name)
    os.rename(tmp, final)
    return final


def pending(folder: str) -> list[str]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(os.path.join(folder, n) for n in names if n.endswith(".json") and n[0] != ".")


def backlog(root: str) -> int:
    """Events waiting: the project's spool plus the per-user spool entries for this project."""
    return len(pending(spool_dir(root))) + len(_user_entries(root))


def ingest(conn: apsw.Connection, root: str, limit: int | None = None) -> int:
    """Replay spooled events of this project into the database; returns how many were stored."""
    done = 0
    settings = config.for_hooks(root, conn)
    for path in (pending(spool_dir(root)) + _user_entries(root))[:limit]:
        try:
            envelope = _read(path)
            ev = event.parse(conn, envelope["payload"], envelope.get("event_hint") or "")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            _reject(path, exc)
            continue
        received = float(envelope.get("received_at") or time.time())
        delivery = events.Delivery(
            delivery_id=str(envelope["delivery_id"]),
            received_at=received,
            payload_bytes=int(envelope.get("payload_bytes") or len(envelope["payload"])),
            payload_sha256=envelope.get("payload_sha256"),
            truncated=bool(envelope.get("truncated")),
            via="spool",
            dispatcher="spool",
            duration_ms=float(envelope.get("duration_ms") or 0.0),
            note=f"spooled: {envelope.get('reason') or 'unknown'}"[:500],
        )
        ctx = events.Context(root, received, envelope.get("prepared"), settings)
        events.apply(conn, ev, delivery, ctx)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass  # another process ingested it at the same time; the key kept one row
        done += 1
    return done


def _read(path: str) -> dict[str, Any]:
    import json

    with open(path, encoding="utf-8") as f:
        envelope = json.load(f)
    if not isinstance(envelope, dict) or not isinstance(envelope.get("payload"), str):
        raise ValueError("not a spool envelope")
    return envelope


def _reject(path: str, exc: Exception) -> None:
    """A spool file that cannot be replayed is moved aside, never deleted."""
    from . import log

    folder = os.path.join(os.path.dirname(path), REJECTED)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        os.replace(path, os.path.join(folder, os.path.basename(path)))
    except OSError:
        pass
    log.error(None, "spool", f"cannot replay {os.path.basename(path)}: {exc}")


def _user_entries(root: str) -> list[str]:
    import json

    found = []
    for path in pending(user_spool_dir()):
        try:
            with open(path, encoding="utf-8") as f:
                if json.load(f).get("project_root") == root:
                    found.append(path)
        except (OSError, ValueError, AttributeError):
            continue
    return found
