"""Every line claude-session puts before the model, read as the model reads it and checked
against the reference model (tests/reference_model.py). A line no rule reads is false: nothing
said goes unchecked. The status line's figures are checked the same way.

Rules know the product's wording (that is what the model reads) but never its code: the truth
of each statement comes from the reference model alone.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reference_model import CHECK, COMMANDS, MAIN, World

STATE_OPEN, STATE_CLOSE = "<claude-session-recorded-state>", "</claude-session-recorded-state>"
MEMORY_OPEN, MEMORY_CLOSE = "<claude-session-memories>", "</claude-session-memories>"


@dataclass
class Verdict:
    family: str
    statement: str
    true: bool | None  # None: no rule reads it
    why: str

    def __str__(self) -> str:
        return f"[{self.family}] {self.statement!r}: {self.true} ({self.why})"


@dataclass
class Reading:
    """Where a line is read: who receives it, whose state the block is, when."""

    world: World
    receiver: str  # the session given the text
    agent: str
    block_session: str  # the session whose state the block states
    fork_at: float | None = None


def clock(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


# --- prose: lines that state nothing checkable beyond their being there -----------------------

PROSE = (
    "Context was just compacted. Below is the state claude-session recorded",
    "claude-session recorded work that this session left open in this project",
    "Fix the cause and retry.",
    "Stop guessing: research is required",
    "The user has been asked to step in.",
    "Your parent changed this file after it launched you",
    "Your background subagent is still working on this file",
    "A subagent launched beside you is changing this file",
    "Two agents editing one file overwrite each other's work",
    "Another Claude Code session in this project is changing this file",
    "Memories claude-session recorded",
)


def check_answer(
    world: World, event: str, answer: dict[str, Any] | None, session: str, agent: str
) -> list[Verdict]:
    if not answer:
        return []
    output = answer.get("hookSpecificOutput") or {}
    text = output.get("additionalContext")
    if output.get("permissionDecision") == "deny":
        text = output.get("permissionDecisionReason")
    if not isinstance(text, str):
        return []
    return read_text(Reading(world, session, agent, session), text)


def read_text(reading: Reading, text: str) -> list[Verdict]:
    out = _lines(reading, text)
    found = HELD.search(text)
    if found:
        out += _still_holds(reading, text, found.group(1).split(", "))
    return out


def _lines(reading: Reading, text: str) -> list[Verdict]:
    out: list[Verdict] = []
    lines = text.split("\n")
    section: str | None = None
    where = "none"  # none, state, memory, conflict
    conflict_path = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line in (STATE_CLOSE, MEMORY_CLOSE):
            where = "none" if line in (STATE_CLOSE, MEMORY_CLOSE) else where
            continue
        if line == STATE_OPEN:
            where, section = "state", None
            continue
        if line == MEMORY_OPEN:
            where, section = "memory", None
            continue
        if line.startswith("## ") and where == "state":
            section = line[3:]
            continue
        if line.startswith("- ... ") and line.endswith(" more not shown"):
            continue
        if any(line.startswith(p) for p in PROSE):
            continue
        if where == "state" and section is None:
            out += _head_line(reading, line)
            continue
        if where == "state" and section is not None and line.startswith("- "):
            out.append(_section_line(reading, section, line))
            continue
        if where == "memory" and line.startswith("- ["):
            notes = []
            while i < len(lines) and lines[i].startswith("  "):
                notes.append(lines[i].strip())
                i += 1
            out += _memory(reading, line, notes)
            continue
        found = re.match(r"claude-session: (\S+) is being changed by another live agent\.$", line)
        if found:
            where, conflict_path = "conflict", found.group(1)
            continue
        if where == "conflict" and line.startswith("- "):
            out.append(_holder(reading, conflict_path, line))
            continue
        found = LADDER.match(line)
        if found:
            out.append(_ladder(reading, found))
            continue
        out.append(Verdict("unread", line, None, f"no rule reads this line (in {where})"))
    return out


# --- the head of a block ------------------------------------------------------------------

HELD = re.compile(r"The recorded state claude-session gave at (.+?) is still in your context")
PREVIOUS = re.compile(r"claude-session recorded work that the previous session \((\S+)\) left")
FORK = re.compile(r"This session was started by claude-session from frame (\d+) of session (\S+):")


def _head_line(reading: Reading, line: str) -> list[Verdict]:
    world = reading.world
    found = re.match(r"(?:Session (\S+), s|S)tate as of (.+)\.$", line)
    if found:
        when = reading.fork_at if reading.fork_at is not None else world.now
        said = found.group(2)
        return [Verdict("time", line, said == clock(when), f"the state is of {clock(when)}")]
    found = HELD.match(line)
    if found:
        times = found.group(1).split(", ")
        held = {clock(at) for at in world.held_at(reading.receiver)}
        missing = [t for t in times if t not in held]
        why = f"the model holds blocks of {sorted(held)}"
        return [Verdict("held", line[:120], not missing, why)]
    found = PREVIOUS.match(line)
    if found:
        previous = found.group(1)
        reading.block_session = previous
        ok = previous in world.sessions and previous != reading.receiver
        return [Verdict("head", line[:120], ok, "another session of this project")]
    found = FORK.match(line)
    if found:
        reading.block_session = found.group(2)
        return [Verdict("head", line[:120], found.group(2) in world.sessions, "a session here")]
    return [Verdict("unread", line, None, "no rule reads this head line")]


# --- the sections ---------------------------------------------------------------------------

TASK = "Task (latest user prompts, oldest first)"
FAILED = "Failed approaches: do not repeat these"
OPEN = "Open errors (not yet fixed)"
RERUN = "To re-run: files they depend on changed since they last failed"
ABANDONED = "Abandoned errors: left unfixed when their session ended"
FINISHED = "Subagents that finished: what each was asked and what it reported"
LIVE = "Live subagents"
BESIDE = "Other sessions running in this project now"
CRASHED = "Sessions that never ended (interrupted)"
CLAIMS = "Files changed in this session (claims)"
GIT = "Git (at the last compaction)"
AT_FRAME = "Subagents at that frame"
NO_LONGER = "No longer so: given earlier, not true now as stated"

Rule = Callable[[Reading, str], tuple[bool, str]]


def _section_line(reading: Reading, section: str, line: str) -> Verdict:
    rule = RULES.get(section)
    if rule is None:
        return Verdict("unread", f"{section}: {line}", None, "no rule for this section")
    true, why = rule(reading, line)
    return Verdict(FAMILIES.get(section, section), f"{section}: {line}"[:300], true, why)


def _command(line: str) -> str:
    found = re.search(r"`([^`]+)`", line)
    return found.group(1) if found else ""


def _task(r: Reading, line: str) -> tuple[bool, str]:
    found = re.match(r"- (?:\[(.+?)\] )?(.*)$", line)
    assert found
    at, prompt = found.groups()
    sent = r.world.sessions[r.block_session].prompts
    ok = any(p == prompt and (at is None or clock(t) == at) for t, p in sent)
    return ok, "a prompt the user sent in that session, at that time"


def _attempts(r: Reading, command: str, said: int, session: str) -> tuple[bool, str]:
    seen = r.world.attempts(command, session)
    return said == seen, f"{seen} failures in {session[:8]}'s climb since it last passed"


def _failed(r: Reading, line: str) -> tuple[bool, str]:
    command = line[2:].split("; failed because:")[0].split(" (after ")[0]
    if command not in COMMANDS:
        return False, f"not a command that ran: {command!r}"
    w = r.world
    climbed = max((w.attempts(command, s) for s in w.sessions), default=0)
    if not w.still_fails(command):
        return False, "not known to fail now (passed, or what it depends on changed)"
    return climbed >= 3, f"failed {climbed} times in a row in one session"


def _open(r: Reading, line: str) -> tuple[bool, str]:
    command = _command(line)
    found = re.search(r"` failed (\d+)x \[", line)
    if command not in COMMANDS or not found:
        return False, "unreadable"
    if not r.world.still_fails(command):
        return False, "not known to fail now"
    return _attempts(r, command, int(found.group(1)), r.block_session)


CHANGE = re.compile(r"(?:; |, )(\S+) (?:changed since )?by (the main thread|subagent (\S+))")


def _rerun(r: Reading, line: str) -> tuple[bool, str]:
    command = _command(line) or line[2:].split(" failed: ")[0].split(" (after ")[0]
    if command not in COMMANDS:
        return False, f"not a command that ran: {command!r}"
    w = r.world
    if not w.to_rerun(command):
        return False, "not failed last with a change since"
    last = w.last_run(command)
    assert last is not None
    for found in CHANGE.finditer(line):
        who = MAIN if found.group(2) == "the main thread" else found.group(3)
        if not any(
            c.path == found.group(1) and c.agent == who for c in w.changed_after(command, last.at)
        ):
            return False, f"{who} did not change {found.group(1)} after the last failure"
    attempts = re.search(r"` failed (\d+) times \[", line)
    if attempts:
        return _attempts(r, command, int(attempts.group(1)), r.block_session)
    return True, "failed last, each change named came after"


def _abandoned(r: Reading, line: str) -> tuple[bool, str]:
    found = re.search(r"; abandoned when session (\S+) ended$", line)
    if not found or found.group(1) not in r.world.sessions:
        return False, "names no session"
    session = r.world.sessions[found.group(1)]
    if session.alive:
        return False, "its session runs"
    command = _command(line)
    attempts = re.search(r"` failed (\d+)x \[", line)
    if command not in COMMANDS or not attempts or not r.world.still_fails(command):
        return False, "not known to fail now"
    return _attempts(r, command, int(attempts.group(1)), session.id)


def _finished(r: Reading, line: str) -> tuple[bool, str]:
    found = re.match(r"- (\S+) \(([^,]*), (\w+)\)", line)
    if not found:
        return False, "unreadable"
    agent = r.world.agents.get(found.group(1))
    if agent is None:
        return False, "no such agent"
    if found.group(3) == "completed":
        ok = agent.stopped is not None and f"reported: {agent.report}" in line
        return ok, "SubagentStop came, with that report"
    return agent.aborted is not None, f"said {found.group(3)}: it was aborted"


def _live(r: Reading, line: str) -> tuple[bool, str]:
    agent = line[2:].split(" ")[0]
    a = r.world.agents.get(agent)
    ok = a is not None and r.world.running(agent) and r.world.sessions[a.session].alive
    return ok, "started, not stopped, its Claude Code running"


def _beside(r: Reading, line: str) -> tuple[bool, str]:
    found = re.match(r"- (\S+) \(last active [^,)]*(?:, (\d+) subagents? running)?\)", line)
    if not found or found.group(1) not in r.world.sessions:
        return False, "unreadable"
    session = r.world.sessions[found.group(1)]
    running = sum(
        1 for a in r.world.agents.values() if a.session == session.id and r.world.running(a.id)
    )
    said = int(found.group(2) or 0)
    ok = session.alive and session.id != r.receiver and said == running
    return ok, f"alive: {session.alive}, {running} subagents running"


def _crashed(r: Reading, line: str) -> tuple[bool, str]:
    found = re.match(r"- (\S+) never ended: interrupted \((.*)\); the user can resume", line)
    if not found or found.group(1) not in r.world.sessions:
        return False, "unreadable"
    session = r.world.sessions[found.group(1)]
    if session.alive or session.ended is not None:
        return False, "it runs, or it ended"
    step = r.world.last_step(session.id)
    said = re.search(r"last step: (.*?)(?:;|$)", found.group(2))
    if step is not None and (said is None or step.target not in said.group(1)):
        return False, f"the last step was {step.tool} {step.target}"
    missing = [a.id for a in r.world.aborted_agents(session.id) if a.id not in line]
    if missing:
        return False, f"aborted subagents not named: {missing}"
    return True, "no SessionEnd, its Claude Code gone; its last step and aborted agents named"


def _claim(r: Reading, line: str) -> tuple[bool, str]:
    found = re.match(r"- (\S+) by (\S+) \(\w+, (\d+) edits?,", line)
    if not found:
        return False, "unreadable"
    path, agent, edits = found.group(1), found.group(2), int(found.group(3))
    agent = MAIN if agent in (MAIN, r.block_session) else agent
    made = [
        c
        for c in r.world.changes
        if c.session == r.block_session and c.agent == agent and c.path == path
    ]
    return len(made) == edits, f"{len(made)} writes of it by {agent}"


def _git(r: Reading, line: str) -> tuple[bool, str]:
    changed = r.world.sessions[r.block_session].git_at_compaction
    if changed is None:
        return False, "no compaction in this session"
    if line.startswith("- branch "):
        return line.split()[2] in ("master", "main"), "the branch of the project"
    if line == "- working tree clean":
        return not changed, f"changed: {sorted(changed)}"
    found = re.match(r"- (\d+) changed: (.*)$", line)
    said = {name.split(" ")[-1] for name in found.group(2).split(", ")} if found else set()
    return said == changed, f"changed: {sorted(changed)}"


def _at_frame(r: Reading, line: str) -> tuple[bool, str]:
    """A subagent as the frame recorded it: running then, or finished by then."""
    found = re.match(r"- (\S+) \([^,]*, (\w+)\)", line)
    if not found or found.group(1) not in r.world.agents:
        return False, "unreadable, or no such agent"
    agent = r.world.agents[found.group(1)]
    if found.group(2) == "running":
        return r.world.running(agent.id), "started, not stopped, at the frame"
    return agent.stopped is not None or agent.aborted is not None, "stopped by the frame"


def _no_longer(r: Reading, line: str) -> tuple[bool, str]:
    """A withdrawal: the model holds a line under that section about that key, and that line
    is not true now."""
    found = re.match(r'- (.*) \(under "(.+)"\)$', line)
    if not found:
        return False, "unreadable"
    key, section = found.groups()
    rule = RULES.get(section)
    held = [
        (g, held_line)
        for g in r.world.sessions[r.receiver].context
        for held_section, held_line in _section_lines(g.text)
        if held_section == section and held_line[2:].startswith(key)
    ]
    if not held or rule is None:
        return False, "the model holds no such statement"
    for given, held_line in held:
        then = Reading(r.world, r.receiver, r.agent, _block_session(r, given.text))
        true, why = rule(then, held_line)
        if true:
            return False, f"still true: {held_line[:120]} ({why})"
    return True, "each held line about it is false now"


def _still_holds(reading: Reading, text: str, times: list[str]) -> list[Verdict]:
    """ "... is still in your context and still holds, except for what follows": each statement
    the model holds from those blocks (a later block's line replacing an earlier one's, a
    withdrawal removing it) that this one neither restates nor withdraws is true now."""
    holds: dict[tuple[str, str], tuple[str, str]] = {}  # (section, about) -> (line, subject)
    for given in reading.world.sessions[reading.receiver].context:
        if clock(given.at) in times:
            subject = _block_session(reading, given.text)
            for section, line in _section_lines(given.text):
                if section == NO_LONGER:
                    holds.pop(_withdrawn(line), None)
                else:
                    _supersede(holds, section, line)
                    holds[(section, _about(section, line))] = (line, subject)
    for section, line in _section_lines(text):
        if section == NO_LONGER:
            holds.pop(_withdrawn(line), None)
        else:
            _supersede(holds, section, line)
    out = []
    for (section, _), (line, subject) in holds.items():
        rule = RULES.get(section)
        if rule is None:
            continue
        true, why = rule(Reading(reading.world, reading.receiver, reading.agent, subject), line)
        out.append(Verdict("held", f"still holds: {section}: {line}"[:300], true, why))
    return out


def _supersede(holds: dict[tuple[str, str], Any], section: str, line: str) -> None:
    """A newer statement ends what the model held of the same thing: one error, whichever of
    its sections says it (open, to re-run, abandoned), in the block given now or in a later
    held block than the one that said it before (each block says "the newer one holds")."""
    about = _about(section, line)
    for other in (OPEN, RERUN, ABANDONED) if section in (OPEN, RERUN, ABANDONED) else (section,):
        holds.pop((other, about), None)


def _withdrawn(line: str) -> tuple[str, str]:
    found = re.match(r'- (.*) \(under "(.+)"\)$', line)
    return (found.group(2), _about(found.group(2), "- " + found.group(1))) if found else ("", "")


def _about(section: str, line: str) -> str:
    """What a statement is about: its command, approach, agent, session or file."""
    if section in (OPEN, RERUN, ABANDONED) and "`" in line:
        return _command(line)
    if section in (FAILED, RERUN):
        return line[2:].split("; failed because:")[0].split(" failed: ")[0].split(" (after ")[0]
    return line[2:].split(" ")[0]


def _section_lines(text: str) -> list[tuple[str, str]]:
    out, section = [], None
    for line in text.split("\n"):
        if line.startswith("## "):
            section = line[3:]
        elif section and line.startswith("- ") and not line.startswith("- ... "):
            out.append((section, line))
    return out


def _block_session(r: Reading, text: str) -> str:
    found = PREVIOUS.search(text) or re.search(r"\nSession (\S+), state as of", text)
    return found.group(1) if found else r.receiver


RULES: dict[str, Rule] = {
    TASK: _task,
    FAILED: _failed,
    OPEN: _open,
    RERUN: _rerun,
    ABANDONED: _abandoned,
    FINISHED: _finished,
    LIVE: _live,
    BESIDE: _beside,
    CRASHED: _crashed,
    CLAIMS: _claim,
    GIT: _git,
    AT_FRAME: _at_frame,
    NO_LONGER: _no_longer,
}
FAMILIES = {
    TASK: "task",
    FAILED: "error",
    OPEN: "error",
    RERUN: "error",
    ABANDONED: "error",
    FINISHED: "agent",
    LIVE: "agent",
    BESIDE: "session",
    CRASHED: "kill",
    CLAIMS: "claim",
    GIT: "git",
    AT_FRAME: "fork",
    NO_LONGER: "withdrawal",
}


# --- the ladder, conflict warnings, memories ---------------------------------------------------

LADDER = re.compile(
    r"claude-session: `(.+?)` (?:failed \(attempt (\d+)\)|failed for the (3)rd time"
    r"|has failed (\d+) times)"
)


def _ladder(r: Reading, found: re.Match[str]) -> Verdict:
    command = found.group(1)
    said = int(found.group(2) or found.group(3) or found.group(4))
    if command not in COMMANDS:
        return Verdict("ladder", found.group(0), False, "not a command that ran")
    true, why = _attempts(r, command, said, r.receiver)
    return Verdict("ladder", found.group(0), true, why)


HOLDER = re.compile(
    r"- (.*?)(?: \"[^\"]*\")?(?:, (?:still )?working on: .*|, still working)?;"
    r" it last changed this file (\d+) min ago"
    r" \((\w+), (\d+) edits?\)\.$"
)


def _holder(r: Reading, path: str, line: str) -> Verdict:
    found = HOLDER.match(line)
    if not found:
        return Verdict("unread", line, None, "a conflict line no rule reads")
    described = found.group(1)
    agent = re.search(r"subagent ([0-9a-z]{6,})", described)
    holder = MAIN if "the main thread" in described else (agent.group(1) if agent else "?")
    w = r.world
    other = re.search(r" of session ([^\s,]+)", described)
    sessions = [s for s in w.sessions if other and s.startswith(other.group(1))] or [r.receiver]
    session = sessions[0]
    alive = w.sessions[session].alive and (holder == MAIN or w.running(holder))
    changed = [
        c for c in w.changes if c.session == session and c.agent == holder and c.path == path
    ]
    verdict = f"conflict on {path}: {described[:100]}"
    if not alive or not changed:
        return Verdict(
            "conflict", verdict, False, f"{holder} alive: {alive}, changed it: {bool(changed)}"
        )
    if session != r.receiver:
        ok = "another Claude Code session" in described
        return Verdict("conflict", verdict, ok, "a live agent of another session")
    truth = w.relation(r.agent, holder)
    said = (
        "parent" if described.startswith("your parent")
        else "ancestor" if ", which launched your parent" in described
        else "child" if described.startswith("your background subagent")
        else "descendant" if ", launched in the background under you" in described
        else "sibling" if described.startswith("a sibling subagent")
        else "same session"
    )  # fmt: skip
    if said != truth:
        return Verdict("conflict", verdict, False, f"said {said}, {holder} is the {truth}")
    if truth in ("parent", "ancestor"):
        branch = w.branch(holder, r.agent)
        ok = branch.background and any(c.at > branch.started for c in changed)
        why = "launched my branch in the background, changed it after"
        return Verdict("conflict", verdict, ok, why)
    if truth in ("child", "descendant"):
        ok = w.branch(r.agent, holder).background
        return Verdict("conflict", verdict, ok, "its branch runs beside me, in the background")
    return Verdict("conflict", verdict, True, f"{holder} runs beside and changed it")


def _memory(r: Reading, line: str, notes: list[str]) -> list[Verdict]:
    w = r.world
    found = re.match(r"- \[([^\]]*)\] (.*)$", line)
    if not found:
        return [Verdict("unread", line, None, "a memory line no rule reads")]
    text = found.group(2)
    passed_later = [n for n in notes if n.startswith("the error it was about")]
    out = []
    learned = re.match(r"`Bash: (.+?)` failed (\d+) times", text)
    failed_before = re.match(
        r"An approach that failed before(?: \(file \S+\))?: (.+?)\. Why:", text
    )
    if failed_before:  # "<command> (after editing <file>: ...)": the approach, as recorded
        failed_before = re.match(r"(?s)(.*)", failed_before.group(1).split(" (after ")[0])
    if learned:
        command = learned.group(1)
        ok = command in COMMANDS and w.last_run(command, passed=True) is not None
        out.append(Verdict("memory", line[:160], ok, "it failed, then passed"))
    elif failed_before:
        command = failed_before.group(1)
        fixed = (
            command in COMMANDS
            and w.last_run(command, passed=True) is not None
            and (not w.failures(command))
        )
        ok = command in COMMANDS and (not fixed or bool(passed_later))
        out.append(Verdict("memory", line[:160], ok, "failed, and not passed since unmarked"))
    else:
        out.append(Verdict("unread", line, None, "a memory no rule reads"))
    for note in notes:
        if note.startswith("the error it was about"):
            command = failed_before.group(1) if failed_before else ""
            ok = command in COMMANDS and w.last_run(command, passed=True) is not None
            out.append(Verdict("memory", note, ok, "it passed since"))
        elif note.startswith("possibly stale:"):
            ok = any(c.path in note for c in w.changes)
            out.append(Verdict("memory", note, ok, "a file it names changed"))
        else:
            out.append(Verdict("unread", note, None, "a memory note no rule reads"))
    return out


# --- the status line -------------------------------------------------------------------------


def check_status(world: World, session: str, status: Any, line: str) -> list[Verdict]:
    """The figures `statusline` computes for one session, against the model."""
    if status is None:
        return [Verdict("status", line, False, "no status computed")]
    s = world.sessions[session]
    open_ = {c: world.attempts(c, session) for c in COMMANDS if s.ended is None}
    open_ = {c: n for c, n in open_.items() if n}
    running = 1 if s.alive else 0
    running += sum(
        1 for a in world.agents.values() if a.session == session and world.running(a.id) and s.alive
    )
    out = [
        Verdict("status", f"{session[:8]} open errors {status.open_errors}",
                status.open_errors == len(open_), f"open: {open_}"),
        Verdict("status", f"{session[:8]} top step {status.top_step}",
                status.top_step == max(open_.values(), default=0), f"open: {open_}"),
        Verdict("status", f"{session[:8]} agents {status.agents}", status.agents == running,
                f"{running} running"),
    ]  # fmt: skip
    for path in status.contested:
        writers = {
            (c.session, c.agent)
            for c in world.changes
            if c.path == path
            and world.sessions[c.session].alive
            and (c.agent == MAIN or world.running(c.agent))
        }
        out.append(Verdict("status", f"contested {path}", len(writers) >= 2, f"{writers}"))
    return out


def check_report(world: World, report: dict[str, Any]) -> list[Verdict]:
    """What `status` reports (its JSON): every open error ladder, every session said never to
    have ended, every agent said to run; and no internal error of ours, nothing spooled."""
    out = []
    database = report["database"]
    quiet = database["internal_errors"] == 0 and database["spool_backlog"] == 0
    out.append(Verdict("status", "no internal error, nothing spooled", quiet, f"{database}"))
    for error in report["open_errors"]:
        command, session = error["what"], error["session_id"]
        seen = world.attempts(command, session) if command in COMMANDS else -1
        ended = world.sessions[session].ended is not None
        ok = error["attempts"] == seen and (error["state"] == "abandoned") == ended
        said = f"status: {command} in {session[:8]} failed {error['attempts']}x, {error['state']}"
        out.append(
            Verdict("status", said, ok, f"{seen} failures since it last passed; ended: {ended}")
        )
    for crashed in report["sessions_never_ended"]:
        session = world.sessions[crashed["session_id"]]
        ok = not session.alive and session.ended is None
        out.append(Verdict("status", f"never ended: {session.id}", ok, f"alive: {session.alive}"))
    for agent in report["agents"]:
        if agent["state"] != "running" or agent["type"] == "main":
            continue
        ok = world.running(agent["agent"])
        out.append(Verdict("status", f"running: {agent['agent']}", ok, "started, not stopped"))
    return out


__all__ = ["CHECK", "Verdict", "check_answer", "check_report", "check_status", "read_text"]
