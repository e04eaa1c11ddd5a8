"""`revert --agent`: undo only the files one agent changed, leaving the other agents' and the
user's later work in place; a file both touched is a conflict, left alone unless --force;
and `--undo` brings it all back, as for any revert."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PYTHON, hook_env
from workbench import Workbench, git, tree

from claude_session.core import db
from claude_session.services.timetravel import revert

CLI = str(Path(PYTHON).parent / "claude-session")
S1, S2 = "agent-one-0001", "agent-two-0002"


@pytest.fixture
def bench(project: Path) -> Iterator[Workbench]:
    (project / "a.py").write_text("A0\n")
    (project / "d.txt").write_text("D0\n")
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-qm", "init")
    wb = Workbench(project)
    wb.start()
    wb.prompt("build it with two helpers")
    wb.write("a.py", b"A1\n")  # main
    wb.subagent(S1)
    wb.write("b.py", b"B1\n", S1)
    wb.write("shared.py", b"S1\n", S1)
    wb.subagent(S2)
    wb.write("c.py", b"C1\n", S2)
    wb.write("shared.py", b"S2\n", S2)  # both touched it: a conflict for either
    wb.write("a.py", b"A2\n")  # main again
    wb.bash("sed -i s/D0/D1/ d.txt", lambda: (project / "d.txt").write_text("D1\n"), S1)
    yield wb
    wb.close()


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "--project", str(project), *args],
        capture_output=True,
        text=True,
        env=hook_env(project),
    )


def test_only_that_agents_files_go_back_and_conflicts_are_left(bench: Workbench) -> None:
    root = bench.root
    todo = revert.plan_agent(bench.rec.conn, str(root), S1[:9])
    assert todo.agent == S1
    assert [(c.action, c.path, c.conflict) for c in todo.changes] == [
        ("delete", "b.py", False),
        ("restore", "d.txt", False),
        ("delete", "shared.py", True),
    ]
    before = tree(root)
    revert.execute(bench.rec.conn, str(root), todo)
    assert not (root / "b.py").exists() and (root / "d.txt").read_text() == "D0\n"
    assert (root / "shared.py").read_text() == "S2\n"  # the conflict: left
    assert (root / "c.py").read_text() == "C1\n" and (root / "a.py").read_text() == "A2\n"
    bench.undo()
    assert tree(root) == before


def test_force_takes_the_conflicts_too_and_undo_brings_them_back(bench: Workbench) -> None:
    root = bench.root
    before = tree(root)
    todo = revert.plan_agent(bench.rec.conn, str(root), S1)
    revert.execute(bench.rec.conn, str(root), todo, force=True)
    assert not (root / "shared.py").exists() and not (root / "b.py").exists()
    assert (root / "c.py").read_text() == "C1\n"
    bench.undo()
    assert tree(root) == before


def test_the_users_own_later_edit_to_an_agents_file_is_a_conflict(bench: Workbench) -> None:
    root = bench.root
    (root / "b.py").write_text("the user's fix\n")  # not yet captured
    todo = revert.plan_agent(bench.rec.conn, str(root), S1)
    assert {c.path for c in todo.changes if c.conflict} == {"b.py", "shared.py"}
    revert.execute(bench.rec.conn, str(root), todo)
    assert (root / "b.py").read_text() == "the user's fix\n"
    assert (root / "d.txt").read_text() == "D0\n"


def test_main_and_since_a_frame(bench: Workbench) -> None:
    root = bench.root
    todo = revert.plan_agent(bench.rec.conn, str(root), "main")
    assert [(c.action, c.path) for c in todo.changes] == [("restore", "a.py")]
    revert.execute(bench.rec.conn, str(root), todo)
    assert (root / "a.py").read_text() == "A0\n" and (root / "b.py").exists()
    # Since a later frame: only main's second write of a.py is undone (back to A1).
    bench.undo()
    later = next(n for n, kind, _ in bench.frames() if kind == "subagent_start")
    todo = revert.plan_agent(bench.rec.conn, str(root), "main", f"{bench.session}:{later}")
    assert todo.agent == bench.session and todo.target.startswith("the work of agent main since")
    revert.execute(bench.rec.conn, str(root), todo)
    assert (root / "a.py").read_text() == "A1\n"


def test_through_the_cli_with_the_plan_and_the_timeline_offering_it(bench: Workbench) -> None:
    root = bench.root
    bench.rec.conn.close()
    plan = cli(root, "revert", "--agent", S1, "--dry-run", "--json")
    assert plan.returncode == 0, plan.stderr
    shown = json.loads(plan.stdout)
    assert shown["conflicts"] == ["shared.py"] and shown["agent"] == S1
    text = cli(root, "revert", "--agent", S1, "--dry-run").stdout
    assert "conflict" in text and "b.py" in text
    done = cli(root, "revert", "--agent", S1, "--yes")
    assert done.returncode == 0, done.stderr
    assert not (root / "b.py").exists() and (root / "shared.py").read_text() == "S2\n"
    tree_text = cli(root, "timeline", "--tree").stdout
    assert f"revert --agent {S1}" in tree_text
    missing = cli(root, "revert", "--agent", "nobody", "--dry-run")
    assert missing.returncode == 1 and "no agent" in missing.stderr
    assert cli(root, "revert", "--undo", "--yes").returncode == 0
    assert (root / "b.py").read_text() == "B1\n"
    bench.rec.conn = db.connect(str(root / ".claude-session.db"))  # for the fixture's close
