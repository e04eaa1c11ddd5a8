"""Memories survive `memory export` then `memory import` into another project, in both formats:
every category and scope (a session memory too, its session unknown there), tags, strength,
use counts, times and provenance. A second import adds nothing; bad records are skipped and
named, never stopping the good ones. The real CLI runs; the target databases are read back."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import PYTHON, fixture, hook_env, run_hook

from claude_session.core import db, memories, memory_files

CLI = str(Path(PYTHON).parent / "claude-session")
SESSION = "roundtrip-session-0001"
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
ROW = (
    "category, scope, text, tags, source, session_id, agent_id, tool_use_id, project, holder,"
    " fingerprint, strength, use_count, created_at, updated_at, last_used_at, turn_no,"
    " files_inferred, outcome, outcome_at, verified_at, outcome_reason"
)
FILES = (
    "SELECT m.text, f.path, f.sha256, f.size, f.mtime_ns, f.git_commit, f.recorded_at"
    " FROM memory_files f JOIN memories m ON m.id = f.memory_id ORDER BY m.text, f.path"
)


def run(
    project: Path, data: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI on `project`, with `data` as the user-level folder (its global memories)."""
    return subprocess.run(
        [CLI, "--project", str(project), *args],
        capture_output=True,
        text=True,
        input=stdin,
        env=hook_env(project, CLAUDE_SESSION_DATA_DIR=str(data)),
    )


def ok(project: Path, data: Path, *args: str, stdin: str | None = None) -> str:
    done = run(project, data, *args, stdin=stdin)
    assert done.returncode == 0, done.stderr
    return done.stdout


def table(path: Path, columns: str = ROW) -> list[tuple[Any, ...]]:
    """Every live memory of a database, in an order that does not depend on its ids."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(
            f"SELECT {columns} FROM memories WHERE forgotten_at IS NULL ORDER BY scope, text"
        ).fetchall()
    finally:
        conn.close()


def sessions(project: Path) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(project / ".claude-session.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute("SELECT session_id FROM sessions").fetchall()
    finally:
        conn.close()


@pytest.fixture
def source(project: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A project with a recorded session and memories of every category and scope: a session
    memory with tags, one strengthened, a learning with its provenance and key, one used,
    one superseding another, and one forgotten (not exported)."""
    data = tmp_path / "source-data"
    run_hook(
        "SessionStart",
        fixture("SessionStart.startup", project) | {"session_id": SESSION},
        project,
        env={"CLAUDE_SESSION_DATA_DIR": str(data)},
    )
    add = ("memory", "add")
    (project / "deploy.sh").write_text("kubectl --context staging apply -f .\n")
    deploy = ("Deploys go through the staging cluster", "--category", "fact", "--file", "deploy.sh")
    ok(project, data, *add, *deploy)
    ok(project, data, *add, "deploys go through the STAGING cluster!", "--category", "fact")
    ok(project, data, *add, "Prefer small commits", "--category", "preference", "--tag", "git")
    ok(project, data, *add, "Run the suite with pytest -q", "--category", "skill")
    ok(
        project,
        data,
        *add,
        "This session is refactoring the parser",
        "--category",
        "context",
        "--scope",
        "session",
        "--session",
        SESSION,
        "--tag",
        "parser",
        "--tag",
        "work in progress",
    )
    ok(
        project,
        data,
        *add,
        "Answer in British English",
        "--category",
        "preference",
        "--scope",
        "global",
        "--tag",
        "style",
    )
    ok(project, data, *add, "An old note nobody wants", "--category", "context")
    forgotten = json.loads(ok(project, data, "memory", "list", "--json", "--category", "context"))
    ok(project, data, "memory", "forget", next(m["id"] for m in forgotten if "old" in m["text"]))
    conn = db.connect(str(project / ".claude-session.db"))
    now = time.time()
    with db.Immediate(conn):
        first, _ = memories.add(
            conn,
            "`make build` failed 2 times (import: no module). What finally worked: pip install",
            "learning",
            "project",
            now - 50,
            tags=["import"],
            source="learned",
            session_id=SESSION,
            agent_id="agent-7",
            tool_use_id="toolu_01",
            key="ladder|make build|import",
        )
        second, _ = memories.add(
            conn,
            "`make build` needs the dev extras: pip install -e .[dev]",
            "learning",
            "project",
            now - 40,
            source="agent",
            session_id=SESSION,
            supersedes=first,
            turn_no=3,
            outcome="hypothesis",
            files_inferred=True,
        )
        (project / "Makefile").write_text("build:\n\tpip install -e .[dev]\n")
        memory_files.record(conn, second, str(project), ["Makefile", "deploy.sh"], now - 40, None)
        memories.count_use(conn, [first, first, first], now - 30)
        memories.set_outcome(conn, second, "hypothesis", now - 35, "seen once, on CI only")
    conn.close()
    return project, data


def exported_twice(root: Path, data: Path) -> dict[str, str]:
    return {
        fmt: ok(root, data, "memory", "export", "--format", fmt) for fmt in ("jsonl", "markdown")
    }


@pytest.mark.parametrize("fmt", ["jsonl", "markdown"])
def test_every_memory_is_restored_in_another_project(
    source: tuple[Path, Path], tmp_path: Path, fmt: str
) -> None:
    root, data = source
    exported = exported_twice(root, data)[fmt]
    target, target_data = tmp_path / "target", tmp_path / "target-data"
    target.mkdir()
    report = json.loads(ok(target, target_data, "memory", "import", "-", "--json", stdin=exported))
    assert report == {"imported": 7, "already_present": 0, "invalid": 0, "problems": []}
    mine = table(root / ".claude-session.db")
    theirs = table(target / ".claude-session.db")
    # every column but the id: provenance, strength, uses and times too; the fingerprint is the
    # text's (the learning's was its key's there: what a key names is that database's)
    print_at = ROW.split(", ").index("fingerprint")
    assert [r[print_at] for r in theirs] == [memories.fingerprint(r[2]) for r in theirs]
    assert [r[:print_at] + r[print_at + 1 :] for r in theirs] == [
        r[:print_at] + r[print_at + 1 :] for r in mine
    ]
    assert {row[0] for row in theirs} == set(memories.CATEGORIES)
    assert {row[1] for row in theirs} == {"project", "session"}
    held = [row for row in theirs if row[1] == "session"]
    assert [(r[2], json.loads(r[3]), r[5], r[9]) for r in held] == [
        ("This session is refactoring the parser", ["parser", "work in progress"], SESSION, SESSION)
    ]
    assert sessions(target) == []  # its session is unknown here: kept as an id, none made up
    assert next(r for r in theirs if r[0] == "fact")[11] == 2  # strength
    learned = next(r for r in theirs if r[4] == "learned")
    assert (learned[6], learned[7], learned[12]) == ("agent-7", "toolu_01", 3)
    assert table(target_data / "global.db") == table(data / "global.db")
    # The files each memory is about, as recorded there: hashes, sizes, times, commit.
    files = _rows(root, FILES)
    assert len(files) == 3 and _rows(target, FILES) == files
    hypothesis = next(r for r in theirs if r[18] == "hypothesis")
    assert (hypothesis[4], hypothesis[16], hypothesis[17]) == ("agent", 3, 1)  # turn, inferred
    assert hypothesis[19] is not None  # when its outcome was said
    assert hypothesis[21] == "seen once, on CI only"  # and why
    links = table(
        target / ".claude-session.db",
        "text, (SELECT s.text FROM memories AS s WHERE s.id = memories.supersedes)",
    )
    assert [(a[:20], b[:20]) for a, b in links if b is not None] == [
        ("`make build` needs t", "`make build` failed ")
    ]
    assert "An old note" not in exported  # forgotten memories stay behind
    found = json.loads(ok(target, target_data, "memory", "search", "refactoring parser", "--json"))
    assert found[0]["session_id"] == SESSION  # the full-text index knows the imported text
    # Exported again from the target, the file is the same but for the ids (and the learning's
    # fingerprint: its text's here).
    again = ok(target, target_data, "memory", "export", "--format", fmt)
    assert sorted(_without_ids(again)) == sorted(_without_ids(exported))


def _rows(project: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(project / ".claude-session.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _without_ids(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        for key in ("id", "supersedes", "fingerprint"):
            line = _drop(line, key)
        lines.append(line)
    return lines


def _drop(line: str, key: str) -> str:
    """The line with the value of `key` (a quoted id) blanked, in either format."""
    for sep in ('": "', '":"'):
        start = line.find(f'"{key}{sep}')
        if start >= 0:
            end = line.index('"', start + len(key) + len(sep) + 1)
            return line[:start] + line[end + 1 :]
    return line


def test_a_second_import_adds_nothing_and_says_so(
    source: tuple[Path, Path], tmp_path: Path
) -> None:
    root, data = source
    exported = exported_twice(root, data)
    target, target_data = tmp_path / "target", tmp_path / "target-data"
    target.mkdir()
    # Already here before any import, written differently: found, not strengthened.
    ok(target, target_data, "memory", "add", "Run the suite with PYTEST -q.", "--category", "skill")
    first = json.loads(
        ok(target, target_data, "memory", "import", "-", "--json", stdin=exported["jsonl"])
    )
    assert first == {"imported": 6, "already_present": 1, "invalid": 0, "problems": []}
    rows = table(target / ".claude-session.db", "*")
    for fmt in ("jsonl", "markdown"):
        again = json.loads(
            ok(target, target_data, "memory", "import", "-", "--json", stdin=exported[fmt])
        )
        assert again == {"imported": 0, "already_present": 7, "invalid": 0, "problems": []}
        assert table(target / ".claude-session.db", "*") == rows  # not even strengthened
    said = ok(target, target_data, "memory", "import", "-", stdin=exported["jsonl"])
    assert said.strip() == "0 imported, 7 already present, 0 invalid (skipped)"
    skill = [r for r in rows if r[1] == "skill"]
    assert (
        len(skill) == 1 and skill[0][3] == "Run the suite with PYTEST -q." and skill[0][5] == "user"
    )


def test_bad_records_are_skipped_and_named_and_the_good_ones_imported(
    project: Path, tmp_path: Path
) -> None:
    good = {"category": "fact", "scope": "project", "text": "The first good one"}
    lines = [
        json.dumps(good),
        json.dumps(good | {"category": "opinion", "text": "wrong category"}),
        '{"category": "fact", "scope": "project", "text": "cut off',
        json.dumps(good | {"text": 42}),
        json.dumps({"category": "fact", "scope": "project"}),
        json.dumps(good | {"scope": "session", "text": "a session memory with no session"}),
        json.dumps(good | {"text": "Another good one", "strength": "three"}),
        "[1, 2]",
        "some words that are no record",
        "",
        "# Memories (a Markdown heading)",
        json.dumps(good | {"text": f"Deploy with {SECRET} please", "tags": ["deploy", SECRET]}),
        "- **skill** (session other-session-9) Rebase before pushing #git #work-flow",
        json.dumps(good | {"created_at": "yesterday", "text": "bad time"}),
        "- **fact** (project) The last good one",
    ]
    payload = ("\n".join(lines) + "\n").encode() + b'{"text": "\xff"}\n'
    upload = tmp_path / "memories.jsonl"
    upload.write_bytes(payload)
    data = tmp_path / "data"
    done = run(project, data, "memory", "import", str(upload), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["imported"], report["already_present"], report["invalid"]) == (4, 0, 10)
    reasons = {p["line"]: p["reason"] for p in report["problems"]}
    assert sorted(reasons) == [2, 3, 4, 5, 6, 7, 8, 9, 14, 16]
    assert "unknown category 'opinion'" in reasons[2]
    assert "not valid JSON" in reasons[3]
    assert "text must be a string" in reasons[4]
    assert "needs some text" in reasons[5]
    assert "needs its session_id" in reasons[6]
    assert "strength" in reasons[7]
    assert "not a JSON object" in reasons[8]
    assert "neither a JSON object nor a Markdown memory" in reasons[9]
    assert "created_at" in reasons[14]
    assert "UTF-8" in reasons[16]
    rows = table(project / ".claude-session.db", "text, scope, session_id, tags, source")
    assert [(r[0][:12], r[1], r[2], r[4]) for r in rows] == [
        ("Deploy with ", "project", None, "import"),
        ("The first go", "project", None, "import"),
        ("The last goo", "project", None, "import"),
        ("Rebase befor", "session", "other-session-9", "import"),
    ]
    redacted = rows[0]
    assert redacted[0].startswith("Deploy with [REDACTED:github_token")
    assert json.loads(redacted[3])[0] == "deploy"
    assert json.loads(redacted[3])[1].startswith("[REDACTED:github_token")
    assert json.loads(rows[3][3]) == ["git", "work flow"]
    assert SECRET.encode() not in (project / ".claude-session.db").read_bytes()
    # Without --json: the counts, and each skipped line with why on stderr.
    said = run(project, data, "memory", "import", str(upload))
    assert said.returncode == 0
    assert said.stdout.strip() == "0 imported, 4 already present, 10 invalid (skipped)"
    assert "line 2 skipped: unknown category 'opinion'" in said.stderr
    assert said.stderr.count(" skipped: ") == 10
    # A file that cannot be read is the one failure of the whole import.
    missing = run(project, data, "memory", "import", str(tmp_path / "nowhere.jsonl"))
    assert missing.returncode != 0 and "nowhere.jsonl" in missing.stderr
