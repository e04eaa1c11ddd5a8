"""A project reached through a symbolic link (a linked code folder, macOS /tmp and /var) is the
project reached by its real path: real hook processes given the link record into the one
database, answer (claims, ladder) and meet agents that came by the real path; a link planted
at the database file itself is still refused."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    PYTHON,
    count,
    fixture,
    hook_env,
    log_file,
    query,
    run_hook,
    spooled,
    wait_for,
)

from claude_session.core import spool
from claude_session.services.background import daemon_control

SESSION = "560819af-56fc-4528-be0a-32a24d1aa819"
OTHER_SESSION = "11111111-2222-3333-4444-555555555555"
VICTIM_TEXT = b"precious data the user can write\n"


@pytest.fixture
def link(project: Path, tmp_path: Path) -> Path:
    """A symbolic link to the project, in another folder (as a linked code folder is)."""
    elsewhere = tmp_path / "links"
    elsewhere.mkdir()
    path = elsewhere / "linked-project"
    os.symlink(project, path)
    return path


def tool_event(
    spelled: Path, name: str, session: str, agent: str | None, tool_use_id: str, file: str
) -> dict[str, Any]:
    """A recorded Edit payload written through `spelled` (the link or the real path), as the
    Claude Code running there sends it: its cwd and file paths under that spelling."""
    payload = fixture(name, spelled)
    payload |= {"session_id": session, "tool_use_id": tool_use_id}
    payload.pop("agent_id", None)
    payload.pop("agent_type", None)
    if agent:
        payload |= {"agent_id": agent, "agent_type": "general-purpose"}
    payload["tool_input"]["file_path"] = str(spelled / file)
    return payload


def edit(
    spelled: Path,
    session: str,
    agent: str | None,
    tool_use_id: str,
    file: str = "shared.py",
    project_dir: Path | None = None,
) -> Any:
    """PreToolUse then PostToolUse of one Edit, hooks run with CLAUDE_PROJECT_DIR
    `project_dir` (default: `spelled`); returns the PreToolUse answer."""
    where = spelled if project_dir is None else project_dir
    pre = tool_event(spelled, "PreToolUse.Edit", session, agent, tool_use_id, file)
    answer = run_hook("PreToolUse", pre, where).json()
    post = tool_event(spelled, "PostToolUse.Edit", session, agent, tool_use_id, file)
    run_hook("PostToolUse", post, where)
    return answer


def test_a_linked_project_dir_records_into_the_real_projects_database(
    project: Path, link: Path
) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", link), link)
    assert edit(link, SESSION, None, "toolu_link1") is None  # nobody else holds the file
    failures = []
    for n in range(3):  # the ladder answers through the link as through the real path
        payload = fixture("PostToolUseFailure.Bash", link) | {"tool_use_id": f"fail-{n}"}
        failures.append(run_hook("PostToolUseFailure", payload, link).json())
    assert failures[2] is not None
    assert failures[2]["hookSpecificOutput"]["additionalContext"]
    names = [row[0] for row in query(project, "SELECT hook_event_name FROM events ORDER BY id")]
    assert names == ["SessionStart", "PreToolUse", "PostToolUse", *["PostToolUseFailure"] * 3]
    assert count(project, "hook_events", "outcome = 'stored'") == 6
    claims = query(project, "SELECT file_path FROM file_claims WHERE released_at IS NULL")
    assert claims == [("shared.py",)]  # relative to the project, not the link's absolute path
    assert spooled(project) == []
    assert not log_file(project).exists() or "ERROR" not in log_file(project).read_text()


def test_a_linked_payload_cwd_without_project_dir_records_into_the_real_database(
    project: Path, link: Path
) -> None:
    for name, fixture_name in (
        ("SessionStart", "SessionStart.startup"),
        ("PreToolUse", "PreToolUse.Edit"),
        ("PostToolUse", "PostToolUse.Edit"),
    ):
        payload = fixture(fixture_name, link)
        assert payload["cwd"] == str(link)
        done = run_hook(name, payload, None)  # no CLAUDE_PROJECT_DIR: the payload's cwd
        assert done.stderr == ""
    assert count(project, "events") == 3
    assert query(project, "SELECT DISTINCT file_path FROM file_claims") == [("hello.py",)]
    assert spooled(project) == []


def test_agents_through_the_link_and_the_real_path_meet_in_one_database(
    project: Path, link: Path
) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", link), link)
    other_start = fixture("SessionStart.startup", project) | {"session_id": OTHER_SESSION}
    run_hook("SessionStart", other_start, project)
    assert edit(link, SESSION, None, "toolu_a1") is None
    answer = edit(project, OTHER_SESSION, None, "toolu_b1")
    assert answer is not None
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert "shared.py is being changed by another live agent" in text
    claims = query(project, "SELECT session_id, file_path FROM file_claims ORDER BY id")
    assert claims == [(SESSION, "shared.py"), (OTHER_SESSION, "shared.py")]
    assert not (link / ".claude-session.db.spool").exists()
    assert sorted(p.name for p in project.glob(".claude-session.db*")) == [
        ".claude-session.db",
        ".claude-session.db-shm",
        ".claude-session.db-wal",
    ]


def test_file_paths_through_the_link_are_one_claim_with_the_real_project_dir(
    project: Path, link: Path
) -> None:
    """CLAUDE_PROJECT_DIR by the real path, the agent's file paths through the link (its shell
    went there): still the project's files, and the holder is named to the other agent."""
    assert edit(link, SESSION, None, "toolu_c1", project_dir=project) is None
    assert query(project, "SELECT file_path FROM file_claims") == [("shared.py",)]
    answer = edit(project, OTHER_SESSION, None, "toolu_c2")
    assert answer is not None
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert "shared.py is being changed by another live agent" in text


def test_the_status_line_reads_a_linked_project_as_its_real_path(project: Path, link: Path) -> None:
    """The status-line command, given the project through the link (its workspace folders),
    opens the database by its real path: the same line as given the real path."""
    from test_statusline import sample, show

    run_hook("SessionStart", fixture("SessionStart.startup", link), link)
    edit(link, SESSION, "a1", "toolu_s1")
    through_link = show(sample(link))
    assert through_link == show(sample(project))
    assert through_link.startswith("cs: ") and "?" not in through_link


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm", "-journal"])
def test_a_link_at_the_database_is_refused_through_a_linked_project_dir(
    project: Path, link: Path, tmp_path: Path, suffix: str
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM_TEXT)
    if suffix:  # the database exists; a link sits where SQLite would open a companion file
        run_hook("UserPromptSubmit", fixture("UserPromptSubmit", link), link)
        for extra in ("-wal", "-shm"):
            if os.path.lexists(project / f".claude-session.db{extra}"):
                os.unlink(project / f".claude-session.db{extra}")
    os.symlink(victim, project / f".claude-session.db{suffix}")
    run_hook("PostToolUse", fixture("PostToolUse.Bash", link), link)
    assert victim.read_bytes() == VICTIM_TEXT
    assert len(spooled(project)) == 1  # the event is kept, in the real project's spool
    assert "symbolic link" in log_file(project).read_text()


def test_a_dangling_link_at_the_database_is_not_created_through_a_linked_project_dir(
    project: Path, link: Path, tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere.db"
    os.symlink(target, project / ".claude-session.db")
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", link), link)
    assert not target.exists()
    assert len(spooled(project)) == 1


def test_events_spooled_under_the_links_name_are_ingested_not_set_aside(
    project: Path, link: Path
) -> None:
    """Events the hooks spooled while they could not open a linked project's database name
    the link: once the database opens they go in, they are not another project's."""
    payload = fixture("UserPromptSubmit", link)
    spool.write(
        str(project / ".claude-session.db.spool"),
        {
            "v": 1,
            "delivery_id": "0123456789abcdef01234567",
            "received_at": time.time() - 60,
            "event_hint": "UserPromptSubmit",
            "project_root": str(link),
            "reason": "DatabaseError: CantOpenError: unable to open database file",
            "payload_bytes": len(json.dumps(payload)),
            "payload": json.dumps(payload),
        },
    )
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    assert count(project, "events", "hook_event_name = 'UserPromptSubmit' AND via = 'spool'") == 1
    assert spooled(project) == []
    assert not (project / ".claude-session.db.spool" / spool.REJECTED).exists()


def test_hooks_through_the_link_are_served_by_the_daemon(project: Path, link: Path) -> None:
    """The daemon started through the link (as `daemon start` from a linked folder
    does) serves hooks given the link and hooks given the real path: one project."""
    from test_relay import status

    daemon = subprocess.Popen(
        [PYTHON, "-P", "-m", "claude_session.daemon", "--project", str(link)],
        env=hook_env(link),  # the hooks' environment, or it declines them
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_for(lambda: status(project).get("relay_socket")), "relay did not start"
        assert edit(link, SESSION, None, "toolu_r1") is None
        answer = edit(project, OTHER_SESSION, None, "toolu_r2")
        assert answer is not None
        assert wait_for(lambda: status(project).get("relay_served") == 4)
        assert status(project).get("relay_declined", 0) == 0
        assert count(project, "events", "hook_event_name = 'PostToolUse'") == 2
        assert spooled(project) == []
    finally:
        daemon_control.stop(str(project), timeout=5)
        daemon.wait(timeout=10)
