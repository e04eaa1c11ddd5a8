-- Version 17: where each audited event came from. 'hook': Claude Code sent it; 'transcript':
-- no hook ever delivered it and it was rebuilt from Claude Code's transcript
-- (services/reconcile.py). Beside the original design's columns, never instead of one.
ALTER TABLE hook_events ADD COLUMN source TEXT NOT NULL DEFAULT 'hook' CHECK (source IN ('hook', 'transcript'));
