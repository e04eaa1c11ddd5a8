"""A stand-in for Claude Code's cost bookkeeping, for the generated cost histories: it writes
transcripts the way the real CLI does (../shared/reference, "Facts added 2026-11-28"; seen with
2.1.332 against a scripted API) and keeps the truth beside them.

- Each response is an `assistant` line with its message id, request id, model and usage (cache
  writes split by time to live); a subagent's go to its own file.
- Helper requests (the compaction summariser) are on no line: only in the cost-state.
- A cost-state line at each turn's end is cumulative: what the process started from (the last
  state in the session's transcript, or for a fork its parent's) plus what it spent. A process
  killed in a turn writes none for it.
- A fork's transcript starts with its parent's response lines (cost-states aside), their ids
  kept, `requestSessionId` naming the parent (2.1.332; `old=True`: without it, as older ones).
- Claude Code's prices are `claude_price`: its own for a model it knows, the default tier's for
  one it does not (`costBasis: unknown`, hasUnknownModelCost).

It imports nothing of claude-session's: the prices are written here, as the facts give them
(USD per million tokens: input, output, cache read, 5-minute and 1-hour cache writes), and
Claude Code's may differ from our table's (FACTOR).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

T0 = 1_800_000_000.0
MYSTERY = "claude-mystery-9"  # a model neither Claude Code nor our table knows
# Claude Code's price as a multiple of our table's: a model it prices otherwise than our table
# (its figures win, and teach us the price).
FACTOR = {"claude-opus-5-5": 1.0, "claude-haiku-5-5": 1.0, "claude-sonnet-4-5": 0.9}
MODELS = (*FACTOR, MYSTERY)
COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens")


# Our table's prices for these models (claude_session/core/prices.json); the default tier is
# claude-opus-5-5's, as Claude Code prices a model it does not know.
TABLE = {
    "claude-opus-5-5": (4.0, 20.0, 0.2, 5.0, 8.0),
    "claude-haiku-5-5": (0.1, 0.5, 0.01, 0.125, 0.2),
    "claude-sonnet-4-5": (3.0, 15.0, 0.3, 3.75, 6.0),
}
DEFAULT = "claude-opus-5-5"


def table_price(model: str, counts: dict[str, int]) -> float:
    """Our table's price for a response (the default tier's for a model it lacks)."""
    rates = TABLE.get(model, TABLE[DEFAULT])
    hour = counts["cache_1h_tokens"]
    amounts = (
        counts["input_tokens"],
        counts["output_tokens"],
        counts["cache_read_tokens"],
        counts["cache_creation_tokens"] - hour,
        hour,
    )
    return sum(n * r for n, r in zip(amounts, rates, strict=True)) / 1e6


def claude_price(model: str, counts: dict[str, int]) -> float:
    """What Claude Code bills: its price for the model, its default tier's for one unknown."""
    if model not in TABLE:
        return claude_price(DEFAULT, counts)
    return table_price(model, counts) * FACTOR[model]


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass
class Response:
    session: str  # the session that made it
    process: int  # its process (index in the session's)
    message_id: str
    request_id: str
    model: str
    counts: dict[str, int]
    at: float
    agent: str | None = None
    covered: bool = False  # a later cost-state of its process counts it

    def line(self, session: str, old: bool) -> dict[str, Any]:
        hour = self.counts["cache_1h_tokens"]
        written = self.counts["cache_creation_tokens"]
        entry: dict[str, Any] = {
            "parentUuid": None,
            "isSidechain": self.agent is not None,
            "type": "assistant",
            "uuid": f"a-{self.message_id}",
            "timestamp": stamp(self.at),
            "sessionId": session,
            "requestId": self.request_id,
            "message": {
                "id": self.message_id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [{"type": "text", "text": "ok"}],
                "usage": {
                    "input_tokens": self.counts["input_tokens"],
                    "output_tokens": self.counts["output_tokens"],
                    "cache_read_input_tokens": self.counts["cache_read_tokens"],
                    "cache_creation_input_tokens": written,
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": written - hour,
                        "ephemeral_1h_input_tokens": hour,
                    },
                },
            },
        }
        if self.agent is not None:
            entry["agentId"] = self.agent
        if session != self.session and not old:
            entry["requestSessionId"] = self.session
        return entry


@dataclass
class State:
    """Claude Code's cumulative figures: per model its tokens and cost."""

    models: dict[str, dict[str, float]] = field(default_factory=dict)

    def add(self, model: str, counts: dict[str, int]) -> None:
        entry = self.models.setdefault(
            model, {c: 0 for c in (*COUNTS, "cache_1h_tokens")} | {"cost": 0.0}
        )
        for c in (*COUNTS, "cache_1h_tokens"):
            entry[c] += counts[c]
        entry["cost"] += claude_price(model, counts)

    def copy(self) -> State:
        return State({m: dict(e) for m, e in self.models.items()})

    def line(self, session: str) -> dict[str, Any]:
        usage = {
            m: {
                "inputTokens": int(e["input_tokens"]),
                "outputTokens": int(e["output_tokens"]),
                "cacheReadInputTokens": int(e["cache_read_tokens"]),
                "cacheCreationInputTokens": int(e["cache_creation_tokens"]),
                "cacheCreationEphemeral5mInputTokens": int(
                    e["cache_creation_tokens"] - e["cache_1h_tokens"]
                ),
                "cacheCreationEphemeral1hInputTokens": int(e["cache_1h_tokens"]),
                "thinkingTokens": 0,
                "costUSD": round(e["cost"], 12),
                "costBasis": "unknown" if m == MYSTERY else "list",
            }
            for m, e in self.models.items()
        }
        return {
            "type": "cost-state",
            "sessionId": session,
            "totalCostUSD": round(sum(e["cost"] for e in self.models.values()), 12),
            "modelUsage": usage,
            "hasUnknownModelCost": MYSTERY in self.models,
        }


@dataclass
class Session:
    sid: str
    path: Path
    parent: str | None = None
    processes: list[float] = field(default_factory=list)  # start times
    responses: list[Response] = field(default_factory=list)  # its own
    helpers: list[tuple[int, str, dict[str, int], bool]] = field(default_factory=list)
    state: State | None = None  # the last state written to its transcript
    running: State | None = None  # the live process's count, from its start
    pending: list[Response] = field(default_factory=list)  # this turn's, not covered yet
    pending_helpers: list[int] = field(default_factory=list)


class World:
    """Sessions of one project, as Claude Code would leave them, and the truth."""

    def __init__(self, folder: Path, old: bool = False) -> None:
        self.folder = folder
        self.old = old
        self.clock = T0
        self.sessions: dict[str, Session] = {}
        self.events: list[tuple[float, dict[str, Any]]] = []  # hooks: (time, payload)
        self._ids = itertools.count(1)

    def tick(self) -> float:
        self.clock += 1.0
        return self.clock

    def _write(self, path: Path, entries: list[dict[str, Any]]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as f:
            for entry in entries:
                f.write(json.dumps(entry, separators=(",", ":")) + "\n")

    def start(self, source: str = "startup", sid: str | None = None) -> Session:
        """A new Claude Code process: a new session, or a resume of `sid`."""
        if sid is None:
            sid = f"5e55{next(self._ids):04d}-0000-4000-8000-000000000000"
            self.sessions[sid] = Session(sid, self.folder / f"{sid}.jsonl")
        session = self.sessions[sid]
        at = self.tick()
        session.processes.append(at)
        session.running = session.state.copy() if session.state else State()
        session.pending, session.pending_helpers = [], []
        self.events.append(
            (
                at,
                {
                    "session_id": sid,
                    "hook_event_name": "SessionStart",
                    "source": source,
                    "transcript_path": str(session.path),
                },
            )
        )
        return session

    def fork(self, parent: str) -> Session:
        """`claude --resume PARENT --fork-session`: its lines copied (not its cost-states),
        its last state the new process's start. A later resume of the fork starts from the
        fork's own transcript's last state."""
        session = self.start("fork")
        source = self.sessions[parent]
        session.parent = parent
        session.running = source.state.copy() if source.state else State()
        copied = [r.line(session.sid, self.old) for r in source.responses if r.agent is None]
        self._write(session.path, copied)
        return session

    def prompt(self, session: Session) -> None:
        """A turn's prompt: a `user` line in the main transcript, as every turn starts."""
        at = self.tick()
        line = {
            "type": "user",
            "uuid": f"u-{at}",
            "timestamp": stamp(at),
            "sessionId": session.sid,
            "promptId": f"p-{at}",
            "message": {"role": "user", "content": "go on"},
        }
        self._write(session.path, [line])

    def respond(
        self, session: Session, model: str, counts: dict[str, int], agent: str | None = None
    ) -> Response:
        n = next(self._ids)
        response = Response(
            session.sid,
            len(session.processes) - 1,
            f"msg_{n:06d}",
            f"req_{n:06d}",
            model,
            counts,
            self.tick(),
            agent,
        )
        path = (
            session.path
            if agent is None
            else session.path.parent / session.sid / "subagents" / f"agent-{agent}.jsonl"
        )
        self._write(path, [response.line(session.sid, self.old)])
        session.responses.append(response)
        session.pending.append(response)
        assert session.running is not None
        session.running.add(model, counts)
        return response

    def helper(self, session: Session, model: str, counts: dict[str, int]) -> None:
        """A request on no line (the compaction summariser): in the state only."""
        assert session.running is not None
        session.running.add(model, counts)
        session.helpers.append((len(session.processes) - 1, model, counts, False))
        session.pending_helpers.append(len(session.helpers) - 1)

    def end_turn(self, session: Session) -> None:
        """The turn's cost-state, cumulative."""
        assert session.running is not None
        self._write(session.path, [session.running.line(session.sid)])
        session.state = session.running.copy()
        for r in session.pending:
            r.covered = True
        for i in session.pending_helpers:
            process, model, counts, _ = session.helpers[i]
            session.helpers[i] = (process, model, counts, True)
        session.pending, session.pending_helpers = [], []

    def kill(self, session: Session) -> None:
        """SIGKILL: this turn's responses are in the transcript, in no state."""
        session.running = None
        session.pending, session.pending_helpers = [], []
