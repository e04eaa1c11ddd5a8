"""The real OpenTelemetry backend the export tests rely on (tests/otel_backend.py): spans sent
with the OTLP exporters come back through the backend's own API as sent, and what it does with
duplicates and with an outage is pinned here, because the exporter's delivery design rests on it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
from otel_backend import MISSING, OtelBackend, available

# A fixed instant (2026-01-01T00:00:00Z) in ns: every test's times are offsets from it.
T0 = 1_767_225_600_000_000_000
RESOURCE = Resource({"service.name": "claude-session"})


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OtelBackend]:
    """One server for the module: starting Phoenix takes ~10-15 s on this machine."""
    if not available():
        pytest.fail(MISSING)  # not a skip: CI must not pass without the backend
    server = OtelBackend(tmp_path_factory.mktemp("otel-backend"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def context(trace_id: int, span_id: int) -> SpanContext:
    return SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(1))


def span(name: str, trace_id: int, span_id: int, **attributes: Any) -> ReadableSpan:
    """A finished span with our own ids, as the exporter will build them from recorded rows."""
    return ReadableSpan(
        name=name,
        context=context(trace_id, span_id),
        resource=RESOURCE,
        attributes=attributes,
        start_time=T0,
        end_time=T0 + 1_000,
    )


def by_span_id(spans: list[dict[str, Any]], span_id: int) -> list[dict[str, Any]]:
    return [s for s in spans if s["span_id"] == f"{span_id:016x}"]


def at(ns: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1_000)


def test_spans_come_back_with_our_ids_times_attributes_and_events(backend: OtelBackend) -> None:
    """Ids, parent, names, times (µs), typed attributes, status and events survive the trip;
    the resource attribute openinference.project.name picks the project."""
    trace_id, root_id, child_id = 0x5B8EFFF798038103D269B633813FC60C, 0x051581BF3CB55C13, 0x1
    resource = Resource(
        {"service.name": "claude-session", "openinference.project.name": "claude-session-a"}
    )
    root = ReadableSpan(
        name="session",
        context=context(trace_id, root_id),
        resource=resource,
        attributes={
            "session.turns": 3,
            "cost.usd": 0.125,
            "session.id": "s-1",
            "session.resumed": False,
            "tool.names": ["Bash", "Edit"],
        },
        kind=SpanKind.INTERNAL,
        start_time=T0 + 123_456_000,  # whole microseconds: these come back exactly
        end_time=T0 + 2_500_000_000,
        status=Status(StatusCode.OK),
    )
    child = ReadableSpan(
        name="tool Bash",
        context=context(trace_id, child_id),
        parent=root.context,
        resource=resource,
        attributes={"tool.exit_code": 2, "tool.ok": True},
        events=[Event("tool.failed", {"exit_code": 2, "command": "pytest"}, T0 + 200_000_789)],
        start_time=T0 + 150_000_000,
        end_time=T0 + 250_000_000,
        status=Status(StatusCode.ERROR, "exit 2"),
    )

    exporter = HttpSpanExporter(endpoint=backend.otlp_http_endpoint, timeout=10)
    assert exporter.export([root, child]) is SpanExportResult.SUCCESS
    exporter.shutdown()

    spans = backend.wait_for_spans(lambda s: len(by_span_id(s, child_id)) == 1)
    (got_root,) = by_span_id(spans, root_id)
    (got_child,) = by_span_id(spans, child_id)

    assert got_root["project"] == got_child["project"] == "claude-session-a"
    assert got_root["trace_id"] == got_child["trace_id"] == f"{trace_id:032x}"
    assert got_child["span_id"] == "0000000000000001"
    assert got_root["parent_id"] is None
    assert got_child["parent_id"] == f"{root_id:016x}"
    assert (got_root["name"], got_child["name"]) == ("session", "tool Bash")
    assert got_root["start_time"] == at(T0 + 123_456_000)
    assert got_root["end_time"] == at(T0 + 2_500_000_000)
    assert got_root["start_time"].tzinfo is not None
    assert got_root["attributes"] == root.attributes
    for key, value in root.attributes.items():
        assert type(got_root["attributes"][key]) is type(value), key  # False stays a bool
    assert got_child["attributes"] == {"tool.exit_code": 2, "tool.ok": True}
    assert (got_root["status_code"], got_root["status_message"]) == ("OK", "")
    assert (got_child["status_code"], got_child["status_message"]) == ("ERROR", "exit 2")
    assert got_root["events"] == []
    (event,) = got_child["events"]
    assert event["name"] == "tool.failed"
    assert event["attributes"] == {"exit_code": 2, "command": "pytest"}
    # 789 ns past a microsecond: rounded to the nearest one (ns / 1e9 as a float, so ±1 µs).
    assert abs(event["time"] - at(T0 + 200_000_789)) <= timedelta(microseconds=1)


def test_a_span_exported_again_is_stored_once_first_write_wins(backend: OtelBackend) -> None:
    """Finding: Phoenix keeps ONE copy per span_id. A re-export of a stored span, identical or
    changed, is dropped silently (the export still reports SUCCESS) and the first version stays;
    so is a span reusing that span_id under ANOTHER trace id: span ids must be unique across
    traces, not just within one. Re-sending after an unknown outcome is therefore safe."""
    trace_id, other_trace, span_id, sentinel_id = 0xB0, 0xB1, 0xB2, 0xB3
    exporter = HttpSpanExporter(endpoint=backend.otlp_http_endpoint, timeout=10)
    first = span("turn", trace_id, span_id, version=1)
    assert exporter.export([first]) is SpanExportResult.SUCCESS
    backend.wait_for_spans(lambda s: len(by_span_id(s, span_id)) == 1)

    # One request, so the server queues these in order: once the sentinel is stored, the
    # others before it have been dealt with.
    again = [
        first,
        span("turn, changed", trace_id, span_id, version=2),
        span("turn, other trace", other_trace, span_id, version=3),
        span("sentinel", trace_id, sentinel_id),
    ]
    assert exporter.export(again) is SpanExportResult.SUCCESS
    exporter.shutdown()

    spans = backend.wait_for_spans(lambda s: len(by_span_id(s, sentinel_id)) == 1)
    (stored,) = by_span_id(spans, span_id)
    assert stored["name"] == "turn"
    assert stored["trace_id"] == f"{trace_id:032x}"
    assert stored["attributes"] == {"version": 1}
    assert stored["project"] == "default"  # service.name alone does not name a project


def test_an_export_while_the_backend_is_down_fails_and_it_keeps_its_spans(
    backend: OtelBackend,
) -> None:
    """With the server stopped, export() returns FAILURE (no exception escapes, after the
    exporter's own retries up to its timeout); restarted on the same ports and data, the server
    still has what it stored before and takes new exports."""
    trace_id, before_id, during_id, after_id = 0xC0, 0xC1, 0xC2, 0xC3
    exporter = HttpSpanExporter(endpoint=backend.otlp_http_endpoint, timeout=2)
    assert exporter.export([span("before", trace_id, before_id)]) is SpanExportResult.SUCCESS
    backend.wait_for_spans(lambda s: len(by_span_id(s, before_id)) == 1)

    backend.stop()
    began = time.monotonic()
    assert exporter.export([span("during", trace_id, during_id)]) is SpanExportResult.FAILURE
    assert time.monotonic() - began < 10  # bounded by the exporter's timeout

    backend.start()
    assert exporter.export([span("after", trace_id, after_id)]) is SpanExportResult.SUCCESS
    exporter.shutdown()
    spans = backend.wait_for_spans(lambda s: len(by_span_id(s, after_id)) == 1)
    assert [s["name"] for s in by_span_id(spans, before_id)] == ["before"]
    assert by_span_id(spans, during_id) == []


def test_an_export_over_grpc_arrives(backend: OtelBackend) -> None:
    """OTLP/gRPC (plain text) reaches the same store as OTLP/HTTP."""
    trace_id, span_id = 0xD0, 0xD1
    exporter = GrpcSpanExporter(endpoint=backend.otlp_grpc_endpoint, insecure=True, timeout=10)
    assert exporter.export([span("grpc", trace_id, span_id, via="grpc")]) is (
        SpanExportResult.SUCCESS
    )
    exporter.shutdown()
    spans = backend.wait_for_spans(lambda s: len(by_span_id(s, span_id)) == 1)
    (stored,) = by_span_id(spans, span_id)
    assert (stored["name"], stored["attributes"]) == ("grpc", {"via": "grpc"})


def listening_hosts(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net shows them) of the TCP sockets listening on
    `port`: 0100007F is 127.0.0.1, 0000000000000000FFFF00000100007F the same as IPv6."""
    hosts = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            host, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                hosts.add(host)
    return hosts


def test_the_backend_listens_on_loopback_only(backend: OtelBackend) -> None:
    """Both ports are bound to 127.0.0.1 (Phoenix alone binds gRPC to every interface)."""
    loopback = {"0100007F", "0000000000000000FFFF00000100007F"}
    for port in (backend.http_port, backend.grpc_port):
        hosts = listening_hosts(port)
        assert hosts, f"nothing listens on port {port}"
        assert hosts <= loopback, (port, hosts)
