"""OpenTelemetry (no imports here).

- `otel_spans`: a session as a tree of spans.
- `otel_export`: what goes and what went (`export_pass`, `export_since`, `status`).
- `otel_wire`: the SDK's OTLP exporters, each send bounded in size and time (`Sender`).
"""
