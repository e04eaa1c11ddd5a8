"""What was recorded: `status`, `sessions`, `agents`, `claims`, `errors`, `failed-paths`,
`verdicts`, `events`, `restore`. Every one has --json (the full rows); the tables keep what
a person scans."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..project import Listing, Project
from . import cells, lookup, output, status_view
from .group import cli, json_option, require_database
from .listing import emit_page, limit_option, show_listing

if TYPE_CHECKING:
    from ..project import Injection, RecordedEvent


def _without_payload(event: RecordedEvent) -> dict[str, object]:
    return {k: v for k, v in dataclasses.asdict(event).items() if k != "payload"}


def _with_payload(event: RecordedEvent) -> dict[str, object]:
    return dataclasses.asdict(event)


@cli.command()
@json_option(
    "an object: now (live_agents, contested_files, open_errors, last_compaction, problems),"
    " database, sessions, sessions_never_ended, agents, claims, daemon, trust, open_errors,"
    " failed_paths, hooks, cost (the latest session's, from Claude Code's transcripts as last"
    " read: `status` reads none; with dead_ends: what went to errors never fixed and approaches"
    " that failed, and not_read_yet: session_id, bytes, files, read_at of transcripts written"
    " past what was read), judge, memories"
    " (count, about_files, possibly_stale: a file they are about changed since)"
)
@output.wide_option
@click.pass_obj
def status(root: Path) -> None:
    """What is happening now (live agents, contested files, open errors, the last compaction,
    installation problems), then sessions, agents, claims, errors, failed paths, database.
    Writes nothing: the cost is as the transcripts were last read (by the daemon, or `cost`),
    and says how much of them is not read yet."""
    require_database(root)
    with Project(root) as project:
        # Nothing is written: the transcripts are read by the daemon (and `cost`, or
        # `Project.refresh()`); the cost shown says what is not read yet. Only a database an
        # older version wrote is upgraded first.
        project.upgrade()
        found = dataclasses.asdict(project.status())
    output.emit(found, text=lambda: status_view.show(found))


@cli.command()
@click.option(
    "--all",
    "include_all",
    is_flag=True,
    help="Every agent, finished sessions' and internal helpers too, streamed.",
)
@click.option("--session", help="Session id (a prefix is enough).")
@limit_option
@json_option(
    "a list of agents: agent, type, task, state, age_seconds, silent_seconds, files, tokens,"
    " cost_usd (its own model responses, from Claude Code's transcripts), estimated (1: part"
    " of that cost is for a model no price is known for), reason, session_id, tool_uses,"
    " is_internal"
)
@output.wide_option
@click.pass_obj
def agents(root: Path, include_all: bool, session: str | None, limit: int) -> None:
    """The agent registry: agent, type, task, state, age, last seen, files, tokens and cost
    (its own model responses, as read from Claude Code's transcripts), reason."""
    hide = ("session_id", "tool_uses", "is_internal")  # what a person scans
    require_database(root)
    with Project(root) as project:
        if session:
            project.refresh(transcripts=False, spool=False)  # the database as this version reads it
            session = lookup.session(lookup.readable(project), session)
        # Their cost from only the new bytes of the transcripts: the session's, else the live ones'.
        project.refresh(session, recent_seconds=None if session else 0, spool=False)
        reveal = f"agents --session {session} --all" if session else ""
        show_listing(
            lambda: project.agents_page(limit, session=session, all=include_all),
            lambda: project.each_agent(session=session, all=include_all),
            include_all, "agents", "agents", hide, reveal,
        )  # fmt: skip


@cli.command()
@click.option("--all", "include_all", is_flag=True, help="Every session, streamed.")
@limit_option
@json_option(
    "a list of sessions: session_id, state (active, ended, or interrupted: it never said"
    " SessionEnd), started_at, ended_at, prompts, tool_calls, cost_usd (its model responses,"
    " from Claude Code's transcripts; null: not read), estimated (1: part of that cost is for"
    " a model no price is known for), compactions, forks (made from it), end_reason,"
    " last_activity_at"
)
@output.wide_option
@click.pass_obj
def sessions(root: Path, include_all: bool, limit: int) -> None:
    """The sessions recorded, the latest active first: id, started, ended or interrupted,
    prompts, tool calls, cost, compactions, forks made from it."""
    hide = ("end_reason", "last_activity_at")
    require_database(root)
    with Project(root) as project:
        project.refresh(recent_seconds=0, spool=False)  # the live sessions' new bytes only
        show_listing(lambda: project.sessions_page(limit), project.each_session, include_all,
                     "sessions", "sessions", hide)  # fmt: skip


@cli.command()
@click.option("--all", "include_all", is_flag=True, help="Every claim, released too, streamed.")
@limit_option
@json_option(
    "a list of claims: file_path, agent, session_id, operation, edits, last_touched_at,"
    " expires_at, lease, contested"
)
@output.wide_option
@click.pass_obj
def claims(root: Path, include_all: bool, limit: int) -> None:
    """File claims (leases) by agent; files claimed by two live agents are marked contested."""
    require_database(root)
    with Project(root) as project:
        project.refresh(transcripts=False, spool=False)
        show_listing(lambda: project.claims_page(limit, all=include_all),
                     lambda: project.each_claim(all=include_all), include_all,
                     "claims", "claims")  # fmt: skip


@cli.command(name="errors")
@click.option("--open", "open_only", is_flag=True, help="Only errors not fixed yet.")
@click.option("--all", "every", is_flag=True, help="Every one, streamed.")
@limit_option
@json_option(
    "a list of errors, one per climb of its ladder (the same thing failing until it was fixed"
    " or abandoned): id (its first failure's), session_id, agent_id, tool_name, error_category,"
    " what, attempts (how many failures), step (where the ladder stands, as `status` says it:"
    " 3 (research)), state (open, fixed, abandoned; interrupted: the user stopped the call),"
    " interrupted, command, file_path, exit_code, task_id, error_message (the last failure's),"
    " first_at, last_at, resolved_at, tokens, cost_usd (what the climb cost: the model"
    " responses of the agents that climbed it, from its first failure to its last, never the"
    " fix after it; the same as the failed approach recorded from it says; null when the"
    " session's usage was not read from Claude Code's transcripts), failures (each: id,"
    " attempt_number, step, occurred_at, agent_id, tool_name, tool_use_id, command, file_path,"
    " exit_code, task_id, error_message)"
)
@output.wide_option
@click.pass_obj
def errors_command(root: Path, open_only: bool, every: bool, limit: int) -> None:
    """Errors, one row per error: how many times it failed, where its escalation ladder
    stands and what became of it (the words `status` uses), and the tokens and cost of its
    failures (from the first to the last)."""
    hide = (
        *("error_message", "command", "file_path", "task_id", "interrupted", "first_at"),
        "failures",
    )
    reveal = "errors" if open_only else ""  # the open ones hide the fixed
    require_database(root)
    with Project(root) as project:
        project.refresh(recent_seconds=0, spool=False)  # the live sessions' new bytes only
        show_listing(lambda: project.errors_page(limit, open_only=open_only),
                     lambda: project.each_error(open_only=open_only), every,
                     "errors", "errors", hide, reveal)  # fmt: skip


@cli.command(name="failed-paths")
@click.option(
    "--all", "include_all", is_flag=True, help="Every one, resolved and expired too, streamed."
)
@limit_option
@json_option(
    "a list of failed paths: id, approach, reason_failed, file_path, session_id,"
    " still_relevant, created_at, expires_at, context, tokens, cost_usd (what the approach"
    " cost: that of the ladder's climb it was recorded from, as `errors` gives it; none for"
    " one recorded by hand; null when unknown)"
)
@output.wide_option
@click.pass_obj
def failed_paths(root: Path, include_all: bool, limit: int) -> None:
    """Approaches tried and rejected, newest first, with the tokens and cost each one took."""
    require_database(root)
    with Project(root) as project:
        project.refresh(recent_seconds=0, spool=False)  # the live sessions' new bytes only
        show_listing(lambda: project.failed_paths_page(limit, all=include_all),
                     lambda: project.each_failed_path(all=include_all), include_all,
                     "failed paths", "failed-paths")  # fmt: skip


@cli.command(name="verdicts")
@click.option("--all", "every", is_flag=True, help="Every one, streamed.")
@limit_option
@json_option(
    "a list of verdicts: id, session_id, hook_event, task_id, decision, reason, task, judge,"
    " created_at, verdict_json, raw"
)
@output.wide_option
@click.pass_obj
def verdicts_command(root: Path, every: bool, limit: int) -> None:
    """The judge's verdicts on finished work."""
    hide = ("raw", "verdict_json")
    require_database(root)
    with Project(root) as project:
        project.refresh(transcripts=False, spool=False)
        show_listing(lambda: project.verdicts_page(limit), project.each_verdict, every,
                     "verdicts", "verdicts", hide)  # fmt: skip


@cli.command()
@click.option("--session", help="Session id (a prefix is enough).")
@click.option("--event", help="Hook event name, e.g. PostToolUse.")
@click.option("--tool", help="Tool name, e.g. Bash.")
@click.option("--agent", help="Subagent id (a prefix is enough).")
@click.option("--payload", is_flag=True, help="Include the stored (redacted) payload.")
@click.option("--all", "every", is_flag=True, help="Every matching event, oldest first, streamed.")
@limit_option
@json_option(
    "a list of events, oldest first: id, received_at, session_id, event, tool_name, agent_id,"
    " tool_use_id, payload_bytes, via (and payload with --payload)"
)
@output.wide_option
@click.pass_obj
def events(
    root: Path,
    session: str | None,
    event: str | None,
    tool: str | None,
    agent: str | None,
    payload: bool,
    every: bool,
    limit: int,
) -> None:
    """List recorded events, oldest first, filtered; a filter that names nothing recorded is
    an error (with the closest valid value), not an empty list."""
    require_database(root)
    with Project(root) as project:
        project.refresh(transcripts=False, spool=False)
        conn = lookup.readable(project)
        if session:
            session = lookup.session(conn, session)
        if event:
            event = lookup.event(event)
        if agent:
            agent = lookup.agent(conn, agent)
        wanted: dict[str, object] = {"session": session, "event": event, "tool": tool}
        wanted |= {"agent": agent, "payload": payload}
        asked = _with_payload if payload else _without_payload
        if every:
            output.emit_stream(asked(e) for e in project.each_event(**wanted))
            return
        found = project.events_page(limit, **wanted)
        if tool and not found.rows:
            lookup.tool(conn, tool)
    rows = [asked(e) for e in reversed(found.rows)]  # the newest page, oldest first
    emit_page(Listing(rows, found.total), "events", "events")


@cli.command()
@click.option("--session", help="Session id, a prefix is enough (default: the latest).")
@click.option(
    "--preview", is_flag=True, help="What a compaction would put back now, instead of what was."
)
@click.option("--all", "every", is_flag=True, help="Every text put before the session's model.")
@json_option(
    "an object: session_id, injected_at, event, kind, source, context (the text as the model"
    " got it; null when nothing was put back), preview; with --all, injections: a list of"
    " at, event, kind, source, agent_id, tool_use_id, text"
)
@click.pass_obj
def restore(root: Path, session: str | None, preview: bool, every: bool) -> None:
    """Print what SessionStart put back into the model's context, verbatim, and when (from the
    injection log); --preview builds what it would put back after a compaction now."""
    require_database(root)
    with Project(root) as project:
        project.refresh(transcripts=False, spool=False)
        if session:
            session = lookup.session(lookup.readable(project), session)
        else:
            session = project.latest_session()
        if not session:
            raise click.ClickException("no session recorded yet")
        if every:
            fields = ("at", "event", "kind", "source", "agent_id", "tool_use_id", "text")
            shown = [
                {k: getattr(given, k) for k in fields} for given in project.injections(session)
            ]

            def say() -> None:
                if not shown:
                    output.echo_wrapped(f"nothing was put before the model of session {session}")
                for row in shown:  # every field from the log, escaped as the text is
                    what = f"{row['event']} {row['kind']}" + (
                        f" ({row['source']})" if row["source"] else ""
                    )
                    to = f", to subagent {row['agent_id']}" if row["agent_id"] else ""
                    click.echo()
                    output.echo_wrapped(f"--- {cells.local_time(row['at'])}: {what}{to}")
                    output.echo_text(row["text"])

            output.emit({"session_id": session, "injections": shown}, text=say)
            return
        if preview:
            text = project.restore_preview(session)
            found = None
        else:
            found = project.restored(session)
            text = found.text if found else None
    answer = {
        "session_id": session,
        "injected_at": found.at if found else None,
        "event": found.event if found else None,
        "kind": found.kind if found else None,
        "source": found.source if found else None,
        "context": text,
        "preview": preview,
    }
    output.emit(answer, text=lambda: _say_restored(session, found, text, preview))


def _say_restored(session: str, found: Injection | None, text: str | None, preview: bool) -> None:
    """What `restore` says to people: when and how the context was put back (on stderr, so
    that `restore > context.txt` holds exactly what was given), then the text."""
    if found is not None:
        output.echo_wrapped(
            f"put back into session {session} at {cells.local_time(found.at)}"
            f" ({found.event}, {found.source or 'no source'}), as the model got it:",
            err=True,
        )
    elif not preview:
        output.echo_wrapped(
            f"nothing was put back into session {session}'s context (its SessionStart had nothing"
            " to say, or it ran before claude-session kept an injection log); `restore --preview`"
            " shows what a compaction would put back now"
        )
        return
    if text is not None:
        output.echo_text(text)
