-- Version 15: a turn's answer, the Stop's `last_assistant_message` (redacted with the payload,
-- its first 2,000 characters), beside its prompt. A turn's tokens and cost are not copied here:
-- they are message_usage's rows of that turn (services/costs.py reads them by turn_id), so the
-- transcripts' reader stays their one writer. `turns` has a table constraint, which ALTER
-- TABLE ADD COLUMN would leave before the new column (a fresh schema cannot say it so): the
-- table is rebuilt with its rows and ids.
ALTER TABLE turns RENAME TO turns_v14;
CREATE TABLE turns (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL,
    turn_no     INTEGER NOT NULL,        -- 1, 2, ... within the session
    prompt_id   TEXT,
    prompt      TEXT,                    -- its first 500 characters
    started_at  REAL NOT NULL,
    ended_at    REAL,
    status      TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done', 'interrupted')),
    result_text TEXT,                    -- the Stop's last_assistant_message: its first 2,000 characters (NULL: none came)
    UNIQUE (session_id, turn_no)
);
INSERT INTO turns (id, session_id, turn_no, prompt_id, prompt, started_at, ended_at, status)
    SELECT id, session_id, turn_no, prompt_id, prompt, started_at, ended_at, status FROM turns_v14;
DROP TABLE turns_v14;
