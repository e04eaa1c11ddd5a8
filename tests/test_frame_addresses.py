"""Frames are addressed the way `timeline` prints them: a bare N is frame N of the latest
session, an exact session id wins over a longer id it prefixes, every addressing error and
every time-travel command's --help teach the syntax, and a hostile session id cannot move a
fork's default folder away from beside the project."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import fixture, query, run_hook, wait_for
from inproc import Recorder
from test_timetravel import cli

from claude_session.cli import cli as click_cli
from claude_session.services.timetravel import fork, timetravel
from claude_session.services.timetravel.timetravel import (
    ADDRESS_SYNTAX,
    FrameError,
    FrameRef,
)

OLDER = "2f0c1d7e-older"  # starts with "2": a frame address `2` is frame 2, a session one this
NEWER = "9b7e44a0-newer"
DIGITS = "12345678-9abc"


def play(rec: Recorder, session_id: str) -> int:
    """A start, a prompt, a Bash call and a stop, a second apart; the frames it made."""
    root = Path(rec.root)
    for name in ("SessionStart.startup", "UserPromptSubmit", "PostToolUse.Bash", "Stop"):
        rec.send(fixture(name, root) | {"session_id": session_id, "tool_use_id": session_id})
        rec.advance(1)
    (count,) = rec.rows("SELECT count(*) FROM frames WHERE session_id = ?", (session_id,))[0]
    assert count >= 3, "the fixture events commit frames"
    return int(count)


def flat(text: str) -> str:
    """Help text as one line: click wraps it at the terminal's width."""
    return " ".join(text.split())


def test_a_whole_session_id_names_its_latest_frame_whatever_it_holds(
    recorder: Recorder,
) -> None:
    """A session id is what the payload said: one holding `:` or `@` is still addressed
    whole (`timeline` passes the id it found back as an address)."""
    odd = "odd:5@x"
    last = play(recorder, odd)
    assert timetravel.resolve(recorder.conn, odd) == FrameRef(odd, last)
    assert timetravel.find_session(recorder.conn, f" {odd} ") == odd


def test_a_bare_number_is_that_frame_of_the_latest_session(recorder: Recorder) -> None:
    play(recorder, OLDER)
    last = play(recorder, NEWER)
    conn = recorder.conn
    assert timetravel.latest_session(conn) == NEWER
    assert timetravel.resolve(conn, "2") == FrameRef(NEWER, 2)
    assert timetravel.resolve(conn, f" {last} ") == FrameRef(NEWER, last)
    assert timetravel.resolve(conn, ":2") == FrameRef(NEWER, 2)
    assert timetravel.resolve(conn, ":-1") == FrameRef(NEWER, last - 1)
    assert timetravel.resolve(conn, "2f:2") == FrameRef(OLDER, 2)
    assert timetravel.resolve(conn, "2f") == FrameRef(OLDER, last)
    assert timetravel.resolve(conn, f"{OLDER}@turn:1").session_id == OLDER
    # a session is asked for: digits that start one session's id name it, `:N` the frame
    assert timetravel.find_session(conn, "2") == OLDER
    assert timetravel.find_session(conn, ":2") == NEWER
    assert timetravel.find_session(conn, "3") == NEWER  # no session starts with 3: frame 3


def test_an_all_digit_prefix_is_written_with_a_colon(recorder: Recorder) -> None:
    last = play(recorder, DIGITS)
    play(recorder, NEWER)
    conn = recorder.conn
    assert timetravel.resolve(conn, "12345678:") == FrameRef(DIGITS, last)
    assert timetravel.resolve(conn, "12345678:2") == FrameRef(DIGITS, 2)
    with pytest.raises(FrameError) as bare:
        timetravel.resolve(conn, "12345678")  # frame 12345678 of the latest session: none
    assert "not 12345678 (the session whose id starts with 12345678 is 12345678:)" in str(
        bare.value
    )
    recorder.close()
    shown = json.loads(cli(Path(recorder.root), "timeline", "12345678:", "--json").stdout)
    assert shown["session_id"] == DIGITS


def test_diff_of_two_frame_numbers_through_the_cli(recorder: Recorder) -> None:
    play(recorder, OLDER)
    play(recorder, NEWER)
    recorder.close()
    root = Path(recorder.root)
    done = json.loads(cli(root, "diff", "2", "3", "--json").stdout)
    assert (done["a"], done["b"]) == (f"{NEWER}:2", f"{NEWER}:3")
    assert "agents" in done["state"]
    frames = json.loads(cli(root, "timeline", "--json").stdout)
    assert frames["session_id"] == NEWER and [f["frame"] for f in frames["frames"]][1:3] == [2, 3]


def test_an_exact_id_wins_over_a_longer_id_it_prefixes(recorder: Recorder) -> None:
    play(recorder, "abc")
    play(recorder, "abcdef")
    conn = recorder.conn
    assert timetravel.resolve(conn, "abc:1") == FrameRef("abc", 1)
    assert timetravel.find_session(conn, "abc") == "abc"
    assert timetravel.resolve(conn, "abcdef:2") == FrameRef("abcdef", 2)
    assert timetravel.find_session(conn, "abcd") == "abcdef"  # a unique prefix still does


def test_a_real_ambiguity_still_says_so(recorder: Recorder) -> None:
    play(recorder, "abc")
    play(recorder, "abcdef")
    with pytest.raises(FrameError) as several:
        timetravel.resolve(recorder.conn, "ab:1")
    assert "'ab' matches several sessions (abc, abcdef)" in str(several.value)
    assert str(several.value).endswith(ADDRESS_SYNTAX)
    recorder.close()
    failed = cli(Path(recorder.root), "revert", "ab:1", "--dry-run", ok=False)
    assert failed.returncode == 1 and "matches several sessions" in failed.stderr
    assert ADDRESS_SYNTAX in flat(failed.stderr)


@pytest.mark.parametrize(
    "address",
    ["nosuch:1", "abc:99", "abc:x", "abc:--1", "abc:²", "abc@attempt:1", "abc@nope:1", "99"],
)
def test_every_addressing_error_ends_with_the_syntax(recorder: Recorder, address: str) -> None:
    play(recorder, "abc")
    with pytest.raises(FrameError) as failed:
        timetravel.resolve(recorder.conn, address)
    assert str(failed.value).endswith(ADDRESS_SYNTAX), str(failed.value)


def test_an_empty_project_says_so_with_the_syntax(recorder: Recorder) -> None:
    with pytest.raises(FrameError) as failed:
        timetravel.find_session(recorder.conn, "")
    assert "no frames recorded yet" in str(failed.value)
    assert str(failed.value).endswith(ADDRESS_SYNTAX)


@pytest.mark.parametrize("command", ["timeline", "diff", "fork", "replay", "revert"])
def test_each_command_that_takes_a_frame_shows_the_syntax(command: str) -> None:
    shown = CliRunner().invoke(click_cli, [command, "--help"])
    assert shown.exit_code == 0, shown.output
    assert ADDRESS_SYNTAX in flat(shown.output)


@pytest.mark.parametrize(
    "session_id", ["../../etc/x", "a/../../b", "..", "/", "\n", "x" * 300, "é/é", ""]
)
def test_the_default_fork_folder_stays_beside_the_project(tmp_path: Path, session_id: str) -> None:
    root = tmp_path / "parent" / "project"
    root.mkdir(parents=True)
    made = fork.default_path(str(root), FrameRef(session_id, 3))
    assert os.path.dirname(made) == str(root.parent)
    name = os.path.basename(made)
    assert re.fullmatch(r"project-fork-[A-Za-z0-9_-]{1,8}-3", name), name
    os.mkdir(made)  # taken: the next one is numbered, and still beside the project
    again = fork.default_path(str(root) + "/", FrameRef(session_id, 3), "replay")
    assert os.path.dirname(again) == str(root.parent)
    assert fork.default_path(str(root), FrameRef(session_id, 3)) == made + "-2"


def test_a_fork_of_a_hostile_session_id_lands_beside_the_project(project: Path) -> None:
    """Through the real hooks, capture process and CLI: the session id is the payload's."""
    hostile = "x/../../up"  # cut at 8 as it was: `x/../../`, two levels up
    (project / "a.txt").write_text("one\n")
    started = fixture("SessionStart.startup", project) | {"session_id": hostile}
    assert run_hook("SessionStart", started, project).returncode == 0
    write = {"file_path": str(project / "a.txt"), "content": "two\n"}
    for name in ("PreToolUse.Write", "PostToolUse.Write"):
        payload = fixture(name, project) | {"session_id": hostile, "tool_use_id": "w1"}
        assert (
            run_hook(name.split(".")[0], payload | {"tool_input": write}, project).returncode == 0
        )
        (project / "a.txt").write_text("two\n")
    pending = "SELECT 1 FROM vcs_tags WHERE status = 'pending'"
    assert wait_for(lambda: not query(project, pending), 30)
    made = json.loads(cli(project, "fork", "1", "--json").stdout)
    assert made["from"] == f"{hostile}:1"
    assert os.path.dirname(made["path"]) == str(project.parent)
    assert os.path.basename(made["path"]) == "project-fork-x_up-1"
    assert (Path(made["path"]) / "a.txt").read_text() == "one\n"
    assert not (project.parent.parent / "-1").exists()
