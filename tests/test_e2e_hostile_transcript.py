"""Issue 30 as an attacker uses it, with the real Claude Code CLI 2.1.330 against a scripted
Messages API on 127.0.0.1: the agent forges lines into its own session's transcript.

Session A (the hooks installed from the wheel, as a user installs them): the model runs one Bash
command that appends, with `>>`, assistant entries whose token counts are 1e400, a 400-digit
string, a 400-digit number, -5 and NaN, cost-states whose costs are 1e308 and -5, an entry
nested 100,000 levels deep and one nested 900 deep (Python parses it, a recursive walk may not);
then it answers and the session ends. Session B, afterwards in the same project: two turns, all
good. Then the installed `claude-session` as a user runs it: `status`, `cost`, `timeline` and
`doctor` all exit 0; A's and B's real responses are counted with the tokens the API reported and
Claude Code's own cost; no forged figure is shown or stored; `doctor` names the skipped lines
and where the first one is; the reader got past them and does not read them again.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import WheelInstall, installed_project, query, wait_for
from fake_api import FakeAnthropic, is_compaction, text, tool
from test_e2e_claude import _blocks, _has_prompt, claude_binary, run_claude

from claude_session.services.background import daemon_control

pytestmark = pytest.mark.e2e

PROMPT_A = "TASK-FORGE: append to your own transcript"
PROMPT_B = "TASK-CLEAN: write b.txt"
PROMPT_B2 = "TASK-CLEAN: anything else?"

# The forging program, run by the agent's Bash command. It writes the figures' text itself
# ("9" * 400, "1e" + "400", ...): the command, which the hooks record and `timeline` shows, holds
# none of them literally, so any forged figure found in an output came from the transcript.
FORGE = r"""
import datetime, json, os, sys, uuid
path = sys.argv[1]
session = os.path.basename(path)[: -len(".jsonl")]
now = datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
big = "9" * 400
neg = str(0 - 5)
huge = "1e" + "308"
model = "claude-" + "forged-1"
def assistant(n, usage, content='[{"type":"text","text":"forged"}]'):
    return (
        '{"parentUuid":null,"isSidechain":false,"type":"assistant","uuid":"' + str(uuid.uuid4())
        + '","timestamp":"' + now + '","sessionId":"' + session + '","message":{"id":"msg_forged'
        + str(n) + '","type":"message","role":"assistant","model":"' + model + '",'
        + '"content":' + content + ',"stop_reason":"end_turn","usage":' + usage + "}}"
    )
def cost(total):
    return (
        '{"type":"cost-state","sessionId":"' + session + '","totalCostUSD":' + total
        + ',"totalAPIDuration":1,"totalToolDuration":1,"totalLinesAdded":1,"totalLinesRemoved":0,'
        + '"modelUsage":{"' + model + '":{"inputTokens":1,"outputTokens":1,"costUSD":' + total
        + '}},"hasUnknownModelCost":false}'
    )
depth = 100000
lines = [
    assistant(1, '{"input_tokens":1e' + '400,"output_tokens":1}'),
    assistant(2, '{"input_tokens":"' + big + '","output_tokens":1}'),
    assistant(3, '{"input_tokens":' + big + ',"output_tokens":1}'),
    assistant(4, '{"input_tokens":' + neg + ',"output_tokens":1}'),
    assistant(5, '{"input_tokens":1,"output_tokens":Na' + 'N}'),
    cost(huge),
    cost(neg),
    assistant(6, '{"input_tokens":4242,"output_tokens":1}', "[" * depth + "]" * depth),
    assistant(
        7,
        '{"input_tokens":4343,"output_tokens":1}',
        '[{"type":"tool_use","id":"toolu_forged","name":"Bash","input":{"command":'
        + "[" * 900 + "]" * 900 + "}}]",
    ),
]
sys.stdout.write("".join(line + "\n" for line in lines))
"""
FORGED_LINES = 9
FORGE_COMMAND = (
    'f=$(ls -t "$HOME"/.claude/projects/*/*.jsonl | head -n 1)'
    f' && python3 -c {shlex.quote(FORGE)} "$f" >> "$f" && echo appended'
)


class Model:
    """A: the forging Bash command, then an answer. B: a Write and an answer; then an answer."""

    def __init__(self, project: Path) -> None:
        self.project = project

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages") or []
        if is_compaction(body):
            return [text("<summary>work</summary>")]
        results = sum(1 for b in _blocks(messages) if b.get("type") == "tool_result")
        if _has_prompt(messages, PROMPT_A):
            if results == 0:
                return [tool("Bash", command=FORGE_COMMAND, description="append lines")]
            return [text("Appended the lines.")]
        if _has_prompt(messages, PROMPT_B2):
            return [text("Nothing else.")]
        if _has_prompt(messages, PROMPT_B):
            if results == 0:
                return [tool("Write", file_path=str(self.project / "b.txt"), content="b\n")]
            return [text("Wrote b.txt.")]
        return [text("?")]


def usage(n: int) -> dict[str, int]:
    """Each response its own counts, so a message counted twice or lost shows."""
    return {
        "input_tokens": 100 + 7 * n,
        "output_tokens": 20 + 3 * n,
        "cache_read_input_tokens": 1000 * n,
        "cache_creation_input_tokens": 50 + 11 * n,
    }


TOKENS = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_tokens": "cache_read_input_tokens",
    "cache_creation_tokens": "cache_creation_input_tokens",
}


def entries(transcript: Path) -> list[tuple[int, int, dict[str, Any] | None]]:
    """(byte offset, line number, entry or None when not JSON we take) of each line."""
    found, offset = [], 0
    for number, line in enumerate(transcript.read_bytes().splitlines(keepends=True), 1):
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            entry = None
        found.append((offset, number, entry if isinstance(entry, dict) else None))
        offset += len(line)
    return found


def forged(entry: dict[str, Any] | None) -> bool:
    """A line of ours: not JSON at all, or naming the forged model."""
    return entry is None or "claude-forged-1" in json.dumps(entry, allow_nan=True)


def last_cost_state(transcript: Path) -> dict[str, Any]:
    """Claude Code's own latest cost-state in the file (ours left out)."""
    states = [
        e
        for _, _, e in entries(transcript)
        if e is not None and e.get("type") == "cost-state" and not forged(e)
    ]
    assert states, f"no cost-state of Claude Code's in {transcript}"
    return states[-1]


# A figure of the forgeries, as text: infinities, NaN, 1e308 written out, a run of nines, -5.
FORGED_TEXT = re.compile(
    r"(?i)\b(inf|infinity|nan)\b|e\+?308|e\+?400|(?<![\d.])9{12}"
    r"|(?<![\w-])-\$?5(?![\w.])|claude-forged"
)


def numbers(value: Any, path: str = "") -> list[tuple[str, float]]:
    """Every number in a JSON document, with where it is."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [(path, value)]
    if isinstance(value, dict):
        return [n for k, v in value.items() for n in numbers(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [n for i, v in enumerate(value) for n in numbers(v, f"{path}[{i}]")]
    return []


def assert_no_forged_figure(document: Any) -> None:
    """No token count or cost in a JSON output is a forgery: each finite, from 0 to 1e9."""
    for where, value in numbers(document):
        if re.search(r"token|cost|usd|messages", where, re.I):
            assert math.isfinite(value) and 0 <= value < 1e9, (where, value)


def test_a_transcript_forged_by_the_agent_bricks_nothing(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    binary = claude_binary()
    project, home = installed_project(tmp_path, wheel_install)
    try:
        with FakeAnthropic(Model(project), usage) as api:
            a = run_claude(binary, project, home, api, PROMPT_A)
            used_a = list(api.usages)
            b = run_claude(binary, project, home, api, PROMPT_B)
            b2 = run_claude(binary, project, home, api, PROMPT_B2, "--resume", b["session_id"])
            used_b = api.usages[len(used_a) :]
        assert a["result"] == "Appended the lines.", a
        assert (b["result"], b2["result"]) == ("Wrote b.txt.", "Nothing else."), (b, b2)
        assert (project / "b.txt").read_text() == "b\n"
        # The daemon (started by the hooks) reads B, whatever A holds.
        read_b = (
            "SELECT 1 FROM transcript_files JOIN sessions ON path = transcript_path"
            " WHERE sessions.session_id = ?"
        )
        assert wait_for(lambda: query(project, read_b, (b["session_id"],)), 30), "B not read"
    finally:
        daemon_control.stop(str(project))
    session_a, session_b = a["session_id"], b["session_id"]
    assert session_a != session_b == b2["session_id"]
    paths = dict(query(project, "SELECT session_id, transcript_path FROM sessions"))
    transcript_a, transcript_b = Path(paths[session_a]), Path(paths[session_b])

    # The agent's own `>>` put every forgery into A's transcript, after lines of Claude Code's.
    lines_a = entries(transcript_a)
    bad = [(offset, number) for offset, number, e in lines_a if forged(e)]
    assert len(bad) == FORGED_LINES, bad
    first_byte, first_line = bad[0]
    assert first_line > 1 and any(not forged(e) for _, n, e in lines_a if n > first_line)
    assert len(used_a) == 2 and len(used_b) == 3  # the Bash call and its answer; B's three

    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(home / ".claude"), "COLUMNS": "400"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [wheel_install.cli, "--project", str(project), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, (args, done.stdout[-3000:], done.stderr[-3000:])
        assert not FORGED_TEXT.search(done.stdout + done.stderr), (args, done.stdout)
        return done

    cli("cost")  # what the daemon left unread, read now: `status` reads no transcript
    status = json.loads(cli("status", "--json").stdout)
    assert status["cost"]["not_read_yet"] == [], status["cost"]
    database = status["database"]
    assert database["internal_errors"] == 0, database["last_internal_error"]
    assert_no_forged_figure(status)
    shown = cli("status").stdout
    own_b = last_cost_state(transcript_b)["totalCostUSD"]
    own_a = last_cost_state(transcript_a)["totalCostUSD"]
    assert 0 < own_a < 1 and 0 < own_b < 1, (own_a, own_b)
    assert status["cost"]["cost_usd"] == pytest.approx(own_b, abs=1e-9), status["cost"]
    assert f"{own_b:.4f}" in shown or f"{own_b:.2f}" in shown, shown

    cost_text = cli("cost").stdout
    every = json.loads(cli("cost", "--json").stdout)
    assert_no_forged_figure(every)
    assert every["total"]["cost_usd"] == pytest.approx(own_a + own_b, abs=1e-9), every["total"]
    for ours, api_name in TOKENS.items():
        assert every["total"][ours] == sum(u[api_name] for u in used_a + used_b), ours
    assert every["total"]["messages"] == len(used_a) + len(used_b)
    assert every["claude_code_total_usd"] == pytest.approx(own_a + own_b, abs=1e-9)
    assert session_b[:8] in cost_text and session_a[:8] in cost_text, cost_text
    for session, used, own in ((session_a, used_a, own_a), (session_b, used_b, own_b)):
        one = json.loads(cli("cost", "--session", session, "--json").stdout)
        assert_no_forged_figure(one)
        assert one["total"]["cost_usd"] == pytest.approx(own, abs=1e-9), (session, one["total"])
        assert one["claude_code_total_usd"] == pytest.approx(own, abs=1e-9)
        assert one["total"]["messages"] == len(used)
        for ours, api_name in TOKENS.items():
            assert one["total"][ours] == sum(u[api_name] for u in used), (session, ours)
        assert one["price_table_models"] == [], one

    cli("timeline")
    cli("timeline", session_a)
    timeline_a = json.loads(cli("timeline", session_a, "--json").stdout)
    assert_no_forged_figure(timeline_a)
    assert sum(f["messages"] for f in timeline_a["frames"]) == len(used_a)

    # Nothing forged was stored: not a response, not a cost, not a figure.
    assert query(
        project, "SELECT count(*) FROM message_usage WHERE message_id LIKE '%forged%'"
    ) == [(0,)]
    for table in ("message_usage", "session_usage", "session_tool_usage"):
        columns = [*TOKENS, "thinking_tokens", "cost_usd"]
        for row in query(project, f"SELECT {', '.join(columns)} FROM {table}"):
            for column, value in zip(columns, row, strict=True):
                assert value is None or (math.isfinite(value) and 0 <= value < 1e9), (
                    table,
                    column,
                    value,
                )
    per_session = dict(
        query(project, "SELECT session_id, sum(input_tokens) FROM message_usage GROUP BY 1")
    )
    assert per_session == {
        session_a: sum(u["input_tokens"] for u in used_a),
        session_b: sum(u["input_tokens"] for u in used_b),
    }
    for session, stored, model_usage in query(
        project, "SELECT session_id, total_cost_usd, model_usage FROM session_costs"
    ):
        assert stored == pytest.approx(own_a if session == session_a else own_b, abs=1e-12)
        assert "claude-forged-1" not in model_usage and not FORGED_TEXT.search(model_usage)

    # `doctor` counts the skipped lines and says where the first one is: file and byte.
    doctor_text = cli("doctor").stdout
    checks = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}
    detail = checks["transcripts"]["detail"]
    found = re.search(
        r"; (\d+) lines skipped in (\d+) \(latest: (.+?), (\d+) lines from byte (\d+)\)", detail
    )
    assert found, detail
    total, files, path, in_file, at = found.groups()
    assert int(total) >= FORGED_LINES and int(in_file) >= FORGED_LINES, detail
    assert files == "1", detail  # B's transcript: nothing skipped
    assert path == str(transcript_a), detail
    assert int(at) == first_byte, (detail, f"the first forged line is line {first_line}")
    assert f"{total} lines skipped" in doctor_text and f"from byte {at}" in doctor_text

    # The reader went past the forged lines, to the end of each file, and stays there.
    def read_to() -> dict[str, tuple[int, int]]:
        return {
            p: (r, s)
            for p, r, s in query(
                project, "SELECT path, read_to, lines_skipped FROM transcript_files"
            )
        }

    before = read_to()
    assert before[str(transcript_a)][0] == transcript_a.stat().st_size
    assert before[str(transcript_b)][0] == transcript_b.stat().st_size
    assert before[str(transcript_b)][1] == 0
    again = json.loads(cli("status", "--json").stdout)
    assert again["cost"] == status["cost"]
    cli("cost", "--json")
    assert read_to() == before  # nothing read twice, no skipped line counted again
