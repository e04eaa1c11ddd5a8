"""A skill's inline shell command with the real Claude Code CLI 2.1.332 (its new hook event,
PreSkillShellCommand), against a scripted Messages API on 127.0.0.1.

The skill (.claude/skills/stamp/SKILL.md) holds `` !`date -u > stamp.txt && echo written` ``,
the syntax the CLI reads (a line's "!`command`"). The user invokes it (`claude -p /stamp`),
through command hooks and through the mcp_tool transport; the model invokes it (the Skill
tool). Each time: the command ran (our hook answered nothing, which lets it run), its event
row holds every field Claude Code sent (a tap hook keeps its own copy), the file it names is
claimed, and the frame the agent's next event commits for it has a workspace snapshot that
holds the file the command wrote, which the snapshot before it does not. And 2.1.330, which
has no such event, runs the same skill with the same install, and `doctor` passes there."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import count, query, run_cli, wait_for
from fake_api import FakeAnthropic, text, tool
from test_e2e_claude import claude_binary, claude_env

from claude_session.services.setup import installer
from claude_session.services.snapshots import workspace

pytestmark = pytest.mark.e2e

NEW_CLI = "2.1.332"
OLD_CLI = "2.1.330"
COMMAND = "date -u > stamp.txt && echo written"
SKILL = f"""---
name: stamp
description: Writes the date into stamp.txt
---
The stamp was written:

!`{COMMAND}`
"""


def make_project(tmp_path: Path) -> tuple[Path, Path, Path]:
    project, home, tap = tmp_path / "project", tmp_path / "home", tmp_path / "tap"
    for folder in (project / ".claude" / "skills" / "stamp", home, tap):
        folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".claude" / "skills" / "stamp" / "SKILL.md").write_text(SKILL)
    return project, home, tap


def install(project: Path, home: Path, tap: Path, transport: str, version: str) -> None:
    """Our install, as a user runs it, and a tap hook beside ours on every event."""
    done = run_cli(
        project,
        "install",
        "--transport",
        transport,
        "--claude",
        str(claude_binary(version)),
        HOME=str(home),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    path = project / ".claude" / "settings.local.json"
    settings = json.loads(path.read_text())
    assert {h["type"] for h in settings["hooks"]["PreSkillShellCommand"][0]["hooks"]} == {
        "mcp_tool" if transport == "mcp" else "command"
    }
    command = f'f=$(mktemp "{tap}/XXXXXXXX") && cat > "$f"'
    for event in installer.installed_events():
        settings["hooks"][event].append({"hooks": [{"type": "command", "command": command}]})
    path.write_text(json.dumps(settings, indent=2))


def run_claude(project: Path, home: Path, version: str, prompt: str, by_model: bool) -> None:
    def script(body: dict[str, Any]) -> list[dict[str, Any]]:
        blocks = [
            b
            for m in body.get("messages") or []
            if isinstance(m.get("content"), list)
            for b in m["content"]
        ]
        if by_model and not any(b.get("type") == "tool_use" for b in blocks):
            return [tool("Skill", skill="stamp")]
        return [text("Done.")]

    with FakeAnthropic(script) as api:
        env = claude_env(home, api.url) | {"CLAUDE_SESSION_NO_DAEMON": "1"}
        done = subprocess.run(
            [str(claude_binary(version)), "-p", prompt, "--output-format", "json",
             "--dangerously-skip-permissions"],
            cwd=project, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def files_at(project: Path, commit: str) -> set[str]:
    env = {**os.environ, "GIT_DIR": workspace.snapshot_dir(str(project))}
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", "-z", commit],
        env=env,
        capture_output=True,
        check=True,
    ).stdout
    return {name.decode() for name in listing.split(b"\0") if name}


def assert_recorded(project: Path, tap: Path, invoked_by: str, transport: str) -> None:
    assert (project / "stamp.txt").exists()  # the command ran: our hook did not stop it
    sent = [json.loads(p.read_text()) for p in tap.iterdir()]
    [payload] = [p for p in sent if p["hook_event_name"] == "PreSkillShellCommand"]
    assert payload["tool_name"] == "Bash" and payload["tool_input"] == {"command": COMMAND}
    assert payload["command_name"] == "stamp" and payload["invoked_by"] == invoked_by
    assert payload["tool_use_id"]
    [(event_id, stored, exit_code, via)] = query(
        project,
        "SELECT e.id, e.payload, h.exit_code, h.transport FROM events e JOIN hook_events h"
        " ON h.event_id = e.id WHERE e.hook_event_name = 'PreSkillShellCommand'",
    )
    assert json.loads(stored) == payload  # every field, as sent
    assert (exit_code, via) == (0, transport)
    assert query(project, "SELECT file_path, operation FROM file_claims") == [("stamp.txt", "Bash")]
    assert wait_for(lambda: count(project, "vcs_tags", "status = 'pending'") == 0, 120)
    [(session, frame_no, files, status, commit)] = query(
        project,
        "SELECT f.session_id, f.frame_no, f.files, v.status, v.snapshot_commit FROM frames f"
        " JOIN vcs_tags v USING (session_id, frame_no) WHERE f.tool_use_id = ?",
        (payload["tool_use_id"],),
    )
    assert (files, status) == ('["stamp.txt"]', "captured")
    assert "stamp.txt" in files_at(project, commit)  # the state after the command
    [(before, note)] = query(
        project,
        "SELECT v.snapshot_commit, coalesce(v.note, '') FROM vcs_tags v WHERE v.session_id = ?"
        " AND v.frame_no = (SELECT max(frame_no) FROM vcs_tags WHERE session_id = ?"
        " AND frame_no < ? AND status = 'captured')",
        (session, session, frame_no),
    )
    # and the one before it, unless it was still being taken when the command ran: then it
    # says it may hold the command's changes, as before a Bash call (the files were kept)
    assert "stamp.txt" not in files_at(project, before) or "may hold changes of Bash" in note
    assert query(
        project, "SELECT status FROM tool_calls WHERE tool_use_id = ?", (payload["tool_use_id"],)
    ) == [("succeeded",)]
    assert event_id


@pytest.mark.parametrize("transport", ["command", "mcp"])
def test_a_skill_the_user_invokes_is_recorded_on_each_transport(
    tmp_path: Path, transport: str
) -> None:
    project, home, tap = make_project(tmp_path)
    install(project, home, tap, transport, NEW_CLI)
    run_claude(project, home, NEW_CLI, "/stamp", by_model=False)
    assert_recorded(project, tap, "user", "process" if transport == "command" else "mcp")


def test_a_skill_the_model_invokes_is_recorded(tmp_path: Path) -> None:
    project, home, tap = make_project(tmp_path)
    install(project, home, tap, "command", NEW_CLI)
    run_claude(project, home, NEW_CLI, "please stamp", by_model=True)
    assert_recorded(project, tap, "claude", "process")
    # the Skill call's end is the agent's next event: it committed the frame
    [(ended_by,)] = query(
        project,
        "SELECT e.hook_event_name || ' ' || e.tool_name FROM frames f JOIN events e"
        " ON e.id = f.event_id WHERE f.tool_name = 'Bash' AND f.kind = 'tool'",
    )
    assert ended_by == "PostToolUse Skill"


def test_2_1_330_runs_the_skill_with_the_hook_installed_and_doctor_passes(tmp_path: Path) -> None:
    project, home, tap = make_project(tmp_path)
    install(project, home, tap, "command", OLD_CLI)
    run_claude(project, home, OLD_CLI, "/stamp", by_model=False)
    assert (project / "stamp.txt").exists()
    names = {json.loads(p.read_text())["hook_event_name"] for p in tap.iterdir()}
    assert "PreSkillShellCommand" not in names and "UserPromptExpansion" in names
    assert count(project, "events", "hook_event_name = 'PreSkillShellCommand'") == 0
    done = run_cli(project, "doctor", HOME=str(home), COLUMNS="200")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hook PreSkillShellCommand" in done.stdout  # doctor fires it itself
