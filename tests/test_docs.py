"""The schema reference (docs/reference/schema.md) is generated from schema.sql and cannot drift
from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from claude_session.core import db

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "schema.md"


def schema_docs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.schema_docs", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def test_the_schema_reference_matches_schema_sql() -> None:
    done = schema_docs("--check")
    assert done.returncode == 0, done.stderr


def test_every_table_and_column_is_in_the_reference(tmp_path: Path) -> None:
    """What SQLite makes of schema.sql, not just what the generator parsed, is documented."""
    text = PAGE.read_text()
    block = text[text.index("<!-- schema:start -->") : text.index("<!-- schema:end -->")]
    conn = db.connect(str(tmp_path / "fresh.db"))
    tables = [
        name
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not name.startswith("memories_fts_")  # FTS5's own shadow tables
    ]
    assert len(tables) == 46
    sections = {part.split("`", 1)[0]: part for part in block.split("\n**`")[1:]}
    assert sorted(sections) == sorted(tables)
    for table in tables:
        # hidden = 1: a virtual table's own hidden columns (FTS5's rank and table name)
        for column in (r[1] for r in conn.execute(f"PRAGMA table_xinfo({table})") if r[6] != 1):
            assert f"| `{column}` |" in sections[table], (table, column)


def test_a_schema_change_makes_the_check_fail_until_written(tmp_path: Path) -> None:
    schema = tmp_path / "schema.sql"
    page = tmp_path / "schema.md"
    page.write_text(PAGE.read_text())
    text = (ROOT / "schema.sql").read_text()
    anchor = "    key        TEXT PRIMARY KEY,\n"
    schema.write_text(text.replace(anchor, anchor + "    owner      TEXT,  -- who set it\n"))
    paths = ("--schema", str(schema), "--page", str(page))
    stale = schema_docs("--check", *paths)
    assert stale.returncode == 1 and "--write" in stale.stderr
    assert schema_docs("--write", *paths).returncode == 0
    assert schema_docs("--check", *paths).returncode == 0
    assert "| `owner` | `TEXT` | who set it |" in page.read_text()
