"""Which of the recorded-state blocks we gave a session the model still holds, so that a
resumed or compacted session is told only what changed (core/context.py).

Claude Code keeps each SessionStart `additionalContext` in the transcript as an `attachment`
line (`hook_additional_context`, `hookEvent` SessionStart) and replays it on `--resume`; a
compaction drops what it summarised and keeps only the messages it lists in the boundary's
`compactMetadata.preservedMessages` (a tail the summary did not see), then adds the new
SessionStart(`compact`) context. So:

- at a resume the transcript is complete on disk: an injection is held when its text is in a
  SessionStart attachment after the last `compact_boundary` or among the messages that
  boundary preserved;
- at a compaction the transcript is not written yet (Claude Code writes the boundary and the
  hook's own attachment after the hooks ran): an injection is held when no model turn of the
  main thread came after it (no prompt, tool call or Stop): such a message is in the newest
  round, which the compaction keeps verbatim.

The transcript is read from its end, at most TAIL_CAP bytes, without `json` (a SessionStart
hook pays for every import): the log's texts are escaped as Claude Code's JSON writes them and
searched for in the lines that can hold them. When in doubt an injection counts as not held:
the full block is given again, never a reference to text the model may not have.
"""

import os

import apsw

from .db import rows

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any

TAIL_CAP = 8 * 1024 * 1024
_BOUNDARY = b'"subtype":"compact_boundary"'
_ATTACHMENT = b'"type":"hook_additional_context"'
_SESSION_START = b'"hookEvent":"SessionStart"'
_UUID = b'"uuid":"'
# Events of the main thread that mean the model answered (or is about to) after an injection.
_MODEL_TURN = "('UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'PostToolUseFailure', 'Stop')"


def restores_held(
    conn: apsw.Connection, session_id: str, source: "str | None", transcript: "str | None"
) -> "list[dict[str, Any]]":
    """The restore injections of this session still in the model's context, oldest first."""
    if source not in ("resume", "compact"):
        return []  # startup, clear and fork begin a conversation with none of ours in it
    given = rows(
        conn,
        "SELECT id, at, source, text FROM injections INDEXED BY injections_session"
        " WHERE session_id = ? AND kind = 'restore' AND agent_id IS NULL ORDER BY at, id",
        (session_id,),
    )
    if not given:
        return []
    if source == "compact":
        return _kept_by_compaction(conn, session_id, given)
    return _in_transcript(conn, session_id, given, transcript)


def _kept_by_compaction(
    conn: apsw.Connection, session_id: str, given: "list[dict[str, Any]]"
) -> "list[dict[str, Any]]":
    """Those given after the main thread's last model turn: in the round the compaction keeps."""
    last = conn.execute(
        "SELECT received_at FROM events INDEXED BY events_session WHERE session_id = ?"
        f" AND agent_id IS NULL AND hook_event_name IN {_MODEL_TURN} ORDER BY id DESC LIMIT 1",
        (session_id,),
    ).fetchall()
    since = last[0][0] if last and isinstance(last[0][0], int | float) else 0.0
    # The compaction that runs now has no injection yet; an earlier one's block was summarised
    # unless it came after the last turn too (a compaction twice in a row).
    return [g for g in given if g["at"] > since]


def _in_transcript(
    conn: apsw.Connection, session_id: str, given: "list[dict[str, Any]]", transcript: "str | None"
) -> "list[dict[str, Any]]":
    """Those whose text the transcript shows in context (see the module's docstring)."""
    tail = read_tail(transcript)
    if tail is None:
        return []
    data, whole = tail
    lines, bounded = held_lines(data)
    held = []
    for injection in given:
        block = block_of(injection["text"])
        if block is None:
            continue
        needle = js_escaped(block)
        if any(needle in line for line in lines):
            held.append(injection)
        elif not whole and not bounded and not _compacted_since(conn, session_id, injection["at"]):
            # Before the part read, and no compaction after it (none in that part, none
            # recorded since): a resume replays the whole conversation, this block with it.
            held.append(injection)
    return held


def _compacted_since(conn: apsw.Connection, session_id: str, at: float) -> bool:
    return bool(
        conn.execute(
            "SELECT 1 FROM events INDEXED BY events_name WHERE hook_event_name = 'PreCompact'"
            " AND session_id = ? AND received_at > ? LIMIT 1",
            (session_id, at),
        ).fetchall()
    )


def read_tail(path: "str | None", cap: int = TAIL_CAP) -> "tuple[bytes, bool] | None":
    """The last `cap` bytes of the transcript (from a line start) and whether that is all of
    it; None when it cannot be read."""
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size <= cap:
                return f.read(), True
            f.seek(size - cap)
            data = f.read()
    except OSError:
        return None
    start = data.find(b"\n")
    return (data[start + 1 :] if start >= 0 else b""), False


def held_lines(data: bytes) -> "tuple[list[bytes], bool]":
    """The SessionStart context lines of the transcript text `data` still in context, and
    whether a compaction boundary was found in it (then nothing before it is, but what it
    preserved)."""
    boundary = data.rfind(_BOUNDARY)
    preserved: set[bytes] = set()
    cut = 0
    if boundary >= 0:
        start = data.rfind(b"\n", 0, boundary) + 1
        end = data.find(b"\n", boundary)
        line = data[start : end if end >= 0 else len(data)]
        preserved = _preserved(line)
        cut = start
    found = []
    at = data.find(_ATTACHMENT)
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        end = end if end >= 0 else len(data)
        line = data[start:end]
        if _SESSION_START in line and (start >= cut or _uuid(line) in preserved):
            found.append(line)
        at = data.find(_ATTACHMENT, end)
    return found, boundary >= 0


def _preserved(line: bytes) -> "set[bytes]":
    """The uuids a compact_boundary line lists as kept (`preservedMessages`)."""
    at = line.find(b'"preservedMessages":')
    if at < 0:
        return set()
    found: set[bytes] = set()
    for key in (b'"allUuids":[', b'"uuids":['):
        start = line.find(key, at)
        if start < 0:
            continue
        start += len(key)
        end = line.find(b"]", start)
        found.update(part.strip().strip(b'"') for part in line[start:end].split(b","))
    found.discard(b"")
    return found


def _uuid(line: bytes) -> bytes:
    at = line.find(_UUID)
    if at < 0:
        return b""
    at += len(_UUID)
    return line[at : line.find(b'"', at)]


def block_of(text: str) -> "str | None":
    """The recorded-state block inside an injection's text (memories may follow it)."""
    from .context import CLOSE_TAG, OPEN_TAG

    start = text.find(OPEN_TAG)
    end = text.find(CLOSE_TAG, start)
    if start < 0 or end < 0:
        return None
    return text[start : end + len(CLOSE_TAG)]


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
_ESCAPES["\t"] = "\\t"


def js_escaped(text: str) -> bytes:
    """`text` as it stands inside a JSON string written by JavaScript's JSON.stringify."""
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out).encode("utf-8", "surrogatepass")
