-- Version 23: paths whose content `prune --purge` took out of the workspace snapshots. The
-- snapshots that held them were rewritten without them, so those snapshots now say the path
-- was absent: a revert must not read that as "delete it" (the file was there, its content
-- is simply no longer kept). One row per purge of a path.
CREATE TABLE IF NOT EXISTS purged_paths (
    id          INTEGER PRIMARY KEY,
    path        TEXT NOT NULL,     -- relative to the project; a folder covers what is under it
    purged_at   REAL NOT NULL,
    snapshots   INTEGER NOT NULL   -- how many snapshots were rewritten without it
);
CREATE INDEX IF NOT EXISTS purged_paths_path ON purged_paths (path);
