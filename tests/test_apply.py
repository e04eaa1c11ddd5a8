"""`events.apply` in-process with an injected clock: the fast layer most state tests can use,
and proof that it is the same path the hook takes (a replay and a live run agree)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import fixture, query, run_hook, stream
from inproc import Recorder

SESSION = "560819af-56fc-4528-be0a-32a24d1aa819"


def derived_state(rows: Any) -> dict[str, list[tuple[Any, ...]]]:
    """What the recording derived, without times or per-delivery ids."""
    return {
        "agents": sorted(rows("SELECT id, agent_type, status, is_internal FROM agent_registry")),
        "claims": sorted(rows("SELECT agent_id, file_path, edits FROM file_claims")),
        "errors": sorted(rows("SELECT signature, attempt_number, resolution FROM error_log")),
        "events": sorted(rows("SELECT hook_event_name, tool_use_id FROM events")),
        "snapshots": sorted(rows("SELECT snapshot_type FROM context_snapshots")),
    }


def test_in_process_replay_derives_what_the_hooks_derived(
    recorder: Recorder, tmp_path: Path
) -> None:
    live = tmp_path / "live"
    live.mkdir()
    for payload in stream(live):
        run_hook(payload["hook_event_name"], payload, live, env={"CLAUDE_SESSION_NO_JUDGE": "1"})
    for payload in stream(Path(recorder.root)):
        recorder.send(payload)
        recorder.advance(1)
    assert derived_state(recorder.rows) == derived_state(lambda sql: query(live, sql))
    assert derived_state(recorder.rows)["events"], "the stream was recorded"


def test_a_claim_stops_conflicting_when_its_lease_runs_out(recorder: Recorder) -> None:
    """Lease expiry is a matter of the injected clock alone: no sleeping, no subprocess."""
    root = Path(recorder.root)

    def edit_by(agent: str) -> dict[str, Any] | None:
        payload = fixture("PostToolUse.Edit", root) | {"session_id": SESSION}
        payload |= {"agent_id": agent, "agent_type": "general-purpose", "tool_use_id": agent}
        recorder.send(payload)
        pre = fixture("PreToolUse.Edit", root) | {"session_id": SESSION}
        pre |= {"agent_id": "other", "agent_type": "general-purpose", "tool_use_id": "pre-" + agent}
        return recorder.send(pre)[1]

    answer = edit_by("holder")
    assert answer and "being changed by another live agent" in str(answer)
    recorder.advance(16 * 60)  # past the default 15-minute lease, with no sign of life
    recorder.send(fixture("UserPromptSubmit", root) | {"session_id": SESSION})  # main speaks
    pre = fixture("PreToolUse.Edit", root) | {"session_id": SESSION, "tool_use_id": "late"}
    pre |= {"agent_id": "other", "agent_type": "general-purpose"}
    assert recorder.send(pre)[1] is None


def test_a_duplicate_delivery_adds_an_audit_row_and_nothing_else(recorder: Recorder) -> None:
    payload = fixture("PostToolUse.Bash", Path(recorder.root))
    first, _ = recorder.send(payload)
    again, _ = recorder.send(payload)
    assert not first.duplicate and again.duplicate and again.event_id == first.event_id
    assert recorder.rows("SELECT count(*) FROM events") == [(1,)]
    assert recorder.rows("SELECT outcome FROM hook_events ORDER BY id") == [
        ("stored",),
        ("duplicate",),
    ]
    assert again.audit_id != first.audit_id


def test_a_session_whose_clock_is_behind_is_never_ended_by_another_start(
    recorder: Recorder,
) -> None:
    """Session B runs on a host whose clock is two hours behind ours (a shared project folder):
    by our wall clock it looks silent for two hours. Session A starting must not end it."""
    root = Path(recorder.root)
    now = recorder.now
    recorder.now = now - 7200  # B's events, stamped by B's clock
    launch = fixture("PreToolUse.Agent", root) | {"session_id": "session-b"}
    recorder.send(launch)
    recorder.send(fixture("SubagentStart", root) | {"session_id": "session-b", "agent_id": "b1"})
    recorder.now = now
    recorder.send(fixture("SessionStart.startup", root) | {"session_id": "session-a"})
    assert recorder.rows("SELECT status FROM sessions WHERE session_id = 'session-b'") == [
        ("active",)
    ]
    assert recorder.rows("SELECT status FROM agent_registry WHERE id = 'b1'") == [("running",)]
