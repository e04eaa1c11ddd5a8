-- Version 30: cost by Claude Code's own accounting rule (core/usage.py). A response is
-- counted once, by (message id, request id), across every transcript: a fork's or a resume's
-- copies of another session's lines are recorded as copies (response_copies), not as the
-- session's own. Every cost-state line is kept (cost_states): each Claude Code process's last
-- one, less the state it started from, is that process's spend. 1-hour cache writes are
-- priced apart (cache_1h_tokens), an old transcript's per-line costUSD is kept, and a cost
-- for a model no price is known for is marked an estimate. message_usage is made again to
-- take the new columns in their place.
DROP INDEX message_usage_turn;
DROP INDEX message_usage_at;
ALTER TABLE message_usage RENAME TO message_usage_v29;
CREATE TABLE message_usage (
    session_id            TEXT NOT NULL,
    agent_id              TEXT NOT NULL,
    message_id            TEXT NOT NULL,
    request_id            TEXT,
    turn_id               INTEGER,
    prompt_id             TEXT,
    tool_uses             TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(tool_uses)),
    model                 TEXT,
    input_tokens          INTEGER NOT NULL DEFAULT 0,
    output_tokens         INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens     INTEGER NOT NULL DEFAULT 0,
    cache_creation_tokens INTEGER NOT NULL DEFAULT 0,
    cache_1h_tokens       INTEGER NOT NULL DEFAULT 0,
    thinking_tokens       INTEGER NOT NULL DEFAULT 0,
    service_tier          TEXT,
    speed                 TEXT,
    at                    REAL,
    line_cost_usd         REAL,
    cost_usd              REAL,
    cost_source           TEXT CHECK (cost_source IN ('claude_code', 'price_table')),
    estimated             INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, agent_id, message_id)
) WITHOUT ROWID;
INSERT INTO message_usage (session_id, agent_id, message_id, turn_id, prompt_id, tool_uses,
    model, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens,
    thinking_tokens, service_tier, speed, at, cost_usd, cost_source)
    SELECT session_id, agent_id, message_id, turn_id, prompt_id, tool_uses, model, input_tokens,
    output_tokens, cache_read_tokens, cache_creation_tokens, thinking_tokens, service_tier,
    speed, at, cost_usd, cost_source FROM message_usage_v29;
DROP TABLE message_usage_v29;
CREATE INDEX message_usage_turn ON message_usage (session_id, turn_id);
CREATE INDEX message_usage_at ON message_usage (at);
CREATE INDEX message_usage_message ON message_usage (message_id);
CREATE TABLE response_copies (
    session_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    request_id TEXT,
    owner      TEXT NOT NULL,
    at         REAL,
    PRIMARY KEY (session_id, message_id)
) WITHOUT ROWID;
CREATE INDEX response_copies_owner ON response_copies (owner);
CREATE TABLE cost_states (
    session_id             TEXT NOT NULL,
    path                   TEXT NOT NULL,
    line_end               INTEGER NOT NULL,
    as_of                  REAL,
    total_cost_usd         REAL,
    model_usage            TEXT CHECK (model_usage IS NULL OR json_valid(model_usage)),
    has_unknown_model_cost INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, path, line_end)
) WITHOUT ROWID;
CREATE TABLE learned_prices (
    model      TEXT PRIMARY KEY,
    scale      REAL NOT NULL,
    session_id TEXT NOT NULL,
    updated_at REAL NOT NULL
);
ALTER TABLE session_usage ADD COLUMN estimated_n INTEGER NOT NULL DEFAULT 0;
ALTER TABLE session_tool_usage ADD COLUMN estimated_n INTEGER NOT NULL DEFAULT 0;
-- Every transcript is read again from its start, for what the older rows did not keep (its
-- counts of lines begin again with it).
UPDATE transcript_files SET read_to = 0, inode = NULL, size = NULL, lines_read = 0,
    lines_skipped = 0, first_skipped = NULL;
