"""A failed approach's `failed_last_at` (when its command last failed in a session active since
it was recorded: `status`, `failed-paths`, what a compaction puts back) is read through the
commands' own index (schema 33) instead of every session active since: the same figure,
compared here with the former query over generated histories."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from claude_session.core import db, readings

# The former query, word for word: sessions active since, each one's failures of the command.
FORMER = (
    "SELECT f.id, (SELECT max(x.occurred_at) FROM sessions s INDEXED BY sessions_activity"
    " JOIN error_log x ON x.session_id = s.session_id AND x.command = CASE WHEN"
    " instr(f.approach, ' (after ') > 0 THEN substr(f.approach, 1,"
    " instr(f.approach, ' (after ') - 1) ELSE f.approach END"
    " WHERE s.last_activity_at >= f.created_at AND x.interrupted = 0) FROM failed_paths f"
)
COMMANDS = ["pytest", "make build", "python3 -c 'import x'"]

SESSION = st.tuples(st.integers(0, 100), st.integers(0, 100))  # started, active for
ERROR = st.tuples(
    st.integers(0, 4), st.sampled_from([*COMMANDS, None]), st.integers(0, 100), st.booleans()
)
PATH = st.tuples(st.sampled_from(COMMANDS), st.booleans(), st.integers(0, 150))


@settings(max_examples=int(os.environ.get("FAILED_LAST_EXAMPLES", "60")), deadline=None)
@given(
    sessions=st.lists(SESSION, min_size=1, max_size=5),
    errors=st.lists(ERROR, max_size=25),
    paths=st.lists(PATH, min_size=1, max_size=6),
)
def test_failed_last_at_is_the_former_figure(
    sessions: list[tuple[int, int]],
    errors: list[tuple[int, str | None, int, bool]],
    paths: list[tuple[str, bool, int]],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        conn = db.connect(str(Path(folder) / ".claude-session.db"))
        with db.Immediate(conn):
            for n, (started, active) in enumerate(sessions):
                conn.execute(
                    "INSERT INTO sessions (session_id, started_at, last_activity_at)"
                    " VALUES (?, ?, ?)",
                    (f"s{n}", started, started + active),
                )
            for k, (which, command, at, interrupted) in enumerate(errors):
                conn.execute(
                    "INSERT INTO error_log (session_id, agent_id, error_category,"
                    " error_message, attempt_number, signature, command, occurred_at,"
                    " interrupted) VALUES (?, 'main', 'runtime', 'failed', 1, ?, ?, ?, ?)",
                    (f"s{which % len(sessions)}", f"sig{k}", command, at, int(interrupted)),
                )
            for approach, after, created in paths:
                text = f"{approach} (after editing x.py)" if after else approach
                conn.execute(
                    "INSERT INTO failed_paths (session_id, approach, reason_failed, created_at)"
                    " VALUES ('s0', ?, 'it failed', ?)",
                    (text, created),
                )
        former = dict(conn.execute(FORMER).fetchall())
        now = {r["id"]: r["failed_last_at"] for r in readings.failed_paths(conn, time.time())}
        assert now == {k: v for k, v in former.items() if k in now}
        assert len(now) == min(len(paths), 20)
        conn.close()
