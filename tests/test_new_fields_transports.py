"""The fields listed on 2026-11-28 survive every transport (shared/reference/claude-code-hooks.md,
"Facts added 2026-11-28"): PreSkillShellCommand's (`invoked_by`, `command_name`,
`command_source`, `tool_input.command`, `tool_use_id`), `UserPromptSubmit.source`,
`mcp_server {name, source}` on tool events, the model-switch fields and SessionStart's
`prompt_cache_likely_expired` / `estimated_cache_write_usd`. Each payload goes through a hook
process, the project's daemon (the relay) and the MCP hook server (an mcp_tool hook filled in
as Claude Code fills it), and is stored field for field (after redaction, which leaves these
alone), with the audit row naming the transport. A PreSkillShellCommand answers nothing on each."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from conftest import fixture, hook_env, query, run_hook, wait_for
from test_mcp_hook_server import Server, text_of
from test_relay import start_daemon_process, status

from claude_session.services.setup import installer

SESSION = "7a0c2b6e-332f-4e1d-9c55-0f1e1d5e3320"


def payloads(project: Path) -> list[dict[str, Any]]:
    """One payload per event with new fields, every new field set (values of the schema)."""
    common = {
        "session_id": SESSION,
        "transcript_path": str(project / "t.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
    }
    server = {"name": "github", "source": "project"}
    switch = {
        "from_model": "claude-opus-5-5",
        "to_model": "claude-haiku-5-5",
        "requested_model": "haiku",
        "source": "command",
        "context_tokens": 48213,
        "prompt_cache_warm": True,
        "cache_ttl": "1h",
        "estimated_cache_write_usd": 0.0603,
        "pricing": "catalog",
    }
    return [
        common
        | {
            "hook_event_name": "SessionStart",
            "source": "resume",
            "model": "claude-opus-5-5",
            "prompt_cache_likely_expired": True,
            "estimated_cache_write_usd": 0.2411,
        },
        common
        | {"hook_event_name": "UserPromptSubmit", "prompt": "go on", "source": "loop_wakeup"},
        common
        | {
            "hook_event_name": "PreSkillShellCommand",
            "tool_name": "Bash",
            "tool_input": {"command": "date -u > stamp.txt"},
            "tool_use_id": "toolu_skill_fields_0",
            "command_name": "stamp",
            "command_source": "projectSettings",
            "invoked_by": "user",
        },
        common
        | {
            "hook_event_name": "PreToolUse",
            "tool_name": "mcp__github__list_issues",
            "tool_input": {"repo": "o/r"},
            "tool_use_id": "toolu_mcp_fields_1",
            "mcp_server": server,
        },
        common
        | {
            "hook_event_name": "PostToolUse",
            "tool_name": "mcp__github__list_issues",
            "tool_input": {"repo": "o/r"},
            "tool_response": [{"type": "text", "text": "[]"}],
            "tool_use_id": "toolu_mcp_fields_1",
            "mcp_server": server,
            "duration_ms": 412,
        },
        common | {"hook_event_name": "PreModelSwitch"} | switch,
        common | {"hook_event_name": "PostModelSwitch"} | switch | {"source": "resume"},
    ]


def stored(project: Path, payload: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """The stored payloads of this event of the session, each with its audit row's transport."""
    rows = query(
        project,
        "SELECT e.payload, h.transport FROM events e JOIN hook_events h ON h.event_id = e.id"
        " WHERE e.session_id = ? AND e.hook_event_name = ? ORDER BY e.id",
        (SESSION, payload["hook_event_name"]),
    )
    return [(json.loads(text), str(transport)) for text, transport in rows]


def test_through_a_hook_process_every_new_field_is_stored(project: Path) -> None:
    for payload in payloads(project):
        done = run_hook(payload["hook_event_name"], payload, project)
        if payload["hook_event_name"] == "PreSkillShellCommand":
            assert done.stdout == ""  # never a decision: it would keep the command from running
        assert stored(project, payload) == [(payload, "process")], payload["hook_event_name"]


def test_through_the_daemon_every_new_field_is_stored(project: Path, reap_daemons: None) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    daemon = start_daemon_process(project)
    try:
        sent = payloads(project)
        for payload in sent:
            done = run_hook(payload["hook_event_name"], payload, project)
            if payload["hook_event_name"] == "PreSkillShellCommand":
                assert done.stdout == ""
        assert wait_for(lambda: status(project).get("relay_served") == len(sent), seconds=20)
        for payload in sent:
            assert stored(project, payload) == [(payload, "relay")], payload["hook_event_name"]
    finally:
        daemon.terminate()
        daemon.wait(20)


def test_through_the_mcp_hook_server_every_new_field_is_stored(project: Path) -> None:
    sent = payloads(project)
    by_command = [p for p in sent if p["hook_event_name"] not in installer.MCP_EVENTS]
    assert [p["hook_event_name"] for p in by_command] == ["SessionStart"]  # a command hook
    for payload in by_command:
        run_hook("SessionStart", payload, project)
    with Server(project) as server:
        server.initialize()
        for payload in sent:
            if payload in by_command:
                continue
            result = server.hook(payload)
            assert "isError" not in result, result
            if payload["hook_event_name"] == "PreSkillShellCommand":
                assert text_of(result) == ""
        assert server.close() == 0
    for payload in sent:
        transport = "process" if payload in by_command else "mcp"
        assert stored(project, payload) == [(payload, transport)], payload["hook_event_name"]


def test_the_installed_mcp_tool_hook_of_the_skill_command_names_its_fields(project: Path) -> None:
    """What `install --transport mcp` writes for PreSkillShellCommand: an mcp_tool hook whose
    input names each of its fields (`invoked_by` among them); `--transport command` writes a
    command hook for it, as for every other event."""
    handlers = installer.our_handlers(transport="mcp")
    skill = handlers["PreSkillShellCommand"]
    assert skill["type"] == "mcp_tool"
    for field in ("invoked_by", "command_name", "command_source", "tool_input", "tool_use_id"):
        assert skill["input"][field] == "${" + field + "}"
    command = installer.our_handlers(transport="command")["PreSkillShellCommand"]
    assert command["type"] == "command" and command["command"].endswith(installer.MARKER)
    done = subprocess.run(
        ["/bin/sh", "-c", command["command"]],
        input=json.dumps(payloads(project)[2]).encode(),
        capture_output=True,
        env=hook_env(project),
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, b"")
    assert [p["invoked_by"] for p, _ in stored(project, payloads(project)[2])] == ["user"]
