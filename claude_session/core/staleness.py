"""Which agents went silent and which sessions are over: a pure function of rows and clocks.

Two clocks, so a wall-clock jump cannot make everything stale at once: silence is measured on
the wall clock (timestamps come from hooks), and must also have been *observed* for as long on
the monotonic clock, which counts from the moment this process first saw the current
last-seen value. After a forward jump (NTP, a laptop waking up) the wall silence is huge but the
observed one starts at zero, so an agent gets the full grace period to speak again.

Silence takes minutes, so it is the fallback: a session whose Claude Code process is recorded
(core/processes.py) also ends as soon as the daemon has seen that process gone (`exited`), with
its running agents.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .readings import CLAUDE_EXITED  # the reason readers look for, written here


@dataclass(frozen=True)
class Agent:
    agent_id: str
    session_id: str
    last_seen_at: float
    is_main: bool = False


@dataclass(frozen=True)
class Session:
    session_id: str
    status: str  # 'active' or 'ended'
    last_activity_at: float
    end_reason: str | None = None


@dataclass(frozen=True)
class Verdict:
    kind: str  # 'agent' (-> aborted_stale) or 'session' (-> ended, agents closed out)
    target: str
    session_id: str
    reason: str


@dataclass
class Observations:
    """Monotonic time at which each (what, id, last value) was first seen; kept between sweeps."""

    first_seen: dict[tuple[str, str, float], float] = field(default_factory=dict)

    def silence(self, what: str, ident: str, last: float, now_mono: float) -> float:
        return now_mono - self.first_seen.setdefault((what, ident, last), now_mono)

    def keep_only(self, keys: set[tuple[str, str, float]]) -> None:
        for key in set(self.first_seen) - keys:
            del self.first_seen[key]


def sweep(
    agents: list[Agent],
    sessions: dict[str, Session],
    now: float,
    now_mono: float,
    seen: Observations,
    stale_after: float,
    session_idle: float,
    exited: set[str] | frozenset[str] = frozenset(),
) -> list[Verdict]:
    """Verdicts for this sweep. `stale_after` and `session_idle` are in seconds; `exited`: the
    sessions whose Claude Code process the daemon saw gone (each ends, its agents with it).

    An agent only goes stale for its own session's reasons: it is silent while its session is
    live, or its session ended or is gone. Another session's state never touches it.
    """
    verdicts: list[Verdict] = []
    live_keys: set[tuple[str, str, float]] = set()
    gone: dict[str, str] = {}
    for session in sessions.values():
        if session.status != "active":
            continue
        if session.session_id in exited:
            gone[session.session_id] = CLAUDE_EXITED
            verdicts.append(
                Verdict("session", session.session_id, session.session_id, CLAUDE_EXITED)
            )
            continue
        key = ("session", session.session_id, session.last_activity_at)
        live_keys.add(key)
        wall = now - session.last_activity_at
        observed = seen.silence(*key, now_mono)
        if min(wall, observed) >= session_idle:
            reason = f"session gone: no event for {wall / 60:.0f} min"
            gone[session.session_id] = reason
            verdicts.append(Verdict("session", session.session_id, session.session_id, reason))
    for agent in agents:
        owner = sessions.get(agent.session_id)
        if agent.is_main:
            continue  # the main thread lives and ends with its session
        if owner is None or owner.status == "ended":
            why = owner.end_reason if owner and owner.end_reason else "no SessionEnd"
            reason = f"session ended ({why}) while the agent was running"
            verdicts.append(Verdict("agent", agent.agent_id, agent.session_id, reason))
            continue
        if agent.session_id in gone:
            continue  # closed out with its session
        key = ("agent", agent.agent_id, agent.last_seen_at)
        live_keys.add(key)
        wall = now - agent.last_seen_at
        observed = seen.silence(*key, now_mono)
        if min(wall, observed) >= stale_after:
            last = time.strftime("%H:%M:%S UTC", time.gmtime(agent.last_seen_at))
            reason = f"silent for {wall / 60:.0f} min (last seen {last}) while its session was live"
            verdicts.append(Verdict("agent", agent.agent_id, agent.session_id, reason))
    seen.keep_only(live_keys)
    return verdicts
