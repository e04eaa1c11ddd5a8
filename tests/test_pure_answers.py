"""Answers only read: every handler's answer step, run on a read-only connection to the project's
database while any writable open of a database fails, gives its answer and returns the writes it
calls for as data (core/effects.py); carrying those out (runtime/effects.py) makes the rows
appear: memories marked given (and then not given again) and counted in the project's and the
user's database, the judge's verdict, the blocked hook's exit code."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import fixture

from claude_session.core import (
    apply_types,
    config,
    db,
    effects,
    event,
    events,
    log,
    memories,
    recall,
)
from claude_session.core.paths import db_path, global_db_path
from claude_session.runtime import effects as carried
from claude_session.runtime.handlers import HANDLERS, ExitBlock, Reply
from claude_session.services import judge

SESSION = "7a3c8d3e-5f60-4b7e-9a1c-2d4e6f8a0b1c"
NOW = 1_800_000_000.0
SETTINGS = {
    "workspace_snapshots": False,
    "judge_events": "TaskCompleted,Stop,SubagentStop",
    "judge_command": "a-judge-never-run-here",
}


class Recorded:
    """A project database (and the user's global one) fed events on a writable connection."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self.conn = db.connect(db_path(self.root))
        self.scratch = apsw.Connection(":memory:")
        self.settings = dict(config.DEFAULTS) | SETTINGS
        self.tool_uses = 0

    def payload(self, name: str, **fields: Any) -> dict[str, Any]:
        found = fixture(name, Path(self.root)) if name else {}
        found |= {"session_id": SESSION, "cwd": self.root} | fields
        if "tool_use_id" in found:
            self.tool_uses += 1
            found["tool_use_id"] = f"toolu_pure_{self.tool_uses}"
        return found

    def apply(
        self, payload: dict[str, Any]
    ) -> tuple[event.Event, apply_types.Context, apply_types.Applied]:
        raw = json.dumps(payload).encode()
        ev, truncated = event.load(self.scratch, raw, str(payload["hook_event_name"]))
        delivery = apply_types.Delivery(events.new_delivery_id(), NOW, len(raw), None, truncated)
        ctx = apply_types.Context(self.root, NOW, None, self.settings)
        return ev, ctx, events.apply(self.conn, ev, delivery, ctx)

    def rows(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, params).fetchall()


@pytest.fixture
def fed(project: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorded]:
    monkeypatch.delenv("CLAUDE_SESSION_NO_JUDGE", raising=False)
    made = Recorded(project)
    yield made
    made.conn.close()


def answer_read_only(
    project: Recorded,
    payload: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[Reply | None, apply_types.Applied]:
    """Apply the event, then answer it on a read-only connection, with every writable open of
    a database refused; nothing committed to either database meanwhile."""
    ev, ctx, applied = project.apply(payload)
    handler = HANDLERS[ev.name]
    assert handler.answer is not None
    ready = None
    if handler.before_answer is not None:  # the writes that must come first: not the answer's
        ready = handler.before_answer(project.conn, ev, ctx)
    watchers = [
        db.connect(path, readonly=True)
        for path in (db_path(project.root), global_db_path())
        if os.path.exists(path)
    ]
    versions = [w.execute("PRAGMA data_version").fetchall() for w in watchers]
    reader = apsw.Connection(db_path(project.root), flags=apsw.SQLITE_OPEN_READONLY)
    opened = db.connect

    def read_only_connect(path: str, **options: Any) -> apsw.Connection:
        assert options.get("readonly"), f"the answer opened {path} to write"
        return opened(path, **options)

    with monkeypatch.context() as patched:
        patched.setattr(db, "connect", read_only_connect)
        reply = handler.answer(reader, ev, ctx, applied, ready)
    assert reader.total_changes() == 0
    assert [w.execute("PRAGMA data_version").fetchall() for w in watchers] == versions
    for conn in (reader, *watchers):
        conn.close()
    return reply, applied


def carry_out(project: Recorded, reply: Reply) -> None:
    carried.run(reply.effects, project.root, project.conn)


def context_of(reply: Reply | None) -> str:
    assert reply is not None and isinstance(reply.value, dict)
    return str(reply.value["hookSpecificOutput"]["additionalContext"])


def with_memories(project: Recorded) -> tuple[int, int]:
    """A project memory and a global one (the user's database), both about the zebra parser."""
    mine, _ = memories.add(project.conn, "the zebra parser needs utf-8", "fact", "project", NOW)
    everywhere = recall.open_global(create=True)
    assert everywhere is not None
    theirs, _ = memories.add(
        everywhere, "zebra parser: prefer small diffs", "preference", "global", NOW
    )
    everywhere.close()
    return mine, theirs


def uses(project: Recorded) -> list[tuple[Any, ...]]:
    return project.rows("SELECT scope, memory_id, how FROM memory_uses ORDER BY scope")


def use_counts(project: Recorded, theirs: int) -> tuple[int, int]:
    everywhere = recall.open_global()
    assert everywhere is not None
    found = everywhere.execute("SELECT use_count FROM memories WHERE id = ?", (theirs,))
    global_count = int(found.fetchall()[0][0])
    everywhere.close()
    return int(project.rows("SELECT sum(use_count) FROM memories")[0][0]), global_count


def test_a_prompt_is_given_its_memories_by_reading_and_marks_them_given_after(
    fed: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, theirs = with_memories(fed)
    fed.apply(fed.payload("SessionStart.startup", source="startup"))
    prompt = fed.payload("UserPromptSubmit", prompt="fix the zebra parser")
    reply, _ = answer_read_only(fed, prompt, monkeypatch)
    text = context_of(reply)
    assert "the zebra parser needs utf-8" in text and "prefer small diffs" in text
    assert reply is not None
    kinds = [type(e) for e in reply.effects]
    assert kinds == [effects.MarkGiven, effects.CountUse, effects.CountUse]
    assert uses(fed) == [] and use_counts(fed, theirs) == (0, 0)  # nothing written yet
    carry_out(fed, reply)
    assert uses(fed) == [("global", theirs, "prompt"), ("project", mine, "prompt")]
    assert use_counts(fed, theirs) == (1, 1)
    again, _ = answer_read_only(fed, dict(prompt, prompt="the zebra parser"), monkeypatch)
    assert again is None  # given once to a session, never twice


@pytest.mark.parametrize("source", ["startup", "resume", "compact"])
def test_a_session_start_answers_by_reading_and_marks_its_memories_given_after(
    fed: Recorded, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    mine, theirs = with_memories(fed)
    if source != "startup":
        fed.apply(fed.payload("SessionStart.startup", source="startup"))
        fed.apply(fed.payload("UserPromptSubmit", prompt="make the tests pass"))
    payload = fed.payload(f"SessionStart.{source}", source=source)
    reply, _ = answer_read_only(fed, payload, monkeypatch)
    text = context_of(reply)
    assert "the zebra parser needs utf-8" in text and "prefer small diffs" in text
    assert reply is not None
    given = [e for e in reply.effects if isinstance(e, effects.MarkGiven)]
    assert [sorted(e.memories) for e in given] == [[("global", theirs), ("project", mine)]]
    assert uses(fed) == []
    carry_out(fed, reply)
    assert uses(fed) == [("global", theirs, "session_start"), ("project", mine, "session_start")]
    assert use_counts(fed, theirs) == (1, 1)


def test_the_failure_ladder_answers_by_reading(
    fed: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    fed.apply(fed.payload("SessionStart.startup", source="startup"))
    for _ in range(3):
        fed.apply(fed.payload("PostToolUseFailure.Bash"))
    reply, _ = answer_read_only(fed, fed.payload("PostToolUseFailure.Bash"), monkeypatch)
    assert reply is not None and isinstance(reply.value, dict)
    assert "systemMessage" in reply.value and context_of(reply)  # the 4th attempt: the user too
    assert reply.effects == ()


def task_completed() -> dict[str, Any]:
    return {
        "hook_event_name": "TaskCompleted",
        "transcript_path": "/tmp/t.jsonl",
        "task_id": "3",
        "task_subject": "Add input validation to the parser",
    }


@pytest.mark.parametrize("name", ["TaskCompleted", "Stop", "SubagentStop"])
def test_the_judge_answers_by_reading_and_its_verdict_is_written_after(
    fed: Recorded, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The judge's command is stubbed (no process in this tier): it blocks, at a cost."""
    calls: list[str] = []

    def blocking(command: str, prompt: str, timeout: float) -> judge.Verdict:
        calls.append(command)
        answer = {"decision": "block", "reason": "the parser still accepts letters"}
        return judge.Verdict("block", answer["reason"], json.dumps(answer), answer, 0.01)

    monkeypatch.setattr(judge, "run", blocking)
    fed.apply(fed.payload("SessionStart.startup", source="startup"))
    fed.apply(fed.payload("UserPromptSubmit", prompt="validate the parser input"))
    payload = fed.payload("" if name == "TaskCompleted" else name)
    payload |= task_completed() if name == "TaskCompleted" else {"stop_hook_active": False}
    reply, applied = answer_read_only(fed, payload, monkeypatch)
    assert calls == ["a-judge-never-run-here"]
    assert reply is not None
    if name == "TaskCompleted":
        assert isinstance(reply.value, ExitBlock) and "accepts letters" in reply.value.reason
    else:
        assert isinstance(reply.value, dict) and reply.value["decision"] == "block"
    kinds = [type(e) for e in reply.effects]
    assert kinds == [effects.RecordVerdict, effects.SetExitCode]
    assert fed.rows("SELECT count(*) FROM llm_verdicts") == [(0,)]
    assert fed.rows("SELECT count(*) FROM judge_reservations") == [(1,)]  # before the call
    carry_out(fed, reply)
    verdicts = fed.rows("SELECT hook_event, decision, cost_usd FROM llm_verdicts")
    assert verdicts == [(name, "block", 0.01)]
    assert fed.rows("SELECT count(*) FROM judge_reservations") == [(0,)]  # replaced
    exit_code = 2 if name == "TaskCompleted" else 0
    assert fed.rows(
        "SELECT exit_code, note FROM hook_events WHERE id = ?", (applied.audit_id,)
    ) == [(exit_code, "blocked by the judge")]


def test_a_failing_effect_is_logged_and_the_next_still_runs(fed: Recorded) -> None:
    """Fail open: the answer is out; an effect that fails changes nothing of what follows."""
    _, theirs = with_memories(fed)
    broken = effects.RecordVerdict({"no such column": 1}, None)
    given = effects.MarkGiven(SESSION, (("global", theirs),), "prompt", NOW)
    carried.run((broken, given), fed.root, fed.conn)
    assert uses(fed) == [("global", theirs, "prompt")]
    assert "judge verdict" in Path(log.where(fed.root)).read_text()
