"""claude-session as a Claude Code plugin, with the real CLI 2.1.330: the checkout is a valid
plugin folder, `install --plugin` writes and registers one and removes our settings.json hooks
(plugin and settings hooks would both fire: every event recorded twice), and a real session
with the plugin records each event exactly once."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import PYTHON, ROOT, WheelInstall, count, fixture, query
from fake_api import FakeAnthropic
from test_e2e_claude import Model, claude_binary, run_claude

from claude_session.services.background import daemon_control
from claude_session.services.setup import plugin

pytestmark = pytest.mark.e2e
CLI = str(Path(PYTHON).parent / "claude-session")


def claude(binary: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HOME=str(home), DISABLE_AUTOUPDATER="1")
    env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    return subprocess.run(
        [str(binary), *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_the_checkout_is_a_valid_plugin_folder_whose_hooks_record(project: Path) -> None:
    stale = subprocess.run(
        [PYTHON, "-m", "tools.plugin_files", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert stale.returncode == 0, stale.stderr  # hooks/hooks.json is what the generator writes
    hooks = json.loads((ROOT / "hooks" / "hooks.json").read_text())
    command = hooks["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    payload = fixture("PostToolUse.Bash", project)
    run = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "CLAUDE_PLUGIN_ROOT": str(ROOT)}
        | {"CLAUDE_PROJECT_DIR": str(project), "CLAUDE_SESSION_NO_DAEMON": "1"}
        | {"CLAUDE_SESSION_STATE_DIR": os.environ["CLAUDE_SESSION_STATE_DIR"]}
        | {"CLAUDE_SESSION_DATA_DIR": os.environ["CLAUDE_SESSION_DATA_DIR"]},
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert query(project, "SELECT dispatcher FROM hook_events") == [("plugin",)]
    valid = claude(claude_binary(), project, "plugin", "validate", str(ROOT), "--json")
    assert json.loads(valid.stdout)["success"] is True, valid.stdout


def test_install_plugin_registers_it_and_removes_settings_hooks(
    project: Path, tmp_path: Path
) -> None:
    binary = claude_binary()
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), XDG_DATA_HOME=str(home / "data"))
    run = [CLI, "--project", str(project)]
    subprocess.run([*run, "install"], check=True, env=env, capture_output=True)
    assert (project / ".claude" / "settings.local.json").exists()
    done = subprocess.run(
        [*run, "install", "--plugin", "--claude", str(binary)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checked: a SessionStart sent through the written command was recorded" in done.stdout
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert "hooks" not in settings  # ours are gone: the plugin records now
    folder = home / "data" / "claude-session" / "plugin"
    hooks = json.loads((folder / "hooks" / "hooks.json").read_text())
    argv = shlex.split(hooks["hooks"]["SessionStart"][0]["hooks"][0]["command"].split(";")[0])
    assert argv[0] == os.path.abspath(PYTHON) and argv[3].endswith("claude_session/hook.py")
    assert plugin.PLUGIN_ID in claude(binary, home, "plugin", "list", "--json").stdout
    assert json.loads(claude(binary, home, "plugin", "validate", str(folder), "--json").stdout)[
        "success"
    ]
    # and back: settings.json hooks take over, the plugin goes
    again = subprocess.run(
        [*run, "install", "--claude", str(binary)], env=env, capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr
    assert plugin.PLUGIN_ID not in claude(binary, home, "plugin", "list", "--json").stdout
    assert "hooks" in json.loads((project / ".claude" / "settings.local.json").read_text())


def test_a_real_session_with_the_plugin_records_each_event_once(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    binary = claude_binary()
    project, home, tap = tmp_path / "project", tmp_path / "home", tmp_path / "tap"
    for folder in (project, home, tap):
        folder.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    env = dict(os.environ, HOME=str(home), XDG_DATA_HOME=str(home / "data"))
    # settings.json hooks first (as a user who installed before), then the plugin
    cli = [wheel_install.cli, "--project", str(project)]
    subprocess.run([*cli, "install"], check=True, env=env, capture_output=True)
    done = subprocess.run(
        [*cli, "install", "--plugin", "--claude", str(binary)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # an independent tap in settings.json saves every payload Claude Code sends
    command = f'f=$(mktemp "{tap}/XXXXXXXX") && cat > "$f"'
    events = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse"]
    events += ["PostToolUseFailure", "SubagentStart", "SubagentStop", "Stop", "SessionEnd"]
    settings = {
        "hooks": {e: [{"hooks": [{"type": "command", "command": command}]}] for e in events}
    }
    (project / ".claude" / "settings.json").write_text(json.dumps(settings))
    try:
        with FakeAnthropic(Model(project)) as api:
            run_claude(binary, project, home, api, "TASK-PLUGIN: create hello.py and check it")
    finally:
        daemon_control.stop(str(project))  # the plugin's SessionStart started it
    sent = [json.loads(p.read_text()) for p in tap.iterdir()]
    assert len(sent) > 10
    marks = ",".join("?" * len(events))
    stored = count(project, "events", f"hook_event_name IN ({marks})", events)
    assert stored == len(sent)
    audited = query(project, "SELECT dispatcher, count(*) FROM hook_events GROUP BY dispatcher")
    assert dict(audited).get("plugin") == count(project, "events")
    assert set(dict(audited)) == {"plugin"}  # no settings.json hook of ours fired too
