"""What the web page shows, read whole: the sessions with their cost, one session's tree of
agents, frames, forks and spend, and the memories with their files. Each is one read of the
project's read-only connection; a database a version behind (never migrated by a read) has
no figures to show, and says so."""

from __future__ import annotations

import os
from typing import Any

import apsw

from ..core import db
from ..records import SessionView
from .opening import NotFound, ProjectBase, no_database


class ProjectViews(ProjectBase):
    """The whole-page reads of `Project`."""

    def _readable(self) -> apsw.Connection:
        conn = self.connection()
        if conn is None:
            raise NotFound(no_database(self.path))
        return conn

    def sessions_with_cost(self, limit: int = 200) -> list[dict[str, Any]]:
        """The latest sessions with their counters, cost and tokens (`estimated`: part of the
        cost is for a model no price is known for)."""
        from ..services import queries
        from ..services.cost import surfaces

        conn = self._readable()
        rows = queries.sessions(conn, limit=limit)
        current = db.schema_version(conn) >= db.SCHEMA_VERSION
        figures = surfaces.session_figures(conn) if current else {}
        for row in rows:
            found = figures.get(str(row["session_id"]), {})
            row |= {"cost_usd": found.get("cost_usd"), "tokens": found.get("tokens")}
            row["estimated"] = found.get("estimated", False)
        return rows

    def session_view(self, address: str) -> SessionView:
        """One session (an id, a prefix or a frame address): its main agent, subagents,
        frames, forks (each `removed` when its folder is gone), what it cost, and which agents
        are Claude Code's internal helpers."""
        from ..services.timetravel import timetravel

        conn = self._readable()
        session_id = self._session_named(conn, address)
        main = conn.execute(
            "SELECT status, task_description FROM agent_registry WHERE id = ? AND is_main",
            (session_id,),
        ).fetchall()
        internal = frozenset(
            str(r[0])
            for r in conn.execute(
                "SELECT id FROM agent_registry WHERE session_id = ? AND is_internal",
                (session_id,),
            )
        )
        return SessionView(
            session_id,
            {"status": main[0][0], "task_description": main[0][1]} if main else None,
            timetravel.subagents(conn, session_id),
            timetravel.timeline(conn, session_id),
            [  # a fork whose folder is gone (`fork --remove`, or deleted) is drawn as removed
                branch | {"removed": not os.path.isdir(str(branch["path"]))}
                for branch in timetravel.branches(conn, session_id)
            ],
            self._spent(conn, session_id),
            internal,
        )

    def _session_named(self, conn: apsw.Connection, address: str) -> str:
        """The session an address names: one with frames, else one recorded before frames."""
        from ..services.timetravel import timetravel

        try:
            return str(timetravel.find_session(conn, address))
        except timetravel.FrameError as exc:
            found = conn.execute(
                "SELECT session_id FROM sessions WHERE substr(session_id, 1, length(?1)) = ?1"
                " LIMIT 2",
                (address,),
            ).fetchall()
            if address and len(found) == 1:
                return str(found[0][0])
            raise NotFound(str(exc)) from exc

    def _spent(self, conn: apsw.Connection, session_id: str) -> dict[str, Any]:
        """What the session cost, as read from Claude Code's transcripts (by the daemon,
        `cost`, `status`...: a read reads no transcript): the whole, per agent, turn and
        frame, the running total over time and what no transcript line carries, and the
        hooks' time per turn."""
        from ..services.cost import hooks_report, surfaces

        if db.schema_version(conn) < db.SCHEMA_VERSION:
            return {"old_schema": True}
        return {
            "session": surfaces.session_figures(conn, session_id).get(session_id),
            "agents": surfaces.agent_figures(conn, session_id),
            "turns": surfaces.turn_figures(conn, session_id),
            "frames": surfaces.frame_figures(conn, session_id),
            "points": surfaces.cumulative(conn, session_id),
            "not_in_transcripts": surfaces.not_in_transcripts(conn, session_id),
            "hooks": hooks_report.by_turn(conn, session_id),
        }

    def memories_with_files(self, limit: int = 200) -> tuple[list[dict[str, Any]], int]:
        """This project's memories in use, most used first, each with who added it, its files
        as recorded and now, and the error it was about; and how many more there are."""
        from ..core import memories, memory_files

        conn = self._readable()
        if db.schema_version(conn) < db.SCHEMA_VERSION:
            return [], 0
        root = str(self.root)
        found = []
        for row in memories.listed(conn, limit=limit):
            files, _ = memory_files.files_now(conn, root, int(row["id"]))  # read-only: not kept
            found.append(
                row
                | {
                    "added_by": memory_files.added_by(row),
                    "files": files,
                    "possibly_stale": any(
                        f["state"] not in ("unchanged", "unknown") for f in files
                    ),
                    "error": memory_files.error_fate(conn, row.get("error_id")),
                }
            )
        return found, max(0, memories.count_listed(conn) - len(found))
