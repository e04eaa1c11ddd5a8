-- Version 19: OpenTelemetry export (services/otel_export.py). What went out and what is left:
-- spans sent of sessions not yet done (their rows go once the session's own span is sent, so
-- the table stays small), sessions done, and the exporter's one state row (lag, last error).
-- And Claude Code's active span when it ran a hook, to put our spans under its own.
ALTER TABLE events ADD COLUMN traceparent TEXT;  -- W3C traceparent from TRACEPARENT (command hooks, with Claude Code's traces on)
CREATE TABLE otel_sent (
    span_id    INTEGER PRIMARY KEY,  -- the span's id (derived from its row) as a signed 64-bit integer
    session_id TEXT NOT NULL,
    sent_at    REAL NOT NULL
);
CREATE INDEX otel_sent_session ON otel_sent (session_id);
CREATE TABLE otel_sessions (
    session_id TEXT PRIMARY KEY,
    done_at    REAL NOT NULL,        -- when its last span (the session's own) was sent
    spans      INTEGER NOT NULL      -- spans sent for it in all
);
CREATE TABLE otel_export (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    endpoint        TEXT,            -- where the last attempt sent to
    last_attempt_at REAL,
    last_success_at REAL,
    last_error      TEXT,            -- why the last attempt failed (NULL: it did not)
    failures        INTEGER NOT NULL DEFAULT 0,  -- attempts failed in a row
    next_attempt_at REAL,            -- backoff: no attempt before this
    spans_sent      INTEGER NOT NULL DEFAULT 0,  -- in all
    oldest_waiting  REAL,            -- end of the oldest span due and not sent at the last look (the lag)
    enabled_at      REAL             -- when the background process first found export on: sessions idle since before it go only with `export-otel --since`
);
