"""The pure staleness rules, driven by controllable wall and monotonic clocks."""

from __future__ import annotations

from claude_session.core.staleness import Agent, Observations, Session, sweep

MIN = 60.0
STALE, IDLE = 10 * MIN, 60 * MIN
T0, M0 = 1_800_000_000.0, 5_000.0


def run(
    agents: list[Agent], sessions: list[Session], now: float, mono: float, seen: Observations
) -> list[tuple[str, str, str]]:
    found = sweep(agents, {s.session_id: s for s in sessions}, now, mono, seen, STALE, IDLE)
    return [(v.kind, v.target, v.reason) for v in found]


def test_silent_agent_in_a_live_session_goes_stale_after_the_grace_period() -> None:
    seen = Observations()
    agent = Agent("a1", "s1", last_seen_at=T0)
    session = Session("s1", "active", last_activity_at=T0 + 11 * MIN)  # main keeps working
    assert run([agent], [session], T0 + MIN, M0, seen) == []
    assert run([agent], [session], T0 + 9 * MIN, M0 + 8 * MIN, seen) == []
    verdicts = run([agent], [session], T0 + 12 * MIN, M0 + 11 * MIN, seen)
    assert verdicts == [("agent", "a1", verdicts[0][2])]
    assert verdicts[0][2].startswith("silent for 12 min (last seen ")


def test_a_forward_clock_jump_does_not_make_everything_stale() -> None:
    seen = Observations()
    agents = [Agent(f"a{i}", "s1", last_seen_at=T0) for i in range(5)]
    session = Session("s1", "active", last_activity_at=T0)
    assert run(agents, [session], T0 + 10, M0, seen) == []
    # the wall clock leaps 3 hours (NTP, a laptop waking), the monotonic clock 2 seconds
    assert run(agents, [session], T0 + 3 * 3600, M0 + 2, seen) == []
    # only once the silence has also been observed for the grace period
    late = run(agents, [session], T0 + 3 * 3600 + 11 * MIN, M0 + 11 * MIN, seen)
    assert {target for kind, target, _ in late if kind == "agent"} == {f"a{i}" for i in range(5)}


def test_a_backward_jump_or_fresh_activity_keeps_agents_alive() -> None:
    seen = Observations()
    session = Session("s1", "active", last_activity_at=T0)
    agent = Agent("a1", "s1", last_seen_at=T0)
    assert run([agent], [session], T0 - 3600, M0, seen) == []
    assert run([agent], [session], T0 + 30 * MIN, M0 + 5 * MIN, seen) == []
    spoke = Agent("a1", "s1", last_seen_at=T0 + 30 * MIN)  # a new last-seen value: a new clock
    assert run([spoke], [session], T0 + 36 * MIN, M0 + 12 * MIN, seen) == []


def test_ended_session_closes_its_agents_at_once_with_the_reason() -> None:
    seen = Observations()
    ended = Session("s1", "ended", last_activity_at=T0, end_reason="prompt_input_exit")
    verdicts = run([Agent("a1", "s1", T0)], [ended], T0 + 5, M0, seen)
    assert verdicts == [
        ("agent", "a1", "session ended (prompt_input_exit) while the agent was running")
    ]
    assert run([Agent("a2", "missing", T0)], [], T0 + 5, M0, seen)[0][2].startswith("session ended")


def test_idle_session_is_gone_and_only_its_own_agents_are_closed() -> None:
    seen = Observations()
    quiet = Session("s1", "active", last_activity_at=T0)
    busy = Session("s2", "active", last_activity_at=T0 + 61 * MIN)
    agents = [Agent("a1", "s1", T0), Agent("b1", "s2", T0 + 61 * MIN)]
    assert run(agents, [quiet, busy], T0, M0, seen) == []
    verdicts = run(agents, [quiet, busy], T0 + 61 * MIN, M0 + 61 * MIN, seen)
    assert [(kind, target) for kind, target, _ in verdicts] == [("session", "s1")]
    assert "no event for 61 min" in verdicts[0][2]


def test_main_threads_are_left_to_their_sessions() -> None:
    seen = Observations()
    session = Session("s1", "active", last_activity_at=T0 + 20 * MIN)
    main = Agent("s1", "s1", T0, is_main=True)
    assert run([main], [session], T0 + 20 * MIN, M0, seen) == []
    assert run([main], [session], T0 + 40 * MIN, M0 + 40 * MIN, seen) == []


def test_observations_stay_bounded() -> None:
    seen = Observations()
    session = Session("s1", "active", last_activity_at=T0)
    for i in range(100):
        run([Agent("a1", "s1", T0 + i)], [session], T0 + i, M0 + i, seen)
    assert len(seen.first_seen) == 2  # the agent's current value and the session's
