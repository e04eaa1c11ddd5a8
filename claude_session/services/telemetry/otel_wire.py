"""The wire side of the OpenTelemetry export (services/telemetry/otel_export.py decides what
goes and records what went): the SDK's OTLP exporter for a target, our spans as the SDK's,
and each send bounded: the backend's answer read up to MAX_ANSWER_BYTES, and a whole run
ended by its deadline (`otel_export_timeout_seconds`) however slowly the backend answers.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config_file import safe_url
from . import otel_spans

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter

TIMEOUT_SECONDS = 10.0  # the SDK's own: a connection, a read, its retries
SCOPE = "claude-session"
MAX_ANSWER_BYTES = 1 << 20  # the backend's answer is a few bytes; more is read no further


@dataclass(frozen=True)
class Target:
    """Where and how spans go: the traces endpoint (a URL for HTTP, host:port or URL for
    gRPC), the protocol, the headers (auth), content on or off, the delay after a span's
    end before it goes, and how long one export run may take in all."""

    endpoint: str
    protocol: str
    headers: dict[str, str]
    content: bool
    delay: float
    timeout: float = 30.0

    @property
    def shown(self) -> str:
        """The endpoint as stored and printed: without credentials (see `safe_url`)."""
        return safe_url(self.endpoint)


def make_exporter(where: Target, sockets: Sockets | None = None) -> SpanExporter:
    """The SDK's OTLP exporter for `where`: HTTP/protobuf, or gRPC (the `otel-grpc` extra).
    Its HTTP connections' sockets are kept in `sockets`, to be cut at a run's deadline."""
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)  # failures are ours to tell
    if where.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        insecure = where.endpoint.startswith("http://")
        bounded: Any = (("grpc.max_receive_message_length", MAX_ANSWER_BYTES),)
        return GrpcExporter(
            endpoint=where.endpoint,
            insecure=insecure,
            headers=where.headers or None,
            timeout=min(TIMEOUT_SECONDS, where.timeout),  # gRPC's is a deadline per call
            channel_options=bounded,
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(
        endpoint=where.endpoint,
        headers=where.headers or None,
        timeout=TIMEOUT_SECONDS,
        session=bounded_session(sockets=sockets or Sockets()),
    )


class AnswerTooLarge(OSError):
    """The backend answered more than MAX_ANSWER_BYTES: the export failed, read no further."""


def bounded_session(limit: int = MAX_ANSWER_BYTES, sockets: Sockets | None = None) -> Any:
    """A requests session whose answers are read up to `limit` bytes, then given up: the SDK
    exporter reads the whole answer into memory otherwise (a backend answering a gigabyte
    took the daemon to a gigabyte). Streamed, so no more than a chunk over the
    limit is ever held; decompressed size counts, so a small compressed bomb does not help.
    Its connections' sockets go into `sockets` (see `Sockets`)."""
    import requests

    class Bounded(requests.Session):
        def request(self, method: Any, url: Any, *args: Any, **kwargs: Any) -> Any:
            kwargs["stream"] = True
            response = super().request(method, url, *args, **kwargs)
            body = bytearray()
            try:
                for chunk in response.iter_content(64 * 1024):
                    body += chunk
                    if len(body) > limit:
                        raise AnswerTooLarge(
                            f"the backend's answer is over {limit} bytes; not read further"
                        )
            finally:
                response.close()
            response._content = bytes(body)
            return response

    session = Bounded()
    adapter = _tracking_adapter(sockets or Sockets())
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


class Sockets:
    """The sockets an exporter's HTTP connections opened, so that a run's deadline can end
    what a socket timeout cannot: a backend that answers a byte at a time restarts the read
    timeout with every byte, and held the export (and `export-otel`) for ever. `end` shuts
    every one (a read blocked on it returns at once) and refuses any opened after."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self.ended = False

    def add(self, sock: socket.socket) -> None:
        with self.lock:
            if not self.ended:
                self.open.add(sock)
                return
        _shut(sock)
        raise OSError("the export's deadline passed: no new connection")

    def end(self) -> None:
        with self.lock:
            self.ended = True
            found = list(self.open)
            self.open.clear()
        for sock in found:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # closed already, or handed over to TLS (its TLS socket is kept too)
        pass


def _tracking_adapter(sockets: Sockets) -> Any:
    """A requests adapter whose connections put their sockets in `sockets`: the plain one as
    it is opened (a TLS handshake dripped counts too), then the TLS one that replaces it."""
    from requests.adapters import HTTPAdapter
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
    from urllib3.poolmanager import PoolManager, ProxyManager

    class Plain(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            sock = super()._new_conn()
            sockets.add(sock)
            return sock

    class Secure(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            sock = super()._new_conn()
            sockets.add(sock)
            return sock

        def connect(self) -> None:
            super().connect()
            if self.sock is not None:
                sockets.add(self.sock)

    class PlainPool(HTTPConnectionPool):
        ConnectionCls = Plain

    class SecurePool(HTTPSConnectionPool):
        ConnectionCls = Secure

    def tracked(manager: PoolManager) -> PoolManager:
        manager.pool_classes_by_scheme = {"http": PlainPool, "https": SecurePool}
        return manager

    class Tracking(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            tracked(self.poolmanager)

        def proxy_manager_for(self, proxy: Any, **kwargs: Any) -> Any:
            manager = super().proxy_manager_for(proxy, **kwargs)
            # An HTTP proxy's connections are ours to track; a SOCKS proxy's are its own.
            return tracked(manager) if type(manager) is ProxyManager else manager

    return Tracking()


def to_sdk(spans: Sequence[otel_spans.Span], resource: Any) -> list[ReadableSpan]:
    """Our records as the SDK's finished spans, with our ids (no tracer: nothing is drawn)."""
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

    from ... import __version__

    scope = InstrumentationScope(SCOPE, __version__)
    flags = TraceFlags(TraceFlags.SAMPLED)
    out = []
    for span in spans:
        context = SpanContext(span.trace_id, span.span_id, False, flags)
        parent = None
        if span.parent_id is not None:
            parent = SpanContext(span.trace_id, span.parent_id, False, flags)
        status = Status(StatusCode.ERROR, span.error) if span.error else Status(StatusCode.OK)
        links = [Link(SpanContext(t, s, False, flags)) for t, s in span.links]
        out.append(
            ReadableSpan(
                name=span.name,
                context=context,
                parent=parent,
                resource=resource,
                attributes=dict(span.attributes),
                events=[Event(e.name, dict(e.attributes), _ns(e.at)) for e in span.events],
                kind=SpanKind.INTERNAL,
                links=links,
                status=status,
                start_time=_ns(span.start),
                end_time=_ns(span.end),
                instrumentation_scope=scope,
            )
        )
    return out


def _ns(seconds: float) -> int:
    return round(seconds * 1_000_000) * 1000  # microseconds: what the rows hold


Send = Callable[[list[otel_spans.Span], float], "str | None"]
"""send(spans, ends): None once the backend took them, else why not; by `ends` (on
time.monotonic), the run's deadline, whatever is under way is cut."""


class Sender:
    """`send(spans, ends)` through the SDK's exporter for `where`. At `ends` a timer shuts
    the exporter down (no retry after) and its sockets (a read blocked on one returns): the
    send fails, recorded and tried again later as any failed export, and the next send has
    a fresh exporter."""

    def __init__(self, where: Target, resource: Any) -> None:
        self.where = where
        self.resource = resource
        self.sockets = Sockets()
        self.exporter = make_exporter(where, self.sockets)

    def late(self) -> str:
        return (
            f"the export to {self.where.shown} took longer than {self.where.timeout:g} s"
            " (otel_export_timeout_seconds) and was cut; what did not go out is tried again later"
        )

    def __call__(self, spans: list[otel_spans.Span], ends: float) -> str | None:
        from opentelemetry.sdk.trace.export import SpanExportResult

        left = ends - time.monotonic()
        if left <= 0:
            return self.late()
        run = _Run(self.exporter, self.sockets)
        timer = threading.Timer(left, run.cut)
        timer.daemon = True
        timer.start()
        failed = None
        try:
            with _sdk_told() as told:
                try:
                    result = self.exporter.export(to_sdk(spans, self.resource))
                except Exception as exc:  # the SDK's own failure: told, tried again later
                    result, failed = SpanExportResult.FAILURE, f"{type(exc).__name__}: {exc}"
        finally:
            timer.cancel()
        if run.finish():  # cut: that exporter is shut down; the next send starts anew
            self.sockets = Sockets()
            self.exporter = make_exporter(self.where, self.sockets)
            if result != SpanExportResult.SUCCESS:
                return self.late()
        if result == SpanExportResult.SUCCESS:
            return None
        return failed or f"the backend at {self.where.shown} did not take them: {why_not(told)}"


class _Run:
    """One send's deadline: `cut` (the timer's) and `finish` (the sender's) take turns, so a
    send that finished is never cut after."""

    def __init__(self, exporter: SpanExporter, sockets: Sockets) -> None:
        self.exporter = exporter
        self.sockets = sockets
        self.lock = threading.Lock()
        self.over = False
        self.was_cut = False

    def cut(self) -> None:
        with self.lock:
            if self.over:
                return
            self.was_cut = True
        self.sockets.end()  # no connection opened after it; a blocked read returns
        try:
            self.exporter.shutdown()  # no retry after this
        except Exception:  # the SDK's own failure: the sockets are shut anyway
            pass

    def finish(self) -> bool:
        """Whether it was cut."""
        with self.lock:
            self.over = True
            return self.was_cut


class _Told(logging.Handler):
    """What the SDK's exporter logged while it tried (its only account of why it failed)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append(record.getMessage())
        except Exception:  # a malformed record: its reason is lost, not the export
            self.messages.append(str(record.msg))


@contextmanager
def _sdk_told() -> Iterator[list[str]]:
    """The SDK's log messages during one export, kept from the terminal."""
    logger = logging.getLogger("opentelemetry")
    level, propagate = logger.level, logger.propagate
    handler = _Told()
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


def why_not(told: list[str]) -> str:
    """The reason an export failed, from what the SDK logged: connection refused, a timeout,
    an HTTP status; else its last words; else "no reason given"."""
    given_up = any("max retries or shutdown" in m for m in told)
    said = [m for m in told if "max retries or shutdown" not in m]
    retried = " (tried again, then gave up)" if given_up else ""
    for message in reversed(said):
        status = re.search(r"code: (\d{3}), reason: (.{0,80})", message)
        if status:
            return f"HTTP {status.group(1)} {status.group(2).strip()}".strip()
    low = " ".join(said).lower()
    if "refused" in low:
        return f"connection refused (is the backend running, on that port?){retried}"
    if "timed out" in low or "timeout" in low:
        return f"timed out{retried}"
    if "name or service not known" in low or "nodename nor servname" in low:
        return "the host name could not be resolved"
    for message in reversed(said):
        transient = re.search(r"Transient error (.{1,120}?) encountered", message)
        if transient:
            return f"{transient.group(1)}{retried}"
    if said:
        return said[-1].strip()[:200]
    return "timed out, or tried again until it gave up" if given_up else "no reason given"
