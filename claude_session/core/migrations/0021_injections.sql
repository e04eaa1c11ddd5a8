-- Version 21: the injection log. Every text claude-session put in front of the model, verbatim
-- (redacted like everything else), with when, through which event, into which session and
-- agent: SessionStart restores (startup, resume, compaction, fork), the warning before an
-- edit, the memories given with a prompt, the error ladder's guidance, the judge's block and
-- the MCP server's answers. `restore` prints the last one; a resumed or compacted session is
-- told what changed since what it already holds.
CREATE TABLE injections (
    id          INTEGER PRIMARY KEY,
    at          REAL NOT NULL,     -- when it was handed to Claude Code (Unix seconds)
    session_id  TEXT NOT NULL,
    agent_id    TEXT,              -- the subagent it went to; NULL for the main thread
    event       TEXT NOT NULL,     -- the hook event that carried it, or 'mcp' for an MCP answer
    kind        TEXT NOT NULL,     -- restore (SessionStart), conflict, refused_edit, memories, ladder, judge, mcp
    source      TEXT,              -- SessionStart's source (startup, resume, compact, clear, fork); the MCP tool's name
    event_id    INTEGER,           -- events.id of the hook event (NULL for an MCP answer)
    tool_use_id TEXT,
    text        TEXT NOT NULL,     -- what the model got, verbatim (redacted)
    chars       INTEGER NOT NULL,
    timestamp   TEXT               -- `at`, UTC
);
CREATE INDEX injections_session ON injections (session_id, at);
