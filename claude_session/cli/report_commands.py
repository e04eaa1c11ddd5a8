"""What was recorded: `status`, `agents`, `claims`, `errors`, `failed-paths`, `verdicts`,
`events`, `restore`. Every one has --json (the full rows); the tables keep what a person scans."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ..core import context
from ..services import queries
from . import cli, json_option, lookup, opened, output, status_view


@cli.command()
@json_option(
    "an object: now (live_agents, contested_files, open_errors, last_compaction, problems),"
    " database, sessions, sessions_never_ended, agents, claims, daemon, trust, open_errors,"
    " failed_paths, hooks"
)
@click.pass_obj
def status(root: Path, as_json: bool) -> None:
    """What is happening now (live agents, contested files, open errors, the last compaction,
    installation problems), then sessions, agents, claims, errors, failed paths, database."""
    with opened(root) as conn:
        found = queries.status(conn, str(root))
    if as_json:
        output.emit(found, "json")
    else:
        status_view.show(found)


@cli.command()
@click.option(
    "--all", "include_all", is_flag=True, help="Finished sessions and internal helpers too."
)
@click.option("--session", help="Session id (a prefix is enough).")
@json_option(
    "a list of agents: agent, type, task, state, age_seconds, silent_seconds, files, reason,"
    " session_id, tool_uses, is_internal"
)
@click.pass_obj
def agents(root: Path, include_all: bool, session: str | None, as_json: bool) -> None:
    """The agent registry: agent, type, task, state, age, last seen, files, reason."""
    with opened(root) as conn:
        if session:
            session = lookup.session(conn, session)
        found = queries.agents(conn, include_all=include_all, session=session)
    if not as_json:
        for row in found:  # the table keeps to what a person scans for
            for key in ("session_id", "tool_uses", "is_internal"):
                row.pop(key, None)
    output.emit(found, "json" if as_json else "table", title="agents")


@cli.command()
@click.option("--all", "include_all", is_flag=True, help="Released claims too.")
@json_option(
    "a list of claims: file_path, agent, session_id, operation, edits, last_touched_at,"
    " expires_at, lease, contested"
)
@click.pass_obj
def claims(root: Path, include_all: bool, as_json: bool) -> None:
    """File claims (leases) by agent; files held by two live agents are marked contested."""
    with opened(root) as conn:
        found = queries.claims(conn, include_released=include_all)
    output.emit(found, "json" if as_json else "table", title="claims")


@cli.command(name="errors")
@click.option("--open", "open_only", is_flag=True, help="Only errors not fixed yet.")
@json_option(
    "a list of errors: id, session_id, agent_id, tool_name, error_category, attempt_number,"
    " resolution, interrupted, what, command, file_path, exit_code, task_id, error_message,"
    " occurred_at, resolved_at"
)
@click.pass_obj
def errors_command(root: Path, open_only: bool, as_json: bool) -> None:
    """Failures with their escalation step (attempt) and resolution."""
    with opened(root) as conn:
        found = queries.errors(conn, open_only=open_only)
    if not as_json:
        for row in found:
            for key in ("error_message", "command", "file_path", "task_id", "interrupted"):
                row.pop(key)
    output.emit(found, "json" if as_json else "table", title="errors")


@cli.command(name="failed-paths")
@click.option("--all", "include_all", is_flag=True, help="Resolved and expired ones too.")
@json_option(
    "a list of failed paths: id, approach, reason_failed, file_path, session_id,"
    " still_relevant, created_at, expires_at, context"
)
@click.pass_obj
def failed_paths(root: Path, include_all: bool, as_json: bool) -> None:
    """Approaches tried and rejected, newest first."""
    with opened(root) as conn:
        found = queries.all_failed_paths(conn, include_all=include_all)
    output.emit(found, "json" if as_json else "table", title="failed paths")


@cli.command(name="verdicts")
@json_option(
    "a list of verdicts: id, session_id, hook_event, task_id, decision, reason, task, judge,"
    " created_at, verdict_json, raw"
)
@click.pass_obj
def verdicts_command(root: Path, as_json: bool) -> None:
    """The judge's verdicts on finished work."""
    with opened(root) as conn:
        found = queries.verdicts(conn)
    if not as_json:
        for row in found:
            row.pop("raw")
            row.pop("verdict_json")
    output.emit(found, "json" if as_json else "table", title="verdicts")


@cli.command()
@click.option("--session", help="Session id (a prefix is enough).")
@click.option("--event", help="Hook event name, e.g. PostToolUse.")
@click.option("--tool", help="Tool name, e.g. Bash.")
@click.option("--agent", help="Subagent id (a prefix is enough).")
@click.option("--limit", default=50, show_default=True, help="How many of the latest events.")
@click.option("--payload", is_flag=True, help="Include the stored (redacted) payload.")
@json_option(
    "a list of events, oldest first: id, received_at, session_id, event, tool_name, agent_id,"
    " tool_use_id, payload_bytes, via (and payload with --payload)"
)
@click.pass_obj
def events(
    root: Path,
    session: str | None,
    event: str | None,
    tool: str | None,
    agent: str | None,
    limit: int,
    payload: bool,
    as_json: bool,
) -> None:
    """List recorded events, oldest first, filtered; a filter that names nothing recorded is
    an error (with the closest valid value), not an empty list."""
    with opened(root) as conn:
        if session:
            session = lookup.session(conn, session)
        if event:
            event = lookup.event(event)
        if agent:
            agent = lookup.agent(conn, agent)
        found = queries.events(
            conn,
            session=session,
            event=event,
            tool=tool,
            agent=agent,
            limit=limit,
            payload=payload,
        )
        if tool and not found:
            lookup.tool(conn, tool)
    output.emit(found, "json" if as_json else "table", title="events")


@cli.command()
@click.option("--session", help="Session id, a prefix is enough (default: the latest).")
@json_option("an object: session_id, context (the text SessionStart would inject)")
@click.pass_obj
def restore(root: Path, session: str | None, as_json: bool) -> None:
    """Print the state SessionStart puts back into the model's context after a compaction."""
    with opened(root) as conn:
        session = lookup.session(conn, session) if session else queries.latest_session(conn)
        if not session:
            raise click.ClickException("no session recorded yet")
        text = context.for_compaction(conn, session, time.time())
    if as_json:
        output.emit({"session_id": session, "context": text}, "json")
    else:
        output.echo_text(text)
