-- Version 16: per-session rollups of message_usage (session_usage, session_tool_usage) for
-- `cost` over every session at scale; filled here from the rows already read.
-- What `cost` over every session sums, per session, kept by core/usage.py (the one writer of
-- message_usage) in the same transaction as the rows it sums: a session's rows are computed
-- again from its message_usage rows after each write to them, so they are exact. They let
-- `cost` answer at a million responses without reading them all.
-- Per session, agent, model and quarter hour (UTC: every time zone's offset is a multiple of
-- 15 minutes, so a local day is a set of quarters).
CREATE TABLE session_usage (
    session_id            TEXT NOT NULL,
    agent_id              TEXT NOT NULL,
    model                 TEXT,
    quarter               INTEGER,         -- floor(at / 900); NULL for responses with no time
    messages              INTEGER NOT NULL,
    input_tokens          INTEGER NOT NULL,
    output_tokens         INTEGER NOT NULL,
    cache_read_tokens     INTEGER NOT NULL,
    cache_creation_tokens INTEGER NOT NULL,
    thinking_tokens       INTEGER NOT NULL,
    cost_usd              REAL,            -- NULL: none of them priced
    claude_code_usd       REAL NOT NULL,   -- of it, Claude Code's figures apportioned
    claude_code_n         INTEGER NOT NULL,  -- responses priced by Claude Code's figure
    price_table_n         INTEGER NOT NULL,  -- responses priced from our own table
    unpriced_n            INTEGER NOT NULL,  -- responses with no price
    first_at              REAL,
    last_at               REAL,
    turns                 INTEGER NOT NULL  -- the session's turns with responses (the same on each of its rows)
);
CREATE INDEX session_usage_session ON session_usage (session_id);

-- Per session and tool: what its calls' responses used, shared evenly by the calls each
-- response requested (as `cost --by tool` shows it); kept with session_usage.
CREATE TABLE session_tool_usage (
    session_id            TEXT NOT NULL,
    tool                  TEXT NOT NULL,   -- the tool's name, or '(no tool: text)'
    calls                 INTEGER NOT NULL,
    messages              INTEGER NOT NULL,
    input_tokens          REAL,
    output_tokens         REAL,
    cache_read_tokens     REAL,
    cache_creation_tokens REAL,
    thinking_tokens       REAL,
    cost_usd              REAL,
    claude_code_n         INTEGER NOT NULL,
    price_table_n         INTEGER NOT NULL,
    unpriced_n            INTEGER NOT NULL
);
CREATE INDEX session_tool_usage_session ON session_tool_usage (session_id);

-- Filled from the responses already read (core/usage.py's ROLLUP_SQL and TOOL_ROLLUP_SQL).
INSERT INTO session_usage SELECT m.session_id, m.agent_id, m.model, CAST(m.at / 900 AS INTEGER), count(*), sum(m.input_tokens), sum(m.output_tokens), sum(m.cache_read_tokens), sum(m.cache_creation_tokens), sum(m.thinking_tokens), sum(m.cost_usd), total(CASE WHEN m.cost_source = 'claude_code' THEN m.cost_usd END), count(CASE WHEN m.cost_source = 'claude_code' THEN 1 END), count(CASE WHEN m.cost_source = 'price_table' THEN 1 END), sum(m.cost_usd IS NULL), min(m.at), max(m.at), (SELECT count(DISTINCT t.turn_id) + max(t.turn_id IS NULL) FROM message_usage t WHERE t.session_id = m.session_id) FROM message_usage m WHERE 1 GROUP BY m.session_id, m.agent_id, m.model, CAST(m.at / 900 AS INTEGER);
INSERT INTO session_tool_usage SELECT m.session_id, coalesce(j.value, '(no tool: text)'), count(j.key), count(DISTINCT m.agent_id || ' ' || m.message_id), sum(m.input_tokens * 1.0 / max(1, (SELECT count(*) FROM json_each(m.tool_uses)))), sum(m.output_tokens * 1.0 / max(1, (SELECT count(*) FROM json_each(m.tool_uses)))), sum(m.cache_read_tokens * 1.0 / max(1, (SELECT count(*) FROM json_each(m.tool_uses)))), sum(m.cache_creation_tokens * 1.0 / max(1, (SELECT count(*) FROM json_each(m.tool_uses)))), sum(m.thinking_tokens * 1.0 / max(1, (SELECT count(*) FROM json_each(m.tool_uses)))), sum(m.cost_usd / max(1, (SELECT count(*) FROM json_each(m.tool_uses)))), count(CASE WHEN m.cost_source = 'claude_code' THEN 1 END), count(CASE WHEN m.cost_source = 'price_table' THEN 1 END), sum(m.cost_usd IS NULL) FROM message_usage m LEFT JOIN json_each(m.tool_uses) j WHERE 1 GROUP BY m.session_id, 2;
