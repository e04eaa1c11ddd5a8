-- Version 2 -> 3: the main thread is an agent too, and every agent status change is recorded.
ALTER TABLE agent_registry ADD COLUMN is_main INTEGER NOT NULL DEFAULT 0;
-- 1 when PostToolUse(Agent) named the agent; 0 for a first-come guess at SubagentStart.
ALTER TABLE agent_launches ADD COLUMN confirmed INTEGER NOT NULL DEFAULT 0;

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
