"""`claude-session hooks`: every hook that ran in this project's sessions (ours and every
other), as Claude Code timed it in its transcripts (read up to date first: only their new
bytes), grouped by command and event."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click

from ..project import Project, ProjectError
from ..services.cost import costs, hooks_report
from . import lookup, output
from .group import cli, json_option, require_database
from .listing import limit_option

LAYOUT = output.Layout(
    {
        "command": (1, 24),
        "event": (1, 12),
        "total": (1, 7),
        "runs": (1, 4),
        "median": (2, 6),
        "p90": (2, 6),
        "max": (3, 6),
        "share": (3, 5),
        "ours": (4, 4),
        "unmeasured": (4, 4),
    }
)


ms = hooks_report.fmt_ms


def share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def shown(row: dict[str, Any]) -> dict[str, Any]:
    """A row for people: durations in ms (s past 10 s), the share as a percentage."""
    return {
        "command": row["command"],
        "event": row["event"],
        "ours": "yes" if row["ours"] else "",
        "runs": row["runs"],
        "unmeasured": row["unmeasured"] or "",
        "total": ms(row["total_ms"]),
        "median": ms(row["median_ms"]),
        "p90": ms(row["p90_ms"]),
        "max": ms(row["max_ms"]),
        "share": share(row["share"]),
    }


@cli.command()
@click.option("--session", help="Session id, a prefix is enough (default: every session).")
@click.option(
    "--turn",
    type=click.IntRange(1, None),
    help="One turn (1, 2, ...) of the session (default with --turn: the latest session).",
)
@limit_option
@click.option("--all", "every", is_flag=True, help="Every group, streamed.")
@json_option(
    "an object: session_id, turn, clock (whose: Claude Code's durationMs), wall_time_ms and"
    " wall_time_source, rows (per command and event, the largest total first: command"
    " (redacted, control characters escaped), event, ours, runs, measured, unmeasured, total_ms,"
    " median_ms, p90_ms (nearest rank), max_ms, share of the wall time), groups, total (runs,"
    " measured, unmeasured, total_ms, ours_ms, others_ms, share), untimed_estimate (null, or"
    " what the unmeasured runs could add at the median of the timed ones, an estimate: estimate"
    " true, runs, basis, basis_runs, basis_median_ms, estimated_ms, share), transcripts (what"
    " was read)"
)
@output.wide_option
@click.pass_obj
def hooks(root: Path, session: str | None, turn: int | None, limit: int, every: bool) -> None:
    """Every hook that ran (ours, marked, and every other: command, http, mcp_tool), as
    Claude Code timed it: runs, total, median, p90 and max per command and event, and its share
    of the sessions' wall time. Runs of ours that Claude Code did not time are counted as
    unmeasured, never given a time; what they could add is estimated apart, at the median of
    the timed runs, and said to be an estimate."""
    require_database(root)
    with Project(root) as project:
        project.refresh(transcripts=False, spool=False)  # the database as this version reads it
        if session:
            session = lookup.session(lookup.readable(project), session)
        elif turn is not None:
            session = project.latest_session()
        read = project.refresh(
            session, recent_seconds=None if session else 3600, spool=False
        ).transcripts
        try:
            report = project.hooks(session, turn, None if every else limit)
        except ProjectError as exc:
            raise click.UsageError(str(exc)) from None
    found = dataclasses.asdict(report) | {"rows": list(report.rows), "transcripts": read}

    def say() -> None:
        if every and found["rows"]:
            output.emit_stream([shown(r) for r in found["rows"]], LAYOUT)
        else:
            show(found)
        notes(found)

    output.emit(found, text=say)
    if not every and found["groups"] > len(found["rows"]):
        output.note(
            f"{found['groups'] - len(found['rows']):,} more not shown (of {found['groups']:,};"
            " the total counts them): `claude-session hooks --all` lists every one,"
            " `--limit N` more"
        )


def show(found: dict[str, Any]) -> None:
    out = output.console()
    if not found["rows"]:
        output.say(out, "no hook runs read from Claude Code's transcripts yet")
        return
    title = "hooks, as Claude Code timed them"
    if found["session_id"]:
        title += f", session {found['session_id']}"
    if found["turn"]:
        title += f" turn {found['turn']}"
    total = found["total"]
    rows = [shown(r) for r in found["rows"]]
    rows.append(
        {
            "command": "total",
            "event": "",
            "ours": "",
            "runs": total["runs"],
            "unmeasured": total["unmeasured"] or "",
            "total": ms(total["total_ms"]),
            "median": "",
            "p90": "",
            "max": "",
            "share": share(total["share"]),
        }
    )
    output.print_table(out, rows, title, LAYOUT)


def notes(found: dict[str, Any]) -> None:
    out = output.console()
    total = found["total"]
    if found["rows"]:
        output.say(
            out,
            f"ours: {ms(total['ours_ms'])}, others: {ms(total['others_ms'])}; wall time"
            f" {ms(found['wall_time_ms'])} ({hooks_report.WALL_SOURCE})",
            style="dim",
        )
    if total.get("unmeasured"):
        output.say(
            out,
            f"{total['unmeasured']} run(s) Claude Code wrote no time for (a hook that answered"
            " JSON, or one of our command hooks that printed nothing): counted, not timed",
            style="dim",
        )
    guess = found.get("untimed_estimate")
    if guess:
        output.say(out, estimate_line(guess))
    read = found["transcripts"]
    for line in costs.unread(read):
        output.note(line)
    if read.get("skipped"):
        output.note(f"{read['skipped']} transcript lines were not understood and skipped")


def estimate_line(guess: dict[str, Any]) -> str:
    """The untimed runs' possible time, said as the estimate it is, with its basis."""
    line = (
        f"estimate, not measured: {guess['runs']} hook run(s) untimed by Claude Code; at the"
        f" median of the {guess['basis_runs']} it timed ({ms(guess['basis_median_ms'])}) they"
        f" would add ~{ms(guess['estimated_ms'])}"
    )
    if guess["share"] is not None:
        line += f" ({share(guess['share'])} of the wall time)"
    return line
