"""End to end with the real Claude Code CLI 2.1.330 against a scripted Messages API on 127.0.0.1.

A session writes and edits a file, fails a command and runs a subagent; then `/compact`; then
asks again. Beside our hooks, a tap hook saves every payload Claude Code sent to its own file,
so "the database holds every event" is checked against an independent record.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import WheelInstall, install_lock, query, wait_for, write_config
from fake_api import FakeAnthropic, is_compaction, text, tool

from claude_session.services.background import daemon_control
from claude_session.services.setup import installer

pytestmark = pytest.mark.e2e

CLAUDE_VERSION = "2.1.330"
SUBTASK = "SUBTASK-B: read hello.py and report its first line"
FAILING = "cat missing_config.yaml"


def claude_binary(version: str = CLAUDE_VERSION) -> Path:
    """The real CLI from the npm registry, installed once into a cache folder."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    prefix = cache / "claude-session-tests" / f"claude-code-{version}"
    binary = prefix / "node_modules" / ".bin" / "claude"
    with install_lock(prefix):
        _install(binary, prefix, version)
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    assert version in done.stdout, done.stdout + done.stderr
    return binary


def _install(binary: Path, prefix: Path, version: str) -> None:
    if not binary.exists():
        npm = shutil.which("npm")
        assert npm, "npm is needed to install @anthropic-ai/claude-code for the end-to-end test"
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                f"@anthropic-ai/claude-code@{version}",
            ],
            check=True,
            capture_output=True,
            timeout=600,
        )


class Model:
    """What the scripted model says, decided from each request."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.phase = "work"
        self.main_requests: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages") or []
        if is_compaction(body):
            return [text("<summary>Wrote and edited hello.py, a command failed.</summary>")]
        if _has_prompt(messages, SUBTASK):
            done = any(b.get("type") == "tool_result" for b in _blocks(messages))
            return (
                [text("first line: print('hello')")]
                if done
                else [tool("Read", file_path=str(self.project / "hello.py"))]
            )
        self.main_requests.append((self.phase, body))
        if self.phase != "work":
            return [text("Continuing from the restored state.")]
        used = [b["name"] for b in _blocks(messages) if b.get("type") == "tool_use"]
        plan = [
            tool("Write", file_path=str(self.project / "hello.py"), content="print('hi')\n"),
            tool("Bash", command=FAILING, description="read the config"),
            tool(
                "Edit",
                file_path=str(self.project / "hello.py"),
                old_string="hi",
                new_string="hello",
            ),
            tool(
                "Agent", description="check hello", prompt=SUBTASK, subagent_type="general-purpose"
            ),
        ]
        return [plan[len(used)]] if len(used) < len(plan) else [text("Done.")]


def _blocks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for m in messages if isinstance(m.get("content"), list) for b in m["content"]]


def add_tap(settings_path: Path, tap: Path) -> None:
    """A second hook on every event that saves the raw payload, one file per delivery."""
    settings = json.loads(settings_path.read_text())
    command = f'f=$(mktemp "{tap}/XXXXXXXX") && cat > "$f"'
    for event in installer.installed_events():
        settings["hooks"][event].append({"hooks": [{"type": "command", "command": command}]})
    settings_path.write_text(json.dumps(settings, indent=2))


def claude_env(home: Path, url: str) -> dict[str, str]:
    """The real CLI's environment: the scripted API, a scratch HOME, our state folders."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-e2e-not-a-real-key",
        "IS_SANDBOX": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_SESSION_STATE_DIR": os.environ["CLAUDE_SESSION_STATE_DIR"],
        "CLAUDE_SESSION_DATA_DIR": os.environ["CLAUDE_SESSION_DATA_DIR"],
    }


def run_claude(
    binary: Path, project: Path, home: Path, api: FakeAnthropic, *args: str
) -> dict[str, Any]:
    env = claude_env(home, api.url)
    done = subprocess.run(
        [str(binary), "-p", *args, "--output-format", "json", "--dangerously-skip-permissions"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(done.stdout)


def test_real_claude_code_session_is_recorded_and_restored_after_compact(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    binary = claude_binary()
    project, home, tap = tmp_path / "project", tmp_path / "home", tmp_path / "tap"
    for folder in (project, home, tap):
        folder.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    # the hooks come from a wheel installed into a fresh venv, as a user installs it
    subprocess.run(
        [wheel_install.cli, "--project", str(project), "install"], check=True, capture_output=True
    )
    add_tap(project / ".claude" / "settings.local.json", tap)  # where the install wrote

    model = Model(project)
    try:
        with FakeAnthropic(model) as api:
            first = run_claude(binary, project, home, api, "TASK-E2E: create hello.py and check it")
            session = first["session_id"]
            # The SessionStart hook started the project's daemon, detached.
            assert wait_for(lambda: daemon_control.is_running(str(project)))
            model.phase = "compact"
            run_claude(binary, project, home, api, "/compact", "--resume", session)
            model.phase = "after"
            run_claude(binary, project, home, api, "what next?", "--resume", session)
            # Once it runs, that process answers the hooks (the relay): each of them the same
            # as if the hook had done the work itself (what follows checks that work).
            relay = json.loads(Path(daemon_control.status_path(str(project))).read_text())
            assert relay["relay_served"] >= 15 and relay["relay_declined"] == 0, relay
    finally:
        daemon_control.stop(str(project))
    assert not daemon_control.is_running(str(project))

    # 1. Every event Claude Code sent is in the database, once.
    sent = [json.loads(p.read_text()) for p in tap.iterdir()]
    assert len(sent) > 30
    stored = query(
        project, "SELECT session_id, hook_event_name, tool_use_id, agent_id, payload FROM events"
    )
    assert len(stored) == len(sent)
    assert sorted(json.loads(row[4])["hook_event_name"] for row in stored) == sorted(
        p["hook_event_name"] for p in sent
    )
    for payload in sent:
        if payload.get("tool_use_id"):
            matches = [
                r
                for r in stored
                if r[1] == payload["hook_event_name"] and r[2] == payload["tool_use_id"]
            ]
            assert len(matches) == 1, payload["hook_event_name"]
            assert json.loads(matches[0][4]) == payload
    names = {p["hook_event_name"] for p in sent}
    assert {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "SubagentStart",
        "SubagentStop",
        "PreCompact",
        "PostCompact",
        "Stop",
        "SessionEnd",
    } <= names
    assert query(project, "SELECT count(*) FROM hook_events WHERE exit_code != 0")[0][0] == 0

    # 2. Derived state: the subagent linked to its task, helpers apart, the claim, the error.
    agents = query(
        project,
        "SELECT agent_type, status, description, task_description, is_internal"
        " FROM agent_registry WHERE is_internal = 0 AND is_main = 0",
    )
    assert agents == [("general-purpose", "completed", "check hello", SUBTASK, 0)]
    assert query(project, "SELECT count(*) FROM agent_registry WHERE is_internal = 1")[0][0] >= 1
    assert query(project, "SELECT file_path, agent_id, edits FROM file_claims") == [
        ("hello.py", "main", 2)
    ]
    assert query(project, "SELECT command, exit_code, attempt_number FROM error_log") == [
        (FAILING, 1, 1)
    ]
    kinds = {r[0] for r in query(project, "SELECT snapshot_type FROM context_snapshots")}
    assert {"pre_compact", "post_compact", "session_end"} <= kinds

    # 3. The model's first request after the compaction carries the restored state.
    after = [body for phase, body in model.main_requests if phase == "after"]
    assert after, "no model request after the compaction"
    request = json.dumps(after[0], ensure_ascii=False)
    assert "<claude-session-recorded-state>" in request
    assert "Context was just compacted" in request
    assert "hello.py by main" in request  # the claimed file
    assert FAILING.split()[1] in request and "failed 1x" in request  # the failed command
    assert "TASK-E2E: create hello.py" in request  # the task


SHARED = "shared.txt"
EDITOR_A = "SUBTASK-A: change alpha in shared.txt"
EDITOR_B = "SUBTASK-B: change beta in shared.txt"


class TwoEditors:
    """Two subagents edit one file: A in the foreground, B in the background. B's edit waits
    until A has edited (so A holds a claim) and A stays alive until B has edited."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.a_edited = threading.Event()
        self.b_edited = threading.Event()
        self.b_after_edit: dict[str, Any] | None = None

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages") or []
        results = sum(1 for b in _blocks(messages) if b.get("type") == "tool_result")
        path = str(self.project / SHARED)
        if _has_prompt(messages, EDITOR_A):
            if results == 0:
                return [tool("Read", file_path=path)]
            if results == 1:
                return [tool("Edit", file_path=path, old_string="alpha", new_string="alpha-A")]
            self.a_edited.set()
            self.b_edited.wait(60)  # stay alive (and hold the claim) while B edits
            return [text("A done")]
        if _has_prompt(messages, EDITOR_B):
            if results == 0:
                return [tool("Read", file_path=path)]
            if results == 1:
                self.a_edited.wait(60)
                return [tool("Edit", file_path=path, old_string="beta", new_string="beta-B")]
            if self.b_after_edit is None:
                self.b_after_edit = body  # what B's model saw right after its edit
            self.b_edited.set()
            return [text("B done")]
        used = [b for b in _blocks(messages) if b.get("type") == "tool_use"]
        if not used:
            return [
                tool(
                    "Agent",
                    description="editor A",
                    prompt=EDITOR_A,
                    subagent_type="general-purpose",
                    run_in_background=False,
                ),
                tool(
                    "Agent",
                    description="editor B",
                    prompt=EDITOR_B,
                    subagent_type="general-purpose",
                    run_in_background=True,
                ),
            ]
        return [text("Both editors are done.")]


def _has_prompt(messages: list[dict[str, Any]], prompt: str) -> bool:
    return any(
        m.get("role") == "user" and b.get("type") == "text" and b.get("text", "").strip() == prompt
        for m in messages
        for b in (m["content"] if isinstance(m["content"], list) else [])
    )


def test_real_claude_code_two_subagents_editing_one_file(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    binary = claude_binary()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (project / SHARED).write_text("alpha\nbeta\n")
    # the hooks come from a wheel installed into a fresh venv, as a user installs it
    subprocess.run(
        [wheel_install.cli, "--project", str(project), "install"], check=True, capture_output=True
    )
    model = TwoEditors(project)
    try:
        with FakeAnthropic(model) as api:
            run_claude(binary, project, home, api, "TASK-E2E-2: have two agents edit shared.txt")
    finally:
        daemon_control.stop(str(project))
    assert (project / SHARED).read_text() == "alpha-A\nbeta-B\n"

    # the registry: both editors, linked to their Agent calls, one of them in the background
    agents = query(
        project,
        "SELECT r.description, r.status, r.task_description, l.background, r.tool_uses"
        " FROM agent_registry r JOIN agent_launches l ON l.agent_id = r.id ORDER BY r.description",
    )
    assert [(d, s, t) for d, s, t, _, _ in agents] == [
        ("editor A", "completed", EDITOR_A),
        ("editor B", "completed", EDITOR_B),
    ]
    assert [bg for _, _, _, bg, _ in agents] == [0, 1]
    assert all(uses >= 2 for *_, uses in agents)  # Read and Edit each
    a_id = query(project, "SELECT id FROM agent_registry WHERE description = 'editor A'")
    # the claims: one file, both editors, both released when they finished
    claims = query(
        project,
        "SELECT file_path, agent_id, released_at IS NOT NULL FROM file_claims"
        " ORDER BY first_claimed_at",
    )
    assert [(f, released) for f, _, released in claims] == [(SHARED, 1), (SHARED, 1)]
    assert claims[0][1] == a_id[0][0]
    # the second editor's model request carries the conflict warning, naming A and its task
    assert model.b_after_edit is not None
    seen = json.dumps(model.b_after_edit, ensure_ascii=False)
    assert f"{SHARED} is being changed by another live agent" in seen
    warning = seen[seen.index(f"{SHARED} is being changed") :][:800]
    assert f"subagent {a_id[0][0]} (general-purpose)" in warning, warning
    assert EDITOR_A in warning, warning


STUCK = "cat settings.local.ini"


class ThreeFailures:
    """The same command fails three times; then /compact; then the session goes on."""

    def __init__(self) -> None:
        self.phase = "work"
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages") or []
        if is_compaction(body):
            return [text("<summary>Tried to read the settings file.</summary>")]
        self.requests.append((self.phase, body))
        if self.phase != "work":
            return [text("Looking at another way to get the settings.")]
        tries = sum(1 for b in _blocks(messages) if b.get("type") == "tool_use")
        if tries < 3:
            return [tool("Bash", command=STUCK, description="read the settings")]
        return [text("I am stuck on the settings file.")]


def test_real_claude_code_failed_path_survives_compaction_and_is_said_once(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    """A command fails 3 times (a failed approach, an open error); `/compact` in a resumed
    run (SessionStart resume, then compact); a resumed prompt. The failed approach survives the
    compaction, and each of our blocks holds each statement at most once. A compaction ends
    what was given before it: its block is whole and calls nothing earlier still in context,
    so after it the model may read a statement twice (in the resume's block Claude Code kept
    verbatim, and in the compaction's), never a claim that no longer holds."""
    binary = claude_binary()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    # the hooks come from a wheel installed into a fresh venv, as a user installs it
    subprocess.run(
        [wheel_install.cli, "--project", str(project), "install"], check=True, capture_output=True
    )
    model = ThreeFailures()
    try:
        with FakeAnthropic(model) as api:
            first = run_claude(binary, project, home, api, "TASK-E2E-3: read the settings")
            session = first["session_id"]
            model.phase = "compact"
            run_claude(binary, project, home, api, "/compact", "--resume", session)
            model.phase = "after"
            run_claude(binary, project, home, api, "go on", "--resume", session)
            summaries = [b for b in api.message_requests() if is_compaction(b)]
    finally:
        daemon_control.stop(str(project))

    # the ladder's guidance reached the model after each failure
    work = [
        json.dumps(body, ensure_ascii=False) for phase, body in model.requests if phase == "work"
    ]
    assert len(work) == 4
    assert "(attempt 1)" in work[1] and "Fix the cause and retry" in work[1]
    assert "(attempt 2)" in work[2]
    assert "3rd time" in work[3] and "research is required" in work[3]
    # the last SessionEnd abandoned what was never fixed, escalated or not (the ladder's step
    # stays recorded as the attempt number)
    assert query(project, "SELECT attempt_number, resolution FROM error_log ORDER BY id") == [
        (1, "abandoned"),
        (2, "abandoned"),
        (3, "abandoned"),
    ]
    assert query(project, "SELECT approach, still_relevant FROM failed_paths") == [(STUCK, 1)]

    # after the compaction, the next request names the failed approach
    after = [body for phase, body in model.requests if phase == "after"]
    assert after
    seen = json.dumps(after[0], ensure_ascii=False)
    section = seen[seen.index("## Failed approaches: do not repeat these") :][:600]
    assert STUCK in section and "No such file or directory" in section

    assert summaries, "the compaction's summary request was not seen"

    approach = f"{STUCK}; failed because: Exit code 1"  # the failed approach's line
    error = f"Bash `{STUCK}` failed 3x"  # the open error's line
    given = query(project, "SELECT source, text FROM injections WHERE kind = 'restore' ORDER BY id")
    for _, block in given:  # each block says each thing once
        assert block.count(approach) <= 1 and block.count(error) <= 1, block
    after = [json.dumps(b, ensure_ascii=False) for phase, b in model.requests if phase == "after"]
    assert after
    for seen in after:  # still told everything true
        assert 1 <= seen.count(approach) <= 2 and 1 <= seen.count(error) <= 2
        assert "Context was just compacted" in seen
    # The log: the resume's whole block, the compaction's whole block (nothing given before a
    # compaction is called still in context after it), then nothing: the resumed session
    # holds the compaction's block.
    assert [source for source, _ in given] == ["resume", "compact"]
    assert approach in given[0][1] and approach in given[1][1]
    assert "still in your context and still holds" not in given[1][1]


def test_default_judge_is_the_real_claude_cli_in_headless_mode(tmp_path: Path) -> None:
    """The default judge command, unchanged, with the real CLI found on PATH (the judge is
    opt-in: turned on here, as a user does)."""
    binary = claude_binary()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    write_config(project, {"judge_events": "TaskCompleted"})
    verdict = '{"decision": "block", "reason": "no test covers the new validation"}'
    with FakeAnthropic(lambda body: [text(verdict)]) as api:
        payload = {
            "session_id": "judge-session",
            "transcript_path": str(home / "t.jsonl"),
            "cwd": str(project),
            "hook_event_name": "TaskCompleted",
            "task_id": "1",
            "task_subject": "Validate parser input",
        }
        env = {
            "PATH": f"{binary.parent}:/usr/bin:/bin",
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "sk-ant-e2e-not-a-real-key",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
        done = installer.run_hook_command(
            installer.hook_command("TaskCompleted"),
            json.dumps(payload).encode(),
            project,
            timeout=300,
            extra_env=env,
        )
        judged = api.message_requests()
    assert done.returncode == 2, (
        done.stderr
    )  # through the installed command, as Claude Code runs it
    assert "no test covers the new validation" in done.stderr
    decision, reason, raw = query(project, "SELECT decision, reason, raw FROM llm_verdicts")[0]
    assert (decision, reason) == ("block", "no test covers the new validation")
    assert json.loads(raw)["result"] == verdict  # the `claude -p --output-format json` envelope
    assert len(judged) == 1 and "Validate parser input" in json.dumps(judged[0])
    assert "haiku" in judged[0]["model"]
    assert query(project, "SELECT count(*) FROM events") == [(1,)]  # the judge's hooks: off
