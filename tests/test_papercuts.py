"""Issue 32's paper cuts, each as a user meets it: the installed CLI, piped, and --json."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from conftest import AGENTS, BUSY_SESSION, capture_lock, query, run_cli
from workbench import Workbench, git

from claude_session.core.figures import plural
from claude_session.core.readings import CLAUDE_EXITED

S1, S2 = "agent-one-0001", "agent-two-0002"


def test_sessions_lists_the_sessions(finished: Path) -> None:
    done = run_cli(finished, "sessions", "--wide")
    assert done.returncode == 0, done.stderr
    assert BUSY_SESSION[:8] in done.stdout
    for column in ("session", "state", "started", "prompts", "compacts", "forks"):
        assert column in done.stdout
    rows = json.loads(run_cli(finished, "sessions", "--json").stdout)
    (row,) = rows
    assert row["session_id"] == BUSY_SESSION
    assert row["state"] == "ended"
    assert row["prompts"] == 1 and row["compactions"] == 1 and row["forks"] == 0
    assert {"started_at", "ended_at", "tool_calls", "cost_usd"} <= row.keys()
    streamed = json.loads(run_cli(finished, "sessions", "--all", "--json").stdout)
    assert [r["session_id"] for r in streamed] == [BUSY_SESSION]
    assert run_cli(finished, "sessions", "--limit", "1").returncode == 0


def test_agents_of_a_named_ended_session(finished: Path) -> None:
    done = run_cli(finished, "agents", "--session", BUSY_SESSION[:8])
    assert done.returncode == 0, done.stderr
    assert "none" not in done.stdout.split("\n")[0]
    rows = json.loads(run_cli(finished, "agents", "--session", BUSY_SESSION, "--json").stdout)
    assert set(AGENTS) <= {row["agent"] for row in rows}
    # without a session named, the ended session's agents stay hidden, as before
    assert json.loads(run_cli(finished, "agents", "--json").stdout) == []


@pytest.fixture
def bench(project: Path) -> Iterator[Workbench]:
    """A session with real snapshots: main and agent S1 change files, S2 only looks."""
    (project / "a.py").write_text("A0\n")
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-qm", "init")
    wb = Workbench(project)
    wb.start()
    wb.prompt("build it")
    wb.write("a.py", b"A1\n")
    wb.subagent(S1)
    wb.write("b.py", b"B1\n", S1)
    wb.subagent(S2)
    wb.bash("ls", lambda: None, S2)  # changes no file
    yield wb
    wb.close()


def test_revert_agent_says_undo_and_reverts_count_from_one(bench: Workbench) -> None:
    root = bench.root
    plan = run_cli(root, "revert", "--agent", S1)
    assert "undo the work of agent" in plan.stdout, plan.stdout + plan.stderr
    assert "revert to the work" not in plan.stdout
    done = run_cli(root, "revert", "--agent", S1, "--yes")
    assert done.returncode == 0, done.stderr
    assert "revert 1 recorded" in done.stdout
    assert not (root / "b.py").exists()
    undo = run_cli(root, "revert", "--undo")
    assert "undo of revert 1" in undo.stdout, undo.stdout + undo.stderr
    assert run_cli(root, "revert", "--undo", "--yes").returncode == 0
    assert (root / "b.py").read_text() == "B1\n"
    again = run_cli(root, "revert", "--agent", S1, "--yes")  # the undo was revert 2
    assert "revert 3 recorded" in again.stdout, again.stdout + again.stderr


def test_timeline_tree_offers_revert_agent_only_for_agents_that_changed_files(
    bench: Workbench,
) -> None:
    done = run_cli(bench.root, "timeline", "--tree")
    assert done.returncode == 0, done.stderr
    assert f"revert --agent {S1}" in done.stdout
    assert f"revert --agent {S2}" not in done.stdout
    assert "subagent general-purpose" in done.stdout  # S2 is still shown


def test_diff_takes_a_pending_snapshot(bench: Workbench) -> None:
    bench.eager = False  # the next snapshots wait, as right after a session
    bench.write("c.py", b"C1\n")
    last = str(bench.last_frame())
    assert query(bench.root, "SELECT count(*) FROM vcs_tags WHERE status = 'pending'")[0][0]
    done = run_cli(bench.root, "diff", "1", last, "--json")
    assert done.returncode == 0, done.stderr
    files = json.loads(done.stdout)["files"]
    assert "error" not in files
    assert "c.py" in [item["path"] for item in files["stat"]]


def test_diff_fails_when_the_snapshot_does_not_come(bench: Workbench) -> None:
    bench.eager = False
    bench.write("c.py", b"C1\n")
    last = str(bench.last_frame())
    fd = capture_lock(bench.root)  # a capture stuck: the snapshot is never taken
    try:
        done = run_cli(bench.root, "diff", "1", last, "--json")
    finally:
        os.close(fd)
    assert done.returncode != 0
    assert done.stdout == ""
    assert "waiting for the snapshot" in done.stderr
    assert "still being taken" in done.stderr


def test_diff_prints_no_python_and_names_no_missing_session(finished: Path) -> None:
    done = run_cli(finished, "diff", "1", f"{BUSY_SESSION[:8]}:")  # its first and last
    assert done.returncode == 0, done.stderr
    assert "None" not in done.stdout
    assert "compactions: none -> 1" in done.stdout
    missing = run_cli(finished, "diff", "1", "99")
    assert missing.returncode != 0
    assert "not 99" in missing.stderr
    assert "99:" not in missing.stderr


def test_counts_are_singular_or_plural(finished: Path) -> None:
    done = run_cli(finished, "timeline", "--tree")
    assert done.returncode == 0, done.stderr
    assert "(1 open errors)" not in done.stdout
    assert "(1 open error)" in done.stdout
    assert plural(1, "open error") == "1 open error"
    assert plural(2, "open error") == "2 open errors"


def test_a_session_never_ended_is_interrupted_everywhere(finished: Path) -> None:
    conn = apsw.Connection(str(finished / ".claude-session.db"))
    conn.execute("UPDATE sessions SET end_reason = ?", (CLAUDE_EXITED,))
    conn.close()
    status = json.loads(run_cli(finished, "status", "--json").stdout)
    never = {row["session_id"] for row in status["sessions_never_ended"]}
    for row in status["sessions"]:
        assert row["status"] == ("interrupted" if row["session_id"] in never else "ended")
    (row,) = json.loads(run_cli(finished, "sessions", "--json").stdout)
    assert row["state"] == "interrupted"


def test_an_escalated_error_is_not_resolved(busy: Path) -> None:
    rows = json.loads(run_cli(busy, "errors", "--json").stdout)
    escalated = [r for r in rows if int(r["step"].split()[0]) >= 3]  # research, the user
    assert escalated
    assert all(r["resolved_at"] is None and r["state"] == "open" for r in escalated)


def test_an_escalated_error_is_abandoned_when_its_session_ends(finished: Path) -> None:
    """An escalation is no fix: once its session ended it is abandoned like the rest, so no
    status line counts it as open for good."""
    rows = json.loads(run_cli(finished, "errors", "--json").stdout)
    assert rows and all(r["state"] in ("abandoned", "fixed") for r in rows), rows
    line = json.loads(run_cli(finished, "statusline", "--json").stdout)
    assert line["open_errors"] == 0, line


def test_memory_add_defaults_to_a_fact_and_show_says_trusted_in_words(project: Path) -> None:
    added = run_cli(project, "memory", "add", "the tests run with ./test.sh", "--json")
    assert added.returncode == 0, added.stderr
    number = str(json.loads(added.stdout)["id"])
    shown = run_cli(project, "memory", "show", number)
    assert shown.returncode == 0, shown.stderr
    assert "fact" in shown.stdout
    trusted = [line for line in shown.stdout.splitlines() if "trusted" in line]
    assert trusted and trusted[0].split()[-1] == "yes", shown.stdout
    assert json.loads(run_cli(project, "memory", "show", number, "--json").stdout)["trusted"] == 1
    assert "default: fact" in run_cli(project, "memory", "add", "--help").stdout
