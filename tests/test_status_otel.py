"""`status` loads the OpenTelemetry export's module only when an endpoint is set somewhere
(its imports were a third of the command's); what it shows is the same either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from claude_session.core import db
from claude_session.services import config_file, status_report

VARIABLES = status_report.OTEL_ENDPOINT_VARIABLES


@pytest.fixture
def conn(project: Path, monkeypatch: pytest.MonkeyPatch) -> db.apsw.Connection:
    for name in (*VARIABLES, "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    return db.connect(str(project / ".claude-session.db"))


def test_no_endpoint_anywhere_is_export_off(project: Path, conn: db.apsw.Connection) -> None:
    assert status_report.otel_status(conn, str(project), 0.0) is None


@pytest.mark.parametrize("variable", VARIABLES)
def test_an_endpoint_in_the_environment_is_shown(
    project: Path, conn: db.apsw.Connection, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "http://127.0.0.1:4318")
    shown = status_report.otel_status(conn, str(project), 0.0)
    assert shown is not None and shown["endpoint"].startswith("http://127.0.0.1:4318")


def test_an_endpoint_in_the_configuration_is_shown(project: Path, conn: db.apsw.Connection) -> None:
    config_file.set_values(str(project), ["otel_endpoint=https://collector.example/v1/traces"])
    shown = status_report.otel_status(conn, str(project), 0.0)
    assert shown is not None and shown["endpoint"] == "https://collector.example/v1/traces"


def test_an_endpoint_turned_off_is_off(
    project: Path, conn: db.apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert status_report.otel_status(conn, str(project), 0.0) is None
