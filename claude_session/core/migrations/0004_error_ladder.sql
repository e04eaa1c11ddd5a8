-- Version 3 -> 4: the escalation ladder key of each error (file at fault or command, category).
ALTER TABLE error_log ADD COLUMN ladder_key TEXT;
UPDATE error_log SET ladder_key = category || '|' || signature;
CREATE INDEX error_log_ladder ON error_log (session_id, ladder_key, resolution);
CREATE INDEX failed_paths_relevant ON failed_paths (still_relevant, created_at);
