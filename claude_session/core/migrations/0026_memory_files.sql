-- Version 26: what a memory is about and what became of it. `turn_no`: the turn of its
-- session it was added in (an agent's, through the MCP server). `files_inferred`: 1 when its
-- files were taken from what the agent read or changed in that turn rather than named.
-- `outcome`: verified, disproved (kept as a dead end, never given as fact) or hypothesis,
-- set at `outcome_at`. `verified_at`: when a person last checked it against the files
-- (`memory verify`: their hashes taken again). `error_id`: the error (error_log.id) open in
-- the turn an agent added it, whose later fate (fixed or not) the memory shows.
ALTER TABLE memories ADD COLUMN turn_no INTEGER;
ALTER TABLE memories ADD COLUMN files_inferred INTEGER CHECK (files_inferred IN (0, 1));
ALTER TABLE memories ADD COLUMN outcome TEXT CHECK (outcome IN ('verified', 'disproved', 'hypothesis'));
ALTER TABLE memories ADD COLUMN outcome_at REAL;
ALTER TABLE memories ADD COLUMN verified_at REAL;
ALTER TABLE memories ADD COLUMN error_id INTEGER;

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
