"""Memories exported and imported (`memory export`, `memory import`): what a record holds,
and a record put back as it was (stdlib + apsw, beside core/memories.py, which owns the table).

A record carries the memory's provenance whole: source, session, turn, agent, tool call,
project, trust, review, outcome, and the files it is about with their hashes as recorded (so a
memory imported elsewhere is still known stale when those files differ there).
"""

import apsw

from .db import as_int, rows
from .memories import (
    CATEGORIES,
    COLUMNS,
    OUTCOMES,
    REVIEWS,
    SCOPES,
    SOURCES,
    MemoryProblem,
    clean_reason,
    clean_text,
    fingerprint,
    insert_restored,
    listing_where,
    tags_json,
)
from .redact import redact

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# What `memory export` writes of each memory and `memory import` puts back. `id` and
# `supersedes` name memories of the exporting database (an import links a memory to the one it
# supersedes when both are in the file); `fingerprint` is the exporter's (of a learned memory,
# that of its key: a failed path's number there), written for the record and never matched on
# import, which fingerprints by text (`restore`). `trusted` and
# `review` travel with it (a pending memory stays pending); `imported_at` is this database's own.
EXPORTED = (
    "id",
    "category",
    "scope",
    "text",
    "tags",
    "source",
    "session_id",
    "agent_id",
    "tool_use_id",
    "project",
    "strength",
    "use_count",
    "created_at",
    "updated_at",
    "last_used_at",
    "supersedes",
    "fingerprint",
    "trusted",
    "review",
    "turn_no",
    "files_inferred",
    "outcome",
    "outcome_at",
    "verified_at",
    "outcome_reason",
)
PROVENANCE = ("session_id", "agent_id", "tool_use_id", "project")
NAME_CAP = 4096  # a session, agent or tool call id, or a project's path


def exportable(conn: apsw.Connection, scope: str | None = None) -> "list[dict[str, Any]]":
    """Every live memory with all that restoring it elsewhere needs, oldest first (those
    awaiting review too, marked so)."""
    where, params = listing_where(None, scope, None, None)
    return rows(
        conn,
        f"SELECT {COLUMNS}, fingerprint FROM memories WHERE {where} ORDER BY id",
        params,
    )


def restore(
    conn: apsw.Connection, record: "Mapping[str, object]", now: float
) -> "tuple[int, bool]":
    """Put an exported memory back as it was (source, session, strength, use count, times), or
    find it already here: (id, True when added).

    Unlike `add`, a memory already here (same scope and session, and the same text) is left
    as it is, not strengthened, so importing a file twice changes nothing. The match is by text
    alone: a learned memory's fingerprint is that of its key (a failed path's number, a
    command), which names something else in another database, so an unrelated memory there
    would be taken for this one; the memory is stored with its text's fingerprint. Text
    and tags are redacted as `add` redacts. A session memory keeps its session id even when
    this database never saw that session: the id is a plain column (no session row is made
    up), and the memory reaches that session if it ever runs here (a resumed session keeps its
    id). A bad record raises MemoryProblem saying why, and nothing is written for it.

    The import is the user's own act: the memory is marked imported (`imported_at`) and its
    source, session, agent and project stay what the file says. Its trust and review come from
    the file too (a memory pending there is pending here); a file without them (written before
    they existed) is the user's word, trusted and needing no review."""
    category = _one_of(record, "category", CATEGORIES, None)
    scope = _one_of(record, "scope", SCOPES, None)
    source = _one_of(record, "source", SOURCES, "import")
    raw = record.get("text")
    if raw is not None and not isinstance(raw, str):
        raise MemoryProblem(f"text must be a string, not {type(raw).__name__}")
    text = clean_text(raw or "")
    if not text:
        raise MemoryProblem("a memory needs some text")
    tags = record.get("tags")
    if tags is not None and (
        not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)
    ):
        raise MemoryProblem("tags must be a list of strings")
    names = {name: _name(record, name) for name in PROVENANCE}
    if scope == "session" and not names["session_id"]:
        raise MemoryProblem("a session memory needs its session_id")
    strength = _count(record, "strength", 1)
    use_count = _count(record, "use_count", 0)
    created = _time(record, "created_at")
    created = now if created is None else created
    updated = _time(record, "updated_at")
    own = fingerprint(text)
    given = record.get("fingerprint")
    if given is not None and not (
        isinstance(given, str) and len(given) == 32 and set(given) <= set("0123456789abcdef")
    ):
        raise MemoryProblem("fingerprint must be 32 lowercase hexadecimal digits")
    said = record.get("trusted")
    if said is not None and not (isinstance(said, int) and said in (0, 1)):  # bools are 0, 1
        raise MemoryProblem(f"trusted must be 0 or 1, not {_shown(said)}")
    trusted = 1 if said is None else int(said)
    review = record.get("review")
    if review is not None and review not in REVIEWS:
        raise MemoryProblem(f"unknown review {_shown(review)}: use one of {', '.join(REVIEWS)}")
    outcome = record.get("outcome")
    if outcome is not None and outcome not in OUTCOMES:
        raise MemoryProblem(f"unknown outcome {_shown(outcome)}: use one of {', '.join(OUTCOMES)}")
    inferred = record.get("files_inferred")
    if inferred is not None and not (isinstance(inferred, int) and inferred in (0, 1)):
        raise MemoryProblem(f"files_inferred must be 0 or 1, not {_shown(inferred)}")
    reason = record.get("outcome_reason")
    if reason is not None and not isinstance(reason, str):
        raise MemoryProblem(f"outcome_reason must be a string, not {type(reason).__name__}")
    if reason and outcome is None:
        raise MemoryProblem("an outcome_reason needs an outcome")
    turn_no = record.get("turn_no")
    if turn_no is not None:
        turn_no = _count(record, "turn_no", 1)
    holder = (names["session_id"] or "") if scope == "session" else ""
    found = same_text(conn, scope, holder, own)
    if found is not None:
        return found, False
    memory_id = insert_restored(
        conn,
        (
            category,
            scope,
            text,
            tags_json(tags or ()),  # redacts each tag whole
            source,
            names["session_id"],
            names["agent_id"],
            names["tool_use_id"],
            names["project"],
            holder,
            own,
            strength,
            created,
            created if updated is None else updated,
            _time(record, "last_used_at"),
            use_count,
            trusted,
            review,
            now,
            turn_no,
            None if inferred is None else int(inferred),
            outcome,
            _time(record, "outcome_at"),
            _time(record, "verified_at"),
            clean_reason(reason),
        ),
    )
    return memory_id, True


def same_text(conn: apsw.Connection, scope: str, holder: str, text_print: str) -> int | None:
    """The live memory of `scope` and `holder` whose text has the fingerprint `text_print`:
    one stored by its text's fingerprint, else a learned one whose text has it (a learned
    memory is stored under its key's: its text is fingerprinted here, one by one)."""
    found = conn.execute(
        "SELECT id FROM memories WHERE scope = ? AND holder = ? AND forgotten_at IS NULL"
        " AND fingerprint = ? LIMIT 1",
        (scope, holder, text_print),
    ).fetchall()
    if found:
        return as_int(found[0][0])
    for memory_id, text in conn.execute(
        "SELECT id, text FROM memories WHERE scope = ? AND holder = ? AND forgotten_at IS NULL"
        " AND source = 'learned' AND fingerprint != ?",
        (scope, holder, text_print),
    ):
        if fingerprint(str(text)) == text_print:
            return as_int(memory_id)
    return None


def _one_of(
    record: "Mapping[str, object]", field: str, allowed: "tuple[str, ...]", default: str | None
) -> str:
    value = record.get(field)
    if value is None and default is not None:
        return default
    if value is None:
        raise MemoryProblem(f"no {field}: use one of {', '.join(allowed)}")
    if value not in allowed:
        raise MemoryProblem(f"unknown {field} {_shown(value)}: use one of {', '.join(allowed)}")
    return str(value)


def _name(record: "Mapping[str, object]", field: str) -> str | None:
    value = record.get(field)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise MemoryProblem(f"{field} must be a string, not {type(value).__name__}")
    if len(value) > NAME_CAP:
        raise MemoryProblem(f"{field} is longer than {NAME_CAP} characters")
    return value


def _count(record: "Mapping[str, object]", field: str, lowest: int) -> int:
    value = record.get(field)
    if value is None:
        return lowest
    if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
        raise MemoryProblem(f"{field} must be a whole number from {lowest} up, not {_shown(value)}")
    return value


def _time(record: "Mapping[str, object]", field: str) -> float | None:
    value = record.get(field)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value < 1e12  # also NaN (never in range) and infinity
    ):
        raise MemoryProblem(f"{field} must be Unix seconds, not {_shown(value)}")
    return float(value)


def _shown(value: object) -> str:
    """A wrong value in a message, short (an import file may hold anything)."""
    text = redact(repr(value))  # whole, before the cut
    return text if len(text) <= 60 else text[:59] + "…"


FILE_FIELDS = ("path", "sha256", "size", "mtime_ns", "git_commit", "recorded_at")


def exported_files(conn: apsw.Connection, memory_id: int) -> "list[dict[str, Any]]":
    """The files a memory is about, as an export record carries them (as recorded)."""
    return rows(
        conn,
        f"SELECT {', '.join(FILE_FIELDS)} FROM memory_files WHERE memory_id = ? ORDER BY path",
        (memory_id,),
    )


def restore_files(conn: apsw.Connection, memory_id: int, files: object) -> int:
    """Put back the files an exported memory is about, as recorded there (never hashed here:
    what the memory was about then is what makes it stale). A bad list raises MemoryProblem."""
    from . import memory_files
    from .memory_files import FILES_CAP, PATH_CAP

    if files is None:
        return 0
    if not isinstance(files, list) or len(files) > FILES_CAP:
        raise MemoryProblem(f"files must be a list of at most {FILES_CAP} objects")
    for item in files:
        if not isinstance(item, dict):
            raise MemoryProblem("files must be a list of objects")
        path = item.get("path")
        if (
            not isinstance(path, str)
            or not path
            or len(path) > PATH_CAP
            or path.startswith("/")
            or ".." in path.split("/")
        ):
            raise MemoryProblem(f"a file's path must be relative to its project: {_shown(path)}")
        digest = item.get("sha256")
        if digest is not None and not (
            isinstance(digest, str) and len(digest) == 64 and set(digest) <= set("0123456789abcdef")
        ):
            raise MemoryProblem(f"a file's sha256 must be 64 hexadecimal digits: {_shown(digest)}")
        commit = item.get("git_commit")
        if commit is not None and not (
            isinstance(commit, str) and len(commit) in (40, 64) and commit.isalnum()
        ):
            raise MemoryProblem(f"a file's git_commit is no commit: {_shown(commit)}")
        for field in ("size", "mtime_ns"):
            value = item.get(field)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise MemoryProblem(f"a file's {field} must be a whole number: {_shown(value)}")
        recorded = _time(item, "recorded_at")
        memory_files.put(
            conn,
            (
                memory_id,
                path,
                digest,
                item.get("size"),
                item.get("mtime_ns"),
                commit,
                0.0 if recorded is None else recorded,
            ),
        )
    return len(files)
