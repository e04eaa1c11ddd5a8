"""Hook runs as Claude Code times them in its transcripts (services/cost/hook_lines.py,
core/hook_runs.py) and the `hooks` report's math (services/cost/hooks_report.py).

The lines are written in the shapes the real CLI 2.1.330 wrote in a session checked by hand:
`hook_success` / `hook_non_blocking_error` attachments with durationMs, and a Stop's
`stop_hook_summary` listing every Stop hook (silent command hooks too)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inproc import Recorder
from test_transcripts import PROMPT, SESSION, T0, assistant, stamp, start, user, write

from claude_session.core import db, hook_contract, hook_runs
from claude_session.services.cost import hook_lines, hooks_report, transcripts

OURS_MCP = hook_contract.HOOK_RUN_NAME
OURS_COMMAND = "/venv/bin/python -I -S /x/hook.py Stop; [ $? -ne 3 ] || exit 2 # claude-session"


def attachment(
    kind: str, event: str, command: Any, ms: Any, at: float, **more: Any
) -> dict[str, Any]:
    found = {
        "type": kind,
        "hookName": f"{event}:Bash" if event.endswith("ToolUse") else event,
        "toolUseID": more.pop("tool_use_id", "toolu_1"),
        "hookEvent": event,
        "content": "",
        "stdout": "out",
        "stderr": "",
        "command": command,
        "durationMs": ms,
    } | more
    return {
        "parentUuid": "p",
        "isSidechain": False,
        "type": "attachment",
        "attachment": found,
        "timestamp": stamp(at),
        "sessionId": SESSION,
    }


def summary(infos: list[dict[str, Any]], at: float, tool_use_id: str = "stop-1") -> dict[str, Any]:
    return {
        "parentUuid": "p",
        "isSidechain": False,
        "type": "system",
        "subtype": "stop_hook_summary",
        "hookCount": len(infos),
        "hookInfos": infos,
        "hookErrors": [],
        "preventedContinuation": False,
        "stopReason": "",
        "hasOutput": True,
        "level": "suggestion",
        "timestamp": stamp(at),
        "uuid": "s",
        "toolUseID": tool_use_id,
    }


@pytest.fixture
def main_path(config: Path) -> Path:
    return config / "projects" / "-tmp-project" / f"{SESSION}.jsonl"


def parse(entry: dict[str, Any]) -> dict[str, Any] | None:
    return transcripts.parse(json.dumps(entry).encode())


# --- parsing -------------------------------------------------------------------------------


def test_timed_attachments_and_the_stop_summary_are_runs() -> None:
    got = parse(attachment("hook_success", "PreToolUse", OURS_MCP, 17, 1))
    assert got is not None and got["type"] == hook_lines.KIND
    assert got["runs"] == [
        {
            "item": 0,
            "event": "PreToolUse",
            "hook_name": "PreToolUse:Bash",
            "command": OURS_MCP,
            "outcome": "success",
            "tool_use_id": "toolu_1",
            "duration_ms": 17.0,
        }
    ]
    failed = parse(attachment("hook_non_blocking_error", "PostToolUse", "exit 1", 10, 1))
    assert failed is not None and failed["runs"][0]["outcome"] == "non_blocking_error"
    stop = parse(summary([{"command": "cat >/dev/null", "durationMs": 8}, {"command": "x"}], 2))
    assert stop is not None
    assert [(r["command"], r["duration_ms"], r["outcome"]) for r in stop["runs"]] == [
        ("cat >/dev/null", 8.0, "stop_summary"),
        ("x", None, "stop_summary"),  # listed without a time: a run, unmeasured
    ]


def test_hook_attachments_without_a_duration_are_no_runs() -> None:
    context = {"type": "hook_additional_context", "content": ["c"], "hookEvent": "PostToolUse"}
    line = {"type": "attachment", "attachment": context, "timestamp": stamp(1)}
    assert parse(line) == {}
    assert parse({"type": "system", "subtype": "api_error", "timestamp": stamp(1)}) == {}
    assert parse({"type": "attachment", "attachment": {"type": "date"}}) == {}


@pytest.mark.parametrize(
    "ms",
    ["1e13", "-1", "NaN", "Infinity", '"12"', "true", "1" + "0" * 400, "[1]"],
    ids=["huge", "negative", "nan", "inf", "text", "bool", "bigint", "list"],
)
def test_a_hostile_duration_is_a_line_not_understood(ms: str) -> None:
    line = json.dumps(attachment("hook_success", "PreToolUse", "x", 1, 1))
    assert '"durationMs": 1}' in line
    assert (
        transcripts.parse(line.replace('"durationMs": 1}', f'"durationMs": {ms}}}').encode())
        is None
    )
    stop = json.dumps(summary([{"command": "x", "durationMs": 1}], 1))
    assert (
        transcripts.parse(stop.replace('"durationMs": 1}', f'"durationMs": {ms}}}').encode())
        is None
    )


def test_missing_and_mistyped_fields() -> None:
    no_time = attachment("hook_success", "PreToolUse", "x", None, 1)
    del no_time["attachment"]["durationMs"]  # an mcp_tool hook that answered JSON
    got = parse(no_time)
    assert got is not None and got["runs"][0]["duration_ms"] is None  # a run, unmeasured
    no_command = attachment("hook_success", "Stop", None, 3, 1)
    got = parse(no_command)
    assert got is not None and got["runs"][0]["command"] == "(no command named)"
    assert parse(attachment("hook_success", "Stop", ["a list"], 3, 1)) is None
    no_event = attachment("hook_success", "PreToolUse", "x", 3, 1)
    del no_event["attachment"]["hookEvent"]
    got = parse(no_event)
    assert got is not None and got["runs"][0]["event"] == "PreToolUse"  # from hookName
    no_event["attachment"]["hookName"] = None
    assert parse(no_event) is None
    assert parse(summary("not a list", 1)) is None  # type: ignore[arg-type]
    assert parse(summary(["not an object"], 1)) is None  # type: ignore[list-item]
    deep: Any = {"command": "x", "durationMs": 1}
    for _ in range(100):
        deep = {"d": deep}
    assert parse(summary([{"command": "x", "durationMs": 1, "deep": deep}], 1)) is None


# --- stored: redacted, escapes shown, the Stop's runs once ----------------------------------


def rows(rec: Recorder, sql: str) -> list[dict[str, Any]]:
    return db.rows(rec.conn, sql)


def test_runs_are_stored_once_redacted_and_escaped(recorder: Recorder, main_path: Path) -> None:
    start(recorder, main_path)
    secret = "curl -H 'Authorization: Bearer sk-ant-api03-" + "A" * 90 + "' http://x"
    write(
        main_path,
        [
            attachment("hook_success", "SessionStart", "echo started", 30, 0.5),
            user(PROMPT, 1),
            attachment("hook_success", "PreToolUse", OURS_MCP, 17, 2),
            attachment("hook_success", "PreToolUse", secret, 21, 2),
            attachment(
                "hook_success", "Stop", "printf 'x\x1b[31mred\x07'", 8, 3, tool_use_id="stop-1"
            ),
        ],
    )
    transcripts.catch_up(recorder.conn)
    # the summary comes after the Stop's own attachment, in a later read: the run counts once
    write(
        main_path,
        [
            summary(
                [
                    {"command": "cat >/dev/null", "durationMs": 15},
                    {"command": "printf 'x\x1b[31mred\x07'", "durationMs": 8},
                    {"command": OURS_COMMAND, "durationMs": 56},
                ],
                3.1,
            ),
            assistant("msg_1", 3.2),
        ],
    )
    transcripts.catch_up(recorder.conn)
    transcripts.catch_up(recorder.conn)  # nothing new: nothing twice
    found = rows(
        recorder,
        "SELECT event, command, ours, outcome, duration_ms, prompt_id FROM hook_runs"
        " ORDER BY at, item",
    )
    assert [(r["event"], r["ours"], r["outcome"], r["duration_ms"]) for r in found] == [
        ("SessionStart", 0, "success", 30.0),
        ("PreToolUse", 1, "success", 17.0),
        ("PreToolUse", 0, "success", 21.0),
        ("Stop", 0, "stop_summary", 15.0),
        ("Stop", 0, "stop_summary", 8.0),
        ("Stop", 1, "stop_summary", 56.0),
    ]
    assert found[0]["prompt_id"] is None and found[1]["prompt_id"] == PROMPT
    commands = [r["command"] for r in found]
    assert "sk-ant-api03" not in " ".join(commands) and "[REDACTED:" in commands[2]
    huge = hook_runs.shown_command("echo " + "A" * 10_000)
    assert huge == "(a command of 10,005 characters, not shown)"
    assert hook_runs.shown_name("PreToolUse:\x1b]8;;x\x07") == "PreToolUse:\\x1b]8;;x\\x07"
    url = hook_runs.shown_command("http://127.0.0.1:1/h?token=abcdef1234567890XYZ")
    assert url.startswith("http://127.0.0.1:1/h?token=[REDACTED:")  # an http hook's: its URL
    assert "abcdef" not in url
    assert commands[4] == "printf 'x\\x1b[31mred\\x07'"  # never an escape raw
    assert not any("\x1b" in c or "\x07" in c for c in commands)


# --- the report's math ------------------------------------------------------------------------


def test_median_and_p90_by_their_stated_definitions() -> None:
    assert hooks_report.median([]) is None and hooks_report.p90([]) is None
    assert hooks_report.median([5]) == 5 and hooks_report.p90([5]) == 5
    assert hooks_report.median([1, 2, 3, 4]) == 2.5  # the mean of the two middle ones
    ten = [float(v) for v in range(10, 0, -1)]  # 10 .. 1, unsorted
    assert hooks_report.p90(ten) == 9  # nearest rank: ceil(0.9 * 10) = 9th smallest
    assert hooks_report.p90([float(v) for v in range(1, 12)]) == 10  # ceil(9.9) = 10th
    assert hooks_report.p90([1.0, 100.0]) == 100  # ceil(1.8) = 2nd


def test_groups_count_untimed_runs_of_ours_as_unmeasured_never_timed() -> None:
    runs = [
        ("echo a", "PreToolUse", False, 10.0),
        ("echo a", "PreToolUse", False, 30.0),
        (OURS_MCP, "PreToolUse", True, 5.0),
        ("x", "Stop", False, None),
    ]
    rows = hooks_report.group(runs, {"PreToolUse": 3, "SessionStart": 1}, wall_ms=1000.0)
    by = {(r["command"], r["event"]): r for r in rows}
    assert by[("echo a", "PreToolUse")] | {} == {
        "command": "echo a",
        "event": "PreToolUse",
        "ours": False,
        "runs": 2,
        "measured": 2,
        "unmeasured": 0,
        "total_ms": 40.0,
        "median_ms": 20.0,
        "p90_ms": 30.0,
        "max_ms": 30.0,
        "share": 0.04,
    }
    assert by[("x", "Stop")]["unmeasured"] == 1 and by[("x", "Stop")]["total_ms"] is None
    untimed = hooks_report.OURS_UNTIMED
    assert by[(untimed, "PreToolUse")]["runs"] == 2  # 3 recorded, 1 timed by Claude Code
    assert by[(untimed, "PreToolUse")]["median_ms"] is None
    assert by[(untimed, "SessionStart")]["unmeasured"] == 1
    assert rows[0]["command"] == "echo a"  # the largest total first
    total = hooks_report.totals(rows, 1000.0)
    assert total["runs"] == 7 and total["measured"] == 3 and total["unmeasured"] == 4
    assert total["total_ms"] == 45.0 and total["ours_ms"] == 5.0 and total["share"] == 0.045


def test_report_per_session_and_turn(recorder: Recorder, main_path: Path) -> None:
    start(recorder, main_path)
    second = "9f1c2d3e-0000-4000-8000-000000000002"
    write(
        main_path,
        [
            user(PROMPT, 1),
            attachment("hook_success", "PreToolUse", "echo a", 10, 2),
            user(second, 5),
            attachment("hook_success", "PreToolUse", "echo a", 30, 6),
        ],
    )
    base = {"session_id": SESSION, "transcript_path": str(main_path), "cwd": recorder.root}
    recorder.advance(5)
    recorder.send(
        base | {"hook_event_name": "UserPromptSubmit", "prompt": "more", "prompt_id": second}
    )
    transcripts.catch_up(recorder.conn)
    whole = hooks_report.report(recorder.conn, SESSION)
    echo = next(r for r in whole["rows"] if r["command"] == "echo a")
    assert echo["runs"] == 2 and echo["total_ms"] == 40.0
    first = hooks_report.report(recorder.conn, SESSION, 1)
    echo = next(r for r in first["rows"] if r["command"] == "echo a")
    assert echo["runs"] == 1 and echo["total_ms"] == 10.0
    # our hooks ran (SessionStart, UserPromptSubmit) and Claude Code timed none: unmeasured
    ours = [r for r in whole["rows"] if r["ours"]]
    assert ours and all(r["total_ms"] is None and r["unmeasured"] == r["runs"] for r in ours)
    with pytest.raises(ValueError, match="no turn 9"):
        hooks_report.report(recorder.conn, SESSION, 9)


# --- the surfaces: status, doctor, the status line ------------------------------------------


def slow_session(recorder: Recorder, main_path: Path) -> None:
    """A session whose hook `echo slow` runs 10 times: 8 quick, 2 past 100 ms (p90: the 9th
    smallest, 150 ms), and our mcp_tool hook 10 times at 5 ms (each in our own records too)."""
    start(recorder, main_path)
    lines = [user(PROMPT, 1)]
    for i, ms in enumerate([10, 10, 10, 10, 10, 10, 10, 10, 150, 400]):
        lines.append(attachment("hook_success", "PreToolUse", "echo slow", ms, 2 + i))
        lines.append(attachment("hook_success", "PreToolUse", OURS_MCP, 5, 2 + i))
        ours_ran(recorder, main_path, "PreToolUse", 2 + i - 0.01)
    write(main_path, lines)
    transcripts.catch_up(recorder.conn)


def ours_ran(recorder: Recorder, main_path: Path, event: str, at: float) -> None:
    """Our hook of `event` ran at T0 + `at`, in our own records (hook_events)."""
    recorder.now = T0 + at
    base = {"session_id": SESSION, "transcript_path": str(main_path), "cwd": recorder.root}
    call = {"tool_name": "Bash", "tool_use_id": "toolu_1", "prompt_id": PROMPT}
    recorder.send(base | call | {"hook_event_name": event, "tool_input": {"command": "ls"}})


def test_status_doctor_and_status_line_name_the_slow_hook(
    recorder: Recorder, main_path: Path
) -> None:
    from claude_session.core import statusline
    from claude_session.services import status_report
    from claude_session.services.setup import doctor

    slow_session(recorder, main_path)
    found = status_report.status(recorder.conn, recorder.root)["hook_time"]
    assert found["session_id"] == SESSION and found["budget_ms"] == 100.0
    assert found["total_ms"] == 630 + 50 and found["ours_ms"] == 50
    assert found["slowest"]["command"] == "echo slow" and found["slowest"]["p90_ms"] == 150
    assert [r["command"] for r in found["over_budget"]] == ["echo slow"]
    said = hooks_report.said(found)
    assert said[0].startswith("680 ms in hooks in the latest session (Claude Code's clock")
    assert "slowest: echo slow (PreToolUse, another hook) 630 ms" in said[0]
    assert "1 hook(s) over hook_budget_ms (100 ms) at p90" in said[1]
    assert status_report.hook_runs(recorder.conn)["mean_duration_clock"].startswith("ours")

    row = doctor.hook_budget(Path(recorder.root))[0]
    assert row["ok"] and row.get("warning") and "echo slow (PreToolUse) p90 150 ms" in row["detail"]

    assert statusline.slow_hooks(recorder.conn, SESSION, 100.0) == 1
    assert statusline.slow_hooks(recorder.conn, SESSION, 150.0) == 0  # p90 is 150: not past
    assert statusline.slow_hooks(recorder.conn, SESSION, 4.0) == 2
    idle = statusline.Status(0, [], [], 0, 0, 0.5, "recorded", slow_hooks=1)
    assert statusline.render(idle) == "cs: $0.50 · idle · 1 slow hook"
    busy = statusline.Status(1, [], [], 2, 1, None, None, slow_hooks=2)
    assert statusline.render(busy).endswith("2 open errors (ladder 1/4) · 2 slow hooks")


def test_forged_lines_naming_our_hook_are_left_out_of_every_figure(
    recorder: Recorder, main_path: Path
) -> None:
    """The agent can append lines to its own transcript: ones naming our hook that our own
    log does not have (no run of that event then), or with a durationMs past the hook's own
    timeout, are left out of `hooks`, `status`, `doctor` and the status line."""
    from claude_session.core import statusline
    from claude_session.services import status_report
    from claude_session.services.setup import doctor

    slow_session(recorder, main_path)  # the real runs: ours 10 x 5 ms, `echo slow` p90 150 ms
    forged = [
        # no run of ours anywhere near: an hour, then a minute
        attachment("hook_success", "PreToolUse", OURS_MCP, 3_600_000, 300, tool_use_id="f1"),
        attachment("hook_non_blocking_error", "PreToolUse", OURS_COMMAND, 60_000, 400),
        # beside a real run of ours, but longer than its 10 s timeout would ever let it run
        attachment("hook_success", "PreToolUse", OURS_MCP, 9e11, 5),
        attachment("hook_success", "PreToolUse", OURS_MCP, 10_001, 6),
        # our Stop command, where no Stop of ours ran (a PreToolUse did)
        attachment("hook_success", "Stop", OURS_COMMAND, 7_000, 7, tool_use_id="stop-9"),
        summary([{"command": OURS_COMMAND, "durationMs": 5e8}], 500, tool_use_id="stop-2"),
    ]
    write(main_path, forged)
    transcripts.catch_up(recorder.conn)
    stored = rows(recorder, "SELECT count(*) AS n FROM hook_runs WHERE ours = 1")[0]["n"]
    assert stored == 10 + len(forged)  # all read and kept as the transcript says; not taken

    report = hooks_report.report(recorder.conn, SESSION)
    ours = [r for r in report["rows"] if r["ours"] and r["measured"]]
    assert [(r["event"], r["runs"], r["total_ms"], r["max_ms"]) for r in ours] == [
        ("PreToolUse", 10, 50.0, 5.0)
    ]
    assert report["total"]["ours_ms"] == 50.0 and report["total"]["total_ms"] == 680.0
    assert hooks_report.by_turn(recorder.conn, SESSION)[1] == {"hooks_ms": 680.0, "ours_ms": 50.0}

    found = status_report.status(recorder.conn, recorder.root)["hook_time"]
    assert found["ours_ms"] == 50 and found["slowest"]["command"] == "echo slow"
    assert [r["command"] for r in found["over_budget"]] == ["echo slow"]

    row = doctor.hook_budget(Path(recorder.root))[0]
    assert "1 hook(s) over hook_budget_ms" in row["detail"]
    assert "echo slow (PreToolUse)" in row["detail"] and "claude-session (" not in row["detail"]

    assert statusline.slow_hooks(recorder.conn, SESSION, 100.0) == 1  # `echo slow` alone
    assert statusline.slow_hooks(recorder.conn, SESSION, 4.0) == 2  # ours: 5 ms, not hours


def test_the_status_line_counts_by_the_same_p90_as_the_report(tmp_path: Path) -> None:
    """The status line's SQL (fewer than ceil(0.9 n) runs within the budget) and the report's
    nearest-rank p90 agree for every count of runs and every budget."""
    from claude_session.core import statusline

    conn = db.connect(str(tmp_path / "p90.db"))  # the real table: the status line's query
    for n in range(1, 23):
        conn.execute("DELETE FROM hook_runs")
        values = [float((i * 37) % 101) for i in range(n)]
        for i, v in enumerate(values):
            conn.execute(
                "INSERT INTO hook_runs (path, line_end, item, session_id, agent_id, event,"
                " command, ours, outcome, duration_ms) VALUES ('t', ?, 0, 's', 's', 'e', 'c', 0,"
                " 'success', ?)",
                (i, v),
            )
        for budget in (0.0, 10.0, 50.0, 90.0, 99.0, 100.0):
            p90 = hooks_report.p90(values)
            assert p90 is not None
            assert statusline.slow_hooks(conn, "s", budget) == int(p90 > budget), (n, budget)


def test_hook_runs_are_span_events_on_their_tool_call_and_turn(
    recorder: Recorder, main_path: Path
) -> None:
    from claude_session.services.telemetry import otel_spans

    base = {"session_id": SESSION, "transcript_path": str(main_path), "cwd": recorder.root}
    slow_session(recorder, main_path)  # every run names tool call toolu_1
    call = {"tool_name": "Bash", "tool_use_id": "toolu_1", "prompt_id": PROMPT}
    recorder.send(base | call | {"hook_event_name": "PreToolUse", "tool_input": {"command": "ls"}})
    write(main_path, [summary([{"command": "cat >/dev/null", "durationMs": 8}], 20)])
    transcripts.catch_up(recorder.conn)
    spans = {s.key: s for s in otel_spans.session_spans(recorder.conn, SESSION, content=False)}
    on_tool = [e for e in spans["tool:toolu_1"].events if e.name == "claude_session.hook_run"]
    assert sorted(e.attributes["claude_session.hook.duration_ms"] for e in on_tool) == sorted(
        [10.0] * 8 + [150.0, 400.0] + [5.0] * 10
    )
    assert sum(e.attributes["claude_session.hook.ours"] is True for e in on_tool) == 10
    assert all("claude_session.hook.command" not in e.attributes for e in on_tool)  # content
    on_turn = [e for e in spans["turn:1"].events if e.name == "claude_session.hook_run"]
    assert [e.attributes["claude_session.hook.event"] for e in on_turn] == ["Stop"]
    assert on_turn[0].attributes["claude_session.hook.duration_ms"] == 8.0
    shown = otel_spans.session_spans(recorder.conn, SESSION, content=True)
    commands = {
        e.attributes.get("claude_session.hook.command") for s in shown for e in s.events
    } - {None}
    assert commands == {"echo slow", OURS_MCP, "cat >/dev/null"}


def test_the_session_page_charts_hook_time_per_turn_beside_cost(
    recorder: Recorder, main_path: Path
) -> None:
    from claude_session.web import web_server

    slow_session(recorder, main_path)
    write(main_path, [attachment("hook_success", "Stop", "printf '\x1b]8;;x\x07'", 2, 30)])
    transcripts.catch_up(recorder.conn)
    page = web_server.render(recorder.root, "", f"/session/{SESSION}", {})
    assert "<th>time in hooks</th>" in page
    assert "682 ms (ours 50)" in page  # turn 1: every run, 50 ms of them ours
    assert 'class="hooks-chart"' in page and 'class="hooks-bar"' in page
    assert "\x1b" not in page and "\x07" not in page


def test_reading_again_from_the_start_as_version_25_does_counts_nothing_twice(
    recorder: Recorder, main_path: Path
) -> None:
    """Migration 25 sets every transcript to be read again from its start (for the hook runs
    in lines read before): the responses, the runs and the counts of lines stay as they were."""
    slow_session(recorder, main_path)
    write(main_path, [assistant("msg_1", 30), summary([{"command": "x", "durationMs": 1}], 31)])
    transcripts.catch_up(recorder.conn)
    table = "SELECT * FROM {} ORDER BY 1, 2, 3"
    before = {t: rows(recorder, table.format(t)) for t in ("hook_runs", "message_usage")}
    lines = rows(recorder, "SELECT lines_read, lines_skipped FROM transcript_files")
    migration = Path(db.__file__).parent / "migrations" / "0025_hook_runs.sql"
    update = migration.read_text()[migration.read_text().index("UPDATE transcript_files") :]
    recorder.conn.execute(update)
    assert rows(recorder, "SELECT read_to FROM transcript_files") == [{"read_to": 0}]
    transcripts.catch_up(recorder.conn)
    assert {t: rows(recorder, table.format(t)) for t in before} == before
    assert rows(recorder, "SELECT lines_read, lines_skipped FROM transcript_files") == lines
