"""An OTLP/HTTP receiver on loopback for the export tests: it decodes what the SDK's exporter
sends (protobuf, the wire format every backend reads) and keeps each span; it can refuse
(503) or be stopped and started again on the same port, as a backend that goes down. The
real-backend tests (tests/test_otel_backend.py) use Arize Phoenix; this one is small enough
to say exactly what arrived, how many times."""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class Received:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, int, dict[str, Any]]]
    status_code: int
    status_message: str
    resource: dict[str, Any] = field(default_factory=dict)


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def _attrs(items: Any) -> dict[str, Any]:
    return {a.key: _value(a.value) for a in items}


class Receiver:
    def __init__(self, port: int = 0) -> None:
        self.spans: list[Received] = []
        self.requests = 0
        self.refusing = False
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        self.port = port
        self.server: ThreadingHTTPServer | None = None
        self.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                with receiver.lock:
                    receiver.requests += 1
                    receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                    if receiver.refusing or self.path != "/v1/traces":
                        self.send_response(503 if receiver.refusing else 404)
                        self.end_headers()
                        return
                    request = ExportTraceServiceRequest.FromString(body)
                    receiver.spans += _spans(request)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def by_id(self) -> dict[str, Received]:
        return {s.span_id: s for s in self.spans}


def _spans(request: ExportTraceServiceRequest) -> list[Received]:
    out = []
    for resource_spans in request.resource_spans:
        resource = _attrs(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                out.append(
                    Received(
                        span.trace_id.hex(),
                        span.span_id.hex(),
                        span.parent_span_id.hex() or None,
                        span.name,
                        span.start_time_unix_nano,
                        span.end_time_unix_nano,
                        _attrs(span.attributes),
                        [(e.name, e.time_unix_nano, _attrs(e.attributes)) for e in span.events],
                        span.status.code,
                        span.status.message,
                        resource,
                    )
                )
    return out
