"""`claude-session cost`: what sessions, turns, agents, tools, models and days cost, from
Claude Code's own transcripts (read up to date first: only their new bytes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..services import costs, transcripts
from . import cli, json_option, lookup, opened, output

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
    help="Only model responses since then: 90m, 2h, 3d, 1w, or a date (2026-11-01).",
)
@json_option(
    "an object: by, session_id, since, rows (the groups: messages, input_tokens,"
    " output_tokens, cache_read_tokens, cache_creation_tokens, thinking_tokens, cost_usd,"
    " source), total, claude_code_total_usd, price_table_models, transcripts (what was read)"
)
@output.wide_option
@click.pass_obj
def cost(root: Path, session: str | None, by: str | None, since: str | None, as_json: bool) -> None:
    """What each session, turn, agent, tool, model or day cost and the tokens it used, from
    Claude Code's transcripts: its own cost figures, shared among the model's responses by
    their tokens; a model it gave no price for is priced from our own table (marked *)."""
    try:
        start = costs.since_time(since) if since else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from None
    with opened(root) as conn:
        if session:
            session = lookup.session(conn, session)
        read = transcripts.catch_up(conn, session)
        found = costs.report(conn, by or ("turn" if session else "session"), session, start)
    found["transcripts"] = read
    if as_json:
        output.emit(found, "json")
        return
    show(found)


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
    if found["claude_code_total_usd"] is not None:
        output.say(out, f"Claude Code's own total: {usd(found['claude_code_total_usd'])}")
    if found["price_table_models"]:
        models = ", ".join(found["price_table_models"])
        output.say(
            out,
            f"* estimated from claude-session's own price table (Claude Code gave no figure"
            f" for {models})",
            style="dim",
        )
    read = found["transcripts"]
    for kind, what in (("missing", "gone"), ("refused", "refused"), ("unreadable", "unreadable")):
        if read[kind]:
            output.note(f"{len(read[kind])} transcript(s) {what}: {read[kind][0]}")
    if read["skipped"]:
        output.note(f"{read['skipped']} transcript lines were not understood and skipped")


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
        "cost": usd(row.get("cost_usd")),
        "msgs": row.get("messages"),
        "input": tokens(row.get("input_tokens")),
        "output": tokens(row.get("output_tokens")),
        "cache_read": tokens(row.get("cache_read_tokens")),
        "cache_write": tokens(row.get("cache_creation_tokens")),
        "thinking": tokens(row.get("thinking_tokens")),
        "source": SOURCES.get(str(row.get("source")), row.get("source")),
    }
    return found


def tokens(value: object) -> str:
    """41k, 1.2M: a token count at a glance."""
    n = float(value) if isinstance(value, int | float) else 0.0
    if n < 1000:
        return f"{n:.0f}"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k".replace(".0k", "k") if n < 10_000 else f"{n / 1000:.0f}k"
    return f"{n / 1_000_000:.1f}M"


def usd(value: object) -> str:
    """$12.34, $0.0056: two decimals from a dollar up, four below."""
    if not isinstance(value, int | float):
        return "-"
    return f"${value:,.2f}" if abs(value) >= 1 else f"${value:.4f}"
