"""The web session page (issue 44's smaller things), read from the real web server
(`web_pages`): its cost chart holds what no transcript line carries, labelled, so it ends at
the session's whole cost; a prompt's or an answer's lines show as line breaks, escaped, never
as a literal `\\n`. (Removed forks: tests/test_serve.py, which makes and removes real ones.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import web_pages
from inproc import Recorder
from test_transcripts import PROMPT, SESSION, T0, assistant, cost_state, user, write

from claude_session.core.figures import usd
from claude_session.services.cost import transcripts

PROMPT_TEXT = "first line\nsecond <b>line</b>\n\tthird\x1b[2J"
ANSWER = "done:\nit <i>works</i>"
# Claude Code's own figures: the two responses read, and more tokens and cost than they hold,
# which is its helpers' (the compaction summariser and such): no transcript line carries it.
HELPERS_STATE = cost_state({"claude-opus-4-5": 0.9}) | {
    "modelUsage": {
        "claude-opus-4-5": {
            "inputTokens": 10_000,
            "outputTokens": 1_000,
            "cacheReadInputTokens": 0,
            "cacheCreationInputTokens": 0,
            "costUSD": 0.9,
        }
    }
}


@pytest.fixture
def session(recorder: Recorder, config: Path) -> Recorder:
    """One turn with a prompt and an answer of several lines, two responses of the main
    thread, and Claude Code's cost-state saying the session cost $0.90 in all."""
    main_path = config / "projects" / "-tmp-project" / f"{SESSION}.jsonl"
    base = {"session_id": SESSION, "transcript_path": str(main_path), "cwd": recorder.root}
    for seconds, payload in (
        (0, {"hook_event_name": "SessionStart", "source": "startup"}),
        (1, {"hook_event_name": "UserPromptSubmit", "prompt": PROMPT_TEXT}),
        (5, {"hook_event_name": "Stop", "last_assistant_message": ANSWER}),
    ):
        recorder.now = T0 + seconds
        recorder.send(base | payload)
    write(main_path, [user(PROMPT, 1), assistant("m1", 2), assistant("m2", 3), HELPERS_STATE])
    transcripts.catch_up(recorder.conn, SESSION)
    return recorder


def test_the_cost_chart_holds_what_no_transcript_carries_labelled(session: Recorder) -> None:
    (outside,) = session.rows(
        "SELECT cost_usd FROM message_usage WHERE session_id = ? AND agent_id = ?",
        (SESSION, "(not in transcripts)"),
    )[0]
    read = sum(r[0] for r in session.rows("SELECT cost_usd FROM message_usage WHERE at > 0"))
    assert outside > 0.5 and read + outside == pytest.approx(0.9, abs=1e-9)
    [html] = web_pages(session.root, f"session/{SESSION[:8]}")
    assert f"cost {usd(0.9)} · " in html
    chart = re.search(r'<svg [^>]*class="cost-chart".*?</svg>', html, re.S)
    assert chart is not None
    drawn = chart.group(0)
    # the axis goes up to the whole cost, not to the responses' part alone
    assert f'text-anchor="end">{usd(0.9)}</text>' in drawn
    part = re.search(r'<g class="cost-outside">.*?</g>', drawn, re.S)
    assert part is not None, drawn
    assert f"+{usd(outside)} not in transcripts</text>" in part.group(0)
    said = re.search(r"<h2>Cost</h2>.*?</p>", html, re.S)
    assert said is not None
    assert f"{usd(outside)} not in transcripts: what Claude Code" in said.group(0)
    assert f"{usd(0.9)} in all." in said.group(0)


def test_a_prompt_and_an_answer_show_their_lines_as_line_breaks_escaped(
    session: Recorder,
) -> None:
    [html] = web_pages(session.root, f"session/{SESSION[:8]}")
    turns = re.search(r"<table class=turns>.*?</table>", html, re.S)
    assert turns is not None
    table = turns.group(0)
    assert "<td>first line<br>second &lt;b&gt;line&lt;/b&gt;<br>    third\\x1b[2J</td>" in table, (
        table
    )
    assert "<td>done:<br>it &lt;i&gt;works&lt;/i&gt;</td>" in table
    assert "\\n" not in table and "<b>" not in table and "\x1b" not in table
    # the main thread's box: its task on one line there, whole in its tooltip
    box = re.search(r'<g class="agent"[^>]*>.*?</g>', html, re.S)
    assert box is not None and "\\n" not in box.group(0)
    assert "first line second &lt;b&gt;line" in box.group(0)
