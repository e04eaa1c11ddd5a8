"""Reading Claude Code's transcripts for usage and cost (services/cost/transcripts.py,
core/usage.py): incremental and bounded, never through a link or outside the config folder, never
fatal on a line it does not understand; costs are Claude Code's own, apportioned so they add up
exactly.

The transcripts are written here in the shape Claude Code 2.1.330 writes them (one entry per
line; a streamed message in several entries with the same message id and usage)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from inproc import Recorder

from claude_session.core import accounting, db, prices, usage
from claude_session.services.cost import costs, transcripts

SESSION = "5e55a0b1-0000-4000-8000-00000000c057"
AGENT = "a0c0ffee12345678"
PROMPT = "9f1c2d3e-0000-4000-8000-000000000001"
PROMPT_2 = "9f1c2d3e-0000-4000-8000-000000000002"
T0 = 1_800_000_000.0


def stamp(seconds: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(T0 + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def user(prompt_id: str, at: float, text: str = "do it") -> dict[str, Any]:
    return {
        "parentUuid": None,
        "isSidechain": False,
        "promptId": prompt_id,
        "type": "user",
        "message": {"role": "user", "content": text},
        "uuid": f"u-{at}",
        "timestamp": stamp(at),
        "sessionId": SESSION,
        "version": "2.1.330",
    }


def assistant(
    message_id: str,
    at: float,
    *,
    model: str = "claude-opus-4-5",
    tokens: tuple[int, int, int, int] = (100, 20, 0, 0),
    blocks: list[dict[str, Any]] | None = None,
    thinking: int = 0,
) -> dict[str, Any]:
    inp, out, read, made = tokens
    return {
        "parentUuid": f"u-{at}",
        "isSidechain": False,
        "type": "assistant",
        "uuid": f"a-{message_id}-{at}",
        "timestamp": stamp(at),
        "sessionId": SESSION,
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks if blocks is not None else [{"type": "text", "text": "ok"}],
            "usage": {
                "input_tokens": inp,
                "cache_creation_input_tokens": made,
                "cache_read_input_tokens": read,
                "output_tokens": out,
                "output_tokens_details": {"thinking_tokens": thinking},
                "service_tier": "standard",
                "speed": "standard",
            },
        },
    }


def tool_use(ident: str, name: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": ident, "name": name, "input": {}}


def cost_state(models: dict[str, float], unknown: bool = False) -> dict[str, Any]:
    return {
        "type": "cost-state",
        "sessionId": SESSION,
        "totalCostUSD": sum(models.values()),
        "totalAPIDuration": 238,
        "totalToolDuration": 457,
        "totalLinesAdded": 5,
        "totalLinesRemoved": 1,
        "modelUsage": {m: {"inputTokens": 1, "costUSD": c} for m, c in models.items()},
        "hasUnknownModelCost": unknown,
    }


NOISE = [
    {"type": "api-request", "requestRef": "r1"},
    {"type": "tools-used", "tools": ["Write"]},
    {"type": "attachment", "attachment": {"type": "x"}},
    {"type": "last-prompt", "lastPrompt": "do it"},
]


def write(path: Path, entries: list[dict[str, Any]], mode: str = "a") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode) as f:
        for entry in entries:
            f.write(json.dumps(entry, separators=(",", ":")) + "\n")


@pytest.fixture
def main_path(config: Path, project: Path) -> Path:
    return config / "projects" / "-tmp-project" / f"{SESSION}.jsonl"


def start(rec: Recorder, main_path: Path, *, subagent: bool = False) -> None:
    """The session as the hooks recorded it: a prompt (turn 1) and, if asked, an Agent call
    and its subagent (SubagentStop names the subagent's transcript)."""
    base = {"session_id": SESSION, "transcript_path": str(main_path), "cwd": rec.root}
    rec.send(base | {"hook_event_name": "SessionStart", "source": "startup"})
    rec.send(base | {"hook_event_name": "UserPromptSubmit", "prompt": "do it", "prompt_id": PROMPT})
    if not subagent:
        return
    call = {"tool_name": "Agent", "tool_use_id": "toolu_agent1", "prompt_id": PROMPT}
    prompt = {"description": "sub", "prompt": "SUB", "subagent_type": "general-purpose"}
    rec.send(base | call | {"hook_event_name": "PreToolUse", "tool_input": prompt})
    agent = {"agent_id": AGENT, "agent_type": "general-purpose"}
    rec.send(base | agent | {"hook_event_name": "SubagentStart"})
    path = main_path.parent / SESSION / "subagents" / f"agent-{AGENT}.jsonl"
    rec.send(
        base
        | agent
        | {"hook_event_name": "SubagentStop", "agent_transcript_path": str(path)}
        | {"last_assistant_message": "done", "stop_hook_active": False}
    )


def rows(rec: Recorder, sql: str, params: Any = ()) -> list[dict[str, Any]]:
    return db.rows(rec.conn, sql, params)


def test_incremental_reading_waits_for_a_partial_last_line(
    recorder: Recorder, main_path: Path
) -> None:
    start(recorder, main_path)
    write(main_path, [user(PROMPT, 1), *NOISE, assistant("msg_1", 2)])
    line = json.dumps(assistant("msg_2", 3, tokens=(50, 5, 0, 0)), separators=(",", ":"))
    with main_path.open("a") as f:
        f.write(line[:40])  # Claude Code is still writing it
    size_before = main_path.stat().st_size

    entries, offset, skipped = transcripts.read_entries(str(main_path), 0)[:3]
    assert [e["type"] for e in entries] == ["user", "assistant"]
    assert skipped == 0
    assert offset == size_before - 40  # the partial line is left for later

    first = transcripts.catch_up(recorder.conn)
    assert first["messages"] == 1
    with main_path.open("a") as f:
        f.write(line[40:] + "\n")
    second = transcripts.catch_up(recorder.conn)
    assert second["messages"] == 1 and second["entries"] == 1  # only the new bytes
    assert transcripts.catch_up(recorder.conn)["entries"] == 0
    found = rows(recorder, "SELECT message_id, input_tokens, turn_id FROM message_usage")
    turn = rows(recorder, "SELECT id FROM turns WHERE prompt_id = ?", (PROMPT,))[0]["id"]
    assert sorted((r["message_id"], r["input_tokens"], r["turn_id"]) for r in found) == [
        ("msg_1", 100, turn),
        ("msg_2", 50, turn),
    ]
    state = usage.file_state(recorder.conn, str(main_path))
    assert state is not None
    assert state["read_to"] == main_path.stat().st_size
    assert state["lines_read"] == 7 and state["lines_skipped"] == 0


def test_batches_are_bounded_and_resume_where_they_stopped(main_path: Path) -> None:
    write(main_path, [assistant(f"msg_{i}", i) for i in range(50)])
    offset, seen = 0, []
    while True:
        got = transcripts.read_entries(str(main_path), offset, limit=2000)
        if got.new_offset == offset:
            break
        assert got.new_offset - offset < 2000 + 1000  # one line past the limit at most
        seen += [e["message"]["id"] for e in got.entries]
        offset = got.new_offset
    assert seen == [f"msg_{i}" for i in range(50)]
    assert offset == main_path.stat().st_size


def test_truncated_or_replaced_file_is_read_again_from_the_start(
    recorder: Recorder, main_path: Path
) -> None:
    start(recorder, main_path)
    write(main_path, [user(PROMPT, 1), assistant("msg_1", 2), assistant("msg_2", 3)])
    transcripts.catch_up(recorder.conn)
    # replaced by another file (another inode) holding the same entries and one more
    replacement = main_path.with_suffix(".new")
    write(replacement, [user(PROMPT, 1), assistant("msg_1", 2), assistant("msg_2", 3)])
    write(replacement, [assistant("msg_3", 4)])
    os.replace(replacement, main_path)
    done = transcripts.catch_up(recorder.conn)
    assert done["restarted"] == [str(main_path)]
    # truncated in place: shorter than what was read
    write(main_path, [user(PROMPT, 1), assistant("msg_1", 2)], mode="w")
    assert transcripts.catch_up(recorder.conn)["restarted"] == [str(main_path)]
    sql = "SELECT count(*) AS n, sum(input_tokens) AS tokens FROM message_usage"
    counts = rows(recorder, sql)[0]
    assert (counts["n"], counts["tokens"]) == (3, 300)  # read three times, counted once
    assert rows(recorder, "SELECT restarts FROM transcript_files")[0]["restarts"] == 2


def test_lines_not_understood_are_skipped_and_counted(recorder: Recorder, main_path: Path) -> None:
    start(recorder, main_path)
    write(main_path, [user(PROMPT, 1), *NOISE])
    with main_path.open("a") as f:
        f.write('{"type": "assistant", "message": \n')  # cut JSON
        f.write("[1, 2, 3]\n")  # not an object
        f.write('{"no_type": true}\n')
        f.write('{"type": "hologram-v9", "x": 1}\n')  # a type we do not know
        f.write("\n")  # a blank line is nothing
    write(main_path, [assistant("msg_1", 2)])
    done = transcripts.catch_up(recorder.conn)
    assert done["skipped"] == 4 and done["messages"] == 1
    state = rows(recorder, "SELECT lines_read, lines_skipped, last_error FROM transcript_files")
    assert state == [{"lines_read": 11, "lines_skipped": 4, "last_error": None}]


def test_a_planted_link_is_refused_and_reported(
    recorder: Recorder, main_path: Path, tmp_path: Path
) -> None:
    secret = main_path.parent / "other.jsonl"  # even a file inside the config folder
    write(secret, [assistant("msg_secret", 1)])
    main_path.symlink_to(secret)
    with pytest.raises(transcripts.Refused, match="symbolic link"):
        transcripts.read_entries(str(main_path), 0)
    start(recorder, main_path)
    done = transcripts.catch_up(recorder.conn)
    assert done["refused"] == [str(main_path)]
    assert not rows(recorder, "SELECT * FROM message_usage")
    error = rows(recorder, "SELECT last_error FROM transcript_files")[0]["last_error"]
    assert error.startswith("refused:") and "symbolic link" in error


def test_a_path_outside_the_config_folder_is_refused(
    recorder: Recorder, config: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere" / f"{SESSION}.jsonl"
    write(outside, [assistant("msg_1", 1)])
    with pytest.raises(transcripts.Refused, match="outside the Claude Code config folder"):
        transcripts.read_entries(str(outside), 0)
    # nor through a linked folder inside it
    (config / "projects").mkdir()
    (config / "projects" / "linked").symlink_to(outside.parent)
    with pytest.raises(transcripts.Refused, match="outside"):
        transcripts.read_entries(str(config / "projects" / "linked" / outside.name), 0)
    start(recorder, outside)
    assert transcripts.catch_up(recorder.conn)["refused"] == [str(outside)]
    assert not rows(recorder, "SELECT * FROM message_usage")


def test_a_streamed_message_is_counted_once(recorder: Recorder, main_path: Path) -> None:
    """One response streamed as three entries (thinking, text, tool call), each with the
    message's usage: one row, its tokens once, every tool call it asked for."""
    start(recorder, main_path)
    parts = [
        [{"type": "thinking", "thinking": "hmm"}],
        [tool_use("toolu_1", "Read")],
        [tool_use("toolu_2", "Bash")],
    ]
    streamed = [
        assistant("msg_s", 2 + i, tokens=(1000, 300, 5000, 200), blocks=b, thinking=40)
        for i, b in enumerate(parts)
    ]
    write(main_path, [user(PROMPT, 1), *streamed])
    transcripts.catch_up(recorder.conn)
    found = rows(recorder, "SELECT * FROM message_usage")
    assert len(found) == 1
    row = found[0]
    assert (row["input_tokens"], row["output_tokens"], row["cache_read_tokens"]) == (
        1000,
        300,
        5000,
    )
    assert (row["cache_creation_tokens"], row["thinking_tokens"]) == (200, 40)
    assert json.loads(row["tool_uses"]) == {"toolu_1": "Read", "toolu_2": "Bash"}
    assert (row["service_tier"], row["speed"], row["agent_id"]) == ("standard", "standard", SESSION)


def test_claude_codes_figures_are_apportioned_exactly_per_model(
    recorder: Recorder, main_path: Path
) -> None:
    """Two models, a subagent, uneven tokens: each model's costUSD shared by price-weighted
    tokens, the shares adding up to Claude Code's figure exactly (in picodollars)."""
    start(recorder, main_path, subagent=True)
    sub = main_path.parent / SESSION / "subagents" / f"agent-{AGENT}.jsonl"
    write(
        main_path,
        [
            user(PROMPT, 1),
            assistant("m1", 2, tokens=(3, 7, 11_000, 13)),
            assistant("m2", 3, tokens=(17, 1, 0, 2900), blocks=[tool_use("toolu_agent1", "Agent")]),
            assistant("h1", 4, model="claude-haiku-4-5", tokens=(31, 37, 0, 0)),
        ],
    )
    write(sub, [{**user(PROMPT, 2.5), "agentId": AGENT, "isSidechain": True}])
    write(sub, [assistant("s1", 2.6, tokens=(41, 43, 47, 53)) | {"agentId": AGENT}])
    figures = {"claude-opus-4-5": 0.123456789, "claude-haiku-4-5": 0.000333333}
    write(main_path, [assistant("m3", 5, tokens=(59, 61, 67, 71)), cost_state(figures)])
    transcripts.catch_up(recorder.conn)

    for model, figure in figures.items():
        found = rows(
            recorder,
            "SELECT model, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens,"
            " cache_1h_tokens, cost_usd, cost_source FROM message_usage WHERE model = ?",
            (model,),
        )
        assert {r["cost_source"] for r in found} == {"claude_code"}
        units = [round(r["cost_usd"] * accounting.PICO) for r in found]
        assert sum(units) == round(figure * accounting.PICO)  # exactly
        # by the table's price of each (what it weighs), within a unit
        weights = [round(accounting.table_cost(r, prices.table()) * 1e9) for r in found]
        for share, w in zip(units, weights, strict=True):
            assert abs(share - round(figure * accounting.PICO) * w / sum(weights)) <= 1
    assert len(rows(recorder, "SELECT * FROM message_usage WHERE model = 'claude-opus-4-5'")) == 4
    report = costs.report(recorder.conn, "agent", SESSION)
    by_agent = {r["agent"]: r for r in report["rows"]}
    assert set(by_agent) == {"main", AGENT}
    assert by_agent[AGENT]["input_tokens"] == 41
    assert report["total"]["cost_usd"] == pytest.approx(sum(figures.values()), abs=1e-12)
    # a new cost-state (the session went on) is apportioned again, never added twice
    later = {"claude-opus-4-5": 0.2, "claude-haiku-4-5": 0.000333333}
    write(main_path, [assistant("m4", 6), cost_state(later)])
    transcripts.catch_up(recorder.conn)
    total = costs.report(recorder.conn, "session", SESSION)["total"]["cost_usd"]
    assert total == pytest.approx(0.200333333, abs=1e-12)


def test_without_claude_codes_figure_the_price_table_is_used_and_said(
    recorder: Recorder, main_path: Path, project: Path, config: Path
) -> None:
    start(recorder, main_path)
    write(
        main_path,
        [
            user(PROMPT, 1),
            assistant("m1", 2, model="claude-sonnet-4-5", tokens=(1_000_000, 100_000, 0, 0)),
            assistant("m2", 3, model="claude-opus-4-5", tokens=(10, 10, 0, 0)),
            assistant("m3", 4, model="gpt-mystery", tokens=(10, 10, 0, 0)),
        ],
    )
    transcripts.catch_up(recorder.conn)
    found = {
        r["message_id"]: (r["cost_usd"], r["cost_source"])
        for r in rows(recorder, "SELECT message_id, cost_usd, cost_source FROM message_usage")
    }
    # sonnet: $3 per million input up to 200,000 tokens, $6 past them (the tier LiteLLM and
    # ccusage price), output $15
    assert found["m1"][0] == pytest.approx(0.2 * 3.0 + 0.8 * 6.0 + 0.1 * 15.0)
    assert found["m1"][1] == found["m2"][1] == found["m3"][1] == "price_table"
    # a model no table knows: the default tier's price, as Claude Code does, marked an estimate
    assert found["m3"][0] == pytest.approx((10 * 4 + 10 * 20) / 1e6)
    estimated = "SELECT message_id FROM message_usage WHERE estimated = 1"
    assert [r["message_id"] for r in rows(recorder, estimated)] == ["m3"]
    # Claude Code knew opus but not sonnet (hasUnknownModelCost, a 0 for it)
    write(main_path, [cost_state({"claude-opus-4-5": 0.5, "claude-sonnet-4-5": 0.0}, True)])
    transcripts.catch_up(recorder.conn)
    sources = dict(rows_pairs(recorder))
    assert sources == {"m1": "price_table", "m2": "claude_code", "m3": "price_table"}
    done = run_cli(project, "cost", "--session", SESSION, "--by", "model", **env(config))
    assert done.returncode == 0, done.stderr
    assert "price table*" in done.stdout
    assert "estimated from claude-session's own price table" in done.stdout
    assert "claude-sonnet-4-5" in done.stdout


def rows_pairs(rec: Recorder) -> list[tuple[str, str | None]]:
    return [
        (r["message_id"], r["cost_source"])
        for r in rows(rec, "SELECT message_id, cost_source FROM message_usage")
    ]


def env(config: Path) -> dict[str, str]:
    return {"CLAUDE_CONFIG_DIR": str(config)}


def test_turns_come_from_prompt_ids_and_a_subagent_from_its_agent_call(
    recorder: Recorder, main_path: Path
) -> None:
    start(recorder, main_path, subagent=True)
    base = {"session_id": SESSION, "transcript_path": str(main_path), "cwd": recorder.root}
    recorder.advance(10)
    recorder.send(
        base | {"hook_event_name": "UserPromptSubmit", "prompt": "two", "prompt_id": PROMPT_2}
    )
    write(main_path, [user(PROMPT, 1), assistant("m1", 2), user(PROMPT_2, 11), assistant("m2", 12)])
    sub = main_path.parent / SESSION / "subagents" / f"agent-{AGENT}.jsonl"
    write(sub, [user("not-a-recorded-prompt", 3) | {"agentId": AGENT}, assistant("s1", 4)])
    transcripts.catch_up(recorder.conn)
    turn = {r["prompt_id"]: r["id"] for r in rows(recorder, "SELECT id, prompt_id FROM turns")}
    found = {
        r["message_id"]: r["turn_id"]
        for r in rows(recorder, "SELECT message_id, turn_id FROM message_usage")
    }
    assert found == {"m1": turn[PROMPT], "m2": turn[PROMPT_2], "s1": turn[PROMPT]}


def test_a_missing_transcript_is_information_for_an_old_session(
    recorder: Recorder, main_path: Path, project: Path, config: Path
) -> None:
    start(recorder, main_path)  # the file was never written (or deleted since)
    done = transcripts.catch_up(recorder.conn)
    assert done["missing"] == [str(main_path)]
    state = costs.transcript_state(recorder.conn)
    assert state["live_problems"] and "missing" in state["live_problems"][0]
    status = run_cli(project, "status", **env(config))
    assert "transcripts not readable: missing" in " ".join(status.stdout.split())
    recorder.send({"session_id": SESSION, "hook_event_name": "SessionEnd", "reason": "other"})
    assert costs.transcript_state(recorder.conn)["live_problems"] == []
    doctor = run_cli(project, "doctor", "--json", **env(config))
    checks = {c["check"]: c for c in json.loads(doctor.stdout)}
    assert checks["transcripts"]["ok"] is True
    assert "gone or unreadable (information)" in checks["transcripts"]["detail"]


def test_cost_and_status_read_on_demand(
    recorder: Recorder, main_path: Path, project: Path, config: Path
) -> None:
    start(recorder, main_path)
    write(
        main_path,
        [
            user(PROMPT, 1),
            assistant("m1", 2, tokens=(40_000, 1_200, 0, 0)),
            cost_state({"claude-opus-4-5": 0.23}),
        ],
    )
    recorder.close()
    done = run_cli(project, "cost", "--json", **env(config))
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["by"] == "session" and found["total"]["cost_usd"] == pytest.approx(0.23)
    assert found["claude_code_total_usd"] == pytest.approx(0.23)
    table = run_cli(project, "cost", "--session", SESSION[:8], "--wide", **env(config))
    assert "$0.2300" in table.stdout and "40k" in table.stdout and "total" in table.stdout
    status = run_cli(project, "status", **env(config))
    assert "cost of the latest session" in status.stdout and "$0.2300" in status.stdout
    bad = run_cli(project, "cost", "--since", "yesterday-ish", **env(config))
    assert bad.returncode == 2 and "--since" in bad.stderr


def test_a_message_waits_for_its_turn_and_never_takes_the_turn_before(
    recorder: Recorder, main_path: Path
) -> None:
    """Prompt 2's hook is late (or lost): its response is read first. It is left without a
    turn, not put in turn 1, and gets turn 2 when the hook comes or, lost, when the prompt is
    filled in from the transcript."""
    start(recorder, main_path)
    write(main_path, [user(PROMPT, 1), assistant("m1", 2), user(PROMPT_2, 11, "two")])
    write(main_path, [assistant("m2", 12)])
    transcripts.catch_up(recorder.conn, now=T0 + 20)
    turn_of = "SELECT message_id, turn_id FROM message_usage ORDER BY message_id"
    turns = {r["prompt_id"]: r["id"] for r in rows(recorder, "SELECT id, prompt_id FROM turns")}
    assert [(r["message_id"], r["turn_id"]) for r in rows(recorder, turn_of)] == [
        ("m1", turns[PROMPT]),
        ("m2", None),
    ]
    # lost: once its hook cannot still come, the prompt is filled in, and m2 is in its turn
    transcripts.catch_up(recorder.conn, now=T0 + 12 + transcripts.FILL_AFTER + 1)
    turns = {r["prompt_id"]: r["id"] for r in rows(recorder, "SELECT id, prompt_id FROM turns")}
    assert set(turns) == {PROMPT, PROMPT_2}
    assert [(r["message_id"], r["turn_id"]) for r in rows(recorder, turn_of)] == [
        ("m1", turns[PROMPT]),
        ("m2", turns[PROMPT_2]),
    ]


def test_cost_pages_the_newest_sessions_and_totals_every_one(
    recorder: Recorder, project: Path, config: Path
) -> None:
    conn = recorder.conn
    with db.Immediate(conn):
        for n in range(60):
            sid = f"page-{n:02d}"
            message = {"message_id": f"m{n}", "model": "claude-opus-4-5", "at": 1000.0 + n}
            usage.record_messages(conn, sid, sid, [message | {"input_tokens": 1_000_000}])
            usage.apportion(conn, sid)
    recorder.close()
    paged = run_cli(project, "cost", "--json", **env(config))
    found = json.loads(paged.stdout)
    assert [r["session_id"] for r in found["rows"]] == [f"page-{n:02d}" for n in range(59, 9, -1)]
    assert found["groups"] == 60 and found["total"]["messages"] == 60
    assert found["total"]["cost_usd"] == pytest.approx(60 * 5.0)  # every session, not the page
    table = run_cli(project, "cost", **env(config))
    assert "10 more not shown (of 60" in table.stderr and "cost --by session --all" in table.stderr
    every = run_cli(project, "cost", "--all", **env(config))
    assert every.returncode == 0 and "more not shown" not in every.stderr
    lines = every.stdout.splitlines()
    assert sum(line.startswith("page-") for line in lines) == 60
    assert lines[61].startswith("total")  # after the header and the 60 sessions
    fewer = run_cli(project, "cost", "--by", "day", "--limit", "1", "--json", **env(config))
    assert len(json.loads(fewer.stdout)["rows"]) == 1
