"""Issue 44's smaller things, each as a user meets it: the installed CLI (and the real hook
processes), on projects recorded through recorded payloads."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import BUSY_SESSION, PYTHON, fixture, hook_env, query, run_cli, run_hook
from workbench import Workbench, git

CLI = str(Path(PYTHON).parent / "claude-session")


def ok(project: Path, *args: str, **env: str) -> str:
    done = run_cli(project, *args, **env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def words(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def bench(project: Path) -> Iterator[Workbench]:
    """A session with real snapshots: a.py written by a tool, twice."""
    (project / "a.py").write_text("A0\n")
    git(project, "init", "-q")
    wb = Workbench(project)
    wb.start()
    wb.prompt("build it")
    wb.write("a.py", b"A1\n")
    wb.write("a.py", b"A2\n")
    yield wb
    wb.close()


# --- prune takes the durations cost and export-otel take -----------------------------------


def test_prune_older_than_0d_takes_every_ended_session_and_leaves_a_live_one_whole(
    bench: Workbench,
) -> None:
    root = bench.root
    bench.send("SessionEnd")
    live = Workbench(root, session="live-session-0002")
    try:
        live.start()
        live.prompt("keep going")
        live.write("b.py", b"B1\n")
        noted = ok(root, "memory", "add", "a note for this session only", "--json")
        memory = json.loads(noted)["id"]
        live.rec.conn.execute(
            "UPDATE memories SET scope = 'session', holder = ?1, session_id = ?1,"
            " updated_at = updated_at - 86400 WHERE id = ?2",
            (live.session, memory),
        )
        live.rec.conn.execute(
            "INSERT INTO memory_uses (memory_id, scope, session_id, used_at, how)"
            " VALUES (?, 'project', ?, ?, 'prompt')",
            (memory, live.session, live.rec.now - 86400),
        )
        for when in ("90m", "2h", "3d", "1w", "0d", "30", "2026-11-01"):
            assert run_cli(root, "prune", "--older-than", when, "--dry-run").returncode == 0
        wrong = run_cli(root, "prune", "--older-than", "soon", "--dry-run")
        assert wrong.returncode == 2 and "90m, 2h, 3d, 1w" in wrong.stderr
        said = words(ok(root, "prune", "--older-than", "0d", "--dry-run"))
        assert "from 1 session that ended before now" in said, said
        done = json.loads(ok(root, "prune", "--older-than", "0d", "--yes", "--json"))
        assert done["rows_removed"]["events"] > 0
        events = dict(query(root, "SELECT session_id, count(*) FROM events GROUP BY session_id"))
        assert bench.session not in events and events[live.session] >= 4
        # what the live session needs stays: its snapshots, its session memory, what it was given
        assert query(
            root,
            "SELECT count(*) FROM vcs_tags WHERE session_id = ? AND status = 'captured'",
            (live.session,),
        )[0][0]
        assert query(root, "SELECT count(*) FROM memories WHERE id = ?", (memory,))[0][0] == 1
        given = "SELECT count(*) FROM memory_uses WHERE session_id = ?"
        assert query(root, given, (live.session,))[0][0] == 1
    finally:
        live.close()


# --- a group run without a command lists ----------------------------------------------------


def test_state_memory_and_daemon_alone_list_and_the_bare_command_prints_its_help(
    project: Path,
) -> None:
    ok(project, "state", "set", "release", "1.2")
    ok(project, "memory", "add", "the tests run with ./test.sh")
    assert "release" in ok(project, "state") and "1.2" in ok(project, "state")
    assert json.loads(ok(project, "state", "--json")) == json.loads(
        ok(project, "state", "list", "--json")
    )
    assert "./test.sh" in ok(project, "memory")
    assert [m["text"] for m in json.loads(ok(project, "memory", "--json"))] == [
        "the tests run with ./test.sh"
    ]
    assert json.loads(ok(project, "daemon", "--json"))["running"] is False
    import subprocess

    bare = subprocess.run([CLI], capture_output=True, text=True, env=hook_env(project))
    shown = bare.stdout + bare.stderr
    assert "\\n" not in shown and "Usage: claude-session" in shown
    assert "\n  state " in shown  # the commands, a line each


# --- revert --dry-run says when the real revert would refuse ------------------------------


def test_revert_dry_run_says_the_revert_refuses_without_force_and_why(bench: Workbench) -> None:
    root = bench.root
    frame = f"{bench.session}:2"
    (root / "notes.md").write_text("the user's own notes\n")  # by hand, no tool call
    bench.prompt()  # the next turn's snapshot captures it
    bench.write("a.py", b"A3\n")
    said = words(ok(root, "revert", frame, "--dry-run"))
    assert "without --force the revert will refuse: these files were changed outside" in said
    assert "notes.md" in said
    plan = json.loads(ok(root, "revert", frame, "--dry-run", "--json"))
    assert "notes.md" in plan["needs_force"] and "--force" in plan["needs_force"]
    refused = run_cli(root, "revert", frame, "--yes")
    assert refused.returncode == 1 and "notes.md" in refused.stderr
    assert (root / "notes.md").exists() and (root / "a.py").read_text() == "A3\n"
    forced = words(ok(root, "revert", frame, "--dry-run", "--force"))
    assert "without --force" not in forced
    assert json.loads(ok(root, "revert", frame, "--dry-run", "--force", "--json"))["needs_force"]
    clean = json.loads(ok(root, "revert", frame, "--dry-run", "--json", "--files", "a.py"))
    assert clean["needs_force"] is None


# --- after prune, the timeline offers no snapshot that is gone -----------------------------


def test_timeline_after_prune_names_no_pruned_snapshot_and_diff_says_pruned(
    bench: Workbench,
) -> None:
    root = bench.root
    bench.send("SessionEnd")
    before = json.loads(ok(root, "timeline", "--json"))["frames"]
    commits = {f["snapshot_commit"][:8] for f in before if f["snapshot_commit"]}
    assert commits
    ok(root, "prune", "--older-than", "0d", "--yes")
    after = json.loads(ok(root, "timeline", "--json"))["frames"]
    assert [f["snapshot_commit"] for f in after] == [None] * len(after)
    assert {f["snapshot"] for f in after if f["frame"] in {g["frame"] for g in before}} >= {
        "pruned"
    }
    for args in (["timeline"], ["timeline", "--tree"], ["timeline", "--wide"]):
        shown = ok(root, *args)
        assert not [c for c in commits if c in shown], shown
        assert "pruned" in shown
    last = str(bench.last_frame())
    diff = run_cli(root, "diff", "1", last)
    assert "was pruned" in words(diff.stdout + diff.stderr)
    revert = run_cli(root, "revert", "2", "--dry-run")
    assert revert.returncode == 1 and "was pruned" in words(revert.stderr)


# --- status says what the restored block held ----------------------------------------------


def test_status_says_what_the_block_after_a_compaction_restored(busy: Path) -> None:
    waiting = words(ok(busy, "status"))
    assert "not restored yet (saved for it: 1 prompt, 2 agents, 2 claims, 1 error)" in waiting
    compact = fixture("SessionStart.compact", busy) | {"session_id": BUSY_SESSION}
    run_hook("SessionStart", compact, busy)
    line = next(x for x in ok(busy, "status").splitlines() if x.startswith("last compaction"))
    shown = words(line)
    found = re.search(r"restored at \d\d:\d\d:\d\d: (.*) \(`claude-session restore`\)", shown)
    assert found, shown
    held = found.group(1)
    assert "1 prompt" in held and "open error" in held and "live subagents" in held, held
    block = json.loads(ok(busy, "status", "--json"))["now"]["last_compaction"]["block"]
    assert block["sections"]["Task (latest user prompts, oldest first)"] == 1
    given = ok(busy, "restore")
    for title, n in block["sections"].items():
        assert f"## {title}" in given
        assert n >= 1


# --- "still working" once --------------------------------------------------------------------


def test_a_conflict_warning_says_still_working_once(project: Path) -> None:
    session = {"session_id": BUSY_SESSION}
    run_hook("SessionStart", fixture("SessionStart.startup", project) | session, project)
    prompt = fixture("UserPromptSubmit", project) | session | {"prompt": "fix shared.py"}
    run_hook("UserPromptSubmit", prompt, project)
    for name in ("PreToolUse.Agent", "SubagentStart", "PostToolUse.Agent"):
        run_hook(name.split(".")[0], fixture(name, project) | session, project)
    child = fixture("SubagentStart", project)["agent_id"]
    target = {"file_path": str(project / "shared.py"), "content": "x\n"}

    def write(agent: str | None, use: str) -> dict[str, Any] | None:
        answer = None
        for name in ("PreToolUse.Write", "PostToolUse.Write"):
            payload = fixture(name, project) | session | {"tool_input": target}
            payload |= {"tool_use_id": use}
            payload.pop("agent_id", None)
            payload.pop("agent_type", None)
            if agent:
                payload |= {"agent_id": agent, "agent_type": "general-purpose"}
            done = run_hook(name.split(".")[0], payload, project).json()
            answer = answer or done
        return answer

    write(None, "toolu_main_write")
    warned = write(child, "toolu_child_write")
    assert warned is not None
    text = warned["hookSpecificOutput"]["additionalContext"]
    assert "your parent, the main thread" in text, text
    assert "still working on: fix shared.py" in text, text
    assert "still working, working on" not in text and text.count("working") == 1, text


# --- uninstall reports what it removed -------------------------------------------------------


def test_uninstall_reports_only_what_it_removed(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {"CLAUDE_CONFIG_DIR": str(home / ".claude"), "HOME": str(home)}
    local = project / ".claude" / "settings.local.json"
    shared = project / ".claude" / "settings.json"
    ok(project, "install", **env)
    done = ok(project, "uninstall", **env).strip().splitlines()
    assert len(done) == 1 and done[0].startswith(f"removed claude-session hooks from {local}")
    assert str(shared) not in "\n".join(done)
    again = words(ok(project, "uninstall", **env))
    assert again == f"nothing to do: no claude-session hooks or status line in {local} or {shared}"
    shared.write_text(json.dumps({"model": "team-model"}))
    said = json.loads(ok(project, "uninstall", "--json", **env))["messages"]
    assert said == [again]


# --- digits that are a session's id ----------------------------------------------------------


def test_timeline_reads_digits_as_the_session_they_name(project: Path) -> None:
    git(project, "init", "-q")
    for session in ("329", "2", "latest-session-0003"):
        wb = Workbench(project, session=session)
        try:
            wb.start()
            wb.prompt(f"work of {session}")
            wb.write(f"{session}.py", b"x\n")
            wb.write(f"{session}.py", b"y\n")
        finally:
            wb.close()

    def session_of(*args: str) -> str:
        return str(json.loads(ok(project, "timeline", *args, "--json"))["session_id"])

    latest = json.loads(ok(project, "timeline", "--json"))
    assert latest["session_id"] == "latest-session-0003" and len(latest["frames"]) >= 3
    assert session_of("329") == "329"  # a whole id: the session, never frame 329
    assert session_of("32") == "329"  # the start of one id alone, and no frame 32
    assert session_of("2") == "2"  # a whole id wins over frame 2 of the latest session
    assert session_of("1") == "latest-session-0003"  # no session starts with 1: frame 1
    # the start of 329 alone, though the latest session has a frame 3: timeline asks for a
    # session, so the session it names wins; `:3` is the frame
    assert session_of("3") == "329"
    assert session_of("3:") == "329"
    assert session_of(":3") == "latest-session-0003"


# --- cost: a transcript never there is not "gone" --------------------------------------------

SESSION = "cost-session-0001"


def transcript_lines(at: str) -> str:
    """A user prompt and one model response, as Claude Code writes them."""
    entries = [
        {"type": "user", "promptId": "p1", "sessionId": SESSION, "timestamp": at}
        | {"message": {"role": "user", "content": "do it"}, "uuid": "u1"},
        {"type": "assistant", "sessionId": SESSION, "timestamp": at, "uuid": "a1"}
        | {
            "message": {
                "id": "m1",
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-4-5",
                "content": [{"type": "text", "text": "ok"}],
                "usage": {"input_tokens": 1000, "output_tokens": 200},
            }
        },
    ]
    return "".join(json.dumps(e) + "\n" for e in entries)


def test_cost_says_gone_only_for_a_transcript_it_read_and_keeps_its_figures(
    project: Path, tmp_path: Path
) -> None:
    config = tmp_path / "claude-config"
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    main = config / "projects" / "-p" / f"{SESSION}.jsonl"
    base = {"session_id": SESSION, "transcript_path": str(main), "cwd": str(project)}
    start = fixture("SessionStart.startup", project) | base
    run_hook("SessionStart", start, project, env=env)
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project) | base, project, env=env)
    never = run_cli(project, "cost", "--session", SESSION, **env)
    assert never.returncode == 0, never.stderr
    assert "transcript(s) gone" not in never.stderr
    assert f"no transcript recorded at {main}" in words(never.stderr)
    main.parent.mkdir(parents=True)
    main.write_text(transcript_lines("2026-11-29T08:00:00.000Z"))
    read = json.loads(ok(project, "cost", "--session", SESSION, "--json", **env))
    spent = read["total"]["cost_usd"]
    assert read["total"]["messages"] == 1 and spent > 0
    main.unlink()
    gone = run_cli(project, "cost", "--session", SESSION, **env)
    assert "1 transcript(s) gone (read before" in words(gone.stderr), gone.stderr
    assert "no transcript recorded" not in gone.stderr
    figures = json.loads(ok(project, "cost", "--session", SESSION, "--json", **env))
    assert figures["total"]["cost_usd"] == spent  # what was read still counts
    assert figures["transcripts"]["missing"] == [str(main)]
    assert figures["transcripts"]["never_read"] == []
    # a session whose events never named a transcript: said once, no "gone"
    other = {"session_id": "no-transcript-0002", "cwd": str(project)}
    bare = fixture("SessionStart.startup", project) | other
    bare.pop("transcript_path")
    run_hook("SessionStart", bare, project, env=env)
    none = run_cli(project, "cost", "--session", "no-transcript-0002", **env)
    assert none.returncode == 0, none.stderr
    said = words(none.stderr)
    assert said.count("no transcript recorded for session no-transcript-0002") == 1, said
    assert "transcript(s) gone" not in said
