"""`prune` says what it would delete and asks first: on a terminal it asks, elsewhere it needs
--yes (without it: exit 1, nothing deleted); --dry-run only shows. It reports the space freed:
the database with its WAL before and after, and --vacuum gives it back to the disk."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import apsw
from conftest import PYTHON, answer_on_terminal, count, stream
from inproc import Recorder

CLI = str(Path(PYTHON).parent / "claude-session")


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "--project", str(project), *args], capture_output=True, text=True, timeout=120
    )


def history(project: Path, sessions: int = 4) -> None:
    recorder = Recorder(project)
    for n in range(sessions):
        for payload in stream(project):
            recorder.send(payload | {"session_id": f"{payload['session_id']}-{n}"})
            recorder.advance(1)
    recorder.close()
    conn = apsw.Connection(str(project / ".claude-session.db"))
    conn.setbusytimeout(30_000)  # a capture process the PreToolUse hooks started may be writing
    conn.execute("UPDATE sessions SET ended_at = ended_at - 90 * 86400 WHERE status = 'ended'")
    conn.close()


def test_without_yes_off_a_terminal_nothing_is_deleted(project: Path) -> None:
    history(project)
    events = count(project, "events")
    done = cli(project, "prune", "--older-than", "0")
    assert done.returncode == 1
    assert "nothing deleted" in done.stderr and "--yes" in done.stderr
    assert "would remove" in done.stdout and f"{events} events rows" in done.stdout
    assert count(project, "events") == events
    as_json = cli(project, "prune", "--older-than", "0", "--json")
    assert as_json.returncode == 1 and count(project, "events") == events
    assert json.loads(as_json.stdout)["would_remove"]["rows"]["events"] == events


def test_dry_run_counts_exactly_what_yes_then_removes(project: Path) -> None:
    history(project)
    shown = cli(project, "prune", "--older-than", "30", "--dry-run", "--json")
    assert shown.returncode == 0
    plan = json.loads(shown.stdout)["would_remove"]
    assert plan["sessions"] == count(project, "sessions") > 0
    assert plan["rows"]["events"] == count(project, "events")
    assert count(project, "events") == plan["rows"]["events"]  # nothing went
    done = cli(project, "prune", "--older-than", "30", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    removed = json.loads(done.stdout)["rows_removed"]
    for table in ("events", "hook_events", "context_snapshots", "memories", "state_history"):
        assert removed[table] == plan["rows"][table], table
    assert count(project, "events") == 0


def test_vacuum_gives_the_space_back_and_says_how_much(project: Path) -> None:
    history(project, 8)
    done = cli(project, "prune", "--older-than", "30", "--yes", "--vacuum", "--json")
    report = json.loads(done.stdout)
    assert report["database_bytes_after"] < report["database_bytes_before"]
    path = project / ".claude-session.db"
    on_disk = path.stat().st_size + (
        Path(f"{path}-wal").stat().st_size if Path(f"{path}-wal").exists() else 0
    )
    assert report["database_bytes_after"] == on_disk and report["free_inside_bytes"] == 0
    text = cli(project, "prune", "--older-than", "30", "--yes").stdout
    assert "MB given back" in text and "--vacuum gives it back" in text


def on_terminal(project: Path, answer: bytes) -> tuple[int, str]:
    """`prune --older-than 0` with a terminal for stdin and stdout, answering `answer`."""
    argv = [CLI, "--project", str(project), "prune", "--older-than", "0"]
    return answer_on_terminal(argv, b"delete them?", answer)


def test_on_a_terminal_it_asks_and_no_keeps_everything(project: Path) -> None:
    history(project)
    events = count(project, "events")
    code, text = on_terminal(project, b"n")
    assert code == 0 and "delete them?" in text and "nothing deleted" in text
    assert count(project, "events") == events
    code, text = on_terminal(project, b"y")
    assert code == 0 and "rows removed" in text and "MB given back" in text
    assert count(project, "events") == 0


def test_status_counts_events_from_the_daemons_tally_and_prune_resets_it(project: Path) -> None:
    """`status` adds the rows past the daemon's tally to it instead of counting a million rows;
    a prune drops the tally, so the count stays exact through deletions."""
    from claude_session.services.background import sweeps

    history(project, sessions=2)

    def shown() -> int:
        done = cli(project, "status", "--json")
        assert done.returncode == 0, done.stderr
        return int(json.loads(done.stdout)["database"]["events"])

    total = count(project, "events")
    assert shown() == total  # no tally yet: every row counted
    worker = sweeps.Daemon(str(project))
    worker.pass_once()
    tally = apsw.Connection(str(project / ".claude-session.db"))
    assert tally.execute("SELECT n FROM tallies WHERE name = 'events'").fetchall() == [(total,)]
    # A tally that claims more than its rows hold shows through: `status` reads it.
    tally.execute("UPDATE tallies SET n = n + 1000 WHERE name = 'events'")
    assert shown() == total + 1000
    tally.execute("UPDATE tallies SET n = n - 1000 WHERE name = 'events'")
    history(project, sessions=1)  # new rows past the tally are added to it
    assert shown() == count(project, "events") > total
    worker.pass_once()
    assert tally.execute("SELECT n FROM tallies").fetchall() == [(count(project, "events"),)]
    assert cli(project, "prune", "--older-than", "30", "--yes").returncode == 0
    assert tally.execute("SELECT count(*) FROM tallies").fetchall() == [(0,)]
    assert shown() == count(project, "events") == 0
    worker.close()
    tally.close()
