"""What is true of a project, from the hooks contract alone: the reference every statement
claude-session gives the model is checked against (tests/histories.py).

It imports nothing of claude-session's and knows only what Claude Code does: who runs, what
each tool call did to the files, what each run of a command returned, and what the model's
context holds after each injection, compaction and resume. What a fork or a replay starts from
is the world as it stood at its frame (tests/histories.py keeps a copy after each step). Short
on purpose: a reader checks it by eye, and a disagreement with the product is the product's to
explain.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAIN = "main"
# Each command the generated agents run, and the file it depends on: a check (the tests) any
# file of the project, a script the one file it runs. A command passes when that file is good.
CHECK = "pytest -q tests/test_app.py"
SCRIPT = "python migrate.py"
COMMANDS = {CHECK: "app.py", SCRIPT: "migrate.py"}
FILES = ("app.py", "migrate.py", "notes.md")


@dataclass
class Agent:
    id: str
    session: str
    parent: str  # MAIN or a subagent's id
    background: bool
    task: str
    started: float
    stopped: float | None = None  # SubagentStop came
    aborted: float | None = None  # its Claude Code was killed while it ran
    report: str = ""


@dataclass
class Step:
    at: float
    session: str
    agent: str
    tool: str  # Bash, Write
    target: str  # the command or the file
    ended: bool = False  # its PostToolUse(Failure) came


@dataclass
class Run:
    at: float
    session: str
    agent: str
    command: str
    passed: bool


@dataclass
class Change:
    at: float
    session: str
    agent: str
    path: str


@dataclass
class Given:
    """A block of recorded state put in the main thread's context."""

    at: float
    text: str


@dataclass
class Session:
    id: str
    started: float
    alive: bool = True  # its Claude Code process runs
    ended: float | None = None  # SessionEnd came
    prompts: list[tuple[float, str]] = field(default_factory=list)
    context: list[Given] = field(default_factory=list)  # what the model holds of ours
    compacted_at: float | None = None
    git_at_compaction: set[str] | None = None  # files differing from HEAD at the last PreCompact


@dataclass
class World:
    now: float = 1_800_000_000.0
    sessions: dict[str, Session] = field(default_factory=dict)
    agents: dict[str, Agent] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    good: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(FILES, True))
    ends: list[tuple[float, str]] = field(default_factory=list)  # (when, session): SessionEnd
    resumes: list[tuple[float, str]] = field(default_factory=list)  # (when, session)

    # --- who runs ------------------------------------------------------------------------

    def running(self, agent: str) -> bool:
        a = self.agents.get(agent)
        return a is not None and a.stopped is None and a.aborted is None

    def busy(self, agent: str, session: str) -> bool:
        """An agent that waits for a foreground subagent cannot act."""
        return any(
            a.session == session and a.parent == agent and not a.background and self.running(a.id)
            for a in self.agents.values()
        )

    def chain(self, agent: str) -> list[str]:
        """Who launched `agent`, then who launched that one, up to the main thread."""
        out = []
        while agent != MAIN:
            agent = self.agents[agent].parent
            out.append(agent)
        return out

    def relation(self, actor: str, holder: str) -> str:
        """How `holder` stands to `actor` (both of one session)."""
        above, below = self.chain(actor), self.chain(holder)
        if holder in above:
            return "parent" if above[0] == holder else "ancestor"
        if actor in below:
            return "child" if below[0] == actor else "descendant"
        return "sibling" if above[:1] == below[:1] else "same session"

    def branch(self, upper: str, lower: str) -> Agent:
        """The agent `upper` launched that `lower` is, or descends from: the branch it handed
        work to. They act at the same time only if that launch was in the background (else
        `upper` waits for the branch to return)."""
        while self.agents[lower].parent != upper:
            lower = self.agents[lower].parent
        return self.agents[lower]

    # --- commands and files --------------------------------------------------------------

    def passes_now(self, command: str) -> bool:
        return self.good[COMMANDS[command]]

    def last_run(self, command: str, passed: bool | None = None) -> Run | None:
        found = [r for r in self.runs if r.command == command and passed in (None, r.passed)]
        return found[-1] if found else None

    def failures(self, command: str, session: str | None = None) -> list[Run]:
        """Failures since the command last passed, anywhere (in `session`, when given)."""
        passed = self.last_run(command, passed=True)
        since = passed.at if passed else -1.0
        return [
            r
            for r in self.runs
            if r.command == command
            and not r.passed
            and r.at > since
            and session in (None, r.session)
        ]

    def attempts(self, command: str, session: str, until: float | None = None) -> int:
        """The attempts of `session`'s climb of the command (by `until`): its failures since the
        command last passed, after those of the climb it continues. A climb another session
        left open when it ended (SessionEnd: it was abandoned, and a new session is told so)
        goes on in the session whose first failure came after that end, the latest such end,
        unless that session was resumed in between (its climb is its own again), as it stood
        at the climb's latest failure (each failure is numbered when it comes); sessions
        failing side by side climb their own."""
        until = self.now if until is None else until
        own = [r for r in self.failures(command, session) if r.at <= until]
        if not own:
            return 0
        left = [
            (at, other)
            for at, other in self.ends
            if other != session
            and at <= own[0].at
            and any(r.at <= at for r in self.failures(command, other))
            and not any(s == other and at < t <= own[-1].at for t, s in self.resumes)
        ]
        if not left:
            return len(own)
        at, other = max(left)
        return len(own) + self.attempts(command, other, at)

    def depends(self, command: str, path: str) -> bool:
        return command == CHECK or COMMANDS[command] == path

    def changed_after(self, command: str, at: float) -> list[Change]:
        return [c for c in self.changes if c.at > at and self.depends(command, c.path)]

    def still_fails(self, command: str) -> bool:
        """Known to fail now: it failed last, and nothing it depends on changed since."""
        last = self.last_run(command)
        return bool(last and not last.passed and not self.changed_after(command, last.at))

    def to_rerun(self, command: str) -> bool:
        """It failed last, and a file it depends on changed since: not known either way."""
        last = self.last_run(command)
        return bool(last and not last.passed and self.changed_after(command, last.at))

    # --- the model's context -------------------------------------------------------------

    def give(self, session: str, text: str) -> None:
        self.sessions[session].context.append(Given(self.now, text))

    def compact(self, session: str) -> None:
        """A compaction summarises everything before it: none of our blocks stays verbatim."""
        self.sessions[session].context = []
        self.sessions[session].compacted_at = self.now

    def held_at(self, session: str) -> list[float]:
        return [g.at for g in self.sessions[session].context]

    # --- sessions ------------------------------------------------------------------------

    def last_step(self, session: str) -> Step | None:
        found = [s for s in self.steps if s.session == session]
        return found[-1] if found else None

    def aborted_agents(self, session: str) -> list[Agent]:
        return [a for a in self.agents.values() if a.session == session and a.aborted]

    def files_changed(self) -> set[str]:
        """Files that differ from the commit (a file is written bad or good; both differ)."""
        return {c.path for c in self.changes}
