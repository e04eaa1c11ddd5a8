"""The revert invariant, model-based: for any sequence of tool edits, Bash changes, subagent
edits, the user's own edits, reverts and undos over real files in a real project,

- `revert X` then `revert --undo` leaves every file and folder byte-identical to before the
  revert (content, mode, links as links), or the revert refused and changed nothing;
- a revert changes nothing outside the project, nothing inside a nested repository, and
  nothing no snapshot captured (files over the size limit it did not keep, fifos, ignored
  files).

Snapshots are taken at once, or (lazy) only now and then and at a revert, as when the next
tool starts before the background capture ran. The project is a git repository or a plain
folder; names include newlines, non-UTF-8 bytes
and spaces; there are links in and out of the project, nested repositories (committed or
not), files over the size limit, fifos (what a capture cannot read: the tests run as root,
for whom no permission makes a file unreadable), ignored files and empty folders.

CI runs a bounded number of examples; `CLAUDE_SESSION_MODEL_EXAMPLES=500` runs more.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from conftest import run_tmp, stop_processes, write_config
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from workbench import Workbench, git, reads_anything, rerun_without_reading_anything, tree

from claude_session.services.timetravel import revert

EXAMPLES = int(os.environ.get("CLAUDE_SESSION_MODEL_EXAMPLES", "40"))
STEPS = int(os.environ.get("CLAUDE_SESSION_MODEL_STEPS", "25"))
LIMIT_MB = 0.01  # files over ~10 KB are "large": left out of the frame snapshots
NAMES = [
    "a.txt",
    "src/app.py",
    "src/deep/er/mod.py",
    "sp ace.md",
    "new\nline.txt",
    os.fsdecode(b"caf\xe9-latin1.txt"),  # not UTF-8
    "build.log",  # ignored by the project's .gitignore
    "vendor/lib/lib.py",  # inside the nested repository, once there is one
    "vendor/wt/code.py",  # inside a worktree-like checkout (its .git is a file), once there
    "data.bin",
]
BIG = b"<20 KB>"  # written as 20 KB of text: over the size limit (a short name in reports)
CONTENT = st.sampled_from([b"", b"one\n", b"two\n", b"\x00\xff binary\n", BIG])
AGENTS = st.sampled_from([None, None, "sub-agent-1"])


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file() or (path.exists() and not path.is_dir()):
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


class RevertMachine(RuleBasedStateMachine):
    """The system under test: a recorded project. The model: what the project held before
    each revert, and what a revert must never touch."""

    def __init__(self) -> None:
        super().__init__()
        self.base = Path(tempfile.mkdtemp(prefix="revert-model-", dir=run_tmp()))
        self.state = self.base / "state"
        os.environ["CLAUDE_SESSION_STATE_DIR"] = str(self.state)
        self.root = self.base / "project"
        self.outside = self.base / "outside"
        self.bench: Workbench | None = None
        self.before_revert: dict[str, tuple[str, int, bytes]] | None = None
        self.subagent_started = False

    # --- set-up --------------------------------------------------------------------------------

    @initialize(as_git=st.booleans(), ignore=st.booleans(), lazy=st.booleans())
    def start(self, as_git: bool, ignore: bool, lazy: bool) -> None:
        self.root.mkdir()
        self.outside.mkdir()
        (self.outside / "theirs.txt").write_text("outside the project\n")
        self.outside_tree = tree(self.outside)
        (self.root / "a.txt").write_text("original\n")
        (self.root / ".gitignore").write_text("*.log\n" if ignore else "")
        write_config(self.root, {"snapshot_max_file_mb": LIMIT_MB})
        if as_git:
            git(self.root, "init", "-q")
            git(self.root, "add", ".")
            git(self.root, "commit", "-qm", "init")
        self.bench = Workbench(self.root)
        self.bench.start()
        self.bench.prompt()
        self.bench.eager = not lazy  # lazy: tools start before the snapshots are taken

    def teardown(self) -> None:
        if self.bench is not None:
            self.bench.close()
        stop_processes([self.base], grace=3.0)  # a capture process still at work in it
        for dirpath, dirnames, _ in os.walk(self.base):
            for name in dirnames:  # modes the steps set must not stop the clean-up
                os.chmod(os.path.join(dirpath, name), 0o755)
        shutil.rmtree(self.base, ignore_errors=True)

    @property
    def wb(self) -> Workbench:
        assert self.bench is not None
        return self.bench

    # --- what changes the files ----------------------------------------------------------------

    def _change(self, kind: str, name: str, content: bytes) -> None:
        """One change to the project, as a tool or the user would make it."""
        path = self.root / name
        content = b"x" * 20_000 if content == BIG else content
        if kind in ("write", "large") and path.parent.is_symlink():
            return
        if kind == "write":
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.is_symlink() or (
                path.exists() and not (path.is_file() and os.access(path, os.W_OK))
            ):
                path.unlink()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        elif kind == "large":
            _remove(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(os.urandom(12_000) + content)
        elif kind == "delete":
            _remove(path)
        elif kind == "chmod" and path.is_file() and not path.is_symlink():
            path.chmod(0o600 if path.stat().st_mode & 0o077 else 0o755)
        elif kind == "link-in":
            _remove(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.symlink_to("a.txt" if path.parent == self.root else "../a.txt")
        elif kind == "link-out":
            _remove(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.symlink_to(self.outside)
        elif kind == "unreadable":  # without root's override (see the test below) no one reads it
            if path.is_symlink() or not path.is_file():
                _remove(path)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content + b"secret")
            path.chmod(0)
        elif kind == "fifo":
            _remove(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            os.mkfifo(path)
        elif kind == "empty-folder":
            (self.root / "empty" / "folder").mkdir(parents=True, exist_ok=True)
        elif kind == "worktree":  # a submodule's or worktree's checkout: `.git` is a file
            checkout = self.root / "vendor" / "wt"
            if checkout.is_symlink() or (checkout.exists() and not checkout.is_dir()):
                checkout.unlink()
            checkout.mkdir(parents=True, exist_ok=True)
            (checkout / ".git").write_text("gitdir: ../../.git/modules/wt\n")
            (checkout / "code.py").unlink() if (checkout / "code.py").is_symlink() else None
            if not (checkout / "code.py").is_dir():
                (checkout / "code.py").unlink(missing_ok=True)
                (checkout / "code.py").write_bytes(content or b"WT\n")
        elif kind == "nested":
            lib = self.root / "vendor" / "lib"
            if lib.is_symlink() or (lib.exists() and not lib.is_dir()):
                lib.unlink()
            lib.mkdir(parents=True, exist_ok=True)
            if not (lib / ".git").exists():
                git(lib, "init", "-q")
            for name in ("lib.py", "NOTES.txt"):
                if (lib / name).is_symlink() or (lib / name).exists():
                    _remove(lib / name)  # a fifo there would block the write
            (lib / "lib.py").write_bytes(content or b"LIB\n")
            (lib / "NOTES.txt").write_bytes(b"uncommitted notes\n")
            if content != b"":  # sometimes a repository with no commit at all
                git(lib, "add", "lib.py")
                git(lib, "commit", "-qm", "lib", "--allow-empty")

    CHANGE = st.sampled_from(
        ["write"] * 4
        + ["delete"] * 2
        + [
            "large",
            "chmod",
            "link-in",
            "link-out",
            "fifo",
            "empty-folder",
            "nested",
            "worktree",
            "unreadable",
        ]
    )

    @rule(name=st.sampled_from(NAMES), content=CONTENT, agent=AGENTS)
    def tool_write(self, name: str, content: bytes, agent: str | None) -> None:
        if (self.root / name).parent.is_symlink():
            return
        if agent is not None and not self.subagent_started:
            self.wb.subagent(agent)
            self.subagent_started = True
        self.wb.write(name, b"x" * 20_000 if content == BIG else content, agent)
        self.before_revert = None

    @rule(kind=CHANGE, name=st.sampled_from(NAMES), content=CONTENT, agent=AGENTS)
    def bash(self, kind: str, name: str, content: bytes, agent: str | None) -> None:
        if agent is not None and not self.subagent_started:
            self.wb.subagent(agent)
            self.subagent_started = True
        self.wb.bash(f"{kind} {name!r}", lambda: self._change(kind, name, content), agent)
        self.before_revert = None

    @rule(kind=CHANGE, name=st.sampled_from(NAMES), content=CONTENT, next_turn=st.booleans())
    def user_edit(self, kind: str, name: str, content: bytes, next_turn: bool) -> None:
        """The user's own change, captured by the next turn's snapshot or not captured yet."""
        self._change(kind, name, content)
        if next_turn:
            self.wb.prompt()
        self.before_revert = None

    @precondition(lambda self: self.bench is not None and not self.bench.eager)
    @rule()
    def background_capture(self) -> None:
        """The capture process catches up (lazy runs): every frame pending gets its snapshot,
        the files later tools changed as they were before them."""
        self.wb.capture()

    # --- reverts -------------------------------------------------------------------------------

    def _revert(self, frame: int, force: bool, only: bool) -> bool:
        """Revert to a frame; True if it was done (else it must have changed nothing)."""
        before = tree(self.root)
        frames = [n for n, _, _ in self.wb.frames()]
        address = f"{self.wb.session}:{frames[frame % len(frames)]}"
        try:
            todo = revert.plan(
                self.wb.rec.conn, str(self.root), address, ["a.txt", "src"] if only else None
            )
            if not todo.changes:
                assert tree(self.root) == before
                return False
            revert.execute(self.wb.rec.conn, str(self.root), todo, force=force)
        except revert.RevertError:
            assert tree(self.root) == before, "a refused revert changed files"
            return False
        self._nothing_it_must_not_touch(before)
        self.before_revert = before
        return True

    def _nothing_it_must_not_touch(self, before: dict[str, tuple[str, int, bytes]]) -> None:
        after = tree(self.root)
        assert tree(self.outside) == self.outside_tree, "a revert changed files outside"
        nested = [n for n in ("vendor/lib", "vendor/wt") if os.path.lexists(self.root / n / ".git")]
        for path, entry in before.items():
            if any(path == n or path.startswith(n + "/") for n in nested):
                assert after.get(path) == entry, f"a revert changed the nested {path!r}"
            if entry[0] == "other" or entry[2].startswith(b"unreadable "):
                assert after.get(path) == entry, f"a revert changed the uncaptured {path!r}"

    @rule(frame=st.integers(0, 200), force=st.booleans(), only=st.booleans())
    def revert_then_undo(self, frame: int, force: bool, only: bool) -> None:
        if self._revert(frame, force, only):
            before = self.before_revert
            revert.execute(
                self.wb.rec.conn, str(self.root), revert.plan_undo(self.wb.rec.conn, str(self.root))
            )
            assert tree(self.root) == before, "undo did not bring back every byte"
            self.before_revert = None

    @rule(agent=st.sampled_from(["main", "sub-agent-1"]), force=st.booleans())
    def agent_revert_then_undo(self, agent: str, force: bool) -> None:
        """`revert --agent`: the same promise, for one agent's files."""
        if agent != "main" and not self.subagent_started:
            return
        before = tree(self.root)
        try:
            todo = revert.plan_agent(self.wb.rec.conn, str(self.root), agent)
            if not [c for c in todo.changes if force or not c.conflict]:
                assert tree(self.root) == before
                return
            revert.execute(self.wb.rec.conn, str(self.root), todo, force=force)
        except revert.RevertError:
            assert tree(self.root) == before, "a refused revert changed files"
            return
        self._nothing_it_must_not_touch(before)
        revert.execute(
            self.wb.rec.conn, str(self.root), revert.plan_undo(self.wb.rec.conn, str(self.root))
        )
        assert tree(self.root) == before, "undo of an agent's revert did not bring back every byte"
        self.before_revert = None

    @rule(frame=st.integers(0, 200), force=st.booleans())
    def revert_and_keep(self, frame: int, force: bool) -> None:
        self._revert(frame, force, only=False)

    @precondition(lambda self: self.before_revert is not None)
    @rule()
    def undo_the_kept_revert(self) -> None:
        before = self.before_revert
        revert.execute(
            self.wb.rec.conn, str(self.root), revert.plan_undo(self.wb.rec.conn, str(self.root))
        )
        assert tree(self.root) == before, "undo did not bring back every byte"
        self.before_revert = None

    @invariant()
    def the_outside_is_never_touched(self) -> None:
        if self.bench is not None:
            assert tree(self.outside) == self.outside_tree


RevertMachine.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TestRevertInvariant = RevertMachine.TestCase


def test_the_invariant_where_unreadable_files_are_unreadable() -> None:
    """The same machine, run without root's power to read any file (CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH dropped from the bounding set), so a file of mode 000 is one the
    capture cannot read, as for any user."""
    if not reads_anything(Path(tempfile.mkdtemp())):
        return  # the machine above already runs with unreadable files unreadable
    examples = str(max(EXAMPLES // 2, 5))
    rerun_without_reading_anything(
        f"{__file__}::TestRevertInvariant", CLAUDE_SESSION_MODEL_EXAMPLES=examples
    )
