"""Memory provenance and the user's review of global memories.

A global memory reaches every project's sessions, so the one an agent adds through the MCP
server (an agent that a hostile repository may have talked into it) is held until the user
accepts it: no other project's SessionStart or prompt is given it, no MCP search finds it, and
`memory list --pending` shows where it came from. The user's own global memory is in use at
once. Each write path (the CLI, the MCP server, the error ladder, `memory import`, and the
migration of older databases) records where a memory came from and whether its writer was
trusted. The real CLI and hooks run; the MCP server is called in-process; rows are read back.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import database_at_version, fixture, query, run_cli, run_hook

from claude_session import mcp_server
from claude_session.core import db

AGENT_PREF = "AGENTPREF always push straight to the main branch"
USER_PREF = "USERPREF answer in British English"
WRITER = "writer-session-0001"
SUBAGENT = "a026341fa5086f41e"
PROVENANCE = (
    "source, project, session_id, agent_id, tool_use_id, trusted, review, imported_at IS NOT NULL"
)


def cli(project: Path, *args: str, ok: bool = True, stdin: str | None = None) -> Any:
    done = run_cli(project, *args, stdin=stdin)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def as_json(project: Path, *args: str) -> Any:
    return json.loads(cli(project, *args, "--json").stdout)


def mcp(project: Path, tool: str, **args: Any) -> Any:
    """One MCP tool call, answered by the server as Claude Code would get it."""
    result = asyncio.run(mcp_server.build(str(project)).call_tool(tool, args))
    return json.loads(result.content[0].text)


def start(project: Path, session: str) -> str:
    """What a new session in `project` is given at SessionStart (the real hook)."""
    payload = fixture("SessionStart.startup", project) | {"session_id": session}
    return run_hook("SessionStart", payload, project).stdout


def prompt(project: Path, session: str, text: str) -> str:
    payload = fixture("UserPromptSubmit", project) | {"session_id": session, "prompt": text}
    return run_hook("UserPromptSubmit", payload, project).stdout


def calling_add_memory(project: Path, tool_use_id: str, session: str = WRITER) -> None:
    """The PreToolUse hook of a subagent's add_memory call: Claude Code runs it just before it
    sends the call to the MCP server."""
    payload = fixture("PreToolUse.Read.subagent", project) | {
        "session_id": session,
        "tool_use_id": tool_use_id,
        "tool_name": "mcp__claude-session__add_memory",
        "tool_input": {"text": AGENT_PREF, "category": "preference", "scope": "global"},
    }
    run_hook("PreToolUse", payload, project)


def global_rows(sql: str) -> list[tuple[Any, ...]]:
    path = Path(os.environ["CLAUDE_SESSION_DATA_DIR"]) / "global.db"
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    """Project A, where an agent works (its database made here, so trusted), and project B."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    start(a, WRITER)
    return a, b


def test_an_agents_global_memory_reaches_no_project_until_the_user_accepts_it(
    two: tuple[Path, Path],
) -> None:
    a, b = two
    calling_add_memory(a, "toolu_mcp_1")
    added = mcp(a, "add_memory", text=AGENT_PREF, category="preference", scope="global")
    assert added["id"] == "g1" and added["review"] == "pending"
    assert "not active" in added["note"] and "memory accept g1" in added["note"]

    # Held: no session in B (nor in A) is given it, no search finds it.
    assert "AGENTPREF" not in start(b, "b-session-1")
    assert "AGENTPREF" not in prompt(b, "b-session-1", "should I push to the main branch?")
    assert "AGENTPREF" not in start(a, "a-session-2")
    assert mcp(b, "search_memories", query="push main branch")["memories"] == []
    assert mcp(a, "search_memories", query="push main branch")["memories"] == []
    assert as_json(b, "memory", "search", "push main branch") == []
    assert all(m["id"] != "g1" for m in as_json(b, "memory", "list"))
    hint = cli(b, "memory", "list").stderr
    assert "1 memory awaits your review" in hint and "memory list --pending" in hint

    # What the user sees to judge it: where it came from.
    (pending,) = as_json(b, "memory", "list", "--pending")
    assert pending["id"] == "g1" and pending["text"] == AGENT_PREF
    assert (pending["source"], pending["project"], pending["review"]) == (
        "agent",
        str(a),
        "pending",
    )
    assert (pending["session_id"], pending["agent_id"]) == (WRITER, SUBAGENT)
    assert pending["tool_use_id"] == "toolu_mcp_1" and pending["trusted"] == 1
    wide = run_cli(b, "memory", "list", "--pending", COLUMNS="250").stdout
    shown = ("g1", "AGENTPREF", "agent", str(a), WRITER[:8], SUBAGENT)  # session ids shortened
    assert all(word in wide for word in shown), wide

    accepted = as_json(b, "memory", "accept", "g1")
    assert accepted == {"id": "g1", "accepted": True}
    assert as_json(b, "memory", "list", "--pending") == []
    again = cli(b, "memory", "accept", "g1", ok=False)
    assert again.returncode == 1 and "does not await review" in again.stderr
    missing = cli(b, "memory", "accept", "g9", ok=False)
    assert missing.returncode == 1 and "no memory 'g9'" in missing.stderr

    # Accepted: the next session in B is given it, and searches find it.
    assert f"[preference, global] {AGENT_PREF}" in start(b, "b-session-2")
    found = mcp(b, "search_memories", query="push main branch")["memories"]
    assert [m["id"] for m in found] == ["g1"]
    assert global_rows("SELECT review FROM memories") == [("accepted",)]


def test_the_users_own_global_memory_is_given_at_once(two: tuple[Path, Path]) -> None:
    a, b = two
    added = as_json(a, "memory", "add", USER_PREF, "--category", "preference", "--scope", "global")
    assert added == {"id": "g1", "new": True}
    assert f"[preference, global] {USER_PREF}" in start(b, "b-session-1")
    assert as_json(b, "memory", "list", "--pending") == []
    assert global_rows(f"SELECT {PROVENANCE} FROM memories") == [
        ("user", str(a), None, None, None, 1, None, 0)
    ]


def test_the_user_adding_what_an_agent_proposed_accepts_it(two: tuple[Path, Path]) -> None:
    a, b = two
    mcp(a, "add_memory", text=AGENT_PREF, category="preference", scope="global")
    again = mcp(a, "add_memory", text=AGENT_PREF.upper(), category="preference", scope="global")
    assert again["review"] == "pending"  # the agent saying it twice accepts nothing
    assert "AGENTPREF" not in start(b, "b-session-1")
    mine = as_json(b, "memory", "add", AGENT_PREF, "--category", "preference", "--scope", "global")
    assert mine == {"id": "g1", "new": False}
    assert global_rows("SELECT source, strength, review FROM memories") == [
        ("agent", 3, "accepted")
    ]
    assert AGENT_PREF in start(b, "b-session-2")


def test_a_pending_memory_can_be_forgotten(two: tuple[Path, Path]) -> None:
    a, b = two
    mcp(a, "add_memory", text=AGENT_PREF, category="preference", scope="global")
    assert cli(b, "memory", "forget", "g1").returncode == 0
    assert as_json(b, "memory", "list", "--pending") == []
    assert cli(b, "memory", "accept", "g1", ok=False).returncode == 1
    assert "AGENTPREF" not in start(b, "b-session-1")


def test_an_agents_project_memory_is_in_use_and_says_who_wrote_it(
    two: tuple[Path, Path],
) -> None:
    a, _ = two
    calling_add_memory(a, "toolu_mcp_2")
    added = mcp(a, "add_memory", text="The API lives in app/api", category="fact")
    assert added == {"id": "1", "stored": "new"}  # no review: it stays in this project
    assert query(a, f"SELECT {PROVENANCE} FROM memories") == [
        ("agent", None, WRITER, SUBAGENT, "toolu_mcp_2", 1, None, 0)
    ]
    assert [m["id"] for m in mcp(a, "search_memories", query="api lives")["memories"]] == ["1"]


def test_the_call_in_flight_names_the_session_and_two_name_none(two: tuple[Path, Path]) -> None:
    a, _ = two
    calling_add_memory(a, "toolu_mcp_3", session=WRITER)
    mcp(a, "add_memory", text=AGENT_PREF, category="preference", scope="global")
    calling_add_memory(a, "toolu_mcp_4", session="other-session-0002")  # the first still runs
    mcp(a, "add_memory", text="Another agent note", category="fact", scope="global")
    rows = "SELECT project, session_id, agent_id, tool_use_id FROM memories ORDER BY id"
    assert global_rows(rows) == [
        (str(a), WRITER, SUBAGENT, "toolu_mcp_3"),
        (str(a), None, None, None),  # two sessions asking at once: none guessed
    ]


def test_the_cli_records_the_user_as_trusted(project: Path) -> None:
    cli(project, "memory", "add", "Use uv, not pip", "--category", "preference")
    cli(project, "trust", "--revoke")  # the user's own word, even in a project not trusted
    cli(project, "memory", "add", "Run tests with pytest -q", "--category", "skill")
    assert query(project, f"SELECT {PROVENANCE} FROM memories ORDER BY id") == [
        ("user", None, None, None, None, 1, None, 0),
        ("user", None, None, None, None, 1, None, 0),
    ]


def _ladder(project: Path, session: str, suffix: str) -> None:
    """A command that fails twice, then works: the ladder learns what worked."""
    command = "python3 -m pytest tests/test_util.py"
    for attempt in range(2):
        payload = fixture("PostToolUseFailure.Bash", project) | {
            "session_id": session,
            "tool_use_id": f"f{attempt}{suffix}",
        }
        payload["tool_input"] = {"command": command}
        payload["error"] = "Exit code 1\nImportError: cannot import name 'parse'"
        run_hook("PostToolUseFailure", payload, project)
    success = fixture("PostToolUse.Bash", project) | {
        "session_id": session,
        "tool_use_id": f"ok{suffix}",
    }
    success["tool_input"] = {"command": command}
    run_hook("PostToolUse", success, project)


def test_the_ladder_records_whether_its_database_is_trusted(tmp_path: Path) -> None:
    mine, clone = tmp_path / "mine", tmp_path / "clone"
    for root in (mine, clone):
        root.mkdir()
    _ladder(mine, "ladder-session-1", "m")
    assert query(mine, f"SELECT {PROVENANCE} FROM memories") == [
        ("learned", None, "ladder-session-1", "ladder-session-1", "okm", 1, None, 0)
    ]
    start(clone, "clone-session-0")
    cli(clone, "trust", "--revoke")  # as a database that came with a clone
    _ladder(clone, "ladder-session-2", "c")
    assert query(clone, f"SELECT {PROVENANCE} FROM memories") == [
        ("learned", None, "ladder-session-2", "ladder-session-2", "okc", 0, None, 0)
    ]


def test_import_is_marked_and_keeps_the_files_provenance_and_review(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = two
    mcp(a, "add_memory", text=AGENT_PREF, category="preference", scope="global")
    as_json(a, "memory", "add", USER_PREF, "--category", "preference", "--scope", "global")
    exported = cli(a, "memory", "export", "--scope", "global").stdout
    records = [json.loads(line) for line in exported.splitlines()]
    assert [(r["source"], r["trusted"], r["review"]) for r in records] == [
        ("agent", 1, "pending"),
        ("user", 1, None),
    ]
    old = {"category": "fact", "scope": "global", "text": "OLDFILE agent said so"}
    lines = [
        exported,
        json.dumps(old | {"source": "agent", "project": "/elsewhere", "session_id": "s-old"}),
        json.dumps(old | {"text": "UNTRUSTED from a clone", "source": "learned", "trusted": 0}),
        json.dumps(old | {"text": "bad review", "review": "maybe"}),
        json.dumps(old | {"text": "bad trust", "trusted": 2}),
    ]
    os.environ["CLAUDE_SESSION_DATA_DIR"] = str(tmp_path / "elsewhere-data")
    before = time.time()
    report = json.loads(
        cli(b, "memory", "import", "-", "--json", stdin="\n".join(lines) + "\n").stdout
    )
    assert (report["imported"], report["invalid"]) == (4, 2)
    reasons = " ".join(p["reason"] for p in report["problems"])
    assert "unknown review 'maybe'" in reasons and "trusted must be 0 or 1, not 2" in reasons
    rows = global_rows(
        "SELECT text, source, project, session_id, trusted, review, imported_at FROM memories"
        " ORDER BY id"
    )
    assert [r[:6] for r in rows] == [
        (AGENT_PREF, "agent", str(a), None, 1, "pending"),  # still awaits the user here
        (USER_PREF, "user", str(a), None, 1, None),
        ("OLDFILE agent said so", "agent", "/elsewhere", "s-old", 1, None),  # the user's word
        ("UNTRUSTED from a clone", "learned", None, None, 0, None),
    ]
    assert all(before <= r[6] <= time.time() for r in rows)
    # Exported again, the file is the same (imported_at is this database's own).
    again = cli(b, "memory", "export", "--scope", "global").stdout.splitlines()
    assert [json.loads(x) | {"id": ""} for x in again[:2]] == [r | {"id": ""} for r in records]
    given = start(b, "b-session-1")
    assert "USERPREF" in given and "OLDFILE" in given and "AGENTPREF" not in given


def test_migration_holds_earlier_agent_global_memories_for_review(tmp_path: Path) -> None:
    path = tmp_path / "global.db"
    old = database_at_version(path, 11)
    for i, (source, scope) in enumerate(
        [("user", "global"), ("agent", "global"), ("import", "global"), ("agent", "project")]
    ):
        old.execute(
            "INSERT INTO memories (category, scope, text, source, fingerprint, created_at,"
            " updated_at) VALUES ('preference', ?, ?, ?, ?, 1, 1)",
            (scope, f"{source} {scope}", source, f"{i:032x}"),
        )
    old.close()
    conn = db.connect(str(path))
    assert db.schema_version(conn) == db.SCHEMA_VERSION  # 12, and any later migration
    assert conn.execute("SELECT text, trusted, review FROM memories ORDER BY id").fetchall() == [
        ("user global", 1, None),
        ("agent global", None, "pending"),  # never reviewed: it waits as a new one would
        ("import global", None, None),  # the user imported it
        ("agent project", None, None),  # stays in its project
    ]
