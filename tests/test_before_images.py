"""No hook waits for a workspace snapshot, and the frames stay exact: a tool that starts while
the snapshot of the frame before it is still pending keeps what it will change
(services/snapshots/before_images.py), and the capture process builds that frame's snapshot from it.

The real hooks run as processes while the test holds the project's capture lock, so no
capture can run until every tool is done: each frame's snapshot must still be the files as
they were right after its own tool, byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from conftest import capture_lock, fixture, query, run_cli, run_hook, wait_for, write_config
from hypothesis import given, settings
from hypothesis import strategies as st
from workbench import Workbench, git

from claude_session.services.snapshots import before_images, capture, capture_control, workspace

SESSION = "bi-session-0001"


def send(project: Path, name: str, **changes: Any) -> None:
    payload = fixture(name, project) | {"session_id": SESSION} | changes
    payload.pop("agent_id", None)
    done = run_hook(name.split(".")[0], payload, project)
    assert done.returncode == 0 and not done.stdout.strip(), done.stderr


def pending(project: Path) -> int:
    return len(query(project, "SELECT 1 FROM vcs_tags WHERE status = 'pending'"))


def snapshot_files(project: Path, tool_use_id: str) -> dict[str, bytes]:
    """The files of the snapshot of the frame after a tool call, read from our store."""
    commit = query(
        project,
        "SELECT v.snapshot_commit FROM tool_calls t JOIN vcs_tags v"
        " ON v.session_id = t.session_id AND v.frame_no = t.frame_no WHERE t.tool_use_id = ?",
        (tool_use_id,),
    )[0][0]
    env = {**os.environ, "GIT_DIR": workspace.snapshot_dir(str(project))}
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "-z", "--name-only", commit],
        env=env,
        capture_output=True,
        check=True,
    ).stdout
    out = {}
    for name in filter(None, listing.split(b"\0")):
        path = name.decode()
        if path != ".gitignore":
            out[path] = subprocess.run(
                ["git", "cat-file", "blob", f"{commit}:{path}"],
                env=env,
                capture_output=True,
                check=True,
            ).stdout
    return out


def files_now(project: Path) -> dict[str, bytes]:
    return {
        p.relative_to(project).as_posix(): p.read_bytes()
        for p in sorted(project.rglob("*"))
        if p.is_file()
        and not p.relative_to(project).as_posix().startswith((".git", ".claude-session"))
    }


def test_tools_in_a_row_never_wait_and_every_frame_is_exact(project: Path) -> None:
    (project / "app.py").write_text("VALUE = 1\n")
    (project / "old.txt").write_text("to be removed\n")
    (project / ".gitignore").write_text("*.log\n")
    git(project, "init", "-q")
    send(project, "SessionStart.startup")
    send(project, "UserPromptSubmit", prompt="go")
    assert wait_for(lambda: pending(project) == 0, 30)  # the turn's snapshot, as usual

    lock = capture_lock(project)  # no capture runs until the tools are done
    assert lock is not None
    after: dict[str, dict[str, bytes]] = {}
    try:
        steps: list[tuple[str, str, dict[str, Any], Any]] = [
            ("Write", "t1", {"file_path": str(project / "new.py"), "content": "N = 1\n"}, None),
            ("Edit", "t2", {"file_path": str(project / "app.py")}, None),
            ("Edit", "t3", {"file_path": str(project / "new.py")}, None),
            ("Bash", "t4", {"command": "rm old.txt; echo made > made.txt; echo 3 > app.py"}, None),
            ("Write", "t5", {"file_path": str(project / "made.txt"), "content": "again\n"}, None),
        ]
        changes = {
            "t1": lambda: (project / "new.py").write_text("N = 1\n"),
            "t2": lambda: (project / "app.py").write_text("VALUE = 2\n"),
            "t3": lambda: (project / "new.py").write_text("N = 2\n"),
            "t4": lambda: subprocess.run(
                ["sh", "-c", "rm old.txt; echo made > made.txt; echo 3 > app.py"],
                cwd=project,
                check=True,
            ),
            "t5": lambda: (project / "made.txt").write_text("again\n"),
        }
        for tool, use, tool_input, _ in steps:
            send(project, f"PreToolUse.{tool}", tool_use_id=use, tool_input=tool_input)
            changes[use]()
            send(project, f"PostToolUse.{tool}", tool_use_id=use, tool_input=tool_input)
            after[use] = files_now(project)
            assert pending(project) > 0  # every hook returned with its snapshot still to take
    finally:
        os.close(lock)
    capture_control.ensure_running(str(project))
    assert wait_for(lambda: pending(project) == 0, 60)

    for use, files in after.items():
        assert snapshot_files(project, use) == files, use
    notes = query(project, "SELECT note FROM vcs_tags WHERE note LIKE 'may hold%'")
    assert notes == []
    kept = list(Path(before_images.folder(str(project))).iterdir())
    assert all(p.name[0].isdigit() for p in kept)  # no temporary file left behind

    # Revert to the frame after the first Edit: exactly those files, through the real CLI.
    frame = query(project, "SELECT frame_no FROM tool_calls WHERE tool_use_id = 't2'")[0][0]
    done = run_cli(project, "revert", f"{SESSION}:{frame}", "--yes")
    assert done.returncode == 0, done.stderr
    assert files_now(project) == after["t2"]


def test_a_tool_that_names_no_file_after_a_turn_still_pending_says_so(project: Path) -> None:
    """With the turn's own snapshot not yet taken (it can hold the user's edits of any file),
    a Bash started at once cannot keep what it will change: the frames say so."""
    (project / "a.txt").write_text("one\n")
    lock = capture_lock(project)
    assert lock is not None
    try:
        send(project, "SessionStart.startup")
        send(project, "UserPromptSubmit", prompt="go")
        command = {"command": "echo two > a.txt"}
        send(project, "PreToolUse.Bash", tool_use_id="b1", tool_input=command)
        (project / "a.txt").write_text("two\n")
        send(project, "PostToolUse.Bash", tool_use_id="b1", tool_input=command)
    finally:
        os.close(lock)
    capture_control.ensure_running(str(project))
    assert wait_for(lambda: pending(project) == 0, 60)
    notes = query(
        project,
        "SELECT f.kind, v.note FROM vcs_tags v JOIN frames f USING (session_id, frame_no)"
        " ORDER BY f.frame_no",
    )
    assert [k for k, n in notes if n and "may hold changes of Bash" in n] == [
        "session_start",
        "turn_start",
    ]
    timeline = run_cli(project, "timeline", "--json")
    assert timeline.returncode == 0, timeline.stderr
    frames = json.loads(timeline.stdout)["frames"]
    marked = [f["kind"] for f in frames if "may hold" in str(f["snapshot_note"])]
    assert marked == ["session_start", "turn_start"]
    text = run_cli(project, "timeline", COLUMNS="200").stdout
    assert "~: the snapshot may hold changes" in text and text.count("~") >= 3


def test_set_to_wait_a_tool_that_names_no_file_waits_for_an_exact_frame(project: Path) -> None:
    """`snapshot_wait_seconds` above 0: the Bash waits for the pending snapshot instead."""
    write_config(project, {"snapshot_wait_seconds": 30})
    (project / "a.txt").write_text("one\n")
    send(project, "SessionStart.startup")
    send(project, "UserPromptSubmit", prompt="go")
    command = {"command": "echo two > a.txt"}
    send(project, "PreToolUse.Bash", tool_use_id="b1", tool_input=command)
    assert pending(project) == 0  # it waited
    (project / "a.txt").write_text("two\n")
    send(project, "PostToolUse.Bash", tool_use_id="b1", tool_input=command)
    assert wait_for(lambda: pending(project) == 0, 60)
    assert query(project, "SELECT count(*) FROM vcs_tags WHERE note LIKE 'may hold%'") == [(0,)]


def lazy_bench(project: Path) -> Workbench:
    (project / "a.txt").write_text("original\n")
    write_config(project, {"snapshot_max_file_mb": 0.01})
    bench = Workbench(project)
    bench.start()
    bench.prompt()
    bench.eager = False
    return bench


def frame_files(bench: Workbench, frame: int) -> list[str]:
    commit = bench.rec.rows(
        "SELECT snapshot_commit FROM vcs_tags WHERE session_id = ? AND frame_no = ?",
        (bench.session, frame),
    )[0][0]
    env = {**os.environ, "GIT_DIR": workspace.snapshot_dir(str(bench.root))}
    out = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", commit], env=env, capture_output=True, check=True
    ).stdout.decode()
    return sorted(p for p in out.split() if p != ".claude-session.json")  # the config


def test_a_file_made_grown_past_the_cap_or_in_a_nested_repository_is_as_a_capture_has_it(
    project: Path,
) -> None:
    bench = lazy_bench(project)
    bench.write("b.txt", b"small\n")  # pending: b.txt small
    first = bench.last_frame()
    bench.write("b.txt", b"x" * 20_000)  # over the cap now: the first frame still has it small
    bench.write("c.txt", b"new\n")  # created: the frames before do not have it
    nested = project / "vendor"
    nested.mkdir()
    git(nested, "init", "-q")
    bench.write("vendor/lib.py", b"LIB\n")  # in a nested repository: never in a snapshot
    bench.capture()
    assert frame_files(bench, first) == ["a.txt", "b.txt"]
    assert frame_files(bench, first + 1) == ["a.txt"]  # b.txt over the cap: left out
    assert frame_files(bench, first + 2) == ["a.txt", "c.txt"]
    assert "vendor/lib.py" not in frame_files(bench, first + 3)
    bench.close()


def test_entries_are_dropped_once_no_pending_frame_needs_them(project: Path) -> None:
    bench = lazy_bench(project)
    bench.write("b.txt", b"one\n")
    bench.write("b.txt", b"two\n")  # kept b.txt as "one" for the frame before
    folder = Path(before_images.folder(str(project)))
    assert len(list(folder.iterdir())) == 1
    bench.capture()
    (folder / ".00000000000000000001-1-dead").write_bytes(b"half")  # a killed hook's
    (folder / "00000000000000000002-1-beef").write_bytes(b"not an entry")
    assert before_images.read_all(str(project))[0].path == "b.txt"
    import time

    assert before_images.discard(str(project), time.time() + 3600, None) == 3
    assert list(folder.iterdir()) == []
    bench.close()


def test_a_planted_link_for_the_folder_is_refused(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder = Path(before_images.folder(str(project)))
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.symlink_to(elsewhere)
    (project / "a.txt").write_text("x\n")
    try:
        before_images.keep(str(project), "a.txt", "Write", 1.0, 1 << 20)
    except OSError:
        pass
    assert list(elsewhere.iterdir()) == []


def reference_before(
    entries: list[before_images.Entry], requested: float
) -> tuple[dict[str, before_images.Entry], set[str], bool]:
    """The rule for one frame, as written first (one pass over the entries after it): the
    capture's one walk for a whole backlog must give the same for every frame."""
    later = [e for e in entries if e.at > requested]
    markers = [e for e in later if e.kind in (before_images.BLUR, before_images.COVER)]
    covered = bool(markers) and markers[0].kind == before_images.COVER
    until = markers[0].at if covered else float("inf")
    put: dict[str, before_images.Entry] = {}
    seen: set[str] = set()
    blurred: set[str] = set()
    for entry in later:
        if entry.at > until or entry.kind == before_images.COVER:
            continue
        if entry.path is None or entry.kind == before_images.UNKNOWN:
            blurred.add(entry.tool)
            seen.add(entry.path or "")
        elif entry.path not in seen:
            seen.add(entry.path)
            put[entry.path] = entry
    return put, blurred, covered


KINDS = [before_images.FILE, before_images.ABSENT, before_images.UNKNOWN]
ENTRY_KINDS = st.sampled_from([*KINDS, before_images.BLUR, before_images.COVER])


@given(
    st.lists(
        st.tuples(ENTRY_KINDS, st.sampled_from(["a", "b", "c/d"]), st.sampled_from(["T1", "T2"])),
        max_size=30,
    ),
    st.lists(st.integers(min_value=0, max_value=31), max_size=12),
)
@settings(max_examples=300, deadline=None)
def test_one_walk_gives_every_frame_what_the_rule_gives_it(
    made: list[tuple[str, str, str]], frames: list[int]
) -> None:
    entries = []
    for n, (kind, path, tool) in enumerate(made):
        marker = kind in (before_images.BLUR, before_images.COVER)
        at = float(n // 3 + 1)  # a tool keeps several entries at one moment (a Bash's)
        entries.append(
            before_images.Entry(f"{n:03}", at, kind, 0o100644, None if marker else path, tool, b"x")
        )
    requested = [f / 3 + 0.5 for f in frames]
    walked = capture._before_all(entries, requested)
    for at in requested:
        put, blurred, covered = reference_before(entries, at)
        got_put, got_blurred, got_covered = walked[at]
        assert {p: e.name for p, e in got_put.items()} == {p: e.name for p, e in put.items()}
        assert (got_blurred, got_covered) == (blurred, covered)
