"""The one table from event name to what a hook does for it beyond `events.apply`.

Each Handler has its steps around the core's `events.apply` (see the class). Events not in the
table are stored (by `apply`) and answered with nothing. An answer step only reads: it returns
its answer and, as data, the writes that answer calls for (`Reply`, core/effects.py), which
runtime/effects.py carries out once the answer is out.
"""

import os

import apsw

from ..core import effects, executions, ladder, readings, relations, secret_files, store
from ..core.apply_types import Applied, Context
from ..core.event import Event

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..core.effects import Effects
    from ..services.judge import Call

    Answer = dict[str, Any]  # the JSON object a hook prints
    # (connection, event, its context, what `apply` found (None: spooled), what `before_answer`
    # returned) -> the answer and its effects, or None: nothing to say, nothing to write
    AnswerFn = Callable[[apsw.Connection, Event, Context, Applied | None, Any], "Reply | None"]


class Handler:
    """What a hook does for one event, step by step; every step is optional.

    The answer step only reads (it may run on a read-only connection): Claude Code waits for
    the answer, and a write there would make it wait on the database's lock, and fail the
    answer with the write. What must be written before the answer is `before_answer`'s;
    everything else is an effect, carried out once the answer is out."""

    __slots__ = ("after", "answer", "answer_first", "before_answer", "busy_timeout_ms", "prepare")

    def __init__(
        self,
        *,
        prepare: "Callable[[str], Any] | None" = None,
        after: "Callable[[Context], Effects] | None" = None,
        before_answer: "Callable[[apsw.Connection, Event, Context], Any] | None" = None,
        answer: "AnswerFn | None" = None,
        answer_first: "Callable[[Event, Context], bool] | None" = None,
        busy_timeout_ms: int = 5000,
    ) -> None:
        self.prepare = prepare  # slow outside work, before the transaction (git)
        self.after = after  # the effects of the event itself, whatever the answer (the daemon)
        # What must be written before the answer, since the answer depends on it or Claude
        # Code acts on it at once: the copies of the files a tool may change (PreToolUse), the
        # judge's reservation of its budget before its paid call. What it returns is handed to
        # the answer step.
        self.before_answer = before_answer
        # The JSON object for stdout and the writes it calls for, as a `Reply`, read after the
        # transaction; never writing.
        self.answer = answer
        # True when the answer is empty for this event whatever the store holds (the event and
        # the settings alone say so; `before_answer` then does nothing either): it is then
        # given before the event is stored (see `answers_nothing`).
        self.answer_first = answer_first
        self.busy_timeout_ms = busy_timeout_ms


def answers_nothing(handler: Handler, ev: Event, ctx: Context) -> bool:
    """Whether this event's answer is empty whatever the store holds, so that the hook server
    gives it before storing the event (runtime/hookrt.py, `reply_early`).

    Only SubagentStart and an unjudged SubagentStop, whose transaction (the agent's row, a
    frame and its state) was most of their answer time. Tried on every event with nothing to
    say (a successful PostToolUse, a Stop): under a steady load the wait only moved to the
    next event, which is stored after it (8 sessions in bench/hook_server.py: p99 101-123 ms
    against 91)."""
    if handler.prepare is not None or handler.after is not None or handler.answer_first is None:
        return False
    return handler.answer_first(ev, ctx)


def _always(ev: Event, ctx: Context) -> bool:
    return True


def capture_git(root: str) -> "dict[str, Any]":
    from ..services import gitstate  # imported here: only PreCompact pays for subprocess

    return gitstate.capture(root)


def answer_session_start(
    conn: apsw.Connection, ev: Event, ctx: Context, applied: Applied | None, ready: None = None
) -> "Reply | None":
    """Put the recorded state back in front of the model (compaction) or what was left open."""
    source = ev.text_of("source")
    forked = applied.forked_from if applied is not None else None
    remember = _memories_possible(conn, ctx)
    quiet = forked is None and source != "compact" and not remember
    if (
        quiet
        and not _anything_open(conn, ev.session_id, ctx.now)
        and (source != "resume" or not _restored_before(conn, ev.session_id))
    ):
        return None  # the common start: nothing to say, and `context` need not even load
    if _untrusted(conn, ctx):
        return None  # a database that came with a clone is data, never put before the model
    from ..core import context

    held: list[dict[str, Any]] = []
    if forked is None and source in ("resume", "compact") and ctx.config["restore_delta"]:
        from ..core.held import restores_held

        held = restores_held(conn, ev.session_id, source, ev.text_of("transcript_path"))
    if forked is not None and forked[3]:  # the first session of a fork: its frame's state
        from ..core.fork_state import at_frame

        text: str | None = at_frame(conn, forked[1], forked[2], forked[3])
    elif source == "compact":
        text = context.for_compaction(conn, ev.session_id, ctx.now, held)
    else:
        text = context.for_new_session(conn, ev.session_id, source, ctx.now, held)
    given: Effects = ()
    if remember:
        from ..core import recall

        budget = int(ctx.number("memory_budget_chars"))
        stale = str(ctx.config["memory_stale"])
        recalled, given = recall.for_session_start(
            conn, ev.session_id, ctx.now, budget, root=ctx.root, stale=stale
        )
        text = "\n\n".join(part for part in (text, recalled) if part)
    if not text:
        return Reply(None, given) if given else None
    output = {"hookEventName": "SessionStart", "additionalContext": text}
    return Reply({"hookSpecificOutput": output}, given)


def _memories_possible(conn: apsw.Connection, ctx: Context) -> bool:
    """Recall is on and there may be memories to give (here, or in the user database)."""
    if ctx.config["memory_recall"] is not True:
        return False
    from ..core.paths import global_db_path

    try:
        if os.path.exists(global_db_path()):
            return True
    except OSError:
        pass
    return bool(
        conn.execute("SELECT 1 FROM memories WHERE forgotten_at IS NULL LIMIT 1").fetchall()
    )


def answer_prompt(
    conn: apsw.Connection, ev: Event, ctx: Context, applied: Applied | None, ready: None = None
) -> "Reply | None":
    """The memories that match the prompt, not given to this session yet, within budget."""
    prompt = ev.text_of("prompt")
    if not prompt or not _memories_possible(conn, ctx):
        return None
    if _untrusted(conn, ctx):
        return None  # memories that came with a clone are data, never put before the model
    from ..core import recall

    budget = int(ctx.number("memory_budget_chars"))
    stale = str(ctx.config["memory_stale"])
    text, given = recall.for_prompt(
        conn, ev.session_id, prompt, ctx.now, budget, root=ctx.root, stale=stale
    )
    if not text:
        return Reply(None, given) if given else None
    output = {"hookEventName": "UserPromptSubmit", "additionalContext": text}
    return Reply({"hookSpecificOutput": output}, given)


def _restored_before(conn: apsw.Connection, session_id: str) -> bool:
    """A resumed session we gave recorded state: what it holds may be no longer so."""
    from ..core import injections

    return injections.latest(conn, session_id, injections.RESTORE) is not None


def _anything_open(conn: apsw.Connection, session_id: str, now: float) -> bool:
    """A cheap superset of what `context.for_new_session` may report."""
    return bool(
        conn.execute(
            "SELECT EXISTS (SELECT 1 FROM failed_paths WHERE still_relevant = 1"
            "  AND (expires_at IS NULL OR expires_at > ?1))"
            " OR EXISTS (SELECT 1 FROM error_log WHERE interrupted = 0"
            f"  AND {readings.UNFIXED})"
            " OR EXISTS (SELECT 1 FROM agent_registry WHERE status = 'running'"
            "  AND is_main = 0 AND is_internal = 0)"
            # A session that never ended, recently (the activity index bounds the look): long
            # silent, or ended because its Claude Code exited (this very SessionStart may have
            # seen that a second after the kill), or another one running beside this.
            " OR EXISTS (SELECT 1 FROM sessions WHERE last_activity_at > ?1 - 604800"
            "  AND ((last_activity_at < ?1 - 600 AND status = 'active')"
            f"  OR {readings.NEVER_ENDED}"
            "  OR (status = 'active' AND claude_pid IS NOT NULL AND session_id != ?2)))",
            (now, session_id),
        ).fetchall()[0][0]
    )


def start_daemon(ctx: Context) -> "Effects":
    """Start the project's daemon if it is not running (detached, not waited for),
    once the answer is out."""
    if ctx.config["daemon_autostart"] and not os.environ.get("CLAUDE_SESSION_NO_DAEMON"):
        return (effects.StartDaemon(),)
    return ()


def keep_before_tool(conn: apsw.Connection, ev: Event, ctx: Context) -> None:
    """Before a tool that can change files while a snapshot is still pending, or while another
    agent may commit a frame before this tool ends: keep what it will change, never wait
    (services/snapshots/before_images.py). Before the answer: the tool runs as soon as it is
    given."""
    tool = ev.text_of("tool_name")
    if tool not in executions.READ_ONLY_TOOLS:
        if executions.snapshot_pending(conn):
            _before_tool(conn, ev, ctx, tool or "tool", True)
        elif ctx.config.get("workspace_snapshots") is True and executions.others_live(
            conn, ev.text_of("agent_id") or ev.session_id, ctx.now
        ):
            _before_tool(conn, ev, ctx, tool or "tool", False)


def answer_pre_tool_use(
    conn: apsw.Connection, ev: Event, ctx: Context, applied: Applied | None, ready: None = None
) -> "Reply | None":
    """Before a Write/Edit: name any other live agent holding the file (warn, or deny)."""
    tool = ev.text_of("tool_name")
    if tool not in store.EDIT_TOOLS:
        return None
    target = ev.text_of("file_path") or ev.text_of("notebook_path")
    if not target:
        return None
    from ..core.paths import relative_to_root

    path = relative_to_root(ctx.root, target)
    blocked = None
    if ctx.config["escalation_deny_edits"]:
        blocked = ladder.blocked_file(conn, ev.session_id, path)
    holders = (
        []
        if blocked
        else relations.conflicts(conn, ev.session_id, ev.text_of("agent_id"), path, ctx.now)
    )
    if not blocked and not holders:
        return None
    if _untrusted(conn, ctx):
        return None  # a database that came with a clone is data: its agents and ladders too
    from ..core import answers

    if blocked:
        reason = answers.refused_edit(path, blocked[0], blocked[1])
        return _pre_tool_use({"permissionDecision": "deny", "permissionDecisionReason": reason})
    text = answers.conflict_warning(path, holders, ev.session_id, ctx.now)
    if ctx.config["conflict_policy"] == "deny":
        return _pre_tool_use({"permissionDecision": "deny", "permissionDecisionReason": text})
    return _pre_tool_use({"additionalContext": text})


def _before_tool(conn: apsw.Connection, ev: Event, ctx: Context, tool: str, pending: bool) -> None:
    """The state of the files before this tool, for the snapshots still pending (`pending`)
    and those other agents commit while it runs: the file a Write/Edit names; for a tool that
    names none, the files the pending frames named, or a marker that it may blur them (no
    pending frame: the marker only, for the frames committed while it runs); or (only where
    `snapshot_wait_seconds` is above 0) a wait."""
    from ..services.snapshots import before_images

    wait = ctx.number("snapshot_wait_seconds")
    if pending and tool not in store.EDIT_TOOLS and wait > 0:
        from ..services.snapshots import capture_control

        capture_control.wait_for_pending(conn, ctx.root, wait)
        return
    cap = int(ctx.number("snapshot_max_file_mb") * 1024 * 1024)
    use = ev.text_of("tool_use_id")
    secret_names = not secret_files.reincludes(ctx.config.get("snapshot_exclude"))
    try:
        if tool in store.EDIT_TOOLS:
            target = ev.text_of("file_path") or ev.text_of("notebook_path")
            if target:
                before_images.keep(
                    ctx.root, target, tool, ctx.now, cap, use=use, secret_names=secret_names
                )
        elif pending:
            before_images.keep_all(
                ctx.root, _pending_files(conn), tool, ctx.now, cap, use, secret_names
            )
        else:
            before_images.keep(ctx.root, None, tool, ctx.now, cap, before_images.BLUR, use)
    except OSError as exc:  # the tool still runs; the frame's snapshot may then hold its change
        from ..core import log

        log.write(ctx.root, "WARNING", "PreToolUse", f"the files before {tool} not kept: {exc}")


# Past this many frames waiting for a snapshot, the files they named are not copied before a
# tool that names none: under a backlog (the capture behind a sustained load) that copy grew
# with it, on the tool call's critical path (bench/hook_server.py: Bash's PreToolUse 24 ms at
# 10,000 events, 57 ms at 30,000). The frame is marked as possibly blurred instead.
PENDING_FILES_MAX = 64


def _pending_files(conn: apsw.Connection) -> "list[str] | None":
    """The files the frames still waiting for a snapshot named, if each is a Write/Edit's:
    then nothing else changed since the last snapshot (but the user). Else None (and when
    more than PENDING_FILES_MAX frames wait)."""
    naming = ",".join(f"'{t}'" for t in store.EDIT_TOOLS)
    rows = conn.execute(
        "SELECT f.kind IN ('tool', 'attempt') AND f.tool_name IN (" + naming + ")"
        " AND json_valid(f.files), f.files FROM vcs_tags v JOIN frames f"
        " ON f.session_id = v.session_id AND f.frame_no = v.frame_no WHERE v.status = 'pending'"
        " LIMIT ?1",
        (PENDING_FILES_MAX + 1,),
    ).fetchall()
    if len(rows) > PENDING_FILES_MAX or not all(row[0] for row in rows):
        return None
    paths = conn.execute(
        "SELECT DISTINCT j.value FROM json_each(?1) AS s, json_each(s.value) AS j",
        ("[" + ",".join(str(row[1]) for row in rows) + "]",),
    ).fetchall()
    return [str(p[0]) for p in paths]


def answer_nothing(
    conn: apsw.Connection, ev: Event, ctx: Context, applied: Applied | None, ready: None = None
) -> "Reply | None":
    """PreSkillShellCommand: never an answer (exit 0, empty stdout). Any decision but allow, or
    an updatedInput, keeps the skill's command from running; allow adds nothing."""
    return None


def _untrusted(conn: apsw.Connection, ctx: Context) -> bool:
    """A database this user did not make here (core/trust.py): nothing it holds is put before
    the model or an agent. Asked only when there is something to say (a stat and a read)."""
    from ..core.paths import db_path
    from ..core.trust import database_problem

    return database_problem(db_path(ctx.root), conn) is not None


def _pre_tool_use(output: "Answer") -> "Reply":
    return Reply({"hookSpecificOutput": {"hookEventName": "PreToolUse", **output}})


def answer_failure(
    conn: apsw.Connection, ev: Event, ctx: Context, applied: Applied | None, ready: None = None
) -> "Reply | None":
    """After a failure: the ladder's guidance for the model, and from attempt 4 for the user."""
    if ev.name == "PostToolUse" and not store.response_error(ev):
        return None  # the common case: a success, nothing to say
    found = ladder.latest_for_call(conn, ev.text_of("tool_use_id"))
    if not found:
        return None
    attempt, interrupted, command, tool, file_path, error_text, category = found
    if interrupted or _untrusted(conn, ctx):
        return None  # a cloned database's attempts are not this agent's ladder
    from ..core import answers, errors

    what = str(command or f"{tool} {file_path or ''}".strip())
    gist = errors.gist(str(error_text or ""))
    text = answers.guidance(attempt, what, gist, file_path, errors.is_check(category, command))
    answer: Answer = {"hookSpecificOutput": {"hookEventName": ev.name, "additionalContext": text}}
    if attempt >= errors.USER_AT:
        answer["systemMessage"] = answers.user_message(attempt, what, gist)
    return Reply(answer)


class Reply:
    """An answer (None: nothing to say), and the writes it calls for as data (core/effects.py),
    carried out once it is given (runtime/effects.py), as every side effect of a hook."""

    __slots__ = ("effects", "value")

    def __init__(self, value: "Answer | ExitBlock | None", effects: "Effects" = ()) -> None:
        self.value = value
        self.effects = effects


class ExitBlock:
    """A deliberate, configured block that the event only takes as exit code 2 with the
    reason on stderr (TaskCompleted); `hookrt` turns it into exactly that."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def reserve_judge(conn: apsw.Connection, ev: Event, ctx: Context) -> "Call | None":
    """Before a judged event's answer: the judge's share of today's budget, reserved before its
    paid call (services/judge.py, `reserve`); None when no judge runs for this event."""
    if _not_judged(ev, ctx):
        return None
    if _untrusted(conn, ctx):
        return None  # the judge's prompt would quote a database that came with a clone
    from ..services import judge

    return judge.reserve(conn, ev, ctx.config, ctx.now)


def answer_judge(
    conn: apsw.Connection, ev: Event, ctx: Context, applied: Applied | None, ready: "Call | None"
) -> "Reply | None":
    """At the configured events, a judge checks the work is done; a block makes the agent go on.
    Its verdict is recorded whatever it is, once the answer is out."""
    if ready is None:
        return None  # no judge for this event (`reserve_judge`)
    from ..services import judge

    verdict, record = judge.judge(conn, ev, ctx.config, ctx.now, ready)
    if verdict.decision != "block":
        return Reply(None, (record,))  # allowed, or the judge failed: fail open (recorded)
    reason = f"claude-session judge: the work is not done yet. {verdict.reason}"
    exit_code = 2 if ev.name == "TaskCompleted" else 0
    done: Effects = (record,)
    # This hook run's own audit row says how it really ended (not the newest row: another
    # hook of the same session may have written one meanwhile).
    if applied is not None:  # None: the event went to the spool, its audit row comes later
        done += (effects.SetExitCode(applied.audit_id, exit_code, "blocked by the judge"),)
    if ev.name == "TaskCompleted":
        return Reply(ExitBlock(reason), done)
    return Reply({"decision": "block", "reason": reason}, done)


def _not_judged(ev: Event, ctx: Context) -> bool:
    """No judge runs for this event: `answer_judge` gives nothing."""
    wanted = {e.strip() for e in str(ctx.config["judge_events"]).split(",")}
    if ev.name not in wanted or ev.get("stop_hook_active") in (1, True):
        return True  # not configured, or already going on because of a block: no loop
    # doctor and demo runs: never start a (paid) judge on sample data
    return bool(os.environ.get("CLAUDE_SESSION_NO_JUDGE"))


HANDLERS: dict[str, Handler] = {
    "SessionStart": Handler(after=start_daemon, answer=answer_session_start),
    "UserPromptSubmit": Handler(answer=answer_prompt),
    "PreToolUse": Handler(before_answer=keep_before_tool, answer=answer_pre_tool_use),
    "PostToolUse": Handler(answer=answer_failure),
    "PostToolUseFailure": Handler(answer=answer_failure),
    # a skill's inline shell command may change files as Bash does: the files kept before it
    "PreSkillShellCommand": Handler(before_answer=keep_before_tool, answer=answer_nothing),
    "PreCompact": Handler(prepare=capture_git),
    "TaskCompleted": Handler(before_answer=reserve_judge, answer=answer_judge),
    "Stop": Handler(before_answer=reserve_judge, answer=answer_judge),
    "SubagentStart": Handler(answer_first=_always),
    "SubagentStop": Handler(
        before_answer=reserve_judge, answer=answer_judge, answer_first=_not_judged
    ),
    # SessionEnd hooks share a 1.5 s budget unless settings raise it: give up on a lock sooner.
    "SessionEnd": Handler(busy_timeout_ms=1000),
}
DEFAULT = Handler()
