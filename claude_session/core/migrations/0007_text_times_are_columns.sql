-- Version 7: the original design's text times are real columns, written with the rows
-- (generated columns are invisible to PRAGMA table_info, which tools use to list a
-- table's columns), and session_metrics gets the original `id`. Each table is rebuilt
-- under its own name, every row copied.

ALTER TABLE agent_registry RENAME TO agent_registry_v6;
CREATE TABLE agent_registry (
    id               TEXT PRIMARY KEY,  -- the agent's id (agent_id in the hook payloads)
    session_id       TEXT NOT NULL,
    agent_type       TEXT,              -- general-purpose, Explore, ...; 'main' for the main thread
    description      TEXT,              -- the Agent call's short description
    task_description TEXT,              -- the task it was given: the Agent call's prompt; for the main thread, the latest user prompt
    tool_use_id      TEXT,              -- the Agent tool call that launched it
    status           TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'aborted_stale')),
    status_reason    TEXT,              -- why it is in this status (see agent_transitions)
    is_internal      INTEGER NOT NULL DEFAULT 0,  -- 1: one of Claude Code's internal helpers
    started_at       REAL,              -- Unix seconds (spawn_time is its text twin)
    ended_at         REAL,              -- Unix seconds (end_time is its text twin)
    last_seen_at     REAL NOT NULL,
    tool_uses        INTEGER NOT NULL DEFAULT 0,  -- tool calls it made
    last_message     TEXT,              -- the agent's last message, from SubagentStop
    is_main          INTEGER NOT NULL DEFAULT 0,  -- 1: the session's main thread
    spawn_time       TEXT,  -- when it started, UTC
    end_time         TEXT,  -- when it finished, UTC; NULL while running
    files_changed    TEXT NOT NULL DEFAULT '[]'  -- JSON array of the project-relative paths it changed (Write, Edit, MultiEdit, NotebookEdit), each once, in order
);
INSERT INTO agent_registry (id, session_id, agent_type, description, task_description, tool_use_id, status, status_reason, is_internal, started_at, ended_at, last_seen_at, tool_uses, last_message, is_main, spawn_time, end_time, files_changed)
SELECT id, session_id, agent_type, description, task_description, tool_use_id, status, status_reason, is_internal, started_at, ended_at, last_seen_at, tool_uses, last_message, is_main, datetime(started_at, 'unixepoch'), datetime(ended_at, 'unixepoch'), files_changed FROM agent_registry_v6;
DROP TABLE agent_registry_v6;
CREATE INDEX agent_registry_session ON agent_registry (session_id, status);
CREATE INDEX agent_registry_last_seen ON agent_registry (status, last_seen_at);

ALTER TABLE file_claims RENAME TO file_claims_v6;
CREATE TABLE file_claims (
    id               INTEGER PRIMARY KEY,
    session_id       TEXT NOT NULL,
    agent_id         TEXT NOT NULL,   -- the subagent's id, or 'main' for the session's main thread
    file_path        TEXT NOT NULL,   -- relative to the project root when inside it
    operation        TEXT,            -- the tool of the latest claim: Write, Edit, MultiEdit, NotebookEdit
    first_claimed_at REAL NOT NULL,
    last_touched_at  REAL NOT NULL,
    expires_at       REAL,            -- lease end, renewed by the agent's activity
    released_at      REAL,
    release_reason   TEXT,
    edits            INTEGER NOT NULL DEFAULT 1,  -- Write/Edit calls behind the claim
    timestamp        TEXT,  -- the claim's latest touch, UTC
    last_event_id    INTEGER,         -- the event of the latest edit (events.id)
    UNIQUE (session_id, agent_id, file_path)
);
INSERT INTO file_claims (id, session_id, agent_id, file_path, operation, first_claimed_at, last_touched_at, expires_at, released_at, release_reason, edits, timestamp, last_event_id)
SELECT id, session_id, agent_id, file_path, operation, first_claimed_at, last_touched_at, expires_at, released_at, release_reason, edits, datetime(last_touched_at, 'unixepoch'), last_event_id FROM file_claims_v6;
DROP TABLE file_claims_v6;
CREATE INDEX file_claims_path ON file_claims (file_path);
CREATE INDEX file_claims_agent ON file_claims (session_id, agent_id, released_at);

ALTER TABLE session_metrics RENAME TO session_metrics_v6;
CREATE TABLE session_metrics (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,  -- a number, as text
    timestamp  TEXT NOT NULL,  -- last update, UTC
    UNIQUE (session_id, event_type, key)
);
INSERT INTO session_metrics (id, session_id, event_type, key, value, timestamp)
SELECT rowid, session_id, event_type, key, value, timestamp FROM session_metrics_v6;
DROP TABLE session_metrics_v6;

ALTER TABLE failed_paths RENAME TO failed_paths_v6;
CREATE TABLE failed_paths (
    id             INTEGER PRIMARY KEY,
    session_id     TEXT,
    approach       TEXT NOT NULL,   -- what was tried: the commands, the edits made
    reason_failed  TEXT NOT NULL,   -- why it failed: the error's gist
    file_path      TEXT,
    context        TEXT,            -- how it was found: the ladder and the earlier errors, or "recorded by hand"
    created_at     REAL NOT NULL,
    still_relevant INTEGER NOT NULL DEFAULT 1,  -- 0 once resolved (`claude-session fail --resolve`)
    expires_at     REAL,            -- shown to agents until then (failed_path_ttl_days)
    timestamp      TEXT  -- when it was recorded, UTC
);
INSERT INTO failed_paths (id, session_id, approach, reason_failed, file_path, context, created_at, still_relevant, expires_at, timestamp)
SELECT id, session_id, approach, reason_failed, file_path, context, created_at, still_relevant, expires_at, datetime(created_at, 'unixepoch') FROM failed_paths_v6;
DROP TABLE failed_paths_v6;
CREATE INDEX failed_paths_relevant ON failed_paths (still_relevant, created_at);

ALTER TABLE error_log RENAME TO error_log_v6;
CREATE TABLE error_log (
    id             INTEGER PRIMARY KEY,
    session_id     TEXT NOT NULL,
    task_id        TEXT,               -- the payload's task_id when it has one, else its prompt_id: the user turn the failure happened in
    agent_id       TEXT NOT NULL,      -- the subagent's id, or 'main'
    file_path      TEXT,               -- the file at fault, relative to the project root
    error_category TEXT NOT NULL CHECK (error_category IN ('lint', 'type', 'test', 'build', 'runtime')),
    error_message  TEXT NOT NULL,      -- the error text (head and tail when long)
    attempt_number INTEGER NOT NULL,   -- the step on its ladder: 1 for the first failure
    resolution     TEXT CHECK (resolution IN ('auto_fixed', 'escalated_research', 'escalated_user', 'abandoned')),  -- NULL while open
    timestamp      TEXT,  -- when it failed, UTC
    interrupted    INTEGER NOT NULL DEFAULT 0,  -- 1: the user interrupted the tool
    tool_name      TEXT,
    tool_use_id    TEXT,
    signature      TEXT NOT NULL,      -- what failed: the command, or tool + file
    command        TEXT,
    exit_code      INTEGER,
    occurred_at    REAL NOT NULL,
    resolved_at    REAL,
    ladder_key     TEXT                -- category | file at fault, or the command signature ('interrupt|...' for interrupts)
);
INSERT INTO error_log (id, session_id, task_id, agent_id, file_path, error_category, error_message, attempt_number, resolution, timestamp, interrupted, tool_name, tool_use_id, signature, command, exit_code, occurred_at, resolved_at, ladder_key)
SELECT id, session_id, task_id, agent_id, file_path, error_category, error_message, attempt_number, resolution, datetime(occurred_at, 'unixepoch'), interrupted, tool_name, tool_use_id, signature, command, exit_code, occurred_at, resolved_at, ladder_key FROM error_log_v6;
DROP TABLE error_log_v6;
CREATE INDEX error_log_open ON error_log (session_id, signature, resolution);
CREATE INDEX error_log_ladder ON error_log (session_id, ladder_key, resolution);
CREATE INDEX error_log_call ON error_log (tool_use_id);
CREATE INDEX error_log_unfixed ON error_log (interrupted) WHERE (resolution IS NULL OR resolution != 'auto_fixed');

ALTER TABLE context_snapshots RENAME TO context_snapshots_v6;
CREATE TABLE context_snapshots (
    id            INTEGER PRIMARY KEY,
    session_id    TEXT NOT NULL,
    snapshot_type TEXT NOT NULL CHECK (snapshot_type IN ('pre_compact', 'post_compact', 'session_end')),
    trigger       TEXT,             -- manual or auto (compactions), the SessionEnd reason
    created_at    REAL NOT NULL,
    content       TEXT NOT NULL,    -- JSON: task, agents, claims, errors, failed paths, git; or the compact summary
    timestamp     TEXT  -- UTC
);
INSERT INTO context_snapshots (id, session_id, snapshot_type, trigger, created_at, content, timestamp)
SELECT id, session_id, snapshot_type, trigger, created_at, content, datetime(created_at, 'unixepoch') FROM context_snapshots_v6;
DROP TABLE context_snapshots_v6;
CREATE INDEX context_snapshots_session ON context_snapshots (session_id, id);

ALTER TABLE llm_verdicts RENAME TO llm_verdicts_v6;
CREATE TABLE llm_verdicts (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT,
    hook_event   TEXT,             -- the event judged: TaskCompleted, Stop, SubagentStop
    task         TEXT,             -- what was to be done: the task's subject and description, else the latest prompts
    decision     TEXT,             -- allow, block, or error (the judge failed: allowed)
    reason       TEXT,
    raw          TEXT,             -- the judge's output as it came
    judge        TEXT,             -- the judge command
    created_at   REAL NOT NULL,
    task_id      TEXT,             -- TaskCompleted's task_id, else the payload's prompt_id
    verdict_json TEXT CHECK (verdict_json IS NULL OR json_valid(verdict_json)),  -- the verdict as JSON: the judge's parsed answer, or {"decision", "reason"} when it failed
    timestamp    TEXT  -- UTC
);
INSERT INTO llm_verdicts (id, session_id, hook_event, task, decision, reason, raw, judge, created_at, task_id, verdict_json, timestamp)
SELECT id, session_id, hook_event, task, decision, reason, raw, judge, created_at, task_id, verdict_json, datetime(created_at, 'unixepoch') FROM llm_verdicts_v6;
DROP TABLE llm_verdicts_v6;

ALTER TABLE hook_events RENAME TO hook_events_v6;
CREATE TABLE hook_events (
    id              INTEGER PRIMARY KEY,
    event_id        INTEGER,         -- the events row
    event_type      TEXT NOT NULL,   -- the hook event: SessionStart, PreToolUse, ...
    session_id      TEXT,
    started_at      REAL NOT NULL,   -- Unix seconds (timestamp is its text twin)
    duration_ms     REAL NOT NULL,   -- the hook run's own time
    exit_code       INTEGER NOT NULL,  -- what Claude Code saw: 0, or 2 when the judge blocked
    outcome         TEXT NOT NULL CHECK (outcome IN ('stored', 'duplicate', 'spooled')),
    note            TEXT,
    dispatcher      TEXT NOT NULL DEFAULT 'settings' CHECK (dispatcher IN ('plugin', 'settings', 'spool')),  -- what delivered it: a plugin hook, a settings.json hook, or the spool replaying it
    payload_summary TEXT,            -- one redacted line, at most 200 characters: "Bash: npm test", "Edit src/a.py", "prompt: ..."
    timestamp       TEXT  -- UTC
);
INSERT INTO hook_events (id, event_id, event_type, session_id, started_at, duration_ms, exit_code, outcome, note, dispatcher, payload_summary, timestamp)
SELECT id, event_id, event_type, session_id, started_at, duration_ms, exit_code, outcome, note, dispatcher, payload_summary, datetime(started_at, 'unixepoch') FROM hook_events_v6;
DROP TABLE hook_events_v6;
CREATE INDEX hook_events_started ON hook_events (started_at);
