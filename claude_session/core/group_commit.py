"""Group commit: the events that reach one project's long-lived processes together (the MCP hook
servers of its sessions, the daemon) are stored in one transaction.

An event that finds the database's lock across processes (core/writelock.py) free is stored
in a transaction of its own, as before: a single session pays a look at the lock, nothing
more. One that finds it taken is posted to the project's inbox (a file, as the spool writes
one: under this user's MAC, renamed into place whole), and its process then waits its turn at
the lock, the queue it already waited in. Whoever holds the lock next stores every event posted
by then, its own and the others', in one BEGIN IMMEDIATE transaction, and removes their files
after COMMIT, before letting the lock go. A process that gets the lock and finds its file gone
knows its event is stored: it reads the event's row back and answers from the store as
before. Nobody waits for a group to fill: a group is what arrived while the previous writer
held the lock. The writer's own answer waits for the group's events (at most GROUP_CAP); the
others' come sooner than their own turn would have given them (one commit, one lock hand-over
and one cold page cache for the group, not one per event).

Nothing is lost when a process dies: a posted event stays in the inbox, where the next writer
stores it, or, if its process is gone, spool ingestion does (`spool.recover_answered`). An
inbox file is input like a spool file: one that is not ours (no valid MAC, another user's, a
link) is never stored, but set aside with its reason.

Standard library and apsw only: the hot path.
"""

import os
import time

import apsw

from . import spool
from .apply_types import Applied, Context, Delivery
from .db import Immediate, writers_busy
from .event import Event

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

POSTED = "posted for a group commit"  # the envelope's reason
GROUP_CAP = 16  # events one writer takes in (its own answer waits for them); the rest, the next

_INBOX: "dict[str, str]" = {}  # root -> its inbox folder, made and checked by this process


def inbox_dir(root: str) -> str:
    return spool.inbox_dir(root)


def _inbox(root: str) -> str:
    folder = _INBOX.get(root)
    if folder is None:
        folder = inbox_dir(root)
        spool.private_dir(os.path.dirname(folder))
        spool.private_dir(folder)
        _INBOX[root] = folder
    return folder


def envelope(ev: Event, delivery: Delivery, ctx: Context) -> "dict[str, Any]":
    """What another process needs to store this event as this one would: a spool envelope
    (which spool ingestion replays, should its process die) and how the event came."""
    return spool.envelope_of(ev, delivery, ctx.root, ctx.prepared, POSTED) | {
        "now": ctx.now,
        "dispatcher": delivery.dispatcher,
        "transport": delivery.transport,
        "traceparent": delivery.traceparent,
        "claude_process": list(ctx.claude_process) if ctx.claude_process else None,
    }


def store(
    conn: apsw.Connection,
    ev: Event,
    delivery: Delivery,
    ctx: Context,
    alone: "Callable[[apsw.Connection, Event, Delivery, Context], Applied]",
) -> Applied:
    """Store `ev`: by `alone(conn, ev, delivery, ctx)` (a transaction of its own) when no
    other writer holds the lock, so a single session pays nothing for groups; else posted and
    stored in a group with whatever else was posted (see the module's docstring). Raises what
    storing raises (apsw.Error: the caller spools the event); the event is then not posted."""
    if not writers_busy(conn):
        return alone(conn, ev, delivery, ctx)
    return store_posted(conn, post(ev, delivery, ctx), ev, delivery, ctx)


def post(ev: Event, delivery: Delivery, ctx: Context) -> str:
    """The event in the project's inbox, for whoever writes next; its file."""
    folder = _inbox(ctx.root)
    name = f"{time.time_ns():020d}-{os.getpid()}-{delivery.delivery_id}.json"
    return spool.write_quick(folder, name, envelope(ev, delivery, ctx))


def store_posted(
    conn: apsw.Connection, mine: str, ev: Event, delivery: Delivery, ctx: Context
) -> Applied:
    """Wait for the writer lock; then store everything posted, or find `ev` stored already."""
    folder = os.path.dirname(mine)
    stored: list[str] = []
    applied: list[Applied] = []

    def stored_already() -> bool:
        return not os.path.exists(mine)

    def remove_stored() -> None:  # after COMMIT, before the lock goes: never stored twice
        for path in stored:
            spool.release(path)

    try:
        tx = Immediate(conn, unless=stored_already, after_commit=remove_stored)
        with tx:
            if tx.skipped:
                pass
            elif tx.ordered:
                applied.append(_store_waiting(conn, folder, mine, ev, delivery, ctx, stored))
            else:  # no lock across processes to order the writers: this event alone
                applied.append(find(conn, ev, delivery) or _one(conn, ev, delivery, ctx))
                stored.append(mine)
    except BaseException:
        spool.release(mine)
        raise
    if applied:
        return applied[0]
    found = find(conn, ev, delivery)
    if found is not None:
        return found
    with Immediate(conn):  # gone but not stored (taken away by hand): alone, as before
        return _one(conn, ev, delivery, ctx)


def _store_waiting(
    conn: apsw.Connection,
    folder: str,
    mine: str,
    ev: Event,
    delivery: Delivery,
    ctx: Context,
    stored: "list[str]",
) -> Applied:
    """Inside the group's transaction: every event posted by now, oldest first, ours among
    them; returns ours. An event of another process that cannot be stored is left posted for
    its own process, which stores or spools it; the rest of the group goes on."""
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json") and n[0] != ".")
    except OSError:
        names = []
    own = os.path.basename(mine)
    names = [n for n in names if n != own][: GROUP_CAP - 1]
    names.append(own)
    names.sort()
    applied: Applied | None = None
    capture = False
    for name in names:
        path = os.path.join(folder, name)
        if path == mine:
            applied = _one(conn, ev, delivery, ctx)
            done = applied
        else:
            try:
                other = _read(conn, path, ctx.root, ctx.config)
            except FileNotFoundError:
                continue  # its own process took it back
            except (OSError, ValueError, KeyError, TypeError, OverflowError) as exc:
                spool.reject(path, exc, ctx.root)
                continue
            try:
                done = _one(conn, *other)
            except apsw.Error:
                continue
        stored.append(path)
        capture = capture or done.capture_requested
    assert applied is not None
    applied.capture_requested = capture  # a snapshot asked for by any: one capture takes all
    return applied


def _one(conn: apsw.Connection, ev: Event, delivery: Delivery, ctx: Context) -> Applied:
    """One event in a savepoint of the group's transaction: a bug of ours in its derivation
    undoes that event's writes only, and the event is then kept alone (as `hookrt` does)."""
    from . import events

    try:
        with conn:
            applied = events.apply(conn, ev, delivery, ctx)
        return applied
    except apsw.Error:
        raise
    except Exception as exc:
        from . import log

        log.write(ctx.root, "ERROR", ev.name, f"derived state failed, event kept alone: {exc!r}")
        delivery.note = f"derived state failed: {exc!r}"[:500]
        with conn:
            applied = events.apply(conn, ev, delivery, ctx, derive=False)
        return applied


def _read(
    conn: apsw.Connection, path: str, root: str, settings: "dict[str, Any]"
) -> "tuple[Event, Delivery, Context]":
    """Another process's posted event, checked as a spool file is (ours, whole, this project)."""
    from . import event

    posted = spool.read_envelope(path, root)
    ev = event.parse(conn, posted["payload"], posted.get("event_hint") or "")
    received = spool.number(posted, "received_at", time.time())
    delivery = Delivery(
        delivery_id=str(posted["delivery_id"]),
        received_at=received,
        payload_bytes=int(spool.number(posted, "payload_bytes", len(posted["payload"]))),
        payload_sha256=spool.text(posted, "payload_sha256"),
        truncated=posted.get("truncated") is True,
        duration_ms=max(0.0, (time.time() - received) * 1000),
        dispatcher=spool.text(posted, "dispatcher") or "settings",
        transport=spool.text(posted, "transport"),
        traceparent=spool.text(posted, "traceparent"),
    )
    process = posted.get("claude_process")
    claude: tuple[int, int, str] | None = None
    if isinstance(process, list) and len(process) == 3:
        pid, ticks, space = process
        if isinstance(pid, int) and isinstance(ticks, int) and isinstance(space, str):
            claude = (pid, ticks, space)
    when = spool.number(posted, "now", received)
    return ev, delivery, Context(root, when, posted.get("prepared"), settings, claude)


def find(conn: apsw.Connection, ev: Event, delivery: Delivery) -> Applied | None:
    """The event another writer stored for us: its row and audit row."""
    keys = [ev.dedup_key(delivery.delivery_id)]
    prompt_id = ev.text_of("prompt_id") if ev.name == "UserPromptSubmit" else None
    if prompt_id:
        keys.append(f"{ev.session_id}|UserPromptSubmit|prompt:{prompt_id}")
    for key in keys:
        rows = conn.execute(
            "SELECT e.id, (SELECT max(h.id) FROM hook_events h WHERE h.event_id = e.id)"
            " FROM events e WHERE e.dedup_key = ?",
            (key,),
        ).fetchall()
        if rows and isinstance(rows[0][0], int):
            audit = rows[0][1]
            return Applied(rows[0][0], audit if isinstance(audit, int) else 0)
    return None
