"""The memories page of `claude-session serve`: each of this project's memories with where it
came from (who added it, session, turn, tool call), what became of it, and the files it is
about, each as recorded and as it is now (changed, gone: possibly stale). Pure functions from
rows to HTML, escaped as every page of ours (`web_text.esc`)."""

from __future__ import annotations

from typing import Any

from .web_pages import page
from .web_text import cut, esc, when

STATE_CLASS = {"changed": "changed", "gone": "removed", "appeared": "added"}


def memories_page(base: str, found: list[dict[str, Any]], more: int) -> str:
    """The page: a table of memories, the possibly stale ones first said so."""
    stale = sum(1 for m in found if m["possibly_stale"])
    rows = "".join(_row(m) for m in found)
    head = "".join(
        f"<th>{h}</th>"
        for h in ("id", "memory", "added by", "where from", "outcome", "files", "used")
    )
    summary = (
        f"<p>{len(found)} memories shown"
        + (f" ({more} more: `claude-session memory list --all`)" if more else "")
        + (
            f"; <span class=changed>{stale} possibly stale</span>: a file each is about changed"
            " since it was recorded"
            if stale
            else "; none possibly stale"
        )
        + ".</p>"
    )
    table = (
        f"<table><tr>{head}</tr>{rows}</table>"
        if rows
        else "<p class=muted>No memory recorded in this project yet.</p>"
    )
    return page(base, "memories", f"<h1>Memories</h1>{summary}{table}")


def _row(m: dict[str, Any]) -> str:
    text = esc(cut(m["text"], 400))
    if m["possibly_stale"]:
        text = f"<strong class=changed>possibly stale</strong> {text}"
    where = [
        f"session {esc(cut(m['session_id'], 12))}" if m.get("session_id") else "",
        f"turn {esc(m['turn_no'])}" if m.get("turn_no") is not None else "",
        f"tool call {esc(cut(m['tool_use_id'], 24))}" if m.get("tool_use_id") else "",
        f"added {esc(when(m['created_at']))}",
    ]
    outcome = esc(m.get("outcome") or "-")
    if m.get("outcome") == "disproved":
        outcome = f"<span class=removed>{outcome}: a dead end</span>"
    if m.get("verified_at"):
        outcome += f"<br><span class=muted>checked {esc(when(m['verified_at']))}</span>"
    fate = m.get("error")
    if fate:
        outcome += (
            f"<br><span class=muted>error {esc(cut(fate['signature'], 60))}:"
            f" {esc(fate['resolution'] or 'still open')}</span>"
        )
    files = "<br>".join(_file(f) for f in m["files"]) or "<span class=muted>none named</span>"
    if m["files"] and m.get("files_inferred"):
        files += "<br><span class=muted>(inferred: what its agent read or changed)</span>"
    return (
        f"<tr><td>{esc(m['id'])}</td><td>[{esc(m['category'])}] {text}</td>"
        f"<td>{esc(m['added_by'])}</td><td>{'<br>'.join(w for w in where if w)}</td>"
        f"<td>{outcome}</td><td>{files}</td><td class=num>{esc(m['use_count'])}</td></tr>"
    )


def _file(f: dict[str, Any]) -> str:
    state = str(f["state"])
    shown = f"{esc(f['path'])} <span class={STATE_CLASS.get(state, 'muted')}>{esc(state)}</span>"
    recorded = f"sha256 {esc(str(f['sha256'] or '-')[:12])}"
    if f.get("git_commit"):
        recorded += f", commit {esc(str(f['git_commit'])[:10])}"
    shown += f"<br><span class=muted>{recorded}, recorded {esc(when(f['recorded_at']))}</span>"
    if f.get("said"):
        shown += f"<br><span class=changed>{esc(f['said'])}</span>"
    return shown
