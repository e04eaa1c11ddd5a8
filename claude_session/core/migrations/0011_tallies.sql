-- Version 11: running counts of large tables, so `status` need not count a million rows. A
-- tally holds the count up to a row id; a reader adds the rows past it (a short range of the
-- primary key). The daemon moves it forward on its sweeps; `prune`, the only path that deletes
-- events, drops it (the next sweep counts anew). Written off the hook's path only.
CREATE TABLE tallies (
    name       TEXT PRIMARY KEY,     -- the table counted ('events')
    counted_to INTEGER NOT NULL,     -- its rows with id <= this one are in n
    n          INTEGER NOT NULL
);
