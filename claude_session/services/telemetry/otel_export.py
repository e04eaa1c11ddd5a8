"""Sending every session's spans (services/telemetry/otel_spans.py) to the OpenTelemetry backend a
team already runs, over OTLP (HTTP/protobuf or gRPC), with the OpenTelemetry SDK's own exporters.

Off unless configured: `otel_endpoint` in the project's configuration (trusted only: a cloned
configuration never sends anything anywhere), else the standard OTEL_EXPORTER_OTLP_*
variables of the process. Never on a hook's path: the daemon sends from a thread
of its own, every EXPORT_EVERY_SECONDS, and `claude-session export-otel` on demand.

Never lost, never twice: what went out is recorded in the database after the backend took it
(otel_sent, per span id; otel_sessions once a session's own span went out, its last), so a
restart or a crash sends exactly what was not recorded; a span sent again after a crash
between the two has the same ids (derived from our rows), which the backend keeps once. A
backend down or failing is tried again with a growing pause, up to MAX_BACKOFF_SECONDS; the
last error and the lag are in otel_export, for `status` and `doctor`.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import apsw

from ...core import db, log, otel_state, trust
from ...core.paths import db_path
from ...core.redact import redact
from .. import config_file
from ..config_file import safe_url
from . import otel_spans
from .otel_wire import Send, Sender, Target

EXPORT_EVERY_SECONDS = 5.0
BATCH_SPANS = 512
SESSIONS_PER_PASS = 200
MAX_BACKOFF_SECONDS = 300.0
TRANSCRIPT_WAIT_SECONDS = 600.0  # a session's transcripts not read by then: sent without them


def target(values: Mapping[str, object], environ: Mapping[str, str] | None = None) -> Target | None:
    """The configured target, or None when export is off. The configuration's keys first;
    then CLAUDE_SESSION_OTEL_ENDPOINT (_PROTOCOL, _HEADERS, _LOG_CONTENT): Claude Code gives
    its hooks, and so the daemon they start, none of the OTEL_* variables, so
    this is the one a team sets in `.claude/settings.json` `env`; then the standard
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT (_PROTOCOL, _HEADERS),
    seen by `export-otel` and a daemon started from a shell.
    OTEL_SDK_DISABLED=true turns it off."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    endpoint = str(values.get("otel_endpoint") or "")
    protocol = str(values.get("otel_protocol") or "http/protobuf")
    headers = str(values.get("otel_headers") or "")
    content = values.get("otel_log_content") is True
    traces_url = ""
    if not endpoint and env.get("CLAUDE_SESSION_OTEL_ENDPOINT", "").strip():
        endpoint = env["CLAUDE_SESSION_OTEL_ENDPOINT"].strip()
        protocol = env.get("CLAUDE_SESSION_OTEL_PROTOCOL", "").strip() or "http/protobuf"
        headers = env.get("CLAUDE_SESSION_OTEL_HEADERS", "")
        content = content or env.get("CLAUDE_SESSION_OTEL_LOG_CONTENT", "") in ("1", "true")
    if not endpoint:
        traces_url = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
        endpoint = traces_url or env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
        protocol = (
            env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or "http/protobuf"
        ).strip()
        headers = env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or env.get(
            "OTEL_EXPORTER_OTLP_HEADERS", ""
        )
    if not endpoint.startswith(("http://", "https://")):
        return None
    if protocol not in ("http/protobuf", "grpc"):
        protocol = "http/protobuf"
    if protocol == "http/protobuf" and not traces_url and not endpoint.endswith("/v1/traces"):
        endpoint = endpoint.rstrip("/") + "/v1/traces"  # a base endpoint, as the standard says
    delay = values.get("otel_export_delay_seconds", 30.0)
    timeout = values.get("otel_export_timeout_seconds", 30.0)
    return Target(
        endpoint,
        protocol,
        parse_headers(headers, env),
        content,
        float(delay) if isinstance(delay, int | float) else 30.0,
        float(timeout) if isinstance(timeout, int | float) else 30.0,
    )


def parse_headers(text: str, environ: Mapping[str, str]) -> dict[str, str]:
    """ "key=value,key2=value2" (values may be %-encoded, as the standard allows), with
    ${NAME} taken from the environment: the secret need not be written in the file."""
    from urllib.parse import unquote

    out = {}
    for pair in text.split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            value = re.sub(r"\$\{(\w+)\}", lambda m: environ.get(m.group(1), ""), value)
            out[key.strip().lower()] = unquote(value.strip())
    return out


def resource_attributes(root: str) -> dict[str, str]:
    """Who and where, as resource attributes: service, host, user, the repository (its
    remote without any credentials in it) and branch. OTEL_RESOURCE_ATTRIBUTES and
    OTEL_SERVICE_NAME override them (see `_resource`)."""
    import getpass
    import socket

    from ... import __version__
    from ...core import usergit

    attrs = {
        "service.name": "claude-session",
        "service.version": __version__,
        "host.name": socket.gethostname(),
        "claude_session.project": os.path.basename(os.path.abspath(root)),
    }
    try:
        attrs["user.name"] = getpass.getuser()
    except (KeyError, OSError):
        pass
    for key, args in (
        ("vcs.repository.url.full", ["config", "--get", "remote.origin.url"]),
        ("vcs.repository.ref.name", ["symbolic-ref", "--short", "-q", "HEAD"]),
    ):
        code, out, _ = usergit.run(root, args, timeout=5)
        value = out.strip()
        if code == 0 and value:
            attrs[key] = redact(safe_url(value) if key == "vcs.repository.url.full" else value)
    return attrs


def _resource(root: str) -> Any:
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource

    return Resource.create(resource_attributes(root)).merge(OTELResourceDetector().detect())


def sender(root: str, where: Target) -> Sender:
    """`send(spans, ends)` to `where` (otel_wire.Sender), our resource attributes on every
    span."""
    return Sender(where, _resource(root))


def _signed(span_id: int) -> int:
    return span_id - (1 << 64) if span_id >= 1 << 63 else span_id


@dataclass
class Pass:
    """One export pass: spans sent, spans due and not sent, and why it stopped, if it did."""

    sent: int = 0
    waiting: int = 0
    error: str | None = None
    oldest_waiting: float | None = None


def export_pass(
    conn: apsw.Connection,
    where: Target,
    send: Send,
    now: float,
    idle_seconds: float,
    since: float | None = None,
) -> Pass:
    """Send what is due and not sent of the sessions active since `since` (None: all),
    oldest first, in batches; after a failure, nothing until the backoff is over. Nothing
    of a database this user did not make here (core/trust.py) goes to the user's backend."""
    done = Pass()
    ends = time.monotonic() + where.timeout  # the whole pass, however the backend answers
    if untrusted(conn):
        return done
    state = conn.execute(
        "SELECT failures, next_attempt_at, endpoint, oldest_waiting FROM otel_export WHERE id = 1"
    ).fetchall()
    failures = int(state[0][0]) if state else 0  # type: ignore[arg-type]
    if state and state[0][1] is not None and now < float(state[0][1]):
        return done
    batch: list[otel_spans.Span] = []
    finishing: dict[str, int] = {}  # sessions whose own span is in `batch`: spans sent in all
    rows = conn.execute(
        "SELECT session_id, status, last_activity_at FROM sessions WHERE session_id NOT IN"
        " (SELECT session_id FROM otel_sessions)"
        " AND max(last_activity_at, coalesce(ended_at, 0)) >= ?"
        " ORDER BY last_activity_at LIMIT ?",
        (since if since is not None else float("-inf"), SESSIONS_PER_PASS),
    ).fetchall()
    for session_id, status, last in rows:
        sid = str(session_id)
        spans = otel_spans.session_spans(conn, sid, content=where.content)
        if not spans:
            continue
        sent = otel_state.sent_ids(conn, sid)
        session, children = spans[0], spans[1:]
        complete = status == "ended" or float(last) < now - idle_seconds  # type: ignore[arg-type]
        settled = complete and now - session.end >= where.delay
        if settled and now - session.end < TRANSCRIPT_WAIT_SECONDS:
            settled = transcripts_read(conn, sid)  # its tokens and cost are in first
        left = 0
        for span in children:
            if _signed(span.span_id) in sent:
                continue
            if settled or (not span.open and now - span.end >= where.delay):
                batch.append(span)
            else:
                left += 1
                if not span.open:
                    done.oldest_waiting = min(done.oldest_waiting or span.end, span.end)
        if settled and not left:
            batch.append(session)  # last: once it went out, the session is done
            finishing[sid] = len(sent) + sum(1 for s in batch if s.attributes["session.id"] == sid)
        elif complete:
            done.oldest_waiting = min(done.oldest_waiting or session.end, session.end)
        while len(batch) >= BATCH_SPANS:
            if not _flush(conn, batch[:BATCH_SPANS], send, ends, finishing, now, done, where):
                return _failed(conn, done, failures, now, batch, where)
            del batch[:BATCH_SPANS]
    if batch and not _flush(conn, batch, send, ends, finishing, now, done, where):
        return _failed(conn, done, failures, now, batch, where)
    if (
        state
        and not done.sent
        and not failures
        and state[0][2:] == (where.shown, done.oldest_waiting)
    ):
        return done  # nothing changed: no write (the daemon watches the database)
    otel_state.record_pass(conn, where.shown, now, done.sent > 0, done.oldest_waiting)
    return done


def transcripts_read(conn: apsw.Connection, session_id: str) -> bool:
    """Whether every transcript of the session was read to its end (the daemon
    reads them as they grow): a span goes out once, so its tokens and cost must be in. One
    that is gone, or that could not be read, counts as read: it will not get any further."""
    rows = conn.execute(
        "SELECT path, read_to, last_error FROM transcript_files WHERE session_id = ?",
        (session_id,),
    ).fetchall()
    if not rows:
        named = conn.execute(
            "SELECT transcript_path FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchall()
        return not (named and named[0][0] and os.path.exists(str(named[0][0])))
    for path, read_to, error in rows:
        try:
            size = os.path.getsize(str(path))
        except OSError:
            continue
        if error is None and isinstance(read_to, int) and size > read_to:
            return False
    return True


def _flush(
    conn: apsw.Connection,
    spans: list[otel_spans.Span],
    send: Send,
    ends: float,
    finishing: dict[str, int],
    now: float,
    done: Pass,
    where: Target,
) -> bool:
    """Send one batch; once the backend took it, record it (and the sessions it finished)."""
    error = send(spans, ends)
    if error is not None:
        done.error = error
        return False
    sessions = [str(span.attributes.get("session.id", "")) for span in spans]
    finished = {
        sid: finishing[sid]
        for span, sid in zip(spans, sessions, strict=True)
        if span.key == "session" and sid in finishing
    }
    ids = [(_signed(span.span_id), sid) for span, sid in zip(spans, sessions, strict=True)]
    otel_state.record_sent(conn, ids, finished, where.shown, now)
    done.sent += len(spans)
    return True


def _failed(
    conn: apsw.Connection,
    done: Pass,
    failures: int,
    now: float,
    batch: list[otel_spans.Span],
    where: Target,
) -> Pass:
    done.waiting = len(batch)
    ends = [s.end for s in batch]
    done.oldest_waiting = min([*ends, done.oldest_waiting] if done.oldest_waiting else ends)
    pause = min(MAX_BACKOFF_SECONDS, EXPORT_EVERY_SECONDS * 2**failures)
    error = redact(done.error or "failed")[:500]
    otel_state.record_failure(conn, where.shown, now, error, now + pause, done.oldest_waiting)
    return done


def export_since(conn: apsw.Connection, where: Target, send: Send, since: float) -> tuple[int, int]:
    """Every span of every session active since `since`, sent again whatever was sent before
    (`claude-session export-otel --since`): the ids are the same, so the backend keeps one
    of each. (sessions, spans) sent; raises RuntimeError with the backend's failure (a batch
    not through by `where.timeout` included), or when
    the database is not this user's (core/trust.py): nothing of it is exported."""
    problem = untrusted(conn)
    if problem:
        raise RuntimeError(problem)
    rows = conn.execute(
        "SELECT session_id FROM sessions WHERE last_activity_at >= ? ORDER BY started_at",
        (since,),
    ).fetchall()
    sessions = spans_sent = 0
    for (session_id,) in rows:
        spans = otel_spans.session_spans(conn, str(session_id), content=where.content)
        for start in range(0, len(spans), BATCH_SPANS):
            # Each batch by its own deadline: a history may take longer in all than a pass
            # may, but a batch that does not go through by then stops the command.
            ends = time.monotonic() + where.timeout
            error = send(spans[start : start + BATCH_SPANS], ends)
            if error is not None:
                raise RuntimeError(error)
        sessions += 1
        spans_sent += len(spans)
    return sessions, spans_sent


class Exporter:
    """The daemon's exporting thread: a pass every EXPORT_EVERY_SECONDS while
    export is configured (the configuration is read again each time), on a connection of its
    own; nothing else waits for it."""

    def __init__(self, root: str, values: Callable[[], Mapping[str, object]]) -> None:
        self.root = root
        self.values = values
        self.current: tuple[Target, Send] | None = None

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self.run, args=(stop,), name="otel-export", daemon=True)
        thread.start()
        return thread

    def run(self, stop: threading.Event) -> None:
        conn: apsw.Connection | None = None
        failed = ""
        try:
            while not stop.is_set():
                try:
                    where = target(self.values())
                    if where is not None:
                        conn = conn or db.connect(db_path(self.root))
                        self.once(conn, where)
                    failed = ""
                except Exception as exc:  # a locked database, our bug: logged, tried again
                    said = f"export pass failed: {type(exc).__name__}: {exc}"
                    if said != failed:  # once, not every 5 s
                        log.error(self.root, "otel", said)
                    failed = said
                stop.wait(EXPORT_EVERY_SECONDS)
        finally:
            if conn is not None:
                conn.close()

    def once(self, conn: apsw.Connection, where: Target) -> Pass:
        if self.current is None or self.current[0] != where:
            self.current = (where, sender(self.root, where))
        idle = self.values().get("session_idle_minutes", 60.0)
        minutes = float(idle) if isinstance(idle, int | float) else 60.0
        now = time.time()
        # Sessions active since an idle period before the export was first found on: one that
        # ran while it was configured goes out even if this process started after it ended.
        since = enabled_at(conn, now) - minutes * 60
        done = export_pass(conn, where, self.current[1], now, minutes * 60, since)
        if done.error:
            log.write(self.root, "WARNING", "otel", f"export to {where.shown}: {done.error}")
        return done


def enabled_at(conn: apsw.Connection, now: float) -> float:
    """When the daemon first found export on (recorded now, the first time):
    it sends the sessions active since (less `session_idle_minutes`); older ones go with
    `export-otel --since`, on demand, so turning the export on does not send a project's
    whole history by surprise."""
    return otel_state.enabled_at(conn, now)


def untrusted(conn: apsw.Connection) -> str | None:
    """Why this database must not be exported from (None: it may)."""
    return trust.database_problem(conn.filename, conn)


def status(conn: apsw.Connection, root: str, now: float) -> dict[str, Any] | None:
    """What `status` and `doctor` show: where to, spans sent, the lag, the last error; None
    when export is off."""
    values = config_file.load_or_defaults(root).values
    where = target(values)
    if where is None:
        return None
    rows = conn.execute(
        "SELECT last_attempt_at, last_success_at, last_error, failures, next_attempt_at,"
        " spans_sent, oldest_waiting FROM otel_export WHERE id = 1"
    ).fetchall()
    out: dict[str, Any] = {"endpoint": where.shown, "protocol": where.protocol}
    refused = untrusted(conn)
    if refused:
        out["refused"] = f"nothing is exported: {refused}"
    if rows:
        attempt, success, error, failures, retry, sent, oldest = rows[0]
        out |= {
            "last_attempt_at": attempt,
            "last_success_at": success,
            "last_error": error,
            "failures": failures,
            "next_attempt_at": retry,
            "spans_sent": sent,
            "lag_seconds": None if oldest is None else max(0.0, now - float(oldest)),
        }
    return out
