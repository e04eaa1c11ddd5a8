-- Version 12: where a memory came from, and the user's review of global memories they did not
-- add themselves. `trusted`: 1 when the writer was the user (the CLI) or a hook or agent of a
-- database this user made here (core/trust.py), 0 otherwise, NULL for a memory written before
-- this version. `review`: 'pending' holds a global memory an agent added (or any not added by
-- the user) from every session and search until `claude-session memory accept`; 'accepted'
-- once the user did; NULL when no review was needed. `imported_at`: when `memory import` put
-- it here (its source, session, agent and project stay what the file said).
ALTER TABLE memories ADD COLUMN trusted INTEGER CHECK (trusted IN (0, 1));
ALTER TABLE memories ADD COLUMN review TEXT CHECK (review IN ('pending', 'accepted'));
ALTER TABLE memories ADD COLUMN imported_at REAL;
-- The user's own (`memory add`) were trusted; a global memory an agent or a hook wrote before
-- this version was never reviewed: it waits for the user as a new one would.
UPDATE memories SET trusted = 1 WHERE source = 'user';
UPDATE memories SET review = 'pending'
    WHERE scope = 'global' AND source IN ('agent', 'learned') AND forgotten_at IS NULL;
