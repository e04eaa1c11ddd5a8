-- Version 18: how each audited event reached the store. 'process': a hook process applied it
-- itself; 'relay': the project's resident process, for a hook process that handed it over;
-- 'mcp': the hook server, for an mcp_tool hook (no process started). NULL for events stored
-- before version 18, rebuilt from a transcript, or replayed from the spool.
ALTER TABLE hook_events ADD COLUMN transport TEXT CHECK (transport IN ('process', 'relay', 'mcp'));
