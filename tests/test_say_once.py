"""Say each thing once: a resumed or compacted session is told only what changed since the
recorded state it still holds (the injection log for what was said, Claude Code's transcript or
the last model turn for what is still in context), through the real hook entry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import fixture, query, run_hook, write_config

from claude_session.core import context, held

SESSION = "once-session-1"
COMMAND = "cat settings.local.ini"
APPROACH = f"- {COMMAND}; failed because:"
ERROR = f"- Bash `{COMMAND}` failed"


def send(project: Path, name: str, **changes: Any) -> dict[str, Any] | None:
    payload = fixture(name, project) | {"session_id": SESSION} | changes
    return run_hook(payload["hook_event_name"], payload, project).json()


def said(answer: dict[str, Any] | None) -> str | None:
    return None if answer is None else answer["hookSpecificOutput"]["additionalContext"]


def fail_three_times(project: Path, transcript: Path) -> None:
    """A failed approach and an open error, as the real CLI leaves them; then the turn ends."""
    for n in range(3):
        send(
            project,
            "PostToolUseFailure.Bash",
            tool_use_id=f"toolu_once_{n}",
            tool_input={"command": COMMAND, "description": "read"},
            error=f"Exit code 1\ncat: {COMMAND[4:]}: No such file or directory",
            transcript_path=str(transcript),
        )
    send(project, "Stop", transcript_path=str(transcript))


def line(**fields: Any) -> str:
    """A transcript line as Claude Code writes it (JSON.stringify: no spaces, no \\u escapes)."""
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def attachment(uuid: str, text: str) -> str:
    return line(
        parentUuid=None,
        isSidechain=False,
        attachment={
            "type": "hook_additional_context",
            "content": [text],
            "hookName": "SessionStart",
            "toolUseID": "SessionStart",
            "hookEvent": "SessionStart",
        },
        type="attachment",
        uuid=uuid,
        rendered=[{"content": f"<system-reminder>\nSessionStart hook additional context: {text}"}],
    )


def boundary(preserved: list[str]) -> str:
    meta = {"trigger": "manual", "preservedMessages": {"anchorUuid": "s", "uuids": preserved}}
    return line(parentUuid=None, type="system", subtype="compact_boundary", compactMetadata=meta)


def test_resume_then_compact_then_resume_says_each_statement_once(
    project: Path, tmp_path: Path
) -> None:
    """The user's case: a resume block, a compaction, a resume: each statement in context once,
    and nothing given before the compaction called still in context after it."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(line(type="user", uuid="u0") + "\n")
    fail_three_times(project, transcript)
    first = said(send(project, "SessionStart.resume", transcript_path=str(transcript)))
    assert first and APPROACH in first and ERROR in first  # nothing of ours held: all of it
    transcript.write_text(transcript.read_text() + attachment("a1", first) + "\n")

    # Even with no model turn since, the compaction summarised that block: all of it again.
    send(project, "PreCompact", transcript_path=str(transcript))
    compacted = said(send(project, "SessionStart.compact", transcript_path=str(transcript)))
    assert compacted and "Context was just compacted" in compacted
    assert APPROACH in compacted and ERROR in compacted
    assert "is still in your context and still holds" not in compacted

    # The transcript as Claude Code writes it after (the resume block listed as preserved
    # makes no difference): only the compaction's block is held at the next resume.
    transcript.write_text(
        transcript.read_text() + boundary(["a1"]) + "\n" + attachment("a2", compacted) + "\n"
    )
    assert said(send(project, "SessionStart.resume", transcript_path=str(transcript))) is None
    sources = query(project, "SELECT source FROM injections WHERE kind = 'restore' ORDER BY id")
    assert sources == [("resume",), ("compact",)]


def test_two_compactions_in_a_row_give_everything_twice(project: Path, tmp_path: Path) -> None:
    """The second compaction summarised the first one's block away: it is given whole again."""
    transcript = tmp_path / "t.jsonl"
    fail_three_times(project, transcript)
    for _ in range(2):
        send(project, "PreCompact", transcript_path=str(transcript))
        compacted = said(send(project, "SessionStart.compact", transcript_path=str(transcript)))
        assert compacted and APPROACH in compacted and ERROR in compacted
        assert "is still in your context and still holds" not in compacted


def test_a_compaction_after_a_model_turn_gives_everything_again(
    project: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / "t.jsonl"
    fail_three_times(project, transcript)
    first = said(send(project, "SessionStart.resume", transcript_path=str(transcript)))
    assert first and APPROACH in first
    send(project, "UserPromptSubmit", prompt="go on", transcript_path=str(transcript))
    send(project, "Stop", transcript_path=str(transcript))
    send(project, "PreCompact", transcript_path=str(transcript))
    compacted = said(send(project, "SessionStart.compact", transcript_path=str(transcript)))
    assert compacted and APPROACH in compacted and ERROR in compacted
    assert "still holds" not in compacted


def test_a_block_the_compaction_dropped_is_given_in_full_at_resume(
    project: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / "t.jsonl"
    fail_three_times(project, transcript)
    first = said(send(project, "SessionStart.resume", transcript_path=str(transcript)))
    assert first
    # Summarised away: before the boundary and not among the messages it preserved.
    transcript.write_text(attachment("a1", first) + "\n" + boundary(["other"]) + "\n")
    again = said(send(project, "SessionStart.resume", transcript_path=str(transcript)))
    assert again and APPROACH in again and "still holds" not in again


def test_what_is_no_longer_so_is_withdrawn_by_name(project: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    fail_three_times(project, transcript)
    first = said(send(project, "SessionStart.resume", transcript_path=str(transcript)))
    assert first
    transcript.write_text(attachment("a1", first) + "\n")
    # The same command passes: the error is resolved, the approach no dead end any more.
    send(
        project,
        "PostToolUse.Bash",
        tool_use_id="toolu_once_ok",
        tool_input={"command": COMMAND, "description": "read"},
        transcript_path=str(transcript),
    )
    send(project, "Stop", transcript_path=str(transcript))
    later = said(send(project, "SessionStart.resume", transcript_path=str(transcript)))
    assert later is not None
    withdrawn = later[later.index(f"## {context.NO_LONGER}") :]
    assert f'- {COMMAND} (under "{context.FAILED}")' in withdrawn
    assert f'- Bash `{COMMAND}` (under "{context.OPEN}")' in withdrawn
    assert APPROACH not in later and ERROR not in later  # never restated as still true


def test_with_restore_delta_off_every_block_is_whole(project: Path, tmp_path: Path) -> None:
    write_config(project, {"restore_delta": False})
    transcript = tmp_path / "t.jsonl"
    fail_three_times(project, transcript)
    first = said(send(project, "SessionStart.resume", transcript_path=str(transcript)))
    assert first
    transcript.write_text(attachment("a1", first) + "\n")
    send(project, "PreCompact", transcript_path=str(transcript))
    compacted = said(send(project, "SessionStart.compact", transcript_path=str(transcript)))
    assert compacted and APPROACH in compacted


def test_the_transcript_is_read_from_its_end_within_the_cap(tmp_path: Path) -> None:
    """Only the last TAIL_CAP bytes, from a line start; what lies before is unknown, and a
    block found nowhere in that part is not taken as held unless no compaction came since."""
    path = tmp_path / "big.jsonl"
    filler = line(type="assistant", text="x" * 1000) + "\n"
    path.write_text(attachment("a0", "<claude-session-recorded-state>\nold\n") + "\n" + filler * 50)
    found = held.read_tail(str(path), cap=10_000)
    assert found is not None
    data, whole = found
    assert not whole and len(data) <= 10_000 and data.startswith(b'{"type":"assistant"')
    assert held.read_tail(str(tmp_path / "missing.jsonl")) is None
    assert held.read_tail(str(path), cap=10**9) == (path.read_bytes(), True)


def test_texts_are_escaped_as_claude_code_writes_them() -> None:
    text = 'a "quoted" back\\slash\ttab\nline\x01ctl é ✓ &lt;x&gt;'
    assert held.js_escaped(text) == json.dumps(text, ensure_ascii=False)[1:-1].encode()


def test_held_lines_are_those_after_the_last_boundary_whatever_it_preserved() -> None:
    """A compaction ends what came before it, even a block it lists as preserved: the
    summary's account of our block is not our block."""
    data = "\n".join(
        [
            attachment("a1", "one"),
            attachment("a2", "two"),
            boundary(["a2"]),
            attachment("a3", "three"),
            line(type="user", uuid="u9"),
        ]
    ).encode()
    lines, bounded = held.held_lines(data)
    assert bounded
    assert [b'"uuid":"a3"' in x for x in lines] == [True]
    lines, bounded = held.held_lines(data.split(b"\n", 2)[2].replace(b"compact_boundary", b"x"))
    assert not bounded


def test_restate_keeps_unchanged_lines_out_and_gives_changed_ones() -> None:
    state: dict[str, Any] = {
        "failed_paths": [{"approach": "make", "reason_failed": "no rule", "file_path": None}],
        "errors": [],
        "agents": [
            {
                "id": "agent-1",
                "agent_type": "Explore",
                "last_seen_at": 100.0,
                "tool_uses": 3,
            }
        ],
        "gathered_at": 130.0,
    }
    full = context.render(state, "INTRO")
    given = [{"text": full, "at": 130.0}]
    later = dict(state, gathered_at=400.0)  # only "last seen ... ago" moved on
    assert context.restate(later, "INTRO", given) is None
    later["agents"] = [dict(state["agents"][0], tool_uses=9)]
    changed = context.restate(later, "INTRO", given)
    assert changed and "9 tool uses" in changed and "make; failed because" not in changed
    later["agents"] = []
    gone = context.restate(later, "INTRO", given)
    assert gone and f'- agent-1{" "}(under "{context.LIVE}")' in gone
    # a withdrawal given is itself held: the agent is not withdrawn twice
    assert context.restate(later, "INTRO", [*given, {"text": gone, "at": 400.0}]) is None
