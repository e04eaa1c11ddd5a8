-- Version 4 -> 5: the original design's tables and columns are the public contract again.
-- Renamed columns get their original names back, the original columns that were missing are
-- added (text times as generated columns over our epoch ones), and every existing row is kept
-- and filled in. project_state, session_metrics and error_log change shape, so they are
-- rebuilt: the old table is renamed aside, the new one created, the rows copied, the old dropped.

-- project_state: updated_at becomes a text time.
ALTER TABLE project_state RENAME TO project_state_v4;
CREATE TABLE project_state (
    key        TEXT PRIMARY KEY,
    value      TEXT,
    updated_at TEXT NOT NULL DEFAULT (datetime('now'))
);
INSERT INTO project_state (key, value, updated_at)
SELECT key, value, datetime(updated_at, 'unixepoch') FROM project_state_v4;
DROP TABLE project_state_v4;
INSERT OR IGNORE INTO project_state (key, value, updated_at)
SELECT 'last_session_id', session_id, datetime(started_at, 'unixepoch')
FROM sessions ORDER BY started_at DESC LIMIT 1;
INSERT OR IGNORE INTO project_state (key, value, updated_at)
SELECT 'last_session_source', start_source, datetime(started_at, 'unixepoch')
FROM sessions ORDER BY started_at DESC LIMIT 1;
INSERT OR IGNORE INTO project_state (key, value, updated_at)
SELECT 'last_ended_session_id', session_id, datetime(ended_at, 'unixepoch')
FROM sessions WHERE status = 'ended' ORDER BY ended_at DESC LIMIT 1;
INSERT OR IGNORE INTO project_state (key, value, updated_at)
SELECT 'last_end_reason', end_reason, datetime(ended_at, 'unixepoch')
FROM sessions WHERE status = 'ended' ORDER BY ended_at DESC LIMIT 1;

-- agent_registry: id, task_description, spawn_time, end_time, files_changed.
ALTER TABLE agent_registry RENAME COLUMN agent_id TO id;
ALTER TABLE agent_registry RENAME COLUMN task TO task_description;
ALTER TABLE agent_registry ADD COLUMN spawn_time TEXT GENERATED ALWAYS AS (datetime(started_at, 'unixepoch')) VIRTUAL;
ALTER TABLE agent_registry ADD COLUMN end_time TEXT GENERATED ALWAYS AS (datetime(ended_at, 'unixepoch')) VIRTUAL;
ALTER TABLE agent_registry ADD COLUMN files_changed TEXT NOT NULL DEFAULT '[]';
-- What each agent changed, from its claims (a claim is made by every Write/Edit of the agent).
UPDATE agent_registry SET files_changed = (
    SELECT json_group_array(file_path) FROM (
        SELECT c.file_path FROM file_claims c
        WHERE c.session_id = agent_registry.session_id
          AND c.agent_id = CASE WHEN agent_registry.is_main THEN 'main' ELSE agent_registry.id END
        ORDER BY c.first_claimed_at, c.id
    )
);

-- file_claims: operation (the claiming tool), timestamp.
ALTER TABLE file_claims RENAME COLUMN tool_name TO operation;
ALTER TABLE file_claims ADD COLUMN timestamp TEXT GENERATED ALWAYS AS (datetime(last_touched_at, 'unixepoch')) VIRTUAL;

-- session_metrics: one wide row per session becomes key/value rows per event type.
ALTER TABLE session_metrics RENAME TO session_metrics_v4;
CREATE TABLE session_metrics (
    session_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    timestamp  TEXT NOT NULL,
    PRIMARY KEY (session_id, event_type, key)
);
-- The count of each event type, from the event log.
INSERT INTO session_metrics (session_id, event_type, key, value, timestamp)
SELECT session_id, hook_event_name, 'count', count(*), datetime(max(received_at), 'unixepoch')
FROM events GROUP BY session_id, hook_event_name;
-- Events counted but pruned since: their type is gone, their number is kept.
INSERT INTO session_metrics (session_id, event_type, key, value, timestamp)
SELECT m.session_id, '*', 'count', m.events - coalesce(e.n, 0),
       coalesce(datetime(s.last_activity_at, 'unixepoch'), datetime('now'))
FROM session_metrics_v4 m
LEFT JOIN (SELECT session_id, count(*) AS n FROM events GROUP BY session_id) e USING (session_id)
LEFT JOIN sessions s USING (session_id)
WHERE m.events > coalesce(e.n, 0);
-- Tool time, from the payloads that carry it.
INSERT INTO session_metrics (session_id, event_type, key, value, timestamp)
SELECT session_id, hook_event_name, 'duration_ms', sum(json_extract(payload, '$.duration_ms')),
       datetime(max(received_at), 'unixepoch')
FROM events
WHERE json_valid(payload) AND json_type(payload, '$.duration_ms') IN ('integer', 'real')
GROUP BY session_id, hook_event_name;
-- The named counters, under the event that counts them. Tool calls and failures split
-- between PostToolUseFailure (as many as the log holds) and PostToolUse (the rest).
WITH old AS (
    SELECT m.*, coalesce(datetime(s.last_activity_at, 'unixepoch'), datetime('now')) AS at,
           (SELECT count(*) FROM events e WHERE e.session_id = m.session_id
              AND e.hook_event_name = 'PostToolUseFailure') AS failure_events
    FROM session_metrics_v4 m LEFT JOIN sessions s USING (session_id)
), named (session_id, event_type, key, value, at) AS (
    SELECT session_id, 'UserPromptSubmit', 'prompts', prompts, at FROM old
    UNION ALL SELECT session_id, 'SubagentStart', 'subagents', subagents, at FROM old
    UNION ALL SELECT session_id, 'PostCompact', 'compactions', compactions, at FROM old
    UNION ALL SELECT session_id, 'PostToolUse', 'file_edits', file_edits, at FROM old
    UNION ALL SELECT session_id, 'PostToolUseFailure', 'tool_calls',
                     min(tool_calls, failure_events), at FROM old
    UNION ALL SELECT session_id, 'PostToolUse', 'tool_calls',
                     tool_calls - min(tool_calls, failure_events), at FROM old
    UNION ALL SELECT session_id, 'PostToolUseFailure', 'tool_failures',
                     min(tool_failures, failure_events), at FROM old
    UNION ALL SELECT session_id, 'PostToolUse', 'tool_failures',
                     tool_failures - min(tool_failures, failure_events), at FROM old
)
INSERT INTO session_metrics (session_id, event_type, key, value, timestamp)
SELECT session_id, event_type, key, value, at FROM named WHERE value > 0;
DROP TABLE session_metrics_v4;

-- failed_paths: reason_failed, timestamp.
ALTER TABLE failed_paths RENAME COLUMN reason TO reason_failed;
ALTER TABLE failed_paths ADD COLUMN timestamp TEXT GENERATED ALWAYS AS (datetime(created_at, 'unixepoch')) VIRTUAL;

-- error_log: the original columns first; categories are the original five (tool and other
-- were runtime failures of a tool; an interrupt is a flag now, its ladder stays apart).
ALTER TABLE error_log RENAME TO error_log_v4;
CREATE TABLE error_log (
    id             INTEGER PRIMARY KEY,
    session_id     TEXT NOT NULL,
    task_id        TEXT,
    agent_id       TEXT NOT NULL,
    file_path      TEXT,
    error_category TEXT NOT NULL CHECK (error_category IN ('lint', 'type', 'test', 'build', 'runtime')),
    error_message  TEXT NOT NULL,
    attempt_number INTEGER NOT NULL,
    resolution     TEXT CHECK (resolution IN ('auto_fixed', 'escalated_research', 'escalated_user', 'abandoned')),
    timestamp      TEXT GENERATED ALWAYS AS (datetime(occurred_at, 'unixepoch')) VIRTUAL,
    interrupted    INTEGER NOT NULL DEFAULT 0,
    tool_name      TEXT,
    tool_use_id    TEXT,
    signature      TEXT NOT NULL,
    command        TEXT,
    exit_code      INTEGER,
    occurred_at    REAL NOT NULL,
    resolved_at    REAL,
    ladder_key     TEXT
);
INSERT INTO error_log (id, session_id, task_id, agent_id, file_path, error_category,
    error_message, attempt_number, resolution, interrupted, tool_name, tool_use_id, signature,
    command, exit_code, occurred_at, resolved_at, ladder_key)
SELECT l.id, l.session_id,
       (SELECT coalesce(json_extract(e.payload, '$.task_id'), e.prompt_id) FROM events e
        WHERE e.session_id = l.session_id AND e.tool_use_id = l.tool_use_id
          AND e.hook_event_name IN ('PostToolUseFailure', 'PostToolUse') AND json_valid(e.payload)
        ORDER BY e.id LIMIT 1),
       l.agent_id, l.file_path,
       CASE WHEN l.category IN ('lint', 'type', 'test', 'build', 'runtime') THEN l.category
            ELSE 'runtime' END,
       l.error_text, l.attempt, l.resolution, l.category = 'interrupt', l.tool_name,
       l.tool_use_id, l.signature, l.command, l.exit_code, l.occurred_at, l.resolved_at,
       CASE WHEN l.category IN ('tool', 'other') AND l.ladder_key LIKE l.category || '|%'
            THEN 'runtime' || substr(l.ladder_key, length(l.category) + 1)
            ELSE l.ladder_key END
FROM error_log_v4 l ORDER BY l.id;
DROP TABLE error_log_v4;
CREATE INDEX error_log_open ON error_log (session_id, signature, resolution);
CREATE INDEX error_log_ladder ON error_log (session_id, ladder_key, resolution);

-- context_snapshots: timestamp.
ALTER TABLE context_snapshots ADD COLUMN timestamp TEXT GENERATED ALWAYS AS (datetime(created_at, 'unixepoch')) VIRTUAL;

-- llm_verdicts: hook_event, task_id, verdict_json, timestamp.
ALTER TABLE llm_verdicts RENAME COLUMN hook_event_name TO hook_event;
ALTER TABLE llm_verdicts ADD COLUMN task_id TEXT;
ALTER TABLE llm_verdicts ADD COLUMN verdict_json TEXT CHECK (verdict_json IS NULL OR json_valid(verdict_json));
ALTER TABLE llm_verdicts ADD COLUMN timestamp TEXT GENERATED ALWAYS AS (datetime(created_at, 'unixepoch')) VIRTUAL;
UPDATE llm_verdicts SET verdict_json = json_object('decision', decision, 'reason', reason);
-- The judged event: the latest of its kind in the session up to the verdict.
UPDATE llm_verdicts SET task_id = (
    SELECT coalesce(json_extract(e.payload, '$.task_id'), e.prompt_id) FROM events e
    WHERE e.session_id = llm_verdicts.session_id AND e.hook_event_name = llm_verdicts.hook_event
      AND e.received_at <= llm_verdicts.created_at AND json_valid(e.payload)
    ORDER BY e.received_at DESC LIMIT 1
);

-- hook_events: event_type, dispatcher, payload_summary, timestamp.
ALTER TABLE hook_events RENAME COLUMN hook_event_name TO event_type;
ALTER TABLE hook_events ADD COLUMN dispatcher TEXT NOT NULL DEFAULT 'settings' CHECK (dispatcher IN ('plugin', 'settings', 'spool'));
ALTER TABLE hook_events ADD COLUMN payload_summary TEXT;
ALTER TABLE hook_events ADD COLUMN timestamp TEXT GENERATED ALWAYS AS (datetime(started_at, 'unixepoch')) VIRTUAL;
-- Version 4 was installed through settings.json only; replays from the spool say so.
UPDATE hook_events SET dispatcher = 'spool' WHERE outcome = 'spooled' OR note LIKE 'spooled: %';
-- The summary, rebuilt from the stored (redacted) event along the lines of Event.summary
-- (core/event.py): close to what a hook writes now, if not always the same.
UPDATE hook_events SET payload_summary = (
    SELECT substr(trim(replace(replace(replace(CASE
        WHEN e.tool_name IS NOT NULL THEN e.tool_name || coalesce(
            ': ' || json_extract(e.payload, '$.tool_input.command'),
            ' ' || replace(coalesce(json_extract(e.payload, '$.tool_input.file_path'),
                                    json_extract(e.payload, '$.tool_input.notebook_path')),
                           json_extract(e.payload, '$.cwd') || '/', ''),
            ': ' || json_extract(e.payload, '$.tool_input.description'), '')
        WHEN e.hook_event_name = 'UserPromptSubmit'
            THEN 'prompt: ' || substr(coalesce(json_extract(e.payload, '$.prompt'), ''), 1, 80)
        WHEN e.hook_event_name IN ('SubagentStart', 'SubagentStop')
            THEN e.hook_event_name || ' ' || coalesce(nullif(e.agent_type, ''), 'internal')
                 || ' ' || coalesce(e.agent_id, '')
        WHEN e.hook_event_name IN ('TaskCreated', 'TaskCompleted')
            THEN e.hook_event_name || ' ' || coalesce(json_extract(e.payload, '$.task_id'), '')
                 || coalesce(': ' || json_extract(e.payload, '$.task_subject'), '')
        WHEN e.hook_event_name = 'Stop'
            THEN 'Stop' || coalesce(': ' || substr(json_extract(e.payload,
                 '$.last_assistant_message'), 1, 80), '')
        ELSE e.hook_event_name || coalesce(' ' || json_extract(e.payload, '$.source'),
             ' ' || json_extract(e.payload, '$.trigger'),
             ' ' || json_extract(e.payload, '$.reason'), '')
        END, char(10), ' '), char(13), ' '), char(9), ' ')), 1, 200)
    FROM events e WHERE e.id = hook_events.event_id AND json_valid(e.payload)
);
