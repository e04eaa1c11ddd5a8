"""Every hook event of the real Claude Code CLI (2.1.330 and 2.1.332) is installed and recorded:
our list of events is checked against the one in each CLI's own code, and the two events the
2.1.240 docs did not have, PreModelSwitch and PostModelSwitch, are recorded like any other
informational event (stored, no derived state, no answer: an answer would vet or steer
the switch)."""

from __future__ import annotations

import json
import mmap
import re
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest
from conftest import PYTHON, ROOT, fixture, query, run_hook
from fake_api import FakeAnthropic, text
from test_e2e_claude import claude_binary, claude_env

from claude_session.core.events import EVENTS
from claude_session.services.setup import installer, plugin

CLI = str(Path(PYTHON).parent / "claude-session")
SWITCH_EVENTS = ("PreModelSwitch", "PostModelSwitch")
# An array literal of two or more quoted names, as the minified code writes one: ["A","B",...]
NAME_ARRAY = re.compile(rb'\[(?:"[A-Z][A-Za-z]*",)+"[A-Z][A-Za-z]*"\]')
# Each event's input schema: hook_event_name:<literal>("Name"), whatever the minifier calls it
INPUT_SCHEMA = re.compile(rb'hook_event_name:[A-Za-z_$][\w$]*\("([A-Z][A-Za-z]*)"\)')
# Names any list of all hook events holds (each in the CLI since 1.0)
ANCHORS = {"PreToolUse", "PostToolUse", "UserPromptSubmit", "Notification", "Stop"}
ANCHORS |= {"SessionStart", "SessionEnd"}


def cli_hook_events(binary: Path) -> tuple[set[str], set[str]]:
    """The hook event names in the installed CLI's code (the npm package's native binary,
    whose JavaScript is embedded as text): its list of all events, the longest array literal
    holding every anchor, and, independently, the events that have an input schema."""
    with binary.resolve().open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        arrays = [
            frozenset(name.decode() for name in re.findall(rb'"(\w+)"', found.group()))
            for found in NAME_ARRAY.finditer(m)
        ]
        schemas = {found.group(1).decode() for found in INPUT_SCHEMA.finditer(m)}
    candidates = [names for names in arrays if names >= ANCHORS]
    assert candidates, f"no list of hook events found in {binary.resolve()}"
    longest = max(len(names) for names in candidates)
    full = {names for names in candidates if len(names) == longest}
    assert len(full) == 1, f"differing lists of hook events: {full}"
    return set(next(iter(full))), schemas


# Each tested CLI: its number of hook events, and ours it does not have (it never calls them).
CLIS = {"2.1.330": (33, {"PreSkillShellCommand"}), "2.1.332": (34, set())}


@pytest.mark.e2e
@pytest.mark.parametrize("version", sorted(CLIS))
def test_our_events_are_every_hook_event_of_the_installed_cli(version: str) -> None:
    events, schemas = cli_hook_events(claude_binary(version))
    assert events == schemas  # the list found is the CLI's list of events, not some other
    size, newer = CLIS[version]
    assert len(events) == size and set(SWITCH_EVENTS) <= events
    assert set(EVENTS) - newer == events, (
        f"missing: {sorted(events - set(EVENTS))}; not in the CLI: {sorted(set(EVENTS) - events)}"
    )
    assert len(EVENTS) == len(set(EVENTS))
    installed = set(installer.installed_events()) | set(installer.SKIPPED_EVENTS)
    assert installed - newer == events


def test_model_switch_events_are_installed_in_settings_and_the_plugin(project: Path) -> None:
    done = subprocess.run(
        [CLI, "--project", str(project), "install"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert f"installed {len(EVENTS) - 1} hooks" in done.stdout  # all but WorktreeCreate
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    checked_in = json.loads((ROOT / "hooks" / "hooks.json").read_text())
    written = plugin.hooks_json()
    for event in SWITCH_EVENTS:
        for hooks in (settings["hooks"], checked_in["hooks"], written["hooks"]):
            [group] = hooks[event]
            [handler] = group["hooks"]
            assert installer.is_ours(handler) and "matcher" not in group  # every model
            assert handler["command"].split(";")[0].split()[-1] == event
            assert handler["timeout"] == installer.DEFAULT_TIMEOUT and "async" not in handler
    assert set(checked_in["hooks"]) == set(installer.installed_events())


def _rows(project: Path) -> dict[str, int]:
    """Rows per table: what one event wrote, when the database was empty before it."""
    tables = [r[0] for r in query(project, "SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {t: int(query(project, f'SELECT count(*) FROM "{t}"')[0][0]) for t in tables}


@pytest.mark.parametrize("name", ["PreModelSwitch.sdk", "PostModelSwitch.sdk"])
def test_a_model_switch_hook_records_the_event_and_answers_nothing(
    project: Path, tmp_path: Path, name: str
) -> None:
    payload = fixture(name, project)
    event = payload["hook_event_name"]
    result = run_hook(event, payload, project)
    assert result.returncode == 0 and result.stdout == ""  # never vets nor steers the switch
    stored = query(project, "SELECT session_id, hook_event_name, payload FROM events")
    assert [(s, e, json.loads(p)) for s, e, p in stored] == [
        (payload["session_id"], event, payload)
    ]
    audit = query(
        project, "SELECT event_type, exit_code, outcome, payload_summary FROM hook_events"
    )
    assert audit == [(event, 0, "stored", f"{event} sdk")]
    # Like InstructionsLoaded, another event we only keep: the same rows, nothing derived.
    other = tmp_path / "other"
    other.mkdir()
    loaded = {k: payload[k] for k in ("session_id", "transcript_path", "cwd")} | {
        "hook_event_name": "InstructionsLoaded",
        "file_path": str(other / "CLAUDE.md"),
        "memory_type": "Project",
        "load_reason": "session_start",
    }
    run_hook("InstructionsLoaded", loaded, other)
    assert _rows(project) == _rows(other)


def _read_until(
    out: IO[str], wanted: Callable[[dict[str, Any]], bool], seen: list[dict[str, Any]]
) -> dict[str, Any]:
    """Read the CLI's stream-json output up to the first message `wanted` accepts."""
    for line in out:
        if not line.strip().startswith("{"):
            continue
        message: dict[str, Any] = json.loads(line)
        seen.append(message)
        if wanted(message):
            return message
    raise AssertionError(f"the CLI ended first; last messages: {seen[-5:]}")


@pytest.mark.e2e
def test_a_real_model_switch_is_recorded(tmp_path: Path) -> None:
    """The real CLI, headless, switches model between two turns (a set_model control
    request, as the SDK sends it): both events reach the database as Claude Code sent them."""
    binary = claude_binary()
    project, home, tap = tmp_path / "project", tmp_path / "home", tmp_path / "tap"
    for folder in (project, home, tap):
        folder.mkdir()
    subprocess.run([CLI, "--project", str(project), "install"], check=True, capture_output=True)
    # Beside ours, a hook that saves what Claude Code sent: an independent record.
    settings_path = project / ".claude" / "settings.local.json"
    settings = json.loads(settings_path.read_text())
    saver = {"type": "command", "command": f'f=$(mktemp "{tap}/XXXXXXXX") && cat > "$f"'}
    for event in SWITCH_EVENTS:
        settings["hooks"].setdefault(event, []).append({"hooks": [saver]})
    settings_path.write_text(json.dumps(settings))
    seen: list[dict[str, Any]] = []
    with FakeAnthropic(lambda body: [text("ok")]) as api:
        env = claude_env(home, api.url) | {"CLAUDE_SESSION_NO_DAEMON": "1"}
        args = ["-p", "--input-format", "stream-json", "--output-format", "stream-json"]
        claude = subprocess.Popen(
            [str(binary), *args, "--verbose", "--dangerously-skip-permissions"],
            cwd=project,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert claude.stdin is not None and claude.stdout is not None
        watchdog = threading.Timer(300, claude.kill)  # a hung CLI ends its output: a failure
        watchdog.start()
        try:

            def send(message: dict[str, Any]) -> None:
                assert claude.stdin is not None
                claude.stdin.write(json.dumps(message) + "\n")
                claude.stdin.flush()

            def prompt(words: str) -> dict[str, Any]:
                send({"type": "user", "message": {"role": "user", "content": words}})
                assert claude.stdout is not None
                return _read_until(claude.stdout, lambda m: m.get("type") == "result", seen)

            first = prompt("hello")
            request = {"subtype": "set_model", "model": "haiku"}
            send({"type": "control_request", "request_id": "switch", "request": request})
            answer = _read_until(
                claude.stdout,
                lambda m: (
                    m.get("type") == "control_response"
                    and m["response"].get("request_id") == "switch"
                ),
                seen,
            )
            assert answer["response"]["subtype"] == "success", answer  # not blocked by us
            second = prompt("again")
            claude.stdin.close()
            assert claude.wait(timeout=120) == 0
        finally:
            watchdog.cancel()
            if claude.poll() is None:
                claude.kill()
                claude.wait()
    new_model = answer["response"]["response"]["model"]
    assert "haiku" in new_model and set(second["modelUsage"]) - set(first["modelUsage"])

    sent = [json.loads(p.read_text()) for p in tap.iterdir()]
    switches = sorted(
        (p for p in sent if p["hook_event_name"] in SWITCH_EVENTS), key=lambda p: json.dumps(p)
    )
    post = [p for p in switches if p["hook_event_name"] == "PostModelSwitch"]
    assert len(post) == 1 and post[0]["to_model"] == new_model and post[0]["source"] == "sdk"
    assert any(p["hook_event_name"] == "PreModelSwitch" for p in switches)
    stored = query(
        project,
        "SELECT payload FROM events WHERE hook_event_name IN (?, ?)",
        SWITCH_EVENTS,
    )
    assert sorted((json.loads(r[0]) for r in stored), key=lambda p: json.dumps(p)) == switches
    audit = query(
        project,
        "SELECT exit_code, outcome, dispatcher FROM hook_events WHERE event_type IN (?, ?)",
        SWITCH_EVENTS,
    )
    assert audit == [(0, "stored", "settings")] * len(switches)
