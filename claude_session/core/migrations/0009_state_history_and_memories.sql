-- Version 9: every change of project_state with its cause, and memories.

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
    forgotten_at REAL                    -- `memory forget`: kept for the record, never shown
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
