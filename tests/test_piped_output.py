"""Output as a pipe, a file and a terminal get it (issue 32): off a terminal every line is
whole, whatever `COLUMNS` says (no wrapping, no cutting, a path can be copied as it is); on
a terminal tables never split a value (only free text folds, at spaces), and `--all`
listings are laid out as the listings without it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import LONG_FILE
from conftest import cli_at as run

from claude_session.core.terminal import escape_controls

PIPED = [
    ["status"],
    ["doctor"],
    ["cost"],
    ["agents", "--all"],
    ["claims", "--all"],
    ["errors", "--all"],
    ["statusline", "--json"],
]


def plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_piped_output_keeps_every_path_whole_at_80_columns(finished: Path) -> None:
    long_file = escape_controls(LONG_FILE)
    for args in PIPED:
        done = run("--project", str(finished), *args, columns="80", check=False)
        assert "Traceback" not in done.stderr, args
        for stream in (done.stdout, done.stderr):
            assert "\u2026" not in stream, (args, stream)
            # a path longer than 80 columns is on one line or nowhere: never folded
            if "very_long_directory_name" in stream:
                assert long_file.split("/", 1)[1] in stream, (args, stream)
        joined = done.stdout + done.stderr
        if args[0] in ("status", "doctor", "statusline"):
            assert str(finished) in joined, (args, joined)
    claims = run("--project", str(finished), "claims", "--all").stdout
    assert long_file in claims
    every = run("--project", str(finished), "agents", "--all").stdout
    assert any(len(line) > 80 for line in every.splitlines())  # whole rows, however long


def test_statusline_takes_json_like_every_command(finished: Path) -> None:
    spelled = json.loads(run("--project", str(finished), "statusline", "--json").stdout)
    long_form = json.loads(run("--project", str(finished), "statusline", "--format", "json").stdout)
    assert spelled.keys() == long_form.keys() and spelled["project"] == str(finished)


def starts(header: str) -> list[int]:
    """Where each column of a table's header row starts (columns are two spaces apart at
    least: SIMPLE_HEAD tables)."""
    return [m.start() for m in re.finditer(r"(?:^|(?<=  ))\S", header)]


def test_all_listings_are_aligned_tables_on_a_terminal(finished: Path) -> None:
    """`--all` on a terminal is laid out as the listing without it (issue 44): an aligned
    table of the columns that fit whole, or, where even the must-keep ones do not (a claim's
    path longer than the terminal), one record per block."""
    for args in (["agents", "--all"], ["claims", "--all"], ["errors", "--all"]):
        done = run("--project", str(finished), *args, columns="80", terminal=True)
        lines = [line for line in plain(done.stdout).splitlines() if line.strip()]
        assert "\t" not in done.stdout and "\u2026" not in done.stdout, (args, lines)
        if args[0] == "claims":
            assert lines[:2] == ["file path", "  " + escape_controls(LONG_FILE)], lines
            assert "contested  no" in lines, lines
            continue
        assert all(len(line) <= 80 for line in lines), (args, lines)
        header, rule = lines[0], lines[1]
        rows = lines[2:]
        hidden = [n for n, line in enumerate(rows) if line.startswith("(hidden at")]
        rows = rows[: hidden[0]] if hidden else rows  # the line naming what did not fit
        assert set(rule.strip()) == {"─"}, (args, lines)
        columns = starts(header)
        assert len(columns) >= 3 and rows, (args, header)
        for row in rows:  # the gap before each column is blank on every line: aligned
            for start in columns[1:]:
                assert row[start - 2 : start] == "  ", (args, start, row)


def test_all_listings_on_a_terminal_name_the_columns_they_hide(finished: Path) -> None:
    """At 80 columns `agents --all` keeps the agent, its task and its state, whole, and says
    once, under the last row, which columns it left out and what shows them."""
    done = run("--project", str(finished), "agents", "--all", columns="80", terminal=True)
    lines = plain(done.stdout).splitlines()
    assert lines[0].split() == ["agent", "task", "state"], lines[0]
    notes = [line for line in lines if line.startswith("(hidden at 80 columns: ")]
    assert len(notes) == 1 and "age" in notes[0] and "cost" in notes[0], lines
    assert "--wide or --json shows them)" in " ".join(" ".join(lines).split())


def test_prune_with_nothing_to_prune_piped_exits_0(finished: Path) -> None:
    done = run("--project", str(finished), "prune", "--older-than", "30", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nothing to prune" in done.stdout


def test_watch_once_piped_does_not_say_how_to_quit(finished: Path) -> None:
    done = run("--project", str(finished), "watch", "--once")
    assert "q or Ctrl+C" not in done.stdout
    assert "claude-session watch" in done.stdout
