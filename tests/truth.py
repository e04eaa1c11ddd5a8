"""Every statement claude-session puts before the model, checked against what really happened.

The ground truth is never our own database: it is a tap hook that saves every payload Claude
Code sends (with the time it came), the processes the test started and killed, and the
commands themselves, run again in the project when the model reads that they fail. Each
request the scripted model receives is read as the model reads it: every recorded-state block,
conflict warning and ladder step in it is split into statements, and each statement is checked
the first time the model reads it (in the agent it was given to). A statement no rule knows
how to check is a failure too: nothing said goes unchecked.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OPEN, CLOSE = "<claude-session-recorded-state>", "</claude-session-recorded-state>"
WARNING = re.compile(r"claude-session: (\S.*?) is being changed by another live agent\.")
LADDER = re.compile(
    r"claude-session: `(.+?)` (?:failed \(attempt (\d+)\)|failed for the 3rd time"
    r"|has failed (\d+) times)"
)


def add_tap(settings_path: Path, tap: Path, events: list[str]) -> None:
    """A command hook beside ours on every event: the raw payload into a file named by the
    nanosecond it came at (independent of claude-session: `date` and `cat` only)."""
    settings = json.loads(settings_path.read_text())
    command = f'cat > "{tap}/$(date +%s%N).$$.json"'
    for event in events:
        settings["hooks"].setdefault(event, []).append(
            {"hooks": [{"type": "command", "command": command}]}
        )
    settings_path.write_text(json.dumps(settings, indent=2))


@dataclass
class Sent:
    at: float
    payload: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.payload.get(key)


class Tap:
    """What Claude Code sent, in order."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def sent(self, before: float | None = None) -> list[Sent]:
        found = []
        for path in self.folder.iterdir():
            try:
                payload = json.loads(path.read_text())
            except (ValueError, OSError):
                continue  # still being written
            at = int(path.name.split(".")[0]) / 1e9
            if before is None or at <= before:
                found.append(Sent(at, payload))
        return sorted(found, key=lambda s: s.at)

    def agent_of_tool(self, tool_use_id: str) -> str | None:
        for s in self.sent():
            if s["tool_use_id"] == tool_use_id and s["hook_event_name"] == "PreToolUse":
                return str(s["agent_id"] or "main")
        return None


@dataclass
class World:
    """The scenario's ground truth at one moment."""

    tap: Tap
    project: Path
    now: float
    prompts: list[str]
    runnable: set[str]  # commands safe to run again to see whether they still fail
    processes: dict[str, subprocess.Popen[Any]]  # session id -> its Claude Code process

    def events(self, name: str | None = None) -> list[Sent]:
        return [s for s in self.tap.sent(self.now) if name is None or s["hook_event_name"] == name]

    def alive(self, agent: str, session: str | None = None) -> bool:
        """A subagent that started and did not stop, in a Claude Code still running."""
        starts = [s for s in self.events("SubagentStart") if s["agent_id"] == agent]
        stops = [s for s in self.events("SubagentStop") if s["agent_id"] == agent]
        if agent == "main":
            return session is None or self.session_alive(session)
        if not starts or stops:
            return False
        return self.session_alive(str(starts[0]["session_id"]))

    def session_alive(self, session: str) -> bool:
        process = self.processes.get(session)
        if process is None:
            return any(s["session_id"] == session for s in self.events("SessionStart")) and not [
                s for s in self.events("SessionEnd") if s["session_id"] == session
            ]
        return process.poll() is None

    def changes(self, path: str, by: str | None = None, after: float = 0) -> list[Sent]:
        """Write/Edit calls that went through on `path` (project-relative), by `by`."""
        return [
            s
            for s in self.events("PostToolUse")
            if s["tool_name"] in ("Write", "Edit", "MultiEdit")
            and _relative(self.project, str((s["tool_input"] or {}).get("file_path"))) == path
            and (by is None or str(s["agent_id"] or "main") == by)
            and s.at > after
        ]

    def failures(self, command: str) -> list[Sent]:
        return [
            s
            for s in self.events("PostToolUseFailure")
            if " ".join(str((s["tool_input"] or {}).get("command")).split()) == command
        ]

    def fails_now(self, command: str) -> bool:
        assert command in self.runnable, f"not a command of the scenario: {command!r}"
        done = subprocess.run(
            command, shell=True, cwd=self.project, capture_output=True, timeout=60
        )
        return done.returncode != 0

    def launch_of(self, agent: str) -> Sent | None:
        """The Agent call that launched `agent` (PreToolUse), found through its result."""
        for post in self.tap.sent():
            response = post["tool_response"] or {}
            if post["tool_name"] == "Agent" and response.get("agentId") == agent:
                for pre in self.tap.sent():
                    if (
                        pre["hook_event_name"] == "PreToolUse"
                        and pre["tool_use_id"] == post["tool_use_id"]
                    ):
                        return pre
        return None

    def parent_of(self, agent: str) -> str:
        launch = self.launch_of(agent)
        return str(launch["agent_id"] or "main") if launch else "main"

    def background(self, agent: str) -> bool | None:
        for post in self.tap.sent():
            response = post["tool_response"] or {}
            if post["tool_name"] == "Agent" and response.get("agentId") == agent:
                return response.get("status") == "async_launched"
        return None


def _relative(project: Path, path: str) -> str:
    prefix = str(project) + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path


@dataclass
class Verdict:
    agent: str
    statement: str
    true: bool | None  # None: no rule knows how to check it
    why: str


@dataclass
class Truth:
    """Reads every request as the model does and checks what it is told, once per agent and
    statement (the first time it is read)."""

    tap: Tap
    project: Path
    prompts: list[str] = field(default_factory=list)
    runnable: set[str] = field(default_factory=set)
    processes: dict[str, subprocess.Popen[Any]] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def world(self) -> World:
        return World(
            self.tap, self.project, time.time(), self.prompts, self.runnable, self.processes
        )

    def read(self, body: dict[str, Any], agent: str) -> None:
        """One request of `agent` (its registry name: 'main' or the subagent's id)."""
        with self.lock:
            world = self.world()
            texts = list(_texts(body))
            for i, text in enumerate(texts):
                others = "\n".join(texts[:i] + texts[i + 1 :])
                later = "\n".join(texts[i + 1 :])
                found = [*statements(text, world, agent), *_held_claims(text, others, later)]
                for statement, check in found:
                    if (agent, statement) in self.seen:
                        continue
                    self.seen.add((agent, statement))
                    true, why = check()
                    self.verdicts.append(Verdict(agent, statement, true, why))

    def false(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.true is not True]

    def count(self) -> int:
        return len(self.verdicts)


def _texts(body: dict[str, Any]) -> Iterator[str]:
    """Every string the model is shown (system, messages, tool results), whole."""

    def walk(value: Any) -> Iterator[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            for item in value:
                yield from walk(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                if key not in ("tools", "id", "tool_use_id", "signature"):
                    yield from walk(item)

    yield from walk(body.get("messages") or [])


Check = Callable[[], tuple[bool | None, str]]


def statements(text: str, world: World, agent: str) -> Iterator[tuple[str, Check]]:
    """Each statement in one text the model reads, with the check of its truth now."""
    start = 0
    while (at := text.find(OPEN, start)) >= 0:
        end = text.find(CLOSE, at)
        block = text[at : end if end >= 0 else len(text)]
        yield from _block(block, world)
        start = at + len(OPEN)
    for found in WARNING.finditer(text):
        yield from _warning(found.group(1), text[found.end() :], world, agent)
    for found in LADDER.finditer(text):
        command = found.group(1).replace("'", "'")
        attempt = int(found.group(2) or found.group(3) or 3)
        yield (
            f"ladder: `{command}` failed {attempt} times",
            lambda c=command, n=attempt: _failed_times(world, c, n),
        )


HELD = re.compile(r"The recorded state claude-session gave at (.+?) is still in\s+your context")


SUPERSEDED = "It replaces every block of recorded state given before this compaction"


def _held_claims(text: str, others: str, later: str) -> Iterator[tuple[str, Check]]:
    """ "The recorded state ... gave at T is still in your context": a block of state as of T
    is in this very request (elsewhere than the text saying so), unless a compaction's block
    read after it says it replaces every earlier one (the claim was made before that
    compaction, which kept its block but not the ones it names)."""
    for found in HELD.finditer(text):
        times = found.group(1).split(", ")
        start = text.rfind(OPEN, 0, found.start())
        end = text.find(CLOSE, found.end())
        rest = others + "\n" + text[: max(start, 0)] + text[end if end >= 0 else len(text) :]
        after = text[end if end >= 0 else len(text) :] + "\n" + later

        def check(
            times: list[str] = times, rest: str = rest, after: str = after
        ) -> tuple[bool, str]:
            if SUPERSEDED in after:
                return True, "replaced by a later compaction's block, which says so"
            missing = [t for t in times if f"tate as of {t}." not in rest]
            return not missing, f"blocks of {times} in the request" + (
                f"; missing {missing}" if missing else ""
            )

        yield f"held: the state given at {found.group(1)} is in context", check


def _failed_times(world: World, command: str, attempts: int) -> tuple[bool, str]:
    seen = len(world.failures(command))
    return seen >= attempts, f"Claude Code reported {seen} failures of it"


# --- conflict warnings ----------------------------------------------------------------------

HOLDER = re.compile(r"^- (.*?); it last changed this file", re.M)


def _warning(path: str, rest: str, world: World, agent: str) -> Iterator[tuple[str, Check]]:
    for line in HOLDER.finditer(rest.split("\nclaude-session:")[0][:4000]):
        described = line.group(1)
        yield (
            f"conflict on {path}: {described[:160]}",
            lambda d=described: _holder(world, agent, path, d),
        )


def _holder(world: World, agent: str, path: str, described: str) -> tuple[bool | None, str]:
    found = re.search(r"subagent (?!launched)([0-9a-z]{6,})", described)
    holder = "main" if "the main thread" in described else (found.group(1) if found else "?")
    if holder == "?":
        return None, "no holder named"
    if not world.alive(holder):
        return False, f"{holder} is not alive"
    if not world.changes(path, holder):
        return False, f"{holder} never changed {path}"
    said = _said_relation(described)
    truth = _relation(world, agent, holder)
    if said != truth:
        return False, f"said {said}, but {holder} is the {truth} of {agent}"
    if truth == "parent":
        launch = world.launch_of(agent)
        if not world.background(agent):
            return False, "a foreground child's parent waits: no conflict"
        if launch is None or not world.changes(path, holder, after=launch.at):
            return False, "the parent changed it only before the launch: delegation"
    if truth == "child" and not world.background(holder):
        return False, "a foreground child has finished when its parent acts"
    return True, f"{holder} is the live {truth} of {agent} and changed {path}"


def _said_relation(described: str) -> str:
    if described.startswith("your parent"):
        return "parent"
    if described.startswith("your background subagent"):
        return "child"
    if described.startswith("a sibling subagent"):
        return "sibling"
    if "another Claude Code session" in described:
        return "other session"
    return "same session"


def _relation(world: World, agent: str, holder: str) -> str:
    if holder == "main" or agent == "main":
        return "parent" if holder == "main" else "child"
    if world.parent_of(agent) == holder:
        return "parent"
    if world.parent_of(holder) == agent:
        return "child"
    return "sibling" if world.parent_of(agent) == world.parent_of(holder) else "same session"


# --- recorded-state blocks ------------------------------------------------------------------

SECTION = re.compile(r"^## (.+)$", re.M)


def _block(block: str, world: World) -> Iterator[tuple[str, Check]]:
    titles = list(SECTION.finditer(block))
    for i, title in enumerate(titles):
        end = titles[i + 1].start() if i + 1 < len(titles) else len(block)
        lines = [ln for ln in block[title.end() : end].splitlines() if ln.startswith("- ")]
        name = title.group(1)
        rule = RULES.get(name)
        for line in lines:
            if line.startswith("- ... ") and line.endswith("more not shown"):
                continue
            key = f"{name}: {line}"
            if rule is None:
                yield key, lambda t=name: (None, f"no rule for section {t!r}")
            else:
                yield key, lambda ln=line, r=rule: r(world, ln)


def _task(world: World, line: str) -> tuple[bool, str]:
    said = re.sub(r"^- (\[[^\]]*\] )?", "", line)
    return any(said == " ".join(p.split()) for p in world.prompts), "a prompt the user sent"


def _command_of(line: str) -> str:
    found = re.search(r"`(.+?)`", line)
    return found.group(1) if found else ""


def _still_fails(world: World, line: str) -> tuple[bool, str]:
    command = _command_of(line)
    if command not in world.runnable:
        return False, f"not a command the scenario ran: {command!r}"
    return world.fails_now(command), "run again now"


def _dead_end(world: World, line: str) -> tuple[bool, str]:
    approach = line[2:].split("; failed because:")[0].split("; then ")[0].split(" (after ")[0]
    if approach not in world.runnable:
        return False, f"not a command the scenario ran: {approach!r}"
    return world.fails_now(approach), "run again now: it must still fail to be avoided"


CHANGED = re.compile(r"(\S+) changed since by (the main thread|subagent (\S+))")
ALSO = re.compile(r", (\S+) by (the main thread|subagent (\S+)) \(")


def _rerun(world: World, line: str) -> tuple[bool, str]:
    command = _command_of(line) or line[2:].split(" failed: ")[0]
    failed = world.failures(command)
    last = failed[-1].at if failed else 0.0
    named = [*CHANGED.finditer(line), *ALSO.finditer(line)]
    if not named:
        return False, "names no change"
    for found in named:
        who = "main" if found.group(2) == "the main thread" else found.group(3)
        if not world.changes(found.group(1), who, after=last):
            return False, f"{who} did not change {found.group(1)} after the last failure"
    return True, "each change happened after the last failure"


def _live(world: World, line: str) -> tuple[bool, str]:
    agent = line[2:].split(" ")[0]
    return world.alive(agent), "started, not stopped, its Claude Code running"


def _finished(world: World, line: str) -> tuple[bool, str]:
    agent = line[2:].split(" ")[0]
    stopped = [s for s in world.events("SubagentStop") if s["agent_id"] == agent]
    return bool(stopped), "Claude Code said it stopped"


def _beside(world: World, line: str) -> tuple[bool, str]:
    return world.session_alive(line[2:].split(" ")[0]), "its Claude Code runs"


def _interrupted(world: World, line: str) -> tuple[bool, str]:
    """A session that never ended: gone without SessionEnd; its last tool call named (running
    when it stopped, if Claude Code never said it finished); every subagent it cut off named."""
    session = line[2:].split(" ")[0]
    if f"`claude --resume {session}`" not in line:
        return False, "no resume command"
    ended = [s for s in world.events("SessionEnd") if s["session_id"] == session]
    if world.session_alive(session) or ended:
        return False, "it runs, or it ended"
    mine = [s for s in world.events() if s["session_id"] == session]
    calls = [s for s in mine if s["hook_event_name"] == "PreToolUse"]
    said = re.search(r"last step: (.*?)(?:; subagents cut off|; \d+ open error|\); the user)", line)
    if calls:
        last = calls[-1]
        named = str((last["tool_input"] or {}).get("command") or last["tool_name"])
        if said is None or named[:40] not in said.group(1):
            return False, f"the last step was {last['tool_name']} {named[:80]}"
        finished = any(
            s["tool_use_id"] == last["tool_use_id"]
            for s in mine
            if s["hook_event_name"] in ("PostToolUse", "PostToolUseFailure")
        )
        if finished == ("still running when it stopped" in said.group(1)):
            return False, f"the last step {'finished' if finished else 'never finished'}"
    stopped = {s["agent_id"] for s in mine if s["hook_event_name"] == "SubagentStop"}
    cut = [s["agent_id"] for s in mine if s["hook_event_name"] == "SubagentStart"]
    missing = [a for a in cut if a not in stopped and a not in line]
    if missing:
        return False, f"subagents cut off and not named: {missing}"
    return True, "no SessionEnd, Claude Code gone; its last step and cut-off subagents named"


def _at_frame(world: World, line: str) -> tuple[bool, str]:
    """A subagent as recorded at the frame a fork started from: it ran, and had stopped if
    the line says it had finished."""
    found = re.match(r"- (\S+) \([^,]*, (\w+)\)", line)
    if not found:
        return False, "unreadable"
    agent, status = found.groups()
    started = [s for s in world.events("SubagentStart") if s["agent_id"] == agent]
    stopped = [s for s in world.events("SubagentStop") if s["agent_id"] == agent]
    if status == "completed":
        return bool(stopped), "Claude Code said it stopped"
    return bool(started), "Claude Code started it"


def _no_longer(world: World, line: str) -> tuple[bool | None, str]:
    """A statement given earlier, withdrawn: it is not so any more."""
    found = re.match(r'- (.*) \(under "(.+)"\)$', line)
    if not found:
        return False, "unreadable"
    key, section = found.groups()
    if section == "Live subagents":
        agent = key.split(" ")[0]
        return not world.alive(agent), "the agent is not alive"
    command = _command_of(key + "`") if "`" in key else key
    if section in (
        "Open errors (not yet fixed)",
        "Failed approaches: do not repeat these",
        "Abandoned errors: left unfixed when their session ended",
        "To re-run: files they depend on changed since they last failed",
    ):
        if command not in world.runnable:
            return False, f"not a command the scenario ran: {command!r}"
        if not world.fails_now(command):
            return True, "it passes now"
        failed = world.failures(command)
        last = failed[-1].at if failed else 0.0
        changed = [
            s
            for s in world.events("PostToolUse")
            if s.at > last and s["tool_name"] in ("Write", "Edit", "MultiEdit")
        ]
        if section.startswith("To re-run"):
            return not changed, "it failed again after the changes"
        return bool(changed), "a file changed since it last failed"
    return None, f"no rule for a withdrawal under {section!r}"


def _claim(world: World, line: str) -> tuple[bool, str]:
    found = re.match(r"- (\S+) by (\S+) \(", line)
    if not found:
        return False, "unreadable"
    return bool(world.changes(found.group(1), found.group(2))), "a Write/Edit Claude Code ran"


def _git(world: World, line: str) -> tuple[bool, str]:
    if line.startswith("- branch "):
        branch = line.split()[2]
        head = subprocess.run(
            ["git", "branch", "--show-current"], cwd=world.project, capture_output=True, text=True
        ).stdout.strip()
        return branch in (head, "(detached)"), f"the branch is {head}"
    return True, "the working tree as git showed it then"


RULES: dict[str, Callable[[World, str], tuple[bool | None, str]]] = {
    "Task (latest user prompts, oldest first)": _task,
    "Failed approaches: do not repeat these": _dead_end,
    "Open errors (not yet fixed)": _still_fails,
    "To re-run: files they depend on changed since they last failed": _rerun,
    "Abandoned errors: left unfixed when their session ended": _still_fails,
    "Subagents that finished: what each was asked and what it reported": _finished,
    "Live subagents": _live,
    "Other sessions running in this project now": _beside,
    "Sessions that never ended (interrupted)": _interrupted,
    "Files changed in this session (claims)": _claim,
    "Git (at the last compaction)": _git,
    "Subagents at that frame": _at_frame,
    "No longer so: given earlier, not true now as stated": _no_longer,
}
