"""How far the stored cost figures are behind Claude Code's transcripts, read-only: what
`status` says instead of reading them (the reading is transcripts.py's, by the daemon,
`cost` and `Project.refresh()`)."""

from __future__ import annotations

import os
from typing import Any

import apsw

from ...core import db, trust, usage
from ...core.paths import db_path
from .transcripts import Refused, files_of, open_transcript


def behind(conn: apsw.Connection, root: str, session_id: str) -> dict[str, Any]:
    """How far the stored figures of a session are behind its transcripts, read-only (for
    `status`, which reads none): the bytes written past what was read (a file found replaced
    or shorter counts whole, as it would be read again), in how many files, and when the
    reader last stored anything of them (`read_at`, None: never). A file the reader refuses
    or cannot find counts nothing (`status` lists those); nor does any, for a database this
    user did not make here (its transcripts are never read)."""
    found: dict[str, Any] = {"session_id": session_id, "bytes": 0, "files": 0, "read_at": None}
    main = db.rows(conn, "SELECT transcript_path FROM sessions WHERE session_id = ?", (session_id,))
    if not main or not main[0]["transcript_path"]:
        return found
    if trust.database_problem(db_path(root)):
        return found
    resolved: dict[str, str] = {}
    for path in files_of(conn, session_id, str(main[0]["transcript_path"])).values():
        state = usage.file_state(conn, path) or {}
        if state.get("updated_at") is not None and state.get("last_error") is None:
            found["read_at"] = max(float(state["updated_at"]), found["read_at"] or 0.0)
        try:
            fd = open_transcript(path, resolved)
        except (Refused, OSError):
            continue
        try:
            info = os.fstat(fd)
        finally:
            os.close(fd)
        offset = int(state.get("read_to") or 0)
        again = usage.read_again(state, info.st_ino, info.st_size)
        unread = info.st_size if again else info.st_size - offset
        if unread > 0:
            found["bytes"] += unread
            found["files"] += 1
    return found
