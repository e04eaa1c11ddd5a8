-- claude-session database schema: the full CURRENT schema, applied to a new database.
-- Older databases are brought here by claude_session/migrations/NNNN_*.sql, one version a file;
-- tests check that this file equals the first version plus every migration.
-- Times are Unix seconds (REAL). Text that came from Claude Code was redacted before storage.

-- Key/value state of the project (last session, settings the tool learned).
CREATE TABLE project_state (
    key        TEXT PRIMARY KEY,
    value      TEXT,
    updated_at REAL NOT NULL
);

CREATE TABLE sessions (
    session_id       TEXT PRIMARY KEY,
    status           TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'ended')),
    start_source     TEXT,            -- SessionStart source: startup, resume, clear, compact, fork
    started_at       REAL NOT NULL,
    ended_at         REAL,
    end_reason       TEXT,            -- SessionEnd reason
    last_activity_at REAL NOT NULL,
    model            TEXT,
    cwd              TEXT,
    transcript_path  TEXT
);

-- Every event Claude Code sent, as it came (redacted, capped), once.
CREATE TABLE events (
    id              INTEGER PRIMARY KEY,
    dedup_key       TEXT NOT NULL UNIQUE,  -- session|event|tool_use_id (or agent_id, or delivery id)
    received_at     REAL NOT NULL,
    session_id      TEXT NOT NULL,
    hook_event_name TEXT NOT NULL,
    tool_name       TEXT,
    tool_use_id     TEXT,
    agent_id        TEXT,
    agent_type      TEXT,
    prompt_id       TEXT,
    payload         TEXT NOT NULL,         -- JSON text
    payload_bytes   INTEGER NOT NULL,      -- size of the payload as it arrived
    payload_sha256  TEXT,                  -- of the payload as it arrived, when it was capped
    truncated       INTEGER NOT NULL DEFAULT 0,
    via             TEXT NOT NULL DEFAULT 'hook' CHECK (via IN ('hook', 'spool'))
);
CREATE INDEX events_session ON events (session_id, id);
CREATE INDEX events_name ON events (hook_event_name, id);

-- Audit trail: one row per hook run that reached the database (spooled runs on ingestion).
CREATE TABLE hook_events (
    id              INTEGER PRIMARY KEY,
    event_id        INTEGER,
    hook_event_name TEXT NOT NULL,
    session_id      TEXT,
    started_at      REAL NOT NULL,
    duration_ms     REAL NOT NULL,
    exit_code       INTEGER NOT NULL,
    outcome         TEXT NOT NULL CHECK (outcome IN ('stored', 'duplicate', 'spooled')),
    note            TEXT
);
CREATE INDEX hook_events_started ON hook_events (started_at);

CREATE TABLE session_metrics (
    session_id    TEXT PRIMARY KEY,
    events        INTEGER NOT NULL DEFAULT 0,
    prompts       INTEGER NOT NULL DEFAULT 0,
    tool_calls    INTEGER NOT NULL DEFAULT 0,
    tool_failures INTEGER NOT NULL DEFAULT 0,
    file_edits    INTEGER NOT NULL DEFAULT 0,
    subagents     INTEGER NOT NULL DEFAULT 0,
    compactions   INTEGER NOT NULL DEFAULT 0
);

-- Subagents (and Claude Code's internal helpers, flagged is_internal).
CREATE TABLE agent_registry (
    agent_id      TEXT PRIMARY KEY,
    session_id    TEXT NOT NULL,
    agent_type    TEXT,
    description   TEXT,
    task          TEXT,              -- the prompt the agent was given
    tool_use_id   TEXT,              -- the Agent tool call that launched it
    status        TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'aborted_stale')),
    status_reason TEXT,
    is_internal   INTEGER NOT NULL DEFAULT 0,
    started_at    REAL,
    ended_at      REAL,
    last_seen_at  REAL NOT NULL,
    tool_uses     INTEGER NOT NULL DEFAULT 0,
    last_message  TEXT,
    is_main       INTEGER NOT NULL DEFAULT 0  -- the session's main thread (agent_id = session_id)
);
CREATE INDEX agent_registry_session ON agent_registry (session_id, status);

CREATE TABLE file_claims (
    id               INTEGER PRIMARY KEY,
    session_id       TEXT NOT NULL,
    agent_id         TEXT NOT NULL,   -- 'main' for the session's main thread
    file_path        TEXT NOT NULL,   -- relative to the project root when inside it
    tool_name        TEXT,
    first_claimed_at REAL NOT NULL,
    last_touched_at  REAL NOT NULL,
    expires_at       REAL,            -- lease end, renewed by the agent's activity
    released_at      REAL,
    release_reason   TEXT,
    edits            INTEGER NOT NULL DEFAULT 1,
    UNIQUE (session_id, agent_id, file_path)
);
CREATE INDEX file_claims_path ON file_claims (file_path);

CREATE TABLE error_log (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL,
    agent_id    TEXT NOT NULL,
    tool_name   TEXT,
    tool_use_id TEXT,
    signature   TEXT NOT NULL,     -- what failed: the command, or tool + file
    category    TEXT NOT NULL,     -- test, type, lint, build, runtime, interrupt, other
    file_path   TEXT,
    command     TEXT,
    exit_code   INTEGER,
    error_text  TEXT NOT NULL,     -- the gist, capped
    attempt     INTEGER NOT NULL,  -- 1 for the first failure of this signature in the session
    occurred_at REAL NOT NULL,
    resolution  TEXT CHECK (resolution IN ('auto_fixed', 'escalated_research', 'escalated_user', 'abandoned')),
    resolved_at REAL,
    ladder_key  TEXT               -- category | file at fault, or the command signature
);
CREATE INDEX error_log_open ON error_log (session_id, signature, resolution);

-- Approaches tried and rejected, so no agent walks the same dead end twice.
CREATE TABLE failed_paths (
    id             INTEGER PRIMARY KEY,
    session_id     TEXT,
    approach       TEXT NOT NULL,
    reason         TEXT NOT NULL,
    file_path      TEXT,
    context        TEXT,
    created_at     REAL NOT NULL,
    still_relevant INTEGER NOT NULL DEFAULT 1,
    expires_at     REAL
);

CREATE TABLE context_snapshots (
    id            INTEGER PRIMARY KEY,
    session_id    TEXT NOT NULL,
    snapshot_type TEXT NOT NULL CHECK (snapshot_type IN ('pre_compact', 'post_compact', 'session_end')),
    trigger       TEXT,
    created_at    REAL NOT NULL,
    content       TEXT NOT NULL   -- JSON
);
CREATE INDEX context_snapshots_session ON context_snapshots (session_id, id);

CREATE TABLE llm_verdicts (
    id              INTEGER PRIMARY KEY,
    session_id      TEXT,
    hook_event_name TEXT,
    task            TEXT,
    decision        TEXT,
    reason          TEXT,
    raw             TEXT,
    judge           TEXT,
    created_at      REAL NOT NULL
);

-- Version 2 --------------------------------------------------------------------------------

-- What the user asked for, in order: the task, for restored context.
CREATE TABLE prompts (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT NOT NULL,
    prompt_id    TEXT,
    prompt       TEXT NOT NULL,
    submitted_at REAL NOT NULL
);
CREATE INDEX prompts_session ON prompts (session_id, id);

-- Agent tool calls, so a subagent can be linked to the description and prompt it was given.
CREATE TABLE agent_launches (
    tool_use_id   TEXT PRIMARY KEY,
    session_id    TEXT NOT NULL,
    description   TEXT,
    prompt        TEXT,
    subagent_type TEXT,
    background    INTEGER,
    launched_at   REAL NOT NULL,
    agent_id      TEXT,
    confirmed     INTEGER NOT NULL DEFAULT 0  -- 1: PostToolUse(Agent) named the agent
);
CREATE INDEX agent_launches_pending ON agent_launches (session_id, agent_id);

-- Version 3 --------------------------------------------------------------------------------

-- Every agent status change: when and why (a stale agent that speaks again shows here too).
CREATE TABLE agent_transitions (
    id          INTEGER PRIMARY KEY,
    agent_id    TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    from_status TEXT,            -- NULL when the agent was first recorded
    to_status   TEXT NOT NULL,
    at          REAL NOT NULL,
    reason      TEXT NOT NULL
);
CREATE INDEX agent_transitions_agent ON agent_transitions (agent_id, id);
CREATE INDEX agent_registry_last_seen ON agent_registry (status, last_seen_at);
CREATE INDEX file_claims_agent ON file_claims (session_id, agent_id, released_at);

-- Version 4 --------------------------------------------------------------------------------

CREATE INDEX error_log_ladder ON error_log (session_id, ladder_key, resolution);
CREATE INDEX failed_paths_relevant ON failed_paths (still_relevant, created_at);

PRAGMA user_version = 4;
