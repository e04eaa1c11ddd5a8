"""Time travel through the real hooks and the real CLI: executions, frames with snapshots taken
by the real capture process, timeline, diff, revert and its undo, fork, and the user's own
repository untouched throughout."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import PYTHON, fixture, hook_env, query, run_hook, wait_for

from claude_session.core import frames
from claude_session.services.timetravel import timetravel

CLI = str(Path(PYTHON).parent / "claude-session")
SESSION = "tt-session-0001"
GIT_ENV = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@e", "GIT_COMMITTER_NAME": "u"}
GIT_ENV |= {"GIT_COMMITTER_EMAIL": "u@e", "GIT_OPTIONAL_LOCKS": "0"}


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, env=env, check=True
    ).stdout.decode()


def repo_state(root: Path) -> dict[str, Any]:
    index = root / ".git" / "index"
    return {
        "index": (index.read_bytes(), index.stat().st_mtime_ns),
        "status": git(root, "status", "--porcelain=v2", "--branch", "--untracked-files=all"),
        "stash": git(root, "stash", "list"),
        "refs": git(root, "for-each-ref"),
        "objects": git(root, "count-objects", "-v"),
    }


def files_of(root: Path) -> dict[str, bytes]:
    skip = (".git", ".claude-session.db")
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.relative_to(root).as_posix().startswith(skip)
    }


def cli(project: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = hook_env(project)
    done = subprocess.run(
        [CLI, "--project", str(project), *args], capture_output=True, text=True, env=env
    )
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def send(project: Path, name: str, event: str | None = None, **changes: Any) -> dict[str, Any]:
    payload = fixture(name, project) | {"session_id": SESSION} | changes
    payload.pop("agent_id", None) if "agent_id" not in changes else None
    result = run_hook(event or name.split(".")[0], payload, project)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else {}


def tool(project: Path, name: str, tool_use_id: str, tool_input: dict[str, Any]) -> None:
    send(project, f"PreToolUse.{name}", tool_use_id=tool_use_id, tool_input=tool_input)


def done_tool(project: Path, name: str, tool_use_id: str, tool_input: dict[str, Any]) -> None:
    send(project, f"PostToolUse.{name}", tool_use_id=tool_use_id, tool_input=tool_input)


def settled(project: Path) -> bool:
    return not query(project, "SELECT 1 FROM vcs_tags WHERE status = 'pending'")


@pytest.fixture
def repo(project: Path) -> Path:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("VALUE = 1\n")
    (project / "old.txt").write_text("to be removed\n")
    (project / ".gitignore").write_text("*.log\n")
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-qm", "init")
    (project / "scratch.log").write_text("ignored\n")
    return project


def play_session(project: Path) -> dict[str, dict[str, bytes]]:
    """Prompt; Write a new file; Edit it; Bash: sed -i, rm, create. The files after each."""
    seen = {}
    send(project, "SessionStart.startup")
    send(project, "UserPromptSubmit", prompt="make the value configurable")
    # The model's first answer takes longer than the first snapshot. From here on no pause:
    # each tool starts before the last one's snapshot is taken, and no hook waits for it.
    assert wait_for(lambda: settled(project), 30)
    new = {"file_path": str(project / "src" / "config.py"), "content": "LIMIT = 10\n"}
    tool(project, "Write", "t1", new)
    (project / "src" / "config.py").write_text("LIMIT = 10\n")
    done_tool(project, "Write", "t1", new)
    seen["after_write"] = files_of(project)
    edit = {"file_path": str(project / "src" / "app.py"), "old_string": "1", "new_string": "2"}
    # No pause: the Edit's PreToolUse keeps app.py as it is for the Write's snapshot.
    tool(project, "Edit", "t2", edit)
    (project / "src" / "app.py").write_text("VALUE = 2\n")
    done_tool(project, "Edit", "t2", edit)
    seen["after_edit"] = files_of(project)
    command = {"command": "sed -i s/2/3/ src/app.py && rm old.txt && echo new > made.txt"}
    tool(project, "Bash", "t3", command)
    subprocess.run(["sh", "-c", command["command"]], cwd=project, check=True)
    done_tool(project, "Bash", "t3", command)
    seen["after_bash"] = files_of(project)
    send(project, "Stop")
    assert wait_for(lambda: settled(project), 30)
    return seen


def frame_of(project: Path, tool_use_id: str) -> int:
    return int(
        query(project, "SELECT frame_no FROM tool_calls WHERE tool_use_id = ?", (tool_use_id,))[0][
            0
        ]
    )


def test_a_session_is_recorded_as_turns_tool_calls_and_frames(repo: Path) -> None:
    play_session(repo)
    turns = query(
        repo, "SELECT turn_no, prompt, status FROM turns WHERE session_id = ?", (SESSION,)
    )
    assert turns == [(1, "make the value configurable", "done")]
    calls = query(
        repo,
        "SELECT tool_use_id, tool_name, status, turn_id IS NOT NULL, frame_no IS NOT NULL"
        " FROM tool_calls ORDER BY tool_use_id",
    )
    assert calls == [
        ("t1", "Write", "succeeded", 1, 1),
        ("t2", "Edit", "succeeded", 1, 1),
        ("t3", "Bash", "succeeded", 1, 1),
    ]
    kinds = [
        r[0]
        for r in query(
            repo, "SELECT kind FROM frames WHERE session_id = ? ORDER BY frame_no", (SESSION,)
        )
    ]
    assert kinds == ["session_start", "turn_start", "tool", "tool", "tool", "turn_end"]
    tags = query(repo, "SELECT status, git_branch, git_head IS NOT NULL FROM vcs_tags")
    assert tags and all(t == ("captured", "master", 1) for t in tags)
    starts = query(repo, "SELECT source FROM session_starts WHERE session_id = ?", (SESSION,))
    assert starts == [("startup",)]
    timeline = json.loads(cli(repo, "timeline", SESSION[:6], "--json").stdout)
    assert [f["kind"] for f in timeline["frames"]] == kinds
    assert timeline["frames"][2]["files"] == ["src/config.py"]


def test_the_state_before_each_tool_call_is_recoverable_byte_for_byte(repo: Path) -> None:
    before_tree = repo_state(repo)
    seen = play_session(repo)
    write, edit, bash = frame_of(repo, "t1"), frame_of(repo, "t2"), frame_of(repo, "t3")
    diff = json.loads(cli(repo, "diff", f"{SESSION}:{edit}", f"{SESSION}:{bash}", "--json").stdout)
    assert {(s["path"]) for s in diff["files"]["stat"]} == {"src/app.py", "old.txt", "made.txt"}
    assert "-VALUE = 2" in diff["files"]["diff"] and "+VALUE = 3" in diff["files"]["diff"]
    text = cli(repo, "diff", f"{SESSION}:{write}", f"{SESSION}:{bash}", "--stat").stdout
    assert "claims added" in text and "src/app.py (+1 -1)" in text
    assert "…" not in text, text  # piped: whole lines, nothing cut (issue 32)
    # Back to before the Bash command (the frame after the Edit): byte for byte.
    plan = json.loads(cli(repo, "revert", f"{SESSION}:{edit}", "--dry-run", "--json").stdout)
    assert sorted((c["action"], c["path"]) for c in plan["changes"]) == [
        ("create", "old.txt"),
        ("delete", "made.txt"),
        ("restore", "src/app.py"),
    ]
    cli(repo, "revert", f"{SESSION}:{edit}", "--yes")
    assert files_of(repo) == seen["after_edit"]
    cli(repo, "revert", f"{SESSION}:{write}", "--yes")
    assert files_of(repo) == seen["after_write"]
    cli(repo, "revert", "--undo", "--yes")  # undo the second revert
    assert files_of(repo) == seen["after_edit"]
    cli(repo, "revert", f"{SESSION}:{bash}", "--yes")
    assert files_of(repo) == seen["after_bash"]
    names = [
        r[0] for r in query(repo, "SELECT name FROM timeline_events WHERE name LIKE 'Revert%'")
    ]
    assert names == ["RevertStarted", "RevertFinished"] * 4
    after = repo_state(repo)
    assert after["stash"] == before_tree["stash"] and after["refs"] == before_tree["refs"]
    assert after["objects"] == before_tree["objects"]
    assert after["index"] == before_tree["index"]


def test_revert_refuses_files_changed_outside_the_recorded_tool_calls(repo: Path) -> None:
    play_session(repo)
    edit = frame_of(repo, "t2")
    (repo / "src" / "app.py").write_text("VALUE = 'mine'\n")  # the user's own edit
    refused = cli(repo, "revert", f"{SESSION}:{edit}", "--yes", ok=False)
    assert refused.returncode == 1
    assert "src/app.py" in refused.stderr and "--force" in refused.stderr
    assert (repo / "src" / "app.py").read_text() == "VALUE = 'mine'\n"
    cli(repo, "revert", f"{SESSION}:{edit}", "--yes", "--files", "old.txt")
    assert (repo / "old.txt").exists() and (
        repo / "src" / "app.py"
    ).read_text() == "VALUE = 'mine'\n"
    cli(repo, "revert", f"{SESSION}:{edit}", "--yes", "--force")
    assert (repo / "src" / "app.py").read_text() == "VALUE = 2\n"


def test_revert_needs_yes_off_a_terminal_and_addresses_fail_clearly(repo: Path) -> None:
    play_session(repo)
    refused = cli(repo, "revert", f"{SESSION}:3", ok=False)
    assert refused.returncode == 1 and "--yes" in refused.stderr
    for address, words in (
        ("nosuch:1", "no session with frames starts with 'nosuch'"),
        (f"{SESSION}:99", "has frames 1 to"),
        (f"{SESSION}:x", "is not a number"),
        (f"{SESSION}@attempt:1", "0 attempt frames"),
    ):
        failed = cli(repo, "diff", address, f"{SESSION}:1", ok=False)
        assert failed.returncode == 1 and words in failed.stderr, (address, failed.stderr)


def test_fork_has_the_frames_files_and_its_first_session_gets_the_frames_state(
    repo: Path,
) -> None:
    seen = play_session(repo)
    edit = frame_of(repo, "t2")
    made = json.loads(cli(repo, "fork", f"{SESSION}:{edit}", "--label", "try-b", "--json").stdout)
    fork = Path(made["path"])
    assert made["made_with"].startswith("git worktree")
    expected = {k: v for k, v in seen["after_edit"].items() if k != "scratch.log"}  # ignored
    assert files_of(fork) == expected
    assert git(repo, "for-each-ref") == git(repo, "for-each-ref")  # no branch was added
    assert "try-b" not in git(repo, "branch", "--list")
    started = fixture("SessionStart.startup", fork) | {"session_id": "forked-0001"}
    answer = run_hook("SessionStart", started, fork)
    context = json.loads(answer.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"frame {edit} of session {SESSION}" in context
    assert "make the value configurable" in context
    # the state is the frame's, and says when that was (the fork's own database has no frames)
    made_at = query(
        repo, "SELECT created_at FROM frames WHERE session_id = ? AND frame_no = ?", (SESSION, edit)
    )[0][0]
    assert f"State as of {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(made_at))}." in context
    claimed = query(fork, "SELECT child_session_id, label FROM branches")
    assert claimed == [("forked-0001", "try-b")]
    tree = json.loads(cli(repo, "timeline", SESSION, "--tree", "--json").stdout)
    assert [(b["frame"], b["label"], b["path"]) for b in tree["branches"]] == [
        (edit, "try-b", str(fork))
    ]
    events = query(repo, "SELECT name, frame_no FROM timeline_events WHERE name = 'SessionForked'")
    assert events == [("SessionForked", edit)]


def test_a_folder_that_is_not_a_repository_gets_snapshots_too(project: Path) -> None:
    (project / "a.txt").write_text("one\n")
    send(project, "SessionStart.startup")
    write = {"file_path": str(project / "a.txt"), "content": "two\n"}
    tool(project, "Write", "w1", write)
    (project / "a.txt").write_text("two\n")
    done_tool(project, "Write", "w1", write)
    assert wait_for(lambda: settled(project), 30)
    cli(project, "revert", f"{SESSION}:1", "--yes")
    assert (project / "a.txt").read_text() == "one\n"
    assert not (project / ".git").exists()


def test_jj_pointers_are_the_commit_and_operation_ids(project: Path, tmp_path: Path) -> None:
    """jj cannot be installed here: a stand-in answers the two templates we ask for, and
    records its arguments, so the test also proves we never ask for the change id and never
    let jj snapshot the working copy."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "jj-calls"
    jj = bin_dir / "jj"
    jj.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {calls}\n'
        'case "$*" in\n'
        '  *"op log"*) echo "opid0123456789abcdef" ;;\n'
        '  *"-T commit_id"*) echo "c0ffee0123456789c0ffee0123456789c0ffee01" ;;\n'
        "  *) exit 3 ;;\n"
        "esac\n"
    )
    jj.chmod(jj.stat().st_mode | stat.S_IEXEC)
    (project / ".jj").mkdir()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    payload = fixture("SessionStart.startup", project) | {"session_id": SESSION}
    assert run_hook("SessionStart", payload, project, env=env).returncode == 0
    assert wait_for(lambda: settled(project), 30)
    tags = query(project, "SELECT status, jj_commit_id, jj_operation_id FROM vcs_tags")
    assert tags == [
        ("captured", "c0ffee0123456789c0ffee0123456789c0ffee01", "opid0123456789abcdef")
    ]
    asked = calls.read_text().splitlines()
    assert asked and all("--ignore-working-copy" in line for line in asked)
    assert not any("change_id" in line for line in asked)


def test_snapshots_can_be_turned_off(project: Path) -> None:
    (project / ".claude-session.json").write_text('{"workspace_snapshots": false}')
    cli(project, "trust", "--yes")
    send(project, "SessionStart.startup")
    assert query(project, "SELECT count(*) FROM frames")[0][0] == 1
    assert query(project, "SELECT count(*) FROM vcs_tags")[0][0] == 0
    failed = cli(project, "revert", f"{SESSION}:1", "--yes", ok=False)
    assert "no workspace snapshot" in failed.stderr


# --- the diff of two states is a pure function ---------------------------------------------


def state(**parts: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"task": "t", "agents": [], "claims": [], "errors": []}
    return base | {"failed_paths": [], "counters": {}} | parts


def test_state_diff_names_what_was_added_removed_and_changed() -> None:
    a = state(
        agents=[{"id": "x", "status": "running"}, {"id": "y", "status": "running"}],
        errors=[{"ladder": "test|a.py", "step": 1}],
        counters={"prompts": 1},
    )
    b = state(
        task="t2",
        agents=[{"id": "x", "status": "completed"}, {"id": "z", "status": "running"}],
        claims=[{"agent": "main", "path": "a.py", "edits": 1}],
        errors=[{"ladder": "test|a.py", "step": 2}],
        counters={"prompts": 2},
    )
    d = timetravel.state_diff(a, b)
    assert d["agents"]["added"] == [{"id": "z", "status": "running"}]
    assert d["agents"]["removed"] == [{"id": "y", "status": "running"}]
    assert d["agents"]["changed"] == [
        {"key": ["x"], "changes": {"status": ["running", "completed"]}}
    ]
    assert d["claims"]["added"] == [{"agent": "main", "path": "a.py", "edits": 1}]
    assert d["errors"]["changed"] == [{"key": ["test|a.py"], "changes": {"step": [1, 2]}}]
    assert d["task"] == ["t", "t2"] and d["counters"] == {"prompts": [1, 2]}
    assert timetravel.is_empty(timetravel.state_diff(b, b))
    assert not timetravel.is_empty(d)
    back = timetravel.state_diff(b, a)
    assert back["agents"]["added"] == d["agents"]["removed"]


def test_identical_states_are_stored_once(repo: Path) -> None:
    play_session(repo)
    frames = query(repo, "SELECT count(*), count(DISTINCT state_hash) FROM frames")[0]
    stored = query(repo, "SELECT count(*) FROM frame_states")[0][0]
    assert stored == frames[1] < frames[0]  # turn_start and session_start share a state


def test_a_new_session_hears_of_sessions_that_never_ended(repo: Path) -> None:
    """A session that stopped without a SessionEnd (a crash, a closed terminal) is reported at
    the next startup with its last step and the command that resumes it, and in `status`."""
    import time

    from inproc import Recorder

    old = Recorder(repo, now=time.time() - 3600)
    old.send(fixture("SessionStart.startup", repo) | {"session_id": "crashed-0001"})
    old.send(fixture("UserPromptSubmit", repo) | {"session_id": "crashed-0001"})
    bash = fixture("PostToolUse.Bash", repo) | {"session_id": "crashed-0001"}
    old.send(bash | {"tool_input": {"command": "make deploy"}})
    old.close()
    started = fixture("SessionStart.startup", repo) | {"session_id": "fresh-0002"}
    answer = run_hook("SessionStart", started, repo)
    context = json.loads(answer.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "crashed-0001 never ended" in context
    assert "Bash: make deploy" in context
    assert "claude --resume crashed-0001" in context
    status = json.loads(cli(repo, "status", "--json").stdout)
    assert [s["session_id"] for s in status["sessions_never_ended"]] == ["crashed-0001"]


def test_prune_lets_go_of_old_sessions_snapshots_and_keeps_the_store_bounded(
    repo: Path,
) -> None:
    play_session(repo)
    send(repo, "SessionEnd")
    before = json.loads(cli(repo, "prune", "--older-than", "1", "--yes", "--json").stdout)
    assert before["rows_removed"]["workspace_snapshot_pointers"] == 0  # ended just now
    done = json.loads(cli(repo, "prune", "--older-than", "0", "--yes", "--json").stdout)
    assert done["rows_removed"]["workspace_snapshot_pointers"] >= 4
    assert done["workspace_snapshots"]["dropped"] >= 4
    assert query(repo, "SELECT count(*) FROM vcs_tags WHERE status = 'captured'")[0][0] == 0
    assert query(repo, "SELECT count(*) FROM frames")[0][0] >= 6  # frames and states stay
    failed = cli(repo, "revert", f"{SESSION}:3", "--yes", ok=False)
    assert "its workspace snapshot was pruned" in failed.stderr


def test_the_snapshot_store_is_bounded(repo: Path) -> None:
    play_session(repo)
    send(repo, "SessionEnd")
    # Every snapshot taken first: a capture still running (a loaded machine) leaves the
    # session no snapshot yet to let go of.
    assert wait_for(lambda: settled(repo), 30)
    (repo / ".claude-session.json").write_text('{"snapshot_store_max_mb": 0.001}')
    cli(repo, "trust", "--yes")
    done = json.loads(cli(repo, "prune", "--older-than", "365", "--yes", "--json").stdout)
    assert done["rows_removed"]["workspace_snapshot_pointers"] == 0  # not old: the bound did it
    assert done["workspace_snapshots"]["sessions_let_go"] == 1
    assert query(repo, "SELECT count(*) FROM vcs_tags WHERE status = 'captured'")[0][0] == 0


def test_timeline_tree_hangs_subagents_and_forks_under_their_frames(repo: Path) -> None:
    send(repo, "SessionStart.startup")
    send(repo, "UserPromptSubmit", prompt="delegate")
    agent = {"agent_id": "sub-agent-01", "agent_type": "general-purpose"}
    send(repo, "SubagentStart", **agent)
    write = {"file_path": str(repo / "by_sub.txt"), "content": "x\n"}
    send(repo, "PreToolUse.Write", tool_use_id="s1", tool_input=write, **agent)
    (repo / "by_sub.txt").write_text("x\n")
    send(repo, "PostToolUse.Write", tool_use_id="s1", tool_input=write, **agent)
    send(repo, "SubagentStop", **agent)
    assert wait_for(lambda: settled(repo), 30)
    sub_frame = frame_of(repo, "s1")
    cli(repo, "fork", f"{SESSION}:{sub_frame}", "--label", "from-sub")
    text = cli(repo, "timeline", "--tree").stdout
    lines = text.splitlines()
    sub_line = next(i for i, line in enumerate(lines) if "├─ subagent general-purpose" in line)
    write_line = next(i for i, line in enumerate(lines) if "Write by_sub.txt" in line)
    assert write_line > sub_line and lines[write_line].startswith("  │")
    assert "└─ fork 1 [from-sub] ->" in lines[write_line + 1]


def test_a_frame_holds_its_own_events_changes_and_reuses_an_unchanged_state(repo: Path) -> None:
    play_session(repo)
    write, edit, bash = frame_of(repo, "t1"), frame_of(repo, "t2"), frame_of(repo, "t3")
    reader = apsw.Connection(str(repo / ".claude-session.db"), flags=apsw.SQLITE_OPEN_READONLY)
    states = {  # states may be packed already (by the capture process): read through frames
        frame_no: (state_hash, json.loads(frames.state_text(reader, state)))
        for frame_no, state_hash, state in query(
            repo,
            "SELECT f.frame_no, f.state_hash, s.state FROM frames f"
            " JOIN frame_states s ON s.hash = f.state_hash WHERE f.session_id = ?",
            (SESSION,),
        )
    }
    assert states[write][1]["counters"]["file_edits"] == 1  # the Write itself is counted
    assert states[edit][1]["counters"]["file_edits"] == 2
    assert [c["path"] for c in states[edit][1]["claims"]] == ["src/app.py", "src/config.py"]
    assert states[bash][0] == states[edit][0]  # a command that changed no state: same state


def test_without_git_the_frames_say_why_and_no_tool_waits(project: Path, tmp_path: Path) -> None:
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    env = {"PATH": str(empty)}
    payload = fixture("SessionStart.startup", project) | {"session_id": SESSION}
    assert run_hook("SessionStart", payload, project, env=env).returncode == 0
    assert wait_for(lambda: settled(project), 30)
    write = {"file_path": str(project / "a.txt"), "content": "x"}
    pre = fixture("PreToolUse.Write", project) | {"session_id": SESSION, "tool_use_id": "w1"}
    result = run_hook("PreToolUse", pre | {"tool_input": write}, project, env=env)
    assert result.returncode == 0
    tags = query(project, "SELECT status, note FROM vcs_tags")
    assert tags == [("failed", "git is not installed: workspace snapshots need it")]
    failed = cli(project, "revert", f"{SESSION}:1", "--yes", ok=False)
    assert "no workspace snapshot: failed (git is not installed" in failed.stderr


def test_the_events_that_commit_frames_are_listed_once() -> None:
    """`events.apply` imports the frames module only for FRAME_EVENTS: the two lists agree."""
    from claude_session.core import executions, frames

    assert set(frames.FRAME_KINDS) == executions.FRAME_EVENTS
