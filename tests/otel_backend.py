"""A real OpenTelemetry-receiving backend for the tests: Arize Phoenix, run as its own server.

Phoenix lives in its own virtualenv (.venv-otel-backend, made by `./install.sh --dev`) so its
~150 packages never touch the project's .venv. `OtelBackend` runs `phoenix serve` on loopback
ports picked free, with its SQLite data under a folder the test gives, and reads the stored
spans back through Phoenix's own REST API, so a test sees what the backend really kept.

What Phoenix 20.26.1 does with what it receives (checked by tests/test_otel_backend.py):
- OTLP/HTTP (protobuf) at `otlp_http_endpoint` = "http://127.0.0.1:PORT/v1/traces", the full
  URL to give `OTLPSpanExporter(endpoint=...)`; OTLP/gRPC at `otlp_grpc_endpoint` =
  "127.0.0.1:PORT" (give `insecure=True`).
- Project: the resource attribute `openinference.project.name` names it (created on first
  use), else the header `x-project-name`, else the project "default". `service.name` does not.
- Span ids are unique across the whole store (not per trace): a span whose span_id is already
  stored is dropped silently, first write wins, even if its trace_id differs. The export still
  reports SUCCESS.
- Times come back as aware UTC datetimes to the microsecond: Phoenix computes ns / 1e9 as a
  float, so a whole-microsecond time comes back exact and a finer one rounded (±1 µs).
- Attributes come back as one flat dict, dotted names as sent ("a.b.c"); int, float, str, bool
  and homogeneous lists keep their JSON types. Resource attributes are not returned.
- Ingestion is asynchronous (a bulk inserter polls every 0.1 s): use `wait_for_spans`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".venv-otel-backend"
PHOENIX_VERSION = "20.26.1"  # the pin, as install.sh installs it
MISSING = (
    f"the OpenTelemetry test backend (arize-phoenix=={PHOENIX_VERSION} in {VENV}) is not "
    "installed: run ./install.sh --dev"
)

# Phoenix binds its gRPC collector to [::] (all interfaces) whatever PHOENIX_HOST says: this
# launcher rebinds it to 127.0.0.1 before running `phoenix serve`, so nothing listens off-host.
_LAUNCHER = """
import sys
import grpc.aio

_server = grpc.aio.server


def _loopback_server(*args, **kwargs):
    server = _server(*args, **kwargs)
    add_insecure_port = server.add_insecure_port
    server.add_insecure_port = lambda address: add_insecure_port(
        "127.0.0.1:" + address.rsplit(":", 1)[1]
    )
    return server


grpc.aio.server = _loopback_server
from phoenix.server.main import main

sys.argv = ["phoenix", "serve"]
sys.exit(main())
"""

# Set for the server; every other PHOENIX_* / OTEL_* variable of the caller is dropped, so a
# developer's own Phoenix or OpenTelemetry settings cannot redirect or instrument it.
_QUIET_OFFLINE = {
    "PHOENIX_TELEMETRY_ENABLED": "false",  # no FullStory / Scarf web analytics
    "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",  # no fonts, no sandbox binary downloads
    "PHOENIX_LOG_MIGRATIONS": "false",  # the first start's migrations log ~360 kB otherwise
    "PHOENIX_ENABLE_AUTH": "false",
}

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def backend_python() -> str:
    """The backend virtualenv's interpreter."""
    return str(VENV / "bin" / "python")


def available() -> bool:
    """Whether the pinned Phoenix is installed in the backend virtualenv."""
    if not os.access(backend_python(), os.X_OK):
        return False
    site = VENV / "lib"
    return any(site.glob(f"python3*/site-packages/arize_phoenix-{PHOENIX_VERSION}.dist-info"))


def free_port() -> int:
    """A loopback port nobody listens on now (bound, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class OtelBackend:
    """`phoenix serve` on 127.0.0.1, data in `folder`; `stop()` and `start()` keep the ports
    and the data, so a test can take the backend down mid-run and bring it back."""

    def __init__(self, folder: Path, ready_seconds: float = 60.0) -> None:
        self.folder = folder
        self.data_dir = folder / "phoenix"
        self.log = folder / "phoenix-server.log"
        self.http_port = free_port()
        self.grpc_port = free_port()
        self.ready_seconds = ready_seconds
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_seconds: float | None = None  # of the last start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def otlp_http_endpoint(self) -> str:
        """The full OTLP/HTTP traces URL, as `OTLPSpanExporter(endpoint=...)` wants it."""
        return f"{self.base_url}/v1/traces"

    @property
    def otlp_grpc_endpoint(self) -> str:
        """host:port of the OTLP/gRPC collector (plain text: use `insecure=True`)."""
        return f"127.0.0.1:{self.grpc_port}"

    def start(self) -> None:
        """Start the server and return once it answers /readyz and its gRPC port accepts."""
        if self.process is not None and self.process.poll() is None:
            return
        if not available():
            raise RuntimeError(MISSING)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))
        } | _QUIET_OFFLINE
        env |= {
            "PHOENIX_WORKING_DIR": str(self.data_dir),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.http_port),
            "PHOENIX_GRPC_PORT": str(self.grpc_port),
        }
        began = time.monotonic()
        with self.log.open("ab") as log:
            log.write(f"--- phoenix serve on {self.base_url} ---\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                [backend_python(), "-c", _LAUNCHER],
                cwd=self.data_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # stop() ends the server and whatever it started
            )
        deadline = began + self.ready_seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._fail(f"exited with status {self.process.returncode}")
            if self._ready():
                self.startup_seconds = time.monotonic() - began
                return
            time.sleep(0.1)
        self.stop()
        self._fail(f"was not ready after {self.ready_seconds:.0f} s")

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 15 s) and wait for it."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
        except ProcessLookupError:
            process.wait(timeout=15)

    def __enter__(self) -> OtelBackend:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def get(self, path: str, **query: Any) -> Any:
        """GET a JSON document from the server's REST API (no proxy, whatever the env says)."""
        url = f"{self.base_url}{path}"
        if query := {k: v for k, v in query.items() if v is not None}:
            url += "?" + urllib.parse.urlencode(query, doseq=True)
        with _NO_PROXY.open(url, timeout=10) as response:
            return json.load(response)

    def projects(self) -> list[str]:
        """The names of every project, from GET /v1/projects (cursor-paginated)."""
        names: list[str] = []
        cursor: str | None = None
        while True:
            page = self.get("/v1/projects", cursor=cursor, limit=100)
            names += [project["name"] for project in page["data"]]
            if not (cursor := page.get("next_cursor")):
                return names

    def spans(self) -> list[dict[str, Any]]:
        """Every stored span of every project, oldest insert first, read page by page from
        GET /v1/projects/{name}/spans?sort=id&order=asc&limit=1000&cursor=NEXT_CURSOR."""
        spans: list[dict[str, Any]] = []
        for project in self.projects():
            path = f"/v1/projects/{urllib.parse.quote(project, safe='')}/spans"
            cursor: str | None = None
            while True:
                page = self.get(path, sort="id", order="asc", limit=1000, cursor=cursor)
                spans += [_span(project, raw) for raw in page["data"]]
                if not (cursor := page.get("next_cursor")):
                    break
        return spans

    def wait_for_spans(
        self, done: Callable[[list[dict[str, Any]]], bool], seconds: float = 15.0
    ) -> list[dict[str, Any]]:
        """`spans()` once `done(spans)` holds: the server stores what it receives a little
        later, in batches. Raises AssertionError with what was there after `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            spans = self.spans()
            if done(spans):
                return spans
            if time.monotonic() > deadline:
                raise AssertionError(f"spans not as expected after {seconds} s: {spans!r}")
            time.sleep(0.1)

    def _ready(self) -> bool:
        try:
            with _NO_PROXY.open(f"{self.base_url}/readyz", timeout=2) as response:
                if response.status != 200:
                    return False
            with socket.create_connection(("127.0.0.1", self.grpc_port), timeout=2):
                return True
        except OSError:
            return False

    def _fail(self, what: str) -> None:
        tail = self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""
        raise RuntimeError(f"phoenix serve ({self.base_url}) {what}; log tail:\n{tail}")


def _span(project: str, raw: dict[str, Any]) -> dict[str, Any]:
    """One span of the REST API, in the shape the tests compare against."""
    return {
        "project": project,
        "trace_id": raw["context"]["trace_id"],
        "span_id": raw["context"]["span_id"],
        "parent_id": raw.get("parent_id"),
        "name": raw["name"],
        "span_kind": raw.get("span_kind"),  # openinference.span.kind, "UNKNOWN" if unset
        "start_time": datetime.fromisoformat(raw["start_time"]),
        "end_time": datetime.fromisoformat(raw["end_time"]),
        "status_code": raw["status_code"],  # "UNSET", "OK" or "ERROR"
        "status_message": raw.get("status_message", ""),
        "attributes": raw.get("attributes", {}),
        "events": [
            {
                "name": event["name"],
                "time": datetime.fromisoformat(event["timestamp"]),
                "attributes": event.get("attributes", {}),
            }
            for event in raw.get("events", [])
        ],
    }
