"""What a `Project` reads of memories beyond the search: the listing (`memory list`, those
awaiting review alone or counted apart), one memory with its files as they are now and what
became of the error it was about (`memory show`), and those possibly stale (`--stale`). Rows
are the dicts `--json` prints: ids as labels (`12`, `g12`), tags as a list. Nothing here
writes: a file's hash is taken again at every look (the hooks keep the ones they saw)."""

from __future__ import annotations

import json
import os
from typing import Any

import apsw

from ..core import memories, memory_files
from ..core.readings import PAGE
from ..records import Listing
from .opening import NotFound, ProjectBase, global_to_read

STALE_STATES = (memory_files.CHANGED, memory_files.GONE, memory_files.APPEARED)
AWAITING = "memories awaiting your review (given to no session until accepted)"


def labelled(scope: str, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows as shown: the id as its label (`12`, `g12`), the tags as a list."""
    out = []
    for row in found:
        item = {"id": memories.label(scope, row["id"])} | {
            k: v for k, v in row.items() if k != "id"
        }
        item["tags"] = json.loads(str(item.get("tags") or "[]"))
        out.append(item)
    return out


class ProjectMemories(ProjectBase):
    """The memory reads of `Project` beyond `memories()` (the search)."""

    def memory_listing(
        self,
        limit: int | None = PAGE,
        *,
        category: str | None = None,
        scope: str | None = None,
        pending: bool = False,
    ) -> Listing[dict[str, Any]]:
        """The memories, most used and strongest first: this project's (`scope` project or
        session) and the global ones (`scope` global), up to `limit` of each (None: all).
        Those awaiting review are listed alone with `pending`, else counted in `hidden`.
        Each says whether it is `possibly_stale` (a file it is about changed, went or appeared
        since: hashed again at this look), beside its `outcome` (disproved, hypothesis...)."""
        cap = 2**62 if limit is None else limit
        found: list[dict[str, Any]] = []
        total = waiting = 0
        conn = self.connection() if scope != "global" else None
        if conn is not None:
            rows = memories.listed(conn, category=category, scope=scope, limit=cap, pending=pending)
            found += self._marked(conn, "project", rows)
            total += memories.count_listed(conn, category=category, scope=scope, pending=pending)
            if not pending:
                waiting += memories.count_listed(conn, scope=scope, pending=True)
        if scope in (None, "global"):
            global_conn = global_to_read()
            if global_conn is not None:
                try:
                    rows = memories.listed(
                        global_conn, category=category, limit=cap, pending=pending
                    )
                    found += self._marked(global_conn, "global", rows)
                    total += memories.count_listed(
                        global_conn, category=category, scope="global", pending=pending
                    )
                    if not pending:
                        waiting += memories.count_listed(global_conn, scope="global", pending=True)
                finally:
                    global_conn.close()
        return Listing(found, total, waiting, AWAITING if waiting else None)

    def _marked(
        self, conn: apsw.Connection, scope: str, rows: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """`rows` labelled, each with `possibly_stale`: whether a file it is about changed."""
        ids = [int(r["id"]) for r in rows]
        if scope != "global":
            stale = set(memory_files.changes_for(conn, os.path.realpath(self.root), ids)[0])
        else:
            stale = set()
            for row in rows:
                base = self._base(scope, row)
                if base is not None:
                    found = memory_files.changes_for(conn, os.path.realpath(base), [row["id"]])
                    stale |= set(found[0])
        return [
            item | {"possibly_stale": int(row["id"]) in stale}
            for item, row in zip(labelled(scope, rows), rows, strict=True)
        ]

    def memory_record(self, label: str) -> dict[str, Any]:
        """One memory (`12`, `g12`) with who added it, its files as they are now, whether it
        is possibly stale, and the error it was about with what became of it."""
        scope, number = self._parse(label)
        conn = global_to_read() if scope == "global" else self.connection()
        if conn is None:
            raise NotFound(f"no memory {label!r} (see `claude-session memory list`)")
        try:
            row = memories.get(conn, number)
            if row is None:
                raise NotFound(f"no memory {label!r} (see `claude-session memory list`)")
            shown = labelled(scope, [row])[0]
            files, _ = memory_files.files_now(conn, self._base(scope, shown), number)
            stale = [f["path"] for f in files if f["state"] in STALE_STATES]
            fate = (
                memory_files.error_fate(conn, shown.get("error_id")) if scope != "global" else None
            )
            return shown | {
                "added_by": memory_files.added_by(shown),
                "files": files,
                "possibly_stale": bool(stale),
                "stale_files": stale,
                "error": fate,
            }
        finally:
            if scope == "global":
                conn.close()

    def stale_memories(self, scope: str | None = None) -> list[dict[str, Any]]:
        """Every memory possibly stale (a file it is about changed, went or appeared since it
        was recorded), each change said with when and by which agent."""
        found: list[dict[str, Any]] = []
        conn = self.connection() if scope != "global" else None
        if conn is not None:
            found += self._stale(conn, "project")
        if scope in (None, "global"):
            global_conn = global_to_read()
            if global_conn is not None:
                try:
                    found += self._stale(global_conn, "global")
                finally:
                    global_conn.close()
        return found

    def _stale(self, conn: apsw.Connection, scope: str) -> list[dict[str, Any]]:
        ids = memory_files.with_files(conn)
        if scope != "global":
            changed, _ = memory_files.changes_for(conn, os.path.realpath(self.root), ids)
        else:
            changed = {}
            for memory_id in ids:
                base = self._base(scope, memories.get(conn, memory_id) or {})
                if base is not None:
                    changed |= memory_files.changes_for(conn, os.path.realpath(base), [memory_id])[
                        0
                    ]
        out: list[dict[str, Any]] = []
        for memory_id, changes in changed.items():
            row = memories.get(conn, memory_id)
            if row is None:
                continue
            memory_files.with_agents(conn, changes)
            out.append(
                {
                    "id": memories.label(scope, memory_id),
                    "category": row["category"],
                    "text": row["text"],
                    "outcome": row["outcome"],
                    "changes": [memory_files.describe(c) for c in changes],
                }
            )
        return out

    def _base(self, scope: str, row: dict[str, Any]) -> str | None:
        """The folder a memory's file paths are relative to: this project, or for a global
        memory the project it came from (None when that is no folder here)."""
        if scope != "global":
            return str(self.root)
        project = row.get("project")
        return project if isinstance(project, str) and os.path.isdir(project) else None

    @staticmethod
    def _parse(label: str) -> tuple[str, int]:
        found = memories.parse_label(label)
        if found is None:
            raise NotFound(f"{label!r} is not a memory id (12 for this project, g12 global)")
        return found
