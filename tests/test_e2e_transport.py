"""The mcp_tool transport end to end, with the real Claude Code CLI 2.1.330 against a scripted
Messages API: `claude-session install --transport mcp` as a user runs it registers the hook
server and writes the mcp_tool hooks; Claude Code starts the server for the session and
delivers the events of the running session to it.

1. A session writes, edits, fails a command and runs a subagent: every tool call is recorded
   through the MCP hook server, and its answers (the failure guidance) reach the model, while the
   model is never offered the server's tool.
2. The MCP hook server is killed mid-session: Claude Code starts it again at the next mcp_tool
   hook, and nothing is lost.
3. Killed for good (each restart killed at once): Claude Code gives up on the server and goes
   on (fail open); the CLI's catch-up from Claude Code's transcript fills in every tool call
   the server never received, once.
4. `/compact` in the middle of a session: the model is never offered the server's tool, and is
   told of it only where Claude Code lists every mcp_tool hook's tool among the tools used
   before the summary, under a name that says it is not the model's; every event is recorded.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import CLI, query, run_cli, wait_for
from fake_api import FakeAnthropic, text, tool
from test_e2e_claude import _blocks, _has_prompt, add_tap, claude_binary, claude_env

from claude_session.services.cost import reconcile
from claude_session.services.setup import installer

pytestmark = pytest.mark.e2e

SUBTASK = "SUBTASK-MCP: run a command and read hello.py"
FAILING = "cat missing_config.yaml"
SERVER = installer.MCP_HOOK_SERVER
# What Claude Code's debug log says when an mcp_tool hook was not delivered (2.1.330).
UNDELIVERED = ("mcp_tool hook skipped", "mcp_tool hook error", "mcp_tool hook refused")


def install_mcp(project: Path, home: Path, binary: Path) -> str:
    """`claude-session install --transport mcp --claude <binary>`, the venv's console script,
    with the HOME the session runs under (the MCP hook server goes into its ~/.claude.json)."""
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"} | {"HOME": str(home)}
    done = subprocess.run(
        [CLI, "--project", str(project), "install", "--transport", "mcp", "--claude", str(binary)],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def new_home(project: Path) -> Path:
    """A git repository at `project` (the `project` fixture) and a scratch HOME beside it."""
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    home = project.parent / "home"
    home.mkdir()
    return home


def check_installed(project: Path, home: Path, said: str) -> None:
    """The MCP hook server registered for this project (local scope), the hooks written for it."""
    assert f"registered the MCP hook server {SERVER} (local scope)" in said, said
    registered = json.loads((home / ".claude.json").read_text())["projects"][str(project)]
    server = registered["mcpServers"][SERVER]
    assert server["args"][-1].endswith("/claude_session/mcp_hook_server.py"), server
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    kinds = {event: groups[0]["hooks"][0]["type"] for event, groups in settings["hooks"].items()}
    assert {e for e, kind in kinds.items() if kind == "mcp_tool"} == (
        installer.MCP_EVENTS & set(installer.installed_events())
    )
    assert kinds["SessionStart"] == kinds["SessionEnd"] == "command"


def run_session(
    binary: Path,
    project: Path,
    home: Path,
    api: FakeAnthropic,
    prompt: str,
    drop: tuple[str, ...] = (),
    resume: str | None = None,
    **extra: str,
) -> subprocess.CompletedProcess[str]:
    """`claude -p PROMPT` (`--resume` a session), its debug log in the test's folder; the exit
    status not checked. `extra` is added to the tests' environment for the CLI, `drop` taken
    out of it."""
    env = {k: v for k, v in (claude_env(home, api.url) | extra).items() if k not in drop}
    return subprocess.run(
        [
            str(binary),
            "-p",
            prompt,
            *(("--resume", resume) if resume else ()),
            "--output-format",
            "json",
            "--dangerously-skip-permissions",
            "--debug-file",
            str(project.parent / "debug.log"),
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def hook_servers(project: Path) -> list[int]:
    """Pids of our MCP hook server processes serving `project` (from /proc)."""
    found = []
    wanted = f"CLAUDE_PROJECT_DIR={project}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            if b"mcp_hook_server.py" not in cmdline:
                continue
            if wanted not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            if _state(entry) == "Z":  # killed, not reaped by Claude Code yet
                continue
        except OSError:
            continue
        found.append(int(entry.name))
    return found


def _state(entry: Path) -> str:
    stat = (entry / "stat").read_text()
    return stat[stat.rindex(")") + 2 :].split()[0]


def debug_lines(project: Path, *words: str) -> list[str]:
    log = (project.parent / "debug.log").read_text(errors="replace").splitlines()
    return [line for line in log if any(w in line for w in words)]


def catch_up(project: Path, home: Path) -> None:
    """What a user runs: `claude-session cost`, which first reads what is new in the recent
    sessions' transcripts (filling in what no hook delivered: the session ended). `status`
    reads none (it writes nothing); the daemon, gone with the session here, would."""
    done = run_cli(project, "cost", "--json", HOME=str(home))
    assert done.returncode == 0, done.stderr


class Calls:
    """The tool calls the script made, in order: (tool_use_id, name, who)."""

    def __init__(self) -> None:
        self.made: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()

    def add(self, block: dict[str, Any], who: str) -> list[dict[str, Any]]:
        with self.lock:
            self.made.append((block["id"], block["name"], who))
        return [block]


# --- 1. a whole session over the MCP hook server ----------------------------------------------


class Session(Calls):
    """Main: Write hello.py, Edit it, a failing Bash, a subagent (Bash, Read)."""

    def __init__(self, project: Path) -> None:
        super().__init__()
        self.project = project
        self.main_requests: list[dict[str, Any]] = []
        self.failing = ""

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages") or []
        hello = str(self.project / "hello.py")
        if _has_prompt(messages, SUBTASK):
            done = sum(1 for b in _blocks(messages) if b.get("type") == "tool_result")
            if done == 0:
                return self.add(tool("Bash", command="echo from-sub", description="say"), "sub")
            if done == 1:
                return self.add(tool("Read", file_path=hello), "sub")
            return [text("first line: print('hello')")]
        self.main_requests.append(body)
        used = sum(1 for b in _blocks(messages) if b.get("type") == "tool_use")
        plan = [
            lambda: tool("Write", file_path=hello, content="print('hi')\n"),
            lambda: tool("Edit", file_path=hello, old_string="hi", new_string="hello"),
            lambda: self.fails(tool("Bash", command=FAILING, description="read the config")),
            lambda: tool(
                "Agent",
                description="check hello",
                prompt=SUBTASK,
                subagent_type="general-purpose",
                run_in_background=False,  # one turn: its Stop comes after the subagent's
            ),
        ]
        if used < len(plan):
            return self.add(plan[used](), "main")
        return [text("Done over the MCP hook server.")]

    def fails(self, block: dict[str, Any]) -> dict[str, Any]:
        self.failing = block["id"]
        return block


@pytest.mark.usefixtures("reap_daemons")
def test_real_claude_code_session_over_the_hook_server(project: Path) -> None:
    """As a user has it, the daemon too: SessionStart starts it (the commands it
    carries may go through it); the running session's events go to the MCP hook server."""
    binary = claude_binary()
    home = new_home(project)
    check_installed(project, home, install_mcp(project, home, binary))

    model = Session(project)
    with FakeAnthropic(model) as api:
        done = run_session(binary, project, home, api, "TASK-MCP: make hello.py")
        requests = api.message_requests()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["result"] == "Done over the MCP hook server."
    session = result["session_id"]
    assert (project / "hello.py").read_text() == "print('hello')\n"

    # The subagent's id, as Claude Code named its transcript.
    (main,) = (home / ".claude" / "projects").glob(f"*/{session}.jsonl")
    (sub,) = main.with_suffix("").glob("subagents/agent-*.jsonl")
    agent = sub.stem.removeprefix("agent-")

    # 1. Every tool call the script made, with its agent and status.
    failing = model.failing
    expected = {
        ident: (
            name,
            session if who == "main" else agent,
            "failed" if ident == failing else "succeeded",
        )
        for ident, name, who in model.made
    }
    assert sorted(n for n, _, _ in expected.values()) == [
        "Agent",
        "Bash",
        "Bash",
        "Edit",
        "Read",
        "Write",
    ]
    found = query(project, "SELECT tool_use_id, tool_name, agent_id, status FROM tool_calls")
    assert {r[0]: tuple(r[1:]) for r in found} == expected

    # 2. The running session's events came over the MCP hook server; SessionStart was a command.
    transports = query(
        project,
        "SELECT event_type, group_concat(DISTINCT coalesce(transport, '-')),"
        " group_concat(DISTINCT source), count(*) FROM hook_events GROUP BY event_type",
    )
    by_event = {r[0]: (r[1], r[2]) for r in transports}
    counts = {r[0]: r[3] for r in transports}
    for name in (
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "SubagentStart",
        "SubagentStop",
        "Stop",
    ):
        assert by_event.get(name) == ("mcp", "hook"), (name, by_event)
    assert by_event["SessionStart"][0] in ("process", "relay"), by_event
    assert (counts["PreToolUse"], counts["PostToolUse"], counts["PostToolUseFailure"]) == (6, 5, 1)
    assert (counts["SubagentStart"], counts["SubagentStop"], counts["Stop"]) == (1, 1, 1)
    assert query(project, "SELECT count(*) FROM hook_events WHERE exit_code != 0") == [(0,)]

    # 3. The MCP hook server's answer to PostToolUseFailure reached the model.
    after = [
        json.dumps(b, ensure_ascii=False)
        for b in model.main_requests
        if any(x.get("tool_use_id") == failing for x in _blocks(b.get("messages") or []))
    ]
    assert after, "no request after the failing command"
    guidance = f"claude-session: `{FAILING}` failed (attempt 1)"
    assert guidance in after[0] and "Fix the cause and retry." in after[0], after[0][-3000:]

    # 4. The model was never offered the MCP hook server's tool.
    offered = {t.get("name", "") for b in requests for t in b.get("tools") or []}
    assert "Bash" in offered
    assert not [n for n in offered if SERVER in n or n.endswith("__hook")], offered
    assert not [b for b in requests if f"mcp__{SERVER}" in json.dumps(b)]

    # 5. The transcripts show nothing the hooks did not deliver: a catch-up adds nothing.
    catch_up(project, home)
    assert query(project, "SELECT count(*) FROM hook_events WHERE source != 'hook'") == [(0,)]

    # 6. Claude Code delivered every mcp_tool hook: none skipped, none failed.
    assert debug_lines(project, f"mcp_tool calling {SERVER}/{installer.HOOK_TOOL}")
    assert not debug_lines(project, *UNDELIVERED), debug_lines(project, *UNDELIVERED)
    assert not debug_lines(project, "not connected")


# --- 2. the MCP hook server killed mid-session ----------------------------------------------------

WRITES = 8
KILL_AT = 4  # the server is killed before the model asks for the 4th Write
DONE = "All eight files written."
CLOSED = f'MCP server "{SERVER}": STDIO connection closed'
STARTING = f'MCP server "{SERVER}": Starting connection'


class Killer:
    """Kills our MCP hook server of `project` when told to: once (`keep_down` False), or each one
    Claude Code starts from then on, as soon as it shows up in /proc (before it can answer
    `initialize`: the interpreter alone takes tens of milliseconds to start)."""

    def __init__(self, project: Path, keep_down: bool) -> None:
        self.project = project
        self.keep_down = keep_down
        self.killed: list[int] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def kill(self) -> None:
        """Kill the session's server and wait until Claude Code saw its connection close."""
        (pid,) = hook_servers(self.project)
        closed = len(debug_lines(self.project, CLOSED))
        self._kill(pid)
        if self.keep_down:
            self.thread.start()
        assert wait_for(lambda: pid not in hook_servers(self.project), 10)
        assert wait_for(lambda: len(debug_lines(self.project, CLOSED)) > closed, 10)

    def _kill(self, pid: int) -> None:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        self.killed.append(pid)

    def _watch(self) -> None:
        while not self.stop.is_set():
            for pid in hook_servers(self.project):
                self._kill(pid)
            time.sleep(0.001)

    def __enter__(self) -> Killer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(5)


class Writes(Calls):
    """Main: WRITES Writes, then DONE; before answering with the KILL_AT-th, `killer.kill()`.
    The script also notes which of our MCP hook servers were alive at each request."""

    def __init__(self, project: Path, killer: Killer) -> None:
        super().__init__()
        self.project = project
        self.killer = killer
        self.servers: list[list[int]] = []

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        used = sum(1 for b in _blocks(body.get("messages") or []) if b.get("type") == "tool_use")
        self.servers.append(hook_servers(self.project))
        if used >= WRITES:
            return [text(DONE)]
        if used + 1 == KILL_AT:
            self.killer.kill()
        path = str(self.project / f"f{used + 1}.txt")
        return self.add(tool("Write", file_path=path, content=f"file {used + 1}\n"), "main")


def run_killed(project: Path, keep_down: bool) -> tuple[Path, Writes, str]:
    """The scripted session with its MCP hook server killed before the KILL_AT-th Write; the
    session ran to its end as if nothing happened (fail open). No daemon: nothing
    but the CLI reads the transcripts. (home, script, session id)"""
    binary = claude_binary()
    home = new_home(project)
    check_installed(project, home, install_mcp(project, home, binary))
    with Killer(project, keep_down) as killer, FakeAnthropic(Writes(project, killer)) as api:
        model = api.script
        assert isinstance(model, Writes)
        done = run_session(
            binary, project, home, api, "TASK-KILL: write 8 files", CLAUDE_SESSION_NO_DAEMON="1"
        )
    assert killer.killed, "no MCP hook server was killed"
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert (result["is_error"], result["result"]) == (False, DONE)
    assert [(project / f"f{n}.txt").read_text() for n in range(1, WRITES + 1)] == [
        f"file {n}\n" for n in range(1, WRITES + 1)
    ]
    assert [name for _, name, _ in model.made] == ["Write"] * WRITES
    return home, model, result["session_id"]


def tool_events(project: Path) -> list[tuple[str, str, str, str | None, str]]:
    """(tool_use_id, event, source, transport, outcome) of every audit row of a tool event."""
    return query(
        project,
        "SELECT e.tool_use_id, e.hook_event_name, h.source, h.transport, h.outcome"
        " FROM hook_events h JOIN events e ON e.id = h.event_id"
        " WHERE e.hook_event_name IN ('PreToolUse', 'PostToolUse', 'PostToolUseFailure')",
    )


def test_hook_server_stopped_mid_session_loses_nothing(project: Path) -> None:
    """Killed once, the server is started again by Claude Code (2.1.330) at the next
    mcp_tool hook: every event goes on reaching the record through an MCP hook server."""
    home, model, session = run_killed(project, keep_down=False)
    ids = [ident for ident, _, _ in model.made]
    # one server until the kill (before the KILL_AT-th Write), another one from the next hook
    (first,) = {pid for seen in model.servers[:KILL_AT] for pid in seen}
    (second,) = {pid for seen in model.servers[KILL_AT:] for pid in seen}
    assert model.killer.killed == [first] and second != first
    # Claude Code's own words: the connection closed, then (at the next hook) a new one.
    assert len(debug_lines(project, CLOSED)) == 2  # the kill, the end of the session
    assert len(debug_lines(project, STARTING)) == 2
    assert not debug_lines(project, *UNDELIVERED), debug_lines(project, *UNDELIVERED)

    catch_up(project, home)  # finds nothing missing
    found = query(project, "SELECT tool_use_id, tool_name, agent_id, status FROM tool_calls")
    assert {r[0]: tuple(r[1:]) for r in found} == {i: ("Write", session, "succeeded") for i in ids}
    assert sorted(tool_events(project)) == sorted(
        (i, name, "hook", "mcp", "stored") for i in ids for name in ("PreToolUse", "PostToolUse")
    )
    assert query(project, "SELECT count(*) FROM hook_events WHERE source != 'hook'") == [(0,)]


def test_hook_server_that_cannot_come_back_is_filled_from_the_transcript(project: Path) -> None:
    """Killed, and each server Claude Code starts again killed at once: Claude Code gives up
    on it (its hooks fail, the session goes on), and the CLI's catch-up fills in every tool
    call the server never received from Claude Code's transcript, once each."""
    home, model, session = run_killed(project, keep_down=True)
    ids = [ident for ident, _, _ in model.made]
    before, after = ids[: KILL_AT - 1], ids[KILL_AT - 1 :]
    assert len(model.killer.killed) >= 2  # the session's server and Claude Code's restart
    # Claude Code tried once to start it again, then let the hooks fail without it.
    assert len(debug_lines(project, STARTING)) >= 2
    failed = debug_lines(project, f'mcp_tool hook error: MCP server "{SERVER}" is not connected')
    assert len(failed) >= 2 * len(after), failed

    # The hooks gave the calls before the kill, through the MCP hook server; the session ended.
    assert {r[0] for r in query(project, "SELECT tool_use_id FROM tool_calls")} == set(before)
    assert query(project, "SELECT count(*) FROM sessions WHERE ended_at IS NOT NULL") == [(1,)]

    catch_up(project, home)
    found = query(project, "SELECT tool_use_id, tool_name, agent_id, status FROM tool_calls")
    assert {r[0]: tuple(r[1:]) for r in found} == {i: ("Write", session, "succeeded") for i in ids}
    assert sorted(tool_events(project)) == sorted(
        (i, name, "hook", "mcp", "stored")
        if i in before
        else (i, name, reconcile.SOURCE, None, "stored")
        for i in ids
        for name in ("PreToolUse", "PostToolUse")
    )
    catch_up(project, home)  # again: nothing twice
    assert len(tool_events(project)) == 2 * WRITES


# --- 4. a compaction: the MCP hook server's tool is never named to the model as its own -----------

COMPACT_TASK = "TASK-MCP-COMPACT: make hello.py"
AFTER_TASK = "TASK-MCP-AFTER: check hello.py"
SUMMARY_ASKED = "CRITICAL: Respond with TEXT ONLY"
# Claude Code (2.1.330) records every mcp_tool hook's tool in the session's list of tools used
# and a compaction's summary message lists them all (docs/limitations.md): the one place the
# MCP hook server's tool may appear, under a name that says it is not the model's.
HOOK_TOOL_NAME = f"mcp__{SERVER}__{installer.HOOK_TOOL}"
TOOLS_USED = re.compile(r"<tools-used-before-summary>([^<]*)</tools-used-before-summary>")


def is_summary_request(body: dict[str, Any]) -> bool:
    """Claude Code's request for a compaction's summary: its instructions in a user message
    (after which Claude Code may put a system-role message, so not always the last one)."""
    return any(
        SUMMARY_ASKED in b.get("text", "")
        for m in body.get("messages") or []
        if m.get("role") == "user"
        for b in (m["content"] if isinstance(m["content"], list) else [{"text": m["content"]}])
    )


class Compacted(Calls):
    """Before the compaction: Write hello.py, a failing Bash, a subagent (Read); the summary;
    after it: Edit hello.py. Each phase is told by its prompt, not by counting calls (the
    compaction drops the earlier ones)."""

    def __init__(self, project: Path) -> None:
        super().__init__()
        self.project = project

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages") or []
        hello = str(self.project / "hello.py")
        if is_summary_request(body):
            return [text("<summary>Wrote hello.py; a command failed.</summary>")]
        if _has_prompt(messages, SUBTASK):
            done = any(b.get("type") == "tool_result" for b in _blocks(messages))
            if done:
                return [text("first line: print('hi')")]
            return self.add(tool("Read", file_path=hello), "sub")
        made = {name for _, name, who in self.made if who == "main"}
        if _has_prompt(messages, AFTER_TASK):
            if "Edit" in made:
                return [text("Checked after the compaction.")]
            return self.add(
                tool("Edit", file_path=hello, old_string="hi", new_string="hello"), "main"
            )
        plan = [
            ("Write", lambda: tool("Write", file_path=hello, content="print('hi')\n")),
            ("Bash", lambda: tool("Bash", command=FAILING, description="read the config")),
            (
                "Agent",
                lambda: tool(
                    "Agent",
                    description="check hello",
                    prompt=SUBTASK,
                    subagent_type="general-purpose",
                    run_in_background=False,
                ),
            ),
        ]
        for name, make in plan:
            if name not in made:
                return self.add(make(), "main")
        return [text("Done before the compaction.")]


@pytest.mark.usefixtures("reap_daemons")
def test_compaction_never_names_the_hook_tool_as_the_models(project: Path) -> None:
    """A session over the MCP hook server, `/compact`, then more work: no request the model gets
    (the summary request included) offers or names the MCP hook server's tool as a tool of its
    own, but for Claude Code's list of the tools used before the summary, where the name says
    whose it is; every event is recorded, through the MCP hook server."""
    binary = claude_binary()
    home = new_home(project)
    check_installed(project, home, install_mcp(project, home, binary))
    tap = project.parent / "tap"
    tap.mkdir()
    add_tap(project / ".claude" / "settings.local.json", tap)

    model = Compacted(project)
    with FakeAnthropic(model) as api:
        first = run_session(binary, project, home, api, COMPACT_TASK)
        assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
        session = json.loads(first.stdout)["session_id"]
        for prompt in ("/compact", AFTER_TASK):
            done = run_session(binary, project, home, api, prompt, resume=session)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        requests = api.message_requests()
    assert json.loads(done.stdout)["result"] == "Checked after the compaction."
    assert (project / "hello.py").read_text() == "print('hello')\n"

    # 1. The requests: the summary's, those before it, those after it.
    asked = [i for i, body in enumerate(requests) if is_summary_request(body)]
    assert asked, "no compaction summary was asked for"
    after = requests[asked[-1] + 1 :]
    assert any(_has_prompt(b.get("messages") or [], AFTER_TASK) for b in after)
    seen = [json.dumps(b, ensure_ascii=False) for b in requests]

    # 2. Never offered; never named by its earlier name (`hook`), anywhere.
    offered = {t.get("name", "") for b in requests for t in b.get("tools") or []}
    assert "Bash" in offered and not [n for n in offered if SERVER in n], offered
    assert not [i for i, s in enumerate(seen) if f"{SERVER}__hook" in s]

    # 3. Up to the summary request, included: the server's tool is not named at all.
    assert not [i for i, s in enumerate(seen[: asked[-1] + 1]) if f"mcp__{SERVER}" in s]

    # 4. After it: only in Claude Code's list of the tools used before the summary, under a
    # name that says it is not the model's (if Claude Code stops listing it, docs/limitations.md
    # and this test change).
    for s in seen[asked[-1] + 1 :]:
        lists = TOOLS_USED.findall(s)
        assert any(HOOK_TOOL_NAME in found.split(", ") for found in lists), lists
        assert f"mcp__{SERVER}" not in TOOLS_USED.sub("", s), s[-3000:]
    assert HOOK_TOOL_NAME.endswith("__called_by_claude_code_not_the_model")

    # 5. Every event Claude Code sent is recorded once; those of the running session came
    # through the MCP hook server, the compaction's included.
    sent = [json.loads(p.read_text()) for p in tap.iterdir()]
    stored = query(project, "SELECT hook_event_name, tool_use_id FROM events")
    assert sorted((r[0], r[1] or "") for r in stored) == sorted(
        (p["hook_event_name"], p.get("tool_use_id") or "") for p in sent
    )
    transports = query(
        project,
        "SELECT event_type, group_concat(DISTINCT coalesce(transport, '-')),"
        " group_concat(DISTINCT source) FROM hook_events GROUP BY event_type",
    )
    by_event = {r[0]: (r[1], r[2]) for r in transports}
    for name in ("PreCompact", "PostCompact", "PreToolUse", "PostToolUse", "SubagentStop", "Stop"):
        assert by_event.get(name) == ("mcp", "hook"), (name, by_event)
    found = query(project, "SELECT tool_use_id, tool_name, status FROM tool_calls")
    assert {r[0]: (r[1], r[2]) for r in found} == {
        ident: (name, "failed" if name == "Bash" else "succeeded") for ident, name, _ in model.made
    }
    assert sorted(name for _, name, _ in model.made) == ["Agent", "Bash", "Edit", "Read", "Write"]
    assert query(project, "SELECT count(*) FROM hook_events WHERE exit_code != 0") == [(0,)]
    catch_up(project, home)
    assert query(project, "SELECT count(*) FROM hook_events WHERE source != 'hook'") == [(0,)]
    assert not debug_lines(project, *UNDELIVERED), debug_lines(project, *UNDELIVERED)
