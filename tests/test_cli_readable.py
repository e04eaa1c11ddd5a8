"""The CLI as a person and a script read it: tables that fit 80 columns (on a terminal, piped,
with or without COLUMNS), one format for booleans and times, `--project` anywhere, clear errors
for values that name nothing, a status that opens with what is happening now."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from conftest import BUSY_SESSION as SESSION
from conftest import cli_at as run
from conftest import fixture, run_hook, stream

TABLES = [
    ["status"],
    ["agents", "--all"],
    ["claims", "--all"],
    ["errors"],
    ["errors", "--open"],
    ["failed-paths", "--all"],
    ["verdicts"],
    ["events"],
    ["events", "--payload"],
    ["config"],
    ["timeline"],
    ["timeline", "--tree"],
    ["state", "list"],
    ["state", "history"],
    ["memory", "list"],
    ["memory", "show", "1"],
    ["daemon", "status"],
]


def test_every_table_is_whole_piped_with_and_without_columns(busy: Path) -> None:
    for args in TABLES:
        for columns in ("80", None):
            done = run("--project", str(busy), *args, columns=columns)
            assert done.stdout.splitlines(), args
            # off a terminal nothing is cut to fit a width (a script or a file reads it)
            assert "\u2026" not in done.stdout, args
            assert "\x1b" not in done.stdout and "\u202e" not in done.stdout, args


def test_every_table_fits_an_80_column_terminal(busy: Path) -> None:
    for args in [*TABLES, ["doctor"]]:
        done = run("--project", str(busy), *args, terminal=True, check=args != ["doctor"])
        assert "Traceback" not in done.stderr
        lines = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout).splitlines()
        # a value wider than the terminal (a path) alone on its line: whole, the terminal wraps it
        fits = [len(line) <= 80 or (line[:2] == "  " and " " not in line.strip()) for line in lines]
        assert lines and all(fits), (args, lines)
        assert "\x1b]8;" not in done.stdout and "\u202e" not in done.stdout, args


def plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_terminal_output_honours_columns(busy: Path) -> None:
    done = run("--project", str(busy), "events", columns="120", terminal=True)
    widths = [len(line) for line in plain(done.stdout).splitlines()]
    assert max(widths) <= 120 and max(widths) > 80


def test_tables_drop_the_least_important_columns_first(busy: Path) -> None:
    narrow = plain(run("--project", str(busy), "events", columns="60", terminal=True).stdout)
    wide = plain(run("--project", str(busy), "events", columns="200", terminal=True).stdout)
    assert "via" in wide.splitlines()[1] and "via" not in narrow.splitlines()[1]
    assert "event" in narrow.splitlines()[1]  # what matters stays
    assert all(len(line) <= 60 for line in narrow.splitlines())


def test_booleans_are_yes_no_in_tables_and_true_false_in_json(busy: Path) -> None:
    claims = json.loads(run("--project", str(busy), "claims", "--json").stdout)
    assert claims and all(c["contested"] is True for c in claims)
    agents = json.loads(run("--project", str(busy), "agents", "--all", "--json").stdout)
    assert all(isinstance(a["is_internal"], bool) for a in agents)
    errors = json.loads(run("--project", str(busy), "errors", "--json").stdout)
    assert all(e["interrupted"] is False for e in errors)
    table = run("--project", str(busy), "claims", columns="200").stdout
    assert re.search(r"\byes\s*$", table.splitlines()[3]), table
    status = run("--project", str(busy), "status", columns="200").stdout
    assert "False" not in status and "True" not in status


def test_times_are_local_with_their_zone_and_never_epoch_numbers(busy: Path) -> None:
    for args in (["status"], ["events"], ["errors"], ["claims"], ["agents"], ["timeline"]):
        out = run("--project", str(busy), *args, columns="200").stdout
        assert not re.search(r"\b1[6-9]\d{8}(\.\d+)?\b", out), (args, out)
    status = run("--project", str(busy), "status", columns="200").stdout
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC[+-]\d\d:\d\d", status)
    assert "{" not in status  # no raw JSON snapshot
    events = run("--project", str(busy), "events", columns="200").stdout
    assert re.search(r"times in UTC[+-]\d\d:\d\d", events)
    agents = run("--project", str(busy), "agents", columns="200").stdout
    assert re.search(r"\b\d+s\b|\d+m\d\ds", agents)  # durations, one format
    as_json = json.loads(run("--project", str(busy), "events", "--json").stdout)
    assert all(isinstance(e["received_at"], float) for e in as_json)  # JSON keeps the number
    state = json.loads(run("--project", str(busy), "state", "list", "--json").stdout)
    assert all(isinstance(row["updated_at"], float) for row in state)  # not UTC text
    state_table = run("--project", str(busy), "state", "list", columns="200").stdout
    assert re.search(r"ago\b", state_table)


def test_status_opens_with_what_is_happening_now(busy: Path) -> None:
    out = run("--project", str(busy), "status", columns="140").stdout
    head = out.split("\n\n", 1)[0]
    assert "live agents: 3" in head  # main and the two subagents
    assert "first: refactor the parser" in head and "second: refactor the parser" in head
    assert "contested files: 1" in head and "very_long_directory_name" in head
    assert "open errors: 1" in head and "step 3 (research): Bash pytest" in head
    assert "last compaction:" in head and "ago (manual" in head
    assert "no claude-session hooks are installed" in head
    assert "daemon is not running while a session is live" in head
    now = json.loads(run("--project", str(busy), "status", "--json").stdout)["now"]
    assert len(now["live_agents"]) == 3 and len(now["contested_files"]) == 1
    assert now["open_errors"][0]["step"] == "3 (research)"
    assert now["last_compaction"]["trigger"] == "manual"
    assert now["last_compaction"]["restored"]["task"] == 1
    assert any("hooks" in p for p in now["problems"])


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "list", "--project", "{p}"],
        ["state", "get", "k", "--project", "{p}"],
        ["status", "--project={p}"],
        ["events", "--limit", "1", "--project", "{p}", "--json"],
    ],
    ids=["memory-list", "state-get", "status-equals", "events"],
)
def test_project_is_accepted_after_the_subcommand(project: Path, args: list[str]) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    run("--project", str(project), "state", "set", "k", "v")
    done = run(*(a.replace("{p}", str(project)) for a in args), check=False)
    assert done.returncode == 0, done.stderr
    if args[:2] == ["state", "get"]:
        assert done.stdout.strip() == "v"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["events", "--event", "PostTooluse"], "unknown event 'PostTooluse'; did you mean"),
        (["events", "--tool", "Bsh"], "unknown tool 'Bsh'"),
        (["events", "--session", "nonexistent"], "unknown session 'nonexistent'"),
        (["events", "--session", "ab"], "session 'ab' is ambiguous"),
        (["events", "--agent", "zz-no-agent"], "unknown agent 'zz-no-agent'"),
        (["agents", "--session", "nonexistent"], "unknown session 'nonexistent'"),
        (["restore", "--session", "nonexistent"], "unknown session 'nonexistent'"),
        (["fail", "x", "--reason", "y", "--session", "nope"], "unknown session 'nope'"),
        (["timeline", "nonexistent"], "nonexistent"),
        (["memory", "show", "999"], "no memory '999'"),
        (["state", "history", "last_sesion_id"], "unknown state key 'last_sesion_id'; did you"),
    ],
    ids=lambda v: v if isinstance(v, str) else "-".join(v)[:30],
)
def test_unknown_values_are_one_clear_line_and_exit_1(
    project: Path, args: list[str], message: str
) -> None:
    for payload in stream(project):
        run_hook(payload["hook_event_name"], payload, project)
    for session in ("ab-one", "ab-two"):
        start = fixture("SessionStart.startup", project) | {"session_id": session}
        run_hook("SessionStart", start, project)
    done = run("--project", str(project), *args, check=False)
    assert done.returncode != 0, done.stdout
    assert message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    if args[:2] == ["events", "--event"]:
        assert "did you mean 'PostToolUse'?" in done.stderr
    if args[:2] == ["events", "--tool"]:
        assert "did you mean 'Bash'?" in done.stderr


def test_commands_that_act_answer_json(project: Path, reap_daemons: None) -> None:
    for payload in stream(project):
        run_hook(payload["hook_event_name"], payload, project)
    p = ("--project", str(project))
    restored = json.loads(run(*p, "restore", "--preview", "--json").stdout)
    assert restored["session_id"] == SESSION and "hello.py" in restored["context"]
    given = json.loads(run(*p, "restore", "--json").stdout)  # never compacted: nothing given
    assert given["session_id"] == SESSION and given["context"] is None
    failed = json.loads(run(*p, "fail", "sed -i", "--reason", "breaks", "--json").stdout)
    assert failed["recorded"] is True and isinstance(failed["id"], int)
    resolved = json.loads(run(*p, "fail", "--resolve", str(failed["id"]), "--json").stdout)
    assert resolved == {"id": failed["id"], "resolved": True}
    assert json.loads(run(*p, "ingest", "--json").stdout) == {"ingested": 0, "waiting": 0}
    pruned = json.loads(run(*p, "prune", "--yes", "--json").stdout)
    assert "events" in pruned["rows_removed"]
    assert json.loads(run(*p, "daemon", "stop", "--json").stdout) == {"stopped": False}
    started = json.loads(run(*p, "daemon", "start", "--json").stdout)
    assert started["started"] is True and isinstance(started["pid"], int)
    assert json.loads(run(*p, "daemon", "stop", "--json").stdout) == {"stopped": True}
    installed = json.loads(run(*p, "install", "--json").stdout)
    assert any("installed" in m for m in installed["messages"])
    dry = json.loads(run(*p, "uninstall", "--dry-run", "--json").stdout)
    assert "hooks" not in dry["settings"] or "SessionStart" not in dry["settings"]["hooks"]
    removed = json.loads(run(*p, "uninstall", "--json").stdout)
    assert any("removed claude-session hooks" in m for m in removed["messages"])


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "not valid JSON"),
        ('{"claim_lease_minutes": 15, "lease_minuts": 3}', "lease_minuts: unknown setting"),
        ('{"claim_lease_minutes": 0}', "claim_lease_minutes: must be greater than 0"),
        ('{"conflict_policy": "block"}', "must be one of warn, deny"),
    ],
    ids=["not-json", "unknown-key", "zero", "bad-choice"],
)
def test_doctor_fails_on_a_broken_configuration(project: Path, text: str, reason: str) -> None:
    (project / ".claude-session.json").write_text(text)
    done = run("--project", str(project), "doctor", "--json", check=False)
    assert done.returncode == 1
    check = next(r for r in json.loads(done.stdout) if r["check"] == "configuration")
    assert check["ok"] is False and reason in check["detail"]


def test_demo_shows_the_compacted_sessions_restore_as_given_and_says_where_it_was() -> None:
    """The recorded project has two sessions, both compacted: the second, that worked, last.
    The demo shows what SessionStart really put back into it (the injection log), naming it:
    its task, its open error, its subagent, the file it wrote, and the git state of the
    scratch project, a repository with one commit (its HEAD the same on every machine)."""
    done = run("demo", columns="100")
    flat = " ".join(done.stdout.split())
    assert (
        "played 38 Claude Code 2.1.330 events (35 recorded from the real CLI, 3 composed from"
        " its recorded payloads)" in flat
    )
    assert "after session 560819af-56fc-4528-be0a-32a24d1aa819 was compacted" in flat
    block = done.stdout[done.stdout.index("<claude-session-recorded-state>") :]
    said = " ".join(block.split())
    assert "Context was just compacted." in block
    assert "Session 560819af-56fc-4528-be0a-32a24d1aa819, state as of" in block
    assert "TASK-A: write hello.py and run it" in said
    assert "Bash `python3 -c 'import nonexistent_mod'` failed 1x [runtime]" in said
    assert (
        'a026341fa5086f41e (general-purpose, completed) "sub work"; asked: SUBTASK-B: read'
        " hello.py; reported: It prints hello." in said
    )
    assert "- hello.py by main (Edit, 2 edits," in said
    assert "- branch main at c5fc097194f0 - 1 changed: ?? hello.py" in said
    assert "git state unavailable" not in said
    head = done.stdout.split("\n\n", 2)[1]
    assert "open errors: 1" in head and "nonexistent_mod" in head
    deleted = re.search(r"scratch project deleted: (\S+)", done.stdout)
    assert deleted and not Path(deleted.group(1)).exists()
    time.sleep(1.5)  # nothing started by its hooks (a workspace capture) makes it again
    assert not Path(deleted.group(1)).exists()
    as_json = json.loads(run("demo", "--json").stdout)
    assert [e["what"] for e in as_json["status"]["open_errors"]] == [
        "python3 -c 'import nonexistent_mod'"
    ]
    assert as_json["session_id"] == "560819af-56fc-4528-be0a-32a24d1aa819"
    assert as_json["played"] == 38 and as_json["composed"] == 3
    assert "Context was just compacted." in as_json["context"] and not as_json["hook_failures"]
    assert as_json["deleted"] is True and not Path(as_json["project"]).exists()


def test_status_shows_the_newest_open_errors_and_where_to_see_the_rest(project: Path) -> None:
    """35 ladders open: `status` says 30 or more, lists the newest 10 in its table and names
    the command that lists them all; `status --json` holds the newest 30, newest first."""
    from inproc import Recorder

    recorder = Recorder(project)
    for n in range(35):
        failure = fixture("PostToolUseFailure.Bash", project) | {"session_id": SESSION}
        failure["tool_use_id"] = f"fail-{n}"
        failure["tool_input"] = {"command": f"make target_{n:02d}"}
        recorder.send(failure)
        recorder.advance(1)
    recorder.close()
    out = run("--project", str(project), "status", columns="120").stdout
    assert "open errors: 30 or more" in out
    table = out[out.index("\nopen errors ") :]
    assert "make target_34" in table and "make target_25" in table
    assert "make target_24" not in table
    assert "... 20 more (`claude-session errors --open`)" in table
    shown = json.loads(run("--project", str(project), "status", "--json").stdout)["open_errors"]
    assert [e["what"] for e in shown] == [f"make target_{n:02d}" for n in range(34, 4, -1)]
