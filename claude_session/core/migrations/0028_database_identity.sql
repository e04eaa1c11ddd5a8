-- Version 28: the database's identity, a random id made when it is created (or first migrated
-- here). The user's trust record holds a MAC of it under the per-user key (core/provenance.py,
-- core/trust.py): a database a repository swapped in at the same path, even on the same inode,
-- has another id and is not trusted. The fork records carry a MAC of their own.
CREATE TABLE IF NOT EXISTS database_identity (
    id          TEXT NOT NULL,     -- 32 hex digits, random
    created_at  REAL NOT NULL
);
INSERT INTO database_identity (id, created_at)
    SELECT lower(hex(randomblob(16))), (julianday('now') - 2440587.5) * 86400.0
    WHERE NOT EXISTS (SELECT 1 FROM database_identity);
ALTER TABLE branches ADD COLUMN mac TEXT;  -- our MAC of the record (core/provenance.py)
