"""`memory add|list|search|show|edit|forget|accept|export|import`.

Project and session memories live in the project's database, global ones in the user-level
database; ids are shown as `12` (this project) and `g12` (global). Export and import speak
JSON lines and Markdown, and round-trip. What the user does here is the user's own word: a
memory added or imported is trusted, and a global one added is in use at once. A global memory
an agent added waits for `memory accept` (`memory list --pending` shows where it came from).
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import apsw
import click

from ..core import db, memories, memory_exchange, trust
from ..core.paths import db_path
from ..core.readings import ERROR_STATES
from ..project.memory_reads import labelled
from . import cells, memory_check_commands, output
from .group import json_option, opened, require_database
from .listing import emit_page, limit_option, stream_rows
from .memory_group import (
    found_row,
    global_db,
    has_project_database,
    holding,
    memory,
    parse_id,
    trusted_text,
)


@memory.command(name="add")
@click.argument("text")
@click.option(
    "--category",
    type=click.Choice(memories.CATEGORIES),
    default="fact",
    show_default=True,
    help="What kind of memory it is.",
)
@click.option("--scope", type=click.Choice(memories.SCOPES), default="project", show_default=True)
@click.option(
    "--session",
    "session_id",
    help="The session of a session-scope memory (default: the most recently active).",
)
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option(
    "--file",
    "files",
    multiple=True,
    help="A project file the memory is about (repeatable): recorded with its content hash,"
    " and the memory is marked possibly stale once the file changes.",
)
@json_option(
    "an object: id, new (false: an existing memory was strengthened), files (with --file:"
    " the paths recorded, relative to the project), and for a session memory session_id"
)
@click.pass_obj
def memory_add(
    root: Path,
    text: str,
    category: str,
    scope: str,
    session_id: str | None,
    tags: tuple[str, ...],
    files: tuple[str, ...],
) -> None:
    """Remember TEXT (redacted like everything recorded).

    Yours, so in use at once: a global one reaches every project's sessions (one an agent adds
    waits for `memory accept`). `--file PATH` names a file it is about (relative to the
    current folder or the project)."""
    from ..project import Project

    latest = scope == "session" and not session_id
    paths = memory_check_commands.project_files(root, files)
    with Project(root) as project:
        if latest:
            # the session active last, as `fail` finds it
            project.refresh(transcripts=False, spool=False)
        added = project.add_memory(
            text, category, scope, tags=tags, files=paths, session_id=session_id
        )
    label = added.id
    answer: dict[str, Any] = {"id": label, "new": added.new} | ({"files": paths} if paths else {})
    said = f"memory {label} {'added' if added.new else 'strengthened (already known)'}"
    if paths:
        said += f", about {', '.join(paths)}"
    if scope == "session":
        answer["session_id"] = added.session_id
        said += f" for session {added.session_id}" + (
            " (the most recently active)" if latest else ""
        )
    output.reply(answer, said)


@memory.command(name="list")
@click.option("--category", type=click.Choice(memories.CATEGORIES))
@click.option("--scope", type=click.Choice(memories.SCOPES))
@click.option(
    "--pending",
    is_flag=True,
    help="Only the memories awaiting your review (global ones an agent added), with where"
    " each came from: `memory accept ID` puts one in use, `memory forget ID` drops it.",
)
@click.option(
    "--stale",
    is_flag=True,
    help="Only the memories possibly stale: a file they are about changed, went or appeared"
    " since they were recorded (with each change: what, when, by which agent).",
)
@click.option("--all", "every", is_flag=True, help="Every memory, streamed.")
@limit_option
@json_option(
    "a list of memories: id (12 for this project, g12 global), category, scope, text, tags,"
    " source (user, agent, learned, import), session_id, agent_id, tool_use_id, project,"
    " strength, created_at, updated_at, last_used_at, use_count, supersedes, trusted (1 or 0;"
    " null: written before it was recorded), review (pending, accepted; null: none needed),"
    " imported_at, outcome (verified, disproved: a dead end, hypothesis; null: none said),"
    " outcome_at, outcome_reason, possibly_stale (a file it is about changed, went or"
    " appeared since it was recorded)"
)
@output.wide_option
@click.pass_obj
def memory_list(
    root: Path,
    category: str | None,
    scope: str | None,
    pending: bool,
    stale: bool,
    every: bool,
    limit: int,
) -> None:
    """Memories, most used and strongest first, each marked (state) disproved, hypothesis or
    verified when its outcome was said, and possibly stale when a file it is about changed.

    Those awaiting your review (global ones an agent added) are left out, and counted on
    stderr; `--pending` lists them alone; `--stale` those whose files changed since."""
    if stale:
        memory_check_commands.list_stale(root, scope)
        return
    from ..project import Project

    here = scope != "global" and has_project_database(root)  # none: says so on stderr
    with Project(root) as project:
        if here:
            project.refresh(transcripts=False, spool=False)  # the database as this version reads it
        found = project.memory_listing(
            None if every else limit, category=category, scope=scope, pending=pending
        )
    layout = output.Layout(shown=_origin_row if pending else _table_row)
    if every:
        stream_rows(iter(found.rows), "memories", layout)
    else:
        emit_page(found, "memories", "memory list", layout)
    waiting = found.hidden
    if waiting and not output.json_wanted():
        output.note(
            f"{waiting} {'memory awaits' if waiting == 1 else 'memories await'} your review"
            " (given to no session until accepted): `claude-session memory list --pending`"
        )


@memory.command(name="search")
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True)
@json_option("a list of memories, as `memory list` gives them, with their rank")
@output.wide_option
@click.pass_obj
def memory_search(root: Path, query: str, limit: int) -> None:
    """Full-text search (best first), in this project and the global memories."""
    from ..project import Project

    has_project_database(root)
    with Project(root) as project:  # the one search, the MCP server's too
        found = project.memories(query, limit)
    output.emit(found, title="memories", layout=output.Layout(shown=_table_row))


def _table_row(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": r["id"],
        "category": r["category"],
        "scope": r["scope"],
        "state": marks(r),
        "text": r["text"],
        "tags": ", ".join(r["tags"]),
        "used": r["use_count"],
    }


def marks(r: dict[str, Any]) -> str | None:
    """What a memory's row is marked with: its outcome (disproved: a dead end, hypothesis,
    verified) and `possibly stale` when a file it is about changed since; None: a plain one."""
    said = [str(r["outcome"])] if r.get("outcome") else []
    if r.get("possibly_stale"):
        said.append("possibly stale")
    return ", ".join(said) or None


def _origin_row(r: dict[str, Any]) -> dict[str, Any]:
    """A memory awaiting review: what it says and where it came from, to judge it by."""
    return {
        "id": r["id"],
        "category": r["category"],
        "text": r["text"],
        "source": r["source"],
        "project": r["project"],
        "session_id": r["session_id"],
        "agent_id": r["agent_id"],
        "trusted": trusted_text(r["trusted"]),
    }


@memory.command(name="show")
@click.argument("memory_id")
@json_option(
    "an object: the memory, with the fields `memory list` gives, added_by, files (path, state:"
    " unchanged, changed, gone, appeared; sha256, size, git_commit, recorded_at as recorded;"
    " modified_at, changed_by, said when changed), possibly_stale, stale_files, error (the"
    " error it was about: signature, resolution, resolved_at; null: none)"
)
@click.pass_obj
def memory_show(root: Path, memory_id: str) -> None:
    """One memory with where it came from (who added it, session, turn, tool call), the files
    it is about and whether they changed since, what became of it, and how it was used."""
    from ..project import Project

    scope, _ = parse_id(memory_id)
    if scope != "global":
        require_database(root, reading=False)  # a read never makes one; none names it yet
    with Project(root) as project:
        if scope != "global":
            project.refresh(transcripts=False, spool=False)  # the database as this version reads it
        row = project.memory_record(memory_id)
    _show(row)


def _show(row: dict[str, Any]) -> None:
    """One memory: JSON, or its fields one per line (the tags joined)."""
    output.emit(row, text=lambda: _say_memory(row))


def _say_memory(row: dict[str, Any]) -> None:
    shown = row | {"tags": ", ".join(row["tags"])}
    if "trusted" in row:
        shown["trusted"] = trusted_text(row["trusted"])
    if "files" in row:
        shown["files"] = "; ".join(_file_line(f) for f in row["files"]) or "none named"
        if row["files"] and row.get("files_inferred"):
            shown["files"] += " (inferred: what its agent read or changed in that turn)"
        shown.pop("stale_files", None)
        fate = row.get("error")
        if fate:
            state = ERROR_STATES.get(str(fate["resolution"]), "still open")  # as `errors` says
            shown["error"] = f"{fate['signature']} ({state}, {fate['session_id']})"
    output.emit_pairs(output.console(), f"memory {row['id']}", shown)


def _file_line(f: dict[str, Any]) -> str:
    """One file of a memory: what it is now, then as recorded (hash, commit, when)."""
    recorded = f"sha256 {str(f['sha256'] or 'none: no file')[:12]}"
    if f.get("git_commit"):
        recorded += f", commit {str(f['git_commit'])[:10]}"
    if isinstance(f["recorded_at"], int | float):
        recorded += f", recorded {cells.local_time(f['recorded_at'])}"
    return f"{f.get('said') or f['path'] + ': ' + f['state']} ({recorded})"


@memory.command(name="edit")
@click.argument("memory_id")
@click.option("--text", help="The new text (default: open $EDITOR).")
@click.option("--category", type=click.Choice(memories.CATEGORIES))
@click.option("--tag", "tags", multiple=True, help="Replace the tags (repeatable).")
@json_option("an object: the memory as changed, with the fields `memory list` gives")
@click.pass_obj
def memory_edit(
    root: Path,
    memory_id: str,
    text: str | None,
    category: str | None,
    tags: tuple[str, ...],
) -> None:
    """Change a memory's text, category or tags."""
    from ..project import Project

    if text is None and category is None and not tags:
        scope, number = parse_id(memory_id)
        with holding(root, scope) as conn:
            row = found_row(conn, scope, number, memory_id)
        if not sys.stdin.isatty():
            raise click.ClickException("give --text, --category or --tag (not on a terminal)")
        text = click.edit(str(row["text"]))
        if text is None:
            raise click.ClickException("nothing changed")
    with Project(root) as project:
        changed = project.edit_memory(
            memory_id, text=text, category=category, tags=list(tags) if tags else None
        )
    scope, _ = parse_id(memory_id)
    _show(labelled(scope, [changed.memory or {}])[0])


@memory.command(name="forget")
@click.argument("memory_id")
@json_option("an object: id, forgotten")
@click.pass_obj
def memory_forget(root: Path, memory_id: str) -> None:
    """Forget a memory: it is never shown or given again."""
    from ..project import Project

    parse_id(memory_id)
    with Project(root) as project:
        project.forget_memory(memory_id)
    output.reply({"id": memory_id, "forgotten": True}, f"memory {memory_id} forgotten")


@memory.command(name="accept")
@click.argument("memory_id")
@json_option("an object: id, accepted")
@click.pass_obj
def memory_accept(root: Path, memory_id: str) -> None:
    """Accept a memory awaiting your review: it is in use from now on.

    Sessions are given it and searches find it: in every project, for a global one (g12).
    `memory list --pending` lists those awaiting it; `memory forget` drops one instead."""
    from ..project import Project

    parse_id(memory_id)
    with Project(root) as project:
        project.accept_memory(memory_id)
    output.reply({"id": memory_id, "accepted": True}, f"memory {memory_id} accepted")


@memory.command(name="export")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "markdown"]), default="jsonl")
@click.option("--scope", type=click.Choice(memories.SCOPES))
@click.option(
    "--untrusted",
    "untrusted_too",
    is_flag=True,
    help="Export the memories of a database claude-session does not trust (one that came"
    " with a clone), each marked trusted: 0; without it such an export is refused.",
)
@click.pass_obj
def memory_export(root: Path, fmt: str, scope: str | None, untrusted_too: bool) -> None:
    """Every memory to stdout, as JSON lines or Markdown (`memory import` reads both).

    Each memory keeps all that restoring it needs: category, scope, text, tags, source, session,
    agent, tool call, project, trust, review, strength, use count, times, and the memory it
    supersedes; those awaiting review too. In Markdown, the fields a line does not show are in
    an HTML comment at its end. The project's memories are not exported from a database this
    user's claude-session did not create (`status` says why), since an import would make them
    yours: `claude-session trust` it, or pass --untrusted to export them marked trusted: 0."""
    found: list[dict[str, Any]] = []
    if scope != "global" and has_project_database(root):
        with opened(root) as conn:  # a damaged file is said as such first
            problem = trust.database_problem(db_path(str(root)))
            if problem and not untrusted_too:
                raise click.ClickException(
                    f"not exporting the memories of an untrusted database: {problem}; or pass"
                    " --untrusted to export them marked trusted: 0"
                )
            records = _records(conn, "project", memory_exchange.exportable(conn, scope))
        found += [r | {"trusted": 0} for r in records] if problem else records
    if scope in (None, "global"):
        with global_db(create=False) as conn:
            if conn is not None:
                found += _records(conn, "global", memory_exchange.exportable(conn))
    for item in found:  # controls escaped: JSON's escapes, or shown escaped in Markdown
        click.echo(output.json_line(item) if fmt == "jsonl" else _markdown(item))


def _records(
    conn: apsw.Connection, scope: str, found: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Exported memories: ids as `memory list` shows them (12, g12), and so the superseded;
    the files each is about, as recorded."""
    out = []
    for row in labelled(scope, found):
        number = int(row["id"].removeprefix(memories.GLOBAL_PREFIX))
        if row["supersedes"] is not None:
            row["supersedes"] = memories.label(scope, row["supersedes"])
        record = {k: row[k] for k in memory_exchange.EXPORTED}
        files = memory_exchange.exported_files(conn, number)
        out.append(record | {"files": files} if files else record)
    return out


MARK = "<!-- claude-session "


def _markdown(item: dict[str, Any]) -> str:
    """`- **category** (scope [session]) text #tags <!-- claude-session {the other fields} -->`:
    readable as it renders (the comment is hidden), and exact once imported."""
    where = str(item["scope"])
    if item["scope"] == "session" and item["session_id"]:
        where += f" {item['session_id']}"
    tags = " ".join("#" + "-".join(t.split()) for t in item["tags"])
    line = f"- **{item['category']}** ({where}) {' '.join(str(item['text']).split())}"
    line = output.escape_controls(line + (f" {tags}" if tags else ""))
    shown_here = ("category", "scope", "text")
    hidden = {k: v for k, v in item.items() if k not in shown_here and v is not None}
    try:
        shown = _markdown_record(line).get("text")
    except Unreadable:  # text that looks like our comment
        shown = None
    if shown != item["text"]:
        hidden["text"] = item["text"]  # several lines, or text a reader would take for tags
    meta = output.json_line(hidden, separators=(",", ":"))
    meta = meta.replace("<", "\\u003c").replace(">", "\\u003e")  # nothing ends the comment early
    return f"{line} {MARK}{meta} -->"


class Unreadable(ValueError):
    """A line of an import file that is no memory record at all."""


@memory.command(name="import")
@click.argument("source", type=click.File("rb"))
@json_option(
    "an object: imported, already_present, invalid (counts), problems (a list of line, reason:"
    " each invalid record, skipped)"
)
@click.pass_obj
def memory_import(root: Path, source: Any) -> None:
    """Read memories exported as JSON lines or Markdown (`-` for stdin).

    Each comes back as it was: session, tags, strength, use count, times and provenance (source,
    agent, project, trust, review: one awaiting review in the file awaits it here), and is marked
    as imported (imported_at). A file without trust or review is your word: trusted, in use. A
    memory already here (same scope, session and text) is skipped: importing a file twice adds
    nothing. A record that cannot be imported (not JSON, unknown category, no text...) is
    skipped and reported with its line and why; the others are imported all the same. Exit 0
    once the file is read, whatever was skipped; non-zero only when the file (or the database)
    cannot be opened or read."""
    try:
        lines = source.read().split(b"\n")
    except OSError as exc:
        raise click.ClickException(f"cannot read {source.name}: {exc}") from exc
    report: dict[str, Any] = {"imported": 0, "already_present": 0, "invalid": 0, "problems": []}
    now = time.time()
    here: dict[str, tuple[str, int]] = {}  # the exporter's id -> (database, id here)
    links: list[tuple[str, int, str]] = []  # (database, id here, the exporter's superseded id)
    with ExitStack() as stack:
        conns: dict[str, apsw.Connection | None] = {
            "project": stack.enter_context(opened(root, create=True))
        }
        for number, raw in enumerate(lines, 1):
            try:
                record = _parse_line(raw, number)
                if record is None:
                    continue
                where = "global" if record.get("scope") == "global" else "project"
                if where not in conns:  # only when a global memory comes
                    conns[where] = stack.enter_context(global_db(create=True))
                target = conns[where]
                if target is None:
                    raise Unreadable("cannot open the user-level memory database")
                with db.Immediate(target):
                    memory_id, added = memory_exchange.restore(target, record, now)
                    if added:
                        memory_exchange.restore_files(target, memory_id, record.get("files"))
            except (Unreadable, memories.MemoryProblem) as exc:
                report["invalid"] += 1
                report["problems"].append({"line": number, "reason": str(exc)})
                continue
            report["imported" if added else "already_present"] += 1
            if isinstance(record.get("id"), str | int):
                here[str(record["id"])] = (where, memory_id)
            if added and isinstance(record.get("supersedes"), str | int):
                links.append((where, memory_id, str(record["supersedes"])))
        for where, memory_id, superseded in links:
            found = here.get(superseded)
            target = conns[where]
            if found is not None and found[0] == where and target is not None:
                with db.Immediate(target):
                    memories.link_supersedes(target, memory_id, found[1])

    def say() -> None:
        for problem in report["problems"]:
            reason = output.escape_controls(problem["reason"])
            click.echo(f"line {problem['line']} skipped: {reason}", err=True)
        output.echo_wrapped(
            f"{report['imported']} imported, {report['already_present']} already present,"
            f" {report['invalid']} invalid (skipped)"
        )

    output.reply(report, say)


def _parse_line(raw: bytes, number: int) -> dict[str, Any] | None:
    """One record of an import file: a JSON object, or a Markdown item as `_markdown` writes
    it; None for a blank line or a Markdown heading."""
    try:
        line = raw.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    if number == 1:
        line = line.lstrip("\ufeff")  # a byte order mark
    if not line or line.startswith("#"):
        return None
    if line.startswith("- **"):
        return _markdown_record(line)
    try:
        item = json.loads(line)
    except ValueError as exc:
        if line.startswith("{"):
            raise Unreadable(f"not valid JSON ({exc})") from exc
        raise Unreadable(
            "neither a JSON object nor a Markdown memory (- **category** ...)"
        ) from exc
    if not isinstance(item, dict):
        raise Unreadable("not a JSON object")
    return item


def _markdown_record(line: str) -> dict[str, Any]:
    """`- **category** (scope [session]) text #tags`, and the hidden fields of its comment."""
    hidden: dict[str, Any] = {}
    at = line.rfind(" " + MARK)
    if at >= 0 and line.endswith("-->"):
        try:
            found = json.loads(line[at + 1 + len(MARK) : -3])
        except ValueError as exc:
            raise Unreadable(f"its {MARK.strip()} comment is not valid JSON ({exc})") from exc
        if not isinstance(found, dict):
            raise Unreadable(f"its {MARK.strip()} comment is not a JSON object")
        hidden, line = found, line[:at]
    category, _, rest = line[4:].partition("**")
    rest = rest.strip()
    scope, session = "project", ""
    if rest.startswith("("):
        inside, _, rest = rest[1:].partition(")")
        scope, _, session = inside.strip().partition(" ")
    words = rest.split()
    tags: list[str] = []
    while words and words[-1].startswith("#") and len(words[-1]) > 1:
        tags.insert(0, words.pop()[1:].replace("-", " "))
    record: dict[str, Any] = {
        "category": category.strip(),
        "scope": scope.strip(),
        "text": " ".join(words),
        "tags": tags,
    }
    if session.strip():
        record["session_id"] = session.strip()
    return record | hidden
