"""OpenTelemetry (no imports here).

- `otel_spans`: a session as a tree of spans.
- `otel_export`: sending them over OTLP with the SDK's exporters (`export`, `status`).
"""
