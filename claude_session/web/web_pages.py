"""The HTML and SVG of `claude-session serve`: pure functions from rows to text.

Everything recorded is hostile: every string goes through `esc`, which shows control
characters, bidi overrides and isolates escaped as the CLI does (`core.terminal.escape_controls`:
a file name cannot display as another) and then `html.escape`s it (attributes quoted); nothing
recorded ever reaches a tag, an attribute name, a style or a URL unescaped; ids in links are
also percent-encoded. There is no JavaScript and no external asset: one `<style>`
element, allowed by its hash in the Content-Security-Policy (`CSP`), and inline SVG drawn with
presentation attributes.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any
from urllib.parse import quote

from ..core.figures import plural, token_count, usd
from .web_charts import OUTSIDE_LABEL, cost_chart, hooks_chart, hooks_ms
from .web_text import cut, esc, lines, when

STATUS_COLOURS = {  # agent boxes: the status at a glance
    "running": "#2563eb",
    "completed": "#16a34a",
    "failed": "#dc2626",
    "aborted_stale": "#d97706",
}
KIND_COLOURS = {  # timeline marks: what kind of frame
    "session_start": "#475569",
    "turn_start": "#7c3aed",
    "tool": "#0891b2",
    "attempt": "#dc2626",
    "turn_end": "#a78bfa",
    "subagent_start": "#2563eb",
    "subagent_stop": "#16a34a",
    "pre_compact": "#ca8a04",
    "task_completed": "#15803d",
    "session_end": "#1f2937",
    "fork": "#db2777",
    "revert": "#ea580c",  # what a `revert` made: files put back, not a fork of the timeline
}
OTHER_COLOUR = "#94a3b8"

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#0f172a;background:#f8fafc}
header{background:#0f172a;color:#f8fafc;padding:10px 24px;display:flex;gap:24px}
header a{color:#f8fafc}
main{padding:8px 24px 40px}
h1{font-size:20px;margin:12px 0}h2{font-size:16px;margin:22px 0 8px}
a{color:#1d4ed8}
table{border-collapse:collapse;background:#fff;border:1px solid #e2e8f0}
th,td{padding:4px 10px;border-bottom:1px solid #e2e8f0;text-align:left;vertical-align:top}
th{background:#f1f5f9;font-weight:600}
td.num{text-align:right}
.box{background:#fff;border:1px solid #e2e8f0;border-radius:6px;padding:8px;overflow-x:auto}
.legend span{display:inline-block;margin-right:14px}
.legend i{display:inline-block;width:11px;height:11px;border-radius:6px;margin-right:4px;
vertical-align:-1px}
pre{background:#fff;border:1px solid #e2e8f0;padding:10px;overflow-x:auto;font-size:13px}
.add{background:#dcfce7;color:#14532d;display:block}
.del{background:#fee2e2;color:#7f1d1d;display:block}
.hunk{color:#6d28d9;display:block}
.meta{color:#64748b;display:block}
.added{color:#15803d}.removed{color:#b91c1c}.changed{color:#b45309}
.muted{color:#64748b}
"""
STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
CSP = (
    "default-src 'none'; "
    f"style-src 'sha256-{STYLE_HASH}'; "
    "img-src 'none'; script-src 'none'; connect-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def page(base: str, title: str, body: str) -> str:
    """A whole document: the header with the way back to the sessions, then `body`."""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="referrer" content="no-referrer">'
        f"<title>{esc(title)} · claude-session</title><style>{STYLE}</style></head><body>"
        f'<header><strong>claude-session</strong><a href="{esc(base)}/">sessions</a>'
        f'<a href="{esc(base)}/memories">memories</a></header>'
        f"<main>{body}</main></body></html>"
    )


def sessions_page(base: str, sessions: list[dict[str, Any]]) -> str:
    rows = []
    for s in sessions:
        link = f"{base}/session/{quote(str(s['session_id']), safe='')}"
        rows.append(
            f'<tr><td><a href="{esc(link)}">{esc(s["session_id"])}</a></td>'
            f"<td>{esc(s['status'])}</td><td>{esc(s['source'])}</td>"
            f"<td>{esc(when(s['started_at']))}</td><td>{esc(when(s['last_activity_at']))}</td>"
            + "".join(
                f'<td class="num">{esc(s[k] or 0)}</td>'
                for k in ("prompts", "tool_calls", "tool_failures", "file_edits", "subagents")
            )
            + f'<td class="num">{esc(_tokens(s.get("tokens")))}</td>'
            + f'<td class="num cost">{esc(_estimate(s))}{esc(usd(s.get("cost_usd")))}</td>'
            + "</tr>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "session",
            "status",
            "start",
            "started (UTC)",
            "last activity",
            "prompts",
            "tools",
            "failures",
            "edits",
            "subagents",
            "tokens",
            "cost",
        )
    )
    table = (
        f"<table><tr>{head}</tr>{''.join(rows)}</table>"
        if rows
        else "<p class=muted>No session recorded yet.</p>"
    )
    return page(base, "sessions", f"<h1>Sessions</h1>{table}")


# --- the session page ------------------------------------------------------------------------


def session_page(
    base: str,
    session_id: str,
    main: dict[str, Any] | None,
    subagents: list[dict[str, Any]],
    frames: list[dict[str, Any]],
    branches: list[dict[str, Any]],
    spent: dict[str, Any] | None = None,
    internal: frozenset[str] = frozenset(),
) -> str:
    """`spent`: what web_server.spent read (the session's, agents', turns' and frames' cost
    and tokens, and the running total); None or empty: nothing read. `internal`: the ids of
    Claude Code's own helpers (no lane of their own)."""
    spent = spent or {}
    quoted = quote(session_id, safe="")
    whole = spent.get("session")
    cost = (
        f" · cost {esc(_estimate(whole))}{esc(usd(whole['cost_usd']))}"
        f" · {esc(_tokens(whole['tokens']))} tokens"
        if whole
        else ""
    )
    removed = sum(1 for b in branches if b.get("removed"))
    live = plural(len(branches) - removed, "fork or replay", "forks and replays")
    gone = f" ({removed} removed)" if removed else ""
    body = [
        f"<h1>Session {esc(session_id)}</h1>",
        f"<p class=muted>{plural(len(frames), 'frame')} · {plural(len(subagents), 'subagent')} ·"
        f" {live}{gone}{cost}</p>",
        "<h2>Agents</h2>",
        f'<div class="box">{agent_tree(main, session_id, subagents, spent.get("agents"))}</div>',
        _legend(STATUS_COLOURS),
        "<h2>Timeline</h2>",
        '<div class="box">',
        timeline_svg(base, session_id, frames, subagents, branches, internal),
        "</div>",
        _legend(KIND_COLOURS),
        "<p class=muted>A square above a mark: files changed; a red triangle below: open"
        " errors after it. Click a mark for its diff with the frame before.</p>",
        "<h2>Cost</h2>",
        _cost_section(spent),
        "<h2>Turns</h2>",
        _turns_table(spent.get("turns") or [], spent.get("hooks") or {}),
        "<h2>Frames</h2>",
        _frames_table(base, quoted, frames, spent.get("frames") or {}),
        "<h2>Undo one agent's work</h2>",
        _agent_reverts(subagents),
    ]
    return page(base, f"session {session_id[:8]}", "".join(body))


def _agent_reverts(subagents: list[dict[str, Any]]) -> str:
    """Per agent, the command that undoes only its files (the page itself changes nothing:
    a revert asks in the terminal, where its plan and --undo are)."""
    rows = [("main", "main thread")]
    rows += [
        (str(a["id"]), str(a["agent_type"] or "agent"))
        for a in subagents
        if a.get("first_frame") is not None  # an agent with no frames changed no file
    ]
    cells = "".join(
        f"<tr><td>{esc(cut(kind, 24))}</td><td>{esc(cut(agent, 28))}</td>"
        f"<td><code>claude-session revert --agent {esc(agent)} --dry-run</code></td></tr>"
        for agent, kind in rows
    )
    return (
        "<p class=muted>Reverts only the files that agent changed since it started; files"
        " others changed too are listed as conflicts and left alone.</p>"
        f"<table><tr><th>agent</th><th>id</th><th>command</th></tr>{cells}</table>"
    )


def _legend(colours: dict[str, str]) -> str:
    items = "".join(
        f'<span data-key="{esc(k)}"><svg width="11" height="11">'
        f'<circle cx="5.5" cy="5.5" r="5.5" fill="{c}"/>'
        f"</svg> {esc(k.replace('_', ' '))}</span>"
        for k, c in colours.items()
    )
    return f'<p class="legend">{items}</p>'


BOX_W, BOX_H, GAP_X, GAP_Y, PER_ROW = 210, 72, 24, 44, 5


def agent_tree(
    main: dict[str, Any] | None,
    session_id: str,
    subagents: list[dict[str, Any]],
    figures: dict[str, dict[str, Any]] | None = None,
) -> str:
    """The main thread on top, its subagents in rows below, each linked to it; a box's
    colour is its status; its last line, what its own model responses cost (`figures`, by
    agent id: the session id for the main thread)."""
    figures = figures or {}
    columns = max(1, min(PER_ROW, len(subagents)))
    width = max(BOX_W + 40, columns * (BOX_W + GAP_X) + 40)
    rows = (len(subagents) + PER_ROW - 1) // PER_ROW
    height = 20 + BOX_H + (rows * (BOX_H + GAP_Y)) + 20
    main_x = (width - BOX_W) // 2
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="agent-tree" width="{width}"'
        f' height="{height}" viewBox="0 0 {width} {height}" role="img"'
        ' aria-label="agent tree">'
    ]
    for i, agent in enumerate(subagents):
        row, col = divmod(i, PER_ROW)
        in_row = min(PER_ROW, len(subagents) - row * PER_ROW)
        left = (width - in_row * (BOX_W + GAP_X) + GAP_X) // 2
        x = left + col * (BOX_W + GAP_X)
        y = 20 + BOX_H + GAP_Y + row * (BOX_H + GAP_Y)
        mid_y = y - GAP_Y // 2
        parts.append(
            f'<path d="M{main_x + BOX_W // 2} {20 + BOX_H} V{mid_y} H{x + BOX_W // 2} V{y}"'
            ' fill="none" stroke="#94a3b8" stroke-width="1.5"/>'
        )
        title = agent["agent_type"] or "agent"
        detail = agent["description"] or f"turn {agent['turn'] or '?'}"
        spent = figures.get(str(agent["id"]))
        parts.append(_agent_box(x, y, agent["id"], str(title), str(detail), agent["status"], spent))
    status = main["status"] if main else "running"
    task = (main or {}).get("task_description") or "main thread"
    spent = figures.get(session_id)
    parts.append(_agent_box(main_x, 20, session_id, "main", str(task), status, spent))
    parts.append("</svg>")
    return "".join(parts)


def _agent_box(
    x: int,
    y: int,
    agent_id: object,
    title: str,
    detail: str,
    status: object,
    spent: dict[str, Any] | None = None,
) -> str:
    colour = STATUS_COLOURS.get(str(status), OTHER_COLOUR)
    cost = (
        f'<text class="cost" x="{x + 8}" y="{y + 65}" font-size="11" fill="#0f766e">'
        f"{esc(usd(spent['cost_usd']))} · {esc(_tokens(spent['tokens']))} tokens</text>"
        if spent
        else ""
    )
    return (
        f'<g class="agent" data-status="{esc(status)}" data-agent="{esc(agent_id)}">'
        f"<title>{esc(title)} {esc(agent_id)}: {esc(status)}\n"
        f"{esc(detail, keep_newlines=True)}</title>"
        f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="6" fill="#ffffff"'
        f' stroke="{colour}" stroke-width="2"/>'
        f'<rect x="{x}" y="{y}" width="{BOX_W}" height="20" rx="6" fill="{colour}"/>'
        f'<rect x="{x}" y="{y + 14}" width="{BOX_W}" height="6" fill="{colour}"/>'
        f'<text x="{x + 8}" y="{y + 14}" font-size="12" font-weight="600" fill="#ffffff">'
        f"{esc(cut(f'{title} · ' + str(status).replace('_', ' '), 27))}</text>"
        f'<text x="{x + 8}" y="{y + 35}" font-size="11" fill="#334155">'
        f"{esc(cut(agent_id, 28))}</text>"
        f'<text x="{x + 8}" y="{y + 50}" font-size="11" fill="#64748b">'
        f"{esc(cut(' '.join(detail.splitlines()), 32))}</text>{cost}</g>"
    )


STEP, LANE_H, LEFT = 26, 40, 150


def timeline_svg(
    base: str,
    session_id: str,
    frames: list[dict[str, Any]],
    subagents: list[dict[str, Any]],
    branches: list[dict[str, Any]],
    internal: frozenset[str] = frozenset(),
) -> str:
    """One lane for the main thread and one per subagent; one mark per frame, in order, its
    colour the frame's kind; files changed above it, open errors below; forks and replays hang
    below the frame they came from, each on a row of its own so no two labels meet. Claude
    Code's own helpers (`internal`: the compaction summariser and such) get no lane: their
    frames are on the main thread's."""
    lanes: dict[str, int] = {"main": 0}
    names = {"main": "main thread"}
    for sub in subagents:
        lanes[str(sub["id"])] = len(lanes)
        names[str(sub["id"])] = f"{sub['agent_type'] or 'agent'} {str(sub['id'])[:8]}"

    def lane_of(frame: dict[str, Any]) -> str:
        agent = str(frame["agent"])
        return "main" if agent in ("main", "user") or agent in internal else agent

    for f in frames:  # an agent with frames but no registry row still gets a lane
        agent = lane_of(f)
        if agent not in lanes:
            lanes[agent] = len(lanes)
            names[agent] = f"agent {agent[:8]}"
    by_frame: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    for row, branch in enumerate(branches):  # in frame order already
        by_frame.setdefault(int(branch["frame"]), []).append((row, branch))
    lanes_h = len(lanes) * LANE_H
    branch_h = 30 * len(branches)
    width = LEFT + max(1, len(frames)) * STEP + 40
    height = 30 + lanes_h + branch_h + 20
    quoted = quote(session_id, safe="")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{width}"'
        f' height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="timeline">'
    ]
    for agent, lane in lanes.items():
        y = 30 + lane * LANE_H + LANE_H // 2
        parts.append(
            f'<text x="8" y="{y + 4}" font-size="12" fill="#334155">'
            f"{esc(cut(names[agent], 20))}</text>"
            f'<line x1="{LEFT - 10}" y1="{y}" x2="{width - 20}" y2="{y}" stroke="#e2e8f0"'
            ' stroke-width="2"/>'
        )
    previous: dict[str, int] = {}
    for i, f in enumerate(frames):
        agent = lane_of(f)
        x = LEFT + i * STEP + STEP // 2
        y = 30 + lanes[agent] * LANE_H + LANE_H // 2
        if agent in previous and previous[agent] != i - 1:  # the lane's own thread
            px = LEFT + previous[agent] * STEP + STEP // 2
            parts.append(
                f'<line x1="{px}" y1="{y}" x2="{x}" y2="{y}" stroke="#cbd5e1" stroke-width="2"/>'
            )
        previous[agent] = i
        if i % 5 == 0 or i == len(frames) - 1:
            parts.append(
                f'<text x="{x}" y="18" font-size="10" fill="#64748b" text-anchor="middle">'
                f"{esc(f['frame'])}</text>"
            )
        number = int(f["frame"])
        target = f"{base}/diff?a={quoted}:{max(1, number - 1)}&b={quoted}:{number}"
        colour = KIND_COLOURS.get(str(f["kind"]), OTHER_COLOUR)
        files = f["files"] or []
        tip = [f"frame {number}: {f['kind']} · {f['agent']} · {f['summary'] or ''}"]
        if files:
            tip.append(f"files: {', '.join(str(p) for p in files)}")
        if f["open_errors"]:
            tip.append(f"open errors: {f['open_errors']}")
        title = "\n".join(esc(line) for line in tip)  # its own line breaks; recorded ones escaped
        parts.append(
            f'<a href="{esc(target)}"><g class="frame" data-frame="{number}"'
            f' data-kind="{esc(f["kind"])}"><title>{title}</title>'
            f'<circle class="kind-{esc(f["kind"])}" cx="{x}" cy="{y}" r="8" fill="{colour}"'
            ' stroke="#ffffff" stroke-width="1.5"/></g></a>'
        )
        if files:
            parts.append(
                f'<rect class="files" x="{x - 4}" y="{y - 19}" width="8" height="8"'
                ' fill="#0f766e"/>'
            )
        if f["open_errors"]:
            parts.append(
                f'<path class="errors" d="M{x - 5} {y + 19} L{x + 5} {y + 19} L{x} {y + 11} Z"'
                ' fill="#dc2626"/>'
            )
        for row, branch in by_frame.get(number, []):
            by = 30 + lanes_h + 18 + row * 30
            label = branch["label"] or branch["path"]
            named = f"{esc(branch['kind'])} {esc(cut(label, 60))}"
            if branch.get("removed"):  # its folder is gone: grey, dashed, struck through
                kind, stroke, dashes, ink = "branch removed", OTHER_COLOUR, "4 3", "#64748b"
                named = f'<tspan text-decoration="line-through">{named}</tspan> (removed)'
            else:
                kind, stroke, dashes, ink = "branch", "#db2777", "none", "#9d174d"
            parts.append(
                f'<g class="{kind}"><path d="M{x} {y + 8} V{by} H{x + 16}" fill="none"'
                f' stroke="{stroke}" stroke-width="2" stroke-dasharray="{dashes}"/>'
                f'<text x="{x + 20}" y="{by + 4}" font-size="12" fill="{ink}">{named}</text>'
                f"<title>{esc(branch['path'])}{' (removed)' if kind != 'branch' else ''}</title>"
                "</g>"
            )
    parts.append("</svg>")
    return "".join(parts)


def _frames_table(
    base: str, quoted: str, frames: list[dict[str, Any]], spent: dict[int, dict[str, Any]]
) -> str:
    rows = []
    for f in frames:
        number = int(f["frame"])
        cost = (spent.get(number) or {}).get("cost_usd")
        link = (
            f'<a href="{esc(f"{base}/diff?a={quoted}:{number - 1}&b={quoted}:{number}")}">diff</a>'
            if number > 1
            else ""
        )
        rows.append(
            f"<tr><td class=num>{number}</td><td>{esc(when(f['created_at']))}</td>"
            f"<td class=num>{esc(f['turn'])}</td><td>{esc(f['kind'])}</td>"
            f"<td>{esc(cut(f['agent'], 12))}</td><td>{esc(cut(f['summary'], 80))}</td>"
            f"<td>{esc(cut(', '.join(str(p) for p in f['files']), 80))}</td>"
            f"<td class=num>{esc(f['open_errors'] or 0)}</td>"
            f"<td class=num>{esc(usd(cost))}</td><td>{link}</td></tr>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("#", "time (UTC)", "turn", "kind", "agent", "what", "files", "errors", "cost", "")
    )
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _estimate(figures: dict[str, Any]) -> str:
    """`~` before a cost that is partly an estimate (a model no price is known for)."""
    return "~" if figures.get("estimated") else ""


def _tokens(value: object) -> str:
    return "-" if value is None else token_count(value)


def _cost_section(spent: dict[str, Any]) -> str:
    """The chart of the running cost, and where its figures come from."""
    if spent.get("old_schema"):
        return (
            "<p class=muted>The database is a version behind this claude-session (this page"
            " opens it read-only, never upgrading it): any other command upgrades it.</p>"
        )
    points = spent.get("points") or []
    whole = spent.get("session")
    outside = float(spent.get("not_in_transcripts") or 0.0)
    helpers = (
        f"{usd(outside)} {OUTSIDE_LABEL}: what Claude Code's own helper requests used"
        " (compaction summaries, titles and such), which no transcript line carries"
    )
    total = f" {usd(whole['cost_usd'])} in all." if whole else ""
    if not points:
        if outside > 0:
            said = f"No response priced in the transcripts; {helpers}.{total}"
            return f"<p class=muted>{esc(said)}</p>"
        return (
            "<p class=muted>No cost read from Claude Code's transcripts for this session yet"
            " (the daemon reads them; `claude-session cost` reads them now).</p>"
        )
    beyond = (
        f" Then, dashed at the end, as it has no time of its own, {helpers}." if outside > 0 else ""
    )
    return (
        f'<div class="box">{cost_chart(points, outside)}</div>'
        "<p class=muted>The running total of the model responses' costs, as Claude Code"
        f" figured them (apportioned per response), over the session's time.{esc(beyond)}"
        f"{esc(total)}</p>"
    )


def _turns_table(turns: list[dict[str, Any]], hooks: dict[int, dict[str, float]]) -> str:
    """Each turn: its prompt, its answer (the Stop's last message), tokens, cost, and the
    time Claude Code spent in its hooks; then both charted per turn."""
    if not turns:
        return "<p class=muted>No turn recorded.</p>"
    rows = "".join(
        f"<tr><td class=num>{esc(t['turn'])}</td><td>{lines(t['prompt'], 80)}</td>"
        f"<td>{lines(t['result_text'], 160)}</td><td>{esc(t['status'])}</td>"
        f"<td class=num>{esc(_tokens(t['tokens']))}</td>"
        f'<td class="num cost">{esc(usd(t["cost_usd"]))}</td>'
        f'<td class="num hooks">{esc(hooks_ms(hooks.get(t["turn"])))}</td></tr>'
        for t in turns
    )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("turn", "prompt", "answer", "status", "tokens", "cost", "time in hooks")
    )
    chart = hooks_chart(turns, hooks) if hooks else ""
    return f"<table class=turns><tr>{head}</tr>{rows}</table>{chart}"


# --- the diff page ---------------------------------------------------------------------------


def diff_page(base: str, a: str, b: str, state: dict[str, Any], files: dict[str, Any]) -> str:
    """The state's diff (agents, claims, errors, failed paths, task, counters) and the files'
    unified diff, added and removed lines coloured."""
    session = a.split(":", 1)[0]
    back = f"{base}/session/{quote(session, safe='')}"
    body = [
        f"<h1>Diff {esc(a)} → {esc(b)}</h1>",
        f'<p><a href="{esc(back)}">back to the session</a></p>',
        "<h2>State</h2>",
    ]
    items = []
    for section in ("agents", "claims", "errors", "failed_paths"):
        for how in ("added", "removed", "changed"):
            for item in state[section][how]:
                items.append(
                    f'<li><span class="{how}">{how}</span> {esc(section.replace("_", " "))}:'
                    f" {esc(cut(_brief(item), 400))}</li>"
                )
    if state["task"]:
        before, after = (lines(t) if t is not None else "-" for t in state["task"])
        items.append(f"<li>task: {before} → {after}</li>")
    for key, (before, after) in state["counters"].items():
        items.append(f"<li>{esc(key)}: {esc(before)} → {esc(after)}</li>")
    body.append(f"<ul>{''.join(items)}</ul>" if items else "<p class=muted>No change.</p>")
    body.append("<h2>Files</h2>")
    if "error" in files:
        body.append(f"<p class=muted>{esc(files['error'])}</p>")
    else:
        stat = "".join(
            f"<tr><td>{esc(s['path'])}</td><td class=num>"
            + ("binary" if s["added"] is None else f"+{esc(s['added'])} −{esc(s['deleted'])}")
            + "</td></tr>"
            for s in files["stat"]
        )
        body.append(
            f"<table><tr><th>file</th><th>lines</th></tr>{stat}</table>"
            if stat
            else "<p class=muted>No file changed.</p>"
        )
        if files.get("diff"):
            body.append(f'<pre class="diff">{unified(files["diff"])}</pre>')
    return page(base, f"diff {a} {b}", "".join(body))


def unified(text: str) -> str:
    """A unified diff as HTML lines, coloured by their first character."""
    out = []
    for line in text.splitlines():
        if line.startswith(("+++", "---", "diff ", "index ", "new file", "deleted file")):
            kind = "meta"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        elif line.startswith("@@"):
            kind = "hunk"
        else:
            out.append(esc(line, keep_newlines=True) + "\n")
            continue
        out.append(f'<span class="{kind}">{esc(line, keep_newlines=True)}</span>')
    return "".join(out)


def _brief(item: dict[str, Any]) -> str:
    if "changes" in item:
        parts = [f"{k}: {v[0]!r} → {v[1]!r}" for k, v in item["changes"].items()]
        return f"{'/'.join(str(k) for k in item['key'])} ({'; '.join(parts)})"
    return ", ".join(f"{k}={v}" for k, v in item.items() if v not in (None, "", []))


def error_page(base: str, status: int, message: str) -> str:
    return page(base, str(status), f"<h1>{status}</h1><p>{esc(message)}</p>")
