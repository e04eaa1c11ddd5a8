"""The MCP hook server loads and opens what the session's first hooks need while Claude Code starts
the session (`McpHookServer._warm`), so the first UserPromptSubmit does not pay for it on its
answer path (~5 ms of it in a real session's first hook, by the server's own clock).

Run in a fresh interpreter: this test process has loaded every module long ago."""

import json
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES, RECORDED_PROJECT, hook_env

from claude_session.core import db
from claude_session.core.paths import db_path

EVENTS = (
    "UserPromptSubmit",
    "PreToolUse.Bash",
    "PostToolUse.Bash",
    "PreToolUse.Write",
    "PostToolUse.Write",
    "PostToolUse.Edit",
    "PreToolUse.Agent",
    "SubagentStart",
    "PreToolUse.Read.subagent",
    "PostToolUse.Read.subagent",
    "PostToolBatch.subagent",
    "SubagentStop",
    "PostToolUse.Agent",
    "Stop",
)

SCRIPT = """
import json, sys, time
from claude_session.core import mcp_hook_input
from claude_session.runtime import mcp_transport

payloads = json.loads(sys.stdin.read())
server = mcp_transport.McpHookServer(lambda data: None)
assert server.warmed.wait(30), "never warmed"
pools = {root: len(pool.idle) for root, pool in server.connections.items()}
loaded = {name for name in sys.modules if name.startswith("claude_session")}
answers = []
for payload in payloads:
    arguments = mcp_hook_input.arguments_for(payload, server.package)
    text, failed, _ = server.hook(dict(arguments), time.time(), time.perf_counter())
    answers.append(failed)
late = sorted(n for n in sys.modules if n.startswith("claude_session") and n not in loaded)
print(json.dumps({"pools": pools, "late": late, "failed": answers}))
"""


def run_server_script(project: Path) -> dict[str, object]:
    payloads = []
    for name in EVENTS:
        text = (FIXTURES / f"{name}.json").read_text().replace(RECORDED_PROJECT, str(project))
        payloads.append(json.loads(text))
    env = hook_env(project, CLAUDE_SESSION_NO_SNAPSHOTS="1")
    done = subprocess.run(
        [sys.executable, "-I", "-c", SCRIPT],
        input=json.dumps(payloads),
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_the_first_hooks_load_nothing_the_server_did_not_load_at_its_start(
    project: Path,
) -> None:
    db.connect(db_path(str(project))).close()  # SessionStart (a command hook) made it
    found = run_server_script(project)
    assert found["late"] == []
    assert found["pools"] == {str(project): 1}  # a connection open and waiting
    assert found["failed"] == [False] * len(EVENTS)
    stored = db.connect(db_path(str(project)))
    try:
        rows = stored.execute("SELECT count(*) FROM events").fetchall()[0][0]
    finally:
        stored.close()
    assert rows == len(EVENTS)


def test_no_database_is_made_by_the_warm_up(project: Path) -> None:
    """Before the first hook the project may have no database: the warm-up leaves it so."""
    script = (
        "from claude_session.runtime import mcp_transport\n"
        "server = mcp_transport.McpHookServer(lambda data: None)\n"
        "assert server.warmed.wait(30)\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", script],
        capture_output=True,
        text=True,
        env=hook_env(project, CLAUDE_SESSION_NO_SNAPSHOTS="1"),
        cwd=project,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert not Path(db_path(str(project))).exists()
