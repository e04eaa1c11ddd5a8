"""A poisoned spool file (wrong types, huge, truncated, not UTF-8, a directory, a link, another
project's) never stops the others: each is set aside with its reason, the good ones are
ingested, every CLI command still works, and `status` and `doctor` show what was set aside."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import PYTHON, count, daemons_of, fixture, run_hook, wait_for

from claude_session.core import spool as spool_files
from claude_session.services.background import daemon_control

CLI = str(Path(PYTHON).parent / "claude-session")


def envelope(project: Path, n: int, **changes: object) -> dict[str, object]:
    payload = fixture("PostToolUse.Bash", project) | {"tool_use_id": f"toolu_spooled_{n}"}
    value: dict[str, object] = {
        "v": 1,
        "delivery_id": f"d{n}",
        "received_at": 1_800_000_000.0 + n,
        "event_hint": "PostToolUse",
        "project_root": str(project),
        "reason": "test",
        "payload_bytes": 100,
        "payload": json.dumps(payload),
    }
    value.update(changes)
    return value


def ours(value: dict[str, object]) -> bytes:
    """An envelope as this user's install writes it: under its MAC (core/spool.py)."""
    return spool_files.encode(value)


def poisoned_spool(project: Path, victim: Path) -> Path:
    spool = project / ".claude-session.db.spool"
    spool.mkdir()
    (spool / "01-good.json").write_bytes(ours(envelope(project, 1)))
    (spool / "02-wrong-types.json").write_bytes(
        ours(envelope(project, 2, payload_bytes="many", received_at=[1]))
    )
    (spool / "03-truncated.json").write_bytes(ours(envelope(project, 3))[:150])
    (spool / "04-not-utf8.json").write_bytes(b'{"payload": "\xff\xfe"}')
    (spool / "05-huge.json").write_bytes(b'{"payload": "' + b"x" * (9 * 1024 * 1024) + b'"}')
    (spool / "06-a-directory.json").mkdir()
    os.symlink(victim, spool / "07-a-link.json")
    forged = envelope(project, 8, project_root="/somewhere/else")
    (spool / "08-forged-project.json").write_bytes(ours(forged))
    (spool / "09-not-an-envelope.json").write_bytes(spool_files.encode([1, 2, 3]))  # type: ignore[arg-type]
    (spool / "10-payload-not-an-object.json").write_bytes(ours(envelope(project, 10, payload="[]")))
    (spool / "11-good.json").write_bytes(ours(envelope(project, 11)))
    # as a repository commits one: a well-formed envelope without our MAC, and one under a
    # MAC made with another key
    (spool / "12-untagged.json").write_text(json.dumps(envelope(project, 12)))
    other_key = b"0" * 64 + b"\n" + json.dumps(envelope(project, 13)).encode()
    (spool / "13-another-key.json").write_bytes(other_key)
    return spool


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.json"
    path.write_bytes(ours(envelope(tmp_path, 99)))
    return path


def test_poisoned_files_are_set_aside_and_the_rest_ingested(project: Path, victim: Path) -> None:
    spool = poisoned_spool(project, victim)
    before = victim.read_text()
    done = subprocess.run(
        [CLI, "--project", str(project), "ingest"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert count(project, "events", "tool_use_id LIKE 'toolu_spooled_%'") == 2  # 1 and 11
    rejected = spool / "rejected"
    set_aside = sorted(p.name for p in rejected.glob("*.json"))
    assert len(set_aside) == 11, set_aside
    reasons = {
        p.name: (rejected / (p.name + ".reason")).read_text() for p in rejected.glob("*.json")
    }
    assert "is not a number" in reasons["02-wrong-types.json"]
    assert "larger than any envelope" in reasons["05-huge.json"]
    assert "not a regular file" in reasons["06-a-directory.json"]
    assert "another project" in reasons["08-forged-project.json"]
    assert "not written by this user's claude-session" in reasons["12-untagged.json"]
    assert "not written by this user's claude-session" in reasons["13-another-key.json"]
    assert victim.read_text() == before  # the link's target is untouched
    for command in (["status"], ["events"], ["agents"], ["errors"], ["claims"]):
        shown = subprocess.run(
            [CLI, "--project", str(project), *command], capture_output=True, text=True
        )
        assert shown.returncode == 0 and "Traceback" not in shown.stderr
    status = json.loads(
        subprocess.run(
            [CLI, "--project", str(project), "status", "--json"], capture_output=True, text=True
        ).stdout
    )
    assert status["database"]["spool_set_aside"] == 11
    assert status["database"]["spool_last_set_aside_reason"]
    doctor = json.loads(
        subprocess.run(
            [CLI, "--project", str(project), "doctor", "--json"], capture_output=True, text=True
        ).stdout
    )
    row = next(r for r in doctor if r["check"] == "spool set aside")
    assert not row["ok"] and "11 spool files" in row["detail"]


def test_a_spool_folder_that_is_a_link_is_never_read(project: Path, tmp_path: Path) -> None:
    """A link planted at the spool folder would get forged events ingested: never followed."""
    elsewhere = tmp_path / "forged-spool"
    elsewhere.mkdir()
    (elsewhere / "01.json").write_bytes(ours(envelope(project, 1)))
    os.symlink(elsewhere, project / ".claude-session.db.spool")
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)
    assert count(project, "events", "tool_use_id LIKE 'toolu_spooled_%'") == 0
    assert (elsewhere / "01.json").exists()


def test_the_running_daemon_ingests_a_spool_file_as_it_appears(
    project: Path, reap_daemons: None
) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    subprocess.run([CLI, "--project", str(project), "daemon", "start"], check=True)
    assert daemon_control.is_running(str(project)) and len(daemons_of(project)) == 1
    status = Path(daemon_control.status_path(str(project)))
    assert wait_for(lambda: status.exists() and json.loads(status.read_text())["sweeps"] >= 1)
    time.sleep(1.5)  # past the first pass and the watcher's start: only the watch can see it
    spool = project / ".claude-session.db.spool"
    spool.mkdir(exist_ok=True)
    (spool / ".01.json.tmp").write_bytes(ours(envelope(project, 1)))
    os.rename(spool / ".01.json.tmp", spool / "01.json")  # as the hooks write it
    # watched without touching the database (a read would change -shm and wake it anyway)
    assert wait_for(lambda: not (spool / "01.json").exists(), seconds=10)
    assert count(project, "events", "tool_use_id = 'toolu_spooled_1'") == 1
