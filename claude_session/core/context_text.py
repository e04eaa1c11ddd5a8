"""The recorded state as the model reads it: the sections in priority order and each line
of them, within a cap (core/context.py gathers the state; core/fork_state.py a frame's).
Standard library and apsw only, like every SessionStart step.
"""

import time

from .errors import gist
from .figures import token_count
from .quote import for_model
from .readings import CLAUDE_EXITED
from .redact import redact

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any

CONTEXT_CAP = 8000
LINE_CAP = 400
OPEN_TAG = "<claude-session-recorded-state>"
CLOSE_TAG = "</claude-session-recorded-state>"
TASK = "Task (latest user prompts, oldest first)"
FAILED = "Failed approaches: do not repeat these"
OPEN = "Open errors (not yet fixed)"
RERUN = "To re-run: files they depend on changed since they last failed"
ABANDONED = "Abandoned errors: left unfixed when their session ended"
FINISHED = "Subagents that finished: what each was asked and what it reported"
LIVE = "Live subagents"
BESIDE = "Other sessions running in this project now"
CRASHED = "Sessions that never ended (interrupted)"
CLAIMS = "Files changed in this session (claims)"
GIT = "Git (at the last compaction)"


def _crashed(session: "dict[str, Any]", now: float) -> str:
    """An interrupted session: how it stopped, its last step (running, when the process died
    under it), the subagents it cut off, and the exact resume command."""
    last = one_line(session.get("last_step")) or "no step recorded"
    if session.get("step_running"):
        last += ", still running when it stopped"
    if session.get("step_agent"):
        last += f" (subagent {session['step_agent']})"
    errors = session.get("open_errors") or 0
    ago = _ago(now, session["last_activity_at"])
    how = (
        "Claude Code exited without ending it"
        if session.get("end_reason") == CLAUDE_EXITED
        else "it went silent without ending"
    )
    line = (
        f"- {session['session_id']} never ended: interrupted ({how}; last active {ago};"
        f" last step: {last}"
    )
    if session.get("cut_off"):
        line += f"; subagents cut off: {session['cut_off']}"
    if errors:
        line += f"; {errors} open error{'s' if errors != 1 else ''}"
    where = f" in {one_line(session['cwd'])}" if session.get("cwd") else ""
    return line + f"); the user can resume it with `claude --resume {session['session_id']}`{where}"


def _beside(session: "dict[str, Any]", now: float) -> str:
    """Another session of this project whose Claude Code process runs now."""
    line = f"- {session['session_id']} (last active {_ago(now, session['last_activity_at'])}"
    if session.get("subagents"):
        n = session["subagents"]
        line += f", {n} subagent{'s' if n != 1 else ''} running"
    line += ")"
    if session.get("task"):
        line += f"; its latest prompt: {one_line(session['task'])[:200]}"
    return line


def sections_of(state: "dict[str, Any]") -> "list[tuple[str, list[str], bool]]":
    """(title, lines, covered) in priority order; `covered`: the state holds what the section
    is built from, so a statement of it that is missing now is no longer so."""
    now = state.get("gathered_at") or time.time()
    errors = state.get("errors") or []
    paths = state.get("failed_paths") or []
    has = state.__contains__
    rerun_ladders = {
        (e.get("session_id"), e.get("ladder_key")) for e in errors if _kind(e) == "rerun"
    }
    return [
        (TASK, [_task(p) for p in state.get("task") or []], has("task")),
        (FAILED, [_failed(f) for f in paths if not f.get("changed_since")], has("failed_paths")),
        (OPEN, [_error(e) for e in errors if _kind(e) == "open"], has("errors")),
        (
            RERUN,
            [_rerun(e) for e in errors if _kind(e) == "rerun"]
            + [
                _rerun_path(f)
                for f in paths
                if f.get("changed_since")
                # said once: the error it was recorded from is on the list already
                and (f.get("session_id"), f.get("ladder_key")) not in rerun_ladders
            ],
            has("errors") and has("failed_paths"),
        ),
        (ABANDONED, [_abandoned(e) for e in errors if _kind(e) == "abandoned"], has("errors")),
        (FINISHED, [_finished(a) for a in state.get("finished") or []], has("finished")),
        (LIVE, [_agent(a, now) for a in state.get("agents") or []], has("agents")),
        (BESIDE, [_beside(b, now) for b in state.get("beside") or []], has("beside")),
        (CRASHED, [_crashed(c, now) for c in state.get("crashed") or []], has("crashed")),
        (CLAIMS, [_claim(c, now) for c in state.get("claims") or []], has("claims")),
        (GIT, _git_lines(state.get("git")), has("git")),
    ]


def head(state: "dict[str, Any]", intro: str) -> str:
    now = state.get("gathered_at") or time.time()
    head = [OPEN_TAG, intro]
    if state.get("session_id"):
        head.append(f"Session {for_model(state['session_id'], 100)}, state as of {clock(now)}.")
    else:  # every block says when it was true: a later one may refer to it by that time
        head.append(f"State as of {clock(now)}.")
    return "\n".join(head)


def render(state: "dict[str, Any]", intro: str, cap: int = CONTEXT_CAP) -> str:
    """Priority-ordered sections within `cap` characters, clearly marked as recorded state."""
    return compose(head(state, intro), [(t, lines) for t, lines, _ in sections_of(state)], cap)


def final(line: str) -> str:
    """A line as the model reads it: redacted whole, quoted, then cut to LINE_CAP."""
    line = for_model(redact(line), LINE_CAP)
    return line if len(line) <= LINE_CAP else line[: LINE_CAP - 3] + "..."


def compose(text: str, sections: "list[tuple[str, list[str]]]", cap: int) -> str:
    closing = "\n" + CLOSE_TAG
    for title, lines in sections:
        if not lines:
            continue
        block = f"\n\n## {title}"
        if len(text) + len(block) + len(lines[0][:LINE_CAP]) + 1 + len(closing) > cap:
            continue
        text += block
        for i, line in enumerate(lines):
            line = "\n" + final(line)
            more = f"\n- ... {len(lines) - i} more not shown"
            if len(text) + len(line) + len(more) + len(closing) > cap:
                text += more if len(text) + len(more) + len(closing) <= cap else ""
                break
            text += line
    return redact(text + closing)


def sections_in(text: str) -> "dict[str, int]":
    """What a block `compose` wrote holds: each section's title and how many items it listed
    (those cut for room, `- ... N more not shown`, counted): what `status` says it restored."""
    found: dict[str, int] = {}
    title = None
    for line in text.splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
            found[title] = 0
        elif title is not None and line.startswith("- "):
            more = line.removeprefix("- ... ").removesuffix(" more not shown")
            found[title] += int(more) if more != line and more.isdigit() else 1
    return found


def _task(prompt: "dict[str, Any]") -> str:
    if prompt.get("submitted_at") is None:
        return f"- {one_line(prompt['prompt'])}"
    return f"- [{clock(prompt['submitted_at'])}] {one_line(prompt['prompt'])}"


def _failed(path: "dict[str, Any]") -> str:
    where = f" (file {path['file_path']})" if path.get("file_path") else ""
    why = one_line(path["reason_failed"])
    return f"- {one_line(path['approach'])}; failed because: {why}{where}{_spent(path)}"


def _error(error: "dict[str, Any]") -> str:
    what = one_line(error["command"] or error["file_path"] or error["signature"])
    return (
        f"- {error['tool_name'] or 'tool'} `{what}` failed {error['attempts']}x"
        f" [{error['error_category']}]: {gist(error['error_message'] or '')}{_spent(error)}"
    )


def _kind(error: "dict[str, Any]") -> str:
    """open, rerun (a check whose files changed after it failed) or abandoned (its session
    ended with it open: not an error of the work at hand)."""
    if error.get("changed_since"):
        return "rerun"
    return "abandoned" if _was_abandoned(error) else "open"


def _was_abandoned(error: "dict[str, Any]") -> bool:
    return bool(error.get("abandoned") or error.get("ended_at"))


def _ended(error: "dict[str, Any]") -> str:
    return f"abandoned when session {error.get('session_id') or '?'} ended"


def _rerun(error: "dict[str, Any]") -> str:
    """Not "still failing": the code changed after the last failure and nobody re-ran it."""
    what = one_line(error["command"] or error["signature"])
    line = (
        f"- `{what}` failed {error['attempts']} times [{error['error_category']}]:"
        f" {gist(error['error_message'] or '')}; {_changes(error['changed_since'], error)}"
    )
    line += _spent(error) + "; re-run to confirm"
    return line + (f" ({_ended(error)})" if _was_abandoned(error) else "")


def _rerun_path(path: "dict[str, Any]") -> str:
    """A failed approach whose files changed since: to try again, not to avoid."""
    why = one_line(path["reason_failed"])
    return (
        f"- {one_line(path['approach'])} failed: {why};"
        f" {_changes(path['changed_since'], path)}{_spent(path)}; re-run to confirm"
    )


def _changes(changed: "list[dict[str, Any]]", failure: "dict[str, Any]") -> str:
    """`a.py changed since by subagent X (Edit), b.py by the main thread (Write)`."""
    parts = []
    for change in changed:
        agent = change["agent_id"]
        who = "the main thread" if agent == "main" else f"subagent {agent}"
        if change["session_id"] != failure.get("session_id"):
            who += f" of session {change['session_id']}"
        parts.append((change["file_path"], f"by {who} ({change['operation'] or 'edit'})"))
    (first, by), *rest = parts
    return f"{first} changed since {by}" + "".join(f", {other} {o_by}" for other, o_by in rest)


def _spent(item: "dict[str, Any]") -> str:
    """What a dead end cost (with_spending), when known: `; 3 attempts, 41k tokens, $0.62`."""
    spent = item.get("spent")
    if not spent or not spent.get("tokens"):
        return ""  # nothing read of its window yet: no figure rather than a false "0"
    least = "" if spent.get("exact") else "at least "
    parts = [f"{least}{token_count(spent['tokens'])} tokens"]
    if spent.get("cost_usd") is not None:
        parts.append(_dollars(spent["cost_usd"]))
    attempts = spent.get("attempts")
    if isinstance(attempts, int):
        return f"; {attempts} attempt{'s' if attempts != 1 else ''}, " + ", ".join(parts)
    return "; " + ", ".join(parts)


def _dollars(value: float) -> str:
    """$0.62, $12.34; under a cent, $0.0042."""
    if value == 0:
        return "$0"
    return f"${value:,.2f}" if abs(value) >= 0.01 else f"${value:.4f}"


def _abandoned(error: "dict[str, Any]") -> str:
    return f"{_error(error)}; {_ended(error)}"


def _agent(agent: "dict[str, Any]", now: float) -> str:
    line = f"- {agent['id']} ({agent['agent_type'] or 'agent'})"
    if agent.get("description"):
        line += f' "{one_line(agent["description"])}"'
    if agent.get("task_description"):
        line += f": {one_line(agent['task_description'])}"
    return line + f"; last seen {_ago(now, agent['last_seen_at'])}, {agent['tool_uses']} tool uses"


def _finished(agent: "dict[str, Any]") -> str:
    line = f"- {agent['id']} ({agent['agent_type'] or 'agent'}, {agent['status']})"
    if agent.get("description"):
        line += f' "{one_line(agent["description"])}"'
    asked = one_line(agent.get("task_description"))
    reported = one_line(agent.get("last_message"))
    line += f"; asked: {asked[:200] or 'not recorded'}"
    return line + f"; reported: {reported[:300] or 'nothing recorded'}"


def _claim(claim: "dict[str, Any]", now: float) -> str:
    edits = f"{claim['edits']} edit{'s' if claim['edits'] != 1 else ''}"
    last = _ago(now, claim["last_touched_at"])
    by = f"{claim['file_path']} by {claim['agent_id']}"
    return f"- {by} ({claim['operation']}, {edits}, last {last})"


def _git_lines(git: "Any") -> list[str]:
    if not isinstance(git, dict):
        return []
    if git.get("error"):
        return [f"- git state unavailable: {git['error']}"]
    lines = [f"- branch {git.get('branch') or '(detached)'} at {git.get('head') or '(no commit)'}"]
    changed = git.get("changed") or []
    if changed:
        shown = ", ".join(changed[:30])
        extra = f" and {len(changed) - 30} more" if len(changed) > 30 else ""
        lines.append(f"- {len(changed)} changed: {shown}{extra}")
    else:
        lines.append("- working tree clean")
    return lines


def one_line(text: "Any") -> str:
    return " ".join(str(text or "").split())


def clock(ts: "Any") -> str:
    if not isinstance(ts, int | float):
        return "?"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def _ago(now: float, ts: "Any") -> str:
    if not isinstance(ts, int | float):
        return "?"
    seconds = max(0, int(now - ts))
    if seconds < 90:
        return f"{seconds}s ago"
    if seconds < 5400:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h ago"
