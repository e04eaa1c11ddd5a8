-- Version 33: when a command last failed anywhere (a failed path's `failed_last_at`, which
-- `status` and `failed-paths` show) is the first of its failures, newest first, through this
-- index: before, every session active since the failed path was recorded was looked through
-- (20 ms of `status` for one failed path at 2,000 sessions).
CREATE INDEX error_log_command ON error_log (command, occurred_at) WHERE command IS NOT NULL;
