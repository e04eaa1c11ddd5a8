"""A day's use, as a new user meets it at 80 columns and with pipes: every command that prints
something, at 80 and at 200 columns, on a project recorded through the real hooks. No line is
wider than the width; hints and fixes wrap, never cut; tables keep whole headers and say which
columns they left out and what shows them (`--wide`, `--json`); a listing whose default filter
hides rows says how many and which option shows them; piped `--all` rows are whole."""

from __future__ import annotations

import json
import re
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import (
    BUSY_SESSION,
    LONG,
    LONG_FILE,
    cli_at,
    clone_database,
    fixture,
    hook_argv,
    hook_env,
    run_hook,
    write_config,
)

WIDTHS = (80, 200)
FULL_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC[+-]\d\d:\d\d")
# What every command prints for a person (piped, as into a pager), by the words a user types.
COMMANDS = [
    ["status"],
    ["agents"],
    ["claims"],
    ["errors"],
    ["errors", "--open"],
    ["failed-paths"],
    ["verdicts"],
    ["events"],
    ["events", "--payload"],
    ["timeline"],
    ["timeline", "--tree"],
    ["diff", "1", "5"],
    ["diff", "1", "5", "--stat"],
    ["state", "list"],
    ["state", "history"],
    ["memory", "list"],
    ["memory", "search", "parser"],
    ["memory", "show", "1"],
    ["memory", "export"],
    ["config"],
    ["doctor"],
    ["daemon", "status"],
    ["restore"],
    ["statusline"],
    ["watch", "--once"],
    ["prune", "--dry-run"],
    ["ingest"],
    ["revert", "1", "--dry-run"],
    ["install", "--dry-run"],
    ["uninstall", "--dry-run"],
    ["trust", "--yes"],
    ["demo"],
]
DATA_FROM = {  # where a command's data starts: printed for a program, never folded
    "diff": re.compile(r"^diff --git "),
    "install": re.compile(r"^\{"),
    "memory export": re.compile(r"^\{"),  # JSON lines
    # The restored context, piped: exactly the text the model received, lines whole.
    "restore": re.compile(r"^<claude-session-recorded-state>"),
    "demo": re.compile(r"^<claude-session-recorded-state>"),
}


def run(project: Path, *args: str, width: int = 80, terminal: bool = False) -> list[str]:
    """stdout and stderr of the command, as lines (a failing doctor is still read)."""
    done = cli_at(
        "--project",
        str(project),
        *args,
        columns=str(width),
        terminal=terminal,
        check=args[0] != "doctor",
    )
    assert "Traceback" not in done.stderr, done.stderr
    text = done.stdout + done.stderr
    return re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines()


def fits(line: str, width: int) -> bool:
    """No wider than `width`, but for a value wider than the terminal alone on its line (a
    record's path, one record per block): printed whole, never split, the terminal wraps it."""
    return len(line) <= width or (line.startswith("  ") and " " not in line.strip())


def said(lines: list[str]) -> str:
    """The lines as one text, wrapping undone (whitespace runs as one space)."""
    return " ".join(" ".join(lines).split())


def wrapped(lines: list[str], start: str) -> list[str]:
    """The line that starts with `start` and its continuation lines (indented deeper)."""
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith(start))
    lead = len(lines[at]) - len(lines[at].lstrip())
    found = [lines[at]]
    for line in lines[at + 1 :]:
        if len(line) - len(line.lstrip()) <= lead or not line.strip():
            break
        found.append(line)
    return found


def header_lines(lines: list[str]) -> list[str]:
    """The header line of every table: the one above its rule."""
    return [lines[i - 1] for i, line in enumerate(lines) if i and line.startswith("───")]


def column(lines: list[str], name: str) -> list[str]:
    """The text of one table column, row after row (continuation lines included), cut at the
    next column's start."""
    head = next(line for line in header_lines(lines) if re.search(rf"(^|\s){name}(\s|$)", line))
    start = re.search(rf"(^|\s)({name})(\s|$)", head)
    assert start
    begin = start.start(2)
    after = re.search(r"\s{2,}\S", head[begin:])
    end = begin + after.end() - 1 if after else None
    body = lines[lines.index(head) + 2 :]
    return [line[begin:end].strip() for line in body if line.strip()]


@pytest.fixture
def day(busy: Path, tmp_path: Path) -> Path:
    """The busy session and more of a day: a failed path, a judge's verdict."""
    cli_at("--project", str(busy), "fail", "sed -i on " + LONG, "--reason", "breaks " + LONG)
    judge = tmp_path / "judge.sh"
    verdict = json.dumps({"decision": "block", "reason": "not done: " + LONG})
    judge.write_text(f"#!/bin/sh\ncat >/dev/null\ncat <<'EOF'\n{verdict}\nEOF\n")
    judge.chmod(judge.stat().st_mode | stat.S_IEXEC)
    write_config(busy, {"judge_command": str(judge), "judge_events": "TaskCompleted"})
    done = {
        "session_id": BUSY_SESSION,
        "hook_event_name": "TaskCompleted",
        "cwd": str(busy),
        "task_id": "t1",
        "task_subject": "refactor the parser",
    }
    blocked = subprocess.run(
        hook_argv("TaskCompleted"),
        input=json.dumps(done).encode(),
        capture_output=True,
        env=hook_env(busy),
        timeout=60,
    )
    assert blocked.returncode == 3, blocked.stderr  # the judge's block
    return busy


@pytest.mark.parametrize("width", WIDTHS)
def test_every_command_fits_the_width_and_cuts_no_header(day: Path, width: int) -> None:
    for args in COMMANDS:
        lines = run(day, *args, width=width, terminal=True)
        assert lines, args
        shown = lines
        begins = DATA_FROM.get(" ".join(args[:2])) or DATA_FROM.get(args[0])
        if begins:
            first = next((i for i, line in enumerate(lines) if begins.match(line)), None)
            shown = lines[:first]
        too_long = [line for line in shown if not fits(line, width)]
        assert not too_long, (args, width, too_long[:3])
        cut = [line for line in header_lines(shown) if "…" in line]
        assert not cut, (args, width, cut)  # "resolution", never "resolut…"
        notes = [line for line in shown if line.startswith("(hidden at")]
        assert all("…" not in line for line in notes), (args, notes)
        if args[0] != "watch":  # a live view redrawn in place: it cuts to fit the screen
            hints = [line for line in shown if "`claude-session" in line]
            assert all("…" not in line for line in hints), (args, hints)


def test_a_problem_and_its_fix_wrap_at_80_columns(busy: Path, tmp_path: Path) -> None:
    """An untrusted database (a copy, as a clone has it): status says why and how to fix it,
    the fix on one line; the compaction line says all it restored."""
    clone = tmp_path / "clone"
    clone_database(busy, clone)
    lines = run(clone, "status", terminal=True)
    assert all(fits(line, 80) for line in lines), [line for line in lines if not fits(line, 80)]
    head = lines[: lines.index("")]
    text = said(head)
    assert "the database is not trusted: the database was not created by claude-session" in text
    assert any("`claude-session trust`" in line for line in head), head
    assert "not restored yet (saved for it: 1 prompt, 2 agents, 2 claims, 1 error)" in text
    problems = head[next(i for i, line in enumerate(head) if line.startswith("problems:")) :]
    assert not [line for line in problems if "…" in line], problems
    assert "…" not in said(wrapped(head, "last compaction:"))
    doctor = said(run(clone, "doctor", terminal=True))
    assert "run `claude-session trust` if it is yours" in doctor


def test_timeline_at_80_keeps_what_and_files_and_names_what_it_left_out(day: Path) -> None:
    lines = run(day, "timeline", terminal=True)
    (head,) = header_lines(lines)
    assert head.split()[:2] == ["frame", "agent"] and "what" in head and "files" in head
    files = "".join(column(lines, "files"))
    assert LONG_FILE.replace("\x1b", "\\x1b") in files  # folded in its column, whole
    what = " ".join(column(lines, "what"))
    assert "prompt: refactor the parser refactor the parser" in " ".join(what.split())
    note = said(wrapped(lines, "(hidden at"))
    assert note.startswith("(hidden at 80 columns: created, turn")
    assert note.endswith("— --wide or --json shows them)")
    wide = run(day, "timeline", "--wide")
    (head,) = header_lines(wide)
    assert head.split()[:7] == ["frame", "created", "turn", "kind", "agent", "what", "files"]
    assert not any(line.startswith("(hidden at") for line in wide)


def test_headers_are_whole_and_wide_shows_every_column(day: Path) -> None:
    lines = run(day, "errors", terminal=True)
    (head,) = header_lines(lines)
    assert "state" in head.split() and "resolution" not in head.split()
    note = said(wrapped(lines, "(hidden at"))
    assert "(hidden at 80 columns: agent, tool, category, exit code, last, resolved" in note
    assert "--wide or --json shows them)" in note
    wide = run(day, "errors", "--wide")
    (head,) = header_lines(wide)
    assert re.split(r"\s{2,}", head.strip()) == [
        "id", "session", "agent", "tool", "category", "what", "attempts", "step", "state",
        "exit code", "last", "resolved", "tokens", "cost",
    ]  # fmt: skip
    assert BUSY_SESSION in "\n".join(wide)  # the whole id, not a prefix
    assert "pytest " + LONG.replace("\x1b", "\\x1b").replace("\u202e", "\\u202e") in "\n".join(wide)
    assert not any("…" in line or line.startswith("(hidden") for line in wide)


def test_state_history_keeps_keys_whole_and_payloads_wrap(day: Path) -> None:
    lines = run(day, "state", "history", terminal=True)
    assert all(len(line) <= 80 for line in lines)
    # A 68-character key and the new value beside it do not fit 80 columns: one change per
    # block, the key whole on its line.
    assert any(re.fullmatch(r"key\s+release_x{60}", line.rstrip()) for line in lines), lines
    payload = run(
        day, "events", "--payload", "--event", "PostToolUseFailure", "--limit", "1", terminal=True
    )
    assert all(len(line) <= 80 for line in payload)
    (head,) = header_lines(payload)
    assert "payload" in head
    body = "".join("".join(column(payload, "payload")).split())
    assert '"tool_name":"Bash"' in body and '"duration_ms":' in body
    assert not [line for line in payload if "…" in line]


@pytest.mark.parametrize("listing", [["claims"], ["agents"], ["events"], ["events", "--payload"]])
def test_scripts_get_whole_rows_and_a_terminal_the_width(day: Path, listing: list[str]) -> None:
    piped = run(day, *listing, "--all")
    assert len(piped) > 1 and "\t" in piped[0]
    assert not [line for line in piped if "…" in line], piped
    rows = "\n".join(piped[1:])
    assert BUSY_SESSION in rows
    if listing[0] != "agents":  # its times are ages: durations
        assert FULL_TIME.search(rows), rows
    if listing == ["claims"]:
        assert LONG_FILE.replace("\x1b", "\\x1b") in rows
    if listing == ["agents"]:
        assert LONG.replace("\x1b", "\\x1b").replace("\u202e", "\\u202e") in rows
    terminal = run(day, *listing, "--all", terminal=True)
    assert all(fits(line, 80) for line in terminal), terminal
    wide = run(day, *listing, "--all", "--wide", terminal=True)
    assert not [line for line in wide if "…" in line]


def test_a_listing_never_says_none_silently(finished: Path) -> None:
    """After a session with two finished subagents: `agents` and `claims` show none (their
    default filter keeps the live ones) and say how many they hide and what shows them."""
    p = ("--project", str(finished))
    agents = cli_at(*p, "agents")
    assert agents.stdout.strip() == "agents: none"
    assert "3 hidden: agents of ended sessions" in said(agents.stderr.splitlines())
    assert "(`claude-session agents --all` shows them)" in said(agents.stderr.splitlines())
    every = cli_at(*p, "agents", "--all")
    assert len(every.stdout.splitlines()) == 4 and "hidden" not in every.stderr
    claims = cli_at(*p, "claims")
    assert claims.stdout.strip() == "claims: none"
    assert "2 hidden: released claims (`claude-session claims --all` shows them)" in said(
        claims.stderr.splitlines()
    )
    assert json.loads(cli_at(*p, "agents", "--json").stdout) == []  # JSON: the rows alone
    assert json.loads(cli_at(*p, "claims", "--json").stdout) == []
    failed = json.loads(cli_at(*p, "fail", "make all", "--reason", "slow", "--json").stdout)
    cli_at(*p, "fail", "--resolve", str(failed["id"]))
    paths = cli_at(*p, "failed-paths")
    assert paths.stdout.strip() == "failed paths: none"
    assert "1 hidden: failed paths resolved or expired" in said(paths.stderr.splitlines())
    assert "`claude-session failed-paths --all` shows them" in said(paths.stderr.splitlines())
    assert "hidden" not in cli_at(*p, "errors").stderr  # no default filter: nothing hidden


def test_a_live_session_hides_nothing_and_says_nothing(busy: Path) -> None:
    for listing in (["agents"], ["claims"], ["failed-paths"], ["errors", "--open"]):
        done = cli_at("--project", str(busy), *listing)
        assert "hidden" not in done.stderr, (listing, done.stderr)


def test_restore_piped_is_exactly_what_the_model_got_and_folds_on_a_terminal(day: Path) -> None:
    """`restore > context.txt` holds the injected text line for line (`--json` has it too); a
    person at an 80-column terminal gets it folded, nothing cut."""
    compacted = fixture("SessionStart.compact", day) | {"session_id": BUSY_SESSION}
    given = run_hook("SessionStart", compacted, day).json()["hookSpecificOutput"]
    exact = json.loads(cli_at("--project", str(day), "restore", "--json").stdout)["context"]
    piped = cli_at("--project", str(day), "restore", columns="80").stdout

    def same(text: str) -> str:  # "0s ago" a second later may read "1s ago"
        return re.sub(r"\d+", "0", text.rstrip("\n"))

    assert exact == given["additionalContext"]  # verbatim: what the model got, as it got it
    assert piped.rstrip("\n") == exact
    assert any(len(line) > 80 for line in exact.splitlines())  # so folding is needed at 80
    shown = run(day, "restore", width=80, terminal=True)
    assert all(len(line) <= 80 for line in shown)
    header = next(i for i, line in enumerate(shown) if line.startswith("put back into session"))
    assert "(SessionStart, compact), as the model got it:" in said(shown[header:])  # stderr
    folded = "".join(shown[:header])  # a long path is folded mid-word: compare without whitespace
    assert same("".join(folded.split())) == same("".join(exact.split()))
