"""A session as OpenTelemetry spans, read from our tables: what `otel_export` sends.

A session is one trace. Its turns hang under the session span, a main-thread tool call under
its turn, a subagent under the Agent call that launched it, and the subagent's own tool calls
under the subagent. Failures (each step of an error ladder), compactions, failed approaches,
reverts and forks are span events. Tokens and cost come from the transcripts' rows
(message_usage), summed per turn, per subagent and for the session.

Every id is derived from the row it comes from (a hash of the session id for the trace, of
the kind and key for a span), never drawn at random: a span sent twice, after a crash
between sending and recording it, is the same span at the backend.

Names: the OpenTelemetry GenAI conventions where they fit (`gen_ai.operation.name`,
`gen_ai.tool.*`, `gen_ai.agent.*`, `gen_ai.usage.*`, `gen_ai.conversation.id`), Claude
Code's own names for its ids (`session.id`, `prompt.id`, `tool_use_id`), `claude_session.*`
for the rest. What someone typed or ran (prompts, commands, file paths, error text, task
descriptions, a subagent's status reason) is content: left out unless `content` is on, and
redacted when it is; a span's status then says only that it failed.

No OpenTelemetry import here: plain records, so the model is tested without the SDK.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field

import apsw

from ...core import hook_contract
from ...core.redact import redact

Value = str | int | float | bool
CONTENT_CHARS = 1000  # a content attribute is cut to this many characters, after redaction


@dataclass
class Event:
    name: str
    at: float  # Unix seconds
    attributes: dict[str, Value] = field(default_factory=dict)


@dataclass
class Span:
    key: str  # what it is made from: "session", "turn:3", "tool:toolu_...", "agent:a12..."
    trace_id: int  # 128 bits
    span_id: int  # 64 bits
    parent_id: int | None
    name: str
    start: float  # Unix seconds
    end: float
    attributes: dict[str, Value] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    error: str | None = None  # the span's status: None is OK, else ERROR with this description
    open: bool = False  # its end is not known yet: `end` is the session's last activity
    links: list[tuple[int, int]] = field(default_factory=list)  # (trace id, span id) elsewhere


def _float(value: object, default: float = 0.0) -> float:
    return float(value) if isinstance(value, int | float) else default


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) else 0


def trace_id(session_id: str) -> int:
    return _derived(f"trace\0{session_id}", 16)


def span_id(session_id: str, key: str) -> int:
    return _derived(f"span\0{session_id}\0{key}", 8)


def _derived(text: str, size: int) -> int:
    digest = hashlib.sha256(b"claude-session otel\0" + text.encode("utf-8", "replace")).digest()
    return int.from_bytes(digest[:size], "big") or 1  # an id of 0 is invalid


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_usd: float | None = None
    models: set[str] = field(default_factory=set)

    def add(self, row: tuple[object, ...]) -> None:
        model, inp, out, cache_read, cache_creation, cost = row
        self.input_tokens += _int(inp)
        self.output_tokens += _int(out)
        self.cache_read_tokens += _int(cache_read)
        self.cache_creation_tokens += _int(cache_creation)
        if isinstance(cost, int | float):
            self.cost_usd = (self.cost_usd or 0.0) + float(cost)
        if model:
            self.models.add(str(model))

    def attributes(self) -> dict[str, Value]:
        out: dict[str, Value] = {
            "gen_ai.usage.input_tokens": self.input_tokens,
            "gen_ai.usage.output_tokens": self.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": self.cache_read_tokens,
            "gen_ai.usage.cache_creation.input_tokens": self.cache_creation_tokens,
        }
        if self.cost_usd is not None:
            out["claude_session.cost_usd"] = round(self.cost_usd, 6)
        if len(self.models) == 1:
            out["gen_ai.request.model"] = next(iter(self.models))
        return out


class Builder:
    """The spans of one session. `content`: put what people typed or ran in (redacted)."""

    def __init__(self, conn: apsw.Connection, session_id: str, *, content: bool) -> None:
        self.conn = conn
        self.session_id = session_id
        self.content = content
        self.trace = trace_id(session_id)
        self.turn_trace: dict[object, int] = {}  # turn id -> the trace its spans are in
        self.agent_trace: dict[object, int] = {}  # subagent id -> the same

    def id_of(self, key: str) -> int:
        return span_id(self.session_id, key)

    def span(self, key: str, trace: int, parent: int, name: str, start: float, end: float) -> Span:
        """A span of this session, its id derived from `key`; it never ends before it starts."""
        return Span(key, trace, self.id_of(key), parent, name, start, max(start, end))

    def text(self, value: object) -> str | None:
        """Content, when content is on: redacted, then cut."""
        if not self.content or value is None or value == "":
            return None
        return redact(str(value))[:CONTENT_CHARS]

    def build(self) -> list[Span]:
        """Every span of the session known now, the session's own first. A span whose end
        is not known yet (a tool still running) ends where the session's last activity is."""
        row = self.conn.execute(
            "SELECT started_at, ended_at, last_activity_at, status, start_source, end_reason,"
            " model, cwd FROM sessions WHERE session_id = ?",
            (self.session_id,),
        ).fetchall()
        if not row:
            return []
        started, ended, last, status, source, reason, model, cwd = row[0]
        start = _float(started)
        end = max(start, _float(ended, _float(last, start)))
        session = Span(
            "session", self.trace, self.id_of("session"), None, "claude_session.session", start, end
        )
        session.attributes |= {
            "session.id": self.session_id,
            "gen_ai.conversation.id": self.session_id,
            "claude_session.session.status": str(status),
        }
        if source:
            session.attributes["claude_session.session.start_source"] = str(source)
        if reason:
            session.attributes["claude_session.session.end_reason"] = str(reason)
        if model:
            session.attributes["gen_ai.request.model"] = str(model)
        if (where := self.text(cwd)) is not None:
            session.attributes["claude_session.session.cwd"] = where
        self.claude_turns, self.claude_tools = self._claude_code_spans()
        self.hooks_by_tool, self.hooks_by_turn, hooks_elsewhere = self._hook_runs()
        turns = list(self._turns(session))
        session.links += [(t.trace_id, t.span_id) for t in turns if t.trace_id != self.trace]
        agents = list(self._agents(session))
        tools = list(self._tools(session))
        usage = Usage()
        for found in self.conn.execute(
            "SELECT model, input_tokens, output_tokens, cache_read_tokens,"
            " cache_creation_tokens, cost_usd FROM message_usage WHERE session_id = ?",
            (self.session_id,),
        ):
            usage.add(found)
        session.attributes |= usage.attributes()
        session.attributes["claude_session.turns"] = len(turns)
        session.attributes["claude_session.tool_calls"] = len(tools)
        session.attributes["claude_session.subagents"] = len(agents)
        session.events += list(self._session_events())
        session.events += hooks_elsewhere  # before any turn (SessionStart), or at SessionEnd
        session.events += [
            e for k, v in self.hooks_by_turn.items() if k not in self.turn_trace for e in v
        ]
        return [session, *turns, *agents, *tools]

    def _usage_by(self, column: str) -> dict[object, Usage]:
        out: dict[object, Usage] = {}
        for found in self.conn.execute(
            f"SELECT {column}, model, input_tokens, output_tokens, cache_read_tokens,"
            " cache_creation_tokens, cost_usd FROM message_usage WHERE session_id = ?",
            (self.session_id,),
        ):
            out.setdefault(found[0], Usage()).add(found[1:])
        return out

    def _claude_code_spans(
        self,
    ) -> tuple[dict[object, tuple[int, int]], dict[object, tuple[int, int]]]:
        """Claude Code's own active span (trace id, span id) when it ran a turn's
        UserPromptSubmit hook (its `claude_code.interaction`) and a tool call's PreToolUse hook
        (its `tool` span): from the TRACEPARENT its command hooks see with its traces on."""
        turns: dict[object, tuple[int, int]] = {}
        for turn_id, parent in self.conn.execute(
            "SELECT t.id, e.traceparent FROM turns t JOIN events e ON e.session_id = t.session_id"
            " AND e.prompt_id = t.prompt_id AND e.hook_event_name = 'UserPromptSubmit'"
            " WHERE t.session_id = ? AND e.traceparent IS NOT NULL",
            (self.session_id,),
        ):
            turns.setdefault(turn_id, _context(str(parent)))
        tools: dict[object, tuple[int, int]] = {}
        for tool_use_id, parent in self.conn.execute(
            "SELECT c.tool_use_id, e.traceparent FROM tool_calls c JOIN events e"
            " ON e.id = c.pre_event_id WHERE c.session_id = ? AND e.traceparent IS NOT NULL",
            (self.session_id,),
        ):
            tools[tool_use_id] = _context(str(parent))
        return turns, tools

    def _turns(self, session: Span) -> Iterator[Span]:
        usage = self._usage_by("turn_id")
        for turn_id, number, prompt_id, prompt, started, ended, status in self.conn.execute(
            "SELECT id, turn_no, prompt_id, prompt, started_at, ended_at, status FROM turns"
            " WHERE session_id = ? ORDER BY turn_no",
            (self.session_id,),
        ):
            trace, parent = self.claude_turns.get(turn_id, (self.trace, session.span_id))
            self.turn_trace[turn_id] = trace
            start = _float(started)
            end = _float(ended, session.end)
            span = self.span(f"turn:{number}", trace, parent, f"turn {number}", start, end)
            span.attributes |= {
                "session.id": self.session_id,
                "gen_ai.operation.name": "invoke_agent",
                "claude_session.turn.number": _int(number),
                "claude_session.turn.status": str(status),
            }
            span.open = ended is None
            if trace != self.trace:  # in Claude Code's trace, under its interaction span
                span.attributes["claude_session.parent"] = "claude_code"
                span.links.append((self.trace, session.span_id))
            if prompt_id:
                span.attributes["prompt.id"] = str(prompt_id)
            if (text := self.text(prompt)) is not None:
                span.attributes["claude_session.turn.prompt"] = text
            if turn_id in usage:
                span.attributes |= usage[turn_id].attributes()
            span.events += self.hooks_by_turn.get(turn_id, [])
            yield span

    def _turn_key(self) -> dict[object, str]:
        rows = self.conn.execute(
            "SELECT id, turn_no FROM turns WHERE session_id = ?", (self.session_id,)
        )
        return {turn_id: f"turn:{number}" for turn_id, number in rows}

    def _agents(self, session: Span) -> Iterator[Span]:
        usage = self._usage_by("agent_id")
        launched_in: dict[object, object] = {
            tool_use_id: turn_id
            for tool_use_id, turn_id in self.conn.execute(
                "SELECT tool_use_id, turn_id FROM tool_calls WHERE session_id = ?",
                (self.session_id,),
            )
        }
        for (
            agent_id,
            agent_type,
            description,
            task,
            tool_use_id,
            status,
            reason,
            started,
            ended,
            tool_uses,
        ) in self.conn.execute(
            "SELECT id, agent_type, description, task_description, tool_use_id, status,"
            " status_reason, started_at, ended_at, tool_uses FROM agent_registry"
            " WHERE session_id = ? AND is_main = 0 AND is_internal = 0 ORDER BY started_at, id",
            (self.session_id,),
        ):
            parent = self.id_of(f"tool:{tool_use_id}") if tool_use_id else session.span_id
            start = _float(started, session.start)
            trace = self.turn_trace.get(launched_in.get(tool_use_id), self.trace)
            self.agent_trace[agent_id] = trace
            name = f"invoke_agent {agent_type or 'subagent'}"
            span = self.span(
                f"agent:{agent_id}", trace, parent, name, start, _float(ended, session.end)
            )
            span.attributes |= {
                "session.id": self.session_id,
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.id": str(agent_id),
                "gen_ai.agent.name": str(agent_type or "subagent"),
                "claude_session.agent.status": str(status),
                "claude_session.agent.tool_uses": _int(tool_uses),
            }
            span.open = ended is None
            if tool_use_id:
                span.attributes["tool_use_id"] = str(tool_use_id)
            said = self.text(reason) if status != "completed" else None  # its error text: content
            if said is not None:
                span.attributes["claude_session.agent.status_reason"] = said[:200]
            if (text := self.text(description)) is not None:
                span.attributes["gen_ai.agent.description"] = text
            if (text := self.text(task)) is not None:
                span.attributes["claude_session.agent.task"] = text
            if status in ("failed", "aborted_stale"):
                span.error = f"{status}: {(said or '')[:200]}".rstrip(": ")
            if agent_id in usage:
                span.attributes |= usage[agent_id].attributes()
            yield span

    def _tools(self, session: Span) -> Iterator[Span]:
        turns = self._turn_key()
        errors = self._errors()
        for (
            tool_use_id,
            turn_id,
            agent_id,
            tool_name,
            summary,
            status,
            started,
            ended,
            duration_ms,
        ) in self.conn.execute(
            "SELECT tool_use_id, turn_id, agent_id, tool_name, input_summary, status,"
            " started_at, ended_at, duration_ms FROM tool_calls WHERE session_id = ?"
            " ORDER BY coalesce(started_at, ended_at), tool_use_id",
            (self.session_id,),
        ):
            if agent_id != self.session_id:
                parent = self.id_of(f"agent:{agent_id}")
                trace = self.agent_trace.get(agent_id, self.trace)
            elif turn_id in turns:
                parent = self.id_of(turns[turn_id])
                trace = self.turn_trace.get(turn_id, self.trace)
            else:
                parent, trace = session.span_id, self.trace
            under_claude = self.claude_tools.get(tool_use_id)
            if under_claude is not None and under_claude[0] == trace:
                parent = under_claude[1]  # under Claude Code's own span of the tool call
            end = _float(ended, session.end)
            start = _float(started, end - _float(duration_ms) / 1000)
            name = f"execute_tool {tool_name or 'tool'}"
            span = self.span(f"tool:{tool_use_id}", trace, parent, name, start, end)
            span.attributes |= {
                "session.id": self.session_id,
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": str(tool_name or ""),
                "gen_ai.tool.call.id": str(tool_use_id),
                "tool_use_id": str(tool_use_id),
                "claude_session.agent.id": str(agent_id),
                "claude_session.tool.status": str(status),
            }
            span.open = ended is None
            if isinstance(duration_ms, int | float):
                span.attributes["claude_session.tool.duration_ms"] = float(duration_ms)
            if (text := self.text(summary)) is not None:
                span.attributes["claude_session.tool.input"] = text
            if status == "failed":
                span.error = "the tool call failed"
            span.events += errors.get(tool_use_id, [])
            span.events += self.hooks_by_tool.get(tool_use_id, [])
            yield span

    def _hook_runs(
        self,
    ) -> tuple[dict[object, list[Event]], dict[object, list[Event]], list[Event]]:
        """Each hook run Claude Code timed (hook_runs), as an event at its end with its
        duration: on its tool call's span (a tool's hooks), else its turn's (by promptId, else
        the turn it came in), else the session's. The command is content."""
        by_tool: dict[object, list[Event]] = {}
        by_turn: dict[object, list[Event]] = {}
        rest: list[Event] = []
        tools = {
            r[0]
            for r in self.conn.execute(
                "SELECT tool_use_id FROM tool_calls WHERE session_id = ?", (self.session_id,)
            )
        }
        for tool_use_id, turn_id, event, name, command, ours, outcome, ms, at in self.conn.execute(
            "SELECT h.tool_use_id, coalesce((SELECT t.id FROM turns t WHERE t.session_id ="
            " h.session_id AND t.prompt_id = h.prompt_id), (SELECT t.id FROM turns t WHERE"
            " t.session_id = h.session_id AND t.started_at <= h.at ORDER BY t.started_at DESC"
            " LIMIT 1)), h.event, h.hook_name, h.command, h.ours, h.outcome, h.duration_ms, h.at"
            f" FROM hook_runs h WHERE h.session_id = ? AND {hook_contract.taken_sql('h')}"
            " ORDER BY h.at, h.path, h.line_end, h.item",
            (self.session_id,),
        ):
            found = Event("claude_session.hook_run", _float(at))
            found.attributes |= {
                "claude_session.hook.event": str(event),
                "claude_session.hook.ours": bool(ours),
                "claude_session.hook.outcome": str(outcome),
            }
            if isinstance(ms, int | float):
                found.attributes["claude_session.hook.duration_ms"] = float(ms)
            if name:
                found.attributes["claude_session.hook.name"] = str(name)
            if (text := self.text(command)) is not None:
                found.attributes["claude_session.hook.command"] = text
            if tool_use_id in tools:
                by_tool.setdefault(tool_use_id, []).append(found)
            elif turn_id is not None:
                by_turn.setdefault(turn_id, []).append(found)
            else:
                rest.append(found)
        return by_tool, by_turn, rest

    def _errors(self) -> dict[object, list[Event]]:
        """Each failure as an event of its tool call: its category, its step on the ladder of
        failures of one thing, and how that ladder ended."""
        out: dict[object, list[Event]] = {}
        for (
            tool_use_id,
            category,
            message,
            attempt,
            resolution,
            interrupted,
            at,
            exit_code,
            ladder,
        ) in self.conn.execute(
            "SELECT tool_use_id, error_category, error_message, attempt_number, resolution,"
            " interrupted, occurred_at, exit_code, ladder_key FROM error_log"
            " WHERE session_id = ? ORDER BY id",
            (self.session_id,),
        ):
            event = Event("claude_session.failure", _float(at))
            event.attributes |= {
                "error.type": str(category),
                "claude_session.failure.attempt": _int(attempt),
                "claude_session.failure.resolution": str(resolution or "open"),
                "claude_session.failure.interrupted": bool(interrupted),
            }
            if isinstance(exit_code, int):
                event.attributes["claude_session.failure.exit_code"] = exit_code
            if (text := self.text(message)) is not None:
                event.attributes["claude_session.failure.message"] = text
            if (text := self.text(ladder)) is not None:
                event.attributes["claude_session.failure.ladder"] = text
            out.setdefault(tool_use_id, []).append(event)
        return out

    def _session_events(self) -> Iterator[Event]:
        for kind, trigger, at in self.conn.execute(
            "SELECT snapshot_type, trigger, created_at FROM context_snapshots"
            " WHERE session_id = ? AND snapshot_type IN ('pre_compact', 'post_compact')"
            " ORDER BY id",
            (self.session_id,),
        ):
            event = Event("claude_session.compaction", _float(at))
            event.attributes["claude_session.compaction.phase"] = str(kind)
            if trigger:
                event.attributes["claude_session.compaction.trigger"] = str(trigger)
            yield event
        for approach, reason, path, at in self.conn.execute(
            "SELECT approach, reason_failed, file_path, created_at FROM failed_paths"
            " WHERE session_id = ? ORDER BY id",
            (self.session_id,),
        ):
            event = Event("claude_session.failed_approach", _float(at))
            for name, value in (("approach", approach), ("reason", reason), ("file", path)):
                if (text := self.text(value)) is not None:
                    event.attributes[f"claude_session.failed_approach.{name}"] = text
            yield event
        for name, frame_no, at, detail in self.conn.execute(
            "SELECT name, frame_no, at, detail FROM timeline_events WHERE session_id = ?"
            " AND name IN ('SessionForked', 'ReplayStarted', 'RevertStarted', 'RevertFinished')"
            " ORDER BY id",
            (self.session_id,),
        ):
            event = Event(f"claude_session.{_snake(str(name))}", _float(at))
            if isinstance(frame_no, int):
                event.attributes["claude_session.frame"] = frame_no
            try:
                said = json.loads(str(detail))
            except ValueError:
                said = {}
            for key in ("status", "files", "undo"):
                value = said.get(key) if isinstance(said, dict) else None
                if isinstance(value, str | int | float | bool):
                    event.attributes[f"claude_session.{key}"] = value
            yield event


def _context(traceparent: str) -> tuple[int, int]:
    """(trace id, span id) of a W3C traceparent (checked when it was stored)."""
    _, trace, span, _ = traceparent.split("-")
    return int(trace, 16), int(span, 16)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def session_spans(conn: apsw.Connection, session_id: str, *, content: bool) -> list[Span]:
    """Every span of the session as it stands now (see Builder.build)."""
    return Builder(conn, session_id, content=content).build()
