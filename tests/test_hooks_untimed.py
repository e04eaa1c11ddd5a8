"""`claude-session hooks` and the hook runs Claude Code wrote no time for (issue 45): our
command hooks that print nothing get no line in the transcript, so the measured share leaves
them out. The report counts them and says what they could add at the median of the timed runs,
as an estimate with its basis, never as a measurement.

The session is the real one of tests/fixtures/claude-code-2.1.330/transcripts (command hooks:
Claude Code timed only the Stop, in its Stop summary, at 24 ms): its 22 hook payloads go through
the installed hook entry, its transcripts are put where Claude Code keeps them (their times
moved to now, so the Stop line falls after our Stop run, as it did), and `hooks` is the
installed CLI."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from conftest import FIXTURES, RECORDED_PROJECT, count, run_cli, run_hook

TRANSCRIPTS = FIXTURES / "transcripts"
SESSION = "840dff94-7c63-46f1-99fc-8eb8e37afafc"
AGENT_FILE = Path(SESSION) / "subagents" / "agent-a5bb0ac2d6d61a70c.jsonl"
STAMP = re.compile(r'"timestamp":"([0-9T:.\-]+)Z"')
STOP_MS = 24.0  # the Stop summary's durationMs for our hook, the session's one timed run


def moved(text: str, project: Path, transcript: Path, shift: timedelta) -> str:
    """A fixture's text with the recorded project and transcript paths moved to the test's,
    and every timestamp moved by `shift`."""
    text = text.replace(
        f"/home/dev/.claude/projects/-home-dev-project/{SESSION}.jsonl", str(transcript)
    ).replace(RECORDED_PROJECT, str(project))

    def later(found: re.Match[str]) -> str:
        at = datetime.fromisoformat(found.group(1)).replace(tzinfo=UTC) + shift
        return f'"timestamp":"{at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]}Z"'

    return STAMP.sub(later, text)


def test_untimed_runs_are_counted_and_estimated_apart(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    config = tmp_path / "claude-config"
    folder = config / "projects" / "-test-project"
    folder.mkdir(parents=True)
    transcript = folder / f"{SESSION}.jsonl"
    env = {"CLAUDE_CONFIG_DIR": str(config)}

    payloads = moved((TRANSCRIPTS / "hooks.jsonl").read_text(), project, transcript, timedelta())
    for line in payloads.splitlines():
        if line.strip():
            payload = json.loads(line)
            run_hook(payload["hook_event_name"], payload, project, env=env)
    recorded = count(project, "hook_events", "session_id = ?", (SESSION,))
    assert recorded == 22

    # The transcripts, as Claude Code wrote them meanwhile: their last line now.
    main = (TRANSCRIPTS / f"{SESSION}.jsonl").read_text()
    last = max(datetime.fromisoformat(t).replace(tzinfo=UTC) for t in STAMP.findall(main))
    shift = datetime.now(UTC) - last
    transcript.write_text(moved(main, project, transcript, shift))
    agent = transcript.parent / AGENT_FILE
    agent.parent.mkdir(parents=True)
    agent.write_text(moved((TRANSCRIPTS / AGENT_FILE).read_text(), project, transcript, shift))

    done = run_cli(project, "hooks", "--session", SESSION, "--json", **env)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    total = found["total"]
    assert (total["runs"], total["measured"], total["unmeasured"]) == (22, 1, 21)
    assert total["total_ms"] == STOP_MS  # the measured figures hold the timed run alone
    wall = found["wall_time_ms"]
    assert wall and wall > 0
    assert total["share"] == STOP_MS / wall

    guess = found["untimed_estimate"]
    assert guess["estimate"] is True
    assert (guess["runs"], guess["basis_runs"], guess["basis_median_ms"]) == (21, 1, STOP_MS)
    assert guess["estimated_ms"] == 21 * STOP_MS
    assert guess["share"] == 21 * STOP_MS / wall
    assert "median" in guess["basis"]

    done = run_cli(project, "hooks", "--session", SESSION, **env, COLUMNS="200")
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    assert (
        "estimate, not measured: 21 hook run(s) untimed by Claude Code; at the median of the 1"
        " it timed (24 ms) they would add ~504 ms" in said
    ), said
    assert f"({21 * STOP_MS / wall:.1%} of the wall time)" in said
