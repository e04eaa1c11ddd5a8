"""Which of the recorded-state blocks we gave a session the model still holds, so that a
resumed or compacted session is told only what changed (core/context.py).

Claude Code keeps each SessionStart `additionalContext` in the transcript as an `attachment`
line (`hook_additional_context`, `hookEvent` SessionStart) and replays it on `--resume`. A
compaction summarises what came before it: what the summary says of our block is not our block,
and a second compaction in a row summarises the first one's block away too. So a compaction
ends everything given before it, and:

- at a compaction nothing of ours is held: the full block is given;
- at a resume an injection is held when its text is in a SessionStart attachment of the
  transcript and no compaction of this session came after it (none after the last
  `compact_boundary` read, none recorded since it was given).

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
        return []  # the compaction that runs now summarised every block given before it
    given = [g for g in given if not _compacted_since(conn, session_id, g["at"])]
    return _in_transcript(given, transcript)


def _in_transcript(
    given: "list[dict[str, Any]]", transcript: "str | None"
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
        elif not whole and not bounded:
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
    """The SessionStart context lines of the transcript text `data` still in context (those
    after its last compaction boundary), and whether a boundary was found in it."""
    boundary = data.rfind(_BOUNDARY)
    cut = data.rfind(b"\n", 0, boundary) + 1 if boundary >= 0 else 0
    found = []
    at = data.find(_ATTACHMENT, cut)
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        end = end if end >= 0 else len(data)
        line = data[start:end]
        if _SESSION_START in line:
            found.append(line)
        at = data.find(_ATTACHMENT, end)
    return found, boundary >= 0


def block_of(text: str) -> "str | None":
    """The recorded-state block inside an injection's text (memories may follow it)."""
    from .context_text import CLOSE_TAG, OPEN_TAG

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
