"""PreSkillShellCommand (Claude Code 2.1.332), recorded in-process: the event row with its
fields, the Bash-like tool call it opens, the claims on the files its command names, no answer
ever, and the frame (with a workspace snapshot asked for) that the agent's next event commits
for it, since the event has no Post half. The real CLI's run is tests/test_e2e_skill_shell.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import fixture
from inproc import Recorder

from claude_session.core.shell_writes import written_paths

SESSION = "5b1e6a0e-332c-4f00-9a11-5ce11c0aa332"


def skill_command(root: Path, command: str, use: str, **extra: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PreSkillShellCommand",
        "session_id": SESSION,
        "transcript_path": str(root / "t.jsonl"),
        "cwd": str(root),
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": use,
        "command_name": "stamp",
        "command_source": "projectSettings",
        "invoked_by": "claude",
    } | extra


def test_a_skill_command_is_stored_whole_claims_its_files_and_answers_nothing(
    recorder: Recorder,
) -> None:
    root = Path(recorder.root)
    recorder.send(fixture("SessionStart.startup", root) | {"session_id": SESSION})
    recorder.send(fixture("UserPromptSubmit", root) | {"session_id": SESSION})
    applied, answer = recorder.send(
        skill_command(root, "date > stamp.txt && tee -a notes/log.md < /dev/null", "skill-1")
    )
    assert answer is None  # any decision but allow would keep the command from running
    (stored,) = recorder.rows(
        "SELECT hook_event_name, tool_name, tool_use_id, payload FROM events WHERE id = ?",
        (applied.event_id,),
    )
    payload = json.loads(stored[3])
    assert stored[:3] == ("PreSkillShellCommand", "Bash", "skill-1")
    assert payload["invoked_by"] == "claude" and payload["command_name"] == "stamp"
    assert payload["command_source"] == "projectSettings"
    assert payload["tool_input"] == {
        "command": "date > stamp.txt && tee -a notes/log.md < /dev/null"
    }
    claims = recorder.rows(
        "SELECT file_path, operation FROM file_claims WHERE session_id = ? AND released_at IS NULL"
        " ORDER BY file_path",
        (SESSION,),
    )
    assert claims == [("notes/log.md", "Bash"), ("stamp.txt", "Bash")]
    assert recorder.rows("SELECT status FROM tool_calls WHERE tool_use_id = 'skill-1'") == [
        ("running",)
    ]


def test_the_agents_next_event_commits_the_frame_after_the_command(recorder: Recorder) -> None:
    root = Path(recorder.root)
    recorder.send(fixture("SessionStart.startup", root) | {"session_id": SESSION})
    recorder.send(fixture("UserPromptSubmit", root) | {"session_id": SESSION})
    recorder.send(skill_command(root, "echo hi > out.txt", "skill-2"))
    recorder.send(skill_command(root, "ls", "skill-3"))  # a second command of the same skill
    frames_before = recorder.rows("SELECT count(*) FROM frames")[0][0]
    recorder.advance(2)
    read = fixture("PreToolUse.Read.subagent", root) | {"session_id": SESSION}
    other_agent = recorder.send(read | {"tool_use_id": "r-1"})[0]  # a subagent: not its turn
    assert recorder.rows("SELECT count(*) FROM frames")[0][0] == frames_before
    assert other_agent.capture_requested is False
    post = {k: v for k, v in fixture("PostToolUse.Bash", root).items() if k != "agent_id"}
    post |= {"session_id": SESSION, "tool_name": "Skill", "tool_use_id": "toolu_skill"}
    applied = recorder.send(post)[0]
    frames = recorder.rows(
        "SELECT f.kind, f.tool_use_id, f.tool_name, f.summary, f.files, f.event_id, v.status"
        " FROM frames f LEFT JOIN vcs_tags v USING (session_id, frame_no)"
        " WHERE f.session_id = ? AND f.tool_use_id LIKE 'skill-%' ORDER BY f.frame_no",
        (SESSION,),
    )
    assert frames == [
        ("tool", "skill-2", "Bash", "Bash: echo hi > out.txt", '["out.txt"]', applied.event_id,
         "pending"),
        ("tool", "skill-3", "Bash", "Bash: ls", None, applied.event_id, "pending"),
    ]  # fmt: skip
    assert applied.capture_requested
    calls = recorder.rows(
        "SELECT tool_use_id, status, ended_at - started_at, frame_no IS NOT NULL FROM tool_calls"
        " WHERE tool_use_id LIKE 'skill-%' ORDER BY tool_use_id"
    )
    assert calls == [("skill-2", "succeeded", 2.0, 1), ("skill-3", "succeeded", 2.0, 1)]
    recorder.send(post | {"tool_use_id": "toolu_skill_2"})  # ended once: no second frame
    assert len(recorder.rows("SELECT 1 FROM frames WHERE tool_use_id LIKE 'skill-%'")) == 2


def test_the_files_a_command_names_as_written() -> None:
    assert written_paths("echo hi > out.txt 2>/dev/null") == ["out.txt"]
    assert written_paths("date >> a.log; cat x | tee b c") == ["a.log", "b", "c"]
    assert written_paths("touch x y && rm -f z || cp a b dest/") == ["x", "y", "z", "dest/"]
    assert written_paths("sed -i s/a/b/ f.txt") == ["f.txt"]
    assert written_paths('echo "a > b" >&2') == []
    assert written_paths("git status") == []
    assert written_paths('echo "unclosed > x') == []
