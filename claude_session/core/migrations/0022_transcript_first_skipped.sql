-- Version 22: where a transcript's first skipped line is. Claude Code's transcript is writable
-- by the agent itself (a Bash `>>`): a line with a figure out of bounds (a token count or cost
-- that is negative, non-finite, huge or not a number) or nested too deep is skipped and counted
-- (lines_skipped); `doctor` names the first one's byte offset, so it can be looked at.
ALTER TABLE transcript_files ADD COLUMN first_skipped INTEGER;  -- byte offset of the first line skipped since it was last read from 0; NULL: none
