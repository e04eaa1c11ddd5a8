"""Generated histories: a hypothesis state machine plays sessions, subagents, edits, runs,
compactions, resumes and kills through the hook entry every transport calls
(`runtime.hookrt.process`), keeps the reference model (tests/reference_model.py) in step, and
checks every statement each answer puts before the model against it (tests/statements.py).

Three hooks in four are answered as the daemon answers a relayed hook (its kept connections),
the fourth as a hook process on its own. Claude Code is stood in for by what it sends: the
payloads of the hooks contract, a transcript with the lines claude-session reads back (the
SessionStart attachments, compaction boundaries, prompts), and a real process per session
(`sleep`), killed with SIGKILL for a crash, whose pid the hooks record as Claude Code's.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import signal
import subprocess
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from reference_model import (
    CHECK,
    COMMANDS,
    FILES,
    MAIN,
    SCRIPT,
    Agent,
    Change,
    Run,
    Session,
    Step,
    World,
)
from statements import Reading, Verdict, check_answer, check_report, check_status, read_text
from test_say_once import attachment  # the SessionStart line, as Claude Code writes it

from claude_session.core import db, fork_state, statusline
from claude_session.core.paths import db_path
from claude_session.runtime import hookrt
from claude_session.runtime.connections import Connections
from claude_session.runtime.request import Request
from claude_session.services import status_report

ERRORS = {
    CHECK: "Exit code 1\nFAILED tests/test_app.py::test_app - AssertionError: assert 1 == 2\n"
    "1 failed in 0.02s",
    SCRIPT: 'Exit code 1\nTraceback (most recent call last):\n  File "{root}/migrate.py", line 3,'
    ' in <module>\n    raise ValueError("bad row 7")\nValueError: bad row 7',
}
TASKS = (
    "fix the failing test",
    "make the migration pass",
    "tidy the notes",
    "why does migrate.py fail",
)


@dataclass
class Log:
    """What every history checked, for the test's report."""

    histories: int = 0
    sessions: int = 0
    statements: int = 0
    chars: int = 0
    chars_by_kind: Counter[str] = field(default_factory=Counter)  # event (SessionStart source)
    false: list[Verdict] = field(default_factory=list)


LOG = Log()


def claude_process(pid: int) -> tuple[int, int, str]:
    with open(f"/proc/{pid}/stat", "rb") as f:
        ticks = int(f.read().rpartition(b")")[2].split()[19])
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return pid, ticks, f"{boot}/{os.readlink('/proc/self/ns/pid')}"


class Histories(RuleBasedStateMachine):
    """One project, its sessions and agents; each rule is one thing Claude Code does."""

    base: Path  # set by the test: a folder for the histories' projects
    collect = False  # True: false statements are counted, not raised (the report of the note)
    max_sessions = 4
    max_agents = 6

    def __init__(self) -> None:
        super().__init__()
        self.world = World()
        self.clock = self.world.now
        self.root = self.base / f"p{uuid.uuid4().hex[:10]}"
        self.root.mkdir()
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.transcripts = self.root.parent / f"{self.root.name}-transcripts"
        self.transcripts.mkdir()
        self.ids = itertools.count(1)
        self.launches: dict[str, tuple[str, dict[str, Any]]] = {}  # agent -> its Agent call
        self.acted: str | None = None  # the session of the last hook sent
        self.source = ""  # the last SessionStart's source
        self.past: dict[float, World] = {}  # the world after each step, by its time
        self.turns = itertools.count()
        self.connections = Connections(str(self.root))
        self.scratch = apsw.Connection(":memory:")
        self.git_init()
        LOG.histories += 1

    # --- the stand-in for Claude Code ----------------------------------------------------

    def git_init(self) -> None:
        for name in FILES:
            (self.root / name).write_text(f"{name} as committed\n")
        env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        # the model's clock, not the real one: the same commit (and hash, in the Git section)
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{int(self.world.now)} +0000"
        for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
            subprocess.run(
                ["git", "-c", "user.name=u", "-c", "user.email=u@e", *args],
                cwd=self.root,
                env=env,
                check=True,
                capture_output=True,
            )

    def tick(self, seconds: float) -> None:
        self.world.now += seconds

    def send(self, payload: dict[str, Any], session: str) -> dict[str, Any] | None:
        """One hook run at the model's clock; its answer as Claude Code reads it."""
        name = payload["hook_event_name"]
        self.source = str(payload.get("source") or "")
        payload = {
            "session_id": session,
            "transcript_path": str(self.transcripts / f"{session}.jsonl"),
            "cwd": str(self.root),
        } | payload
        self.acted = session
        process = self.processes.get(session)
        found = None
        if name in ("SessionStart", "UserPromptSubmit") and process is not None:
            found = claude_process(process.pid)
        raw = json.dumps(payload).encode()
        request = Request(
            name, raw, self.world.now, time.perf_counter(), uuid.uuid4().hex,
            root_hint=str(self.root), claude_process=found,
        )  # fmt: skip
        outcome = hookrt.Outcome()
        _clock.now = self.world.now
        if next(self.turns) % 4:  # as the daemon answers a relayed hook: its kept connections
            request.transport = "relay"
            taken: list[tuple[Any, tuple[int, int]]] = []

            def connect(root: str, busy_timeout_ms: int) -> Any:
                taken.append(self.connections.take(busy_timeout_ms))
                return taken[-1][0]

            try:
                hookrt.process(outcome, request, connect=connect, scratch=self.scratch)
            finally:
                for conn, identity in taken:
                    self.connections.give_back(conn, identity)
        else:  # as a hook process on its own
            hookrt.process(outcome, request)
        outcome.finish()
        assert outcome.code == 0, outcome.err
        return json.loads(outcome.out) if outcome.out else None

    def check(self, event: str, answer: dict[str, Any] | None, session: str, agent: str) -> None:
        verdicts = check_answer(self.world, event, answer, session, agent)
        self.record(verdicts, answer)
        text = ((answer or {}).get("hookSpecificOutput") or {}).get("additionalContext")
        LOG.chars_by_kind[f"{event} {self.source}" if event == "SessionStart" else event] += len(
            str(text or "")
        )

    def record(self, verdicts: list[Verdict], answer: Any = None) -> None:
        LOG.statements += len(verdicts)
        if answer:
            output = answer.get("hookSpecificOutput") or {}
            LOG.chars += len(str(output.get("additionalContext") or ""))
        false = [v for v in verdicts if v.true is not True]
        LOG.false += false
        if false and os.environ.get("TRUTH_DEBUG"):
            print("=== FALSE", *false, sep="\n")
            print("=== RUNS", *self.world.runs, sep="\n")
            print("=== SESSIONS", *self.world.sessions.values(), sep="\n")
            print("=== ANSWER", json.dumps(answer)[:6000])
            for session in self.world.sessions.values():
                for given in session.context:
                    print("=== HELD", session.id, given.at, given.text[:3000])
        if false and not self.collect:
            raise AssertionError("false statements:\n" + "\n".join(map(str, false)))

    def transcript(self, session: str, **line: Any) -> None:
        with open(self.transcripts / f"{session}.jsonl", "a") as f:
            f.write(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n")

    def start_process(self, session: str) -> None:
        self.processes[session] = subprocess.Popen(["sleep", "3600"])

    def stop_process(self, session: str, kill: bool) -> None:
        process = self.processes.pop(session)
        process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        process.wait()
        self.world.sessions[session].alive = False

    def teardown(self) -> None:
        """The last word: every session's status line, and `status`, checked once more."""
        try:
            _clock.now = self.world.now
            for session in self.world.sessions:
                raw = json.dumps({"session_id": session, "cwd": str(self.root)}).encode()
                found = statusline.compute(raw, start=str(self.root))
                self.record(check_status(self.world, session, found.status, found.line))
            conn = db.connect(db_path(str(self.root)), readonly=True, create=False, migrate=False)
            try:
                self.record(check_report(self.world, status_report.status(conn, str(self.root))))
            finally:
                conn.close()
        finally:
            self.stop_all()

    def stop_all(self) -> None:
        self.connections.close()
        for session in list(self.processes):
            self.stop_process(session, kill=True)

    # --- choices -------------------------------------------------------------------------

    def live_sessions(self) -> list[str]:
        return [s.id for s in self.world.sessions.values() if s.alive]

    def actors(self) -> list[tuple[str, str]]:
        """(session, agent) pairs that can act now: alive, running, not waiting on a child."""
        out = []
        for session in self.live_sessions():
            for agent in [
                MAIN,
                *(a.id for a in self.world.agents.values() if a.session == session),
            ]:
                if (agent == MAIN or self.world.running(agent)) and not self.world.busy(
                    agent, session
                ):
                    out.append((session, agent))
        return out

    def agent_fields(self, agent: str) -> dict[str, Any]:
        return {} if agent == MAIN else {"agent_id": agent, "agent_type": "general-purpose"}

    # --- rules ---------------------------------------------------------------------------

    @initialize()
    def first_session(self) -> None:
        self.new_session()

    @precondition(lambda self: len(self.world.sessions) < self.max_sessions)
    @rule()
    def new_session(self) -> None:
        self.tick(5)
        n = next(self.ids)
        session = f"s{n}-{n * 7919:08x}"
        self.world.sessions[session] = Session(session, self.world.now)
        LOG.sessions += 1
        self.start_process(session)
        self.transcript(session, type="user", uuid=uuid.uuid4().hex, message={"content": "hi"})
        answer = self.send({"hook_event_name": "SessionStart", "source": "startup"}, session)
        self.gave(session, "SessionStart", answer, MAIN)

    def gave(self, session: str, event: str, answer: dict[str, Any] | None, agent: str) -> None:
        """Check an answer, then put it in the model's context and the transcript."""
        self.check(event, answer, session, agent)
        text = ((answer or {}).get("hookSpecificOutput") or {}).get("additionalContext")
        if text and event == "SessionStart" and agent == MAIN:
            self.world.give(session, text)
            with open(self.transcripts / f"{session}.jsonl", "a") as f:
                f.write(attachment(uuid.uuid4().hex, text) + "\n")

    @precondition(lambda self: bool(self.live_sessions()))
    @rule(data=st.data(), task=st.sampled_from(TASKS))
    def prompt(self, data: st.DataObject, task: str) -> None:
        choices = [s for s, a in self.actors() if a == MAIN]
        if not choices:
            return
        session = data.draw(st.sampled_from(choices))
        self.tick(20)
        self.world.sessions[session].prompts.append((self.world.now, task))
        self.transcript(session, type="user", uuid=uuid.uuid4().hex, message={"content": task})
        answer = self.send({"hook_event_name": "UserPromptSubmit", "prompt": task}, session)
        self.check("UserPromptSubmit", answer, session, MAIN)

    @precondition(lambda self: bool(self.live_sessions()))
    @rule(data=st.data(), background=st.booleans(), task=st.sampled_from(TASKS))
    def launch(self, data: st.DataObject, background: bool, task: str) -> None:
        choices = self.actors()
        if len(self.world.agents) >= self.max_agents or not choices:
            return
        session, parent = data.draw(st.sampled_from(choices))
        self.tick(3)
        n = next(self.ids)
        agent = f"a{n:03d}{n * 104729:012x}"
        use = f"toolu_{uuid.uuid4().hex[:16]}"
        call = {"description": task[:20], "prompt": task, "subagent_type": "general-purpose"}
        common = {"tool_name": "Agent", "tool_input": call, "tool_use_id": use}
        self.send({"hook_event_name": "PreToolUse", **common, **self.agent_fields(parent)}, session)
        self.world.steps.append(Step(self.world.now, session, parent, "Agent", call["description"]))
        self.send({"hook_event_name": "SubagentStart", **self.agent_fields(agent)}, session)
        self.world.agents[agent] = Agent(agent, session, parent, background, task, self.world.now)
        self.launches[agent] = (use, call)
        if background:
            response = {"isAsync": True, "status": "async_launched", "agentId": agent}
            self.send(
                {"hook_event_name": "PostToolUse", **common, "tool_response": response}
                | self.agent_fields(parent),
                session,
            )

    @precondition(lambda self: bool(self.world.agents))
    @rule(data=st.data())
    def finish(self, data: st.DataObject) -> None:
        done = [
            a
            for a in self.world.agents.values()
            if self.world.running(a.id)
            and self.world.sessions[a.session].alive
            and not self.world.busy(a.id, a.session)
            and not any(
                self.world.running(c.id) for c in self.world.agents.values() if c.parent == a.id
            )
        ]
        if not done:
            return
        agent = data.draw(st.sampled_from(done))
        self.tick(10)
        report = f"done: {agent.task}"
        self.send(
            {
                "hook_event_name": "SubagentStop",
                **self.agent_fields(agent.id),
                "last_assistant_message": report,
                "stop_hook_active": False,
            },
            agent.session,
        )
        agent.stopped, agent.report = self.world.now, report
        use, call = self.launches[agent.id]
        if not agent.background:
            response = {
                "status": "completed",
                "agentId": agent.id,
                "content": [{"type": "text", "text": report}],
            }
            self.send(
                {"hook_event_name": "PostToolUse", "tool_name": "Agent", "tool_input": call,
                 "tool_use_id": use, "tool_response": response} | self.agent_fields(agent.parent),
                agent.session,
            )  # fmt: skip

    @precondition(lambda self: bool(self.live_sessions()))
    @rule(data=st.data(), path=st.sampled_from(FILES), good=st.booleans(), wait=st.integers(1, 900))
    def write(self, data: st.DataObject, path: str, good: bool, wait: int) -> None:
        choices = self.actors()
        if not choices:
            return
        session, agent = data.draw(st.sampled_from(choices))
        self.write_file(session, agent, path, good, wait)

    def write_file(self, session: str, agent: str, path: str, good: bool, wait: int) -> None:
        self.tick(wait)
        full = self.root / path
        content = f"{'good' if good else 'bad'} {path} {next(self.ids)}\n"
        use = f"toolu_{uuid.uuid4().hex[:16]}"
        common = {
            "tool_name": "Write",
            "tool_input": {"file_path": str(full), "content": content},
            "tool_use_id": use,
            **self.agent_fields(agent),
        }
        answer = self.send({"hook_event_name": "PreToolUse", **common}, session)
        self.check("PreToolUse", answer, session, agent)
        self.world.steps.append(Step(self.world.now, session, agent, "Write", path))
        full.write_text(content)
        self.tick(1)
        response = {"type": "update", "filePath": str(full), "content": content}
        self.send({"hook_event_name": "PostToolUse", **common, "tool_response": response}, session)
        self.world.steps[-1].ended = True
        self.world.good[path] = good
        self.world.changes.append(Change(self.world.now, session, agent, path))

    @precondition(lambda self: bool(self.live_sessions()))
    @rule(data=st.data(), command=st.sampled_from(sorted(COMMANDS)), wait=st.integers(1, 900))
    def run(self, data: st.DataObject, command: str, wait: int) -> None:
        choices = self.actors()
        if not choices:
            return
        session, agent = data.draw(st.sampled_from(choices))
        self.tick(wait)
        self.run_once(session, agent, command)

    @precondition(lambda self: bool(self.live_sessions()))
    @rule(data=st.data(), command=st.sampled_from(sorted(COMMANDS)), bad=st.booleans())
    def retry(self, data: st.DataObject, command: str, bad: bool) -> None:
        """An agent that runs a command three times over (after breaking its file, or not):
        the ladder's climb, a failed path, the learnings later sessions are given."""
        choices = self.actors()
        if not choices:
            return
        session, agent = data.draw(st.sampled_from(choices))
        if bad:
            self.write_file(session, agent, COMMANDS[command], False, 5)
        for _ in range(3):
            self.tick(20)
            self.run_once(session, agent, command)

    def run_once(self, session: str, agent: str, command: str) -> None:
        use = f"toolu_{uuid.uuid4().hex[:16]}"
        common = {
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "run"},
            "tool_use_id": use,
            **self.agent_fields(agent),
        }
        self.send({"hook_event_name": "PreToolUse", **common}, session)
        self.world.steps.append(Step(self.world.now, session, agent, "Bash", command))
        self.tick(2)
        passed = self.world.passes_now(command)
        if passed:
            response = {"stdout": "ok", "stderr": "", "interrupted": False, "isImage": False}
            payload = {"hook_event_name": "PostToolUse", **common, "tool_response": response}
        else:
            error = ERRORS[command].format(root=self.root)
            payload = {"hook_event_name": "PostToolUseFailure", **common, "error": error,
                       "is_interrupt": False}  # fmt: skip
        self.world.runs.append(Run(self.world.now, session, agent, command, passed))
        answer = self.send(payload, session)
        self.world.steps[-1].ended = True
        self.check(payload["hook_event_name"], answer, session, agent)

    @precondition(lambda self: bool(self.live_sessions()))
    @rule(data=st.data(), twice=st.booleans())
    def compact(self, data: st.DataObject, twice: bool) -> None:
        """A compaction (of the main thread, or of a subagent's: the same events, no agent
        fields), or two back to back."""
        session = data.draw(st.sampled_from(self.live_sessions()))
        of_subagent = data.draw(st.booleans()) and any(
            self.world.running(a.id) for a in self.world.agents.values() if a.session == session
        )
        for _ in range(2 if twice else 1):
            self.tick(30)
            self.send({"hook_event_name": "PreCompact", "trigger": "auto"}, session)
            self.world.sessions[session].git_at_compaction = self.world.files_changed()
            if not of_subagent:
                self.world.compact(session)
                self.transcript(
                    session, type="system", subtype="compact_boundary", uuid=uuid.uuid4().hex,
                    compactMetadata={"trigger": "auto", "preservedMessages": {"uuids": []}},
                )  # fmt: skip
            answer = self.send({"hook_event_name": "SessionStart", "source": "compact"}, session)
            # A subagent's compaction puts the block in the subagent's context, not the main's.
            self.gave(session, "SessionStart", answer, "subagent" if of_subagent else MAIN)

    @precondition(lambda self: bool(self.live_sessions()))
    @rule(data=st.data(), kill=st.booleans(), mid_step=st.booleans())
    def end(self, data: st.DataObject, kill: bool, mid_step: bool) -> None:
        """The session ends (SessionEnd), or its Claude Code is killed (SIGKILL), perhaps while
        one of its agents runs a command."""
        session = data.draw(st.sampled_from(self.live_sessions()))
        self.tick(15)
        if kill and mid_step:
            actors = [a for s, a in self.actors() if s == session]
            agent = data.draw(st.sampled_from(actors))
            common = {
                "tool_name": "Bash",
                "tool_input": {"command": SCRIPT, "description": "run"},
                "tool_use_id": f"toolu_{uuid.uuid4().hex[:16]}",
                **self.agent_fields(agent),
            }
            self.send({"hook_event_name": "PreToolUse", **common}, session)
            self.world.steps.append(Step(self.world.now, session, agent, "Bash", SCRIPT))
            self.tick(1)
        if not kill:
            self.send({"hook_event_name": "SessionEnd", "reason": "other"}, session)
            self.world.sessions[session].ended = self.world.now
            self.world.ends.append((self.world.now, session))
        self.stop_process(session, kill=kill)
        for agent in self.world.agents.values():
            if agent.session == session and self.world.running(agent.id):
                agent.aborted = self.world.now

    @precondition(
        lambda self: (
            any(not s.alive for s in self.world.sessions.values()) and len(self.live_sessions()) < 3
        )
    )
    @rule(data=st.data())
    def resume(self, data: st.DataObject) -> None:
        gone = sorted(s.id for s in self.world.sessions.values() if not s.alive)
        session = data.draw(st.sampled_from(gone))
        self.tick(60)
        state = self.world.sessions[session]
        state.alive, state.ended = True, None
        self.world.resumes.append((self.world.now, session))
        self.start_process(session)
        answer = self.send({"hook_event_name": "SessionStart", "source": "resume"}, session)
        self.gave(session, "SessionStart", answer, MAIN)

    @precondition(lambda self: len(self.past) > 1)
    @rule(data=st.data())
    def fork(self, data: st.DataObject) -> None:
        """A fork or a replay from a frame: its first session is told the state recorded at
        that frame (`fork_state.at_frame`, what SessionStart gives it), checked against the
        world as it was then."""
        conn = self.connections.take(5000)
        try:
            frames = [
                (str(session), int(frame_no), str(state_hash), float(created_at))
                for session, frame_no, state_hash, created_at in conn[0].execute(
                    "SELECT session_id, frame_no, state_hash, created_at FROM frames"
                    " ORDER BY created_at, session_id, frame_no"
                )
                if created_at in self.past
            ]
            if not frames:
                return
            session, frame_no, state_hash, at = data.draw(st.sampled_from(frames))
            self.tick(30)  # the fork is made later: its state is still the frame's
            _clock.now = self.world.now
            text = fork_state.at_frame(conn[0], session, frame_no, state_hash)
        finally:
            self.connections.give_back(*conn)
        then = Reading(self.past[at], session, MAIN, session, fork_at=at)
        self.record(read_text(then, text))

    @invariant()
    def keep_the_past(self) -> None:
        """The world as it stood after each step, by the time of its last event: what a fork
        from the frame that event made is checked against."""
        self.past[self.world.now] = copy.deepcopy(self.world)

    @invariant()
    def status_line_is_true(self) -> None:
        """The status line of the session the last step acted in (each step changes that one's
        figures alone), as Claude Code would show it under the prompt."""
        if self.acted is None:
            return
        raw = json.dumps({"session_id": self.acted, "cwd": str(self.root)}).encode()
        _clock.now = self.world.now
        found = statusline.compute(raw, start=str(self.root))
        self.record(check_status(self.world, self.acted, found.status, found.line))


class _Clock:
    """The model's clock, for every `time.time()` the product reads while a history runs."""

    now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


_clock = _Clock()
