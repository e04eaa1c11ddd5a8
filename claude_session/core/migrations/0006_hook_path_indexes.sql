-- Version 6: no query on a hook's path scans a table that grows with history.
-- The claim's latest edit event, so the ladder can quote the last change to a file at fault
-- without walking the event log.
ALTER TABLE file_claims ADD COLUMN last_event_id INTEGER;
-- A failure's answer finds its own error by the tool call.
CREATE INDEX error_log_call ON error_log (tool_use_id);
-- SessionStart asks whether anything is still unfixed.
CREATE INDEX error_log_unfixed ON error_log (interrupted) WHERE (resolution IS NULL OR resolution != 'auto_fixed');
-- SubagentStart looks for the launch an agent was already linked to.
CREATE INDEX agent_launches_agent ON agent_launches (agent_id);
-- SessionStart finds the previous session.
CREATE INDEX sessions_activity ON sessions (last_activity_at);
