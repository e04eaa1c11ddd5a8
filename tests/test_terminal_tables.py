"""Tables on a real terminal never split a value (issue 44): the installed `claude-session`
run under a pseudo-terminal of 80 and 120 columns, every table it prints, normal and
`--all`, on a project with long ids, a cost of $0.0086 and states like `completed`. Each value
is whole on one line (or its column is named as hidden, with what shows it); a free-text cell
folds at spaces; rows whose must-keep columns cannot fit come one record per block. And
`events --all` lists oldest first, as `events` does."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest
from conftest import AGENTS, BUSY_SESSION, CLI, LONG_FILE, fixture, hook_env, run_cli, run_hook

from claude_session.core.terminal import escape_controls

COSTED = "c0575e55-8086-4a1e-9d3c-2f5a0c1d0086"  # its one model response cost $0.0086
WIDTHS = (80, 120)
KEY = "release_" + "x" * 60  # a state key the busy fixture sets
# Every table the CLI prints, normal and `--all` (tests/every_command.py lists the commands).
COMMANDS = [
    ["agents"],
    ["agents", "--all"],
    ["sessions"],
    ["sessions", "--all"],
    ["events"],
    ["events", "--all"],
    ["errors"],
    ["errors", "--all"],
    ["claims"],
    ["claims", "--all"],
    ["failed-paths", "--all"],
    ["verdicts", "--all"],
    ["cost"],
    ["cost", "--all"],
    ["cost", "--by", "agent"],
    ["hooks"],
    ["hooks", "--all"],
    ["memory", "list"],
    ["memory", "list", "--all"],
    ["state", "list"],
    ["state", "history"],
    ["timeline", BUSY_SESSION],
    ["status"],
    ["config"],
    ["doctor"],
]
# Values that must show whole wherever a command shows them, by the words of the command.
MUST_SHOW = {
    "agents --all": [BUSY_SESSION, COSTED, *AGENTS, "completed"],
    "sessions": ["$0.0086"],
    "sessions --all": ["$0.0086"],
    "events": ["PostToolUseFailure"],
    "events --all": ["PostToolUseFailure"],
    "errors": ["abandoned"],
    "errors --all": ["abandoned"],
    "claims --all": [escape_controls(LONG_FILE)],
    "cost": ["$0.0086"],
    "cost --all": ["$0.0086"],
    "state list": [KEY],
    "state history": [KEY],
}
WIDE_ONLY = {"agents --all": ["$0.0086", "general-purpose"]}  # at 120 the type and cost fit
# Values that, when shown, are never cut short at a line's end: `comple`, `$0.00`.
ATOMS = ["completed", "abandoned", "$0.0086", BUSY_SESSION, COSTED, *AGENTS, KEY]
# `timeline` and `status` name an agent by its first 10 characters, by their own design.
SHORTENED = {"timeline": AGENTS, "status": AGENTS}
DATE = re.compile(r"\d{4}-\d\d-\d\d")


def on_terminal(args: list[str], columns: int, env: dict[str, str]) -> tuple[int, str]:
    """`claude-session ARGS` with a pseudo-terminal `columns` wide for stdin, stdout and
    stderr: its exit code and what the terminal got, ANSI codes stripped."""
    controller, terminal = os.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen([CLI, *args], stdin=terminal, stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal closed: the command ended
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    os.close(controller)
    text = seen.decode("utf-8", "replace").replace("\r\n", "\n")
    return proc.wait(timeout=60), re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def cut_short(line: str, value: str) -> bool:
    """Whether `line` holds the start of `value` cut off (`comple`, `$0.00`): a prefix of it
    followed by the end of the line or a gap between columns."""
    return any(re.search(re.escape(value[:k]) + r"(  |$)", line) for k in range(3, len(value)))


@pytest.fixture
def costed(finished: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The finished busy project, and a second session whose one model response (1000
    tokens in, 144 out, claude-opus-4-5) cost $0.0086: its transcript in a Claude Code config
    folder of the test's own. The environment a user's terminal gives the CLI."""
    config = tmp_path / "claude-config"
    transcript = config / "projects" / "p" / f"{COSTED}.jsonl"
    transcript.parent.mkdir(parents=True)
    usage = {"input_tokens": 1000, "output_tokens": 144}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "usage": usage}
    message |= {"model": "claude-opus-4-5", "content": [{"type": "text", "text": "ok"}]}
    line = {"type": "assistant", "uuid": "u1", "sessionId": COSTED, "message": message}
    transcript.write_text(json.dumps(line | {"timestamp": "2026-11-28T10:00:00.000Z"}) + "\n")
    base = {"session_id": COSTED, "transcript_path": str(transcript)}
    run_hook("SessionStart", fixture("SessionStart.startup", finished) | base, finished)
    prompt = fixture("UserPromptSubmit", finished) | base | {"prompt": "say ok"}
    run_hook("UserPromptSubmit", prompt, finished)
    run_hook("SessionEnd", fixture("SessionEnd", finished) | base, finished)
    env = hook_env(finished, CLAUDE_CONFIG_DIR=str(config), TERM="xterm-256color")
    done = run_cli(finished, "cost", "--json", CLAUDE_CONFIG_DIR=str(config))
    assert done.returncode == 0, done.stderr
    assert round(json.loads(done.stdout)["total"]["cost_usd"], 4) == 0.0086
    return finished, env


@pytest.mark.parametrize("width", WIDTHS)
def test_no_table_splits_a_value_on_a_terminal(
    costed: tuple[Path, dict[str, str]], width: int
) -> None:
    project, env = costed
    for args in COMMANDS:
        words = " ".join(args).replace(f" {BUSY_SESSION}", "")
        code, text = on_terminal(["--project", str(project), *args], width, env)
        assert code == (1 if args == ["doctor"] else 0), (args, text)
        assert "Traceback" not in text, text
        lines = text.splitlines()
        # No line wider than the terminal, but a value wider than it alone on its line (a
        # record's path, in a block): printed whole, the terminal wraps it.
        too_wide = [
            line
            for line in lines
            if len(line) > width and not (line.startswith("  ") and " " not in line.strip())
        ]
        assert not too_wide, (args, width, too_wide)
        must = MUST_SHOW.get(words, []) + (WIDE_ONLY.get(words, []) if width > 80 else [])
        if args == ["status"]:  # its key/value sections too: the database's path whole
            must = [str(project / ".claude-session.db")]
        for value in must:
            assert any(value in line for line in lines), (args, width, value, text)
        for value in ATOMS:
            if value in SHORTENED.get(args[0], []):
                continue
            cut = [line for line in lines if cut_short(line, value)]
            assert not cut, (args, width, value, cut)
        for line in lines:  # a time is never parted from its date
            for found in DATE.finditer(line):
                after = line[found.end() : found.end() + 9]
                assert re.fullmatch(r" \d\d:\d\d:\d\d", after), (args, width, line)


def test_all_listings_hide_columns_as_the_page_does_and_say_so_once(
    costed: tuple[Path, dict[str, str]],
) -> None:
    """`agents --all` at 80 columns keeps the agent, its task and its state, each whole, and
    names the columns it left out once, with what shows them; at 120 it keeps the cost."""
    project, env = costed
    _, narrow = on_terminal(["--project", str(project), "agents", "--all"], 80, env)
    lines = narrow.splitlines()
    assert re.split(r"\s{2,}", lines[0].strip()) == ["agent", "task", "state"], narrow
    notes = [n for n, line in enumerate(lines) if line.startswith("(hidden at 80 columns:")]
    assert len(notes) == 1, narrow
    said = " ".join(" ".join(lines[notes[0] :]).split())
    assert "cost" in said and "--wide or --json shows them" in said, said
    _, wide = on_terminal(["--project", str(project), "agents", "--all"], 120, env)
    head = re.split(r"\s{2,}", wide.splitlines()[0].strip())
    assert head[:3] == ["agent", "type", "task"] and "cost" in head, wide
    row = next(line for line in wide.splitlines() if line.startswith(COSTED))
    assert "$0.0086" in row and "completed" in row, wide


def test_events_all_lists_oldest_first_as_events_does(costed: tuple[Path, dict[str, str]]) -> None:
    """`events` prints its page oldest first, the newest last (as a log reads, the newest by
    the prompt); `events --all` streams every event in the same order, in every format."""
    project, env = costed
    page = json.loads(run_cli(project, "events", "--json").stdout)
    every = json.loads(run_cli(project, "events", "--all", "--json").stdout)
    ids = [e["id"] for e in every]
    assert ids == sorted(ids) and len(ids) > 20, ids
    assert [e["id"] for e in page] == ids[-len(page) :]
    piped = run_cli(project, "events", "--all").stdout.splitlines()
    assert [int(line.split("\t")[0]) for line in piped[1:]] == ids
    _, shown = on_terminal(["--project", str(project), "events", "--all"], 120, env)
    rows = [int(line.split()[0]) for line in shown.splitlines() if re.match(r"\d+ ", line)]
    assert rows == ids, shown
