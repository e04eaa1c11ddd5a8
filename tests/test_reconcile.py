"""Nothing missing from the record: what the transcript shows but no hook delivered is added
from it (services/cost/reconcile.py), through `events.apply`, marked as coming from the transcript,
and never twice, whichever of the hook and the transcript comes first.

The fixture is one real session of Claude Code 2.1.330 (tests/test_e2e_timetravel.py's: a
Write, an Edit, a subagent that writes a file, a Bash command): its two transcripts as the CLI
wrote them and the 22 hook payloads it sent, with its paths moved to /home/dev.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, RECORDED_PROJECT, count, fixture, query, run_hook
from inproc import Recorder

from claude_session.services.cost import reconcile, transcripts

TRANSCRIPTS = FIXTURES / "transcripts"
SESSION = "840dff94-7c63-46f1-99fc-8eb8e37afafc"
AGENT = "a5bb0ac2d6d61a70c"
PROMPT_ID = "340c5336-771c-42ca-953a-16bd3f11b409"
# Every tool call of the session: (tool_use_id, agent, tool, status)
CALLS = [
    ("toolu_e2e000001", SESSION, "Write", "succeeded"),
    ("toolu_e2e000007", SESSION, "Edit", "succeeded"),
    ("toolu_e2e000013", SESSION, "Agent", "succeeded"),
    ("toolu_e2e000016", AGENT, "Write", "succeeded"),
    ("toolu_e2e000022", SESSION, "Bash", "succeeded"),
]
# What the transcripts can stand in for; the rest (SessionStart, Stop...) only hooks send.
FILLABLE = {"UserPromptSubmit", "PreToolUse", "PostToolUse", "SubagentStart", "SubagentStop"}


def lines(path: Path, project: Path) -> list[dict[str, Any]]:
    text = path.read_text().replace(RECORDED_PROJECT, str(project))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def main_transcript(project: Path) -> list[dict[str, Any]]:
    return lines(TRANSCRIPTS / f"{SESSION}.jsonl", project)


def agent_transcript(project: Path) -> list[dict[str, Any]]:
    return lines(TRANSCRIPTS / SESSION / "subagents" / f"agent-{AGENT}.jsonl", project)


def hooks(project: Path) -> list[dict[str, Any]]:
    return lines(TRANSCRIPTS / "hooks.jsonl", project)


def send_all(rec: Recorder, payloads: list[dict[str, Any]]) -> None:
    for payload in payloads:
        rec.send(payload)
        rec.advance(0.05)


def fill_both(rec: Recorder) -> int:
    root = Path(rec.root)
    added = reconcile.fill(rec.conn, rec.root, SESSION, None, main_transcript(root))
    return added + reconcile.fill(rec.conn, rec.root, SESSION, AGENT, agent_transcript(root))


def derived(rec: Recorder) -> dict[str, list[tuple[Any, ...]]]:
    """The derived rows, without their ids and times (which legitimately differ)."""
    q = rec.rows
    return {
        "tool_calls": sorted(
            q(
                "SELECT tool_use_id, session_id, turn_id, agent_id, tool_name, input_summary,"
                " status FROM tool_calls"
            )
        ),
        "turns": sorted(q("SELECT session_id, turn_no, prompt_id, prompt, status FROM turns")),
        "prompts": sorted(q("SELECT session_id, prompt_id, prompt FROM prompts")),
        "agent_registry": sorted(
            q(
                "SELECT id, session_id, agent_type, description, task_description, tool_use_id,"
                " status, status_reason, is_internal, tool_uses, last_message, is_main,"
                " files_changed FROM agent_registry"
            )
        ),
        "agent_launches": sorted(
            q(
                "SELECT tool_use_id, description, prompt, subagent_type, background, agent_id,"
                " confirmed FROM agent_launches"
            )
        ),
        "file_claims": sorted(
            q(
                "SELECT session_id, agent_id, file_path, operation, edits,"
                " released_at IS NOT NULL, release_reason FROM file_claims"
            )
        ),
        # duration_ms is the hooks' measure of each call: the transcript has none to give
        "session_metrics": sorted(
            q(
                "SELECT session_id, event_type, key, value FROM session_metrics WHERE key != ?",
                ("duration_ms",),
            )
        ),
    }


def test_lost_hooks_are_filled_in_from_the_real_transcripts(recorder: Recorder) -> None:
    root = Path(recorder.root)
    send_all(recorder, [p for p in hooks(root) if p["hook_event_name"] not in FILLABLE])
    assert recorder.rows("SELECT count(*) FROM tool_calls") == [(0,)]

    added = fill_both(recorder)

    # the prompt, Pre and Post of 4 main calls; the subagent's start, Pre, Post and stop
    assert added == 1 + 8 + 4
    assert sorted(
        recorder.rows("SELECT tool_use_id, agent_id, tool_name, status FROM tool_calls")
    ) == sorted(CALLS)
    assert recorder.rows("SELECT prompt_id, prompt FROM prompts") == [
        (PROMPT_ID, "TASK-TT: change the project")
    ]
    assert recorder.rows(
        "SELECT agent_type, status, is_internal, last_message, tool_use_id, files_changed"
        " FROM agent_registry WHERE id = ?",
        (AGENT,),
    ) == [("general-purpose", "completed", 0, "wrote sub.txt", "toolu_e2e000013", '["sub.txt"]')]
    # every added event says where it came from, in its audit row and its stored payload
    filled = recorder.rows(
        "SELECT e.hook_event_name, h.outcome, h.note, json_extract(e.payload, ?)"
        " FROM events e JOIN hook_events h ON h.event_id = e.id WHERE e.hook_event_name IN"
        " ('UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'SubagentStart', 'SubagentStop')",
        (f"$.{reconcile.MARK}",),
    )
    assert len(filled) == 13
    assert {(outcome, note, mark) for _, outcome, note, mark in filled} == {
        ("stored", reconcile.NOTE, "transcript")
    }
    assert recorder.rows(
        "SELECT source, count(*) FROM hook_events GROUP BY source ORDER BY source"
    ) == [
        ("hook", len([p for p in hooks(root) if p["hook_event_name"] not in FILLABLE])),
        ("transcript", 13),
    ]
    assert reconcile.NOTE.startswith("source=transcript")
    # Claude Code's own fields, as its hooks send them
    post = json.loads(
        recorder.rows(
            "SELECT payload FROM events WHERE tool_use_id = 'toolu_e2e000022'"
            " AND hook_event_name = 'PostToolUse'"
        )[0][0]
    )
    assert post["prompt_id"] == PROMPT_ID and post["permission_mode"] == "bypassPermissions"
    assert post["tool_input"]["description"] == "bump, clean up, make"
    assert post["tool_response"]["bashEditDiff"]["files"][0]["filePath"] == str(root / "app.py")
    sub = json.loads(
        recorder.rows(
            "SELECT payload FROM events WHERE tool_use_id = 'toolu_e2e000016'"
            " AND hook_event_name = 'PreToolUse'"
        )[0][0]
    )
    assert (sub["agent_id"], sub["agent_type"]) == (AGENT, "general-purpose")

    # again, and again with what is there already: nothing more
    events, audits = recorder.rows(
        "SELECT (SELECT count(*) FROM events), count(*) FROM hook_events"
    )[0]
    assert fill_both(recorder) == 0
    assert recorder.rows("SELECT (SELECT count(*) FROM events), count(*) FROM hook_events") == [
        (events, audits)
    ]


def test_hook_first_and_transcript_first_give_the_same_rows(tmp_path: Path) -> None:
    """Hook first: the transcript adds nothing. Transcript first (read as it was written: the
    main thread up to the Agent call, the subagent, the rest), then every hook late, as from
    the spool: each one a duplicate, and the same derived rows."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    hook_first, transcript_first = Recorder(tmp_path / "a"), Recorder(tmp_path / "b")

    send_all(hook_first, hooks(tmp_path / "a"))
    before = hook_first.rows("SELECT (SELECT count(*) FROM events), count(*) FROM hook_events")
    assert fill_both(hook_first) == 0
    after = hook_first.rows("SELECT (SELECT count(*) FROM events), count(*) FROM hook_events")
    assert after == before

    project = tmp_path / "b"
    late = hooks(project)
    send_all(transcript_first, late[:1])  # SessionStart: nothing in a transcript stands for it
    main = main_transcript(project)
    agent_call = next(i for i, e in enumerate(main) if "toolu_e2e000013" in json.dumps(e)) + 1
    rec = transcript_first
    assert reconcile.fill(rec.conn, rec.root, SESSION, None, main[:agent_call]) == 1 + 4 + 1
    assert reconcile.fill(rec.conn, rec.root, SESSION, AGENT, agent_transcript(project)) == 4
    assert reconcile.fill(rec.conn, rec.root, SESSION, None, main) == 3
    send_all(rec, late[1:])

    assert derived(transcript_first) == derived(hook_first)
    outcomes = rec.rows(
        "SELECT e.hook_event_name, h.outcome, h.note IS NOT NULL FROM hook_events h"
        " JOIN events e ON e.id = h.event_id ORDER BY h.id"
    )
    late_fillable = [
        (n, o) for n, o, by_transcript in outcomes if n in FILLABLE and not by_transcript
    ]
    assert late_fillable and {o for _, o in late_fillable} == {"duplicate"}
    # one Pre and one Post per call, never two
    assert rec.rows(
        "SELECT tool_use_id, count(*) FROM events WHERE tool_use_id IS NOT NULL"
        " GROUP BY tool_use_id ORDER BY tool_use_id"
    ) == [(call[0], 2) for call in CALLS]
    hook_first.close()
    transcript_first.close()


def test_batches_of_a_growing_transcript_fill_what_one_pass_does(tmp_path: Path) -> None:
    """The reader hands over a transcript as it grows: a call in one batch, its result in the
    next, entries handed over twice."""
    for name in ("whole", "batched"):
        (tmp_path / name).mkdir()
    whole, batched = Recorder(tmp_path / "whole"), Recorder(tmp_path / "batched")
    for rec in (whole, batched):
        send_all(rec, [p for p in hooks(Path(rec.root)) if p["hook_event_name"] not in FILLABLE])
    fill_both(whole)
    main, sub = main_transcript(tmp_path / "batched"), agent_transcript(tmp_path / "batched")
    added = 0
    for start in range(0, len(main), 3):
        added += reconcile.fill(batched.conn, batched.root, SESSION, None, main[start : start + 4])
    for start in range(0, len(sub), 2):
        added += reconcile.fill(batched.conn, batched.root, SESSION, AGENT, sub[start : start + 2])
    assert added == 13
    assert derived(batched) == derived(whole)
    whole.close()
    batched.close()


def entry(kind: str, content: Any, at: str, **more: Any) -> dict[str, Any]:
    role = "assistant" if kind == "assistant" else "user"
    return {
        "type": kind,
        "sessionId": SESSION,
        "timestamp": f"2026-11-25T22:46:{at}Z",
        "promptId": PROMPT_ID,
        "cwd": "/nowhere",
        "message": {"role": role, "content": content},
    } | more


def call(tool_use_id: str, name: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}


def result(tool_use_id: str, text: str, is_error: bool = True) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}
    return block | {"is_error": is_error}


def test_failures_interruptions_rejections_and_secrets(recorder: Recorder) -> None:
    token = "ghp_" + "A" * 36
    entries = [
        entry("user", "run it", "01.000"),
        entry(
            "assistant", [call("toolu_fail", "Bash", command=f"deploy --token {token}")], "02.000"
        ),
        entry("user", [result("toolu_fail", "Exit code 1\nboom")], "03.000"),
        entry("assistant", [call("toolu_stop", "Edit", file_path="/nowhere/a.py")], "04.000"),
        entry(
            "user", [result("toolu_stop", "[Request interrupted by user for tool use]")], "05.000"
        ),
        entry("assistant", [call("toolu_bad", "Read", path=1)], "06.000"),
        entry(
            "user",
            [result("toolu_bad", "<tool_use_error>InputValidationError: x</tool_use_error>")],
            "07.000",
        ),
        entry("user", "<command-name>/clear</command-name>", "08.000", promptId="other"),
    ]
    assert reconcile.fill(recorder.conn, recorder.root, SESSION, None, entries) == 5
    assert sorted(recorder.rows("SELECT tool_use_id, tool_name, status FROM tool_calls")) == [
        ("toolu_fail", "Bash", "failed"),
        ("toolu_stop", "Edit", "interrupted"),
    ]
    assert recorder.rows("SELECT tool_use_id, interrupted FROM error_log ORDER BY id") == [
        ("toolu_fail", 0),
        ("toolu_stop", 1),
    ]
    assert recorder.rows("SELECT prompt FROM prompts") == [("run it",)]
    stored = " ".join(str(r[0]) for r in recorder.rows("SELECT payload FROM events"))
    stored += " ".join(str(r[0]) for r in recorder.rows("SELECT payload_summary FROM hook_events"))
    assert "toolu_fail" in stored and token not in stored


# What Claude Code 2.1.330 writes, on resume, for the calls its killed process left without a
# result (read from the CLI's own bundle): each an interruption, never a failure.
PLACEHOLDERS = (
    "[Tool call interrupted: the session ended before this call's result was recorded, so its"
    " outcome is unknown. Check whether it took effect before relying on it or running it again.]",
    "[Agent call interrupted: the process running this conversation stopped before this agent"
    " finished, so it returned no result. Nobody asked it to stop.]",
    "[Request interrupted: the session ended before this agent finished. Nobody asked it to stop.]",
)


@pytest.mark.parametrize("placeholder", PLACEHOLDERS)
def test_a_killed_call_is_an_interruption_and_its_agent_was_cut_off(
    recorder: Recorder, placeholder: str
) -> None:
    """After a kill and --resume: no open error ("Agent Agent: ..."), no failed subagent."""
    agent = "a0f3c2d9e8b7a6541"
    launch = {"description": "migrate", "prompt": "migrate the rows"}
    recorder.send(
        fixture("PreToolUse.Agent")
        | {"session_id": SESSION, "tool_use_id": "toolu_agent", "tool_input": launch}
    )
    recorder.send(fixture("SubagentStart") | {"session_id": SESSION, "agent_id": agent})
    assert recorder.rows("SELECT status FROM agent_registry WHERE id = ?", (agent,)) == [
        ("running",)
    ]
    entries = [entry("user", [result("toolu_agent", placeholder)], "09.000")]
    reconcile.fill(recorder.conn, recorder.root, SESSION, None, entries)
    assert recorder.rows("SELECT status FROM tool_calls WHERE tool_use_id = 'toolu_agent'") == [
        ("interrupted",)
    ]
    assert recorder.rows("SELECT interrupted FROM error_log") == [(1,)]
    assert recorder.rows("SELECT status FROM agent_registry WHERE id = ?", (agent,)) == [
        ("aborted_stale",)
    ]


def test_the_drop_switch_makes_chosen_events_exit_unrecorded(project: Path) -> None:
    drop = {"CLAUDE_SESSION_DROP_EVENTS": "PreToolUse, PostToolUse"}
    run_hook("SessionStart", fixture("SessionStart.startup", project), project, env=drop)
    for name in ("PreToolUse", "PostToolUse"):
        done = run_hook(name, fixture(f"{name}.Bash", project), project, env=drop)
        assert done.returncode == 0 and not done.stdout
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project, env=drop)
    assert query(project, "SELECT hook_event_name FROM events ORDER BY id") == [
        ("SessionStart",),
        ("UserPromptSubmit",),
    ]
    assert count(project, "hook_events") == 2


def _moved(path: Path, config: Path, project: Path) -> str:
    """A fixture file's text with its Claude Code config folder and project moved here."""
    text = path.read_text().replace("/home/dev/.claude", str(config))
    return text.replace(RECORDED_PROJECT, str(project))


def test_the_transcript_waits_for_hooks_still_on_their_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read while the session runs, the transcript's newest entries are left to their hooks
    (FILL_AFTER): the hooks that come are stored as hooks, not as duplicates of a copy made
    from the transcript (which would lose their answers to the agent); what never comes is
    filled in once the entries are older, or the session ended."""
    config = tmp_path / "config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    main = config / "projects" / "-home-dev-project" / f"{SESSION}.jsonl"
    sub = main.parent / SESSION / "subagents" / f"agent-{AGENT}.jsonl"
    sub.parent.mkdir(parents=True)
    for rec_dir in ("live", "lost"):
        (tmp_path / rec_dir).mkdir()
    newest = 0.0
    for source, target in (
        (TRANSCRIPTS / f"{SESSION}.jsonl", main),
        (TRANSCRIPTS / SESSION / "subagents" / f"agent-{AGENT}.jsonl", sub),
    ):
        text = _moved(source, config, tmp_path / "live")
        target.write_text(text)
        for line in text.splitlines():
            stamp = transcripts.timestamp(json.loads(line).get("timestamp"))
            newest = max(newest, stamp or 0.0)
    soon, later = newest + 10, newest + transcripts.FILL_AFTER + 1

    # hooks on their way: read first, then they come, and are stored as hooks
    live = Recorder(tmp_path / "live")
    payloads = [
        json.loads(x)
        for x in _moved(TRANSCRIPTS / "hooks.jsonl", config, tmp_path / "live").splitlines()
        if x.strip()
    ]
    payloads = [p for p in payloads if p["hook_event_name"] != "SessionEnd"]  # still running
    live.send(payloads[0])
    assert transcripts.catch_up(live.conn, SESSION, now=soon)["reconciled"] == 0
    assert live.rows("SELECT count(*) FROM tool_calls") == [(0,)]
    send_all(live, payloads[1:])
    assert transcripts.catch_up(live.conn, SESSION, now=later)["reconciled"] == 0
    assert {o for (o,) in live.rows("SELECT outcome FROM hook_events")} == {"stored"}
    assert live.rows("SELECT count(*) FROM hook_events WHERE note = ?", (reconcile.NOTE,)) == [(0,)]

    # hooks lost: nothing filled while they may still come, everything once they cannot
    lost = Recorder(tmp_path / "lost")
    lost.send(payloads[0])
    assert transcripts.catch_up(lost.conn, SESSION, now=soon)["reconciled"] == 0
    assert transcripts.catch_up(lost.conn, SESSION, now=later)["reconciled"] == 13
    assert sorted(
        lost.rows("SELECT tool_use_id, agent_id, tool_name, status FROM tool_calls")
    ) == sorted(CALLS)
    assert transcripts.catch_up(lost.conn, SESSION, now=later + 60)["reconciled"] == 0


def test_a_rebuilt_edit_of_a_held_file_notes_the_warning_it_missed(recorder: Recorder) -> None:
    """A subagent holds shared.txt (its hooks came); the main agent's Write of it reached us
    only through the transcript, too late for the conflict warning its PreToolUse hook would
    have answered: the rebuilt event's audit row says what was missed. A rebuilt Write of a
    file no one holds says nothing of the kind."""
    root = Path(recorder.root)
    holder = "a7e1d2c3b4a5f6e7d"
    start = fixture("SessionStart.startup", root) | {"session_id": SESSION}
    subagent = fixture("SubagentStart", root) | {"session_id": SESSION, "agent_id": holder}
    send_all(recorder, [start, subagent])
    for name in ("PreToolUse.Write", "PostToolUse.Write"):
        write = fixture(name, root) | {"session_id": SESSION, "agent_id": holder}
        write |= {"agent_type": "general-purpose", "tool_use_id": "toolu_held"}
        write["tool_input"]["file_path"] = str(root / "shared.txt")
        send_all(recorder, [write])
    assert recorder.rows("SELECT agent_id, file_path FROM file_claims") == [(holder, "shared.txt")]

    def at(second: int) -> str:  # after the subagent's claim (the recorder's clock)
        return datetime.fromtimestamp(recorder.now + second, UTC).isoformat()

    def written(tool_use_id: str, path: Path, second: int) -> list[dict[str, Any]]:
        """A Write as the main transcript shows it: the call, its result a second later."""
        use = call(tool_use_id, "Write", file_path=str(path), content="x\n")
        done = result(tool_use_id, "File created", is_error=False)
        return [
            entry("assistant", [use], "00", timestamp=at(second)),
            entry("user", [done], "00", timestamp=at(second + 1)),
        ]

    entries = written("toolu_main_shared", root / "shared.txt", 5)
    entries += written("toolu_main_other", root / "other.txt", 7)
    assert reconcile.fill(recorder.conn, recorder.root, SESSION, None, entries) == 4

    notes = dict(
        recorder.rows(
            "SELECT e.tool_use_id || ' ' || e.hook_event_name, h.note FROM hook_events h"
            " JOIN events e ON e.id = h.event_id WHERE h.source = 'transcript'"
        )
    )
    missed = notes["toolu_main_shared PreToolUse"]
    assert missed.startswith(reconcile.NOTE)
    assert f"{reconcile.MISSED}a conflict warning: shared.txt was claimed by {holder}" in missed
    assert "missed answer: a conflict warning: shared.txt was claimed by" in missed
    assert notes["toolu_main_other PreToolUse"] == reconcile.NOTE
    assert notes["toolu_main_shared PostToolUse"] == reconcile.NOTE
    assert notes["toolu_main_other PostToolUse"] == reconcile.NOTE

    # once the subagent stopped (its claims released), a rebuilt Write of the file missed nothing
    recorder.advance(10)
    stop = fixture("SubagentStop", root) | {"session_id": SESSION, "agent_id": holder}
    send_all(recorder, [stop | {"agent_type": "general-purpose"}])
    later = written("toolu_main_after", root / "shared.txt", 20)
    assert reconcile.fill(recorder.conn, recorder.root, SESSION, None, later) == 2
    assert recorder.rows(
        "SELECT h.note FROM hook_events h JOIN events e ON e.id = h.event_id"
        " WHERE e.tool_use_id = 'toolu_main_after' AND e.hook_event_name = 'PreToolUse'"
    ) == [(reconcile.NOTE,)]
