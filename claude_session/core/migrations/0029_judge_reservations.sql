-- Version 29: what each running judge may still spend, reserved before it starts (core/
-- verdicts.py): a judge runs only when today's spend, the other judges' reservations and its
-- own fit judge_budget_usd_per_day, checked and reserved in one BEGIN IMMEDIATE, so judges
-- started at once cannot each see the same room. Its verdict replaces the reservation by
-- the cost reported; a judge that died leaves one that lapses at expires_at.
CREATE TABLE IF NOT EXISTS judge_reservations (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT,
    amount_usd  REAL NOT NULL,  -- the most this call is expected to cost (services/judge.py)
    created_at  REAL NOT NULL,  -- Unix seconds
    expires_at  REAL NOT NULL   -- past it, the judge is taken for dead and its reservation lapses
);
