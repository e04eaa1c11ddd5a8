"""The cost of a dead end: each error's climb up its ladder carries the tokens and cost of the
model responses of the agents that climbed it, from its first failure to its last (never the
fix after it, never the work of agents beside it); a failed approach recorded from a climb
carries the same figure. Shown by `errors`, `failed-paths` and the restored context;
`cost --session` says what share of the session went to dead ends. A session whose
transcripts were never read says nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import fixture, run_cli
from inproc import Recorder

from claude_session.core import context, ladder
from claude_session.services.cost import transcripts

SESSION = "de4de0d5-0000-4000-8000-00000000c057"
AGENT = "a0de4de0d12345678"
PROMPT = "7a1c2d3e-0000-4000-8000-000000000001"
PROMPT_2 = "7a1c2d3e-0000-4000-8000-000000000002"
T0 = 1_800_000_000.0  # the Recorder's clock starts here
PRICE = 5.0 / 1e6  # opus 4.5 input, USD per token, from our price table (no cost-state)
FIXED = "python3 -c 'import fixed_later'"
STUCK = "python3 -c 'import never_there'"
LAST = "python3 -c 'import last_try'"


def stamp(seconds: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(T0 + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def user(prompt_id: str, at: float) -> dict[str, Any]:
    return {
        "type": "user",
        "promptId": prompt_id,
        "message": {"role": "user", "content": "go"},
        "uuid": f"u-{at}",
        "timestamp": stamp(at),
        "sessionId": SESSION,
    }


# Each response: (its time after T0, input tokens, output tokens, agent). Its cost from the
# price table: (input + 5 x output) x $5 per million.
MESSAGES = {
    "m1": (5, 1000, 13, "main"),  # before any failure
    "m2": (20, 2000, 27, "main"),  # fixed ladder's climb
    "m3": (40, 3000, 31, "main"),  # the fix: after its last failure, before it passed
    "m4": (60, 4000, 43, "main"),  # after the fix
    "m5": (110, 5000, 57, "main"),  # stuck ladder, its failed approach
    "s1": (125, 6000, 61, "sub"),  # a subagent's beside it, in the same time: not its cost
    "m6": (130, 7000, 73, "main"),
    "m7": (150, 8000, 89, "main"),  # after the approach was recorded failed
    "m8": (310, 9000, 97, "main"),  # turn 2: the approach recorded by hand
    "m9": (320, 10000, 103, "main"),
    "m10": (340, 11000, 113, "main"),  # after it was recorded
    "m11": (410, 12000, 127, "main"),  # the last error's climb
    "m12": (450, 13000, 131, "main"),
}


def assistant(message_id: str) -> dict[str, Any]:
    at, inp, out, agent = MESSAGES[message_id]
    entry = {
        "type": "assistant",
        "uuid": f"a-{message_id}",
        "timestamp": stamp(at),
        "sessionId": SESSION,
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-5",
            "content": [{"type": "text", "text": "ok"}],
            "usage": {"input_tokens": inp, "output_tokens": out},
        },
    }
    if agent == "sub":
        entry |= {"agentId": AGENT, "isSidechain": True}
    return entry


def tokens(*names: str) -> int:
    return sum(MESSAGES[n][1] + MESSAGES[n][2] for n in names)


def cost(*names: str) -> float:
    return sum((MESSAGES[n][1] + 5 * MESSAGES[n][2]) * PRICE for n in names)


def k(*names: str) -> str:
    """Their tokens as the context says them: 82k."""
    return f"{tokens(*names) / 1000:.0f}k"


def write(path: Path, names: list[str], first: dict[str, Any] | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        for entry in ([first] if first else []) + [assistant(n) for n in names]:
            f.write(json.dumps(entry) + "\n")


class Session:
    """One session through the in-process hooks, the clock set to T0 + seconds."""

    def __init__(self, rec: Recorder, transcript: Path) -> None:
        self.rec = rec
        self.base = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": rec.root}
        self.calls = 0

    def at(self, seconds: float) -> Session:
        self.rec.now = T0 + seconds
        return self

    def send(self, event: str, **fields: Any) -> None:
        self.rec.send(self.base | {"hook_event_name": event} | fields)

    def bash(self, command: str, error: str | None = None) -> None:
        self.calls += 1
        name = "PostToolUseFailure.Bash" if error else "PostToolUse.Bash"
        payload = fixture(name, Path(self.rec.root)) | self.base
        payload |= {"tool_use_id": f"toolu_d{self.calls}", "prompt_id": PROMPT}
        payload["tool_input"] = {"command": command, "description": "run"}
        if error:
            payload["error"] = f"Exit code 1\nModuleNotFoundError: No module named '{error}'"
        self.rec.send(payload)


def cli(project: Path, config: Path, *args: str) -> Any:
    done = run_cli(project, *args, CLAUDE_CONFIG_DIR=str(config))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if "--json" in args else done.stdout


def test_each_dead_end_carries_its_tokens_and_cost(
    recorder: Recorder, project: Path, config: Path
) -> None:
    main = config / "projects" / "-tmp-project" / f"{SESSION}.jsonl"
    sub = main.parent / SESSION / "subagents" / f"agent-{AGENT}.jsonl"
    s = Session(recorder, main)
    s.at(0).send("SessionStart", source="startup")
    s.send("UserPromptSubmit", prompt="make it work", prompt_id=PROMPT)
    agent = {"agent_id": AGENT, "agent_type": "general-purpose"}
    s.at(1).send("SubagentStart", **agent)
    s.send("SubagentStop", agent_transcript_path=str(sub), last_assistant_message="done", **agent)
    # a ladder climbed twice, then fixed: [10, 30]
    s.at(10).bash(FIXED, "fixed_later")
    s.at(30).bash(FIXED, "fixed_later")
    s.at(50).bash(FIXED)
    # a ladder climbed three times (a failed path at the third), never fixed: [100, 140]
    for t in (100, 120, 140):
        s.at(t).bash(STUCK, "never_there")
    # turn 2, an approach recorded by hand while it runs: no window (its failures are not
    # known; the turn it happened to be recorded in says nothing of what it cost)
    s.at(300).send("UserPromptSubmit", prompt="try another way", prompt_id=PROMPT_2)
    by_hand = ladder.add_failed_path(
        recorder.conn, SESSION, "vendoring the module", "same import error", None,
        "recorded by hand", T0 + 330, 30,
    )  # fmt: skip
    s.at(400).bash(LAST, "last_try")  # one failure, open: [400, 400], no response inside

    # Before any of its usage is read nothing is known: no figure, not $0.
    listed = cli(project, config, "errors", "--json")  # (it finds no transcript yet)
    assert {(e["tokens"], e["cost_usd"]) for e in listed} == {(None, None)}
    assert "tokens" not in context.for_compaction(recorder.conn, SESSION, T0 + 460)

    write(main, ["m1", "m2", "m3", "m4", "m5", "m6", "m7"], user(PROMPT, 1))
    write(sub, ["s1"], user(PROMPT, 121) | {"agentId": AGENT})
    write(main, ["m8", "m9", "m10", "m11", "m12"], user(PROMPT_2, 300))
    transcripts.catch_up(recorder.conn, SESSION)

    # The climbs end at their last failure, open or not: what came after is not theirs.
    stuck_open = ["m5", "m6"]
    # the transcripts were read before the windows closed (this clock is ahead of the read):
    # each figure counts what was read so far, and says so
    text = " ".join(context.for_compaction(recorder.conn, SESSION, T0 + 460).split())
    assert f"`{STUCK}` failed 3x [runtime]: " in text
    stuck = f"{k(*stuck_open)} tokens, ${cost(*stuck_open):.2f}"
    assert f"never_there'; 3 attempts, at least {stuck}" in text
    assert "last_try'; 1 attempt" not in text  # nothing spent between its failures: no figure
    # one failure, one cost: the error and the failed approach recorded from it say the same
    assert text.count(f"3 attempts, at least {stuck}") == 2, text
    after = text.split("vendoring the module; failed because: same import error")[1]
    assert not after.startswith(";")  # no figure: nothing says what it cost

    # The session ends: what was open is abandoned at 500; nothing after counts.
    s.at(500).send("SessionEnd", reason="other")
    errors = cli(project, config, "errors", "--json")
    by_what: dict[str, set[tuple[int, float]]] = {}
    for e in errors:
        by_what.setdefault(e["what"], set()).add((e["tokens"], round(e["cost_usd"], 9)))
    assert by_what == {
        FIXED: {(tokens("m2"), round(cost("m2"), 9))},
        STUCK: {(tokens(*stuck_open), round(cost(*stuck_open), 9))},
        LAST: {(0, 0.0)},
    }
    paths = {p["id"]: p for p in cli(project, config, "failed-paths", "--json")}
    assert len(paths) == 2
    auto = next(p for i, p in paths.items() if i != by_hand)
    assert auto["approach"] == STUCK
    assert (auto["tokens"], auto["cost_usd"]) == (tokens(*stuck_open), pytest.approx(
        cost(*stuck_open)
    ))  # fmt: skip
    assert (paths[by_hand]["tokens"], paths[by_hand]["cost_usd"]) == (None, None)
    table = cli(project, config, "failed-paths", "--wide")
    assert "cost" in table and "tokens" in table and f"${cost(*stuck_open):.4f}" in table

    # The next session is told what the last one left open, and what it cost.
    restored = context.for_new_session(recorder.conn, "next-session", "startup", T0 + 600)
    assert restored is not None
    flat = " ".join(restored.split())
    spent = f"3 attempts, at least {k(*stuck_open)} tokens, ${cost(*stuck_open):.2f}"
    assert f"{spent}; abandoned when session" in flat

    # The session's share: the climbs never fixed and the failed approaches, each response
    # once (the stuck climb and its failed approach are one window).
    found = cli(project, config, "cost", "--session", SESSION, "--json")
    dead = found["dead_ends"]
    assert dead["errors"] == 2 and dead["failed_paths"] == 2
    assert dead["tokens"] == tokens(*stuck_open)
    assert dead["cost_usd"] == pytest.approx(cost(*stuck_open))
    assert dead["share"] == pytest.approx(cost(*stuck_open) / cost(*MESSAGES))
    assert found["total"]["cost_usd"] == pytest.approx(cost(*MESSAGES))
    shown = " ".join(cli(project, config, "cost", "--session", SESSION, "--wide").split())
    share = f"{cost(*stuck_open) / cost(*MESSAGES):.0%}"
    assert f"dead ends: ${cost(*stuck_open):.4f} ({share})" in shown
    assert "in 2 errors not fixed and 2 failed approaches" in shown
    status = " ".join(cli(project, config, "status", "--wide").split())
    assert f"; dead ends: ${cost(*stuck_open):.4f} ({share})" in status
    latest = cli(project, config, "status", "--json")["cost"]["dead_ends"]
    assert latest["cost_usd"] == pytest.approx(cost(*stuck_open))
