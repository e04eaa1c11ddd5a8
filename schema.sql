-- claude-session database schema: the full CURRENT schema, applied to a new database.
-- Older databases are brought here by claude_session/core/migrations/NNNN_*.sql, one version a
-- file; tests check that this file equals the first version plus every migration.
--
-- The original design's tables and columns (project_state, agent_registry, file_claims,
-- session_metrics, failed_paths, error_log, context_snapshots, llm_verdicts, hook_events) are
-- the public contract: people query them directly. They keep their names and meanings; what
-- claude-session adds sits beside them. Their times are text, UTC, `YYYY-MM-DD HH:MM:SS` (the
-- format of `datetime('now')`), written with the rows beside our own `*_at` columns, which hold
-- Unix seconds (REAL). Text that came from Claude Code was redacted before storage.

-- The original design's tables ------------------------------------------------------------

-- Key/value state of the project: the session that started last (`last_session_id`,
-- `last_session_source`) and the one that ended last (`last_ended_session_id`,
-- `last_end_reason`).
CREATE TABLE project_state (
    key        TEXT PRIMARY KEY,
    value      TEXT,
    updated_at TEXT NOT NULL DEFAULT (datetime('now'))  -- when the value was last written, UTC
);

-- Every agent: each subagent, and each session's main thread (id = the session id, is_main = 1);
-- Claude Code's internal helpers (a SubagentStop with no SubagentStart) have is_internal = 1.
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
    files_changed    TEXT NOT NULL DEFAULT '[]',  -- JSON array of the project-relative paths it changed (Write, Edit, MultiEdit, NotebookEdit), each once, in order
    parent_id        TEXT,              -- the registry id of the agent that launched it (the session id for the main thread); NULL for a main thread
    launched_at      REAL,              -- when the Agent call that launched it was made
    background       INTEGER CHECK (background IN (0, 1)),  -- 1: its parent ran on beside it; 0: its parent waited for it; NULL: not known
    claude_pid       INTEGER,           -- the Claude Code process it runs in (see sessions.claude_pid); a main thread's is its session's
    claude_started_ticks INTEGER,
    claude_pid_space TEXT
);
CREATE INDEX agent_registry_session ON agent_registry (session_id, status);
CREATE INDEX agent_registry_last_seen ON agent_registry (status, last_seen_at);
CREATE INDEX agent_registry_parent ON agent_registry (parent_id) WHERE parent_id IS NOT NULL;

-- Files being changed, per agent: a lease renewed by the agent's activity, released when the
-- agent finishes or goes quiet. Two live agents holding one file is a conflict.
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
CREATE INDEX file_claims_path ON file_claims (file_path);
CREATE INDEX file_claims_agent ON file_claims (session_id, agent_id, released_at);
CREATE INDEX file_claims_unreleased ON file_claims (last_touched_at) WHERE released_at IS NULL;

-- Counters per session, one row per (session, event type, key) holding a running value:
-- `count` of each hook event, `duration_ms` summed from the payloads that carry it
-- (PostToolUse, PostToolUseFailure), and prompts, tool_calls, tool_failures, file_edits,
-- subagents and compactions under the event that counts them. Event type '*' holds the count
-- of events pruned before version 5, whose type is no longer known.
CREATE TABLE session_metrics (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,  -- a number, as text
    timestamp  TEXT NOT NULL,  -- last update, UTC
    UNIQUE (session_id, event_type, key)
);

-- Approaches tried and rejected, so no agent walks the same dead end twice: recorded at the
-- third failure of one thing, or by hand (`claude-session fail`).
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
CREATE INDEX failed_paths_relevant ON failed_paths (still_relevant, created_at);
CREATE INDEX failed_paths_session ON failed_paths (session_id, still_relevant);  -- a frame's state

-- Every tool failure, on its escalation ladder: failures of one thing (the file at fault, else
-- the command) in one category and session are attempts 1, 2, 3... An interrupt (the user
-- stopped the tool) is flagged `interrupted` and climbs no ladder.
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
CREATE INDEX error_log_open ON error_log (session_id, signature, resolution);
CREATE INDEX error_log_ladder ON error_log (session_id, ladder_key, resolution);
CREATE INDEX error_log_call ON error_log (tool_use_id);
CREATE INDEX error_log_unfixed ON error_log (interrupted) WHERE (resolution IS NULL OR resolution != 'auto_fixed');
CREATE INDEX error_log_command ON error_log (command, occurred_at) WHERE command IS NOT NULL;  -- when a command last failed anywhere

-- What the model knew, at each compaction and at session end (JSON).
CREATE TABLE context_snapshots (
    id            INTEGER PRIMARY KEY,
    session_id    TEXT NOT NULL,
    snapshot_type TEXT NOT NULL CHECK (snapshot_type IN ('pre_compact', 'post_compact', 'session_end')),
    trigger       TEXT,             -- manual or auto (compactions), the SessionEnd reason
    created_at    REAL NOT NULL,
    content       TEXT NOT NULL,    -- JSON: task, agents, claims, errors, failed paths, git; or the compact summary
    timestamp     TEXT  -- UTC
);
CREATE INDEX context_snapshots_session ON context_snapshots (session_id, id);

-- The judge's verdicts on finished work (TaskCompleted; Stop and SubagentStop if configured).
CREATE TABLE llm_verdicts (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT,
    hook_event   TEXT,             -- the event judged: TaskCompleted, Stop, SubagentStop
    task         TEXT,             -- what was to be done: the task's subject and description, else the latest prompts
    decision     TEXT,             -- allow, block, error (the judge failed: allowed), or skipped (over judge_budget_usd_per_day: allowed)
    reason       TEXT,
    raw          TEXT,             -- the judge's output as it came
    judge        TEXT,             -- the judge command
    created_at   REAL NOT NULL,
    task_id      TEXT,             -- TaskCompleted's task_id, else the payload's prompt_id
    verdict_json TEXT CHECK (verdict_json IS NULL OR json_valid(verdict_json)),  -- the verdict as JSON: the judge's parsed answer, or {"decision", "reason"} when it failed
    timestamp    TEXT, -- UTC
    cost_usd     REAL  -- what the call cost, as the judge's command reported it (claude -p: total_cost_usd); NULL when unknown
);

-- What each running judge may still spend, reserved before it starts (core/verdicts.py): a
-- judge runs only when today's spend, the other judges' reservations and its own fit
-- judge_budget_usd_per_day, checked and reserved in one BEGIN IMMEDIATE. Its verdict replaces
-- the reservation by the cost reported; a judge that died leaves one that lapses at expires_at.
CREATE TABLE judge_reservations (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT,
    amount_usd  REAL NOT NULL,  -- the most this call is expected to cost (services/judge.py)
    created_at  REAL NOT NULL,  -- Unix seconds
    expires_at  REAL NOT NULL   -- past it, the judge is taken for dead and its reservation lapses
);

-- Audit trail: one row per hook run that reached the database (spooled runs on ingestion).
CREATE TABLE hook_events (
    id              INTEGER PRIMARY KEY,
    event_id        INTEGER,         -- the events row
    event_type      TEXT NOT NULL,   -- the hook event: SessionStart, PreToolUse, ...
    session_id      TEXT,            -- NULL for an event of no session (events.unattributed; the note says why)
    started_at      REAL NOT NULL,   -- Unix seconds (timestamp is its text twin)
    duration_ms     REAL NOT NULL,   -- the hook run's own time
    exit_code       INTEGER NOT NULL,  -- what Claude Code saw: 0, or 2 when the judge blocked
    outcome         TEXT NOT NULL CHECK (outcome IN ('stored', 'duplicate', 'spooled')),
    note            TEXT,
    dispatcher      TEXT NOT NULL DEFAULT 'settings' CHECK (dispatcher IN ('plugin', 'settings', 'spool')),  -- what delivered it: a plugin hook, a settings.json hook, or the spool replaying it
    payload_summary TEXT,            -- one redacted line, at most 200 characters: "Bash: npm test", "Edit src/a.py", "prompt: ..."
    timestamp       TEXT,  -- UTC
    source          TEXT NOT NULL DEFAULT 'hook' CHECK (source IN ('hook', 'transcript')),  -- 'hook': Claude Code sent it; 'transcript': no hook delivered it, it was rebuilt from Claude Code's transcript (version 17)
    transport       TEXT CHECK (transport IN ('process', 'relay', 'mcp'))  -- how it reached the store: a hook process, the daemon it handed over to (the relay), or the MCP hook server of an mcp_tool hook; NULL before version 18, and for rebuilt or spooled events
);
CREATE INDEX hook_events_started ON hook_events (started_at);

-- claude-session's own tables ---------------------------------------------------------------

CREATE TABLE sessions (
    session_id       TEXT PRIMARY KEY,
    status           TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'ended')),
    start_source     TEXT,            -- SessionStart source: startup, resume, clear, compact, fork
    started_at       REAL NOT NULL,
    ended_at         REAL,
    end_reason       TEXT,            -- SessionEnd reason
    last_activity_at REAL NOT NULL,
    model            TEXT,
    cwd              TEXT,
    transcript_path  TEXT,
    claude_pid       INTEGER,         -- the Claude Code process running its hooks (NULL: unknown)
    claude_started_ticks INTEGER,     -- its start time, clock ticks since boot (/proc/<pid>/stat)
    claude_pid_space TEXT             -- boot id and pid namespace where that pid means it
);
CREATE INDEX sessions_activity ON sessions (last_activity_at);
CREATE INDEX sessions_claude ON sessions (claude_pid_space) WHERE status = 'active' AND claude_pid IS NOT NULL;

-- Every event Claude Code sent, as it came (redacted, capped), once.
CREATE TABLE events (
    id              INTEGER PRIMARY KEY,
    dedup_key       TEXT NOT NULL UNIQUE,  -- session|event|tool_use_id (or agent_id, or delivery id)
    received_at     REAL NOT NULL,
    session_id      TEXT NOT NULL,         -- '' when the payload had none (unattributed)
    hook_event_name TEXT NOT NULL,
    tool_name       TEXT,
    tool_use_id     TEXT,
    agent_id        TEXT,
    agent_type      TEXT,
    prompt_id       TEXT,
    payload         TEXT NOT NULL,         -- JSON text
    payload_bytes   INTEGER NOT NULL,      -- size of the payload as it arrived
    payload_sha256  TEXT,                  -- of the payload as it arrived, when it was capped
    truncated       INTEGER NOT NULL DEFAULT 0,
    via             TEXT NOT NULL DEFAULT 'hook' CHECK (via IN ('hook', 'spool')),
    traceparent     TEXT,                  -- Claude Code's active span when it ran the hook (W3C traceparent, from TRACEPARENT: command hooks, with its traces on; version 19)
    unattributed    TEXT                   -- why the event belongs to no session: its payload had no session_id (another tool's: "no session_id (Cursor's conversation_id ...)"); session_id is then '' and nothing was derived from it; NULL for a session's event (version 31)
);
CREATE INDEX events_session ON events (session_id, id);
CREATE INDEX events_name ON events (hook_event_name, id);
CREATE INDEX events_unattributed ON events (id) WHERE unattributed IS NOT NULL;

-- What the user asked for, in order: the task, for restored context.
CREATE TABLE prompts (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT NOT NULL,
    prompt_id    TEXT,
    prompt       TEXT NOT NULL,
    submitted_at REAL NOT NULL
);
CREATE INDEX prompts_session ON prompts (session_id, id);

-- Agent tool calls, so a subagent can be linked to the description and prompt it was given.
CREATE TABLE agent_launches (
    tool_use_id   TEXT PRIMARY KEY,
    session_id    TEXT NOT NULL,
    description   TEXT,
    prompt        TEXT,
    subagent_type TEXT,
    background    INTEGER,
    launched_at   REAL NOT NULL,
    agent_id      TEXT,
    confirmed     INTEGER NOT NULL DEFAULT 0,  -- 1: PostToolUse(Agent) named the agent
    parent_agent_id TEXT                       -- the agent that made the Agent call: a subagent's id, NULL for the main thread
);
CREATE INDEX agent_launches_pending ON agent_launches (session_id, agent_id);
CREATE INDEX agent_launches_agent ON agent_launches (agent_id);

-- Every agent status change: when and why (a stale agent that speaks again shows here too).
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

-- A turn: one user prompt until Stop (or the next prompt, which interrupts it), and its answer.
-- Its tokens and cost are message_usage's rows with its id (turn_id).
CREATE TABLE turns (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL,
    turn_no     INTEGER NOT NULL,        -- 1, 2, ... within the session
    prompt_id   TEXT,
    prompt      TEXT,                    -- its first 500 characters
    started_at  REAL NOT NULL,
    ended_at    REAL,
    status      TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done', 'interrupted')),
    result_text TEXT,                    -- the Stop's last_assistant_message: its first 2,000 characters (NULL: none came)
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

-- Running counts of large tables, so `status` need not count a million rows. A tally holds
-- the count up to a row id; a reader adds the rows past it (a short range of the primary key).
-- The daemon moves it forward on its sweeps; `prune`, the only path that deletes events, drops
-- it (the next sweep counts anew). Written off the hook's path only.
CREATE TABLE tallies (
    name       TEXT PRIMARY KEY,     -- the table counted ('events')
    counted_to INTEGER NOT NULL,     -- its rows with id <= this one are in n
    n          INTEGER NOT NULL
);

-- Session states, stored once per distinct content: canonical JSON and its SHA-256. A rowid
-- table (states are large and their hashes random: rows go at the end, only the index of
-- hashes takes random inserts). A state is written as JSON text and packed later, off the
-- hook's path (core/frames.py: a BLOB, a delta against the session's state before it or
-- deflate against the state's keys; `frames.state_text` reads either).
CREATE TABLE frame_states (
    id         INTEGER PRIMARY KEY,
    hash       TEXT NOT NULL UNIQUE,  -- SHA-256 of the state's JSON text
    state      TEXT NOT NULL,         -- JSON text, or once packed a BLOB (see above)
    first_seen REAL NOT NULL
);
CREATE INDEX frame_states_unpacked ON frame_states (id) WHERE typeof(state) = 'text';

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
    claimed_at        REAL,
    mac               TEXT               -- our MAC of the record under the per-user key (core/provenance.py): a record without a valid one is not ours
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

-- Every change of project_state: key, old and new value, when, and what caused it (the event,
-- tool call, agent or command that was writing, from state_write_cause). Written by triggers,
-- so no code path can forget it; a write by hand (SQL from outside) is recorded as 'direct SQL'.
CREATE TABLE state_history (
    id         INTEGER PRIMARY KEY,
    key        TEXT NOT NULL,
    old_value  TEXT,              -- NULL: the key was new
    new_value  TEXT,              -- NULL: the key was deleted
    changed_at REAL NOT NULL,     -- Unix seconds
    cause      TEXT NOT NULL,     -- "SessionStart of session ... (event 12)", "claude-session state set", ...
    timestamp  TEXT               -- changed_at as UTC text
);
CREATE INDEX state_history_key ON state_history (key, id);

-- Who is writing project_state right now: set by the writer inside its transaction, cleared
-- before it commits (core/state.py).
CREATE TABLE state_write_cause (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    cause TEXT NOT NULL,
    at    REAL NOT NULL
);

CREATE TRIGGER project_state_history_insert AFTER INSERT ON project_state BEGIN
    INSERT INTO state_history (key, old_value, new_value, changed_at, cause, timestamp)
    SELECT NEW.key, NULL, NEW.value, t.at, t.cause, datetime(t.at, 'unixepoch') FROM (
        SELECT coalesce((SELECT at FROM state_write_cause WHERE id = 1),
                        (julianday('now') - 2440587.5) * 86400.0) AS at,
               coalesce((SELECT cause FROM state_write_cause WHERE id = 1), 'direct SQL') AS cause
    ) AS t;
END;
CREATE TRIGGER project_state_history_update AFTER UPDATE ON project_state
WHEN OLD.value IS NOT NEW.value OR OLD.key IS NOT NEW.key BEGIN
    INSERT INTO state_history (key, old_value, new_value, changed_at, cause, timestamp)
    SELECT NEW.key, OLD.value, NEW.value, t.at, t.cause, datetime(t.at, 'unixepoch') FROM (
        SELECT coalesce((SELECT at FROM state_write_cause WHERE id = 1),
                        (julianday('now') - 2440587.5) * 86400.0) AS at,
               coalesce((SELECT cause FROM state_write_cause WHERE id = 1), 'direct SQL') AS cause
    ) AS t;
END;
CREATE TRIGGER project_state_history_delete AFTER DELETE ON project_state BEGIN
    INSERT INTO state_history (key, old_value, new_value, changed_at, cause, timestamp)
    SELECT OLD.key, OLD.value, NULL, t.at, t.cause, datetime(t.at, 'unixepoch') FROM (
        SELECT coalesce((SELECT at FROM state_write_cause WHERE id = 1),
                        (julianday('now') - 2440587.5) * 86400.0) AS at,
               coalesce((SELECT cause FROM state_write_cause WHERE id = 1), 'direct SQL') AS cause
    ) AS t;
END;

-- Memories: what was learned, preferred or known, in five categories and three scopes.
-- Project and session memories live here; global ones in the user-level database (the same
-- schema, ~/.local/share/claude-session/global.db).
CREATE TABLE memories (
    id           INTEGER PRIMARY KEY,
    category     TEXT NOT NULL CHECK (category IN ('fact', 'learning', 'preference', 'context', 'skill')),
    scope        TEXT NOT NULL CHECK (scope IN ('global', 'project', 'session')),
    text         TEXT NOT NULL,          -- redacted
    tags         TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tags)),  -- JSON array of strings
    source       TEXT NOT NULL CHECK (source IN ('user', 'agent', 'learned', 'import')),
    session_id   TEXT,                   -- where it came from (and, for scope session, where it holds)
    agent_id     TEXT,
    tool_use_id  TEXT,                   -- the tool call it was learned from (the one that worked)
    project      TEXT,                   -- the project it came from (global memories)
    holder       TEXT NOT NULL DEFAULT '',  -- the session a session memory holds for; '' otherwise
    fingerprint  TEXT NOT NULL,          -- of the normalised text: a second occurrence strengthens, never duplicates
    strength     INTEGER NOT NULL DEFAULT 1,  -- occurrences seen
    created_at   REAL NOT NULL,
    updated_at   REAL NOT NULL,
    last_used_at REAL,
    use_count    INTEGER NOT NULL DEFAULT 0,  -- times put before the model or found by the agent
    supersedes   INTEGER,                -- the memory this one replaces (memories.id)
    forgotten_at REAL,                   -- `memory forget`: kept for the record, never shown
    trusted      INTEGER CHECK (trusted IN (0, 1)),  -- 1: written by the user (CLI), or by a hook or agent of a database this user made here; 0: not; NULL: before version 12
    review       TEXT CHECK (review IN ('pending', 'accepted')),  -- pending: a global memory the user did not add, given to no session until `memory accept`; NULL: no review needed
    imported_at  REAL,                   -- when `memory import` put it here (source and provenance stay the file's)
    turn_no      INTEGER,                -- the turn of its session it was added in (an agent's, through the MCP server)
    files_inferred INTEGER CHECK (files_inferred IN (0, 1)),  -- 1: its files were taken from what the agent read or changed in that turn, not named
    outcome      TEXT CHECK (outcome IN ('verified', 'disproved', 'hypothesis')),  -- what became of it; disproved: a dead end, never given as fact
    outcome_at   REAL,
    verified_at  REAL,                   -- when a person last checked it against the files (`memory verify`)
    error_id     INTEGER,                -- the error (error_log.id) open in the turn an agent added it
    outcome_reason TEXT                  -- why the outcome was said (`memory outcome --reason`), redacted
);
CREATE UNIQUE INDEX memories_once ON memories (scope, holder, fingerprint)
    WHERE forgotten_at IS NULL;
CREATE INDEX memories_rank ON memories (category, scope, use_count, strength) WHERE forgotten_at IS NULL;

-- Full-text search over the memories' text and tags (SQLite FTS5, ranked by bm25).
CREATE VIRTUAL TABLE memories_fts USING fts5(
    text, tags, content = 'memories', content_rowid = 'id', tokenize = 'porter unicode61'
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, text, tags) VALUES (NEW.id, NEW.text, NEW.tags);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, tags) VALUES ('delete', OLD.id, OLD.text, OLD.tags);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF text, tags ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, tags) VALUES ('delete', OLD.id, OLD.text, OLD.tags);
    INSERT INTO memories_fts (rowid, text, tags) VALUES (NEW.id, NEW.text, NEW.tags);
END;

-- Which session was given which memory, so a session never receives one twice.
CREATE TABLE memory_uses (
    memory_id  INTEGER NOT NULL,
    scope      TEXT NOT NULL,            -- where the memory lives: global (the user database) or here
    session_id TEXT NOT NULL,
    used_at    REAL NOT NULL,
    how        TEXT NOT NULL CHECK (how IN ('session_start', 'prompt', 'search', 'cli')),
    PRIMARY KEY (session_id, scope, memory_id)
) WITHOUT ROWID;

-- The files a memory is about, each as it was when the memory was recorded (or last
-- verified): its content hash, size and modification time, and the commit checked out. A file
-- whose content differs now, or that is gone, makes the memory possibly stale. `seen_*`: the
-- file as the last check found it, so a file is hashed again only when its size or time moved.
CREATE TABLE memory_files (
    memory_id    INTEGER NOT NULL,      -- memories.id (of the same database)
    path         TEXT NOT NULL,         -- relative to the project root (a global memory's: its project's)
    sha256       TEXT,                  -- of its first 16 MiB; NULL: no such file then
    size         INTEGER,
    mtime_ns     INTEGER,
    git_commit   TEXT,                  -- HEAD when recorded, if the project is a git repository
    recorded_at  REAL NOT NULL,
    seen_size    INTEGER,
    seen_mtime_ns INTEGER,
    seen_sha256  TEXT,
    PRIMARY KEY (memory_id, path)
) WITHOUT ROWID;
-- A memory deleted (prune) takes its files along: a later memory given its id never inherits them.
CREATE TRIGGER memory_files_gone AFTER DELETE ON memories BEGIN
    DELETE FROM memory_files WHERE memory_id = OLD.id;
END;

-- Usage and cost, read from Claude Code's transcripts -------------------------------------

-- Each transcript read off the hook path (services/cost/transcripts.py; its tables are written
-- by core/usage.py): how far, and what went wrong with it. Costs are Claude Code's own figures
-- (its cost-state entries) apportioned to the messages; a model it gave no figure for is priced
-- from our own table, and says so (message_usage.cost_source).
CREATE TABLE transcript_files (
    path          TEXT PRIMARY KEY,      -- the transcript, as Claude Code named it
    session_id    TEXT NOT NULL,
    agent_id      TEXT NOT NULL,         -- the subagent's id, or the session id (main transcript)
    read_to       INTEGER NOT NULL DEFAULT 0,  -- bytes read: complete lines up to this offset
    filled_to     INTEGER NOT NULL DEFAULT 0,  -- entries up to this offset were handed to reconcile (settled ones only)
    inode         INTEGER,               -- of the file read: another inode means it was replaced
    size          INTEGER,               -- its size when last read
    lines_read    INTEGER NOT NULL DEFAULT 0,
    lines_skipped INTEGER NOT NULL DEFAULT 0,  -- lines not understood (bad JSON, unknown types, figures out of bounds, nested too deep)
    restarts      INTEGER NOT NULL DEFAULT 0,  -- times it was found truncated or replaced and read again from 0
    prompt_id     TEXT,                  -- the promptId of the last user entry read (the next lines' turn)
    last_error    TEXT,                  -- why it could not be read last time (missing, refused, ...); NULL when it was
    updated_at    REAL NOT NULL,
    first_skipped INTEGER                -- byte offset of the first line skipped since it was last read from 0; NULL: none
);
CREATE INDEX transcript_files_session ON transcript_files (session_id);

-- One row per model response (an assistant message id, counted once per transcript however
-- many entries streamed it, and once across transcripts: a copy of another session's response
-- is in response_copies, not here).
CREATE TABLE message_usage (
    session_id            TEXT NOT NULL,
    agent_id              TEXT NOT NULL,   -- the subagent's id, or the session id (main thread)
    message_id            TEXT NOT NULL,   -- the API's message id (message.id)
    request_id            TEXT,            -- the API's request id (requestId): with message_id, what counts a response once
    turn_id               INTEGER,         -- turns.id: by the promptId of the user entry before it, else the turn of the subagent's Agent call, else by time
    prompt_id             TEXT,            -- that promptId
    tool_uses             TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(tool_uses)),  -- JSON object: tool_use_id -> tool name, the calls it requested
    model                 TEXT,
    input_tokens          INTEGER NOT NULL DEFAULT 0,
    output_tokens         INTEGER NOT NULL DEFAULT 0,  -- thinking included
    cache_read_tokens     INTEGER NOT NULL DEFAULT 0,
    cache_creation_tokens INTEGER NOT NULL DEFAULT 0,  -- every cache write, 5-minute and 1-hour
    cache_1h_tokens       INTEGER NOT NULL DEFAULT 0,  -- of those, the 1-hour writes (usage.cache_creation.ephemeral_1h_input_tokens)
    thinking_tokens       INTEGER NOT NULL DEFAULT 0,
    service_tier          TEXT,
    speed                 TEXT,
    at                    REAL,            -- the entry's timestamp, Unix seconds
    line_cost_usd         REAL,            -- an old transcript's own costUSD for this line
    cost_usd              REAL,            -- its share of the cost (NULL: no price known)
    cost_source           TEXT CHECK (cost_source IN ('claude_code', 'price_table')),  -- Claude Code's figure apportioned, or our own price table
    estimated             INTEGER NOT NULL DEFAULT 0,  -- 1: a price for a model neither Claude Code nor our table knows (its default tier)
    PRIMARY KEY (session_id, agent_id, message_id)
) WITHOUT ROWID;
CREATE INDEX message_usage_turn ON message_usage (session_id, turn_id);
CREATE INDEX message_usage_at ON message_usage (at);
CREATE INDEX message_usage_message ON message_usage (message_id);

-- A response a session's transcript holds that another session made (a fork or a resume
-- copies the lines it starts from): counted in its owner's cost, not in this session's.
CREATE TABLE response_copies (
    session_id TEXT NOT NULL,  -- the session whose transcript holds the copy
    message_id TEXT NOT NULL,
    request_id TEXT,
    owner      TEXT NOT NULL,  -- the session that made it (requestSessionId, else the one that started first)
    at         REAL,           -- its timestamp, Unix seconds
    PRIMARY KEY (session_id, message_id)
) WITHOUT ROWID;
CREATE INDEX response_copies_owner ON response_copies (owner);

-- Every cost-state line of a session's main transcript: Claude Code's cumulative figures. A
-- process's spend is its last state less the state it started from (core/usage.py).
CREATE TABLE cost_states (
    session_id             TEXT NOT NULL,
    path                   TEXT NOT NULL,     -- the transcript it is in
    line_end               INTEGER NOT NULL,  -- byte offset just past the line (file order)
    as_of                  REAL,              -- the time of the last entry before it: the responses it covers
    total_cost_usd         REAL,              -- totalCostUSD
    model_usage            TEXT CHECK (model_usage IS NULL OR json_valid(model_usage)),  -- modelUsage as Claude Code wrote it
    has_unknown_model_cost INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, path, line_end)
) WITHOUT ROWID;

-- A model's price as Claude Code's own cost states show it: the factor on our table's price
-- (or, for a model the table lacks, on the default tier) that gives Claude Code's figure.
CREATE TABLE learned_prices (
    model      TEXT PRIMARY KEY,
    scale      REAL NOT NULL,
    session_id TEXT NOT NULL,  -- the session whose figures taught it
    updated_at REAL NOT NULL
);

-- Every hook run Claude Code timed, read from its transcripts (services/cost/hook_lines.py;
-- written by core/hook_runs.py): ours and every other hook, with Claude Code's durationMs.
CREATE TABLE hook_runs (
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
CREATE INDEX hook_runs_session ON hook_runs (session_id, at);
CREATE INDEX hook_runs_at ON hook_runs (at);  -- doctor: the last week's runs

-- Claude Code's own totals for a session: its latest cost-state entry (they include the
-- subagents').
CREATE TABLE session_costs (
    session_id             TEXT PRIMARY KEY,
    total_cost_usd         REAL,            -- totalCostUSD
    model_usage            TEXT CHECK (model_usage IS NULL OR json_valid(model_usage)),  -- modelUsage as Claude Code wrote it: per model tokens and costUSD
    as_of                  REAL,            -- the time of the last entry before it: the messages it covers
    api_duration_ms        REAL,            -- totalAPIDuration
    tool_duration_ms       REAL,            -- totalToolDuration
    lines_added            INTEGER,
    lines_removed          INTEGER,
    has_unknown_model_cost INTEGER NOT NULL DEFAULT 0,  -- 1: Claude Code had no price for a model
    updated_at             REAL NOT NULL
);

-- What `cost` over every session sums, per session, kept by core/usage.py (the one writer of
-- message_usage) in the same transaction as the rows it sums: a session's rows are computed
-- again from its message_usage rows after each write to them, so they are exact. They let
-- `cost` answer at a million responses without reading them all.
-- Per session, agent, model and quarter hour (UTC: every time zone's offset is a multiple of
-- 15 minutes, so a local day is a set of quarters).
CREATE TABLE session_usage (
    session_id            TEXT NOT NULL,
    agent_id              TEXT NOT NULL,
    model                 TEXT,
    quarter               INTEGER,         -- floor(at / 900); NULL for responses with no time
    messages              INTEGER NOT NULL,
    input_tokens          INTEGER NOT NULL,
    output_tokens         INTEGER NOT NULL,
    cache_read_tokens     INTEGER NOT NULL,
    cache_creation_tokens INTEGER NOT NULL,
    thinking_tokens       INTEGER NOT NULL,
    cost_usd              REAL,            -- NULL: none of them priced
    claude_code_usd       REAL NOT NULL,   -- of it, Claude Code's figures apportioned
    claude_code_n         INTEGER NOT NULL,  -- responses priced by Claude Code's figure
    price_table_n         INTEGER NOT NULL,  -- responses priced from our own table
    unpriced_n            INTEGER NOT NULL,  -- responses with no price
    first_at              REAL,
    last_at               REAL,
    turns                 INTEGER NOT NULL,  -- the session's turns with responses (the same on each of its rows)
    estimated_n           INTEGER NOT NULL DEFAULT 0  -- responses whose cost is an estimate (a model no price is known for)
);
CREATE INDEX session_usage_session ON session_usage (session_id);

-- Per session and tool: what its calls' responses used, shared evenly by the calls each
-- response requested (as `cost --by tool` shows it); kept with session_usage.
CREATE TABLE session_tool_usage (
    session_id            TEXT NOT NULL,
    tool                  TEXT NOT NULL,   -- the tool's name, or '(no tool: text)'
    calls                 INTEGER NOT NULL,
    messages              INTEGER NOT NULL,
    input_tokens          REAL,
    output_tokens         REAL,
    cache_read_tokens     REAL,
    cache_creation_tokens REAL,
    thinking_tokens       REAL,
    cost_usd              REAL,
    claude_code_n         INTEGER NOT NULL,
    price_table_n         INTEGER NOT NULL,
    unpriced_n            INTEGER NOT NULL,
    estimated_n           INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX session_tool_usage_session ON session_tool_usage (session_id);

-- OpenTelemetry export (version 19) (services/telemetry/otel_export.py). What went out and what
-- is left: spans sent of sessions not yet done (their rows go once the session's own span is sent, so
-- the table stays small), sessions done, and the exporter's one state row (lag, last error).
CREATE TABLE otel_sent (
    span_id    INTEGER PRIMARY KEY,  -- the span's id (derived from its row) as a signed 64-bit integer
    session_id TEXT NOT NULL,
    sent_at    REAL NOT NULL
);
CREATE INDEX otel_sent_session ON otel_sent (session_id);
CREATE TABLE otel_sessions (
    session_id TEXT PRIMARY KEY,
    done_at    REAL NOT NULL,        -- when its last span (the session's own) was sent
    spans      INTEGER NOT NULL      -- spans sent for it in all
);
CREATE TABLE otel_export (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    endpoint        TEXT,            -- where the last attempt sent to
    last_attempt_at REAL,
    last_success_at REAL,
    last_error      TEXT,            -- why the last attempt failed (NULL: it did not)
    failures        INTEGER NOT NULL DEFAULT 0,  -- attempts failed in a row
    next_attempt_at REAL,            -- backoff: no attempt before this
    spans_sent      INTEGER NOT NULL DEFAULT 0,  -- in all
    oldest_waiting  REAL,            -- end of the oldest span due and not sent at the last look (the lag)
    enabled_at      REAL             -- when the daemon first found export on: sessions idle since before it go only with `export-otel --since`
);

-- Every text claude-session put in front of the model, verbatim (redacted like everything
-- else): SessionStart restores, the warning before an edit, the memories given with a prompt,
-- the error ladder's guidance, the judge's block and the MCP server's answers.
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

-- Paths whose content `prune --purge` took out of the workspace snapshots (core/frames.py):
-- the snapshots that held them were rewritten without them, so a revert reads their absence
-- there as "not kept", never as "delete it".
CREATE TABLE purged_paths (
    id          INTEGER PRIMARY KEY,
    path        TEXT NOT NULL,     -- relative to the project; a folder covers what is under it
    purged_at   REAL NOT NULL,
    snapshots   INTEGER NOT NULL   -- how many snapshots were rewritten without it
);
CREATE INDEX purged_paths_path ON purged_paths (path);

-- The database's identity: a random id made at its creation. The user's trust record holds a MAC
-- of it under the per-user key (core/provenance.py, core/trust.py), so a database a repository
-- put at this path, even on the same inode, is not trusted.
CREATE TABLE database_identity (
    id          TEXT NOT NULL,     -- 32 hex digits, random
    created_at  REAL NOT NULL
);
INSERT INTO database_identity (id, created_at)
    VALUES (lower(hex(randomblob(16))), (julianday('now') - 2440587.5) * 86400.0);

PRAGMA user_version = 33;
