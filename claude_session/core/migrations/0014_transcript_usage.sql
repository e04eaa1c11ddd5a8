-- Version 14: what each model response used and cost, read off the hook path from Claude
-- Code's own transcripts (services/transcripts.py; written by core/usage.py). Costs are Claude
-- Code's figures (its cost-state entries) apportioned to the messages; a model it gave no
-- figure for is priced from our own table, and says so (cost_source).

-- Each transcript read, how far, and what went wrong with it.
CREATE TABLE transcript_files (
    path          TEXT PRIMARY KEY,      -- the transcript, as Claude Code named it
    session_id    TEXT NOT NULL,
    agent_id      TEXT NOT NULL,         -- the subagent's id, or the session id (main transcript)
    read_to       INTEGER NOT NULL DEFAULT 0,  -- bytes read: complete lines up to this offset
    filled_to     INTEGER NOT NULL DEFAULT 0,  -- entries up to this offset were handed to reconcile (settled ones only)
    inode         INTEGER,               -- of the file read: another inode means it was replaced
    size          INTEGER,               -- its size when last read
    lines_read    INTEGER NOT NULL DEFAULT 0,
    lines_skipped INTEGER NOT NULL DEFAULT 0,  -- lines not understood (bad JSON, unknown types)
    restarts      INTEGER NOT NULL DEFAULT 0,  -- times it was found truncated or replaced and read again from 0
    prompt_id     TEXT,                  -- the promptId of the last user entry read (the next lines' turn)
    last_error    TEXT,                  -- why it could not be read last time (missing, refused, ...); NULL when it was
    updated_at    REAL NOT NULL
);
CREATE INDEX transcript_files_session ON transcript_files (session_id);

-- One row per model response (an assistant message id, counted once per transcript however
-- many entries streamed it).
CREATE TABLE message_usage (
    session_id            TEXT NOT NULL,
    agent_id              TEXT NOT NULL,   -- the subagent's id, or the session id (main thread)
    message_id            TEXT NOT NULL,   -- the API's message id (message.id)
    turn_id               INTEGER,         -- turns.id: by the promptId of the user entry before it, else the turn of the subagent's Agent call, else by time
    prompt_id             TEXT,            -- that promptId
    tool_uses             TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(tool_uses)),  -- JSON object: tool_use_id -> tool name, the calls it requested
    model                 TEXT,
    input_tokens          INTEGER NOT NULL DEFAULT 0,
    output_tokens         INTEGER NOT NULL DEFAULT 0,  -- thinking included
    cache_read_tokens     INTEGER NOT NULL DEFAULT 0,
    cache_creation_tokens INTEGER NOT NULL DEFAULT 0,
    thinking_tokens       INTEGER NOT NULL DEFAULT 0,
    service_tier          TEXT,
    speed                 TEXT,
    at                    REAL,            -- the entry's timestamp, Unix seconds
    cost_usd              REAL,            -- its share of the cost (NULL: no price known)
    cost_source           TEXT CHECK (cost_source IN ('claude_code', 'price_table')),  -- Claude Code's figure apportioned, or our own price table
    PRIMARY KEY (session_id, agent_id, message_id)
) WITHOUT ROWID;
CREATE INDEX message_usage_turn ON message_usage (session_id, turn_id);
CREATE INDEX message_usage_at ON message_usage (at);

-- Claude Code's own totals for a session: its latest cost-state entry (they include the
-- subagents').
CREATE TABLE session_costs (
    session_id             TEXT PRIMARY KEY,
    total_cost_usd         REAL,            -- totalCostUSD
    model_usage            TEXT CHECK (model_usage IS NULL OR json_valid(model_usage)),  -- modelUsage as Claude Code wrote it: per model tokens and costUSD
    as_of                  REAL,            -- the time of the last entry before it: the messages it covers
    api_duration_ms        REAL,            -- totalAPIDuration
    tool_duration_ms       REAL,            -- totalToolDuration
    lines_added            INTEGER,
    lines_removed          INTEGER,
    has_unknown_model_cost INTEGER NOT NULL DEFAULT 0,  -- 1: Claude Code had no price for a model
    updated_at             REAL NOT NULL
);
