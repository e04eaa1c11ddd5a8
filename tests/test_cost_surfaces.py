"""Cost where people look (issue 22, point 4): `agents`, `timeline`, the web page and the
status line show what the model responses cost, from Claude Code's transcripts; a turn keeps
its answer (turns.result_text).

One session recorded in-process (tests/inproc.py) with a subagent; its transcripts written
into a CLAUDE_CONFIG_DIR as Claude Code 2.1.330 writes them and read by `transcripts.catch_up`.
Every figure checked is the one message_usage holds after Claude Code's own cost-state was
apportioned: the surfaces must agree with the store, not with numbers of their own."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli, web_pages
from inproc import Recorder
from test_transcripts import (
    AGENT,
    PROMPT,
    SESSION,
    T0,
    assistant,
    cost_state,
    tool_use,
    user,
    write,
)

from claude_session.core import db, executions, statusline
from claude_session.core.figures import usd
from claude_session.services.cost import costs, transcripts

SECRET = "sk-ant-api03-" + "c" * 40
ANSWER = f"Done <b>bold</b>: the limit is configurable now (key {SECRET})"
FIGURES = {"claude-opus-4-5": 1.2449, "claude-haiku-4-5": 0.0123}


@pytest.fixture
def session(recorder: Recorder, config: Path) -> Recorder:
    """The session, its hooks at T0 + the seconds shown, its transcripts beside them.

    main: prompt (1), m1 asks for Write toolu_w1 (2), the Write (3-4), m2 asks for the Agent
    call (4.5), the subagent starts (6), s1 text (6.5), s2 asks for Write toolu_sw (7), the
    subagent's Write (7.5-8), s3 its last words (8.5), it stops (9), m3 the answer (10),
    Stop (11); h1, a haiku response of the main thread (10.5)."""
    main_path = config / "projects" / "-tmp-project" / f"{SESSION}.jsonl"
    sub_path = main_path.parent / SESSION / "subagents" / f"agent-{AGENT}.jsonl"
    rec = recorder
    base = {"session_id": SESSION, "transcript_path": str(main_path), "cwd": rec.root}
    sub = {"agent_id": AGENT, "agent_type": "general-purpose"}

    def at(seconds: float, payload: dict[str, Any]) -> None:
        rec.now = T0 + seconds
        rec.send(base | payload)

    at(0, {"hook_event_name": "SessionStart", "source": "startup"})
    at(1, {"hook_event_name": "UserPromptSubmit", "prompt": "make it configurable"})
    write_call = {"tool_name": "Write", "tool_use_id": "toolu_w1"}
    given = {"file_path": f"{rec.root}/src/config.py", "content": "LIMIT = 10\n"}
    at(3, write_call | {"hook_event_name": "PreToolUse", "tool_input": given})
    at(4, write_call | {"hook_event_name": "PostToolUse", "tool_input": given})
    agent_call = {"tool_name": "Agent", "tool_use_id": "toolu_agent1"}
    task = {"description": "sub", "prompt": "SUB", "subagent_type": "general-purpose"}
    at(5, agent_call | {"hook_event_name": "PreToolUse", "tool_input": task})
    at(6, sub | {"hook_event_name": "SubagentStart"})
    sub_write = {"tool_name": "Write", "tool_use_id": "toolu_sw"}
    given = {"file_path": f"{rec.root}/src/app.py", "content": "VALUE = 2\n"}
    at(7.5, sub | sub_write | {"hook_event_name": "PreToolUse", "tool_input": given})
    at(8, sub | sub_write | {"hook_event_name": "PostToolUse", "tool_input": given})
    stop = {"hook_event_name": "SubagentStop", "agent_transcript_path": str(sub_path)}
    at(9, sub | stop | {"last_assistant_message": "changed it", "stop_hook_active": False})
    at(9.5, agent_call | {"hook_event_name": "PostToolUse", "tool_input": task})
    at(11, {"hook_event_name": "Stop", "last_assistant_message": ANSWER})

    write(
        main_path,
        [
            user(PROMPT, 1),
            assistant(
                "m1", 2, tokens=(3000, 700, 20_000, 1000), blocks=[tool_use("toolu_w1", "Write")]
            ),
            assistant(
                "m2", 4.5, tokens=(50, 300, 24_000, 200), blocks=[tool_use("toolu_agent1", "Agent")]
            ),
            assistant("m3", 10, tokens=(20, 400, 25_000, 100)),
            assistant("h1", 10.5, model="claude-haiku-4-5", tokens=(900, 80, 0, 0)),
            cost_state(FIGURES),
        ],
    )
    sidechain = {"agentId": AGENT, "isSidechain": True}
    write(
        sub_path,
        [
            user(PROMPT, 6.2) | sidechain,
            assistant("s1", 6.5, tokens=(4000, 90, 0, 3000)) | sidechain,
            assistant("s2", 7, tokens=(10, 200, 7000, 50), blocks=[tool_use("toolu_sw", "Write")])
            | sidechain,
            assistant("s3", 8.5, tokens=(10, 150, 7300, 40)) | sidechain,
        ],
    )
    transcripts.catch_up(rec.conn, SESSION)
    return rec


def messages(rec: Recorder) -> dict[str, dict[str, Any]]:
    found = db.rows(
        rec.conn,
        "SELECT message_id, agent_id, cost_usd, input_tokens + output_tokens + cache_read_tokens"
        " + cache_creation_tokens AS tokens FROM message_usage",
    )
    return {str(r["message_id"]): r for r in found}


def cost_of(found: dict[str, dict[str, Any]], *ids: str) -> float:
    return sum(float(found[i]["cost_usd"]) for i in ids)


def test_every_response_is_read_and_priced_from_claude_codes_figures(session: Recorder) -> None:
    found = messages(session)
    assert sorted(found) == ["h1", "m1", "m2", "m3", "s1", "s2", "s3"]
    assert sum(float(r["cost_usd"]) for r in found.values()) == pytest.approx(
        sum(FIGURES.values()), abs=1e-12
    )


def test_agents_show_each_agents_own_tokens_and_cost(
    session: Recorder, project: Path, config: Path
) -> None:
    found = messages(session)
    done = run_cli(project, "agents", "--json", CLAUDE_CONFIG_DIR=str(config))
    assert done.returncode == 0, done.stderr
    agents = {a["agent"]: a for a in json.loads(done.stdout)}
    main, sub = agents[SESSION], agents[AGENT]
    assert main["cost_usd"] == pytest.approx(cost_of(found, "m1", "m2", "m3", "h1"), abs=1e-12)
    assert sub["cost_usd"] == pytest.approx(cost_of(found, "s1", "s2", "s3"), abs=1e-12)
    assert main["tokens"] == sum(found[m]["tokens"] for m in ("m1", "m2", "m3", "h1"))
    assert sub["tokens"] == sum(found[m]["tokens"] for m in ("s1", "s2", "s3"))
    # the table shows them as a person reads them (wide: every column)
    table = run_cli(project, "agents", "--wide", CLAUDE_CONFIG_DIR=str(config))
    assert table.returncode == 0, table.stderr
    assert usd(sub["cost_usd"]) in table.stdout and usd(main["cost_usd"]) in table.stdout


def test_timeline_gives_each_frame_the_responses_since_the_frame_before(
    session: Recorder, project: Path, config: Path
) -> None:
    found = messages(session)
    done = run_cli(project, "timeline", "--json", CLAUDE_CONFIG_DIR=str(config))
    assert done.returncode == 0, done.stderr
    frames = json.loads(done.stdout)["frames"]
    by = {(f["kind"], f["agent"]): f for f in frames}
    sub_write = next(f for f in frames if f["kind"] == "tool" and f["agent"] == AGENT)
    main_write = next(f for f in frames if f["kind"] == "tool" and f["agent"] == "main")
    # a response belongs to the frame of the tool call it asked for ...
    assert main_write["cost_usd"] == pytest.approx(cost_of(found, "m1"), abs=1e-12)
    assert main_write["tokens"] == found["m1"]["tokens"] and main_write["messages"] == 1
    # ... or to the next frame of its own agent: s1 (text) before the subagent's Write
    assert sub_write["cost_usd"] == pytest.approx(cost_of(found, "s1", "s2"), abs=1e-12)
    assert by[("subagent_stop", AGENT)]["cost_usd"] == pytest.approx(
        cost_of(found, "s3"), abs=1e-12
    )
    turn_end = by[("turn_end", "main")]
    assert turn_end["cost_usd"] == pytest.approx(cost_of(found, "m2", "m3", "h1"), abs=1e-12)
    # frames no response came before: no figure, not $0
    for kind in ("session_start", "turn_start"):
        assert by[(kind, "main")]["cost_usd"] is None
    assert by[("subagent_start", AGENT)]["cost_usd"] is None
    total = sum(f["cost_usd"] or 0 for f in frames)
    assert total == pytest.approx(sum(FIGURES.values()), abs=1e-12)
    # the turn's answer, redacted
    assert turn_end["result_text"].startswith("Done <b>bold</b>")
    assert SECRET not in turn_end["result_text"]

    wide = run_cli(project, "timeline", "--wide", CLAUDE_CONFIG_DIR=str(config))
    assert wide.returncode == 0, wide.stderr
    assert "cost" in wide.stdout.splitlines()[1]
    assert usd(main_write["cost_usd"]) in wide.stdout
    narrow = run_cli(project, "timeline", CLAUDE_CONFIG_DIR=str(config), COLUMNS="80")
    assert narrow.returncode == 0, narrow.stderr
    # piped at 80 columns: whole lines, no column hidden, nothing cut (issue 32)
    assert "…" not in narrow.stdout and usd(main_write["cost_usd"]) in narrow.stdout
    assert "hidden at 80 columns" not in narrow.stdout


def test_a_turn_keeps_its_answer_redacted_and_capped(session: Recorder) -> None:
    stored = session.rows("SELECT turn_no, status, result_text FROM turns")
    assert len(stored) == 1
    turn_no, status, text = stored[0]
    assert (turn_no, status) == (1, "done")
    assert text.startswith("Done <b>bold</b>: the limit is configurable now (key ")
    assert SECRET not in text
    # a long answer is capped; the prompt after it ends the turn without touching it
    base = {"session_id": SESSION, "cwd": session.root}
    session.advance(30)
    session.send(base | {"hook_event_name": "UserPromptSubmit", "prompt": "again"})
    session.send(base | {"hook_event_name": "Stop", "last_assistant_message": "x" * 5000})
    latest = session.rows("SELECT result_text FROM turns WHERE turn_no = 2")[0][0]
    assert latest == "x" * executions.RESULT_CAP
    # and `cost --by turn --json` says it beside the turn's cost
    report = costs.report(session.conn, "turn", SESSION)
    first = next(r for r in report["rows"] if r["turn"] == 1)
    assert first["result_text"] == text
    assert first["cost_usd"] == pytest.approx(sum(FIGURES.values()), abs=1e-12)


def test_the_status_line_shows_the_cost_within_80_characters(session: Recorder) -> None:
    recorded = costs.report(session.conn, "session", SESSION)["total"]["cost_usd"]
    # no figure in the input: what the transcripts said
    raw = json.dumps({"session_id": SESSION, "cwd": session.root}).encode()
    done = statusline.compute(raw)
    assert done.status is not None and done.status.cost_from == "recorded"
    assert done.status.cost == pytest.approx(recorded, abs=1e-12)
    assert done.line.startswith(f"cs: ${recorded:,.2f} · ")
    # Claude Code's live figure wins when the input has one
    live = {"session_id": SESSION, "cwd": session.root, "cost": {"total_cost_usd": 3.5}}
    done = statusline.compute(json.dumps(live).encode())
    assert done.status is not None and done.status.cost_from == "claude_code"
    assert done.line.startswith("cs: $3.50 · ")
    # and a figure that is none (a string, negative, absurd) is not shown
    for bad in ("3.5", -1, 1e300, True):
        odd = live | {"cost": {"total_cost_usd": bad}}
        assert statusline.compute(json.dumps(odd).encode()).status.cost_from == "recorded"  # type: ignore[union-attr]
    # everything at once, long: still 80 characters, the cost kept
    many = [(f"a-very-long-subagent-type-{i}", 2) for i in range(5)]
    path = "src/" + "deep/" * 20 + "name.py"
    line = statusline.render(statusline.Status(11, many, [path], 2, 2, 12_345.678))
    assert line == "cs: $12,345.68 · 11 agents running · 1 contested file · 2 open errors"
    coloured = statusline.render(statusline.Status(11, many, [path], 2, 2, 12_345.678), True)
    assert coloured.endswith("\x1b[33m2 open errors\x1b[0m")  # a retry's colour, still
    assert statusline.render(statusline.Status(11, many, [path], 2, 2, 1.24)) == (
        "cs: $1.24 · 11 agents running · 1 contested file · 2 open errors (ladder 2/4)"
    )
    small = statusline.render(statusline.Status(0, [], [], 0, 0, 0.001))
    assert small == "cs: <$0.01 · idle"


def test_the_web_page_shows_cost_per_session_agent_turn_and_a_chart(session: Recorder) -> None:
    found = messages(session)
    html, listing = web_pages(session.root, f"session/{SESSION[:8]}", "")
    total = usd(sum(FIGURES.values()))
    assert total in listing  # the sessions list has each session's cost
    assert f"cost {total} · " in html
    # each agent's box says what its own responses cost
    boxes = dict(
        re.findall(
            r'<g class="agent" data-status="\w+" data-agent="([^"]+)">.*?'
            r'<text class="cost"[^>]*>([^<]*)</text></g>',
            html,
            re.S,
        )
    )
    assert boxes[SESSION].startswith(usd(cost_of(found, "m1", "m2", "m3", "h1")))
    assert boxes[AGENT].startswith(usd(cost_of(found, "s1", "s2", "s3")))
    # the turn with its answer, escaped, and its cost
    turns = re.search(r"<table class=turns>.*?</table>", html, re.S)
    assert turns is not None
    assert "Done &lt;b&gt;bold&lt;/b&gt;" in turns.group(0) and "<b>" not in turns.group(0)
    assert SECRET not in html
    assert f'<td class="num cost">{total}</td>' in turns.group(0)
    # the chart: inline SVG, one point per priced response, ending at the total
    chart = re.search(r'<svg [^>]*class="cost-chart".*?</svg>', html, re.S)
    assert chart is not None
    assert len(re.findall(r"<circle ", chart.group(0))) == len(found)
    assert '<path class="cost-line" d="M' in chart.group(0) and total in chart.group(0)
    assert "<script" not in html
