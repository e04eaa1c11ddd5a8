"""`claude-session cost`: what sessions, turns, agents, tools, models and days cost, from
Claude Code's own transcripts (read up to date first: only their new bytes)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click

from ..core import durations
from ..core.figures import token_count as tokens
from ..core.figures import usd
from ..project import Project
from ..services.cost import costs, transcripts
from . import lookup, output
from .group import cli, json_option, opened
from .listing import limit_option

SOURCES = {
    "claude_code": "Claude Code",
    "price_table": "price table*",
    "mixed": "mixed*",
    "none": "no price",
}

# What a narrow terminal keeps: the group, its cost and tokens in and out first.
LAYOUT = output.Layout(
    {
        "session_id": (1, 9),
        "turn": (1, 4),
        "agent": (1, 9),
        "tool": (1, 12),
        "model": (1, 16),
        "day": (1, 10),
        "cost": (1, 7),
        "prompt": (2, 16),
        "input": (2, 5),
        "output": (2, 5),
        "source": (3, 11),
        "calls": (3, 5),
        "type": (3, 8),
        "msgs": (4, 4),
        "cache_read": (4, 5),
        "cache_write": (4, 5),
        "models": (5, 10),
        "task": (5, 10),
        "thinking": (6, 5),
    }
)


@cli.command()
@click.option("--session", help="Session id, a prefix is enough (default: every session).")
@click.option(
    "--by",
    type=click.Choice(costs.GROUPS),
    help="Group by (default: session; with --session, turn).",
)
@click.option(
    "--since",
    metavar="DURATION_OR_DATE",
    help=f"Only model responses since then: {durations.EXAMPLES}, or a date (2026-11-01).",
)
@limit_option
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="Every group (default: the newest --limit by session, turn and day; the largest by"
    " agent, tool and model), streamed.",
)
@json_option(
    "an object: by, session_id, since, rows (the groups shown: messages, input_tokens,"
    " output_tokens, cache_read_tokens, cache_creation_tokens, thinking_tokens, cost_usd,"
    " source), groups (how many in all), total (of every group, shown or not),"
    " claude_code_total_usd, price_table_models, transcripts (what was read),"
    " claude_session_judge (claude-session's own spend, not in the total: the judge's calls,"
    " cost_usd and calls, as its command reported them);"
    " with --session, dead_ends (what went to errors never fixed and approaches that failed:"
    " cost_usd, tokens, messages, share of the total, errors, failed_paths; null when the"
    " session's usage was not read)"
)
@output.wide_option
@click.pass_obj
def cost(
    root: Path,
    session: str | None,
    by: str | None,
    since: str | None,
    limit: int,
    every: bool,
) -> None:
    """What each session, turn, agent, tool, model or day cost and the tokens it used, from
    Claude Code's transcripts: its own cost figures, shared among the model's responses by
    their tokens; a model it gave no price for is priced from our own table (marked *)."""
    try:
        start = durations.moment(since) if since else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from None
    with opened(root) as conn:
        if session:
            session = lookup.session(conn, session)
        # New bytes only: of the session asked for, else of the sessions active in the last
        # hour (the daemon reads live ones as they grow; older ones were read by then).
        read = transcripts.catch_up(conn, session, recent_seconds=None if session else 3600)
        judged = costs.judge_spend(conn, session, start)
    by = by or ("turn" if session else "session")
    with Project(root) as project:  # the report as the library gives it
        report = project.cost(session, by, start, None if every else limit)
    found = dataclasses.asdict(report) | {"rows": list(report.rows)}
    if not session:
        del found["dead_ends"]  # one session's only
    found["transcripts"] = read
    if read.get("untrusted"):  # nothing was read: the stored figures, said so
        found["untrusted"] = read["untrusted"]
    found["claude_session_judge"] = judged

    def say() -> None:
        if every and found["rows"]:
            rows = [shown(by, r) for r in found["rows"]]
            output.emit_stream([*rows, shown(by, {_first(by): "total"} | found["total"])], LAYOUT)
            notes(found)
        else:
            show(found)

    output.emit(found, text=say)
    hidden = found["groups"] - len(
        [r for r in found["rows"] if costs.UNATTRIBUTED not in r.values()]
    )
    if not every and hidden > 0:
        output.note(
            f"{hidden:,} more not shown (of {found['groups']:,}; the total counts them):"
            f" `claude-session cost --by {by}{' --session ' + session if session else ''}"
            " --all` lists every one, `--limit N` more"
        )


def show(found: dict[str, Any]) -> None:
    out = output.console()
    rows = [shown(found["by"], r) for r in found["rows"]]
    if not rows:
        output.say(out, "no model responses read from Claude Code's transcripts yet")
    else:
        whole = found["total"] | {"source": found["total"]["source"]}
        rows.append(shown(found["by"], {_first(found["by"]): "total"} | whole))
        title = f"cost by {found['by']}"
        if found["session_id"]:
            title += f" of session {found['session_id']}"
        output.print_table(out, rows, title, LAYOUT)
    notes(found)


def notes(found: dict[str, Any]) -> None:
    """Claude Code's own total, the estimated models, dead ends and what was not read."""
    out = output.console()
    if found.get("untrusted"):
        output.say(
            out,
            f"not read again: {found['untrusted']}. These figures are the ones stored, as this"
            " database holds them (`claude-session trust` says more)",
            style="bold",
        )
    if found["claude_code_total_usd"] is not None:
        output.say(
            out, f"of it, by Claude Code's own figures: {usd(found['claude_code_total_usd'])}"
        )
    if found["price_table_models"]:
        models = ", ".join(found["price_table_models"])
        output.say(
            out,
            f"* estimated from claude-session's own price table (Claude Code gave no figure"
            f" for {models})",
            style="dim",
        )
    if found.get("estimated_models"):
        models = ", ".join(found["estimated_models"])
        output.say(
            out,
            f"~ an estimate: no price is known for {models} (neither Claude Code nor"
            " claude-session's table has one); priced as Claude Code prices an unknown model,"
            " at its default tier",
            style="dim",
        )
    judged = found.get("claude_session_judge")
    if judged and judged["calls"]:
        output.say(
            out,
            f"claude-session's own spend (its judge, not in the total):"
            f" {usd(judged['cost_usd'])} in {judged['calls']} call(s)",
        )
    if found.get("dead_ends"):
        output.say(out, dead_end_line(found["dead_ends"]))
    read = found["transcripts"]
    if found["session_id"] and not read["sessions"] and not found.get("untrusted"):
        output.note(
            f"no transcript recorded for session {found['session_id']}: its events named"
            " none, so there is no cost to read"
        )
    for line in costs.unread(read):
        output.note(line)
    if read["skipped"]:
        output.note(f"{read['skipped']} transcript lines were not understood and skipped")


def dead_end_line(dead: dict[str, Any]) -> str:
    """The share of dead ends in words: `dead ends: $0.2100 (38%), 41k tokens, in 2 errors
    not fixed and 1 failed approach`."""
    if not dead["errors"] and not dead["failed_paths"]:
        return "dead ends: none (no error left unfixed, no failed approach)"
    share = f" ({dead['share']:.0%})" if dead.get("share") is not None else ""
    what = []
    if dead["errors"]:
        what.append(f"{dead['errors']} error{'s' if dead['errors'] != 1 else ''} not fixed")
    if dead["failed_paths"]:
        n = dead["failed_paths"]
        what.append(f"{n} failed approach{'es' if n != 1 else ''}")
    return (
        f"dead ends: {usd(dead['cost_usd'])}{share}, {tokens(dead['tokens'])} tokens,"
        f" in {' and '.join(what)}"
    )


def _first(by: str) -> str:
    return {"session": "session_id", "turn": "prompt", "agent": "agent", "day": "day"}.get(by, by)


def shown(by: str, row: dict[str, Any]) -> dict[str, Any]:
    """A row for people: the group's own columns, tokens compact, USD."""
    keys = {
        "session": ("session_id", "models"),
        "turn": ("turn", "prompt"),
        "agent": ("agent", "type", "task"),
        "tool": ("tool", "calls"),
        "model": ("model",),
        "day": ("day",),
    }[by]
    found: dict[str, Any] = {k: row.get(k) for k in keys}
    if "turn" in found and found.get("prompt") == "total":
        found["turn"] = None
    if isinstance(found.get("prompt"), str) and len(found["prompt"]) > 60:
        found["prompt"] = found["prompt"][:59] + "…"
    found |= {
        "cost": ("~" if row.get("estimated") else "") + usd(row.get("cost_usd")),
        "msgs": row.get("messages"),
        "input": tokens(row.get("input_tokens")),
        "output": tokens(row.get("output_tokens")),
        "cache_read": tokens(row.get("cache_read_tokens")),
        "cache_write": tokens(row.get("cache_creation_tokens")),
        "thinking": tokens(row.get("thinking_tokens")),
        "source": SOURCES.get(str(row.get("source")), row.get("source")),
    }
    return found


@cli.group(name="prices", invoke_without_command=True)
@json_option("an object: default, sources, user_file, user_file_problem, models, aliases")
@click.pass_context
def prices_command(ctx: click.Context) -> None:
    """The price table used where Claude Code wrote no cost figure (USD per million tokens;
    cache writes by their time to live). `prices update` refreshes it from LiteLLM's data."""
    if ctx.invoked_subcommand is not None:
        return
    from ..services.cost import price_update

    found = price_update.listing()
    output.emit(found, text=lambda: _say_prices(found))


def _say_prices(found: dict[str, Any]) -> None:
    out = output.console()
    rows = [
        {
            "model": name,
            "input": f"{p['input']:g}",
            "output": f"{p['output']:g}",
            "cache_read": f"{p['cache_read']:g}",
            "write_5m": f"{p['cache_write_5m']:g}",
            "write_1h": f"{p['cache_write_1h']:g}",
            "above_200k": "yes" if "above_200k" in p else "",
        }
        for name, p in found["models"].items()
    ]
    output.print_table(out, rows, "prices, USD per million tokens", None)
    output.say(out, f"a model not in it is priced as {found['default']} (an estimate, marked ~)")
    for source in found["sources"]:
        output.say(out, f"from: {source}", style="dim")
    if found["user_file_problem"]:
        output.note(found["user_file_problem"])


@prices_command.command(name="update")
@click.option(
    "--from",
    "source",
    metavar="URL|FILE",
    default=None,
    help="LiteLLM's model_prices_and_context_window.json: an https address or a file"
    " (default: LiteLLM's on GitHub).",
)
@click.option("--remove", is_flag=True, help="Go back to the table shipped with this release.")
@json_option("an object: path, models (those priced), or removed")
def prices_update_command(source: str | None, remove: bool) -> None:
    """Refresh the prices from LiteLLM's pricing data (the source ccusage uses), into your own
    table in the per-user data folder: no release needed. Nothing is fetched otherwise."""
    from ..core import prices
    from ..services.cost import price_update

    if remove:
        result: dict[str, Any] = {"removed": price_update.remove()}
    else:
        try:
            result = price_update.update(source or price_update.LITELLM_URL)
        except (OSError, prices.Bad) as exc:
            raise click.ClickException(f"prices not updated: {exc}") from None
    if remove:
        said = "your price table removed" if result["removed"] else "none to remove"
    else:
        said = f"{len(result['models'])} models priced, written to {result['path']}"
    output.reply(result, lambda: output.echo_wrapped(said))
