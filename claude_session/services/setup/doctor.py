"""`claude-session doctor`: is the installation sound? Each check is one row (check, ok, detail)."""

from __future__ import annotations

import json
import os
import stat
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import apsw

from ...core import db
from ...core.figures import plural
from ...core.paths import db_path, unsafe_filesystem
from . import installer

T = TypeVar("T")


def check(root: Path, full: bool = False, fsck: bool = False) -> list[dict[str, Any]]:
    """Every check; `full` adds SQLite's quick_check, which reads the whole database (seconds
    on a large one): by default its header, schema and newest rows are read instead. `fsck`
    adds `git fsck --connectivity-only` of the snapshot store."""
    results: list[dict[str, Any]] = []
    found = _registered(root, results)
    results += _duplicates(found)
    results += _run_installed(found)
    results += _database(root, full)
    results += _unattributed(root)
    results += _configuration(root)
    results += _trust(root)
    results += _snapshot_store(root, fsck)
    results += _snapshot_rules(root)
    results += _otel(root)
    results += hook_budget(root)
    return results


HOOK_WINDOW = 7 * 86400.0  # the runs `doctor` holds to the budget: those of the last week


def hook_budget(root: Path) -> list[dict[str, Any]]:
    """The hooks (ours or any other) whose p90 run, as Claude Code timed it in the last week,
    passes hook_budget_ms: a warning, not a failure (a loaded machine is slow too)."""
    from ..cost import hooks_report

    budget = hooks_report.budget_ms(str(root))
    rows = _read(
        db_path(str(root)), lambda conn: hooks_report.since(conn, time.time() - HOOK_WINDOW)
    )
    if rows is None:
        return []
    name = "hook time (Claude Code's clock)"
    if not rows:
        return [_row(name, True, "no hook run timed by Claude Code in the last week")]
    over = hooks_report.over_budget(rows, budget)
    if not over:
        worst = max(rows, key=lambda r: r["p90_ms"] or 0.0)
        return [
            _row(
                name,
                True,
                f"every hook's p90 within hook_budget_ms ({budget:.0f} ms); the slowest,"
                f" {hooks_report.label(worst)} ({worst['event']}),"
                f" {hooks_report.fmt_ms(worst['p90_ms'])}",
            )
        ]
    shown = "; ".join(
        f"{hooks_report.label(r)} ({r['event']}) p90"
        f" {hooks_report.fmt_ms(r['p90_ms'])} over {r['runs']} run(s)"
        for r in over[:3]
    )
    more = f"; {len(over) - 3} more" if len(over) > 3 else ""
    return [
        _row(
            name,
            True,
            f"warning: {len(over)} hook(s) over hook_budget_ms ({budget:.0f} ms) at p90 in the"
            f" last week: {shown}{more} (`claude-session hooks` shows every one)",
        )
        | {"warning": True}
    ]


def _otel(root: Path) -> list[dict[str, Any]]:
    """OpenTelemetry export, when configured: where to, what went out, the lag, the last
    error; and whether the exporter for its protocol is installed."""
    from .. import config_file
    from ..telemetry import otel_export, otel_wire

    where = otel_export.target(config_file.load_or_defaults(str(root)).values)
    if where is None:
        return [
            _row("opentelemetry export", True, "off (no otel_endpoint, no OTEL_EXPORTER_OTLP_*)")
        ]
    try:
        otel_wire.make_exporter(where)
    except ImportError as exc:
        extra = " (pip install 'claude-session[otel-grpc]')" if where.protocol == "grpc" else ""
        return [_row("opentelemetry export", False, f"{where.protocol}: {exc}{extra}")]
    path = db_path(str(root))
    if not os.path.exists(path):
        return [_row("opentelemetry export", True, f"to {where.shown}: nothing recorded yet")]
    conn = db.connect(path, create=False)
    try:
        told = otel_export.status(conn, str(root), time.time()) or {}
    finally:
        conn.close()
    detail = f"to {where.shown} ({where.protocol}): {told.get('spans_sent') or 0} spans sent"
    lag = told.get("lag_seconds")
    if lag is not None:
        detail += f", oldest waiting {lag:.0f} s"
    if told.get("last_error"):
        detail += f"; failing ({told.get('failures')} in a row): {told['last_error']}"
    return [_row("opentelemetry export", not told.get("last_error"), detail)]


def _snapshot_store(root: Path, fsck: bool) -> list[dict[str, Any]]:
    """Its size; stale locks and quarantines of killed captures removed (never while a capture
    runs: the store's lock is only taken if free at once); with `fsck`, git's fsck."""
    from ..snapshots import store_check

    return [_row(*row) for row in store_check.check(str(root), fsck=fsck)]


def _snapshot_rules(root: Path) -> list[dict[str, Any]]:
    """What snapshots leave out by rule (secret files, `snapshot_exclude`) and which of the
    project's files that is now; and any such path an older version's snapshots still hold,
    with the command that takes it out."""
    from ...core import secret_files
    from ..snapshots import snapshot_rules, workspace

    patterns = snapshot_rules.rules(str(root))
    extra = patterns[len(secret_files.DEFAULT_PATTERNS) :]
    said = (
        "snapshots leave out files that hold secrets by their name ("
        + ", ".join(secret_files.DEFAULT_PATTERNS[:8])
        + ", ... ) and snapshot_exclude ("
        + (", ".join(extra) or "none set")
        + ")"
    )
    if not os.path.isfile(os.path.join(workspace.snapshot_dir(str(root)), "claude-session-ready")):
        return [_row("snapshot rules", True, said + "; no snapshot store yet")]
    try:
        here = sorted(workspace.left_out_on_disk(str(root)))
        kept = sorted(
            snapshot_rules.left_out(str(root), workspace.snapshot_paths(str(root)), patterns)
        )
    except (workspace.WorkspaceError, OSError) as exc:
        return [_row("snapshot rules", False, f"{said}; not checked: {exc}")]
    named = ", ".join(here[:5]) + (", ..." if len(here) > 5 else "")
    rows = [
        _row(
            "snapshot rules",
            True,
            f"{said}: {plural(len(here), 'file')} here" + (f" ({named})" if here else ""),
        )
    ]
    tops = [p for p in kept if not any(p.startswith(k + "/") for k in kept)]
    if tops:
        listed = ", ".join(tops[:5]) + (", ..." if len(tops) > 5 else "")
        rows.append(
            _row(
                "secret files in snapshots",
                False,
                f"{len(tops)} paths the rules leave out are still in snapshots taken before"
                f" (by an older version, or before a rule was added): {listed}; take each out"
                " with `claude-session prune --purge PATH`",
            )
        )
    else:
        rows.append(
            _row("secret files in snapshots", True, "no snapshot holds a file the rules leave out")
        )
    return rows


def _trust(root: Path) -> list[dict[str, Any]]:
    from .. import health

    return [c.row() for c in health.trust_checks(str(root))]


def _configuration(root: Path) -> list[dict[str, Any]]:
    """The same validation the hooks use (`health.configuration_check`)."""
    from .. import health

    return [health.configuration_check(str(root)).row()]


def _row(name: str, ok: bool, detail: str) -> dict[str, Any]:
    return {"check": name, "ok": ok, "detail": detail}


def _registered(root: Path, results: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    """(scope, event, handler) for every claude-session handler in every settings file that
    reaches a session here (a worktree's main repository's too: hook_sources). A command
    with our marker that claude-session did not write for this user is no handler of ours:
    a row says so, and it is never run (`hook_sources.written_by_us`)."""
    from . import hook_sources

    found = []
    known = hook_sources.known_commands()
    for scope, path in hook_sources.settings_files(root):
        try:
            settings = installer.read_settings(path)
        except (OSError, ValueError) as exc:
            results.append(_row(f"settings {scope}", False, f"{path}: {exc}"))
            continue
        ours = []
        for event, handler in installer.ours(settings):
            if hook_sources.written_by_us(handler, known):
                ours.append((scope, event, handler))
            else:
                results.append(_not_ours(scope, path, event, handler))
        found += ours
        if ours:
            events = {event for _, event, _ in ours}
            missing = set(installer.installed_events()) - events
            detail = f"{path}: {plural(len(ours), 'handler')} for {plural(len(events), 'event')}"
            if missing:
                detail += f"; missing: {', '.join(sorted(missing))}"
            results.append(_row(f"settings {scope}", not missing, detail))
    results += _mcp_hook_server_registered(root, found)
    if not found:
        sources = hook_sources.Found(root)
        if sources.plugin is not None or sources.replay:
            results.append(_row("installed", True, sources.describe()))
        else:
            detail = "no claude-session hooks in any settings file; run `claude-session install`"
            results.append(_row("installed", False, detail))
    return found


def _timeout(value: object) -> float:
    """A handler's timeout as the settings file gives it, bounded: one that is not a finite
    number from 1 s to 10 min (a hand edit, a repository's file) gives the default."""
    import math

    default = float(installer.DEFAULT_TIMEOUT)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return float(value) if math.isfinite(value) and 1 <= value <= 600 else default


SHOWN_CHARS = 300


def _not_ours(scope: str, path: Path, event: str, handler: dict[str, Any]) -> dict[str, Any]:
    """The row for a command with our marker that we did not write: the file, the event and
    the command, escaped (a JSON string: every control character and non-ASCII one shown as an
    escape), never raw."""
    command = str(handler.get("command"))
    shown = json.dumps(command[:SHOWN_CHARS])
    if len(command) > SHOWN_CHARS:
        shown += f"... ({len(command)} characters)"
    return _row(
        f"settings {scope}",
        False,
        f"{path}: {json.dumps(event)}: not ours, not run: {shown} (our marker, but no command"
        " claude-session recorded writing for you; if an earlier install of yours wrote it,"
        " `claude-session install` again records what it writes)",
    )


def _mcp_hook_server_registered(
    root: Path, found: list[tuple[str, str, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """mcp_tool hooks need their server registered with Claude Code, as this install would
    start it: else every one of them fails, and only the transcript fills the record."""
    from .hook_client import registration

    rows = []
    for scope in sorted({s for s, _, h in found if h.get("type") == "mcp_tool"}):
        entry = registration(root, "user" if scope == "user" else "local")
        wanted = installer.mcp_hook_server_argv()
        if entry is None:
            detail = f"not registered for these {scope} hooks: run `claude-session install`"
            rows.append(_row("MCP hook server", False, detail))
        elif [entry.get("command"), *entry.get("args", [])] != wanted:
            detail = f"registered as {entry.get('command')} {entry.get('args')}, not this install"
            rows.append(_row("MCP hook server", False, detail))
        else:
            rows.append(_row("MCP hook server", True, f"registered: {' '.join(wanted)}"))
    return rows


def _duplicates(found: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Claude Code runs an identical command once, but differing ones all run: events recorded
    twice. Flag every event with more than one distinct claude-session command."""
    by_event: dict[str, set[str]] = {}
    where: dict[str, set[str]] = {}
    for scope, event, handler in found:
        by_event.setdefault(event, set()).add(str(handler.get("command")))
        where.setdefault(event, set()).add(scope)
    doubled = {e: c for e, c in by_event.items() if len(c) > 1}
    if not found:
        return []
    if not doubled:
        return [_row("duplicate registrations", True, "none")]
    detail = "; ".join(
        f"{e}: {len(c)} different commands in {', '.join(sorted(where[e]))}"
        for e, c in sorted(doubled.items())
    )
    return [_row("duplicate registrations", False, detail)]


def _run_installed(found: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Run each distinct installed command once, with a sample payload, into a scratch project;
    one at a time, so each time is what Claude Code waits for that hook (run together, they
    share the CPUs and each looks several times slower than it is)."""
    distinct: dict[tuple[str, str], dict[str, Any]] = {}
    for _, event, handler in found:
        if handler.get("type") != "mcp_tool":
            distinct.setdefault((event, str(handler.get("command"))), handler)
    served = sorted({event for _, event, handler in found if handler.get("type") == "mcp_tool"})
    if not distinct and not served:
        return []
    from . import payloads  # the output contract's models, loaded before any hook is timed

    assert payloads.output_adapter is not None
    results = []
    times: list[tuple[float, str]] = []
    with tempfile.TemporaryDirectory(prefix="claude-session-doctor-") as scratch:
        project = Path(scratch)
        for (event, command), handler in distinct.items():
            done = installer.run_hook_command(
                command,
                json.dumps(sample_payload(event, project)).encode(),
                project,
                timeout=_timeout(handler.get("timeout")),
                extra_env=installer.probe_env(project),  # a scratch project needs none
            )
            times.append((done.seconds * 1000, event))
            problems = []
            if done.returncode != 0:
                problems.append(f"exit {done.returncode}")
            problem = done.output_problem() or _output_contract(done.stdout)
            if problem:
                problems.append(problem)
            if not _stored(project, sample_payload(event, project)["session_id"], event):
                first = done.stderr.strip().splitlines()[:1]
                problems.append("event not recorded" + (f" ({first[0][:160]})" if first else ""))
            detail = f"{done.seconds * 1000:.0f} ms" + (
                ": " + "; ".join(problems) if problems else ""
            )
            results.append(_row(f"hook {event}", not problems, detail))
        results += _run_served(served, project, times)
    ordered = sorted(times)
    slowest, name = ordered[-1]
    results.append(
        _row(
            "hooks timed",
            True,
            f"{len(ordered)} hooks run one at a time, each alone as Claude Code waits for it:"
            f" median {ordered[len(ordered) // 2][0]:.0f} ms, slowest {slowest:.0f} ms ({name})",
        )
    )
    return results


def _run_served(
    events: list[str], project: Path, times: list[tuple[float, str]]
) -> list[dict[str, Any]]:
    """The mcp_tool hooks: one MCP hook server started as Claude Code starts it, each event sent
    to it with a sample payload, timed from the call to the answer (what Claude Code waits)."""
    if not events:
        return []
    from .hook_client import McpHookClient, McpHookError

    results = []
    wait = STORE_WAIT_SECONDS
    try:
        server = McpHookClient(project, installer.probe_env(project))
    except (OSError, McpHookError) as exc:
        return [_row("MCP hook server", False, f"did not start: {exc}")]
    try:
        for event in events:
            payload = sample_payload(event, project)
            try:
                text, failed, seconds = server.call(payload)
            except McpHookError as exc:
                results.append(_row(f"hook {event} (MCP hook server)", False, str(exc)))
                break
            times.append((seconds * 1000, event))
            problems = ["answered with an error: " + text[:160]] if failed else []
            problem = _output_contract(text)
            if problem:
                problems.append(problem)
            if not stored_within(project, payload["session_id"], event, wait):
                problems.append(f"event not recorded (waited {wait:.0f} s)")
                wait = 0.0  # one event never came: the next are not waited for again
            detail = f"{seconds * 1000:.1f} ms" + (": " + "; ".join(problems) if problems else "")
            results.append(_row(f"hook {event} (MCP hook server)", not problems, detail))
    finally:
        server.close()
    return results


def _output_contract(stdout: str) -> str | None:
    """A JSON answer must also match Claude Code's output schema, or it is reported as an error."""
    if not stdout.strip():
        return None
    from pydantic import ValidationError

    from .payloads import output_adapter

    try:
        output_adapter.validate_json(stdout)
    except ValidationError as exc:
        return f"output breaks the hook output contract: {exc.errors()[0]['msg']}"
    return None


SKILL_COMMAND = "PreSkillShellCommand"


def sample_payload(event: str, project: Path) -> dict[str, Any]:
    """A payload of `event` that meets the contract (core/hook_payload.py's required fields,
    each of its kind), run on the scratch project: a Bash call for the tool events."""
    from .payloads import sample

    payload: dict[str, Any] = {
        "session_id": f"doctor-{os.getpid()}",
        "transcript_path": str(project / "transcript.jsonl"),
        "cwd": str(project),
    }
    if "Tool" in event or event in ("PermissionRequest", "PermissionDenied", SKILL_COMMAND):
        payload.update(
            tool_name="Bash", tool_input={"command": "true"}, tool_use_id=f"toolu_doctor_{event}"
        )
    if event == SKILL_COMMAND:  # a skill's inline shell command (Claude Code 2.1.332)
        payload.update(command_name="doctor", invoked_by="user")
    if event == "SessionStart":
        payload["source"] = "startup"
    return sample(event, payload)


def _integrity(conn: apsw.Connection, full: bool) -> str:
    """'ok', or what is wrong. Without `full`: the schema parses and the newest rows of the
    event log and the audit read back (a damaged page on that path shows), in milliseconds."""
    if full:
        return str(conn.execute("PRAGMA quick_check").fetchall()[0][0])
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        for table in ("events", "hook_events", "frame_states"):
            conn.execute(f"SELECT * FROM {table} ORDER BY rowid DESC LIMIT 100").fetchall()
    except apsw.Error as exc:  # a damaged file: reported, never raised
        return f"{type(exc).__name__}: {exc}"
    return "ok"


# How long doctor waits for an event the MCP hook server answered before storing it. That
# server gives SubagentStart's and an unjudged SubagentStop's empty answer as soon as the event
# is held on disk, then stores it (runtime/hookrt.py, `reply_early`): on a busy machine the row
# came after doctor looked, and a healthy install failed ("event not recorded", 5 of 8 runs at
# load 6). A hook process stores its event before it exits, so its check needs no wait.
STORE_WAIT_SECONDS = 10.0
STORE_POLL_SECONDS = 0.02


def stored_within(project: Path, session_id: str, event: str, seconds: float) -> bool:
    """`_stored`, asked again until the row is there or `seconds` have passed: a bound, so a
    store that never comes costs doctor `seconds` once (the caller then stops waiting)."""
    deadline = time.monotonic() + seconds
    while not _stored(project, session_id, event):
        if time.monotonic() >= deadline:
            return False
        time.sleep(STORE_POLL_SECONDS)
    return True


def _stored(project: Path, session_id: str, event: str) -> bool:
    try:
        conn = db.connect(db_path(str(project)), create=False, readonly=True)
    except db.DatabaseError:
        return False
    try:
        return bool(
            db.rows(
                conn,
                "SELECT 1 FROM events WHERE session_id = ? AND hook_event_name = ? LIMIT 1",
                (session_id, event),
            )
        )
    finally:
        conn.close()


def _database(root: Path, full: bool = False) -> list[dict[str, Any]]:
    path = db_path(str(root))
    if not os.path.exists(path):
        return [_row("database", True, f"{path} not created yet (the first hook creates it)")]
    results = []
    try:
        conn = db.connect(path, create=False, migrate=False)
        verdict = _integrity(conn, full)
        mode = conn.execute("PRAGMA journal_mode").fetchall()[0][0]
        version = db.schema_version(conn)
        conn.close()
        label = "database quick_check" if full else "database readable"
        results.append(_row(label, verdict == "ok", f"{path}: {verdict}"))
        unsafe = unsafe_filesystem(str(root))
        expected = "delete" if unsafe else "wal"
        note = f" ({unsafe}: WAL is not safe on this file system)" if unsafe else ""
        results.append(_row("database journal", mode == expected, f"journal_mode={mode}{note}"))
        results.append(
            _row(
                "database schema",
                version == db.SCHEMA_VERSION,
                f"version {version} (this claude-session: {db.SCHEMA_VERSION})",
            )
        )
    except db.DatabaseError as exc:
        results.append(_row("database", False, str(exc)))
    perms = stat.S_IMODE(os.stat(path).st_mode)
    results.append(_row("database permissions", perms & 0o077 == 0, f"mode {perms:o}"))
    from .. import health  # the checks `status` makes too, computed once

    shared = (
        *health.spool_checks(str(root)),
        health.replaced_database(str(root)),
        health.internal_errors(str(root)),
    )
    results += [c.row() for c in shared]
    results += _transcripts(path)
    return results


def _unattributed(root: Path) -> list[dict[str, Any]]:
    """The events that came with no session id (other tools' payloads, Cursor's or Codex's,
    sent to our hooks): kept, filed under no session; information, not a failure."""
    from ...core import events

    found = _read(db_path(str(root)), events.unattributed_count)
    if found is None:
        return []
    detail = (
        f"{plural(found, 'event')} arrived without a session id (other tools' payloads?):"
        " stored unattributed, in no session (`claude-session events` lists them)"
        if found
        else "none: every event named its session"
    )
    return [_row("events without a session id", True, detail)]


def _read(path: str, read: Callable[[apsw.Connection], T]) -> T | None:
    """What `read` finds in the database at `path`, opened read-only; None when there is no
    database, or one of an older schema (the database check says why)."""
    if not os.path.exists(path):
        return None
    try:
        conn = db.connect(path, create=False, migrate=False, readonly=True)
        try:
            return read(conn)
        finally:
            conn.close()
    except (db.DatabaseError, apsw.Error):
        return None


def _transcripts(path: str) -> list[dict[str, Any]]:
    """Claude Code's transcripts read for costs: information (a transcript gone with an old
    session is normal; one refused names a path outside the config folder we read)."""
    from ..cost import costs

    def read(conn: apsw.Connection) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        skipped = db.rows(
            conn,
            "SELECT path, lines_skipped, first_skipped, (SELECT sum(lines_skipped) FROM"
            " transcript_files) AS total, (SELECT count(*) FROM transcript_files WHERE"
            " lines_skipped > 0) AS files FROM transcript_files WHERE lines_skipped > 0"
            " ORDER BY updated_at DESC LIMIT 1",
        )
        return costs.transcript_state(conn), skipped

    looked = _read(path, read)
    if looked is None:
        return []  # an older schema, or the database check above says why
    found, skipped = looked
    detail = f"{found['files']} read"
    if skipped:  # not understood, or figures out of bounds (the agent can write there too)
        last = skipped[0]
        where = "" if last["first_skipped"] is None else f" from byte {last['first_skipped']}"
        detail += (
            f"; {last['total']} lines skipped in {last['files']} (latest: {last['path']},"
            f" {last['lines_skipped']} lines{where})"
        )
    if found["old_unreadable"]:
        detail += f"; {found['old_unreadable']} of ended sessions gone or unreadable (information)"
    detail += "".join(f"; {problem}" for problem in found["live_problems"])
    return [_row("transcripts", True, detail)]
