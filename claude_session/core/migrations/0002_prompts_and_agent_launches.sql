-- Version 1 -> 2: user prompts (the task) and Agent tool calls (to link subagents to their task).
CREATE TABLE prompts (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT NOT NULL,
    prompt_id    TEXT,
    prompt       TEXT NOT NULL,
    submitted_at REAL NOT NULL
);
CREATE INDEX prompts_session ON prompts (session_id, id);

CREATE TABLE agent_launches (
    tool_use_id   TEXT PRIMARY KEY,
    session_id    TEXT NOT NULL,
    description   TEXT,
    prompt        TEXT,
    subagent_type TEXT,
    background    INTEGER,
    launched_at   REAL NOT NULL,
    agent_id      TEXT
);
CREATE INDEX agent_launches_pending ON agent_launches (session_id, agent_id);

-- Backfill: prompts already recorded as events.
INSERT INTO prompts (session_id, prompt_id, prompt, submitted_at)
SELECT session_id, prompt_id, substr(json_extract(payload, '$.prompt'), 1, 4000), received_at
FROM events
WHERE hook_event_name = 'UserPromptSubmit' AND json_valid(payload)
  AND json_extract(payload, '$.prompt') IS NOT NULL
ORDER BY id;
