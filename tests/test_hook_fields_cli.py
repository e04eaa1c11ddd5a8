"""The mcp_tool hook carries every field the real Claude Code can send (issue 32: the per-event
field lists of core/hook_payload, which keep settings.local.json small, must lose nothing).

The fields are read out of the real CLI's own code: its input schema for each event (zod
objects, `hook_event_name:E("PreToolUse"),tool_name:...`), its base input schema, the model
switch's shared fields, and the objects it builds when it fires a hook
(`hook_event_name:"PreToolUse",tool_name:e,...`)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from test_e2e_claude import claude_binary

from claude_session.core import hook_payload, mcp_hook_input
from claude_session.core.events import EVENTS
from claude_session.services.setup import installer

pytestmark = pytest.mark.e2e

OPEN, CLOSE = "([{", ")]}"
# Our events the default CLI (2.1.330) does not have: 2.1.332's (the next test reads that CLI)
NEWER = {"PreSkillShellCommand"}


def keys_at_top(code: str, start: int) -> list[str]:
    """The keys of the object literal whose body starts at `start` (just after `{` or after a
    key of it), up to its closing brace: keys at depth 0 only, spreads skipped."""
    keys, depth, i, quote = [], 0, start, ""
    expect_key = True
    while i < len(code):
        ch = code[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'`":
            quote = ch
        elif ch in OPEN:
            depth += 1
        elif ch in CLOSE:
            if depth == 0:
                return keys
            depth -= 1
        elif depth == 0 and ch == ",":
            expect_key = True
        elif depth == 0 and expect_key:
            found = re.match(r"([A-Za-z_$][\w$]*):", code[i:])
            if found:
                keys.append(found.group(1))
                i += len(found.group(0))
            expect_key = False
            continue
        i += 1
    return keys


@pytest.fixture(scope="module")
def code() -> str:
    return claude_binary().resolve().read_bytes().decode("latin-1")


def schema_fields(code: str) -> dict[str, set[str]]:
    """Each event's own input fields, from the CLI's input schemas."""
    found: dict[str, set[str]] = {}
    for hit in re.finditer(r'hook_event_name:[A-Za-z_$][\w$]*\("(\w+)"\)', code):
        found.setdefault(hit.group(1), set()).update(keys_at_top(code, hit.end()))
    switch = re.search(r"\(\{from_model:", code)
    assert switch, "the model switch's shared fields are no longer where they were"
    shared = set(keys_at_top(code, switch.start() + 2))
    for event in ("PreModelSwitch", "PostModelSwitch"):
        found.setdefault(event, set()).update(shared)
    return found


def built_fields(code: str) -> dict[str, set[str]]:
    """Each event's fields as the CLI builds them when it fires the hook."""
    found: dict[str, set[str]] = {}
    for hit in re.finditer(r'hook_event_name:"(\w+)"', code):
        found.setdefault(hit.group(1), set()).update(keys_at_top(code, hit.end()))
    return found


def base_fields(code: str) -> set[str]:
    """The fields of every event: the base input schema's and the built base object's."""
    schema = re.search(r"\(\{session_id:[A-Za-z_$][\w$]*\(\),transcript_path:", code)
    built = re.search(r"\{session_id:[\w$.]+,transcript_path:[^,]+,cwd:", code)
    assert schema and built, "the base input is no longer where it was"
    return set(keys_at_top(code, schema.start() + 2)) | set(keys_at_top(code, built.start() + 1))


def test_every_field_the_cli_sends_is_carried_by_the_events_hook(code: str) -> None:
    schemas, built, base = schema_fields(code), built_fields(code), base_fields(code)
    assert {"session_id", "cwd", "prompt_id", "effort", "agent_id"} <= base  # the reading works
    assert {"tool_name", "tool_input", "tool_use_id", "mcp_server"} <= schemas["PreToolUse"]
    assert set(EVENTS) - NEWER <= set(schemas), set(EVENTS) - set(schemas)
    lost = {}
    for event in set(EVENTS) - NEWER:
        sent = (schemas[event] | built.get(event, set()) | base) - {"hook_event_name"}
        carried = set(hook_payload.fields_of(event))
        if sent - carried:
            lost[event] = sorted(sent - carried)
    assert lost == {}


def test_the_newest_clis_events_and_fields_are_all_described() -> None:
    """2.1.332 added PreSkillShellCommand: the one description of a payload
    (core/hook_payload.py) has every event and field of the newest CLI the tests use, whether
    install hooks the event or not."""
    code = claude_binary("2.1.332").resolve().read_bytes().decode("latin-1")
    schemas, built, base = schema_fields(code), built_fields(code), base_fields(code)
    assert set(schemas) <= set(hook_payload.EVENT_FIELDS), set(schemas) - set(EVENTS)
    lost = {}
    for event in schemas:
        sent = (schemas[event] | built.get(event, set()) | base) - {"hook_event_name"}
        if sent - set(hook_payload.fields_of(event)):
            lost[event] = sorted(sent - set(hook_payload.fields_of(event)))
    assert lost == {}
    skill = schemas["PreSkillShellCommand"] - {"hook_event_name"}
    assert set(hook_payload.EVENT_FIELDS["PreSkillShellCommand"]) == skill


def test_the_written_hooks_name_those_fields_and_stay_small(code: str, tmp_path: Path) -> None:
    """What `install --transport mcp` writes: each mcp_tool hook's input names its event's
    fields (and no other), and the settings file stays small (it was 109 KB)."""
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "CLAUDE_SESSION_STATE_DIR": str(tmp_path / "state"),
        "CLAUDE_SESSION_NO_DAEMON": "1",
    }
    cli = Path(installer.sys.executable).parent / "claude-session"
    done = subprocess.run(
        [str(cli), "--project", str(project), "install", "--transport", "mcp", "--claude",
         str(claude_binary())],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = project / ".claude" / "settings.local.json"
    assert written.stat().st_size < 40_000, written.stat().st_size
    hooks = json.loads(written.read_text())["hooks"]
    schemas, base = schema_fields(code), base_fields(code)
    seen = 0
    for event, groups in hooks.items():
        for group in groups:
            for handler in group["hooks"]:
                if handler.get("type") != "mcp_tool":
                    continue
                seen += 1
                named = set(handler["input"]) - {mcp_hook_input.INSTALL_ARGUMENT}
                assert named == set(hook_payload.fields_of(event)), event
                # PreSkillShellCommand is 2.1.332's: this CLI (2.1.330) has no schema of it
                assert (schemas.get(event, set()) | base) - {"hook_event_name"} <= named, event
    assert seen == len(installer.MCP_EVENTS)
