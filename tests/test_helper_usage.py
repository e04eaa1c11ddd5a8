"""What Claude Code used that no transcript line holds (core/usage.py's HELPERS rows): its own
helper requests (the compaction summariser, titles, recaps) are in its modelUsage but in no
transcript. Per model, the difference is a row of its own, with its share of the cost (not
spread over the responses), so tokens per model equal Claude Code's; an internal helper's
transcript, which Claude Code never writes, is not reported missing.

The transcripts are written in the shape Claude Code 2.1.330 writes them (test_transcripts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from inproc import Recorder
from test_transcripts import (
    AGENT,
    PROMPT,
    SESSION,
    assistant,
    env,
    rows,
    start,
    user,
    write,
)

from claude_session.core import accounting, db, prices, usage
from claude_session.services.cost import costs, transcripts

OPUS, HAIKU = "claude-opus-4-5", "claude-haiku-4-5"
COLUMNS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens")


@pytest.fixture
def main_path(config: Path, project: Path) -> Path:
    return config / "projects" / "-tmp-project" / f"{SESSION}.jsonl"


def cost_state(models: dict[str, tuple[tuple[int, int, int, int], float]]) -> dict[str, Any]:
    """A cost-state as Claude Code writes it: per model its four token counts and costUSD."""
    return {
        "type": "cost-state",
        "sessionId": SESSION,
        "totalCostUSD": sum(c for _, c in models.values()),
        "modelUsage": {
            m: {
                "inputTokens": t[0],
                "outputTokens": t[1],
                "thinkingTokens": 0,
                "cacheReadInputTokens": t[2],
                "cacheCreationInputTokens": t[3],
                "webSearchRequests": 0,
                "costUSD": c,
            }
            for m, (t, c) in models.items()
        },
        "hasUnknownModelCost": False,
    }


def by(rec: Recorder, group: str, **kwargs: Any) -> dict[str, Any]:
    return costs.report(rec.conn, group, SESSION, **kwargs)


def test_what_no_transcript_holds_is_a_row_of_its_own_per_model(
    recorder: Recorder, main_path: Path
) -> None:
    """Two responses read; Claude Code counted more (a compaction summary in opus, a title in
    haiku, neither in a transcript). Each model's difference is one row, exactly; by model
    the tokens equal modelUsage; the row's cost is its share by weight, the responses keep
    theirs (not inflated by the summary's)."""
    start(recorder, main_path)
    summary = (500, 300, 20_000, 0)  # what the summariser used
    title = (40, 10, 0, 0)
    read = [(100, 20, 1_000, 50), (110, 25, 2_000, 60)]
    opus = tuple(sum(n) for n in zip(*read, summary, strict=True))
    figures = {OPUS: (opus, 0.5), HAIKU: (title, 0.0001)}
    write(
        main_path,
        [
            user(PROMPT, 1),
            assistant("m1", 2, tokens=read[0]),
            assistant("m2", 3, tokens=read[1]),
            cost_state(figures),  # type: ignore[arg-type]
        ],
    )
    transcripts.catch_up(recorder.conn)

    helpers = {
        r["message_id"]: r
        for r in rows(
            recorder,
            "SELECT * FROM message_usage WHERE agent_id = ?",
            (usage.HELPERS,),
        )
    }
    assert set(helpers) == {OPUS, HAIKU}
    assert tuple(helpers[OPUS][c] for c in COLUMNS) == summary
    assert tuple(helpers[HAIKU][c] for c in COLUMNS) == title
    assert helpers[OPUS]["at"] is None and helpers[OPUS]["turn_id"] is None
    # the model's cost split by weight among the responses and the helpers' row
    found = rows(
        recorder, "SELECT agent_id, cost_usd, * FROM message_usage WHERE model = ?", (OPUS,)
    )
    weights = {r["message_id"]: accounting.table_cost(r, prices.table()) for r in found}
    for r in found:
        assert r["cost_usd"] == pytest.approx(
            0.5 * weights[r["message_id"]] / sum(weights.values())
        )
    assert helpers[HAIKU]["cost_usd"] == pytest.approx(0.0001)

    by_model = {r["model"]: r for r in by(recorder, "model")["rows"]}
    for model, (tokens, cost) in figures.items():
        assert tuple(by_model[model][c] for c in COLUMNS) == tokens
        assert by_model[model]["cost_usd"] == pytest.approx(cost, abs=1e-12)
    assert by_model[OPUS]["messages"] == 2  # the summaries are not responses read

    agents = {r["agent"]: r for r in by(recorder, "agent")["rows"]}
    row = agents[costs.UNATTRIBUTED]
    assert row["type"] == costs.HELPER_TYPE and row["messages"] == 0
    assert row["input_tokens"] == summary[0] + title[0]
    assert row["cost_usd"] == pytest.approx(helpers[OPUS]["cost_usd"] + 0.0001)
    assert tuple(agents["main"][c] for c in COLUMNS) == tuple(map(sum, zip(*read, strict=True)))
    # every grouping adds up to Claude Code's figures, and counts only the responses read
    for group in costs.GROUPS:
        report = by(recorder, group)
        assert report["total"]["cost_usd"] == pytest.approx(0.5001, abs=1e-12), group
        assert report["total"]["input_tokens"] == opus[0] + title[0], group
        assert report["total"]["messages"] == 2, group
        assert sum(r["input_tokens"] for r in report["rows"]) == opus[0] + title[0], group
    turns = by(recorder, "turn")
    assert [r["prompt"] for r in turns["rows"]] == ["do it", costs.UNATTRIBUTED]
    assert turns["groups"] == 1
    # every session at once (the rollups) says the same
    every = costs.report(recorder.conn, "model")
    assert {r["model"]: r["input_tokens"] for r in every["rows"]} == {
        OPUS: opus[0],
        HAIKU: title[0],
    }
    tools = {r["tool"]: r for r in costs.report(recorder.conn, "tool")["rows"]}
    assert tools[costs.UNATTRIBUTED]["input_tokens"] == summary[0] + title[0]
    assert tools["(no tool: text)"]["input_tokens"] == read[0][0] + read[1][0]
    # no time is known for them: a time range leaves them out, as it leaves modelUsage out
    since = costs.report(recorder.conn, "model", SESSION, since=0.0)
    assert {r["model"] for r in since["rows"]} == {OPUS}
    assert since["rows"][0]["input_tokens"] == read[0][0] + read[1][0]


def test_the_row_follows_claude_codes_latest_figures_and_never_goes_negative(
    recorder: Recorder, main_path: Path
) -> None:
    """A later cost-state replaces the row (never adds to it); one that covers less than the
    responses read (an older resume that started its count again) gives no row: no number
    is made up."""
    start(recorder, main_path)
    write(main_path, [user(PROMPT, 1), assistant("m1", 2, tokens=(100, 20, 0, 0))])
    write(main_path, [cost_state({OPUS: ((150, 30, 0, 0), 0.1)})])
    transcripts.catch_up(recorder.conn)
    helper = "SELECT input_tokens, output_tokens FROM message_usage WHERE agent_id = ?"
    assert rows(recorder, helper, (usage.HELPERS,)) == [{"input_tokens": 50, "output_tokens": 10}]
    # the session went on: one more response, one more summary
    write(main_path, [assistant("m2", 4, tokens=(100, 20, 0, 0))])
    write(main_path, [cost_state({OPUS: ((300, 60, 0, 0), 0.2)})])
    transcripts.catch_up(recorder.conn)
    assert rows(recorder, helper, (usage.HELPERS,)) == [{"input_tokens": 100, "output_tokens": 20}]
    # a response after the latest cost-state is not subtracted from it (it is not in it)
    write(main_path, [assistant("m3", 6, tokens=(1000, 20, 0, 0))])
    transcripts.catch_up(recorder.conn)
    assert rows(recorder, helper, (usage.HELPERS,)) == [{"input_tokens": 100, "output_tokens": 20}]
    # counts below what was read: not a difference we can give
    write(main_path, [cost_state({OPUS: ((10, 60, 0, 0), 0.3)})])
    transcripts.catch_up(recorder.conn)
    assert rows(recorder, helper, (usage.HELPERS,)) == []
    assert costs.report(recorder.conn, "session", SESSION)["total"]["cost_usd"] == pytest.approx(
        0.3, abs=1e-12
    )
    # exactly what was read: nothing left over, no row
    write(main_path, [cost_state({OPUS: ((1200, 60, 0, 0), 0.4)})])
    transcripts.catch_up(recorder.conn)
    assert rows(recorder, helper, (usage.HELPERS,)) == []


def internal_stop(rec: Recorder, main_path: Path, agent: str) -> Path:
    """A SubagentStop of Claude Code's own helper: no SubagentStart, agent_type "", a
    transcript path that is never created."""
    path = main_path.parent / SESSION / "subagents" / f"agent-{agent}.jsonl"
    rec.send(
        {"session_id": SESSION, "transcript_path": str(main_path), "cwd": rec.root}
        | {"hook_event_name": "SubagentStop", "agent_id": agent, "agent_type": ""}
        | {"agent_transcript_path": str(path), "last_assistant_message": "<analysis>"}
        | {"stop_hook_active": False}
    )
    return path


def test_an_internal_helpers_transcript_that_never_existed_is_no_warning(
    recorder: Recorder, main_path: Path, project: Path, config: Path
) -> None:
    """The compaction summariser's SubagentStop names a transcript Claude Code never writes:
    neither `cost` nor `status` reports it. A real subagent's missing transcript still is."""
    start(recorder, main_path, subagent=True)  # a real subagent whose file is not there
    write(main_path, [user(PROMPT, 1), assistant("m1", 2)])
    helper = internal_stop(recorder, main_path, "a11ce0000000000ff")
    real = main_path.parent / SESSION / "subagents" / f"agent-{AGENT}.jsonl"
    found = {r["id"]: r["is_internal"] for r in rows(recorder, "SELECT * FROM agent_registry")}
    assert found["a11ce0000000000ff"] == 1 and found[AGENT] == 0
    done = transcripts.catch_up(recorder.conn)
    assert done["missing"] == [str(real)]
    recorder.close()
    shown = run_cli(project, "cost", "--session", SESSION, **env(config))
    assert shown.returncode == 0, shown.stderr
    # never there, so never gone: said once, as no transcript recorded
    assert f"no transcript recorded at {real}" in " ".join(shown.stderr.split())
    assert "transcript(s) gone" not in shown.stderr and str(helper) not in shown.stderr
    state = json.loads(run_cli(project, "status", "--json", **env(config)).stdout)
    assert str(helper) not in json.dumps(state)
    # once the real subagent's transcript is there, nothing is reported at all
    write(real, [user(PROMPT, 2) | {"agentId": AGENT}, assistant("s1", 3) | {"agentId": AGENT}])
    again = run_cli(project, "cost", "--session", SESSION, **env(config))
    assert "transcript" not in again.stderr, again.stderr
    # and a helper whose file does exist (should Claude Code write one) is read like any
    write(helper, [assistant("h1", 4) | {"agentId": "a11ce0000000000ff"}])
    listed = run_cli(
        project, "cost", "--session", SESSION, "--by", "agent", "--json", **env(config)
    )
    agents = {r["agent"] for r in json.loads(listed.stdout)["rows"]}
    assert "a11ce0000000000ff" in agents


def test_an_internal_helper_recorded_missing_before_is_not_a_live_problem(
    recorder: Recorder, main_path: Path
) -> None:
    """A database that recorded the helper's path as missing (before this fix) does not show
    it as a problem of the live session."""
    start(recorder, main_path)
    write(main_path, [user(PROMPT, 1), assistant("m1", 2)])
    helper = internal_stop(recorder, main_path, "a11ce0000000000ff")
    with db.Immediate(recorder.conn):
        usage.save_file(
            recorder.conn,
            str(helper),
            SESSION,
            "a11ce0000000000ff",
            0.0,
            error="missing: No such file or directory",
        )
    transcripts.catch_up(recorder.conn)
    assert costs.transcript_state(recorder.conn)["live_problems"] == []
