"""A subagent's Edit, Write or Bash is the frame where its changes land, whoever else commits
frames meanwhile (issue 29): `diff` from the frame before to it shows exactly its changes, and
`revert` to the frame before undoes exactly them (`--undo` brings them back byte for byte),
for a foreground and a background subagent, with the main thread's frames interleaved.

Real hook events are applied through the hooks' own code (tests/workbench.py); the capture
process's own function runs at every possible moment of each interleaving, as the background
capture may run at any of them (or only at the end: a capture that is behind)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from workbench import Workbench, git, tree

from claude_session.services.snapshots import before_images, capture, snapshot_files
from claude_session.services.timetravel import timetravel

SUB = "sub-agent-fixer-01"


class Run:
    """One scripted interleaving: `steps` in order; the capture runs after step `capture_at`
    (None: only at the end); the files after each tool call's frame are remembered."""

    def __init__(self, root: Path, capture_at: int | None) -> None:
        self.wb = Workbench(root)
        self.wb.eager = False
        self.capture_at = capture_at
        self.steps = 0
        self.after: dict[int, dict[str, Any]] = {}  # frame -> files right after it
        self.calls = 0

    def step(self, action: Callable[[], None]) -> None:
        action()
        self.steps += 1
        if self.steps == self.capture_at:
            self.wb.capture()

    def send(self, name: str, agent: str | None = None, **changes: Any) -> None:
        self.step(lambda: self.wb.send(name, agent, **changes))

    def begin(self, tool: str, tool_input: dict[str, Any], agent: str | None) -> str:
        """A tool call's PreToolUse: it is now running."""
        self.calls += 1
        use = f"toolu_run_{self.calls:03d}"
        self.send(f"PreToolUse.{tool}", agent, tool_use_id=use, tool_input=tool_input)
        return use

    def end(self, tool: str, use: str, tool_input: dict[str, Any], agent: str | None) -> int:
        """Its PostToolUse: its frame; the files now are what that frame must hold."""
        self.send(f"PostToolUse.{tool}", agent, tool_use_id=use, tool_input=tool_input)
        frame = self.wb.last_frame()
        self.after[frame] = tree(self.wb.root)
        return frame

    def change(self, path: str, content: bytes) -> None:
        self.step(lambda: (self.wb.root / path).write_bytes(content))

    def write(self, path: str, content: bytes, agent: str | None = None) -> int:
        """A whole Write, nothing running beside it."""
        tool_input = {"file_path": str(self.wb.root / path), "content": content.decode()}
        use = self.begin("Write", tool_input, agent)
        self.change(path, content)
        return self.end("Write", use, tool_input, agent)

    def finish(self) -> None:
        while capture.capture_pending(self.wb.rec.conn, str(self.wb.root)):
            pass

    def commit(self, frame: int) -> str:
        ref = timetravel.resolve(self.wb.rec.conn, f"{self.wb.session}:{frame}")
        found = timetravel.pointer(self.wb.rec.conn, ref)[0]
        assert found, f"frame {frame} has no snapshot"
        return found

    def changed(self, frame: int) -> list[str]:
        """`diff` from the frame before to this one: the paths it changed."""
        a, b = self.commit(frame - 1), self.commit(frame)
        return sorted(p for _, p in snapshot_files.changed_paths(str(self.wb.root), a, b))

    def agent_of(self, frame: int) -> str:
        return str(
            self.wb.rec.rows(
                "SELECT agent_id FROM frames WHERE session_id = ? AND frame_no = ?",
                (self.wb.session, frame),
            )[0][0]
        )

    def note(self, frame: int) -> str:
        return str(
            self.wb.rec.rows(
                "SELECT coalesce(note, '') FROM vcs_tags WHERE session_id = ? AND frame_no = ?",
                (self.wb.session, frame),
            )[0][0]
        )

    def check_revert(self, frame: int) -> None:
        """Revert to the frame before: exactly this frame's changes undone; undo: back."""
        now = tree(self.wb.root)
        self.wb.revert(f"{self.wb.session}:{frame - 1}")
        assert tree(self.wb.root) == self.before(frame)
        self.wb.undo()
        assert tree(self.wb.root) == now

    def before(self, frame: int) -> dict[str, Any]:
        earlier = [f for f in self.after if f < frame]
        return self.after[max(earlier)] if earlier else {}


EDIT = {"old_string": "a - b", "new_string": "a + b"}
BUG, FIXED = b"def add(a, b):\n    return a - b\n", b"def add(a, b):\n    return a + b\n"
STEPS = 12  # more than any script below has


def started(root: Path, capture_at: int | None) -> Run:
    git(root, "init", "-q")
    run = Run(root, capture_at)
    run.wb.start()
    run.wb.prompt("write calc.py, then have a subagent fix it")
    run.wb.capture()
    return run


@pytest.fixture(params=[None, *range(1, STEPS)], ids=lambda n: f"capture-after-{n}")
def capture_at(request: pytest.FixtureRequest) -> int | None:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def run_of(project: Path, capture_at: int | None) -> Iterator[Callable[[], Run]]:
    runs: list[Run] = []

    def make() -> Run:
        runs.append(started(project, capture_at))
        return runs[-1]

    yield make
    for run in runs:
        run.wb.close()


def test_a_background_subagents_edit_is_its_own_frame_beside_the_main_threads(
    run_of: Callable[[], Run],
) -> None:
    run = run_of()
    written = run.write("calc.py", BUG)
    run.send("SubagentStart", agent_id=SUB, agent_type="general-purpose")
    edit = {"file_path": str(run.wb.root / "calc.py"), **EDIT}
    use = run.begin("Edit", edit, SUB)  # the subagent's Edit starts ...
    notes = run.write("notes.txt", b"notes\n")  # ... the main thread commits a frame ...
    run.change("calc.py", FIXED)  # ... then the Edit writes, and ends
    fixed = run.end("Edit", use, edit, SUB)
    other = run.write("other.txt", b"other\n")
    run.send("SubagentStop", agent_id=SUB, agent_type="general-purpose")
    run.finish()

    assert (run.agent_of(fixed), run.agent_of(notes)) == (SUB, run.wb.session)
    assert run.changed(written) == ["calc.py"]
    assert run.changed(notes) == ["notes.txt"]
    assert run.changed(fixed) == ["calc.py"]
    assert run.changed(other) == ["other.txt"]
    run.check_revert(fixed)
    assert (run.wb.root / "calc.py").read_bytes() == FIXED
    run.check_revert(notes)


def test_a_foreground_subagents_edit_is_its_own_frame(run_of: Callable[[], Run]) -> None:
    run = run_of()
    written = run.write("calc.py", BUG)
    run.send("SubagentStart", agent_id=SUB, agent_type="general-purpose")
    edit = {"file_path": str(run.wb.root / "calc.py"), **EDIT}
    use = run.begin("Edit", edit, SUB)
    run.change("calc.py", FIXED)
    fixed = run.end("Edit", use, edit, SUB)
    run.send("SubagentStop", agent_id=SUB, agent_type="general-purpose")
    notes = run.write("notes.txt", b"notes\n")
    run.finish()

    assert run.agent_of(fixed) == SUB
    assert [run.changed(f) for f in (written, fixed, notes)] == [
        ["calc.py"],
        ["calc.py"],
        ["notes.txt"],
    ]
    run.check_revert(fixed)


def test_a_main_thread_write_running_across_a_subagents_frame(run_of: Callable[[], Run]) -> None:
    """The other way round: the main thread's Write runs while the subagent commits."""
    run = run_of()
    run.send("SubagentStart", agent_id=SUB, agent_type="general-purpose")
    main = {"file_path": str(run.wb.root / "calc.py"), "content": BUG.decode()}
    use = run.begin("Write", main, None)
    sub = run.write("sub.txt", b"from sub\n", SUB)
    run.change("calc.py", BUG)
    written = run.end("Write", use, main, None)
    run.send("SubagentStop", agent_id=SUB, agent_type="general-purpose")
    run.finish()

    assert (run.changed(sub), run.changed(written)) == (["sub.txt"], ["calc.py"])
    run.check_revert(sub)
    run.check_revert(written)


def test_two_subagents_editing_at_once_each_get_their_own_change(
    run_of: Callable[[], Run],
) -> None:
    run = run_of()
    run.write("calc.py", BUG)
    run.write("b.txt", b"b0\n")
    for agent in (SUB, "sub-agent-other-02"):
        run.send("SubagentStart", agent_id=agent, agent_type="general-purpose")
    one = {"file_path": str(run.wb.root / "calc.py"), **EDIT}
    two = {"file_path": str(run.wb.root / "b.txt"), "old_string": "b0", "new_string": "b1"}
    first = run.begin("Edit", one, SUB)
    second = run.begin("Edit", two, "sub-agent-other-02")
    run.change("b.txt", b"b1\n")
    b_frame = run.end("Edit", second, two, "sub-agent-other-02")
    run.change("calc.py", FIXED)
    calc_frame = run.end("Edit", first, one, SUB)
    run.finish()

    assert (run.changed(b_frame), run.changed(calc_frame)) == (["b.txt"], ["calc.py"])
    run.check_revert(calc_frame)
    run.check_revert(b_frame)


def test_a_bash_running_across_another_agents_frame_is_named_there(project: Path) -> None:
    """A Bash names no file: the frames committed while it runs say they may hold part of its
    changes (never silently); its own frame still holds them all."""
    run = started(project, None)
    run.write("calc.py", BUG)
    run.wb.capture()  # nothing pending when the Bash starts: only another agent is live
    run.send("SubagentStart", agent_id=SUB, agent_type="general-purpose")
    bash = {"command": "sed -i s/-/+/ calc.py", "description": "fix"}
    use = run.begin("Bash", bash, SUB)
    notes = run.write("notes.txt", b"notes\n")
    run.change("calc.py", FIXED)
    fixed = run.end("Bash", use, bash, SUB)
    run.finish()

    assert "may hold changes of Bash, started before it" in run.note(notes)
    assert set(run.changed(notes)) - {"calc.py"} == {"notes.txt"}
    assert set(run.changed(fixed)) | set(run.changed(notes)) == {"calc.py", "notes.txt"}
    run.wb.close()


def test_an_agent_alone_keeps_nothing_while_no_snapshot_is_pending(project: Path) -> None:
    """The main thread with no other live agent: nothing can commit a frame beside its tool,
    so its PreToolUse keeps no file (the hook's cost stays as it was)."""
    run = started(project, None)
    run.write("calc.py", BUG)
    run.wb.capture()
    edit = {"file_path": str(project / "calc.py"), **EDIT}
    run.begin("Edit", edit, None)
    assert before_images.read_all(str(project)) == []
    run.send("SubagentStart", agent_id=SUB, agent_type="general-purpose")
    run.begin("Edit", edit, None)  # now a subagent is live
    kept = before_images.read_all(str(project))
    assert [(e.path, e.use) for e in kept] == [("calc.py", "toolu_run_003")]
    run.wb.close()


def test_entries_of_a_running_tool_outlive_the_grace(project: Path) -> None:
    """A tool running for minutes (a permission prompt) still has its file kept for the
    frames other agents commit meanwhile; once it ended before every pending frame, it goes."""
    run = started(project, None)
    run.write("calc.py", BUG)
    run.wb.capture()
    run.send("SubagentStart", agent_id=SUB, agent_type="general-purpose")
    edit = {"file_path": str(project / "calc.py"), **EDIT}
    use = run.begin("Edit", edit, SUB)
    root, later = str(project), before_images.GRACE_SECONDS * 10
    entries = before_images.read_all(root)
    conn = run.wb.rec.conn
    ends = capture.executions.tool_ends(conn, [use])
    assert ends == {use: None}
    needed = capture._needed(entries, ends, None, entries[0].at + later)
    assert before_images.discard(root, entries[0].at + later, None, needed) == 0
    run.change("calc.py", FIXED)
    run.end("Edit", use, edit, SUB)
    ends = capture.executions.tool_ends(conn, [use])
    needed = capture._needed(entries, ends, None, entries[0].at + later)
    assert before_images.discard(root, entries[0].at + later, None, needed) == 1
    run.wb.close()
