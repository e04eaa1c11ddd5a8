"""`claude-session export-otel`: sessions sent as OpenTelemetry traces on demand (the
daemon sends them as they finish, when export is configured)."""

from __future__ import annotations

from pathlib import Path

import click

from ..core import durations
from ..core.figures import plural
from ..services import config_file
from ..services.telemetry import otel_export
from . import output
from .group import cli, json_option, opened


@cli.command(name="export-otel")
@click.option(
    "--since",
    required=True,
    metavar="WHEN",
    help=f"Sessions active since then: {durations.EXAMPLES}, or a date (2026-11-01).",
)
@json_option("an object: endpoint, sessions, spans")
@click.pass_obj
def export_otel(root: Path, since: str) -> None:
    """Send the sessions active since WHEN to the configured OpenTelemetry backend, every
    span, whether it was sent before or not: the ids are derived from the rows, so the
    backend keeps one of each. Configured by `otel_endpoint` (`claude-session config`) or
    the standard OTEL_EXPORTER_OTLP_* variables."""
    try:
        start = durations.moment(since)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from None
    where = otel_export.target(config_file.load_or_defaults(str(root)).values)
    if where is None:
        raise click.ClickException(
            "OpenTelemetry export is not configured: `claude-session config --set"
            " otel_endpoint=http://localhost:4318`, or set OTEL_EXPORTER_OTLP_ENDPOINT"
        )
    send = otel_export.sender(str(root), where)
    with opened(root) as conn:
        try:
            sessions, spans = otel_export.export_since(conn, where, send, start)
        except RuntimeError as exc:
            raise click.ClickException(f"not sent: {exc}") from None
    found = {"endpoint": where.shown, "sessions": sessions, "spans": spans}
    said = f"sent {plural(spans, 'span')} of {plural(sessions, 'session')} to {where.shown}"
    output.reply(found, said)
