"""Schema versioning: schema.sql equals version 1 plus every migration; migrations keep rows."""

from __future__ import annotations

import re
from pathlib import Path

import apsw
import pytest

from claude_session.core import db

V1 = Path(__file__).parent / "fixtures" / "schema_v1.sql"


def shape(conn: apsw.Connection) -> list[tuple[str, str, str]]:
    """Normalised sqlite_master: what a database is, whatever order or spacing made it."""
    found = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
        " ORDER BY type, name"
    ).fetchall()

    def normal(sql: str) -> str:
        text = re.sub(r"\s+", " ", re.sub(r"--[^\n]*", "", sql)).strip()
        return re.sub(r"\s+([,)])", r"\1", text)  # ALTER TABLE ADD COLUMN leaves "x TEXT , y"

    return [(t, n, normal(s or "")) for t, n, s in found]


def run(conn: apsw.Connection, sql: str) -> None:
    for _ in conn.execute(sql):
        pass


def test_schema_version_constant_matches_schema_sql_and_migrations() -> None:
    assert f"PRAGMA user_version = {db.SCHEMA_VERSION};" in db.read_schema()
    assert max(n for n, _ in db.migrations()) == db.SCHEMA_VERSION
    numbers = [n for n, _ in db.migrations()]
    assert numbers == list(range(2, db.SCHEMA_VERSION + 1)), "migrations are append-only, gapless"


@pytest.mark.parametrize("start", range(1, db.SCHEMA_VERSION))
def test_every_previous_version_migrates_to_the_fresh_schema(tmp_path: Path, start: int) -> None:
    """Version 1 from its snapshot, later ones as the migrations left them; rows survive."""
    path = str(tmp_path / f"v{start}.db")
    old = apsw.Connection(path)
    run(old, V1.read_text())
    for number, sql in db.migrations():
        if number <= start:
            run(old, sql)
            old.execute(f"PRAGMA user_version = {number}")
    old.execute(
        "INSERT INTO error_log (session_id, agent_id, signature, category, error_text, attempt,"
        " occurred_at) VALUES ('s', 'main', 'Bash: make', 'build', 'Exit code 2', 1, 1)"
    )
    old.close()
    migrated = db.connect(path)
    fresh = db.connect(str(tmp_path / "fresh.db"))
    assert shape(migrated) == shape(fresh)
    assert migrated.execute("SELECT signature FROM error_log").fetchall() == [("Bash: make",)]


def test_fresh_schema_equals_version_1_plus_migrations(tmp_path: Path) -> None:
    fresh = db.connect(str(tmp_path / "fresh.db"))
    migrated = apsw.Connection(str(tmp_path / "old.db"))
    run(migrated, V1.read_text())
    migrated.close()
    migrated = db.connect(str(tmp_path / "old.db"))
    assert db.schema_version(migrated) == db.schema_version(fresh) == db.SCHEMA_VERSION
    assert shape(migrated) == shape(fresh)


def test_failed_migration_rolls_back_version_and_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "old.db")
    conn = apsw.Connection(path)
    run(conn, V1.read_text())
    conn.close()
    broken = [(n, sql + "\nTHIS IS NOT SQL;") for n, sql in db.migrations()]
    monkeypatch.setattr(db, "migrations", lambda: broken)
    with pytest.raises(db.DatabaseError):
        db.connect(path)
    conn = apsw.Connection(path)
    assert conn.execute("PRAGMA user_version").fetchall()[0][0] == 1
    assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'prompts'").fetchall()
    conn.close()
    monkeypatch.undo()
    assert db.schema_version(db.connect(path)) == db.SCHEMA_VERSION  # completes next time


def test_newer_database_is_never_written(tmp_path: Path) -> None:
    path = str(tmp_path / "new.db")
    conn = db.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(db.SchemaTooNew, match="upgrade claude-session"):
        db.connect(path)
    with pytest.raises(db.SchemaTooNew):
        db.connect(path, readonly=True)


def test_foreign_sqlite_file_is_not_taken_over(tmp_path: Path) -> None:
    path = str(tmp_path / "other.db")
    conn = apsw.Connection(path)
    conn.execute("CREATE TABLE mine (x)")
    conn.close()
    with pytest.raises(db.DatabaseError, match="not a claude-session database"):
        db.connect(path)
