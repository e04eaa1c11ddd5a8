"""Multi-agent coordination through the real hooks: registry life cycle, claims as leases,
conflict warnings (and the deny policy), close-out of sessions that are over."""

from __future__ import annotations

import json
import subprocess
import time
from itertools import count as counter
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, fixture, hook_argv, hook_env, query, run_hook, write_config

SESSION = "560819af-56fc-4528-be0a-32a24d1aa819"
_ids = counter(1)


def subagent_event(project: Path, name: str, agent: str | None, **changes: Any) -> dict[str, Any]:
    payload = fixture(name, project)
    payload["session_id"] = changes.pop("session_id", SESSION)
    payload["tool_use_id"] = f"toolu_c{next(_ids)}"
    payload.pop("agent_id", None)
    payload.pop("agent_type", None)
    if agent:
        payload |= {"agent_id": agent, "agent_type": "general-purpose"}
    payload.update(changes)
    return payload


def start_agent(project: Path, agent: str, task: str, session: str = SESSION) -> None:
    launch = subagent_event(project, "PreToolUse.Agent", None, session_id=session)
    launch["tool_input"] |= {"prompt": task, "description": f"work of {agent}"}
    run_hook("PreToolUse", launch, project)
    start = fixture("SubagentStart", project) | {"session_id": session, "agent_id": agent}
    run_hook("SubagentStart", start, project)


def edit(project: Path, agent: str | None, path: str = "shared.py", **kw: Any) -> Any:
    """PreToolUse then PostToolUse of an Edit by `agent`; returns the PreToolUse answer."""
    pre = subagent_event(project, "PreToolUse.Edit", agent, **kw)
    pre["tool_input"]["file_path"] = str(project / path)
    answer = run_hook("PreToolUse", pre, project).json()
    post = subagent_event(project, "PostToolUse.Edit", agent, **kw)
    post["tool_use_id"] = pre["tool_use_id"]
    post["tool_input"]["file_path"] = str(project / path)
    run_hook("PostToolUse", post, project)
    return answer


def set_config(project: Path, **values: Any) -> None:
    write_config(project, values)


def agent_status(project: Path, agent: str) -> tuple[str, str]:
    return query(
        project, "SELECT status, status_reason FROM agent_registry WHERE id = ?", (agent,)
    )[0]


def test_second_editor_is_warned_with_the_holder_and_its_task(project: Path) -> None:
    start_agent(project, "a1", "Refactor the parser in shared.py")
    start_agent(project, "a2", "Add logging everywhere")
    assert edit(project, "a1") is None  # first editor: nobody else holds the file
    answer = edit(project, "a2")
    assert answer is not None
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse" and "permissionDecision" not in output
    text = output["additionalContext"]
    assert "shared.py is being changed by another live agent" in text
    assert "subagent a1" in text and "Refactor the parser" in text
    assert "last changed this file 0 min ago (Edit, 1 edit)" in text
    # both now hold it: contested
    claims = query(project, "SELECT agent_id FROM file_claims WHERE released_at IS NULL")
    assert sorted(claims) == [("a1",), ("a2",)]


def test_deny_policy_refuses_with_the_reason(project: Path) -> None:
    set_config(project, conflict_policy="deny")
    start_agent(project, "a1", "Own shared.py")
    start_agent(project, "a2", "Also wants shared.py")
    edit(project, "a1")
    output = edit(project, "a2")["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    assert "subagent a1" in output["permissionDecisionReason"]


def test_no_warning_for_own_file_finished_agents_or_reads(project: Path) -> None:
    start_agent(project, "a1", "task one")
    start_agent(project, "a2", "task two")
    edit(project, "a1")
    assert edit(project, "a1") is None  # its own claim
    read = subagent_event(project, "PreToolUse.Read.subagent", "a2")
    read["tool_input"]["file_path"] = str(project / "shared.py")
    assert run_hook("PreToolUse", read, project).json() is None  # reading is not changing
    stop = fixture("SubagentStop", project) | {
        "session_id": SESSION,
        "agent_id": "a1",
        "agent_type": "general-purpose",
    }
    run_hook("SubagentStop", stop, project)
    assert query(project, "SELECT release_reason FROM file_claims WHERE agent_id = 'a1'") == [
        ("SubagentStop",)
    ]
    assert edit(project, "a2") is None  # a1 completed: its lease is gone


def test_main_thread_and_other_sessions_count_as_holders(project: Path) -> None:
    other = "11111111-2222-3333-4444-555555555555"
    run_hook(
        "UserPromptSubmit",
        fixture("UserPromptSubmit", project)
        | {"session_id": other, "prompt": "Rewrite shared.py in the other terminal"},
        project,
    )
    edit(project, None, session_id=other)  # the other session's main thread
    answer = edit(project, None)  # this session's main thread
    assert answer is not None
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert "the main thread of session 11111111" in text
    assert "Rewrite shared.py in the other terminal" in text


def test_claim_lease_expires_and_activity_renews_it(project: Path) -> None:
    set_config(project, claim_lease_minutes=0.01)  # 0.6 s
    start_agent(project, "a1", "holder")
    start_agent(project, "a2", "second")
    edit(project, "a1")
    time.sleep(1.0)
    pre = subagent_event(project, "PreToolUse.Edit", "a2")
    pre["tool_input"]["file_path"] = str(project / "shared.py")
    assert run_hook("PreToolUse", pre, project).json() is None  # lease expired
    # a1 does anything at all: its lease is renewed
    run_hook("PreToolUse", subagent_event(project, "PreToolUse.Read.subagent", "a1"), project)
    assert run_hook("PreToolUse", pre | {"tool_use_id": "toolu_again"}, project).json()


def test_parallel_edits_by_two_subagents_both_recorded(project: Path) -> None:
    start_agent(project, "a1", "one")
    start_agent(project, "a2", "two")
    procs = []
    for agent in ("a1", "a2") * 5:
        post = subagent_event(project, "PostToolUse.Edit", agent)
        proc = subprocess.Popen(
            hook_argv("PostToolUse"),
            stdin=subprocess.PIPE,
            env=hook_env(project),
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(post).encode())
        proc.stdin.close()
        procs.append(proc)
    assert all(p.wait(timeout=60) == 0 for p in procs)
    assert sorted(query(project, "SELECT agent_id, edits FROM file_claims")) == [
        ("a1", 5),
        ("a2", 5),
    ]
    done = subprocess.run(
        [
            str(Path(PYTHON).parent / "claude-session"),
            "--project",
            str(project),
            "claims",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    assert [(c["agent"], c["contested"]) for c in json.loads(done.stdout)] in (
        [("a1", 1), ("a2", 1)],
        [("a2", 1), ("a1", 1)],
    )


def test_transitions_are_recorded_and_late_events_do_not_resurrect(project: Path) -> None:
    start_agent(project, "a1", "work")
    stop = fixture("SubagentStop", project) | {
        "session_id": SESSION,
        "agent_id": "a1",
        "agent_type": "general-purpose",
    }
    run_hook("SubagentStop", stop, project)
    late = subagent_event(project, "PostToolUse.Read.subagent", "a1")
    run_hook("PostToolUse", late, project)
    assert agent_status(project, "a1") == ("completed", "SubagentStop")
    steps = query(
        project,
        "SELECT from_status, to_status, reason FROM agent_transitions"
        " WHERE agent_id = 'a1' ORDER BY id",
    )
    assert steps == [(None, "running", "SubagentStart"), ("running", "completed", "SubagentStop")]


def test_stale_agent_that_speaks_again_is_revived_visibly(project: Path) -> None:
    from claude_session.core import db, registry

    start_agent(project, "a1", "work")
    conn = db.connect(str(project / ".claude-session.db"))
    with db.Immediate(conn):
        registry.transition(
            conn, "a1", "aborted_stale", "silent for 12 min", time.time(), ("running",)
        )
    conn.close()
    run_hook("PostToolUse", subagent_event(project, "PostToolUse.Read.subagent", "a1"), project)
    status, reason = agent_status(project, "a1")
    assert (
        status == "running" and "spoke again (PostToolUse Read) after being marked stale" in reason
    )
    steps = query(
        project,
        "SELECT from_status, to_status FROM agent_transitions WHERE agent_id = 'a1' ORDER BY id",
    )
    assert steps[-2:] == [("running", "aborted_stale"), ("aborted_stale", "running")]


def test_failed_agent_call_marks_the_agent_failed(project: Path) -> None:
    start_agent(project, "a1", "doomed")
    launch_id = query(project, "SELECT tool_use_id FROM agent_launches WHERE agent_id = 'a1'")[0][0]
    failure = fixture("PostToolUseFailure.Bash", project) | {
        "session_id": SESSION,
        "tool_name": "Agent",
        "tool_use_id": launch_id,
        "tool_input": {"prompt": "doomed"},
        "error": "Agent crashed: out of memory",
    }
    run_hook("PostToolUseFailure", failure, project)
    status, reason = agent_status(project, "a1")
    assert status == "failed" and "out of memory" in reason


@pytest.mark.parametrize("how", ["ended"])
def test_session_start_closes_out_agents_of_sessions_that_are_over(project: Path, how: str) -> None:
    """Sessions that ended; a merely silent one is the daemon's to judge (tests/test_apply.py:
    clock skew must never end a live session)."""
    old, live, new = "old-session", "live-session", "new-session"
    set_config(project, session_idle_minutes=0.01)  # 0.6 s
    start_agent(project, "a-old", "left running by a Ctrl+C", session=old)
    if how == "ended":
        run_hook("SessionEnd", fixture("SessionEnd", project) | {"session_id": old}, project)
        # SessionEnd closes its agents itself; reopen to test the close-out at SessionStart
        from claude_session.core import db

        conn = db.connect(str(project / ".claude-session.db"))
        conn.execute("UPDATE agent_registry SET status = 'running' WHERE id = 'a-old'")
        conn.close()
    time.sleep(1.0)
    start_agent(project, "a-live", "still working", session=live)  # recent activity: live
    start = fixture("SessionStart.startup", project) | {"session_id": new}
    run_hook("SessionStart", start, project)
    status, reason = agent_status(project, "a-old")
    assert status == "aborted_stale"
    assert "ended without the agent stopping" in reason
    assert agent_status(project, "a-live")[0] == "running"  # another live session: untouched


def test_session_end_closes_out_its_running_subagents(project: Path) -> None:
    start_agent(project, "a1", "background work")
    edit(project, "a1")
    run_hook("SessionEnd", fixture("SessionEnd", project) | {"session_id": SESSION}, project)
    status, reason = agent_status(project, "a1")
    assert status == "aborted_stale" and reason == "session ended (other)"
    assert query(project, "SELECT released_at IS NOT NULL FROM file_claims") == [(1,)]


def test_invalid_config_falls_back_to_defaults_in_hooks(project: Path) -> None:
    (project / ".claude-session.json").write_text(
        '{"conflict_policy": "explode", "claim_lease_minutes": "soon"}'
    )
    start_agent(project, "a1", "one")
    start_agent(project, "a2", "two")
    edit(project, "a1")
    answer = edit(project, "a2")  # the default policy: warn
    assert "additionalContext" in answer["hookSpecificOutput"]
    done = subprocess.run(
        [str(Path(PYTHON).parent / "claude-session"), "--project", str(project), "config"],
        capture_output=True,
        text=True,
    )
    assert (
        done.returncode == 1
        and "conflict_policy" in done.stderr
        and "claim_lease_minutes" in done.stderr
    )


def test_subagent_start_race_is_corrected_by_the_agent_tool_result(project: Path) -> None:
    """Two general-purpose launches; B's SubagentStart comes first, so the first-come guess
    gives B the task of A. B's PostToolUse(Agent) then names B: both are set right."""
    launches = {}
    for name in ("A", "B"):
        launch = subagent_event(project, "PreToolUse.Agent", None)
        launch["tool_input"] |= {"prompt": f"task {name}", "description": f"editor {name}"}
        run_hook("PreToolUse", launch, project)
        launches[name] = launch
        time.sleep(0.01)  # launched in this order
    for agent in ("agent-b", "agent-a"):
        start = fixture("SubagentStart", project) | {"session_id": SESSION, "agent_id": agent}
        run_hook("SubagentStart", start, project)
    described = "SELECT id, description FROM agent_registry WHERE is_main = 0 ORDER BY 1"
    assert query(project, described) == [("agent-a", "editor B"), ("agent-b", "editor A")]
    result = subagent_event(project, "PostToolUse.Agent", None)
    result |= {
        "tool_use_id": launches["B"]["tool_use_id"],
        "tool_input": launches["B"]["tool_input"],
    }
    result["tool_response"]["agentId"] = "agent-b"
    run_hook("PostToolUse", result, project)
    assert query(project, described) == [("agent-a", "editor A"), ("agent-b", "editor B")]
    assert query(
        project, "SELECT agent_id, confirmed FROM agent_launches ORDER BY launched_at"
    ) == [("agent-a", 0), ("agent-b", 1)]
