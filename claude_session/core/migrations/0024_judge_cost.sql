-- Version 24: what each judge call cost, as the judge's command reported it (`claude -p
-- --output-format json` gives total_cost_usd): the judge is claude-session's own spend, kept
-- apart from the user's in `cost`, and held to judge_budget_usd_per_day. NULL when the command
-- reported no cost (or did not run: a skip, a failure).
ALTER TABLE llm_verdicts ADD COLUMN cost_usd REAL;
