"""Tables on a terminal never split a value (issue 44): at any width from 40 to 200, every
cell that is not free text (an id, a number, a cost, a state word, a time) is either whole on
one line or in a column the table names as hidden; free text folds only at spaces (a word up
to WORD_CAP cells is never broken); when even the must-keep columns do not fit, the rows come
one record per block, every value whole. Laid out by cli/tables and printed by rich, as the
CLI prints them."""

from __future__ import annotations

import io
import re
import string
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from claude_session.cli import output, tables

# Column names that are not free text and that cli/cells prints as they are (no age, no
# prefix, no yes/no): their cells must show whole.
ATOMS = ("agent", "state", "event", "kind", "resolution", "operation", "decision", "tool_name")
FREE = ("task", "what", "text")  # in tables.WRAPPED: these fold, at spaces
ATOM_CHARS = string.ascii_letters + string.digits + "$.-:_/"

atom = st.one_of(
    st.text(ATOM_CHARS, min_size=1, max_size=38),  # ids (a session id is 36), costs, states
    st.from_regex(r"20\d\d-[01]\d-[0-3]\d [0-2]\d:[0-5]\d:[0-5]\d", fullmatch=True),  # a time
)
word = st.text(string.ascii_lowercase + "[]\\/.", min_size=1, max_size=tables.WORD_CAP)
free = st.lists(word, min_size=1, max_size=30).map(" ".join)


@st.composite
def listing(draw: st.DrawFn) -> tuple[list[str], list[dict[str, Any]]]:
    names = draw(st.lists(st.sampled_from(ATOMS + FREE), min_size=1, max_size=8, unique=True))
    rows = [
        {n: draw(free if n in FREE else atom) for n in names}
        for _ in range(draw(st.integers(1, 4)))
    ]
    return names, rows


def render(rows: list[dict[str, Any]], width: int) -> tuple[list[str], list[str]]:
    """The lines a terminal `width` cells wide shows, and the headers of the hidden columns."""
    out = Console(file=io.StringIO(), width=width, color_system=None, highlight=False)
    hidden = output.print_table(out, rows, "a table", tell_dropped=False)
    assert isinstance(out.file, io.StringIO)
    return out.file.getvalue().splitlines(), hidden


@settings(max_examples=300, deadline=None)
@given(listing(), st.integers(40, 200))
def test_no_value_is_ever_split_at_any_width(
    found: tuple[list[str], list[dict[str, Any]]], width: int
) -> None:
    names, rows = found
    lines, hidden = render(rows, width)
    assert all(len(line) <= width for line in lines), (width, lines)
    shown = [n for n in names if tables.header(n) not in hidden]
    assert names[0] in shown  # the first column names the row: never hidden
    for row in rows:
        for name in shown:
            if name in FREE:  # folded at spaces: every word whole on a line
                for part in row[name].split(" "):
                    assert any(part in line for line in lines), (name, part, lines)
            else:
                assert any(row[name] in line for line in lines), (name, row[name], lines)


def test_the_papercut_of_issue_44_an_agents_listing_at_80_columns() -> None:
    """The rows `agents --all` printed as `comple`/`ted` and `$0.00` over `86`: each value
    now whole on one line, or its column named as hidden."""
    session = "560819af-56fc-4528-be0a-32a24d1aa819"
    rows = [
        {
            "agent": agent,
            "type": kind,
            "task": "TASK-A: write hello.py and run it",
            "state": "completed",
            "age_seconds": 65,
            "silent_seconds": 3,
            "files": 1,
            "tokens": 1800,
            "cost_usd": 0.0086,
            "reason": "session ended (other)",
        }
        for agent, kind in ((session, "main"), ("a1fffffffffffffff", "general-purpose"))
    ]
    for width in (80, 120):
        lines, hidden = render(rows, width)
        for value in (session, "a1fffffffffffffff", "completed"):
            assert any(value in line for line in lines), (width, value, lines)
        assert "cost" in hidden or any("$0.0086" in line for line in lines), lines
        assert not any(line.rstrip().endswith(("comple", "$0.00")) for line in lines), lines
    assert "cost" not in render(rows, 120)[1]


def test_rows_whose_must_keep_columns_do_not_fit_come_one_record_per_block() -> None:
    """A path longer than the terminal in the first column: one record per block, the path
    whole on a line of its own (the terminal wraps it; nothing folds it), nothing hidden."""
    path = "src/" + "very_long_directory_name/" * 4 + "module.py"
    rows = [{"file_path": path, "agent": "a1fffffffffffffff", "contested": 1, "edits": 3}]
    lines, hidden = render(rows, 80)
    assert hidden == []
    assert "  " + path in lines
    assert "agent      a1fffffffffffffff" in lines and "contested  yes" in lines


def test_key_value_sections_fold_free_text_at_spaces_and_never_split_a_path_or_a_time() -> None:
    """`status`'s and `memory show`'s key/value sections: a path too long to sit beside its
    key goes whole on the next line; a time is never parted at its spaces; text folds."""
    path = "/home/someone/projects/" + "deeply/nested/" * 5 + ".claude-session.db"
    values = {"path": path, "last_run_at": 1_800_000_000.0, "note": "a few words " * 8}
    for width in (40, 80, 120):
        out = Console(file=io.StringIO(), width=width, color_system=None, highlight=False)
        output.emit_pairs(out, "database", values)
        assert isinstance(out.file, io.StringIO)
        lines = out.file.getvalue().splitlines()
        assert any(path in line for line in lines), lines
        times = [line for line in lines if re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", line)]
        assert len(times) == 1, lines
        assert all(len(line) <= width for line in lines if path not in line), lines
