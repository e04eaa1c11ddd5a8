"""Nothing false reaches the model: the real Claude Code CLI 2.1.330, with claude-session
installed from a wheel as users install it (both transports), runs scenarios whose ground truth
the test knows; every statement we put before the model is checked against it when the model
reads it (tests/truth.py). Zero false statements, and the ones that must be said are said.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import WheelInstall, query, wait_for
from fake_api import FakeAnthropic, is_compaction, text, tool
from test_e2e_claude import _blocks, claude_binary, claude_env
from truth import Tap, Truth, add_tap

from claude_session.services.background import daemon_control
from claude_session.services.setup import installer

pytestmark = pytest.mark.e2e

TRANSPORTS = ("command", "mcp")


class Scenario:
    """A project with claude-session installed by the wheel's command, a tap beside it, and
    the truth reader; each request of the model is read before the script answers it."""

    def __init__(self, root: Path, wheel: WheelInstall, transport: str) -> None:
        self.binary = claude_binary()
        self.project, self.home, tap = root / "project", root / "home", root / "tap"
        for folder in (self.project, self.home, tap):
            folder.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=self.project, check=True)
        argv = [wheel.cli, "--project", str(self.project), "install", "--transport", transport]
        if transport == "mcp":
            argv += ["--claude", str(self.binary)]
        env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
        done = subprocess.run(
            argv, capture_output=True, text=True, env=env | {"HOME": str(self.home)}, timeout=180
        )
        assert done.returncode == 0, done.stdout + done.stderr
        settings = self.project / ".claude" / "settings.local.json"
        kinds = {
            g[0]["hooks"][0]["type"] for g in json.loads(settings.read_text())["hooks"].values()
        }
        assert ("mcp_tool" in kinds) == (transport == "mcp"), kinds
        add_tap(settings, tap, installer.installed_events())
        self.tap = Tap(tap)
        self.truth = Truth(self.tap, self.project)

    def agent(self, body: dict[str, Any], subagent: bool) -> str:
        """Whose request this is: 'main', or the subagent's id (from a tool call it made)."""
        if not subagent:
            return "main"
        for block in _blocks(body.get("messages") or []):
            if block.get("type") == "tool_result":
                found = self.tap.agent_of_tool(str(block.get("tool_use_id")))
                if found:
                    return found
        return "?"

    def claude(self, api: FakeAnthropic, prompt: str, *args: str) -> subprocess.Popen[str]:
        self.truth.prompts.append(prompt)
        return subprocess.Popen(
            [str(self.binary), "-p", prompt, *args, "--output-format", "json",
             "--dangerously-skip-permissions"],
            cwd=self.project, env=claude_env(self.home, api.url), text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip

    def binary_run_in(self, folder: Path, api: FakeAnthropic, prompt: str) -> None:
        """`claude -p` in another folder (a fork) of this project."""
        done = subprocess.run(
            [str(self.binary), "-p", prompt, "--output-format", "json",
             "--dangerously-skip-permissions"],
            cwd=folder, env=claude_env(self.home, api.url), capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    def run(self, api: FakeAnthropic, prompt: str, *args: str) -> dict[str, Any]:
        process = self.claude(api, prompt, *args)
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, out[-2000:] + err[-2000:]
        result: dict[str, Any] = json.loads(out)
        return result

    def stop(self) -> None:
        daemon_control.stop(str(self.project))

    def said(self, *words: str) -> list[str]:
        return [v.statement for v in self.truth.verdicts if all(w in v.statement for w in words)]

    def report(self) -> str:
        return "\n".join(
            f"{v.true} [{v.agent}] {v.statement} -- {v.why}" for v in self.truth.verdicts
        )


def _prompt_of(body: dict[str, Any]) -> str:
    """The first user text of the conversation: which agent's it is."""
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            return content.strip()
        for block in content or []:
            if block.get("type") == "text" and "<system-reminder>" not in block.get("text", ""):
                return str(block["text"]).strip()
    return ""


def _latest_prompt(body: dict[str, Any]) -> str:
    """The prompt of the turn under way: the last user text that is no tool result nor a
    system reminder (a resumed conversation's first prompt is an older one)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content.strip()
        texts = [
            str(b.get("text", ""))
            for b in content or []
            if b.get("type") == "text" and not str(b.get("text", "")).startswith("<system-")
        ]
        if texts:
            return texts[-1].strip()
    return ""


def _results(body: dict[str, Any]) -> int:
    return sum(1 for b in _blocks(body.get("messages") or []) if b.get("type") == "tool_result")


# --- 1. one session: delegation (foreground, background), siblings, a parent beside its child --

TREE = "TRUTH-TREE: hand shared.txt to subagents"
FG = "TRUTH-FG: change alpha in shared.txt"
ONE = "TRUTH-ONE: change beta in shared.txt"
TWO = "TRUTH-TWO: change gamma in shared.txt"


class Tree:
    def __init__(self, scenario: Scenario) -> None:
        self.s = scenario
        self.path = str(scenario.project / "shared.txt")
        self.one_edited, self.main_edited, self.two_done = (threading.Event() for _ in range(3))

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        prompt, done = _prompt_of(body), _results(body)
        self.s.truth.read(body, self.s.agent(body, prompt != TREE))
        if prompt == FG:
            steps = [
                lambda: tool("Read", file_path=self.path),
                lambda: tool(
                    "Edit", file_path=self.path, old_string="alpha", new_string="alpha-fg"
                ),
            ]
            return [steps[done]()] if done < len(steps) else [text("FG done")]
        if prompt == ONE:
            if done == 0:
                return [tool("Read", file_path=self.path)]
            if done == 1:
                return [tool("Edit", file_path=self.path, old_string="beta", new_string="beta-1")]
            self.one_edited.set()
            self.two_done.wait(90)  # alive, holding the file, while main and TWO edit it
            return [text("ONE done")]
        if prompt == TWO:
            if done == 0:
                self.main_edited.wait(90)
                return [tool("Read", file_path=self.path)]
            if done == 1:
                return [tool("Edit", file_path=self.path, old_string="gamma", new_string="gamma-2")]
            self.two_done.set()
            return [text("TWO done")]
        if prompt != TREE:
            return [text("ok")]
        plan = [
            lambda: [tool("Write", file_path=self.path, content="alpha\nbeta\ngamma\n")],
            lambda: [tool("Agent", description="fg fix", prompt=FG,
                          subagent_type="general-purpose", run_in_background=False)],
            lambda: [
                tool("Agent", description="bg one", prompt=ONE,
                     subagent_type="general-purpose", run_in_background=True),
                tool("Agent", description="bg two", prompt=TWO,
                     subagent_type="general-purpose", run_in_background=True),
            ],
            lambda: self._after(self.one_edited, [tool("Read", file_path=self.path)]),
            lambda: [tool("Edit", file_path=self.path, old_string="alpha-fg",
                          new_string="alpha-main")],
        ]  # fmt: skip
        used = sum(1 for b in _blocks(body.get("messages") or []) if b.get("type") == "tool_use")
        if used < 6:  # Write, FG, ONE + TWO, Read, Edit
            step = {0: 0, 1: 1, 2: 2, 4: 3, 5: 4}.get(used)
            if step is not None:
                return plan[step]()
        self.main_edited.set()
        return [text("The subagents are at work.")]

    @staticmethod
    def _after(event: threading.Event, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        event.wait(90)
        return blocks


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_delegation_siblings_and_a_parent_beside_its_child_are_told_the_truth(
    tmp_path: Path, wheel_install: WheelInstall, transport: str
) -> None:
    s = Scenario(tmp_path, wheel_install, transport)
    model = Tree(s)
    try:
        with FakeAnthropic(model) as api:
            s.run(api, TREE)
    finally:
        s.stop()
    assert (s.project / "shared.txt").read_text() == "alpha-main\nbeta-1\ngamma-2\n"
    assert not s.truth.false(), s.report()
    # what had to be said was said, to whom it was due, and nothing to the delegated ones
    one = s.tap.agent_of_tool(_edit_of(s, "beta"))
    two = s.tap.agent_of_tool(_edit_of(s, "gamma"))
    fg = s.tap.agent_of_tool(_edit_of(s, "alpha"))
    by_agent = {v.agent for v in s.truth.verdicts if v.statement.startswith("conflict")}
    assert by_agent == {"main", two}, s.report()
    assert fg not in by_agent and one not in by_agent
    assert s.said("conflict", "your background subagent", str(one)), s.report()
    assert s.said("conflict", "a sibling subagent", str(one)), s.report()
    assert s.said("conflict", "your parent, the main thread"), s.report()
    print(f"\n[{transport}] tree: {s.truth.count()} statements checked, 0 false")
    print(s.report())


def _edit_of(s: Scenario, old: str) -> str:
    for sent in s.tap.sent():
        edit = sent["hook_event_name"] == "PreToolUse" and sent["tool_name"] == "Edit"
        if edit and (sent["tool_input"] or {}).get("old_string") == old:
            return str(sent["tool_use_id"])
    raise AssertionError(f"no Edit of {old!r}")


# --- 2. Claude Code killed mid-subagent; a new session a second later -----------------------

KILLED = "TRUTH-KILL: run the long job in a subagent"
LONG = "TRUTH-LONG: run the long job"
NEXT = "TRUTH-NEXT: what is the state of the project?"


class Killed:
    def __init__(self, scenario: Scenario) -> None:
        self.s = scenario
        self.first_next: dict[str, Any] | None = None

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        prompt, done = _prompt_of(body), _results(body)
        self.s.truth.read(body, self.s.agent(body, prompt == LONG))
        if prompt == LONG:
            return (
                [tool("Bash", command="sleep 20", description="the long job")]
                if not done
                else [text("finished")]
            )
        if prompt == KILLED:
            if not done:
                return [tool("Agent", description="long job", prompt=LONG,
                             subagent_type="general-purpose", run_in_background=True)]  # fmt: skip
            return [text("The job runs in the background.")]
        if prompt == NEXT and self.first_next is None:
            self.first_next = body
        return [text("Looking.")]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_session_a_second_after_claude_code_was_killed_hears_no_ghost(
    tmp_path: Path, wheel_install: WheelInstall, transport: str
) -> None:
    s = Scenario(tmp_path, wheel_install, transport)
    model = Killed(s)
    try:
        with FakeAnthropic(model) as api:
            first = s.claude(api, KILLED)

            def long_job_started() -> bool:
                return any(
                    e["hook_event_name"] == "PreToolUse"
                    and e["agent_id"]
                    and e["tool_name"] == "Bash"
                    for e in s.tap.sent()
                )

            assert wait_for(long_job_started, 120)
            killed = next(
                e["session_id"] for e in s.tap.sent() if e["hook_event_name"] == "SessionStart"
            )
            s.truth.processes[killed] = first
            os.kill(first.pid, signal.SIGKILL)
            first.wait(30)
            time.sleep(1)
            s.run(api, NEXT)
    finally:
        s.stop()
    assert model.first_next is not None
    assert not s.truth.false(), s.report()
    interrupted = s.said("Sessions that never ended (interrupted)", killed)
    assert interrupted and f"`claude --resume {killed}`" in interrupted[0], s.report()
    # the step the kill cut short, and the subagent that ran it, are named
    subagent = next(e["agent_id"] for e in s.tap.sent() if e["hook_event_name"] == "SubagentStart")
    assert "last step: Bash: sleep 20, still running when it stopped" in interrupted[0]
    assert f"subagents cut off: {subagent}" in interrupted[0], s.report()
    assert not s.said("Live subagents"), s.report()
    print(f"\n[{transport}] killed: {s.truth.count()} statements checked, 0 false")
    print(s.report())


def test_after_a_kill_and_resume_the_interrupted_call_is_no_error(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    """Claude Code killed while a subagent's Bash ran, then `--resume`: the call it cut short
    (its placeholder result, once the transcript is read) is an interruption, not an open
    error, and the subagent was cut off, not failed."""
    s = Scenario(tmp_path, wheel_install, "command")
    model = Killed(s)
    try:
        with FakeAnthropic(model) as api:
            first = s.claude(api, KILLED)
            assert wait_for(
                lambda: any(
                    e["hook_event_name"] == "PreToolUse" and e["agent_id"] for e in s.tap.sent()
                ),
                120,
            )
            killed = next(
                e["session_id"] for e in s.tap.sent() if e["hook_event_name"] == "SessionStart"
            )
            os.kill(first.pid, signal.SIGKILL)
            first.wait(30)
            s.run(api, NEXT, "--resume", killed)
            launch = next(
                e["tool_use_id"]
                for e in s.tap.sent()
                if e["hook_event_name"] == "PreToolUse" and e["tool_name"] == "Agent"
            )
            # the daemon reads the transcript once the resumed session ended
            settled = "SELECT status FROM tool_calls WHERE tool_use_id = ?"
            wait_for(lambda: query(s.project, settled, (launch,)) != [("running",)], 60)
    finally:
        s.stop()
    assert not s.truth.false(), s.report()
    agent = next(e["agent_id"] for e in s.tap.sent() if e["hook_event_name"] == "SubagentStart")
    errors = query(s.project, "SELECT tool_name, interrupted, error_message FROM error_log")
    assert not [e for e in errors if e[1] == 0], errors
    status = query(s.project, "SELECT status FROM agent_registry WHERE id = ?", (agent,))
    assert status and status[0][0] != "failed", status
    print(f"\nkilled and resumed: errors {errors}, subagent {status}")


# --- 3. a check fixed by a subagent, then /compact and a resume ------------------------------

CHECK = "python3 -c 'import m; assert m.f() == 2'"
FIX = "TRUTH-CHECK: make m.f() return 2"
FIXER = "TRUTH-FIXER: make f in m.py return 2"
AFTER = "TRUTH-AFTER: where are we?"
AGAIN_CHECK = "TRUTH-RECHECK: run the check again"
LAST = "TRUTH-LAST: anything left?"


class Fixed:
    def __init__(self, scenario: Scenario) -> None:
        self.s = scenario
        self.path = str(scenario.project / "m.py")
        self.after: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        if is_compaction(body):
            return [text("<summary>A check failed three times; a subagent changed m.py.</summary>")]
        prompt, done = _prompt_of(body), _results(body)
        self.s.truth.read(body, self.s.agent(body, prompt == FIXER))
        if prompt == FIXER:
            steps = [
                lambda: tool("Read", file_path=self.path),
                lambda: tool("Write", file_path=self.path, content="def f():\n    return 2\n"),
            ]
            return [steps[done]()] if done < len(steps) else [text("f returns 2 now")]
        if prompt == FIX:
            if done < 3:
                return [tool("Bash", command=CHECK, description="check f")]
            if done == 3:
                return [tool("Agent", description="fix f", prompt=FIXER,
                             subagent_type="general-purpose", run_in_background=False)]  # fmt: skip
            return [text("A subagent changed m.py.")]
        if _latest_prompt(body) == AGAIN_CHECK:
            if done == 0 or not any(
                b.get("type") == "tool_use" and b.get("name") == "Bash"
                for b in _blocks((body.get("messages") or [])[-2:])
            ):
                return [tool("Bash", command=CHECK, description="check f again")]
            return [text("The check passes now.")]
        if AFTER in json.dumps(body.get("messages") or []):
            self.after.append(body)
        return [text("Going on.")]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_check_a_subagent_fixed_is_never_a_dead_end_after_compact_and_resume(
    tmp_path: Path, wheel_install: WheelInstall, transport: str
) -> None:
    s = Scenario(tmp_path, wheel_install, transport)
    (s.project / "m.py").write_text("def f():\n    return 1\n")
    s.truth.runnable.add(CHECK)
    model = Fixed(s)
    try:
        with FakeAnthropic(model) as api:
            session = s.run(api, FIX)["session_id"]
            s.run(api, "/compact", "--resume", session)
            # a second compaction at once: the first one's block is summarised away, so the
            # whole state is given again (the truth reader fails a "still in your context")
            s.run(api, "/compact", "--resume", session)
            s.run(api, AFTER, "--resume", session)
            s.run(api, AGAIN_CHECK, "--resume", session)  # it passes: resolved
            s.run(api, LAST, "--resume", session)  # told it is no longer so, once
    finally:
        s.stop()
    assert model.after, "no request after the resume"
    assert not s.truth.false(), s.report()
    assert s.said("ladder", "failed 3 times"), s.report()
    rerun = s.said("To re-run", "m.py changed since by subagent")
    assert rerun, s.report()
    assert not s.said("Failed approaches", "m.f()") and not s.said("Open errors", "m.f()")
    assert s.said("No longer so", "m.f()"), s.report()
    assert s.said("held: the state given at"), s.report()
    compactions = query(
        s.project, "SELECT text FROM injections WHERE source = 'compact' ORDER BY id"
    )
    assert len(compactions) == 2 and all(
        "is still in your context and still holds" not in text for (text,) in compactions
    ), compactions
    print(f"\n[{transport}] fixed check: {s.truth.count()} statements checked, 0 false")
    print(s.report())


# --- 4. a fork and a replay from a frame ---------------------------------------------------

WORK = "TRUTH-WORK: try the config, then hand notes to a subagent"
NOTES = "TRUTH-NOTES: write notes.txt"
MISSING = "cat missing.yaml"
GO_ON = "TRUTH-FORK: go on from here"
AGAIN = "TRUTH-REPLAY: try again"


class Forkable:
    def __init__(self, scenario: Scenario) -> None:
        self.s = scenario
        self.truth = scenario.truth  # the fork's and replay's own, once made
        self.firsts: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        prompt, done = _prompt_of(body), _results(body)
        self.truth.read(body, self.s.agent(body, prompt == NOTES))
        if prompt == NOTES:
            if not done:
                path = str(self.s.project / "notes.txt")
                return [tool("Write", file_path=path, content="notes\n")]
            return [text("wrote notes.txt")]
        if prompt == WORK:
            plan = [
                lambda: tool("Bash", command=MISSING, description="read the config"),
                lambda: tool("Agent", description="notes", prompt=NOTES,
                             subagent_type="general-purpose", run_in_background=False),
                lambda: tool("Bash", command="echo done > done.txt", description="finish"),
            ]  # fmt: skip
            return [plan[done]()] if done < len(plan) else [text("Done.")]
        self.firsts.append(body)
        return [text("Going on from the frame.")]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_fork_and_a_replay_are_told_only_what_held_at_their_frame(
    tmp_path: Path, wheel_install: WheelInstall, transport: str
) -> None:
    s = Scenario(tmp_path, wheel_install, transport)
    git = ["git", "-C", str(s.project), "-c", "user.name=u", "-c", "user.email=u@e"]
    (s.project / "app.py").write_text("VALUE = 1\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    s.truth.runnable.add(MISSING)
    model = Forkable(s)

    def cli(*args: str, **env: str) -> Any:
        ours = args[: args.index("--")] if "--" in args else args
        theirs = args[len(ours) :]
        done = subprocess.run(
            [wheel_install.cli, "--project", str(s.project), *ours, "--json", *theirs],
            capture_output=True, text=True, env={**os.environ, "HOME": str(s.home), **env},
            timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return json.loads(done.stdout)

    roots = []
    try:
        with FakeAnthropic(model) as api:
            session = s.run(api, WORK)["session_id"]
            pending = "SELECT 1 FROM vcs_tags WHERE status = 'pending'"
            assert wait_for(lambda: not query(s.project, pending), 60)
            frames = cli("timeline", session)["frames"]
            last = max(f["frame"] for f in frames if f["summary"].startswith("Bash: echo done"))
            fork = Path(cli("fork", f"{session}:{last - 1}", "--label", "truth")["path"])
            roots.append(fork)
            model.truth = Truth(s.tap, fork, prompts=[WORK, GO_ON], runnable={MISSING})
            s.binary_run_in(fork, api, GO_ON)
            forked = model.truth
            replay_root = Path(f"{s.project}-replay-{session[:8]}-{last - 1}")  # where it goes
            model.truth = Truth(s.tap, replay_root, prompts=[WORK, AGAIN], runnable={MISSING})
            replayed = cli(
                "replay", f"{session}:{last - 1}", "--prompt", AGAIN, "--label", "again",
                "--claude", str(s.binary), "--", "--dangerously-skip-permissions",
                **claude_env(s.home, api.url),
            )  # fmt: skip
            roots.append(Path(replayed["path"]))
            assert roots[-1] == replay_root
    finally:
        s.stop()
        for root in roots:
            daemon_control.stop(str(root))
    assert len(model.firsts) >= 2, "the fork's and the replay's first requests"
    checked = [*s.truth.verdicts, *forked.verdicts, *model.truth.verdicts]
    shown = "\n".join(f"{v.true} [{v.agent}] {v.statement} -- {v.why}" for v in checked)
    assert not [v for v in checked if v.true is not True], shown
    # the state the fork starts from is the frame's, and says so: its time is the frame's
    frame_at = next(f["created_at"] for f in frames if f["frame"] == last - 1)
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(frame_at))
    told = [json.dumps(b.get("messages") or []) for b in model.firsts]
    blocks = [t for t in told if "started by claude-session from frame" in t]
    assert len(blocks) >= 2, "the fork's and the replay's blocks"
    for given in blocks:
        said = given[given.index("started by claude-session from frame") :][:1500]
        assert f"State as of {when}." in said, (when, said)
    for told in (forked, model.truth):  # the fork's first session, then the replay's
        said = [v.statement for v in told.verdicts]
        assert any(MISSING in v and v.startswith("Open errors") for v in said), shown
        assert any(v.startswith("Subagents at that frame") for v in said), shown
        assert any(v.startswith("Task") and WORK in v for v in said), shown
    print(f"\n[{transport}] fork and replay: {len(checked)} statements checked, 0 false")
    print(shown)


# --- 5. a command that failed in one session passes in a later one ---------------------------

MIGRATE = "python3 migrate.py"
BREAK = "TRUTH-MIGRATE: run the migration"
MEND = "TRUTH-MEND: fix migrate.py and run it"
THEN = "TRUTH-THEN: what is left to do?"


class Mended:
    def __init__(self, scenario: Scenario) -> None:
        self.s = scenario
        self.then: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        prompt, done = _prompt_of(body), _results(body)
        self.s.truth.read(body, "main")
        if prompt == BREAK:
            return (
                [tool("Bash", command=MIGRATE, description="migrate")]
                if done < 3
                else [text("It keeps failing.")]
            )
        if prompt == MEND:
            path = str(self.s.project / "migrate.py")
            steps = [
                lambda: tool("Write", file_path=path, content="print('migrated')\n"),
                lambda: tool("Bash", command=MIGRATE, description="migrate again"),
            ]
            return [steps[done]()] if done < len(steps) else [text("It passes now.")]
        if prompt == THEN:
            self.then.append(body)
        return [text("Nothing is left.")]


def test_a_pass_in_a_later_session_resolves_the_error_everywhere(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    """Three failures in one session, the fix and a pass in the next: the session after is
    not told to re-run it nor that it failed before (unmarked), and the status line of the
    first session shows no open error."""
    s = Scenario(tmp_path, wheel_install, "command")
    (s.project / "migrate.py").write_text("raise SystemExit('bad row 7')\n")
    s.truth.runnable.add(MIGRATE)
    model = Mended(s)
    try:
        with FakeAnthropic(model) as api:
            first = s.run(api, BREAK)["session_id"]
            s.run(api, MEND)
            s.run(api, THEN)
    finally:
        s.stop()
    assert not s.truth.false(), s.report()
    assert s.said("ladder", "failed 3 times"), s.report()
    assert model.then, "no request of the third session"
    told = json.dumps(model.then[0].get("messages") or [])
    for section in ("Open errors", "To re-run", "Abandoned errors", "Failed approaches"):
        assert not (section in told and MIGRATE in told.split(section, 1)[1][:600]), told[:4000]
    if "An approach that failed before" in told:  # a learning from the dead end: marked
        assert "passed later" in told, told[:4000]
    line = subprocess.run(
        [wheel_install.cli, "statusline", "--json"],
        input=json.dumps({"session_id": first, "cwd": str(s.project)}),
        capture_output=True, text=True, env={**os.environ, "HOME": str(s.home)}, timeout=60,
    )  # fmt: skip
    assert line.returncode == 0, line.stderr
    assert json.loads(line.stdout)["open_errors"] == 0, line.stdout
    unfixed = query(
        s.project, "SELECT count(*) FROM error_log WHERE resolution IS NOT 'auto_fixed'"
    )
    assert unfixed == [(0,)], unfixed
    print(f"\nmended: {s.truth.count()} statements checked, 0 false")
    print(s.report())
