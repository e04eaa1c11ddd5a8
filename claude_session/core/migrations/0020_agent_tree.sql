-- Version 20: the agent tree. Who launched each agent, through which Agent call and when,
-- whether its parent waits for it (foreground) or runs on beside it (background), and the
-- Claude Code process it runs in: an agent is live only while that process is (core/relations.py
-- decides conflicts from the tree, core/liveness.py asks /proc).
-- agent_launches.parent_agent_id: the agent that made the Agent call (a subagent's id; NULL for
-- the main thread).
ALTER TABLE agent_launches ADD COLUMN parent_agent_id TEXT;
-- agent_registry.parent_id: the registry id of the agent that launched it (the session id for
-- the main thread); NULL for a main thread. launched_at: when that Agent call was made.
-- background: 1 when the parent ran on beside it, 0 when it waited, NULL when not known.
ALTER TABLE agent_registry ADD COLUMN parent_id TEXT;
ALTER TABLE agent_registry ADD COLUMN launched_at REAL;
ALTER TABLE agent_registry ADD COLUMN background INTEGER CHECK (background IN (0, 1));
-- The Claude Code process the agent runs in (as sessions.claude_pid, claude_started_ticks and
-- claude_pid_space), taken from its session when it was first seen; NULL when not known. A
-- main thread's is its session's, which a resume renews.
ALTER TABLE agent_registry ADD COLUMN claude_pid INTEGER;
ALTER TABLE agent_registry ADD COLUMN claude_started_ticks INTEGER;
ALTER TABLE agent_registry ADD COLUMN claude_pid_space TEXT;
-- Agents recorded before: every subagent was the main thread's (Claude Code's subagents could
-- not launch others), launched when its Agent call was made.
UPDATE agent_registry SET parent_id = session_id,
    launched_at = (SELECT l.launched_at FROM agent_launches l WHERE l.agent_id = agent_registry.id
                   ORDER BY l.confirmed DESC LIMIT 1),
    background = (SELECT l.background FROM agent_launches l WHERE l.agent_id = agent_registry.id
                  ORDER BY l.confirmed DESC LIMIT 1)
    WHERE is_main = 0 AND is_internal = 0;
CREATE INDEX agent_registry_parent ON agent_registry (parent_id) WHERE parent_id IS NOT NULL;
