-- Version 10: frame states are packed off the hook's path (core/frames.py, pack_states): the
-- hooks store a state as JSON text, the capture process and `prune` pack it into a BLOB (a
-- delta against the session's state before it, or deflate against the state's keys). This
-- partial index finds the states still to pack; once packed, a row leaves it. Rows already
-- stored stay as they are (text reads as text) until packed.
CREATE INDEX frame_states_unpacked ON frame_states (id) WHERE typeof(state) = 'text';
