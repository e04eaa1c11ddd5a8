"""`timeline`, `diff`, `fork`, `replay` and `revert`: time travel over recorded frames.

Frames are addressed as `timeline` prints them: a bare N is frame N of the latest session;
SESSION:N, :N, SESSION (its latest frame), SESSION@attempt:N and SESSION@turn:N name others
(timetravel.ADDRESS_SYNTAX, shown in each command's --help). Every command has --json.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from ..core.figures import plural, usd
from ..project import Frame, Project, ProjectError
from ..services.cost import transcripts
from ..services.snapshots import workspace
from ..services.timetravel import fork as forking
from ..services.timetravel import revert as reverting
from ..services.timetravel import timetravel
from . import output
from .group import cli, json_option, opened

# The --help epilog of every command that takes a frame.
ADDRESSES = f"Frames are addressed as {timetravel.ADDRESS_SYNTAX}."
# A timeline is read for what happened and the files: those wrap, never cut; when the width is
# short, the time, the turn, the snapshot and the kind (the "what" says it too) go first.
TIMELINE = output.Layout(
    {
        "what": (1, 24),
        "files": (1, 16),
        "created_at": (7, 19),
        "turn": (6, 4),
        "snapshot": (6, 8),
        "kind": (5, 12),
        "errors": (4, 6),
        "cost_usd": (7, 7),  # after the time, the first to go: --wide and --json keep it
    },
    wrap=("what", "files"),
)


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))  # escaped where every error is: Group.invoke


@cli.command(epilog=ADDRESSES)
@click.argument("session", required=False, default="")
@click.option("--tree", is_flag=True, help="Forks, replays and subagents as branches too.")
@json_option(
    "an object: session_id, frames (each with cost_usd, tokens and messages: the model"
    " responses since the frame before, where known; a turn_end's result_text), and with"
    " --tree: subagents, branches"
)
@output.wide_option
@click.pass_obj
def timeline(root: Path, session: str, tree: bool) -> None:
    """The frames of a session: time, event, agent, tool, files changed, open errors, and
    what the model responses since the frame before cost (from Claude Code's transcripts).

    SESSION is the latest session by default, else a session's id (or a prefix of one;
    digits alone too: `timeline 329:` or `timeline :329` when they are also a frame number),
    else the session of any frame address."""
    with opened(root) as conn:
        try:
            session_id = timetravel.find_session(conn, session)
        except timetravel.FrameError as exc:
            raise _fail(exc) from exc
        transcripts.catch_up(conn, session_id)  # only their new bytes
        found: dict[str, Any] = {"session_id": session_id}
        if tree:
            found["subagents"] = timetravel.subagents(conn, session_id)
            found["branches"] = timetravel.branches(conn, session_id)
    with Project(root) as project:  # the frames as the library reads them
        frames = [_frame_row(f) for f in project.timeline(session_id)]
    found = {"session_id": session_id, "frames": frames} | found

    def say() -> None:
        rows = [
            {
                "frame": f["frame"],
                "created_at": f["created_at"],
                "turn": f["turn"],
                "kind": f["kind"],
                "agent": f["agent"] if f["agent"] in ("main", "user") else str(f["agent"])[:10],
                "what": f["summary"],
                "files": ", ".join(f["files"]),
                "errors": f["open_errors"] or 0,
                "cost_usd": f["cost_usd"],
                "snapshot": ((f["snapshot_commit"] or "")[:8] or (f["snapshot"] or "-"))
                + ("~" if _inexact(f) else ""),
            }
            for f in frames
        ]
        if not tree:
            marked = any(_inexact(f) for f in frames)
            legend = " (~: the snapshot may hold changes of a tool that started before it)"
            title = f"timeline of {session_id}{legend if marked else ''}"
            output.emit(rows, title, TIMELINE)
            return
        _print_tree(session_id, rows, found["subagents"], found["branches"])

    output.emit(found, text=say)


def _frame_row(frame: Frame) -> dict[str, Any]:
    """A frame as `timeline --json` prints it: `files` a list; `result_text` at a turn's end."""
    row = dataclasses.asdict(frame) | {"files": list(frame.files)}
    if frame.kind != "turn_end":
        del row["result_text"]
    return row


def _inexact(frame: dict[str, Any]) -> bool:
    return str(frame.get("snapshot_note") or "").startswith("may hold changes")


def _print_tree(
    session_id: str,
    rows: list[dict[str, Any]],
    subagents: list[dict[str, Any]],
    branches: list[dict[str, Any]],
) -> None:
    """Frames in order; a subagent's frames indented under it; forks and replays below the
    frame they came from."""
    names = {a["id"]: f"{a['agent_type'] or 'agent'} {str(a['id'])[:10]}" for a in subagents}
    forks: dict[int, list[dict[str, Any]]] = {}
    for branch in branches:
        forks.setdefault(int(branch["frame"]), []).append(branch)
    lines = [
        ("", f"session {session_id}"),
        ("  ", "(undo one agent's files: `claude-session revert --agent main|ID`)"),
    ]
    current_agent = "main"
    # `revert --agent` is offered only for an agent that changed files: else it has nothing to do
    changed = {row["agent"] for row in rows if row["files"]}
    offered: set[object] = set()
    for row in rows:
        agent = row["agent"] if row["agent"] != "user" else "main"
        if agent != "main" and agent != current_agent:
            full = next((a for a in names if str(a).startswith(str(agent))), agent)
            lines.append(("  ├─ ", f"subagent {names.get(full, agent)}"))
            if full not in offered and agent in changed:
                offered.add(full)
                lines.append(
                    ("  │    ", f"(undo its files: `claude-session revert --agent {full}`)")
                )
        current_agent = agent
        indent = "  │    " if agent != "main" else "  "
        snapshot = f" @{row['snapshot']}" if row["snapshot"] not in ("-", None) else ""
        if row["snapshot"] == "pruned":  # no commit to name: it is no longer kept
            snapshot = " (snapshot pruned)"
        files = f" [{row['files']}]" if row["files"] else ""
        errors = f" ({plural(row['errors'], 'open error')})" if row["errors"] else ""
        spent = f" {usd(row['cost_usd'])}" if row["cost_usd"] is not None else ""
        what = f"{row['what']}{files}{errors}{snapshot}{spent}"
        lines.append((f"{indent}{row['frame']:>4} {row['kind']:<14} ", what))
        for branch in forks.get(int(row["frame"]), []):
            label = f" [{branch['label']}]" if branch["label"] else ""
            child = f", session {branch['child_session_id']}" if branch["child_session_id"] else ""
            lines.append(
                (
                    f"{indent}     └─ ",
                    f"{branch['kind']} {branch['id']}{label} -> {branch['path']}{child}",
                )
            )
    out = output.console()
    for lead, text in lines:  # wrapped under the text, the tree's lines kept: never cut
        _tree_line(out, lead, text)


def _tree_line(out: Console, lead: str, text: str) -> None:
    """`lead` (the tree and the frame's number and kind), then `text` wrapped in the room
    left, its continuation lines under it with the tree's bar kept."""
    lead = output.escape_controls(lead)
    room = out.width - len(lead)
    bar = "".join(c if c == "│" else " " for c in lead[:7]).ljust(len(lead))
    if room < 20:  # a very narrow console: the text goes under the lead
        out.print(Text(lead), no_wrap=True, overflow="ellipsis")
        lead = bar = " " * 8
        room = max(out.width - 8, 10)
    for n, part in enumerate(output.wrap(text, room, 0)):
        out.print(Text((lead if n == 0 else bar) + part), no_wrap=True, crop=False)


@cli.command(epilog=ADDRESSES)
@click.argument("a")
@click.argument("b")
@click.option("--stat", is_flag=True, help="A summary of the files instead of the full diff.")
@json_option("an object: a, b, state (what changed in the session's state), files (stat, diff)")
@click.pass_obj
def diff(root: Path, a: str, b: str, stat: bool) -> None:
    """What changed between frames A and B: the session's state, then the files."""
    with opened(root, ingest=True) as conn:  # a snapshot still being taken, taken
        timetravel.take_pending(conn, str(root), note=output.note)
    try:
        with Project(root) as project:  # the diff as the library reads it
            change = project.diff(a, b, stat_only=stat)
    except ProjectError as exc:
        raise _fail(exc) from exc
    ref_a, ref_b, state, files = change.a, change.b, change.state, change.files
    if files.get("pending"):  # not taken in the time waited: no diff to give
        raise click.ClickException(
            f"{files['error']} (waited {timetravel.SNAPSHOT_WAIT_SECONDS:g} seconds for it; is"
            " a capture stuck? `claude-session doctor` says)"
        )
    result = {"a": ref_a, "b": ref_b, "state": state, "files": files}

    def show() -> None:
        say = output.echo_wrapped
        say(f"state {ref_a} -> {ref_b}:")
        if timetravel.is_empty(state):
            say("  no change")
        for section in ("agents", "claims", "errors", "failed_paths"):
            for how in ("added", "removed", "changed"):
                for item in state[section][how]:
                    say(f"  {section} {how}: {_brief(item)}")
        if state["task"]:
            say(f"  task: {_value(state['task'][0])} -> {_value(state['task'][1])}")
        for key, (before, after) in state["counters"].items():
            say(f"  {key}: {_value(before)} -> {_value(after)}")
        if "error" in files:
            say(f"files: {files['error']}")
            return
        say(f"files {ref_a} -> {ref_b}: {len(files['stat'])} changed")
        for item in files["stat"]:
            counts = "binary" if item["added"] is None else f"+{item['added']} -{item['deleted']}"
            say(f"  {item['path']} ({counts})")
        if not stat and files.get("diff"):
            output.echo_text(files["diff"], fold=False)  # a patch, as `git apply` reads it

    output.emit(result, text=show)


def _value(value: object) -> str:
    """A recorded value as a person reads it: `none` for no value, text quoted."""
    if value is None:
        return "none"
    return repr(value) if isinstance(value, str) else str(value)


def _brief(item: dict[str, Any]) -> str:
    if "changes" in item:
        parts = [f"{k}: {_value(v[0])} -> {_value(v[1])}" for k, v in item["changes"].items()]
        return f"{'/'.join(str(k) for k in item['key'])} ({'; '.join(parts)})"
    return ", ".join(f"{k}={v}" for k, v in item.items() if v not in (None, "", []))[:300]


@cli.command(epilog=ADDRESSES)
@click.argument("frame")
@click.option("--prompt", help="Run with this prompt instead of the frame's turn's prompt.")
@click.option("--reset-failures", is_flag=True, help="Start without the errors and failed paths.")
@click.option("--label", help="A name for the replay's fork.")
@click.option("--path", "path", type=click.Path(file_okay=False), help="Where (default: beside).")
@click.option("--claude", "claude", default="claude", show_default=True, help="The claude command.")
@click.argument("claude_args", nargs=-1, type=click.UNPROCESSED)
@json_option("an object: what `fork --json` gives, and output, exit_code")
@click.pass_obj
def replay(
    root: Path,
    frame: str,
    prompt: str | None,
    reset_failures: bool,
    label: str | None,
    path: str | None,
    claude: str,
    claude_args: tuple[str, ...],
) -> None:
    """Fork FRAME, then run Claude Code headless (`claude -p`) there, recording the child.

    Arguments after `--` go to claude (e.g. `-- --model sonnet --max-turns 20`)."""
    with opened(root, ingest=True) as conn:
        try:
            done = forking.replay(
                conn,
                str(root),
                frame,
                prompt=prompt,
                reset_failures=reset_failures,
                label=label,
                path=path,
                claude=claude,
                extra_args=list(claude_args),
            )
        except (timetravel.FrameError, forking.ForkError, workspace.WorkspaceError) as exc:
            raise _fail(exc) from exc

    def say() -> None:
        output.echo_wrapped(f"replayed {done['from']} in {done['path']}")
        output.echo_text(done.get("output") or "")

    output.emit(done, text=say)
    if done["exit_code"] != 0:
        sys.exit(1)


@cli.command(epilog=ADDRESSES)
@click.argument("frame", required=False)
@click.option("--files", "paths", multiple=True, help="Only these paths (repeatable).")
@click.option("--undo", is_flag=True, help="Undo the latest revert.")
@click.option("--dry-run", is_flag=True, help="Show what would change; change nothing.")
@click.option("--yes", is_flag=True, help="Do not ask (needed when not on a terminal).")
@click.option(
    "--agent",
    help="Undo only the files this agent (`main` or a subagent id) changed since FRAME"
    " (default: since it started); files others changed too are conflicts, left unless --force.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Also overwrite files changed outside the recorded tool calls (and, with --agent,"
    " conflicts); the revert's safety snapshot keeps them for --undo.",
)
@json_option(
    "an object: with --dry-run the plan (target, commit, agent, changes,"
    " changed_outside_recorded_tool_calls, conflicts, left_as_is, needs_force: why the"
    " revert refuses or changes nothing without --force, or null), else revert, session_id,"
    " frame and what was done"
)
@click.pass_obj
def revert(
    root: Path,
    frame: str | None,
    paths: tuple[str, ...],
    undo: bool,
    dry_run: bool,
    yes: bool,
    agent: str | None,
    force: bool,
) -> None:
    """Restore the workspace to FRAME (safely: `revert --undo` brings the state back)."""
    if undo and (frame or agent):
        raise click.UsageError("--undo takes no FRAME and no --agent")
    if not (frame or undo or agent):
        raise click.UsageError("give a FRAME, --agent AGENT, or --undo")
    with opened(root, ingest=True) as conn:
        try:
            if undo:
                todo = reverting.plan_undo(conn, str(root))
            elif agent:
                todo = reverting.plan_agent(conn, str(root), agent, frame, list(paths) or None)
            else:
                todo = reverting.plan(conn, str(root), str(frame), list(paths) or None)
        except (timetravel.FrameError, reverting.RevertError, workspace.WorkspaceError) as exc:
            raise _fail(exc) from exc
        output.emit_plan(todo.as_dict(), lambda: _show_plan(todo, force), final=dry_run)
        if dry_run or not todo.changes:
            if not todo.changes:
                output.tell("nothing to do: no file would change")
            return
        if todo.conflicts and not force and len(todo.conflicts) == len(todo.changes):
            output.tell("nothing to do without --force: every file is a conflict")
            return
        if todo.outside and not force:  # refused before a question is asked
            raise _fail(reverting.RevertError(str(todo.needs_force)))
        if not yes:
            if not sys.stdin.isatty():
                raise click.ClickException("not on a terminal: pass --yes to revert")
            click.confirm("revert these files?", abort=True)
        try:
            done = reverting.execute(conn, str(root), todo, force=force)
        except (reverting.RevertError, workspace.WorkspaceError) as exc:
            raise _fail(exc) from exc

    def say() -> None:
        output.echo_wrapped(
            f"reverted {len(done['done'])} file(s); revert {done['revert']} recorded as frame"
            f" {done['session_id'][:8]}:{done['frame']}; undo with `claude-session revert --undo`"
        )

    output.emit(done, text=say)


def _show_plan(todo: reverting.Plan, force: bool) -> None:
    """The plan of a revert, for people: each file, what is done to it and why; and, when it
    would refuse or do nothing without --force (not given), why."""
    say = output.echo_wrapped
    say(f"{todo.headline}:")
    for change in todo.changes:
        marks = [
            "changed outside the recorded tool calls" if change.path in todo.outside else "",
            "conflict: someone else changed it too; left unless --force" if change.conflict else "",
            "over the snapshot size limit; the safety snapshot keeps it" if change.large else "",
        ]
        mark = "".join(f" ({m})" for m in marks if m)
        say(f"  {change.action:8} {change.path}{mark}")
    for path, why in todo.left:
        say(f"  {'leave':8} {path} ({why})")
    if todo.needs_force and not force:
        outcome = "the revert will refuse" if todo.outside else "nothing is changed"
        say(f"without --force {outcome}: {todo.needs_force}")
