"""The one place an event changes the store: `apply`.

The hook, the spool ingest, the demo, replays and the fast tests all call `apply`; none of them
re-implements a piece of it, so a replayed session and a live one cannot disagree. Standard
library and apsw only: every hook process imports this.
"""

import os
import time

import apsw

from . import executions, store
from .apply_types import Applied, Context, Delivery
from .db import Immediate
from .event import Event

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from collections.abc import Callable

    Derive = Callable[[apsw.Connection, Event, Context, Applied], None]

# Every hook event of Claude Code 2.1.332: the 31 of the 2.1.240 hooks docs, PreModelSwitch and
# PostModelSwitch (2.1.330), and PreSkillShellCommand (2.1.332; 2.1.330 never calls a hook
# installed for it). tests/test_model_switch.py checks this list against each CLI's own.
EVENTS: tuple[str, ...] = (
    "SessionStart",
    "Setup",
    "InstructionsLoaded",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "MessageDisplay",
    "PreToolUse",
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "PreSkillShellCommand",
    "Notification",
    "SubagentStart",
    "SubagentStop",
    "TaskCreated",
    "TaskCompleted",
    "Stop",
    "StopFailure",
    "TeammateIdle",
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "FileChanged",
    "WorktreeCreate",
    "WorktreeRemove",
    "PreCompact",
    "PostCompact",
    "PreModelSwitch",
    "PostModelSwitch",
    "Elicitation",
    "ElicitationResult",
    "SessionEnd",
)

# Event name -> the derived state it writes, inside the event's transaction. Events not here
# are stored as they came.
DERIVE: "dict[str, Derive]" = {
    "SessionStart": store.on_session_start,
    "UserPromptSubmit": store.on_user_prompt,
    "PreToolUse": store.on_pre_tool_use,
    "PostToolUse": store.on_post_tool_use,
    "PostToolUseFailure": store.on_post_tool_use_failure,
    "PreSkillShellCommand": store.on_skill_shell_command,
    "SubagentStart": store.on_subagent_start,
    "SubagentStop": store.on_subagent_stop,
    "PreCompact": store.on_pre_compact,
    "PostCompact": store.on_post_compact,
    "SessionEnd": store.on_session_end,
}


def new_delivery_id() -> str:
    return os.urandom(12).hex()


def apply(
    conn: apsw.Connection, ev: Event, delivery: Delivery, ctx: Context, derive: bool = True
) -> Applied:
    """Store the event, its derived rows and its audit row in one BEGIN IMMEDIATE
    transaction, or nothing at all. A duplicate delivery only adds an audit row.

    `derive=False` stores the event and its audit row alone, nothing derived from it: the
    hook's way to keep an event whose derivation hit a bug of ours, wherever that bug is. An
    event of no session (`ev.unattributed`: another tool's payload) is stored so too, with its
    reason: no session, agent, claim or frame is made up for it."""
    if ev.unattributed is not None:
        derive = False
    key = ev.dedup_key(delivery.delivery_id)
    with Immediate(conn):
        if ev.name == "UserPromptSubmit":
            key = _prompt_key(conn, ev, delivery, key)
        inserted = conn.execute(
            "INSERT INTO events (dedup_key, received_at, session_id, hook_event_name, tool_name,"
            " tool_use_id, agent_id, agent_type, prompt_id, payload, payload_bytes,"
            " payload_sha256, truncated, via, traceparent, unattributed)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT (dedup_key) DO NOTHING"
            # the newest skill command in the same step (executions.end_skill_commands)
            " RETURNING id, (SELECT max(id) FROM events"
            "  WHERE hook_event_name = 'PreSkillShellCommand')",
            (
                key,
                delivery.received_at,
                ev.session_id,
                ev.name,
                ev.text_of("tool_name"),
                ev.text_of("tool_use_id"),
                ev.text_of("agent_id"),
                ev.text_of("agent_type"),
                ev.text_of("prompt_id"),
                ev.text,
                delivery.payload_bytes,
                delivery.payload_sha256,
                int(delivery.truncated),
                delivery.via,
                delivery.traceparent,
                ev.unattributed,
            ),
        ).fetchall()
        duplicate = not inserted
        if duplicate:
            found = conn.execute("SELECT id FROM events WHERE dedup_key = ?", (key,)).fetchall()
            applied = Applied(found[0][0] if isinstance(found[0][0], int) else 0, duplicate=True)
        else:
            event_id, newest_skill_command = inserted[0]
            applied = Applied(event_id if isinstance(event_id, int) else conn.last_insert_rowid())
            if isinstance(newest_skill_command, int):
                applied.newest_skill_command = newest_skill_command
            if derive:
                _derive(conn, ev, ctx, applied)
        applied.audit_id = _audit(conn, ev, delivery, applied.event_id, duplicate, ctx.root)
    return applied


def _prompt_key(conn: apsw.Connection, ev: Event, delivery: Delivery, key: str) -> str:
    """A prompt rebuilt from the transcript is keyed by its prompt_id, so that the hook's own
    delivery of it, arriving later (from the spool, say), is a duplicate and not a second turn.
    Hook deliveries keep their per-delivery key otherwise: a prompt_id alone is not trusted to
    tell prompts apart (tests and old versions reuse or lack it)."""
    prompt_id = ev.text_of("prompt_id")
    if not prompt_id:
        return key
    natural = f"{ev.session_id}|UserPromptSubmit|prompt:{prompt_id}"
    if delivery.source == "transcript":
        return natural
    if conn.execute("SELECT 1 FROM events WHERE dedup_key = ?", (natural,)).fetchall():
        return natural
    return key


def _derive(conn: apsw.Connection, ev: Event, ctx: Context, applied: Applied) -> None:
    """Everything a new event changes beyond its own row, in its transaction; what it finds
    goes into `applied`."""
    applied.count("count")
    duration = ev.get("duration_ms")
    if isinstance(duration, int | float):  # PostToolUse(Failure): the tool's time
        applied.count("duration_ms", duration)
    store.touch_session(conn, ev, ctx)
    if ev.name in executions.ENDS_SKILL_COMMANDS:
        _end_skill_commands(conn, ev, ctx, applied)
    writer = DERIVE.get(ev.name)
    if writer is not None:
        writer(conn, ev, ctx, applied)
    executions.track(conn, ev, ctx, applied)
    _add_metrics(conn, ev.session_id, ev.name, applied.counters, ctx.now)
    # Last: the frame's state holds everything this event changed, its counters too.
    if ev.name in executions.FRAME_EVENTS:
        from . import frames

        turn = executions.turn_of(conn, ev, applied)
        frame_no = frames.commit_for_event(conn, ev, ctx, applied, turn)
        tool_use_id = ev.text_of("tool_use_id")
        if frame_no and tool_use_id:
            executions.set_tool_frame(conn, tool_use_id, frame_no)


def _end_skill_commands(conn: apsw.Connection, ev: Event, ctx: Context, applied: Applied) -> None:
    """The next event of the agent after a skill's inline shell commands (PreSkillShellCommand
    has no Post event): they ran, and each gets the frame a Bash call gets after it (with a
    workspace snapshot), its state before this event's changes."""
    ended = executions.end_skill_commands(conn, ev, ctx.now, applied)
    if not ended:
        return
    from . import frames

    turn = executions.turn_of(conn, ev, applied)
    for tool_use_id, tool_name, summary, command, cwd in ended:
        files = frames.paths_json(store.command_files(command, cwd, ctx.root))
        frame_no = frames.commit_after_skill_command(
            conn, ev, ctx, applied, turn, tool_use_id, tool_name, summary, files
        )
        executions.set_tool_frame(conn, tool_use_id, frame_no)


def _add_metrics(
    conn: apsw.Connection,
    session_id: str,
    event_type: str,
    counters: "dict[str, float]",
    now: float,
) -> None:
    """One statement for all of an event's counters: each (session, event type, key) row
    keeps a running value and the time of its last update."""
    if not counters:
        return
    params: list[object] = [session_id, event_type, now]
    rows = []
    for key, amount in counters.items():
        rows.append(f"(?1, ?2, ?{len(params) + 1}, ?{len(params) + 2}, datetime(?3, 'unixepoch'))")
        params += [key, amount]
    conn.execute(
        "INSERT INTO session_metrics (session_id, event_type, key, value, timestamp)"
        f" VALUES {', '.join(rows)} ON CONFLICT (session_id, event_type, key) DO UPDATE SET"
        " value = value + excluded.value, timestamp = excluded.timestamp",
        params,
    )


def _audit(
    conn: apsw.Connection,
    ev: Event,
    delivery: Delivery,
    event_id: int,
    duplicate: bool,
    root: str | None,
) -> int:
    if delivery.duration_ms is not None:
        duration = delivery.duration_ms
    else:
        duration = (time.perf_counter() - delivery.started_clock) * 1000
    outcome = "duplicate" if duplicate else ("spooled" if delivery.via == "spool" else "stored")
    note = delivery.note
    if ev.unattributed is not None:  # no session to file it under: NULL, and why
        note = f"unattributed: {ev.unattributed}" + (f"; {note}" if note else "")
    conn.execute(
        "INSERT INTO hook_events (event_id, event_type, session_id, started_at, duration_ms,"
        " exit_code, outcome, note, dispatcher, payload_summary, timestamp, source, transport)"
        " VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6, ?7, ?8, ?9, datetime(?4, 'unixepoch'), ?10, ?11)",
        (
            event_id,
            ev.name,
            None if ev.unattributed is not None else ev.session_id,
            delivery.received_at,
            round(duration, 3),
            outcome,
            note,
            delivery.dispatcher,
            ev.summary(root),
            delivery.source,
            delivery.transport,
        ),
    )
    return conn.last_insert_rowid()


def set_exit_code(conn: apsw.Connection, audit_id: int, exit_code: int, note: str) -> None:
    """How the hook run behind audit row `audit_id` really ended (a deliberate block)."""
    with Immediate(conn):
        conn.execute(
            "UPDATE hook_events SET exit_code = ?2, note = ?3 WHERE id = ?1",
            (audit_id, exit_code, note),
        )


def add_note(conn: apsw.Connection, audit_id: int, note: str) -> None:
    """Say more of the event behind audit row `audit_id` (an answer it missed, say)."""
    with Immediate(conn):
        conn.execute(
            "UPDATE hook_events SET note = COALESCE(note || '; ', '') || ?2 WHERE id = ?1",
            (audit_id, note),
        )


# The events of no session that arrived before ?1 (through their partial index).
UNATTRIBUTED = "SELECT id FROM events WHERE unattributed IS NOT NULL AND received_at < ?1"


def prune(conn: apsw.Connection, before: float) -> dict[str, int]:
    """Drop the raw event log and audit rows of sessions that ended before `before`.

    What the tool learned stays (sessions, agents, claims, errors, failed paths, verdicts, each
    session's last snapshot): only the bulk that a long-lived project accumulates goes. The
    events of no session (other tools': `unattributed`) go when they arrived before `before`.
    """
    old = "SELECT session_id FROM sessions WHERE status = 'ended' AND ended_at < ?1"
    counts = {}
    with Immediate(conn):
        conn.execute(
            f"DELETE FROM hook_events WHERE session_id IS NULL AND event_id IN ({UNATTRIBUTED})",
            (before,),
        )
        unattributed_audit = conn.changes()
        conn.execute(f"DELETE FROM events WHERE id IN ({UNATTRIBUTED})", (before,))
        unattributed = conn.changes()
        conn.execute(f"DELETE FROM events WHERE session_id IN ({old})", (before,))
        counts["events"] = conn.changes() + unattributed
        if counts["events"]:
            conn.execute("DELETE FROM tallies WHERE name = 'events'")  # counted anew
        conn.execute(f"DELETE FROM hook_events WHERE session_id IN ({old})", (before,))
        counts["hook_events"] = conn.changes() + unattributed_audit
        counts["context_snapshots"] = store.prune_snapshots(conn, old, before)
        from . import frames

        counts["workspace_snapshot_pointers"] = frames.drop_pointers(conn, old, (before,))
    return counts


def count(conn: apsw.Connection) -> int:
    """How many events are stored: the tally (if a sweep made one) plus the rows past it, or
    else every row counted."""
    found = conn.execute(
        "SELECT n + (SELECT count(*) FROM events WHERE id > counted_to) FROM tallies"
        " WHERE name = 'events'"
    ).fetchall()
    if found:
        return int(found[0][0])  # type: ignore[arg-type]
    return int(conn.execute("SELECT count(*) FROM events").fetchall()[0][0])  # type: ignore[arg-type]


def update_tally(conn: apsw.Connection) -> None:
    """Move the events tally forward to the newest row (the daemon's sweeps, off the hook's
    path): counts only the rows added since, except the first time."""
    with Immediate(conn):
        if not conn.execute("SELECT 1 FROM tallies WHERE name = 'events'").fetchall():
            conn.execute(
                "INSERT INTO tallies (name, counted_to, n)"
                " SELECT 'events', coalesce(max(id), 0), count(*) FROM events"
            )
            return
        conn.execute(
            "UPDATE tallies SET n = n + (SELECT count(*) FROM events WHERE id > counted_to),"
            " counted_to = (SELECT max(id) FROM events)"
            " WHERE name = 'events' AND (SELECT max(id) FROM events) > counted_to"
        )


def unattributed_count(conn: apsw.Connection) -> int:
    """How many events came with no session id (other tools' payloads), stored unattributed;
    read through their partial index, never a pass over the log."""
    found = conn.execute("SELECT count(*) FROM events WHERE unattributed IS NOT NULL").fetchall()
    return int(found[0][0])  # type: ignore[arg-type]
