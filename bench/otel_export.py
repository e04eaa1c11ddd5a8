#!/usr/bin/env python3
"""OpenTelemetry export at scale: a project database built through the real recording path
(bench/at_scale.py's sessions: prompts, reads, edits, commands, failure ladders, a subagent, a
compaction), then every session sent by `otel_export.export_pass`, the daemon's
own pass, through the SDK's OTLP/HTTP exporter to a receiver on loopback that decodes each
request and counts its spans. Figures, not pass/fail: spans per session and per 1M events,
bytes on the wire per span, spans sent per second, and a second pass (nothing left to send).

    .venv/bin/python bench/otel_export.py [--events 100000] [--sessions 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # bench/ is a script beside the package, not part of it
sys.path.insert(0, str(REPO / "bench"))

from at_scale import build  # noqa: E402  (bench/at_scale.py, beside this script)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)

from claude_session.core import db  # noqa: E402
from claude_session.services.telemetry import otel_export  # noqa: E402


class Counter:
    def __init__(self) -> None:
        self.spans = 0
        self.requests = 0
        self.bytes = 0
        self.ids: set[bytes] = set()
        self.lock = threading.Lock()
        counter = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                request = ExportTraceServiceRequest.FromString(body)
                ids = [
                    s.span_id
                    for rs in request.resource_spans
                    for ss in rs.scope_spans
                    for s in ss.spans
                ]
                with counter.lock:
                    counter.requests += 1
                    counter.bytes += len(body)
                    counter.spans += len(ids)
                    counter.ids.update(ids)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


def run(events: int, sessions: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-otel-") as scratch:
        project = Path(scratch) / "project"
        project.mkdir()
        path = project / ".claude-session.db"
        started = time.perf_counter()
        built = build(path, events, sessions)
        build_seconds = time.perf_counter() - started
        counter = Counter()
        where = otel_export.target({"otel_endpoint": counter.endpoint}, environ={})
        assert where is not None
        send = otel_export.sender(str(project), where)
        conn = db.connect(str(path))
        # An hour after the last event (the build's clock runs ahead): every span is due.
        now = float(conn.execute("SELECT max(last_activity_at) FROM sessions").fetchall()[0][0])
        now += 3600
        passes = []
        while True:
            began = time.perf_counter()
            done = otel_export.export_pass(conn, where, send, now, idle_seconds=3600)
            passes.append((done.sent, time.perf_counter() - began, done.error))
            if done.error or not done.sent:
                break
        seconds = sum(s for n, s, _ in passes if n)
        sessions_done = conn.execute("SELECT count(*) FROM otel_sessions").fetchall()[0][0]
        conn.close()
        counter.server.shutdown()
    sent = counter.spans
    return {
        "events": built["events"],
        "sessions": built["sessions"],
        "build_seconds": round(build_seconds, 1),
        "spans_sent": sent,
        "distinct_span_ids": len(counter.ids),
        "sessions_done": sessions_done,
        "passes": [(n, round(s, 2), e) for n, s, e in passes],
        "spans_per_second": round(sent / seconds) if seconds else None,
        "spans_per_session": round(sent / max(1, built["sessions"]), 1),
        "spans_per_million_events": round(sent / built["events"] * 1_000_000),
        "bytes_per_span": round(counter.bytes / max(1, sent)),
        "requests": counter.requests,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    found = run(args.events, args.sessions)
    if args.json:
        print(json.dumps(found, indent=2))
        return
    print(
        f"{found['events']:,} events in {found['sessions']} sessions (built in"
        f" {found['build_seconds']} s): {found['spans_sent']:,} spans sent"
        f" ({found['distinct_span_ids']:,} distinct ids) in {found['requests']} requests,"
        f" {found['sessions_done']} sessions done"
    )
    print(
        f"  {found['spans_per_second'] or 0:,} spans/s;"
        f" {found['spans_per_session']} spans a session;"
        f" {found['spans_per_million_events']:,} spans per 1M events;"
        f" {found['bytes_per_span']} bytes a span on the wire"
    )
    print(f"  passes (spans, seconds, error): {found['passes']}")


if __name__ == "__main__":
    main()
