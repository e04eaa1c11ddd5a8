"""Trust by provenance, not by path or inode (SECURITY.md promise 4): what a repository puts at
our paths (a database swapped in on the same inode, a branch that tracks the database, a
committed spool, a planted fork record) never reaches the model, is never ingested and never
removes anything; a WAL written for another file is set aside, not replayed onto the new one.
Through the hook entry points and the installed command, as Claude Code and a user run them."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import apsw
from conftest import PYTHON, count, fixture, git, query, run_hook
from hostile_repo import INSTRUCTION, MARK, their_database
from test_trust import a_project_with_open_work, injected

from claude_session.core import db, provenance, spool, trust

CLI = str(Path(PYTHON).parent / "claude-session")


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "--project", str(project), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ | {"COLUMNS": "1000"},
    )


def folded(path: Path) -> None:
    """The WAL folded into the main file and gone, as when the last connection closes."""
    conn = apsw.Connection(str(path))
    conn.setbusytimeout(10000)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    conn.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def attackers_database(where: Path) -> Path:
    """A database made by another install (its own key and state): a forged failure, memories
    and a failed approach whose text tells the model to run a command (tests/hostile_repo.py),
    its WAL folded in and gone."""
    where.mkdir(parents=True, exist_ok=True)
    path = their_database(where, where, with_fork=False)
    folded(path)
    return path


def test_the_key_is_private_made_once_and_never_in_the_project(
    project: Path, isolated_state: Path
) -> None:
    a_project_with_open_work(project)
    key = isolated_state / provenance.KEY_NAME
    info = key.lstat()
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
    assert len(key.read_bytes()) == provenance.KEY_BYTES
    first = key.read_bytes()
    a_project_with_open_work(project)
    assert key.read_bytes() == first
    assert not [p for p in project.rglob("*") if p.read_bytes() == first if p.is_file()]
    key.chmod(0o644)  # a key others can read is not a secret: nothing is vouched for with it
    assert trust.database_problem(str(project / ".claude-session.db"))


def test_a_database_swapped_in_on_the_same_inode_is_not_trusted(
    project: Path, tmp_path: Path
) -> None:
    """The old rule trusted path and inode; a repository controls both. Here the file keeps
    its inode and takes another database's bytes."""
    a_project_with_open_work(project)
    ours = project / ".claude-session.db"
    folded(ours)
    assert injected(project, "startup")
    inode = ours.stat().st_ino
    theirs = attackers_database(tmp_path / "attacker")
    with open(ours, "r+b") as f:
        f.write(theirs.read_bytes())
        f.truncate()
    assert ours.stat().st_ino == inode
    assert trust.database_problem(str(ours))
    for source in ("startup", "compact", "resume"):
        said = injected(project, source)
        assert said is None or MARK not in said
    status = json.loads(cli(project, "status", "--json").stdout)
    assert "not created by claude-session for this user" in status["trust"]["database"]


def test_a_branch_that_tracks_the_database_is_not_trusted_after_checkout(
    project: Path, tmp_path: Path
) -> None:
    """`git checkout` of a branch that commits `.claude-session.db` replaces the user's ignored
    database; whatever inode the new file gets, its identity is not ours."""
    (project / "app.py").write_text("x = 1\n")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "app.py")
    git(project, "commit", "-qm", "init")
    git(project, "checkout", "-qb", "innocent")
    theirs = attackers_database(tmp_path / "attacker")
    shutil.copy(theirs, project / ".claude-session.db")
    git(project, "add", "-f", ".claude-session.db")
    git(project, "commit", "-qm", "add a database")
    git(project, "checkout", "-q", "main")
    a_project_with_open_work(project)  # the user's own, ignored database
    ours = project / ".claude-session.db"
    folded(ours)
    assert not trust.database_problem(str(ours))
    git(project, "checkout", "-qf", "innocent")
    assert trust.database_problem(str(ours))
    for source in ("startup", "compact"):
        said = injected(project, source)
        assert said is None or MARK not in said


def test_a_committed_spool_is_never_ingested_and_status_says_so(project: Path) -> None:
    a_project_with_open_work(project)
    folder = project / ".claude-session.db.spool"
    folder.mkdir()
    payload = fixture("PostToolUseFailure.Bash", project) | {
        "session_id": "forged-session",
        "tool_use_id": "toolu_forged",
        "error": INSTRUCTION,
    }
    envelope = {
        "v": 1,
        "delivery_id": "forged",
        "received_at": 2_000_000_000.0,  # a year ahead: "the previous session"
        "event_hint": "PostToolUseFailure",
        "project_root": str(project),
        "reason": "test",
        "payload": json.dumps(payload),
    }
    (folder / "1-1-forged.json").write_text(json.dumps(envelope))  # as a repository commits it
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)
    assert count(project, "events", "tool_use_id = 'toolu_forged'") == 0
    said = injected(project, "startup")
    assert said is None or MARK not in said
    status = json.loads(cli(project, "status", "--json").stdout)
    assert status["database"]["spool_set_aside"] == 1
    assert (
        "not written by this user's claude-session"
        in status["database"]["spool_last_set_aside_reason"]
    )
    # the same envelope written by this user's install is ingested: the check can pass
    (folder / "2-1-ours.json").write_bytes(spool.encode(envelope | {"delivery_id": "ours"}))
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)
    assert count(project, "events", "tool_use_id = 'toolu_forged'") == 1


def planted_fork_record(project: Path, path: Path) -> None:
    """A fork record in the user's own database, as a repository could plant one in its."""
    conn = db.connect(str(project / ".claude-session.db"))
    conn.execute(
        "INSERT INTO branches (kind, parent_session_id, parent_frame_no, parent_root, path,"
        " created_at) VALUES ('fork', 's', 1, ?, ?, 1.0)",
        (str(project), str(path)),
    )
    conn.close()


def test_a_planted_fork_record_removes_nothing(project: Path, tmp_path: Path) -> None:
    a_project_with_open_work(project)
    (project / "app.py").write_text("x = 1\n")
    git(project, "init", "-q")
    git(project, "add", "app.py")
    git(project, "commit", "-qm", "init")
    sibling = tmp_path / "precious"
    sibling.mkdir()
    (sibling / "work.txt").write_text("keep me\n")
    for target in (sibling, project / ".git"):
        planted_fork_record(project, target)
        listed = json.loads(cli(project, "fork", "--list", "--json").stdout)
        row = next(r for r in listed if r["path"] == str(target))
        assert row["ours"] is False and row["remove_with"] is None
        shown = " ".join(cli(project, "fork", "--list").stdout.split())
        assert "not written by this user's claude-session" in shown
        assert "fork --remove" not in shown
        done = cli(project, "fork", "--remove", str(target), "--yes", "--force")
        assert done.returncode != 0
        assert "did not write" in " ".join(done.stderr.split())
    assert (sibling / "work.txt").read_text() == "keep me\n"
    assert (project / ".git" / "HEAD").exists()


def test_a_database_replaced_under_its_wal_is_not_mixed_with_it(
    project: Path, tmp_path: Path, isolated_state: Path
) -> None:
    """A process of ours holds the database open with changes in the WAL; a checkout replaces
    the file. The next open sets the WAL aside instead of replaying it onto the new file."""
    a_project_with_open_work(project)
    path = project / ".claude-session.db"
    holder = db.connect(str(path))  # a long-lived process: the daemon, the MCP hook server
    holder.execute("PRAGMA wal_autocheckpoint = 0")
    with db.Immediate(holder):
        holder.execute("INSERT INTO project_state (key, value, updated_at) VALUES ('ours', 'x', 1)")
    assert Path(f"{path}-wal").stat().st_size > 0
    theirs = attackers_database(tmp_path / "attacker")
    replacement = project / ".replacement"
    shutil.copy(theirs, replacement)
    os.replace(replacement, path)  # what git does: a new file renamed into place
    conn = db.connect(str(path))
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert conn.execute("SELECT count(*) FROM project_state WHERE key = 'ours'").fetchall() == [
        (0,)
    ]
    assert query(project, "SELECT count(*) FROM error_log") == [(1,)]  # theirs, intact
    aside = sorted(p.name for p in project.glob(".claude-session.db.set-aside-*"))
    assert len(aside) == 2 and aside[0].endswith("-shm") and aside[1].endswith("-wal")
    assert db.set_aside_notes(os.path.realpath(project))
    conn.close()
    holder.close()
    status = json.loads(cli(project, "status", "--json").stdout)
    assert any("WAL was set aside" in p for p in status["now"]["problems"])


def test_a_long_lived_process_letting_go_of_a_replaced_file_keeps_the_new_ones_wal(
    project: Path, tmp_path: Path
) -> None:
    """The daemon's or MCP hook server's connection to the file a checkout replaced is closed at
    its next event; SQLite's last close would delete the -wal by name: the new file's."""
    from claude_session.runtime.connections import Connections

    a_project_with_open_work(project)
    path = project / ".claude-session.db"
    pool = Connections(os.path.realpath(project))
    conn, identity = pool.take(5000)
    pool.give_back(conn, identity)
    theirs = attackers_database(tmp_path / "attacker")
    replacement = project / ".replacement"
    shutil.copy(theirs, replacement)
    os.replace(replacement, path)
    newer = db.connect(str(path))  # a hook of the new file, its change still in the WAL
    newer.execute("PRAGMA wal_autocheckpoint = 0")
    with db.Immediate(newer):
        newer.execute("INSERT INTO project_state (key, value, updated_at) VALUES ('new', 'x', 1)")
    again, _ = pool.take(5000)  # the replaced file's connection goes, a new one comes
    assert again.execute("SELECT count(*) FROM project_state WHERE key = 'new'").fetchall() == [
        (1,)
    ]
    pool.give_back(again, _)
    pool.close()
    newer.close()
    assert query(project, "SELECT count(*) FROM project_state WHERE key = 'new'") == [(1,)]


def test_trust_shows_what_it_would_adopt_and_needs_a_yes_off_a_terminal(
    project: Path, tmp_path: Path
) -> None:
    theirs = attackers_database(tmp_path / "attacker")
    shutil.copy(theirs, project / ".claude-session.db")
    asked = cli(project, "trust")
    assert asked.returncode == 1
    shown = " ".join(asked.stdout.split())
    assert "not trusted now" in shown and "1 open errors" in shown and "1 sessions" in shown
    assert "pass --yes" in asked.stderr
    assert trust.database_problem(str(project / ".claude-session.db"))  # nothing adopted
    said = json.loads(cli(project, "trust", "--json").stdout)
    assert said["trusted"] == [] and said["would_adopt"]["database"]["holds"]["open errors"] == 1
    assert cli(project, "trust", "--yes").returncode == 0
    assert trust.database_problem(str(project / ".claude-session.db")) is None


def test_revert_and_prune_act_only_on_the_word_of_our_own_database(project: Path) -> None:
    """The code that deletes checks the database's provenance itself: a database that is not
    trusted names no frame to revert to and no snapshot to drop."""
    from test_first_hour import SESSION, recorded_write

    frame = recorded_write(project, SESSION)
    assert cli(project, "trust", "--revoke").returncode == 0
    before = (project / "app.py").read_text()
    refused = cli(project, "revert", f"{SESSION}:{frame - 1}", "--yes", "--force")
    assert refused.returncode != 0 and "not trusted" in " ".join(refused.stderr.split())
    assert (project / "app.py").read_text() == before
    refused = cli(project, "prune", "--older-than", "0", "--yes")
    assert refused.returncode == 1 and "not pruned" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert cli(project, "trust", "--yes").returncode == 0  # the user's word: both work again
    done = cli(project, "revert", f"{SESSION}:{frame - 1}", "--yes", "--force")
    assert done.returncode == 0, done.stderr
    assert not (project / "app.py").exists()  # back to before the Write made it


def test_a_fork_record_without_a_mac_says_how_to_remove_it_by_hand(project: Path) -> None:
    """An earlier version's fork (its record has no MAC) is not removed on the record's word;
    the refusal says how the user removes their own fork."""
    a_project_with_open_work(project)
    folder = project.parent / "old-fork"
    folder.mkdir()
    planted_fork_record(project, folder)
    done = cli(project, "fork", "--remove", str(folder), "--yes")
    said = " ".join(done.stderr.split())
    assert done.returncode != 0 and "no MAC" in said and "git worktree remove" in said
    assert folder.is_dir()
