"""Cost right in every history: generated sessions (started, resumed, killed in a turn, forked
from any other, with subagents, compactions, several models, 5-minute and 1-hour cache writes,
a model nobody prices), written as Claude Code writes them (tests/cost_world.py), read in any
order and at any moment, and checked against the accounting rule computed apart:

- a response is counted once, in the session that made it (a fork's copies are its parent's);
- a response a cost-state counts costs what Claude Code billed for it; so do the helper
  requests a state counts (the compaction summariser), in their own rows;
- a response no state counts (its process was killed first) costs our table's price, at the
  price Claude Code's states taught for its model where any did;
- a model nobody prices is priced at the default tier, and marked an estimate.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from cost_world import (
    COUNTS,
    FACTOR,
    MODELS,
    MYSTERY,
    Session,
    World,
    claude_price,
    table_price,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inproc import Recorder

from claude_session.core import db, prices
from claude_session.services.cost import costs, transcripts

counts = st.builds(
    lambda i, o, r, w, h: {
        "input_tokens": i,
        "output_tokens": o,
        "cache_read_tokens": r,
        "cache_creation_tokens": w,
        "cache_1h_tokens": min(h, w),
    },
    st.integers(0, 5_000),
    st.integers(1, 2_000),
    st.integers(0, 50_000),
    st.integers(0, 5_000),
    st.integers(0, 5_000),
)
response = st.tuples(st.sampled_from(MODELS), counts, st.sampled_from([None, None, "a1", "a2"]))
turn = st.tuples(
    st.just("turn"),
    st.integers(0, 5),
    st.lists(response, min_size=1, max_size=4),
    st.one_of(st.none(), st.tuples(st.sampled_from(MODELS), counts)),  # a compaction
    st.sampled_from([False, False, True]),  # killed before its end
)
action = st.one_of(
    turn,
    st.tuples(st.just("new")),
    turn,
    st.tuples(st.just("resume"), st.integers(0, 5)),
    turn,
    st.tuples(st.just("fork"), st.integers(0, 5)),
    st.tuples(st.just("read"), st.integers(0, 5)),
)


def play(world: World, rec: Recorder, steps: list[tuple[Any, ...]]) -> None:
    """Run the steps; every hook event reaches the database at its own time."""
    live: dict[str, bool] = {}

    def session(i: int) -> Session | None:
        order = list(world.sessions.values())
        return order[i % len(order)] if order else None

    def send_events() -> None:
        while world.events:
            at, payload = world.events.pop(0)
            rec.now = at
            rec.send(payload | {"cwd": rec.root})

    for step in steps:
        kind = step[0]
        if kind == "new" or not world.sessions:
            s = world.start()
            live[s.sid] = True
        if kind == "turn":
            s = session(step[1])
            assert s is not None
            if not live.get(s.sid):
                world.start("resume", s.sid)
                live[s.sid] = True
            world.prompt(s)
            for model, used, agent in step[2]:
                world.respond(s, model, used, agent)
            if step[3] is not None:
                world.helper(s, *step[3])
            if step[4]:
                world.kill(s)
                live[s.sid] = False
            else:
                world.end_turn(s)
        elif kind == "resume":
            s = session(step[1])
            assert s is not None
            world.start("resume", s.sid)
            live[s.sid] = True
        elif kind == "fork":
            parent = session(step[1])
            assert parent is not None
            if any(r.agent is None for r in parent.responses):  # else nothing to resume
                s = world.fork(parent.sid)
                live[s.sid] = True
        send_events()
        if kind == "read":
            transcripts.catch_up(rec.conn, now=world.clock)
    send_events()


def expected(world: World) -> dict[str, dict[str, Any]]:
    """The rule, computed from the truth alone."""
    learned = {
        r.model
        for s in world.sessions.values()
        for r in s.responses
        if r.covered and r.model != MYSTERY
    } | {m for s in world.sessions.values() for _, m, _, done in s.helpers if done and m != MYSTERY}

    def estimate(model: str, used: dict[str, int]) -> float:
        return table_price(model, used) * (FACTOR.get(model, 1.0) if model in learned else 1.0)

    found = {}
    for s in world.sessions.values():
        cost = sum(
            claude_price(r.model, r.counts) if r.covered else estimate(r.model, r.counts)
            for r in s.responses
        )
        cost += sum(claude_price(m, used) for _, m, used, done in s.helpers if done)
        tokens = {
            c: sum(r.counts[c] for r in s.responses)
            + sum(used[c] for _, _, used, done in s.helpers if done)
            for c in COUNTS
        }
        found[s.sid] = {"cost": cost, "tokens": tokens, "messages": len(s.responses)}
    return found


def check(world: World, rec: Recorder) -> None:
    truth = expected(world)
    for sid, want in truth.items():
        report = costs.report(rec.conn, "session", sid)
        total = report["total"]
        got = total["cost_usd"] or 0.0
        assert got == pytest.approx(want["cost"], rel=1e-9, abs=1e-12), (sid, got, want)
        assert {c: total[c] for c in COUNTS} == want["tokens"], sid
        assert total["messages"] == want["messages"], sid
        mine = world.sessions[sid]
        mystery = any(r.model == MYSTERY for r in mine.responses) or any(
            m == MYSTERY and done for _, m, _, done in mine.helpers
        )
        assert total["estimated"] == mystery, sid
        assert (MYSTERY in report["estimated_models"]) == mystery, sid
    # every session at once (the rollups) says the same
    whole = costs.report(rec.conn, "session")["total"]["cost_usd"] or 0.0
    assert whole == pytest.approx(sum(t["cost"] for t in truth.values()), rel=1e-9, abs=1e-12)


@settings(
    max_examples=int(os.environ.get("COST_HISTORIES", "80")),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    steps=st.lists(action, min_size=3, max_size=14),
    old=st.booleans(),
    order=st.permutations(range(8)),
)
def test_every_history_is_costed_by_the_rule(
    steps: list[tuple[Any, ...]], old: bool, order: list[int]
) -> None:
    folder = Path(tempfile.mkdtemp(prefix="cost-history-"))
    saved = os.environ.get("CLAUDE_CONFIG_DIR")
    os.environ["CLAUDE_CONFIG_DIR"] = str(folder / "config")
    try:
        root = folder / "project"
        root.mkdir()
        world = World(folder / "config" / "projects" / "-p", old=old)
        rec = Recorder(root)
        try:
            play(world, rec, steps)
            sids = list(world.sessions)
            for i in order:  # each session read on its own, in any order
                if i < len(sids):
                    transcripts.catch_up(rec.conn, sids[i], now=world.clock)
            transcripts.catch_up(rec.conn, now=world.clock + 1)
            check(world, rec)
        finally:
            rec.close()
    finally:
        if saved is None:
            os.environ.pop("CLAUDE_CONFIG_DIR", None)
        else:
            os.environ["CLAUDE_CONFIG_DIR"] = saved
        shutil.rmtree(folder, ignore_errors=True)


# One response's counts in the histories written by hand: 200 of its 300 cache writes for an
# hour.
USED = {"input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 1000}
USED |= {"cache_creation_tokens": 300, "cache_1h_tokens": 200}


def by_hand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[World, Recorder]:
    """A project and a Claude Code config folder of the test's own, for a history by hand."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    root = tmp_path / "project"
    root.mkdir()
    return World(tmp_path / "config" / "projects" / "-p"), Recorder(root)


def test_a_fork_a_kill_and_a_resume_by_hand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's three cases in one project, with the figures named: the fork counts only
    what it made; the killed process's response, in no state, is priced (not lost); the
    resumed process's state is its own spend, not the session's."""
    world, rec = by_hand(tmp_path, monkeypatch)
    opus = "claude-opus-5-5"
    parent = world.start()
    world.respond(parent, opus, USED)
    world.kill(parent)  # killed before its first state
    world.start("resume", parent.sid)
    world.respond(parent, opus, USED)
    world.end_turn(parent)
    fork = world.fork(parent.sid)
    world.respond(fork, opus, USED)
    world.end_turn(fork)
    play(world, rec, [])
    transcripts.catch_up(rec.conn, now=world.clock)
    one = (100 * 4 + 20 * 20 + 1000 * 0.2 + 100 * 5 + 200 * 8) / 1e6  # 1-hour writes at $8
    assert prices.cost(prices.lookup(opus)[0], USED) == pytest.approx(one)  # type: ignore[arg-type]
    by_session = {r["session_id"]: r["cost_usd"] for r in costs.report(rec.conn, "session")["rows"]}
    assert by_session == {parent.sid: pytest.approx(2 * one), fork.sid: pytest.approx(one)}
    # Claude Code's own last figures: the resumed process's one response, and the fork's
    # cumulative two (its parent's state, then its own)
    states = [json.loads(line) for line in fork.path.read_text().splitlines()]
    assert [s["totalCostUSD"] for s in states if s["type"] == "cost-state"] == [
        pytest.approx(2 * one)
    ]
    rec.close()


def test_a_database_of_the_previous_version_is_put_right_when_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before this rule, a fork's copies were stored as its own responses. Migration 30 has
    every transcript read again from its start: the copies leave the fork, the costs follow
    the rule, and the line counts are not doubled."""
    world, rec = by_hand(tmp_path, monkeypatch)
    parent = world.start()
    world.prompt(parent)
    first = world.respond(parent, "claude-opus-5-5", USED)
    world.end_turn(parent)
    fork = world.fork(parent.sid)
    world.prompt(fork)
    world.respond(fork, "claude-opus-5-5", USED)
    world.end_turn(fork)
    play(world, rec, [])
    transcripts.catch_up(rec.conn, now=world.clock)
    truth = expected(world)
    # what the previous version stored: the parent's response again, as the fork's own
    rec.conn.execute(
        "INSERT INTO message_usage (session_id, agent_id, message_id, model, input_tokens,"
        " output_tokens, at, cost_usd, cost_source) VALUES (?1, ?1, ?2, ?3, 100, 20, ?4, 1.0,"
        " 'claude_code')",
        (fork.sid, first.message_id, first.model, first.at),
    )
    rec.conn.execute("DELETE FROM response_copies")
    lines = rec.rows("SELECT path, lines_read FROM transcript_files ORDER BY path")
    for _ in rec.conn.execute(
        dict(db.migrations())[30].split("-- Every transcript")[1].split("\n", 1)[1]
    ):
        pass  # the migration's own statement that has them read again
    transcripts.catch_up(rec.conn, now=world.clock + 1)
    for sid, want in truth.items():
        total = costs.report(rec.conn, "session", sid)["total"]
        assert total["cost_usd"] == pytest.approx(want["cost"]), sid
        assert total["messages"] == want["messages"], sid
    assert rec.rows("SELECT session_id, owner FROM response_copies") == [(fork.sid, parent.sid)]
    assert rec.rows("SELECT path, lines_read FROM transcript_files ORDER BY path") == lines
    rec.close()
