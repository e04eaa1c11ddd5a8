-- Version 25: every hook run Claude Code timed, as its transcripts say (services/cost/
-- hook_lines.py reads them; core/hook_runs.py writes them): our hooks and every other (another
-- plugin's command hook, http, mcp_tool). A hook_success / hook_non_blocking_error /
-- hook_cancelled / hook_error_during_execution attachment with its durationMs, or one of the
-- hookInfos of a stop_hook_summary (which lists every Stop hook, silent command hooks too).
CREATE TABLE IF NOT EXISTS hook_runs (
    path        TEXT NOT NULL,     -- the transcript the line is in
    line_end    INTEGER NOT NULL,  -- byte offset just past the line
    item        INTEGER NOT NULL,  -- 0, or the position in a stop_hook_summary's hookInfos
    session_id  TEXT NOT NULL,
    agent_id    TEXT NOT NULL,     -- the subagent's id, or the session id (main transcript)
    prompt_id   TEXT,              -- the promptId of the user entry before it (its turn)
    event       TEXT NOT NULL,     -- hookEvent: PreToolUse, Stop, ...
    hook_name   TEXT,              -- hookName: PreToolUse:Bash, SessionStart:startup, ...
    command     TEXT NOT NULL,     -- the command (an mcp_tool hook: SERVER/TOOL; an http hook: its URL), redacted, control characters escaped, at most 300 characters
    ours        INTEGER NOT NULL,  -- 1: one of claude-session's own hooks
    outcome     TEXT NOT NULL,     -- success, non_blocking_error, cancelled, error (hook_error_during_execution), stop_summary
    tool_use_id TEXT,              -- toolUseID: the tool call's id, or Claude Code's id for the hook batch
    duration_ms REAL,              -- durationMs: Claude Code's own clock; NULL: a run it listed without a time
    at          REAL,              -- the line's timestamp, Unix seconds
    PRIMARY KEY (path, line_end, item)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS hook_runs_session ON hook_runs (session_id, at);
CREATE INDEX IF NOT EXISTS hook_runs_at ON hook_runs (at);  -- doctor: the last week's runs
-- The transcripts already read are read once more from their start, for the hook runs in
-- lines read before this version: a model response read again is merged, never counted twice
-- (message_usage's key), and the counts of lines start again with the reading.
UPDATE transcript_files SET read_to = 0, lines_read = 0, lines_skipped = 0, first_skipped = NULL,
    prompt_id = NULL;
