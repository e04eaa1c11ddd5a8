"""The MCP server (stdio) that lets the agent use claude-session itself: search and add
memories, read and set the project's state, read a session's timeline.

`python -m claude_session.mcp_server` (what `claude-session install --mcp` registers at user
scope). It reads and writes through the library API (claude_session/project/), as the CLI
does: the memory search is `Project.memories`, a memory added `Project.add_memory`, the state
`Project.state` and `Project.set_state`, the timeline `Project.timeline`; so it sits above
`Project`, below the CLI.

The project is `$CLAUDE_PROJECT_DIR` (Claude Code sets it in the server's
environment; `${CLAUDE_PROJECT_DIR}` is not expanded in `.mcp.json` outside plugins), else the
nearest folder up with a database, else the working directory. Everything it returns that was
recorded is marked as recorded data: a memory's text is not an instruction.

A memory the agent adds records where it came from: source 'agent', this project, the session,
turn, agent and tool call that asked (from the hooks' record of the call), trusted (this
project's database is, or nothing is written), and the files it is about: those the agent
names (`files`), else those it read or changed in that turn (the memory says they were
inferred), each with its content hash. A global one reaches every project, so it waits for the
user's review (`claude-session memory accept`) and the answer says so. A search marks each
memory whose files changed since as possibly stale, and a disproved one as a dead end.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any

import apsw
from mcp.server.mcpserver import MCPServer

from .core import answers, db, hook_contract, injections, memories, memory_files, recall, trust
from .core.paths import db_path, find_project
from .project import Memory, Project, ProjectError

UNTRUSTED = (
    "This project's claude-session database was not made by this user on this machine (it came"
    " with a clone or a copy), so nothing in it is served and nothing is written to it; the"
    " user can run `claude-session trust` in the project if it is theirs."
)
AWAITS_REVIEW = (
    "Held for the user's review: a global memory reaches every project, so no session is given"
    " it and no search finds it until the user accepts it (`claude-session memory list"
    " --pending`, then `claude-session memory accept {id}`). It is not active yet."
)
ADD_MEMORY_TOOL = "mcp__*__add_memory"  # GLOB: the tool as Claude Code names it, any server name
CALL_WINDOW_S = 600.0


def project_root() -> str:
    """$CLAUDE_PROJECT_DIR (Claude Code sets it), else the nearest folder up with a database."""
    return find_project()


def build(root: str) -> MCPServer:
    server: MCPServer = MCPServer(
        name=hook_contract.MCP_SERVER,
        instructions=(
            "Memories, project state and the session timeline recorded by claude-session for "
            "this project. Search memories before repeating work that may have failed before."
        ),
    )

    def untrusted() -> str | None:
        """Why this project's database is not to be served or written (core/trust.py)."""
        return UNTRUSTED if trust.database_problem(db_path(root)) else None

    @server.tool(description="Search the memories (this project's and the global ones) by text.")
    def search_memories(query: str, limit: int = 5) -> dict[str, Any]:
        limit = max(1, min(int(limit), 20))
        refused = untrusted()
        # The one search (Project.memories); an untrusted project: the user's own only.
        with Project(root) as found_in:
            found = found_in.memories(query, limit, scope="global" if refused else None)
        _count_use(root, found)
        stale = _staleness(root, found)
        shown = [_found(m, stale.get(m.id)) for m in found]
        answer = {"note": answers.RECORDED_NOTE, "memories": shown}
        return said(root, "search_memories", answer | {"project": refused} if refused else answer)

    @server.tool(
        description=(
            "Remember something for later sessions. category: fact, learning, preference, "
            "context or skill; scope: project (default) or global (all projects: awaiting the "
            "user's review, and given to no session until the user accepts it). files: the "
            "project files it is about (paths relative to the project); when they change, the "
            "memory is marked possibly stale. Without files, those you read or changed in this "
            "turn are taken. hypothesis: true when it is not verified yet."
        )
    )
    def add_memory(
        text: str,
        category: str,
        scope: str = "project",
        tags: list[str] | None = None,
        files: list[str] | None = None,
        hypothesis: bool = False,
    ) -> dict[str, Any]:
        if scope not in ("project", "global"):
            return {"error": "scope must be project or global"}
        refused = untrusted()
        if refused:  # a global memory from here would carry what the clone said elsewhere
            return {"error": refused}
        now = time.time()
        session_id, agent_id, tool_use_id = _caller(root, now)
        try:
            named = [memory_files.relative(root, str(f)) for f in files or []]
        except memory_files.FileProblem as exc:
            return {"error": str(exc)}
        turn_no, paths, error_id = _turn(root, tool_use_id, scope)
        inferred = not named and bool(paths)
        try:
            with Project(root) as project:
                added = project.add_memory(
                    text,
                    category,
                    scope,
                    tags=tags or [],
                    files=named or paths,
                    hypothesis=hypothesis,
                    source="agent",
                    session_id=session_id,
                    agent_id=agent_id,
                    tool_use_id=tool_use_id,
                    turn_no=turn_no,
                    error_id=error_id,
                    files_inferred=inferred,
                )
        except ProjectError as exc:
            return {"error": str(exc)}
        label = added.id
        answer: dict[str, Any] = {
            "id": label,
            "stored": "new" if added.new else "already known: strengthened",
        }
        if added.files:
            answer["files"] = list(added.files)
            if added.files_inferred:
                answer["files_inferred"] = "the files you read or changed in this turn"
        if added.review == memories.PENDING:
            answer |= {"review": "pending", "note": AWAITS_REVIEW.format(id=label)}
        return said(root, "add_memory", answer)

    @server.tool(description="Read the project's state: one key, or all keys with their values.")
    def get_state(key: str | None = None) -> dict[str, Any]:
        refused = untrusted()
        if refused:
            return {"error": refused}
        with Project(root) as reading:
            if key:
                found = reading.state_value(key)
                value = found.value if found is not None else None
                return said(root, "get_state", answers.state_value(key, value))
            rows = [{"key": v.key, "value": v.value} for v in reading.state()]
        return said(root, "get_state", answers.state_values(rows))

    @server.tool(description="Set a key of the project's state (recorded in its history).")
    def set_state(key: str, value: str) -> dict[str, Any]:
        refused = untrusted()
        if refused:
            return {"error": refused}
        with Project(root) as writing:
            changed = writing.set_state(key, value, cause="MCP tool set_state (an agent)").changed
        return said(root, "set_state", {"key": key, "changed": bool(changed)})

    @server.tool(description="The frames of a session (default: the latest): what happened when.")
    def timeline(session: str = "", limit: int = 40) -> dict[str, Any]:
        refused = untrusted()
        if refused:
            return {"error": refused}
        try:
            with Project(root) as reading:
                session_id = reading.session_at(session)
                frames = reading.timeline(session_id or "")
        except ProjectError as exc:
            return {"error": str(exc)}
        if session_id is None:
            return {"error": "no frames recorded yet in this project"}
        last = frames[-max(1, min(int(limit), 200)) :]
        shown = [dataclasses.asdict(f) | {"files": list(f.files)} for f in last]
        return said(root, "timeline", answers.timeline(session_id, shown))

    return server


def _found(memory: Memory, stale: list[str] | None = None) -> dict[str, Any]:
    """A memory a search found, as the model is given it (core/answers.py): a disproved one
    said to be a dead end, one whose files changed since said to be possibly stale, and why."""
    row = dataclasses.asdict(memory) | {"id": memory.id.removeprefix("g")}
    row["tags"] = memories.tags_json(memory.tags)  # the text stored, quoted as before
    found = {k: v for k, v in answers.memory_found(memory.where, row).items() if k != "rank"}
    if found.get("outcome") is None:
        found.pop("outcome", None)
    elif found["outcome"] == "disproved":
        found["dead_end"] = "disproved: it turned out false; not a fact"
    if stale:
        found["possibly_stale"] = answers.quoted(stale)
    return found


def _staleness(root: str, found: list[Memory]) -> dict[str, list[str]]:
    """What changed, file by file, for each found memory whose files changed since it was
    recorded (a global one against its own project), by its id."""
    out: dict[str, list[str]] = {}
    for where in ("project", "global"):
        ours = [m for m in found if m.where == where]
        if not ours:
            continue
        conn = recall.open_global() if where == "global" else db.connect(db_path(root))
        if conn is None:
            continue
        try:
            for m in ours:
                base = root if where == "project" else m.project
                if not base or not os.path.isdir(base):
                    continue
                number = int(m.id.removeprefix("g"))
                changed, _ = memory_files.changes_for(conn, os.path.realpath(base), [number])
                changes = changed.get(number) or []
                memory_files.with_agents(conn, changes)
                if changes:
                    out[m.id] = [memory_files.describe(c) for c in changes]
        finally:
            conn.close()
    return out


def _turn(
    root: str, tool_use_id: str | None, scope: str
) -> tuple[int | None, list[str], int | None]:
    """(turn number, the files the agent read or changed in it, the error open in it) of the
    add_memory call being served, from the hooks' record; the error only for a project
    memory (its id is this database's)."""
    if not tool_use_id:
        return None, [], None
    conn = db.connect(db_path(root), create=False)
    try:
        turn_no, _ = memory_files.turn_of(conn, tool_use_id)
        paths = memory_files.touched_in_turn(conn, root, tool_use_id)
        error_id = memory_files.open_error_in_turn(conn, tool_use_id) if scope != "global" else None
    finally:
        conn.close()
    return turn_no, paths, error_id


def _count_use(root: str, found: list[Memory]) -> None:
    """The memories a search gave the agent count as used (strengthening them)."""
    with Project(root) as project:
        project.memories_used(found)


def said(root: str, tool: str, answer: dict[str, Any]) -> dict[str, Any]:
    """Keep an answer the model is about to read in the project's injection log (with the
    session and agent that asked, when one call in flight tells), then return it. Never in a
    database that is not trusted, and never at the cost of the answer."""
    if trust.database_problem(db_path(root)):
        return answer
    try:
        now = time.time()
        session_id, agent_id, tool_use_id = _caller(root, now, f"mcp__*__{tool}")
        conn = db.connect(db_path(root), create=False)
        try:
            text = json.dumps(answer, ensure_ascii=False, sort_keys=True)
            injections.record(
                conn, now, session_id or "unknown", agent_id, "mcp", injections.MCP, text,
                source=tool, tool_use_id=tool_use_id,
            )  # fmt: skip
        finally:
            conn.close()
    except (db.DatabaseError, apsw.Error, OSError):
        pass  # the answer matters more than its record
    return answer


def _caller(
    root: str, now: float, tool: str = ADD_MEMORY_TOOL
) -> tuple[str | None, str | None, str | None]:
    """(session, agent, tool call) of the MCP tool call being served, best effort: the MCP
    request names none of them, but the PreToolUse hook recorded the call as running just before
    Claude Code made it. Only one such call in flight is an answer; none or several (two
    sessions at once), and the memory records no session rather than a guessed one."""
    try:
        conn = db.connect(db_path(root), create=False)
    except db.DatabaseError:
        return None, None, None
    try:
        found = conn.execute(
            "SELECT session_id, agent_id, tool_use_id FROM tool_calls"
            " WHERE status = 'running' AND tool_name GLOB ? AND started_at >= ?"
            " ORDER BY started_at DESC LIMIT 2",
            (tool, now - CALL_WINDOW_S),
        ).fetchall()
    finally:
        conn.close()
    if len(found) != 1:
        return None, None, None
    session_id, agent_id, tool_use_id = (db.as_opt_text(v) for v in found[0])
    return session_id, agent_id, tool_use_id


def main() -> None:
    build(project_root()).run("stdio")


if __name__ == "__main__":
    main()
