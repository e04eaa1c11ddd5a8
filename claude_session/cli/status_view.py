"""`status` for people: a few lines on what is happening now, then compact tables.

Everything shown comes from `status_report.status` (which `status --json` prints whole); nothing
here is an epoch number or raw JSON."""

from __future__ import annotations

import time
from typing import Any

from ..core import context_text
from ..core.figures import plural
from ..core.readings import OPEN_ERRORS_SHOWN
from ..services.cost import hooks_report
from . import cells, output

TABLE_ROWS = 10  # rows of a table in `status`; the section's own command lists them all


def show(found: dict[str, Any]) -> None:
    out = output.console()
    for line in headline(found, out.width):  # wrapped, never cut: a fix is at a line's end
        output.say(out, line)
    out.print()
    sections = [
        ("sessions", found["sessions"], ("end_reason", "source", "started_at"), None),
        ("agents", found["agents"], ("session_id", "tool_uses", "is_internal"), "agents"),
        ("claims", found["claims"], ("session_id",), "claims"),
        ("open errors", found["open_errors"], ("attempts",), "errors --open"),
        ("failed paths", found["failed_paths"], (), "failed-paths"),
        ("sessions never ended", found["sessions_never_ended"], ("resume_with",), None),
    ]
    for label, rows, hidden, command in sections:
        if rows:
            shown = [{k: v for k, v in row.items() if k not in hidden} for row in rows[:TABLE_ROWS]]
            output.print_table(out, shown, label)
            if len(rows) > TABLE_ROWS:
                where = f" (`claude-session {command}`)" if command else ""
                output.say(out, f"  ... {len(rows) - TABLE_ROWS} more{where}")
    output.emit_pairs(out, "database", database(found["database"]))
    output.emit_pairs(out, "daemon", found["daemon"])
    output.emit_pairs(out, "hooks", found["hooks"])
    for line in hooks_report.said(found.get("hook_time") or {}):
        output.say(out, line)
    if found.get("otel"):
        output.emit_pairs(out, "opentelemetry export", found["otel"])


def headline(found: dict[str, Any], width: int = 80) -> list[str]:
    """Who works on what, contested files, open errors, the last compaction, problems. A
    task or a failing command longer than two lines of `width` is shortened (`agents` and
    `errors` show it whole); nothing else is."""
    now = found["now"]
    brief = max(2 * width - 24, 40)
    lines = []
    live = now["live_agents"]
    lines.append(f"live agents: {len(live) or 'none'}")
    for agent in live:
        name = agent["type"] or "agent"
        ident = "" if name == "main" else f" {str(agent['agent'])[:10]}"
        silent = cells.duration(agent["silent_seconds"] or 0)
        task = _brief(agent["task"] or "(no task recorded)", brief)
        lines.append(f"  {name}{ident} (silent {silent}, files {agent['files']}): {task}")
    contested = now["contested_files"]
    lines.append(f"contested files: {len(contested) or 'none'}")
    for item in contested:
        holders = " and ".join(str(a)[:10] for a in item["agents"])
        lines.append(f"  claimed by {holders}: {item['file_path']}")
    errors = now["open_errors"]
    more = " or more" if len(errors) >= OPEN_ERRORS_SHOWN else ""
    lines.append(f"open errors: {len(errors) or 'none'}{more}")
    for error in errors[:5]:
        tool = f"{error['tool_name']} " if error["tool_name"] else ""
        state = ", abandoned when its session ended" if error["state"] == "abandoned" else ""
        lines.append(f"  step {error['step']}{state}: {tool}{_brief(str(error['what']), brief)}")
    if len(errors) > 5:
        lines.append(f"  ... {len(errors) - 5} more (`claude-session errors --open`)")
    lines.append(compaction(now["last_compaction"]))
    lines.append(cost(found["cost"]))
    if found.get("judge"):
        lines += judge(found["judge"])
    if found.get("memories"):
        lines.append(memories_line(found["memories"]))
    problems = now["problems"]
    lines.append(f"problems: {len(problems) or 'none'}")
    lines += [f"  ! {problem}" for problem in problems]
    return lines


def memories_line(state: dict[str, Any]) -> str:
    """How many memories, and how many are possibly stale (a file they are about changed)."""
    line = f"memories: {state['count']}"
    if state["possibly_stale"]:
        line += (
            f", {state['possibly_stale']} possibly stale (a file they are about changed since:"
            " `claude-session memory list --stale`)"
        )
    return line


def judge(state: dict[str, Any]) -> list[str]:
    """The judge's line: off, or on with today's spend; a skip for want of budget said so."""
    spent, budget = float(state["spent_today_usd"]), state["budget_usd_per_day"]
    if not state["events"] and not spent and not state["skipped_today"]:
        return ["judge: off (`claude-session config --set judge_events=TaskCompleted`)"]
    lines = [f"judge: {state['events'] or 'off'}, ${spent:.2f} spent today of ${budget:.2f}"]
    if state["skipped_today"]:
        lines.append(
            f"  ! judge skipped {state['skipped_today']}x today: today's spend reached"
            " judge_budget_usd_per_day (raise it with `claude-session config --set"
            " judge_budget_usd_per_day=N`)"
        )
    return lines


def _brief(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def compaction(last: dict[str, Any] | None) -> str:
    """When the last compaction was, and what the block put back after it held, section by
    section, as the model got it (`restore` prints the block itself)."""
    if last is None:
        return "last compaction: none"
    said = (
        f"last compaction: {cells.age(last['created_at'])} ({last['trigger'] or 'unknown'},"
        f" session {str(last['session_id'])[:8]})"
    )
    block = last.get("block")
    if block is None:  # its session has not started again since: what waits to be put back
        names = {"task": "prompt", "failed_paths": "failed path"}
        saved = [
            plural(n, names.get(key, key.removesuffix("s")))
            for key, n in last["restored"].items()
            if n
        ]
        return f"{said}; not restored yet (saved for it: {', '.join(saved) or 'nothing'})"
    held = [
        _restored_item(title, n)
        for title, n in block["sections"].items()
        if n or title == context_text.GIT
    ]
    return (
        f"{said}; restored at {time.strftime('%H:%M:%S', time.localtime(block['given_at']))}:"
        f" {', '.join(held) or 'an empty block'} (`claude-session restore`)"
    )


# What each section of the restored block lists, as a count reads it.
RESTORED_ITEMS = {
    context_text.TASK: ("prompt", "prompts"),
    context_text.FAILED: ("failed approach", "failed approaches"),
    context_text.OPEN: ("open error", "open errors"),
    context_text.RERUN: ("error to re-run", "errors to re-run"),
    context_text.ABANDONED: ("abandoned error", "abandoned errors"),
    context_text.FINISHED: ("finished subagent", "finished subagents"),
    context_text.LIVE: ("live subagent", "live subagents"),
    context_text.BESIDE: ("other live session", "other live sessions"),
    context_text.CRASHED: ("interrupted session", "interrupted sessions"),
    context_text.CLAIMS: ("changed file", "changed files"),
}


def _restored_item(title: str, n: int) -> str:
    if title == context_text.GIT:
        return "git state"
    one, many = RESTORED_ITEMS.get(title, (title, title))
    return f"{n} {one if n == 1 else many}"


def cost(latest: dict[str, Any]) -> str:
    """The latest session's cost, and the live sessions' transcripts that cannot be read."""
    from ..core.figures import token_count as tokens
    from ..core.figures import usd

    problems = latest.get("transcript_problems") or []
    unread = f"; transcripts not readable: {'; '.join(problems)}" if problems else ""
    unread = not_read_yet(latest) + unread
    if latest.get("session_id") is None:
        return f"cost: nothing read from Claude Code's transcripts yet{unread}"
    source = latest["source"]
    estimated = " (partly estimated from our price table)" if source != "claude_code" else ""
    if latest.get("estimated"):
        estimated = " (~ partly an estimate: a model no price is known for)"
    dead = latest.get("dead_ends")
    if dead and (dead["errors"] or dead["failed_paths"]):
        from .cost_commands import dead_end_line

        unread = f"; {dead_end_line(dead)}{unread}"
    return (
        f"cost of the latest session ({str(latest['session_id'])[:8]}):"
        f" {'~' if latest.get('estimated') else ''}{usd(latest['cost_usd'])},"
        f" {tokens(latest['tokens'])} tokens, from Claude Code's"
        f" transcripts{estimated}{unread}"
    )


def not_read_yet(latest: dict[str, Any]) -> str:
    """What of the transcripts `status` found written past what was read (it reads none):
    the figure shown is as of the last read, said so, with who reads the rest."""
    said = []
    for behind in latest.get("not_read_yet") or []:
        whose = (
            "its"
            if behind["session_id"] == latest.get("session_id")
            else f"session {str(behind['session_id'])[:8]}'s"
        )
        when = behind["read_at"]
        last = (
            f"last read at {time.strftime('%H:%M:%S', time.localtime(when))}"
            if when
            else "never read"
        )
        said.append(f"{behind['bytes']:,} bytes of {whose} transcripts not read yet ({last})")
    if not said:
        return ""
    return f"; {'; '.join(said)} (the daemon reads them; `claude-session cost` reads them now)"


def database(found: dict[str, Any]) -> dict[str, Any]:
    """The database section in words: sizes, the last snapshot as one phrase."""
    shown = dict(found)
    size = shown.pop("size_bytes")
    shown = {"path": shown.pop("path"), "size": f"{size / 1e6:.1f} MB"} | shown
    last = shown.get("last_snapshot")
    if isinstance(last, dict):
        shown["last_snapshot"] = (
            f"{last['snapshot_type']} ({last['trigger'] or '-'}) of session"
            f" {str(last['session_id'])[:8]}, {cells.age(last['created_at'])}"
        )
    shown["moved_aside"] = ", ".join(found["moved_aside"]) or "none"
    return shown
