-- Version 31: an event whose payload names no session (another tool's hooks: Cursor sends a
-- conversation_id, Codex nothing) is stored unattributed, with the reason, and nothing is
-- derived from it (core/events.py): no session, agent, claim or frame. Before, such events
-- went to a session invented under the id 'unknown'; they are marked here as what they were.
ALTER TABLE events ADD COLUMN unattributed TEXT;
UPDATE events SET unattributed = 'no session_id (filed under an invented session ''unknown'' before version 31)'
    WHERE session_id = 'unknown';
CREATE INDEX events_unattributed ON events (id) WHERE unattributed IS NOT NULL;
