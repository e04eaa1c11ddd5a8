"""The schema reference (docs/reference/schema.md), generated from schema.sql so the two cannot
drift.

    python -m tools.schema_docs --write   # rewrite the block between the schema markers
    python -m tools.schema_docs --check   # exit 1 when the page is not what schema.sql says

Each table is listed with the comment above it, its columns (definition and comment) and its
indexes; a comment line ending in a run of dashes starts a new group of tables.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from tools.doc_block import updated, write_or_check

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "schema.md"
START = "<!-- schema:start -->"
END = "<!-- schema:end -->"
NOTE = (
    "<!-- generated from schema.sql by `python -m tools.schema_docs --write`;"
    " edit schema.sql, not this block -->"
)
TABLE_CONSTRAINTS = ("UNIQUE", "PRIMARY KEY", "CHECK", "FOREIGN KEY", "CONSTRAINT")


class Table:
    def __init__(self, name: str, about: str) -> None:
        self.name = name
        self.about = about
        self.columns: list[list[str]] = []  # [name, definition, comment]
        self.constraints: list[str] = []
        self.indexes: list[str] = []


def parse(schema: str) -> list[tuple[str, list[Table]]]:
    """(group title, tables) in file order, from schema.sql's text."""
    groups: list[tuple[str, list[Table]]] = [("", [])]
    tables: dict[str, Table] = {}
    comment: list[str] = []
    lines = iter(schema.splitlines())
    for line in lines:
        text = line.strip()
        if text.startswith("--"):
            body = text[2:].strip()
            if body.endswith("-----"):
                groups.append((body.rstrip("-").strip(), []))
                comment = []
            else:
                comment.append(body)
            continue
        if text.startswith("CREATE TABLE "):
            table = Table(text.split()[2], " ".join(comment))
            tables[table.name] = table
            groups[-1][1].append(table)
            _read_body(lines, table)
        elif text.startswith("CREATE VIRTUAL TABLE "):
            table = Table(text.split()[3], " ".join(comment))
            tables[table.name] = table
            groups[-1][1].append(table)
            module = text.split(" USING ", 1)[1].split("(", 1)[0]
            parts: list[str] = []
            for inner in lines:
                if inner.strip().startswith(")"):
                    break
                parts += [part.strip() for part in inner.split(",") if part.strip()]
            for part in parts:
                if "=" in part:
                    table.constraints.append(part)
                else:
                    table.columns.append([part, f"{module} column", ""])
        elif text.startswith(("CREATE INDEX ", "CREATE UNIQUE INDEX ")):
            head, _, columns = text.rstrip(";").partition(" ON ")
            target, _, columns = columns.partition(" ")
            tables[target].indexes.append(f"{head.split()[-1]} {columns}")
        comment = []
    return [(title, found) for title, found in groups if found]


def _read_body(lines: Iterator[str], table: Table) -> None:
    """The column lines of one CREATE TABLE, up to its closing parenthesis."""
    for line in lines:
        text = line.strip()
        if text.startswith(")"):
            return
        code, _, note = text.partition("--")
        code, note = code.strip().rstrip(",").strip(), note.strip()
        if not code:  # a comment line continuing the previous column's
            table.columns[-1][2] = f"{table.columns[-1][2]} {note}".strip()
        elif code.upper().startswith(TABLE_CONSTRAINTS):
            table.constraints.append(code)
        else:
            name, _, definition = code.partition(" ")
            table.columns.append([name, definition.strip(), note])


def render(schema: str) -> str:
    """The markdown block, markers included."""
    out = [START, NOTE]
    for title, tables in parse(schema):
        if title:
            out += ["", f"### {title}"]
        for table in tables:
            out += ["", f"**`{table.name}`**" + (f": {table.about}" if table.about else ""), ""]
            out += ["| column | definition | notes |", "| --- | --- | --- |"]
            for name, definition, note in table.columns:
                out.append(f"| `{name}` | `{_cell(definition)}` | {_cell(note)} |")
            extras = [f"`{_cell(c)}`" for c in table.constraints]
            if extras:
                out += ["", "Constraints: " + ", ".join(extras) + "."]
            if table.indexes:
                out += ["", "Indexes: " + ", ".join(f"`{i}`" for i in table.indexes) + "."]
    return "\n".join([*out, "", END])


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the page's block")
    mode.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    parser.add_argument("--schema", type=Path, default=ROOT / "schema.sql")
    parser.add_argument(
        "--page", type=Path, default=PAGE, help=f"default: {PAGE.relative_to(ROOT)}"
    )
    args = parser.parse_args(argv)
    page = args.page.read_text(encoding="utf-8")
    wanted = updated(page, START, END, render(args.schema.read_text(encoding="utf-8")))
    return write_or_check(
        args.page,
        page,
        wanted,
        args.write,
        f"{args.page} does not match {args.schema}: run python -m tools.schema_docs --write",
    )


if __name__ == "__main__":
    sys.exit(main())
