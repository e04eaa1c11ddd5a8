"""The library API (claude_session/project.py, docs/guides/library.md): `Project(path)` reads a
project recorded through the hooks' own code path and answers in frozen dataclasses whose
fields are the CLI's JSON names; the examples of its docs page run here as they are written;
reading never writes (no database created, no spool ingested, the file untouched); and the
one memory search is what `memory search` prints."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_cli, stream
from inproc import Recorder

from claude_session.core import db, memories, recall, spool
from claude_session.core.paths import db_path, spool_dir
from claude_session.project import (
    Agent,
    Claim,
    CostReport,
    Error,
    Frame,
    Injection,
    Memory,
    Project,
    Session,
    StateChange,
    StateValue,
)
from claude_session.project.opening import ProjectBase
from claude_session.project.reads import ProjectReads
from claude_session.project.views import ProjectViews
from claude_session.services import queries

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "guides" / "library.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@pytest.fixture
def recorded(project: Path) -> Iterator[Path]:
    """The recorded session stream applied through `core.events.apply` (as the hook does),
    and a memory the user added."""
    recorder = Recorder(project)
    for payload in stream(project):
        recorder.send(payload)
        recorder.advance(1)
    with db.Immediate(recorder.conn):
        memories.add(
            recorder.conn, "run pytest with -q here", "learning", "project", recorder.now,
            tags=["pytest", "tests"],
        )  # fmt: skip
    recorder.close()
    yield project


def test_project_is_exported_lazily_by_the_package() -> None:
    import claude_session

    assert claude_session.Project is Project
    with pytest.raises(AttributeError):
        _ = claude_session.Nothing  # type: ignore[attr-defined]


def test_the_examples_of_the_docs_page_run(
    recorded: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = BLOCK.findall(PAGE.read_text())
    assert len(blocks) >= 8, "the library page lost its examples"
    monkeypatch.chdir(recorded)
    namespace: dict[str, object] = {"__name__": "library_docs"}
    for number, code in enumerate(blocks, 1):
        try:
            exec(compile(code, f"{PAGE.name} example {number}", "exec"), namespace)
        except Exception as exc:  # named with the example that failed
            pytest.fail(f"example {number} of {PAGE.name} failed: {exc!r}\n{code}")
    said = capsys.readouterr().out
    assert "has a database: True" in said
    assert "TASK-A: write hello.py and run it" in said  # an agent's task
    assert "hello.py claimed by main" in said  # a claim
    assert "import nonexistent_mod" in said  # the failed command
    assert "session_start" in said  # a frame
    assert "run pytest with -q here" in said  # the memory found
    assert "problem: no claude-session hooks are installed" in said
    assert "agents in all" in said, said
    assert "sessions; " in said and "events recorded" in said  # the status report
    assert "memory 2 new" in said and "state changed: ('release_branch',)" in said  # writes
    assert "refused: no state key 'no_such_key'" in said


def test_each_read_answers_typed_rows_with_the_cli_json_names(recorded: Path) -> None:
    with Project(recorded) as project:
        assert project.exists and project.trusted
        sessions = project.sessions()
        assert [type(s) for s in sessions] == [Session, Session]
        assert sessions[0].status == "ended" and sessions[0].tool_calls == 6
        assert project.session(sessions[0].session_id[:8]) == sessions[0]
        assert project.session("nothing-like-it") is None
        agents = project.agents(all=True)
        assert agents and all(isinstance(a, Agent) for a in agents)
        assert project.agents() == []  # every session ended: none shown by default
        listed = project.claims_page(5)
        assert (listed.rows, listed.total, listed.hidden) == ([], 0, 1)
        assert listed.hidden_what == "released claims" and listed.more == 0
        assert list(project.each_agent(all=True)) == project.agents(all=True)
        claims = project.claims(all=True)
        assert [(c.file_path, c.agent) for c in claims] == [("hello.py", "main")]
        assert isinstance(claims[0], Claim)
        errors = project.errors()
        assert [type(e) for e in errors] == [Error] and errors[0].tool_name == "Bash"
        assert project.errors(open_only=True)[0].state == "abandoned"
        frames = project.timeline()
        assert frames and all(isinstance(f, Frame) for f in frames)
        assert project.frames(sessions[0].session_id) == frames
        assert [f.frame for f in frames] == sorted(f.frame for f in frames)
        change = project.diff(str(frames[0].frame), str(frames[-1].frame), stat_only=True)
        assert set(change.state) >= {"agents", "claims", "errors", "failed_paths"}
        report = project.cost(session=sessions[0].session_id[:8])
        assert isinstance(report, CostReport) and report.by == "turn"
        assert report.session_id == sessions[0].session_id and report.rows == ()  # no transcript
        found = project.memories("pytest")
        assert [(type(m), m.id, m.tags, m.where) for m in found] == [
            (Memory, "1", ("pytest", "tests"), "project")
        ]
        assert found[0].rank is not None and project.memories()[0].rank is None
        state = project.state()
        assert all(isinstance(v, StateValue) for v in state)
        assert {v.key for v in state} >= {"last_session_id"}
        history = project.state_history("last_session_id")
        assert history and all(isinstance(c, StateChange) for c in history)
        assert history[0].new_value == sessions[0].session_id
        given = project.injections()
        assert all(isinstance(i, Injection) for i in given)
        assert project.problems() == [
            "no claude-session hooks are installed (`claude-session install`)"
        ]
        # The CLI's JSON names, in its order: asdict gives the rows its --json prints.
        conn = project.connection()
        assert conn is not None
        rows = queries.page(conn, queries.agents_query(include_all=True), 200).rows
        assert [list(dataclasses.asdict(a)) for a in agents] == [list(r) for r in rows]
        rows = queries.errors(conn)
        assert [dataclasses.asdict(e) for e in errors] == rows
        assert [dataclasses.asdict(s) for s in sessions] == queries.sessions(conn)


def test_memory_search_on_the_cli_prints_the_projects_search(recorded: Path) -> None:
    done = run_cli(recorded, "memory", "search", "pytest", "--json")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    with Project(recorded) as project:
        expected = [dataclasses.asdict(m) for m in project.memories("pytest")]
    assert printed == json.loads(json.dumps(expected))
    assert printed[0]["id"] == "1" and printed[0]["tags"] == ["pytest", "tests"]


def test_reading_an_empty_folder_creates_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with Project(empty) as project:
        assert not project.exists and not project.trusted
        assert project.sessions() == [] and project.agents(all=True) == []
        assert project.claims() == [] and project.errors() == [] and project.failed_paths() == []
        assert project.timeline() == [] and project.state() == [] and project.injections() == []
        assert project.memories("anything", scope="project") == []
        assert project.cost().rows == ()
        assert isinstance(project.problems(), list)
    assert sorted(os.listdir(empty)) == []


def test_reading_never_writes_the_database_nor_ingests_the_spool(recorded: Path) -> None:
    path = Path(db_path(str(recorded)))
    conn = db.connect(str(path))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the file itself
    conn.close()
    waiting = spool.write(spool_dir(str(recorded)), {"delivery_id": "library-test", "x": 1})
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    backlog = spool.backlog(str(recorded))
    time.sleep(0.01)
    with Project(recorded) as project:
        project.sessions(), project.agents(all=True), project.claims(all=True)
        project.errors(), project.failed_paths(all=True), project.timeline()
        project.cost(), project.memories("pytest"), project.state(), project.injections()
        project.problems()
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert os.path.exists(waiting) and spool.backlog(str(recorded)) == backlog
    wal = Path(str(path) + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def test_a_closed_project_says_so(recorded: Path) -> None:
    project = Project(recorded)
    project.close()
    with pytest.raises(Exception, match="closed"):
        project.sessions()


def test_status_and_doctor_make_the_shared_checks_once(recorded: Path) -> None:
    """An event waiting in the spool: one check (services/health.py) is status's sentence
    (Project.problems) and doctor's row."""
    from claude_session.services import health
    from claude_session.services.setup import doctor

    spool.write(spool_dir(str(recorded)), {"delivery_id": "library-test", "x": 1})
    backlog = next(c for c in health.spool_checks(str(recorded)) if c.check == "spool backlog")
    assert not backlog.ok and str(backlog.problem).startswith("1 event waits in the spool")
    with Project(recorded) as project:
        assert backlog.problem in project.problems()
    rows = doctor.check(recorded)
    assert backlog.row() in rows
    trusted = [c.row() for c in health.trust_checks(str(recorded))]
    assert trusted and all(row in rows for row in trusted)


# --- reading writes nothing anywhere -----------------------------------------------------------


def tree(*roots: Path) -> dict[str, tuple[bool, int, int]]:
    """Every file and folder under `roots`: (is a folder, size, modification time in ns)."""
    found: dict[str, tuple[bool, int, int]] = {}
    for root in roots:
        found[str(root)] = (
            (root.is_dir(), 0, root.stat().st_mtime_ns) if root.exists() else (False, -1, -1)
        )
        for folder, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(folder, name)
                info = os.lstat(path)
                found[path] = (name in dirs, info.st_size, info.st_mtime_ns)
    return found


def read_everything(project: Project) -> set[str]:
    """Every public read of `project`, each called; the names called."""
    called: set[str] = set()

    def call(name: str, *args: object, **kwargs: object) -> object:
        called.add(name)
        value = getattr(project, name)
        return value(*args, **kwargs) if callable(value) else value

    call("exists"), call("trusted"), call("connection"), call("latest_session")
    for page, each, options in (
        ("agents_page", "each_agent", {"all": True}),
        ("claims_page", "each_claim", {"all": True}),
        ("errors_page", "each_error", {"open_only": True}),
        ("failed_paths_page", "each_failed_path", {"all": True}),
        ("sessions_page", "each_session", {}),
        ("verdicts_page", "each_verdict", {}),
        ("events_page", "each_event", {"payload": True}),
    ):
        call(page, **options)
        list(call(each, **options))  # type: ignore[call-overload]
    sessions = call("sessions")
    assert isinstance(sessions, list)
    first = sessions[-1].session_id if sessions else "none"
    call("session", first[:8])
    call("agents", all=True), call("claims", all=True), call("errors")
    call("failed_paths", all=True), call("session_at", "")
    frames = call("timeline")
    call("frames", first) if sessions else call("frames")
    assert isinstance(frames, list)
    if len(frames) > 1:
        call("diff", str(frames[0].frame), str(frames[-1].frame))
        call("diff", str(frames[0].frame), str(frames[-1].frame), stat_only=True)
    else:
        called.add("diff")
    call("cost"), call("hooks")
    if sessions:
        call("cost", session=first), call("hooks", session=first)
    call("memories", "pytest"), call("memories"), call("memories", scope="global")
    call("state"), call("state_history"), call("injections"), call("problems")
    call("state_value", "test_command"), call("pending_trust"), call("daemon")
    call("status"), call("live"), call("changed"), call("compaction_restored")
    call("sessions_with_cost"), call("memories_with_files")
    if sessions:
        call("restored", first), call("restore_preview", first), call("session_view", first)
    else:
        called.update({"restored", "restore_preview", "session_view"})
    return called


def public_reads() -> set[str]:
    """Every public method of the read side (`writing` opens for a write: not one)."""
    readers = (ProjectBase, ProjectReads, ProjectViews)
    return {n for cls in readers for n in dir(cls) if not n.startswith("_")} - {"close", "writing"}


@pytest.mark.parametrize("kind", ["recorded", "untrusted"])
def test_every_read_writes_nothing_anywhere(recorded: Path, tmp_path: Path, kind: str) -> None:
    """Each public read of Project, on a recorded project and on a database that came with a
    clone (its frames naming workspace snapshots, a global memory beside): no file or folder
    is created or changed in the project, the state dir or the data dir (paths, sizes,
    modification times the same before and after): no -wal or -shm, no state folder, no
    snapshot store, no git that writes. The clone's memories are marked untrusted."""
    project = recorded
    if kind == "untrusted":
        project = tmp_path / "clone"
        project.mkdir()
        shutil.copy(db_path(str(recorded)), db_path(str(project)))  # a new file: not ours
    with Project(project) as opened:
        session, frames = opened.latest_session(), opened.timeline()
    first, last = frames[0].frame, frames[-1].frame
    conn = db.connect(db_path(str(project)), create=False)
    for frame, commit in ((first, "1" * 40), (last, "2" * 40)):  # snapshots the store lacks
        conn.execute(
            "INSERT OR REPLACE INTO vcs_tags (session_id, frame_no, status, requested_at,"
            " snapshot_commit) VALUES (?, ?, 'captured', 0, ?)",
            (session, frame, commit),
        )
    conn.close()
    with db.Immediate(global_db := recall.open_global(create=True)):  # type: ignore[arg-type]
        memories.add(global_db, "prefer ruff over flake8", "preference", "global", 1.0)
    global_db.close()
    state = Path(os.environ["CLAUDE_SESSION_STATE_DIR"])
    data = Path(os.environ["CLAUDE_SESSION_DATA_DIR"])
    before = tree(project, state, data)
    time.sleep(0.02)
    with Project(project) as opened:
        trusted = opened.trusted
        called = read_everything(opened)
        found, every = opened.memories("pytest"), opened.memories()
        files = opened.diff(str(first), str(last)).files
    after = tree(project, state, data)
    assert called == public_reads()
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    assert not changed, "\n".join(f"{p}: {before.get(p)} -> {after.get(p)}" for p in changed)
    assert trusted is (kind == "recorded")
    assert [(m.where, m.trusted) for m in found] == [("project", int(trusted))]
    assert {m.where: m.trusted for m in every} == {"project": int(trusted), "global": 1}
    assert "no snapshot store" in files["error"]


def test_a_read_as_is_sees_what_a_writer_wrote_since(recorded: Path) -> None:
    """A database nobody had open is read as it is on disk; once a writer comes (its -wal),
    or came and went (the file changed), the next read opens it again and sees the writes."""
    base = {"transcript_path": "/tmp/t.jsonl", "cwd": str(recorded)}
    with Project(recorded) as project:
        before = {s.session_id for s in project.sessions(limit=100)}
        writer = Recorder(recorded)  # stays open: its -wal is there
        writer.send(base | {"session_id": "writer-open", "hook_event_name": "SessionStart"})
        assert {s.session_id for s in project.sessions(limit=100)} - before == {"writer-open"}
        writer.close()  # not the last connection: its -wal stays
    db.connect(db_path(str(recorded))).close()  # the last one now: the -wal goes
    with Project(recorded) as project:
        project.sessions()
        writer = Recorder(recorded)  # comes and goes: its -wal is checkpointed and removed
        writer.send(base | {"session_id": "writer-gone", "hook_event_name": "SessionStart"})
        writer.close()
        assert not Path(db_path(str(recorded)) + "-wal").exists()
        assert "writer-gone" in {s.session_id for s in project.sessions(limit=100)}
