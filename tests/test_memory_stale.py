"""Memories that know what they were about: the files a memory names, and a memory whose files
changed never given as fact.

As a user meets it: `memory add --file`, an agent edits that file (the real hooks, recorded
payloads), and the next session's SessionStart (the hook's stdout) gives the memory marked
possibly stale, naming the file, when it changed and which agent changed it; or holds it back
(`memory_stale = hold`) saying how many. `memory list --stale`, `memory verify`, `memory
outcome`, `memory show`, `status`, and an agent's memory through the MCP server (its files
named, or inferred from what it read in that turn; the error open then, and whether it passed).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from conftest import database_at_version, fixture, query, run_cli, run_hook, write_config

from claude_session import mcp_server
from claude_session.core import db, memory_files

FACT = "FACT-APP: app.py reads its port from PORT"
WRITER = "writer-session-0001"
SUBAGENT = "a026341fa5086f41e"

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a token shape the redaction knows


def cli(project: Path, *args: str, ok: bool = True) -> Any:
    done = run_cli(project, *args)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def as_json(project: Path, *args: str) -> Any:
    return json.loads(cli(project, *args, "--json").stdout)


def start(project: Path, session: str) -> str:
    """The additionalContext a new session is given at SessionStart (the real hook)."""
    payload = fixture("SessionStart.startup", project) | {"session_id": session}
    answer = run_hook("SessionStart", payload, project).json()
    if answer is None:
        return ""
    return str(answer["hookSpecificOutput"]["additionalContext"])


def agent_edits(project: Path, session: str, path: str, content: str, call: str) -> None:
    """The main agent's Edit of `path`, as Claude Code runs it: PreToolUse, the file written,
    PostToolUse."""
    for name, hook in (("PreToolUse.Edit", "PreToolUse"), ("PostToolUse.Edit", "PostToolUse")):
        payload = fixture(name, project) | {"session_id": session, "tool_use_id": call}
        payload["tool_input"]["file_path"] = str(project / path)
        if hook == "PostToolUse":
            (project / path).write_text(content)
        run_hook(hook, payload, project)


def utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


def test_a_memory_about_a_file_an_agent_then_edits_is_given_marked_stale(project: Path) -> None:
    (project / "app.py").write_text("PORT = int(os.environ['PORT'])\n")
    added = as_json(project, "memory", "add", FACT, "--file", "app.py")
    assert added == {"id": "1", "new": True, "files": ["app.py"]}
    (recorded_at,) = query(project, "SELECT recorded_at FROM memory_files")[0]
    first = start(project, "session-one")
    assert f"- [fact, project] {FACT}" in first and "stale" not in first.lower()

    agent_edits(project, WRITER, "app.py", "PORT = 8080\n", "toolu_edit_1")
    edited_at = query(project, "SELECT last_touched_at FROM file_claims")[0][0]
    modified = os.stat(project / "app.py").st_mtime
    given = start(project, "session-two")
    assert f"- [fact, project, POSSIBLY STALE] {FACT}" in given
    said = (
        f"  possibly stale: app.py changed since it was recorded ({utc(recorded_at)}): its"
        f" content differs; file modified {utc(modified)}; edited by the main agent of session"
        f" {WRITER[:8]} (Edit, {utc(edited_at)})"
    )
    assert said in given.splitlines(), given

    stale = as_json(project, "memory", "list", "--stale")
    assert [(m["id"], m["changes"]) for m in stale] == [
        ("1", [said.removeprefix("  possibly stale: ")])
    ]
    shown = as_json(project, "memory", "show", "1")
    assert shown["possibly_stale"] is True and shown["added_by"] == "you (the CLI)"
    (file,) = shown["files"]
    assert (file["path"], file["state"], file["size"]) == (
        "app.py",
        "changed",
        len("PORT = int(os.environ['PORT'])\n"),
    )
    assert file["changed_by"]["agent_id"] == "main" and file["changed_by"]["session_id"] == WRITER
    status = as_json(project, "status")["memories"]
    assert status == {"count": 1, "about_files": 1, "possibly_stale": 1}
    assert "1 possibly stale" in cli(project, "status").stdout

    # Held back instead, by the configuration, and the injection says so.
    write_config(project, {"memory_stale": "hold"})
    held = start(project, "session-three")
    assert FACT not in held
    assert "1 possibly stale memory was withheld" in held and "memory list --stale" in held

    # A person checks it against today's file: no longer stale, given as fact again.
    verified = as_json(project, "memory", "verify", "1")
    assert [f["path"] for f in verified["files"]] == ["app.py"]
    assert as_json(project, "memory", "list", "--stale") == []
    assert f"- [fact, project] {FACT}" in start(project, "session-four")

    # It turned out false: kept as a dead end, never given as fact, with why (redacted).
    why = f"the suite failed with token {SECRET} set"
    done = as_json(project, "memory", "outcome", "1", "disproved", "--reason", why)
    shown = as_json(project, "memory", "show", "1")["outcome_reason"]
    assert done == {"id": "1", "outcome": "disproved", "outcome_reason": shown}
    assert shown.startswith("the suite failed with token [REDACTED:") and SECRET not in shown
    assert shown.endswith("] set")
    dead = start(project, "session-five")
    said = f"- [fact, project, DISPROVED: a dead end, not a fact ({shown})] {FACT}"
    assert said in dead and SECRET not in dead
    assert f"- [fact, project] {FACT}" not in dead


def test_a_touched_but_unchanged_file_is_not_stale_and_not_hashed_twice(project: Path) -> None:
    (project / "a.txt").write_text("same\n")
    cli(project, "memory", "add", "A-FACT about a.txt", "--file", "a.txt")
    earlier = time.time() - 100  # touched, content the same (and its time long settled)
    os.utime(project / "a.txt", (earlier, earlier))
    assert "POSSIBLY STALE" not in start(project, "s1")
    seen = query(project, "SELECT seen_mtime_ns, seen_sha256 = sha256 FROM memory_files")
    assert seen == [(os.stat(project / "a.txt").st_mtime_ns, 1)]  # what the check hashed, kept


def test_a_change_within_the_file_systems_tick_is_still_seen(project: Path) -> None:
    """Same size, same time (a coarse clock), other content, right after it was recorded: a
    file modified that close to its recording is hashed, never trusted by its stat."""
    (project / "t.py").write_text("x = 1\n")
    cli(project, "memory", "add", "TICK-FACT x is one", "--file", "t.py")
    before = os.stat(project / "t.py")
    (project / "t.py").write_text("x = 2\n")
    os.utime(project / "t.py", ns=(before.st_atime_ns, before.st_mtime_ns))
    assert "- [fact, project, POSSIBLY STALE] TICK-FACT x is one" in start(project, "s1")


def test_a_deleted_file_and_a_file_outside_the_project(project: Path, tmp_path: Path) -> None:
    (project / "gone.py").write_text("x = 1\n")
    cli(project, "memory", "add", "GONE-FACT about gone.py", "--file", "gone.py")
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    refused = cli(project, "memory", "add", "nope", "--file", str(outside), ok=False)
    assert refused.returncode == 1 and "outside the project" in refused.stderr
    missing = cli(project, "memory", "add", "nope", "--file", "nosuch.py", ok=False)
    assert missing.returncode == 1 and "no file nosuch.py" in missing.stderr
    (project / "gone.py").unlink()
    given = start(project, "s1")
    assert "- [fact, project, POSSIBLY STALE] GONE-FACT about gone.py" in given
    assert "possibly stale: gone.py is no longer there (deleted or moved) since it was" in given

    # A database naming files outside the project (a clone's): never read, never said.
    conn = db.connect(str(project / ".claude-session.db"))
    with db.Immediate(conn):
        conn.execute(
            "INSERT INTO memories (category, scope, text, source, fingerprint, created_at,"
            " updated_at, trusted) VALUES ('fact', 'project', 'HOSTILE', 'user', ?, 1, 1, 1)",
            ("f" * 32,),
        )
        for path in (str(outside), "../outside.txt", "link.txt"):
            conn.execute(
                "INSERT INTO memory_files (memory_id, path, sha256, size, mtime_ns,"
                " recorded_at) VALUES (last_insert_rowid(), ?, ?, 1, 1, 1)",
                (path, "0" * 64),
            )
    conn.close()
    (project / "link.txt").symlink_to(outside)
    assert memory_files.hash_of(os.path.realpath(project), "link.txt") is None
    hostile = [line for line in start(project, "s2").splitlines() if "HOSTILE" in line]
    assert hostile == ["- [fact, project, POSSIBLY STALE] HOSTILE"]  # the link: not a file here


def mcp(project: Path, tool: str, **args: Any) -> Any:
    result = asyncio.run(mcp_server.build(str(project)).call_tool(tool, args))
    return json.loads(result.content[0].text)


def subagent_event(project: Path, name: str, call: str, **changes: Any) -> dict[str, Any]:
    return fixture(name, project) | {"session_id": WRITER, "tool_use_id": call} | changes


def test_an_agents_memory_records_its_turn_files_and_the_error_it_was_about(
    project: Path,
) -> None:
    (project / "hello.py").write_text("print('hi')\n")
    (project / "other.py").write_text("x = 1\n")
    prompt = fixture("UserPromptSubmit", project) | {"session_id": WRITER, "prompt": "fix it"}
    run_hook("UserPromptSubmit", prompt, project)
    for name, hook in (
        ("PreToolUse.Read.subagent", "PreToolUse"),
        ("PostToolUse.Read.subagent", "PostToolUse"),
    ):
        run_hook(hook, subagent_event(project, name, "toolu_read_1"), project)
    failure = subagent_event(project, "PostToolUseFailure.Bash", "toolu_fail_1", agent_id=SUBAGENT)
    failure["tool_input"] = {"command": "python3 hello.py"}
    failure["error"] = "Exit code 1\nNameError: name 'prnt' is not defined"
    run_hook("PreToolUse", failure | {"hook_event_name": "PreToolUse"}, project)
    run_hook("PostToolUseFailure", failure, project)

    def calling(call: str, tool_input: dict[str, Any]) -> None:
        payload = subagent_event(project, "PreToolUse.Read.subagent", call)
        payload |= {"tool_name": "mcp__claude-session__add_memory", "tool_input": tool_input}
        run_hook("PreToolUse", payload, project)

    calling("toolu_mcp_1", {"text": "hello.py misspells print"})
    inferred = mcp(
        project, "add_memory", text="HYP hello.py misspells print", category="fact", hypothesis=True
    )
    assert inferred["files"] == ["hello.py"] and "read or changed" in inferred["files_inferred"]
    row = query(
        project,
        "SELECT source, session_id, agent_id, tool_use_id, turn_no, files_inferred, outcome,"
        " error_id IS NOT NULL FROM memories WHERE id = 1",
    )
    assert row == [("agent", WRITER, SUBAGENT, "toolu_mcp_1", 1, 1, "hypothesis", 1)]
    run_hook(
        "PostToolUse",
        subagent_event(
            project,
            "PostToolUse.Read.subagent",
            "toolu_mcp_1",
            tool_name="mcp__claude-session__add_memory",
        ),
        project,
    )

    calling("toolu_mcp_2", {"text": "other"})
    named = mcp(
        project, "add_memory", text="NAMED other.py holds x", category="fact", files=["other.py"]
    )
    assert named["files"] == ["other.py"] and "files_inferred" not in named
    assert query(
        project,
        "SELECT path, files_inferred FROM memory_files JOIN memories ON id = memory_id ORDER BY id",
    ) == [
        ("hello.py", 1),
        ("other.py", 0),
    ]
    outside = mcp(project, "add_memory", text="x", category="fact", files=["/etc/passwd"])
    assert "outside the project" in outside["error"]

    # The error passes later: the memory shows it, and the next session is told.
    success = subagent_event(project, "PostToolUse.Bash", "toolu_ok_1", agent_id=SUBAGENT)
    success["tool_input"] = {"command": "python3 hello.py"}
    run_hook("PreToolUse", success | {"hook_event_name": "PreToolUse"}, project)
    run_hook("PostToolUse", success, project)
    shown = as_json(project, "memory", "show", "1")
    assert shown["error"]["resolution"] == "auto_fixed" and shown["turn_no"] == 1
    assert shown["added_by"] == f"an agent ({SUBAGENT})"

    # The file changes; the MCP search marks the memory, the next session is told.
    (project / "other.py").write_text("x = 2\n")
    found = {m["id"]: m for m in mcp(project, "search_memories", query="other holds")["memories"]}
    assert found["2"]["possibly_stale"][0].startswith("other.py changed since it was recorded")
    given = start(project, "next-session")
    assert "- [fact, project, POSSIBLY STALE] NAMED other.py holds x" in given
    (resolved_at,) = query(project, "SELECT resolved_at FROM error_log")[0]
    lines = given.splitlines()
    at = lines.index("- [fact, project, hypothesis, not verified] HYP hello.py misspells print")
    said = f"  the error it was about (Bash: python3 hello.py) passed later ({utc(resolved_at)})"
    assert lines[at + 1] == said


def test_a_memory_from_before_keeps_working_its_provenance_unknown(project: Path) -> None:
    """A database as version 24 left it, with a memory: upgraded, the memory is shown with
    no files, turn or outcome, never stale, and given as before."""
    conn = database_at_version(project / ".claude-session.db", 24)
    conn.execute(
        "INSERT INTO memories (category, scope, text, source, fingerprint, created_at,"
        " updated_at, trusted) VALUES ('fact', 'project', 'OLD-FACT from before', 'agent', ?,"
        " 1, 1, 1)",
        ("a" * 32,),
    )
    conn.close()
    shown = as_json(project, "memory", "show", "1")
    assert (shown["files"], shown["turn_no"], shown["outcome"], shown["error"]) == (
        [],
        None,
        None,
        None,
    )
    assert shown["possibly_stale"] is False
    assert shown["added_by"] == "an agent (which one unknown)"
    cli(project, "trust", "--yes")  # made by hand here: the user says it is theirs
    assert "- [fact, project] OLD-FACT from before" in start(project, "s-new")
    assert as_json(project, "memory", "list", "--stale") == []


def test_an_import_with_bad_files_is_refused_whole(project: Path) -> None:
    good = {"category": "fact", "scope": "project", "text": "IMPORTED about x.py"}
    files = [{"path": "x.py", "sha256": "b" * 64, "size": 3, "mtime_ns": 1, "recorded_at": 5}]
    lines = [
        json.dumps(good | {"files": files}),
        json.dumps(good | {"text": "BAD-1", "files": [{"path": "/etc/passwd"}]}),
        json.dumps(good | {"text": "BAD-2", "files": [{"path": "a/../../b"}]}),
        json.dumps(good | {"text": "BAD-3", "files": [{"path": "y.py", "sha256": "nothex"}]}),
    ]
    done = run_cli(project, "memory", "import", "-", "--json", stdin="\n".join(lines) + "\n")
    report = json.loads(done.stdout)
    assert (report["imported"], report["invalid"]) == (1, 3)
    assert query(project, "SELECT text FROM memories") == [("IMPORTED about x.py",)]
    assert query(project, "SELECT path, sha256, recorded_at FROM memory_files") == [
        ("x.py", "b" * 64, 5.0)
    ]
    # No x.py here: what the memory was about is not here, and it says so.
    (stale,) = as_json(project, "memory", "list", "--stale")
    assert stale["changes"] == [
        "x.py is no longer there (deleted or moved) since it was recorded (1970-01-01 00:00 UTC)"
    ]


def test_a_pruned_memory_takes_its_files_along(project: Path) -> None:
    (project / "p.py").write_text("p = 1\n")
    cli(project, "memory", "add", "PRUNED about p.py", "--file", "p.py", "--category", "context")
    conn = db.connect(str(project / ".claude-session.db"))
    with db.Immediate(conn):
        conn.execute("DELETE FROM memories")  # as prune drops it
    conn.close()
    assert query(project, "SELECT count(*) FROM memory_files") == [(0,)]
    cli(project, "memory", "add", "A NEW one, no file", "--category", "context")
    assert as_json(project, "memory", "show", "1")["files"] == []  # its id reused: no files


def test_in_a_git_repository_the_commit_is_recorded_and_a_prompt_is_told_too(
    project: Path,
) -> None:
    import subprocess

    (project / "lib.py").write_text("def f(): return 1\n")
    git = ["git", "-C", str(project), "-c", "user.email=t@t", "-c", "user.name=t"]
    for args in (["init", "-q"], ["add", "lib.py"], ["commit", "-qm", "one"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    cli(project, "memory", "add", "LIBFACT lib.f returns one", "--file", "lib.py")
    assert as_json(project, "memory", "show", "1")["files"][0]["git_commit"] == head.strip()
    (project / "lib.py").write_text("def f(): return 2\n")
    payload = fixture("UserPromptSubmit", project) | {
        "session_id": "prompt-session",
        "prompt": "what does lib.f return?",
    }
    answer = run_hook("UserPromptSubmit", payload, project).json()
    assert answer is not None
    told = answer["hookSpecificOutput"]["additionalContext"]
    assert "- [fact, project, POSSIBLY STALE] LIBFACT lib.f returns one" in told
    assert "possibly stale: lib.py changed since it was recorded" in told


def test_what_the_ladder_learns_is_about_the_file_at_fault(project: Path) -> None:
    """A command failing twice in hello.py, then passing: the learning names hello.py, and
    is possibly stale once hello.py changes."""
    (project / "hello.py").write_text("print(1)\n")
    command = "python3 hello.py"
    error = (
        "Exit code 1\nTraceback (most recent call last):\n"
        f'  File "{project / "hello.py"}", line 1, in <module>\n'
        "    prnt(1)\nNameError: name 'prnt' is not defined"
    )
    for attempt in range(2):
        failure = fixture("PostToolUseFailure.Bash", project) | {
            "session_id": WRITER,
            "tool_use_id": f"toolu_f{attempt}",
            "tool_input": {"command": command},
            "error": error,
        }
        run_hook("PostToolUseFailure", failure, project)
    success = fixture("PostToolUse.Bash", project) | {"session_id": WRITER}
    success["tool_input"] = {"command": command}
    run_hook("PostToolUse", success, project)
    rows = query(project, "SELECT source, path FROM memories JOIN memory_files ON id = memory_id")
    assert rows == [("learned", "hello.py")]
    assert as_json(project, "memory", "list", "--stale") == []
    (project / "hello.py").write_text("print(2)\n")
    (stale,) = as_json(project, "memory", "list", "--stale")
    assert stale["changes"][0].startswith("hello.py changed since it was recorded")


def test_a_change_past_the_hashed_first_16_mib_is_still_seen(project: Path) -> None:
    """A 24 MiB file changed at byte 20,000,000 (same size): the hash covers its first 16 MiB
    only, so its modification time tells, and the memory is given possibly stale."""
    big = project / "big.bin"
    big.write_bytes(bytes(24 * 1024 * 1024))
    assert big.stat().st_size > memory_files.HASH_CAP
    cli(project, "memory", "add", "BIG-FACT big.bin is all zeros", "--file", "big.bin")
    with big.open("r+b") as f:
        f.seek(20_000_000)
        f.write(b"\x01")
    settled = time.time() - 50  # long settled: no racy-clean hashing either
    os.utime(big, (settled, settled))
    assert big.stat().st_size == 24 * 1024 * 1024
    assert "- [fact, project, POSSIBLY STALE] BIG-FACT big.bin is all zeros" in start(project, "s1")
    stale = as_json(project, "memory", "list", "--stale")
    assert [m["text"] for m in stale] == ["BIG-FACT big.bin is all zeros"], stale
