"""The injection log: every text put before the model is kept verbatim, with its time, event,
session and agent, through the real hook entry (and the MCP server's own tools)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from conftest import fixture, query, run_cli, run_hook, write_config

from claude_session import mcp_server

SESSION = "inject-session-1"


def send(project: Path, name: str, **changes: Any) -> Any:
    payload = fixture(name, project) | {"session_id": SESSION} | changes
    return run_hook(payload["hook_event_name"], payload, project).json()


def logged(project: Path) -> list[tuple[Any, ...]]:
    return query(
        project,
        "SELECT event, kind, source, agent_id, tool_use_id, text, chars, event_id IS NOT NULL"
        " FROM injections ORDER BY id",
    )


def test_each_text_the_model_got_is_kept_verbatim(project: Path) -> None:
    send(project, "SessionStart.startup")
    send(project, "UserPromptSubmit", prompt="fix the parser")
    edit = {"file_path": str(project / "p.py"), "old_string": "a", "new_string": "b"}
    other = {"agent_id": "helper-1", "agent_type": "general-purpose"}
    send(project, "SubagentStart", **other)
    send(project, "PostToolUse.Edit", tool_input=edit, tool_use_id="toolu_inj_1", **other)
    warned = send(project, "PreToolUse.Edit", tool_input=edit, tool_use_id="toolu_inj_2")
    failed = send(project, "PostToolUseFailure.Bash", tool_use_id="toolu_inj_3")
    send(project, "PreCompact")
    restored = send(project, "SessionStart.compact")
    rows = logged(project)
    assert [(e, k, s) for e, k, s, *_ in rows] == [
        ("PreToolUse", "conflict", None),
        ("PostToolUseFailure", "ladder", None),
        ("SessionStart", "restore", "compact"),
    ]
    texts = [r[5] for r in rows]
    assert texts[0] == warned["hookSpecificOutput"]["additionalContext"]
    assert texts[1] == failed["hookSpecificOutput"]["additionalContext"]
    assert texts[2] == restored["hookSpecificOutput"]["additionalContext"]
    assert [r[6] for r in rows] == [len(t) for t in texts]
    assert [r[4] for r in rows] == ["toolu_inj_2", "toolu_inj_3", None]
    assert all(r[7] for r in rows)  # each names the event that carried it

    given = json.loads(run_cli(project, "restore", "--json").stdout)
    assert given["context"] == texts[2] and given["source"] == "compact"
    assert given["injected_at"] is not None and given["preview"] is False
    every = json.loads(run_cli(project, "restore", "--all", "--json").stdout)["injections"]
    assert [i["text"] for i in every] == texts


def test_a_refusal_and_the_judges_block_are_kept_and_a_secret_is_not(project: Path) -> None:
    write_config(project, {"conflict_policy": "deny"})
    send(project, "SessionStart.startup")
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    path = project / f"notes-{token}.md"
    edit = {"file_path": str(path), "old_string": "a", "new_string": "b"}
    send(project, "SubagentStart", agent_id="holder", agent_type="general-purpose")
    send(
        project, "PostToolUse.Edit", tool_input=edit, agent_id="holder",
        agent_type="general-purpose", tool_use_id="toolu_inj_4",
    )  # fmt: skip
    refused = send(project, "PreToolUse.Edit", tool_input=edit, tool_use_id="toolu_inj_5")
    assert refused["hookSpecificOutput"]["permissionDecision"] == "deny"
    (event, kind, _, _, _, text, _, _) = logged(project)[-1]
    assert (event, kind) == ("PreToolUse", "conflict")
    assert text == refused["hookSpecificOutput"]["permissionDecisionReason"]
    assert token not in text and token not in (project / ".claude-session.db").read_bytes().decode(
        "latin-1"
    )


def test_the_mcp_servers_answers_are_kept_with_the_call_that_asked(project: Path) -> None:
    send(project, "SessionStart.startup")
    call = {"tool_name": "mcp__claude-session__get_state", "tool_input": {}}
    send(project, "PreToolUse.Bash", tool_use_id="toolu_inj_mcp", **call)
    server = mcp_server.build(str(project))
    result = asyncio.run(server.call_tool("get_state", {}))
    answer = json.loads(result.content[0].text)
    rows = query(
        project, "SELECT session_id, event, kind, source, tool_use_id, text FROM injections"
    )
    assert len(rows) == 1
    session, event, kind, source, use, text = rows[0]
    assert (session, event, kind, source, use) == (
        SESSION,
        "mcp",
        "mcp",
        "get_state",
        "toolu_inj_mcp",
    )
    assert json.loads(text) == answer
