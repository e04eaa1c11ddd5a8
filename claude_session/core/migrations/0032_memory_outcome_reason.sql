-- Version 32: why a memory's outcome was said (`memory outcome ID disproved --reason ...`),
-- redacted; cleared with the outcome, replaced with it.
ALTER TABLE memories ADD COLUMN outcome_reason TEXT;
