-- Version 8: sessions as executions, with time travel. Every table here is new; nothing of
-- the original design changes.

-- Each start of a session (a session id starts again on resume and after a compaction), and
-- where it came from: the session a /clear ended, or the fork it was started in.
CREATE TABLE session_starts (
    id                  INTEGER PRIMARY KEY,
    session_id          TEXT NOT NULL,
    source              TEXT,            -- startup, resume, clear, compact (SessionStart source)
    at                  REAL NOT NULL,
    event_id            INTEGER,
    previous_session_id TEXT             -- clear: the session it replaced; a fork: its parent
);
CREATE INDEX session_starts_session ON session_starts (session_id, id);

-- A turn: one user prompt until Stop (or the next prompt, which interrupts it).
CREATE TABLE turns (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    turn_no    INTEGER NOT NULL,        -- 1, 2, ... within the session
    prompt_id  TEXT,
    prompt     TEXT,                    -- its first 500 characters
    started_at REAL NOT NULL,
    ended_at   REAL,
    status     TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done', 'interrupted')),
    UNIQUE (session_id, turn_no)
);

-- A tool call: PreToolUse paired with PostToolUse or PostToolUseFailure by tool_use_id. A
-- subagent's Agent call is here too; agent_registry.tool_use_id hangs the subagent under it.
CREATE TABLE tool_calls (
    tool_use_id   TEXT PRIMARY KEY,
    session_id    TEXT NOT NULL,
    turn_id       INTEGER,               -- turns.id of the turn it ran in
    agent_id      TEXT NOT NULL,         -- the subagent's id, or the session id (main thread)
    tool_name     TEXT,
    input_summary TEXT,                  -- one redacted line: "Bash: npm test", "Edit src/a.py"
    status        TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted')),
    started_at    REAL,                  -- NULL when no PreToolUse was seen
    ended_at      REAL,
    duration_ms   REAL,                  -- the payload's own, else ended_at - started_at
    pre_event_id  INTEGER,
    post_event_id INTEGER,
    frame_no      INTEGER                -- the frame committed after it, if any
);
CREATE INDEX tool_calls_session ON tool_calls (session_id, turn_id);

-- Frames: the points of a session one can go back to, numbered 1, 2, ... per session. Each
-- points at a self-contained snapshot of the session's state (frame_states, by content hash).
CREATE TABLE frames (
    session_id  TEXT NOT NULL,
    frame_no    INTEGER NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('session_start', 'turn_start', 'tool', 'attempt',
                    'turn_end', 'subagent_start', 'subagent_stop', 'pre_compact',
                    'task_completed', 'session_end', 'fork', 'revert')),
    created_at  REAL NOT NULL,
    event_id    INTEGER,                 -- the event that committed it
    turn_id     INTEGER,
    agent_id    TEXT,                    -- whose step it was (a subagent's id, or the session id)
    tool_use_id TEXT,
    tool_name   TEXT,
    summary     TEXT,                    -- one redacted line, as hook_events.payload_summary
    files       TEXT,                    -- JSON array of the paths the tool named, if any
    state_hash  TEXT NOT NULL,           -- frame_states.hash
    state_version INTEGER,               -- session_state_versions.version when committed
    timestamp   TEXT,                    -- created_at as UTC text
    PRIMARY KEY (session_id, frame_no)
) WITHOUT ROWID;

-- A counter per session, raised by triggers whenever something a frame's state holds changes
-- (agents, claims, errors, failed paths, the counters it shows): a frame whose session's
-- version is the previous frame's has the previous frame's state, without rebuilding it. A
-- lease renewed or an agent seen again changes no column the state holds, and no version.
CREATE TABLE session_state_versions (
    session_id TEXT PRIMARY KEY,
    version    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER state_version_agents_insert AFTER INSERT ON agent_registry BEGIN
    INSERT INTO session_state_versions VALUES (NEW.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER state_version_agents_update AFTER UPDATE ON agent_registry
WHEN OLD.agent_type IS NOT NEW.agent_type OR OLD.description IS NOT NEW.description
    OR OLD.task_description IS NOT NEW.task_description OR OLD.status IS NOT NEW.status
    OR OLD.is_internal IS NOT NEW.is_internal OR OLD.files_changed IS NOT NEW.files_changed
    OR OLD.session_id IS NOT NEW.session_id BEGIN
    INSERT INTO session_state_versions VALUES (NEW.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER state_version_claims_insert AFTER INSERT ON file_claims BEGIN
    INSERT INTO session_state_versions VALUES (NEW.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER state_version_claims_update AFTER UPDATE ON file_claims
WHEN OLD.operation IS NOT NEW.operation OR OLD.edits IS NOT NEW.edits
    OR OLD.released_at IS NOT NEW.released_at OR OLD.agent_id IS NOT NEW.agent_id
    OR OLD.file_path IS NOT NEW.file_path OR OLD.session_id IS NOT NEW.session_id BEGIN
    INSERT INTO session_state_versions VALUES (NEW.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER state_version_claims_delete AFTER DELETE ON file_claims BEGIN
    INSERT INTO session_state_versions VALUES (OLD.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER state_version_errors_insert AFTER INSERT ON error_log BEGIN
    INSERT INTO session_state_versions VALUES (NEW.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER state_version_errors_update AFTER UPDATE ON error_log
WHEN OLD.resolution IS NOT NEW.resolution OR OLD.attempt_number IS NOT NEW.attempt_number
    OR OLD.interrupted IS NOT NEW.interrupted OR OLD.ladder_key IS NOT NEW.ladder_key
    OR OLD.error_category IS NOT NEW.error_category OR OLD.file_path IS NOT NEW.file_path
    OR OLD.signature IS NOT NEW.signature OR OLD.error_message IS NOT NEW.error_message
    OR OLD.session_id IS NOT NEW.session_id BEGIN
    INSERT INTO session_state_versions VALUES (NEW.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER state_version_errors_delete AFTER DELETE ON error_log BEGIN
    INSERT INTO session_state_versions VALUES (OLD.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER state_version_failed_insert AFTER INSERT ON failed_paths
WHEN NEW.session_id IS NOT NULL BEGIN
    INSERT INTO session_state_versions VALUES (NEW.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER state_version_failed_update AFTER UPDATE ON failed_paths
WHEN NEW.session_id IS NOT NULL AND (OLD.still_relevant IS NOT NEW.still_relevant
    OR OLD.approach IS NOT NEW.approach OR OLD.reason_failed IS NOT NEW.reason_failed
    OR OLD.file_path IS NOT NEW.file_path OR OLD.session_id IS NOT NEW.session_id) BEGIN
    INSERT INTO session_state_versions VALUES (NEW.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER state_version_failed_delete AFTER DELETE ON failed_paths
WHEN OLD.session_id IS NOT NULL BEGIN
    INSERT INTO session_state_versions VALUES (OLD.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER state_version_counters_insert AFTER INSERT ON session_metrics
WHEN NEW.key IN ('prompts', 'file_edits', 'tool_failures', 'subagents', 'compactions') BEGIN
    INSERT INTO session_state_versions VALUES (NEW.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER state_version_counters_update AFTER UPDATE ON session_metrics
WHEN NEW.key IN ('prompts', 'file_edits', 'tool_failures', 'subagents', 'compactions')
    AND OLD.value IS NOT NEW.value BEGIN
    INSERT INTO session_state_versions VALUES (NEW.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET version = version + 1;
END;

-- Session states, stored once per distinct content: canonical JSON and its SHA-256. A rowid
-- table (states are large and their hashes random: rows go at the end, only the index of
-- hashes takes random inserts).
CREATE TABLE frame_states (
    id         INTEGER PRIMARY KEY,
    hash       TEXT NOT NULL UNIQUE,
    state      TEXT NOT NULL,
    first_seen REAL NOT NULL
);

-- The VCS pointer of a frame: the commit of a workspace snapshot (in claude-session's own
-- snapshot repository, never the user's), the user's HEAD and branch then, and jj's commit
-- and operation ids where the project is a jj repository. Written 'pending' with the frame;
-- the capture process fills it in ('captured'), or says why not ('failed', 'missed').
CREATE TABLE vcs_tags (
    session_id      TEXT NOT NULL,
    frame_no        INTEGER NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'captured', 'failed', 'missed')),
    requested_at    REAL NOT NULL,
    captured_at     REAL,
    snapshot_commit TEXT,
    git_head        TEXT,
    git_branch      TEXT,
    jj_commit_id    TEXT,
    jj_operation_id TEXT,
    files           INTEGER,             -- files in the snapshot
    note            TEXT,                -- why it failed or was missed; large files skipped
    PRIMARY KEY (session_id, frame_no)
) WITHOUT ROWID;
CREATE INDEX vcs_tags_pending ON vcs_tags (requested_at) WHERE status = 'pending';
CREATE INDEX vcs_tags_captured ON vcs_tags (captured_at) WHERE status = 'captured';

-- Forks and replays: a child started from a parent session's frame. The parent's database
-- has the row with the fork's path; the fork's own database has it too, and the first
-- session started there claims it (child_session_id) and receives the frame's state.
CREATE TABLE branches (
    id                INTEGER PRIMARY KEY,
    kind              TEXT NOT NULL CHECK (kind IN ('fork', 'replay')),
    parent_session_id TEXT NOT NULL,
    parent_frame_no   INTEGER NOT NULL,
    parent_root       TEXT NOT NULL,     -- the project the parent ran in
    path              TEXT NOT NULL,     -- the fork's working directory
    label             TEXT,
    state_hash        TEXT,              -- the parent frame's state (frame_states.hash)
    prompt            TEXT,              -- replay: the prompt it was run with
    created_at        REAL NOT NULL,
    child_session_id  TEXT,              -- the first session started in the fork
    claimed_at        REAL
);
CREATE INDEX branches_parent ON branches (parent_session_id, parent_frame_no);
CREATE INDEX branches_unclaimed ON branches (path) WHERE child_session_id IS NULL;

-- What claude-session itself did to a session's history, as events: SnapshotCaptured,
-- SessionForked, ReplayStarted, RevertStarted, RevertFinished.
CREATE TABLE timeline_events (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL CHECK (name IN ('SnapshotCaptured', 'SessionForked', 'ReplayStarted',
                   'RevertStarted', 'RevertFinished')),
    session_id TEXT,
    frame_no   INTEGER,
    at         REAL NOT NULL,
    detail     TEXT NOT NULL DEFAULT '{}'  -- JSON
);
CREATE INDEX timeline_events_session ON timeline_events (session_id, id);

-- The state snapshot reads a session's failed paths.
CREATE INDEX failed_paths_session ON failed_paths (session_id, still_relevant);
