-- Version 13: the Claude Code process that runs a session's hooks, so that the daemon notices
-- within seconds when it is gone without a SessionEnd (killed, crashed): recorded by the
-- SessionStart hook (and UserPromptSubmit), NULL where the hook could not tell. Its pid, its
-- start time in clock ticks since boot (/proc/<pid>/stat field 22: a reused pid has another)
-- and the pid space they mean something in (boot id and pid namespace: a daemon on another
-- host or in another container never judges them). See core/processes.py.
ALTER TABLE sessions ADD COLUMN claude_pid INTEGER;
ALTER TABLE sessions ADD COLUMN claude_started_ticks INTEGER;
ALTER TABLE sessions ADD COLUMN claude_pid_space TEXT;
-- The daemon looks for them every second: only the live sessions that have one.
CREATE INDEX sessions_claude ON sessions (claude_pid_space) WHERE status = 'active' AND claude_pid IS NOT NULL;
