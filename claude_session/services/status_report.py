"""What `status` reads (its one object, which `status --json` prints whole) and the checks
and figures it shares with `doctor`, the library API and the web page: the database, the
daemon, trust, the hook runs, the problems. The listings it shows a page of are queries'."""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any

import apsw

from ..core import db, log, readings, spool
from ..core.events import count as count_events
from ..core.paths import db_path, filesystem_type, unsafe_filesystem
from .cost import costs, hooks_report
from .queries import agents, claims, latest_session, open_errors, sessions

if TYPE_CHECKING:
    from .setup.hook_sources import Found


def status(conn: apsw.Connection, root: str) -> dict[str, Any]:
    now = time.time()
    path = db_path(root)
    size = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    errors_logged, last_error = log.count_errors(root)
    set_aside, set_aside_reason = spool.quarantined(root)
    latest = db.rows(
        conn,
        "SELECT session_id, snapshot_type, trigger, created_at FROM context_snapshots"
        " ORDER BY id DESC LIMIT 1",
    )
    sources = hook_sources(root)  # read once: where they come from, and what is missing
    found: dict[str, Any] = {
        "database": {
            "path": path,
            "size_bytes": size,
            "schema_version": db.schema_version(conn),
            "events": count_events(conn),
            "spool_backlog": spool.backlog(root),
            "spool_set_aside": set_aside,
            "spool_last_set_aside_reason": set_aside_reason,
            "internal_errors": errors_logged,
            "last_internal_error": last_error,
            "last_snapshot": latest[0] if latest else None,
            "moved_aside": corrupt_copies(root),
            "filesystem": filesystem_type(root),
            "wal_unsafe_filesystem": unsafe_filesystem(root) is not None,
        },
        "sessions": sessions(conn, limit=5),
        "sessions_never_ended": [
            {
                k: row[k]
                for k in (
                    *("session_id", "last_activity_at", "last_step", "step_running"),
                    *("step_agent", "cut_off", "open_errors"),
                )
            }
            | {"resume_with": f"claude --resume {row['session_id']}"}
            for row in readings.crashed_sessions(conn, "", now)
        ],
        "agents": agents(conn, limit=15),
        "claims": claims(conn, limit=STATUS_CLAIMS),
        "daemon": daemon_state(root),
        "trust": trust_report(root),
        "open_errors": open_errors(conn),
        "failed_paths": [
            {k: v for k, v in row.items() if k != "id"} for row in readings.failed_paths(conn, now)
        ],
        "hooks": hook_runs(conn) | {"installed_in": hooks_from(root, sources)},
        "hook_time": hooks_report.latest(conn, latest_session(conn), hooks_report.budget_ms(root)),
        "cost": cost_state(conn, root),
        "otel": otel_status(conn, root, now),  # None: export is off
        "judge": judge_state(conn, root, now),
        "memories": memory_state(conn, root),
    }
    return {"now": happening(conn, root, found, now, sources)} | found


def cost_state(conn: apsw.Connection, root: str) -> dict[str, Any]:
    """The latest session's cost as the transcripts were read last (`status` reads none: the
    daemon does, and `cost`), the live sessions' transcripts that cannot be read, and
    `not_read_yet`: for that session and the one active last, the bytes of their transcripts
    written past what was read (only those with some), so a figure behind says so."""
    from .cost import transcript_lag

    found = costs.latest(conn)
    found["transcript_problems"] = costs.transcript_state(conn)["live_problems"]
    wanted = dict.fromkeys(s for s in (found["session_id"], latest_session(conn)) if s)
    behind = [transcript_lag.behind(conn, root, session) for session in wanted]
    found["not_read_yet"] = [b for b in behind if b["bytes"]]
    return found


def memory_state(conn: apsw.Connection, root: str) -> dict[str, Any]:
    """This project's memories in use, those about files, and those possibly stale: a file
    they are about changed since (`memory list --stale` lists them)."""
    from ..core import memory_files

    total = conn.execute(
        "SELECT count(*) FROM memories WHERE forgotten_at IS NULL AND review IS NOT 'pending'"
    ).fetchall()[0][0]
    about_files, stale = memory_files.stale_count(conn, root)
    return {"count": total, "about_files": about_files, "possibly_stale": stale}


# Where an export endpoint can come from (services/telemetry/otel_export.py, `target`).
OTEL_ENDPOINT_VARIABLES = (
    "CLAUDE_SESSION_OTEL_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)


def otel_status(conn: apsw.Connection, root: str, now: float) -> dict[str, Any] | None:
    """The export's state (`otel_export.status`), None when it is off. Its module (logging,
    dataclasses: a third of the imports of `status`, measured) loads only when an endpoint is
    set somewhere; with none, export is off whatever else is set."""
    from . import config_file

    if not config_file.load_or_defaults(root).values.get("otel_endpoint") and not any(
        os.environ.get(name, "").strip() for name in OTEL_ENDPOINT_VARIABLES
    ):
        return None
    from .telemetry import otel_export

    return otel_export.status(conn, root, now)


def judge_state(conn: apsw.Connection, root: str, now: float) -> dict[str, Any]:
    """The judge: at which events it runs ("" off), what it cost today (UTC) by its command's
    own figures, the day's budget, and how often today it skipped for want of budget."""
    from . import config_file, judge

    values = config_file.load_or_defaults(root).values
    return {
        "events": str(values.get("judge_events") or ""),
        "spent_today_usd": round(judge.spent_today(conn, now), 6),
        "budget_usd_per_day": values.get("judge_budget_usd_per_day"),
        "skipped_today": judge.skipped_today(conn, now),
    }


def happening(
    conn: apsw.Connection,
    root: str,
    found: dict[str, Any],
    now: float,
    sources: Found | None = None,
) -> dict[str, Any]:
    """What a person opening `status` wants first: who works on what, which files two agents
    hold, what is failing, the last compaction, and anything wrong with the installation."""
    contested: dict[str, list[str]] = {}
    for claim in found["claims"]:
        if claim["contested"]:
            contested.setdefault(str(claim["file_path"]), []).append(str(claim["agent"]))
    return {
        "live_agents": [
            {k: a[k] for k in ("agent", "type", "task", "silent_seconds", "files", "session_id")}
            for a in found["agents"]
            if a["state"] == "running"
        ],
        "contested_files": [{"file_path": f, "agents": a} for f, a in contested.items()],
        "open_errors": [
            {k: e[k] for k in ("what", "tool_name", "step", "state", "last_at", "session_id")}
            for e in found["open_errors"]
        ],
        "last_compaction": last_compaction(conn),
        "problems": problems(conn, root, found["database"], found["daemon"], now, sources),
    }


def last_compaction(conn: apsw.Connection) -> dict[str, Any] | None:
    """The latest compaction: when, why, and what the state saved before it held (what
    SessionStart put back), with the summary Claude Code wrote."""
    found = db.rows(
        conn,
        "SELECT id, session_id, trigger, created_at, content FROM context_snapshots"
        " WHERE snapshot_type = 'pre_compact' ORDER BY id DESC LIMIT 1",
    )
    if not found:
        return None
    row = found[0]
    try:
        saved = json.loads(str(row["content"]))
    except ValueError:
        saved = {}
    saved = saved if isinstance(saved, dict) else {}
    summary = db.rows(
        conn,
        "SELECT content FROM context_snapshots WHERE session_id = ? AND id > ?"
        " AND snapshot_type = 'post_compact' ORDER BY id LIMIT 1",
        (row["session_id"], row["id"]),
    )
    text = None
    if summary:
        try:
            text = json.loads(str(summary[0]["content"])).get("compact_summary")
        except (ValueError, AttributeError):
            text = None
    return {
        "session_id": row["session_id"],
        "trigger": row["trigger"],
        "created_at": row["created_at"],
        "restored": {
            key: len(saved.get(key) or [])
            for key in ("task", "agents", "claims", "errors", "failed_paths")
        },
        "summary": text,
        "block": _block_given(conn, str(row["session_id"]), float(row["created_at"])),
    }


def _block_given(conn: apsw.Connection, session_id: str, since: float) -> dict[str, Any] | None:
    """The block SessionStart put back after that compaction, as the model got it: when, and
    each of its sections with how many items it listed. None: none was given (yet)."""
    from ..core import context_text

    found = db.rows(
        conn,
        "SELECT at, text FROM injections WHERE session_id = ? AND kind = 'restore'"
        " AND source = 'compact' AND at >= ? ORDER BY at, id LIMIT 1",
        (session_id, since),
    )
    if not found:
        return None
    return {
        "given_at": found[0]["at"],
        "sections": context_text.sections_in(str(found[0]["text"])),
    }


def problems(
    conn: apsw.Connection | None,
    root: str,
    database: dict[str, Any],
    daemon: dict[str, Any],
    now: float,
    sources: Found | None = None,
) -> list[str]:
    """Anything wrong with the installation, one sentence each. The checks `doctor` makes too
    (the spool, internal errors, trust) are computed once, in `health`: here their sentences."""
    from . import health

    shared = [
        *health.spool_checks(root),
        health.configuration_check(root),
        *health.trust_checks(root),
        health.replaced_database(root),
        health.internal_errors(root),
    ]
    found = [*hooks_problem(root, sources), *(c.problem for c in shared if c.problem is not None)]
    for copy in database["moved_aside"]:
        found.append(f"a corrupt database was moved aside: {copy}")
    if database["wal_unsafe_filesystem"]:
        found.append(f"the database is on {database['filesystem']}, where WAL is not safe")
    from ..core.config import number
    from .config_file import load_or_defaults

    if conn is None:  # no database yet: no session is live
        return found
    idle = number(load_or_defaults(root).values, "session_idle_minutes") * 60
    live = db.rows(
        conn,
        "SELECT count(*) AS n FROM sessions WHERE status = 'active' AND last_activity_at > ?",
        (now - idle,),
    )[0]["n"]
    if live and not daemon.get("running"):
        found.append("the daemon is not running while a session is live (`daemon start`)")
    return found


def hook_sources(root: str) -> Found:
    """Where the hooks of a session here come from (setup/hook_sources.Found): read once per
    report, for its problems and its description."""
    from pathlib import Path

    from .setup.hook_sources import Found

    return Found(Path(root))


def hooks_problem(root: str, sources: Found | None = None) -> list[str]:
    """No claude-session hooks reach a session here (settings files, a worktree's main
    repository, the plugin, a replay's own), or some events missing."""
    return (sources or hook_sources(root)).problems()


def hooks_from(root: str, sources: Found | None = None) -> str:
    """Where the hooks of a session here come from, in words (information, not a problem)."""
    return (sources or hook_sources(root)).describe()


def corrupt_copies(root: str) -> list[str]:
    """Corrupt databases the daemon moved aside (never deleted): for `status` to point at."""
    folder, name = os.path.split(db_path(root))
    return sorted(
        os.path.join(folder, n)
        for n in os.listdir(folder)
        if n.startswith(name + ".corrupt-") and not n.endswith(("-wal", "-shm"))
    )


STATUS_CLAIMS = 20  # `status` shows the first claims (live and contested first); `claims` has all


HOOK_RUNS_WINDOW = 1000  # the run summary covers the latest runs: no pass over the whole audit


def hook_runs(conn: apsw.Connection) -> dict[str, Any]:
    """The latest hook runs (at most HOOK_RUNS_WINDOW, by id through the primary key): how
    many were duplicates or replayed, their mean time by our own clock (the hook's own timer,
    from its start to its answer: not what Claude Code measures around it, which `hooks`
    reads), the last one."""
    summary = db.rows(
        conn,
        "SELECT count(*) AS runs, sum(outcome = 'duplicate') AS duplicates,"
        " sum(outcome = 'spooled') AS replayed_from_spool, round(avg(duration_ms), 1)"
        " AS mean_duration_ms, max(started_at) AS last_run_at"
        " FROM (SELECT * FROM hook_events ORDER BY id DESC LIMIT ?)",
        (HOOK_RUNS_WINDOW,),
    )[0]
    return (
        {"latest_runs": summary.pop("runs")}
        | summary
        | {"mean_duration_clock": "ours: claude-session's own hook timer, inside the hook"}
    )


def daemon_state(root: str) -> dict[str, Any]:
    from .background import daemon_control

    pid = daemon_control.running_pid(root)
    state: dict[str, Any] = {"running": pid is not None, "pid": pid}
    try:
        fd = os.open(daemon_control.status_path(root), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="utf-8") as f:
            details = json.load(f)
    except (OSError, ValueError):
        return state
    if pid is not None:
        state.update(details)
    return state


def trust_report(root: str) -> dict[str, str]:
    """Trusted, or why not, for the database and the configuration."""
    from . import config_file

    state = config_file.trust_state(root)
    return {kind: problem or "trusted" for kind, problem in state.items()}
